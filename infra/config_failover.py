"""The `[failover]` section of `kit.toml` (issue 17): who writes a promoted replica, and the promoted topology.

Before any incident the section names only the writers, so that the protected-primary documents of every replica
that could be promoted are rendered and reviewed in advance (`policies/rendered/<example>/failover--...`):

    [failover]
    writer_roles = ["arn:aws:iam::222222222222:role/lakehouse-writer"]   # in the account of the replica(s)

During an incident, once `python -m jobs.failover` has promoted the tables of one replica bucket, the section also
names the promoted bucket and where it replicates to, and `cdktf deploy` (with break-glass credentials, like every
protection change) makes the promoted bucket the source:

    promoted_bucket = "lakehouse-replica-euc1"          # a bucket of [[replicas]]
    replicate_to = ["lakehouse-replica-use1", "lakehouse-dr-apse2"]   # remaining replicas and/or new buckets
    [[failover.new_buckets]]                            # same keys as [[replicas]]
    account_id = "333333333333"
    ...

`failover_topology(cfg)` derives the promoted topology (pure, no CDKTF): the stacks synthesize it and the policies
are built from it. Nothing here needs the failed source's stacks, and nothing is re-created: the promoted bucket
keeps its replica stack and Terraform address (`replica-<bucket>`); only documents and configuration change on it.

This module is imported by `infra/config.py` (the root `KitConfig.failover` field and one cross-check hook).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, field_validator

if TYPE_CHECKING:  # pragma: no cover
    from infra.config import Issue, KitConfig, Replica, Source

MAX_FAILOVER_DESTINATIONS = 5  # = infra.config.MAX_DESTINATIONS (one replication rule, 1 to 5 destinations)
_ROLE_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::(\d{12}):role/[\w+=,.@/-]{1,512}$")
# Names of what the failover topology adds get this suffix after the kit name: IAM is global, so a role of the
# promoted account must never take the name of one the failed source's stacks still hold (same-account kits).
FAILOVER_NAME_SUFFIX = "-fo"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class Failover(_Frozen):
    """`writer_roles`: IAM role ARNs allowed to write (data and metadata pointer, new namespaces and tables) the
    tables of a promoted replica bucket in their own account; nothing else changes for them (deletion, retention,
    policies, replication and settings stay as protected as on a replica). `promoted_bucket`: set once promoted;
    then `replicate_to` (1-5 bucket names: remaining replicas and/or `new_buckets`) is required."""

    writer_roles: tuple[str, ...] = ()
    promoted_bucket: str | None = None
    replicate_to: tuple[str, ...] = ()
    new_buckets: tuple[Replica, ...] = ()

    @field_validator("writer_roles")
    @classmethod
    def _writers(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not _ROLE_ARN_RE.match(arn):
                raise ValueError(f"writer role {arn!r} must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
        return v


@dataclass(frozen=True)
class FailoverTopology:
    """The promoted topology. `promoted` becomes the source of bucket-level replication to `destinations`
    (existing replicas first, in `replicate_to` order, then new buckets); `retained` are the other replicas of the
    failed source, left as they are (still protected, still replicas of the failed source)."""

    kit: str
    failed_source: Source
    promoted: Replica
    destinations: tuple[Replica, ...]
    new_buckets: tuple[Replica, ...]
    retained: tuple[Replica, ...]
    writer_roles: tuple[str, ...]
    failed_replication_role_arn: str

    @property
    def name_prefix(self) -> str:
        return f"{self.kit}{FAILOVER_NAME_SUFFIX}"

    @property
    def replication_role_name(self) -> str:
        return f"{self.name_prefix}-s3tables-replication"

    @property
    def replication_role_arn(self) -> str:
        p = self.promoted
        return f"arn:{p.partition}:iam::{p.account_id}:role/{self.replication_role_name}"

    @property
    def protected(self) -> tuple[Replica, ...]:
        """Every bucket that stays (or becomes) a protected replica: destinations and retained replicas."""
        return self.destinations + self.retained

    @property
    def existing_destinations(self) -> tuple[Replica, ...]:
        return tuple(d for d in self.destinations if d not in self.new_buckets)

    def replication_roles_for(self, replica: Replica) -> tuple[str, ...]:
        """Replication roles that write `replica`: the failover role for destinations, the failed source's role
        for retained replicas (it stays exempt there, so a source that comes back keeps replicating to them)."""
        if replica.bucket == self.promoted.bucket:
            return (self.failed_replication_role_arn,)  # its tables not yet promoted are still its replicas
        if any(d.bucket == replica.bucket for d in self.destinations):
            return (self.replication_role_arn,)
        return (self.failed_replication_role_arn,)


def writers_of(cfg: KitConfig, replica: Replica) -> tuple[str, ...]:
    """The configured writer roles of `replica`'s account (writers of other accounts would need a grant in the
    resource policies; the configuration refuses them for the promoted bucket)."""
    fo = cfg.failover
    if fo is None:
        return ()
    return tuple(sorted(a for a in fo.writer_roles if a.split(":")[4] == replica.account_id))


def failover_topology(cfg: KitConfig, promoted_bucket: str | None = None) -> FailoverTopology:
    """The configured promotion, or (`promoted_bucket` given) the promotion of that replica: for a promotion the
    configuration does not describe, the remaining replicas are the destinations (the plan rendered for review)."""
    fo = cfg.failover
    configured = fo is not None and fo.promoted_bucket is not None and promoted_bucket in (None, fo.promoted_bucket)
    name = fo.promoted_bucket if configured and fo is not None else promoted_bucket
    if name is None:
        raise ValueError("no promoted bucket: set failover.promoted_bucket or name the replica to promote")
    promoted = next((r for r in cfg.replicas if r.bucket == name), None)
    if promoted is None:
        raise ValueError(f"{name!r} is not the bucket of any entry in replicas")
    if configured and fo is not None:
        by_name = {r.bucket: r for r in (*cfg.replicas, *fo.new_buckets)}
        destinations = tuple(by_name[b] for b in fo.replicate_to)
        new = tuple(fo.new_buckets)
    else:
        destinations = tuple(r for r in cfg.replicas if r.bucket != name)
        new = ()
    dest_names = {d.bucket for d in destinations}
    retained = tuple(r for r in cfg.replicas if r.bucket != name and r.bucket not in dest_names)
    return FailoverTopology(
        kit=cfg.kit.name,
        failed_source=cfg.source,
        promoted=promoted,
        destinations=destinations,
        new_buckets=new,
        retained=retained,
        writer_roles=writers_of(cfg, promoted),
        failed_replication_role_arn=cfg.replication_role_arn,
    )


def failover_checks(cfg: KitConfig) -> list[Issue]:
    """Cross-field rules of the section (run by `infra.config.parse_config` after the model validates)."""
    from infra.config import MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION, Issue

    fo = cfg.failover
    if fo is None:
        return []
    out: list[Issue] = []
    replicas = {r.bucket: r for r in cfg.replicas}
    deploy_roles = {r.deploy_role_arn for r in (cfg.source, *cfg.replicas, *fo.new_buckets) if r.deploy_role_arn}
    for k, arn in enumerate(fo.writer_roles):
        where = f"failover.writer_roles[{k}]"
        if arn in cfg.protection.break_glass_principals:
            out.append(Issue(where, "a break-glass principal is exempt already; writers are ordinary workload roles"))
        elif arn == cfg.replication_role_arn:
            out.append(Issue(where, "the replication role must never write a table (it is the service's path)"))
        elif arn == cfg.recovery_role_arn and cfg.recovery.replica in replicas:
            out.append(Issue(where, "the recovery role never writes a replica, promoted or not"))
        elif arn in deploy_roles:
            out.append(Issue(where, "a deploy role must not be a data writer (keep deployment and data apart)"))
        elif arn.split(":")[4] not in {r.account_id for r in cfg.replicas}:
            out.append(
                Issue(where, "not in the account of any replica: a writer writes a promoted bucket of its own account")
            )
    for a, n in Counter(fo.writer_roles).items():
        if n > 1:
            out.append(Issue("failover.writer_roles", f"{a!r} is listed twice"))

    if fo.promoted_bucket is None:
        for fld in ("replicate_to", "new_buckets"):
            if getattr(fo, fld):
                out.append(Issue(f"failover.{fld}", "only valid with failover.promoted_bucket (set once promoted)"))
        return out

    promoted = replicas.get(fo.promoted_bucket)
    if promoted is None:
        out.append(
            Issue(
                "failover.promoted_bucket",
                f"{fo.promoted_bucket!r} is not the bucket of any entry in replicas (only a replica is promoted)",
            )
        )
        return out
    if not any(a.split(":")[4] == promoted.account_id for a in fo.writer_roles):
        out.append(
            Issue(
                "failover.writer_roles",
                f"no writer role in the promoted bucket's account {promoted.account_id}: nobody but break-glass "
                "could write the promoted tables",
            )
        )
    if not 1 <= len(fo.replicate_to) <= MAX_FAILOVER_DESTINATIONS:
        out.append(
            Issue(
                "failover.replicate_to",
                f"needs 1 to {MAX_FAILOVER_DESTINATIONS} destination buckets (S3 Tables replicates to 1 to "
                f"{MAX_FAILOVER_DESTINATIONS}), got {len(fo.replicate_to)}: an unreplicated primary has no copy",
            )
        )
    for name, n in Counter(fo.replicate_to).items():
        if n > 1:
            out.append(Issue("failover.replicate_to", f"{name!r} is listed twice"))
    new_names = [b.bucket for b in fo.new_buckets]
    taken = {cfg.source.bucket, cfg.recovery.bucket, *replicas}
    for i, nb in enumerate(fo.new_buckets):
        where = f"failover.new_buckets[{i}]"
        if nb.bucket in taken:
            out.append(Issue(f"{where}.bucket", f"{nb.bucket!r} is already a bucket of the configuration"))
        if new_names.count(nb.bucket) > 1 and new_names.index(nb.bucket) != i:
            out.append(Issue(f"{where}.bucket", f"duplicate new bucket {nb.bucket!r}"))
        if nb.bucket not in fo.replicate_to:
            out.append(Issue(f"{where}.bucket", "a new bucket must be listed in failover.replicate_to"))
        if nb.encryption.type == "kms" and not nb.encryption.kms_key:
            out.append(
                Issue(
                    f"{where}.encryption.kms_key",
                    'KMS encryption needs a key: set kms_key = "create" or the ARN of an existing key',
                )
            )
        key = nb.encryption.kms_key
        if key and key.startswith("arn:") and key.split(":")[3] != nb.region:
            out.append(
                Issue(f"{where}.encryption.kms_key", f"the KMS key must be in the bucket's Region ({nb.region})")
            )
        if nb.deploy_role_arn and nb.deploy_role_arn.split(":")[4] != nb.account_id:
            out.append(Issue(f"{where}.account_id", "deploy_role_arn must be a role of the bucket's own account"))
    by_name = {**replicas, **{b.bucket: b for b in fo.new_buckets}}
    for k, name in enumerate(fo.replicate_to):
        where = f"failover.replicate_to[{k}]"
        if name == promoted.bucket:
            out.append(Issue(where, "the promoted bucket is the new source; it cannot replicate to itself"))
            continue
        dest = by_name.get(name)
        if dest is None:
            out.append(Issue(where, f"{name!r} is neither a bucket of replicas nor of failover.new_buckets"))
            continue
        if dest.account_id == promoted.account_id and dest.region == promoted.region:
            out.append(
                Issue(
                    where,
                    "a destination in the promoted bucket's own account and Region protects nothing against a "
                    "Regional outage or account compromise; use another Region or account",
                )
            )
        if dest.region == cfg.source.region and dest.account_id == cfg.source.account_id:
            out.append(Issue(where, "a destination in the failed source's account and Region: use another Region"))
        ret = promoted.snapshot_retention
        if dest.snapshot_retention.max_snapshot_age_hours < ret.max_snapshot_age_hours:
            out.append(
                Issue(
                    where,
                    f"{name}'s retention ({dest.snapshot_retention.max_snapshot_age_hours} h) is shorter than the "
                    f"promoted bucket's ({ret.max_snapshot_age_hours} h); replicas keep snapshots at least as long "
                    "as their source",
                )
            )
        if dest.snapshot_retention.min_snapshots_to_keep < ret.min_snapshots_to_keep:
            out.append(
                Issue(where, f"{name} keeps fewer snapshots than the promoted bucket; replicas keep at least as many")
            )
    # Accounts: the SCP must reach every new bucket's account; never the management account.
    org = cfg.protection.organization
    if org is not None:
        for i, nb in enumerate(fo.new_buckets):
            where = f"failover.new_buckets[{i}].account_id"
            if nb.account_id == org.management_account_id:
                out.append(Issue(where, "the organization's management account, where SCPs do not apply"))
            elif nb.account_id not in org.covered_accounts:
                out.append(
                    Issue(
                        "protection.organization.targets",
                        f"account {nb.account_id} (failover bucket {nb.bucket}) is not covered by the SCP: add it to "
                        "targets, or list it under protection.organization.ou_accounts",
                    )
                )
    sites = [(r.account_id, r.region) for r in (cfg.source, *cfg.replicas, *fo.new_buckets)]
    if cfg.recovery.replica in replicas:
        sites.append((cfg.recovery_replica.account_id, cfg.recovery_replica.region))
    per_site = Counter(sites)
    for (acct, region), n in per_site.items():
        if n > MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION:
            out.append(
                Issue(
                    "failover.new_buckets",
                    f"{n} table buckets in {acct}/{region} exceed the quota of {MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION}",
                )
            )
    return out
