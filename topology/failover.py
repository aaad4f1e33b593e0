"""The `[failover]` section of `kit.toml` (failover): who writes a promoted replica, and the promoted topology.

Before any incident the section names only the writers, so that the protected-primary documents of every replica
that could be promoted are rendered and reviewed in advance (`policies/rendered/<example>/failover--...`):

    [failover]
    writer_roles = ["arn:aws:iam::222222222222:role/lakehouse-writer"]   # in the account of the replica(s)

During an incident, once `s3tables-kit failover` has promoted the tables of one replica bucket, the section also
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

The section's model (`Failover`) lives in `topology/model.py` next to `KitConfig`, its cross-field rules
(`failover_checks`) in `topology/checks_failover.py` (as `assurance_checks` lives in `topology/checks.py`), so this
module imports the configuration and nothing imports it back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from s3tables_kit.topology.checks_failover import failover_checks, failover_recovery_replica
from s3tables_kit.topology.model import FAILOVER_NAME_SUFFIX, Failover, KitConfig, Replica, Source
from s3tables_kit.topology.rules import MAX_FAILOVER_DESTINATIONS

__all__ = [
    "FAILOVER_NAME_SUFFIX",
    "MAX_FAILOVER_DESTINATIONS",
    "Failover",
    "FailoverTopology",
    "failover_checks",
    "failover_recovery_replica",
    "failover_topology",
    "promotion_source",
    "source_promotion",
    "writers_of",
]


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
    # What recovery and its rehearsal read in this topology: a replica of the new source (a destination in the
    # recovery account), never the promoted bucket; None when no destination qualifies (a configured failover is
    # refused at load then; a promotion rendered for review only has no recovery documents).
    recovery_replica: Replica | None = None

    @property
    def name_prefix(self) -> str:
        return f"{self.kit}{FAILOVER_NAME_SUFFIX}"

    @property
    def replication_role_name(self) -> str:
        return f"{self.name_prefix}-s3tables-replication"

    @property
    def replication_role_arn(self) -> str:
        return self.promoted.role_arn(self.replication_role_name)

    @property
    def protected(self) -> tuple[Replica, ...]:
        """Every bucket that stays (or becomes) a protected replica: destinations and retained replicas."""
        return self.destinations + self.retained

    @property
    def existing_destinations(self) -> tuple[Replica, ...]:
        return tuple(d for d in self.destinations if d not in self.new_buckets)

    def replication_roles_for(self, replica: Replica) -> tuple[str, ...]:
        """Replication roles that write `replica`: the failover role for destinations, the failed source's role
        for retained replicas (it stays exempt there, so a source that comes back keeps replicating to them); none
        for the promoted bucket (it holds the only writable copy, nothing replicates into it)."""
        if replica.bucket == self.promoted.bucket:
            return ()
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


def promotion_source(cfg: KitConfig, bucket: str) -> Source:
    """The source a promotion of replica `bucket` is built from: the one source of `[source]` (or an estate of one),
    else the ONE source of the estate feeding that replica (its replication role, its destinations). A fan-in replica
    (several sources) is restored from, never promoted: refused with the reason."""
    if len(cfg.sources) <= 1:
        return cfg.sources[0]
    replica = next((r for r in cfg.replicas if r.bucket == bucket), None)
    if replica is None:
        raise ValueError(f"{bucket!r} is not the bucket of any entry in replicas")
    feeding = cfg.sources_into(replica)
    if len(feeding) != 1:
        raise ValueError(
            f"{bucket!r} receives from {len(feeding)} sources of the estate (fan-in): a vault is restored from "
            "(s3tables-kit recover), never promoted; promote a replica of exactly one source"
        )
    return feeding[0]


def source_promotion(cfg: KitConfig, promoted_bucket: str | None = None) -> FailoverTopology:
    """The promotion of replica `promoted_bucket` (default: the configured one, `cfg.kind`) among the destinations of
    the one source feeding it (`promotion_source`): what promoting it deploys to that source's sites. For a promotion
    the configuration does not describe, the remaining destinations are the destinations (the plan rendered for
    review)."""
    fo = cfg.failover
    configured = cfg.kind.promoted and promoted_bucket in (None, cfg.kind.promoted_bucket)
    name = cfg.kind.promoted_bucket if configured else promoted_bucket
    if name is None:
        raise ValueError("no promoted bucket: set failover.promoted_bucket or name the replica to promote")
    src = promotion_source(cfg, name)
    replicas = cfg.destinations_of(src)
    promoted = next((r for r in replicas if r.bucket == name), None)
    if promoted is None:
        raise ValueError(f"{name!r} is not the bucket of any entry in replicas")
    if configured and fo is not None:
        by_name = {r.bucket: r for r in (*replicas, *fo.new_buckets)}
        destinations = tuple(by_name[b] for b in fo.replicate_to)
        new = tuple(fo.new_buckets)
    else:
        destinations = tuple(r for r in replicas if r.bucket != name)
        new = ()
    dest_names = {d.bucket for d in destinations}
    return FailoverTopology(
        kit=cfg.kit.name,
        failed_source=src,
        promoted=promoted,
        destinations=destinations,
        new_buckets=new,
        retained=tuple(r for r in replicas if r.bucket != name and r.bucket not in dest_names),
        writer_roles=writers_of(cfg, promoted),
        failed_replication_role_arn=cfg.replication_role_arn_of(src),
        recovery_replica=failover_recovery_replica(cfg, promoted.bucket, destinations, among=replicas),
    )


def failover_topology(cfg: KitConfig, promoted_bucket: str | None = None) -> FailoverTopology:
    """The configured promotion (`cfg.kind`), or (`promoted_bucket` given) the promotion of that replica
    (`source_promotion`). In an estate of several sources, a destination other sources feed too (the fan-in vault)
    is retained, not a destination: its documents stay the estate's, with every feeding source's grants
    (docs/decisions/0027)."""
    topo = source_promotion(cfg, promoted_bucket)
    if len(cfg.sources) == 1:
        return topo
    shared = tuple(d for d in topo.destinations if len(cfg.sources_into(d)) > 1)
    own = tuple(d for d in topo.destinations if d not in shared)
    return replace(
        topo,
        destinations=own,
        retained=topo.retained + shared,
        recovery_replica=failover_recovery_replica(cfg, topo.promoted.bucket, own) if own else None,
    )
