"""The cross-field rules of `[failover]` (the failover topology: which bucket is promoted, where it replicates to,
its writers, the replica recovery then reads), run by `s3tables_kit.topology.checks.cross_checks` after the model
validates."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from s3tables_kit.topology.issues import Issue, bucket_quota_issues
from s3tables_kit.topology.model import KitConfig, Replica
from s3tables_kit.topology.rules import MAX_FAILOVER_DESTINATIONS


def failover_recovery_replica(
    cfg: KitConfig, promoted: str, destinations: Sequence[Replica], among: Sequence[Replica] | None = None
) -> Replica | None:
    """The replica recovery and its rehearsal read in the failover topology: a replica OF THE NEW SOURCE.

    The recovery stack never moves (its bucket, role, EMR application and scripts bucket stay in the account and
    Region of `recovery.replica`, at the same Terraform addresses), but what it reads follows the promoted source:

    - `recovery.replica` is a destination of the promoted bucket (`failover.replicate_to`): it stays;
    - otherwise (it is the promoted bucket, now the writable source, or a retained replica the failed source no longer
      feeds): the first destination, in `replicate_to` order, in the recovery account and Region, else the first in
      the recovery account (another Region: the rehearsal reads across Regions, `--replica-region`);
    - none in the recovery account: None (a replica of another account would need a grant to the recovery role in
      its resource and key policies, which a protected replica gives nobody): `failover_checks` refuses it.

    `among`: the replicas the promotion sees (default every replica; one source's destinations for its promotion).
    """
    if any(d.bucket == cfg.recovery.replica for d in destinations):
        return next(d for d in destinations if d.bucket == cfg.recovery.replica)
    site = next((r for r in (cfg.replicas if among is None else among) if r.bucket == cfg.recovery.replica), None)
    if site is None:
        return None
    same_account = [d for d in destinations if d.account_id == site.account_id]
    same_region = [d for d in same_account if d.region == site.region]
    found = same_region or same_account
    return found[0] if found else None


def failover_checks(cfg: KitConfig) -> list[Issue]:
    """Cross-field rules of the section, run by `s3tables_kit.topology.loader.parse_config` once the model validates."""

    fo = cfg.failover
    if fo is None:
        return []
    out: list[Issue] = []
    replicas = {r.bucket: r for r in cfg.replicas}
    deploy_roles = {r.deploy_role_arn for r in (*cfg.sources, *cfg.replicas, *fo.new_buckets) if r.deploy_role_arn}
    for k, arn in enumerate(fo.writer_roles):
        where = f"failover.writer_roles[{k}]"
        if arn in cfg.protection.break_glass_principals:
            out.append(Issue(where, "a break-glass principal is exempt already; writers are ordinary workload roles"))
        elif arn in cfg.replication_role_arns:
            out.append(Issue(where, "the replication role must never write a table (it is the service's path)"))
        elif cfg.recovery.replica in replicas and arn == cfg.recovery_role_arn:
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
    feeding = cfg.sources_into(promoted)
    if len(feeding) != 1:
        out.append(
            Issue(
                "failover.promoted_bucket",
                f"{promoted.bucket!r} receives from {len(feeding)} sources (fan-in): a vault is restored from "
                "(make recover), never promoted; promote a replica of exactly one source",
            )
        )
        return out
    failed = feeding[0]
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
    kept = {r.bucket for r in cfg.replicas if r.bucket != promoted.bucket} | set(fo.replicate_to)
    if len(kept) > MAX_FAILOVER_DESTINATIONS:
        out.append(
            Issue(
                "failover.replicate_to",
                f"{len(kept)} protected buckets besides the promoted one (the remaining replicas and the new "
                f"buckets): at most {MAX_FAILOVER_DESTINATIONS}, so that the SCP stays within 5,120 characters; "
                "replicate to the remaining replicas rather than to new buckets",
            )
        )
    for name, n in Counter(fo.replicate_to).items():
        if n > 1:
            out.append(Issue("failover.replicate_to", f"{name!r} is listed twice"))
    new_names = [b.bucket for b in fo.new_buckets]
    taken = {*(s.bucket for s in cfg.sources), cfg.recovery.bucket, *replicas}
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
        is_new = any(b.bucket == name for b in fo.new_buckets)  # a new bucket there: the failback's destination
        if dest.region == failed.region and dest.account_id == failed.account_id and not is_new:
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
    # Recovery and its rehearsal follow the new source (failover_recovery_replica); the recovery stack stays put.
    dests = [by_name[n] for n in fo.replicate_to if n in by_name and n != promoted.bucket]
    rec_site = replicas.get(cfg.recovery.replica)
    if dests and rec_site is not None:
        reads = failover_recovery_replica(cfg, promoted.bucket, dests)
        if reads is None:
            was = (
                "is the promoted bucket (now the writable source)"
                if rec_site.bucket == promoted.bucket
                else "is no longer replicated to (a replica of the failed source only)"
            )
            out.append(
                Issue(
                    "failover.replicate_to",
                    f"recovery.replica {rec_site.bucket!r} {was}: recovery and its rehearsal must read a replica of "
                    f"the new source, a bucket of failover.replicate_to in the recovery account {rec_site.account_id} "
                    f"(preferably in {rec_site.region}); none is (the recovery stack keeps its account and Region, "
                    "and a protected replica of another account grants the recovery role nothing)",
                )
            )
        elif cfg.assurance.rehearsal.enabled and (
            cfg.assurance.rehearsal.offset_hours >= reads.snapshot_retention.max_snapshot_age_hours
        ):
            out.append(
                Issue(
                    "assurance.rehearsal.offset_hours",
                    f"{cfg.assurance.rehearsal.offset_hours} h reaches back as far as the retention of {reads.bucket} "
                    f"({reads.snapshot_retention.max_snapshot_age_hours} h), the replica the rehearsal reads after "
                    "the failover",
                )
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
    sites = [(r.account_id, r.region) for r in (*cfg.sources, *cfg.replicas, *fo.new_buckets)]
    if cfg.recovery.replica in replicas:
        sites.append((cfg.recovery_replica.account_id, cfg.recovery_replica.region))
    out += bucket_quota_issues("failover.new_buckets", sites)
    return out
