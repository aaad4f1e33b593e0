"""The outputs contract of the failover topology (`[failover] promoted_bucket`): the promoted bucket is the source.

A failover topology has no source stack, so without this `outputs.json` would have no `kit_source` and
`topology.outputs.KitOutputs` could not be parsed: `status`, `harden`, `audit` and `monitor` could not run against
the promoted topology. The promoted bucket's replica stack therefore exports `kit_source` as well (next to its
unchanged `kit_replica`; output names are part of the state contract, so nothing is renamed):

- the promoted bucket as the source (ARN, name, account, Region, encryption, its snapshot retention);
- the failover replication role (`<kit>-fo-s3tables-replication`) and bucket-level replication mode;
- the tables it holds: the failed source's replicated tables (all of them replicate on from it: bucket mode);
- `destinations`: the buckets it replicates to (existing replicas first, then new buckets);
- `failover`: the failed source and its replication role, and the retained replicas, so `harden` builds the
  failover documents for destinations and the normal ones (failed source's role exempt) elsewhere.

ARNs are the configuration's (deterministic names), not Terraform references: reading them needs no other state.
"""

from __future__ import annotations

from cdktf import TerraformOutput

from s3tables_kit.infra.stacks.replica import ReplicaStack
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.failover import FailoverTopology
from s3tables_kit.topology.outputs import OUTPUT_SOURCE, point_groups_output


def failover_source_output(cfg: KitConfig, topo: FailoverTopology) -> dict[str, object]:
    """The value of `kit_source` for the failover topology, without the encryption (a bucket attribute)."""
    p = topo.promoted
    replicated = cfg.replicated_tables()
    names = {f"{n}.{t}" for n, t in replicated}
    namespaces: dict[str, list[str]] = {}
    for n, t in replicated:
        namespaces.setdefault(n, []).append(t)
    return {
        "kit": topo.name_prefix,  # the failover view's kit name: the monitor publishes under Kit=<kit>-fo
        "account_id": p.account_id,
        "region": p.region,
        "table_bucket_arn": p.bucket_arn,
        "table_bucket_name": p.bucket,
        "replication_mode": "bucket",
        "replication_role_arn": topo.replication_role_arn,
        "namespaces": namespaces,
        "replicated_tables": [f"{n}.{t}" for n, t in replicated],
        "partition_by": {
            f"{ns.name}.{t.name}": list(t.partition_by)
            for ns, t in cfg.source.tables()
            if f"{ns.name}.{t.name}" in names
        },
        "snapshot_retention": {
            "max_snapshot_age_hours": p.snapshot_retention.max_snapshot_age_hours,
            "min_snapshots_to_keep": p.snapshot_retention.min_snapshots_to_keep,
        },
        "destinations": [d.bucket_arn for d in topo.destinations],
        "failover": {
            "kit": cfg.kit.name,
            "failed_source_table_bucket_arn": topo.failed_source.bucket_arn,
            "failed_source_region": topo.failed_source.region,
            "failed_replication_role_arn": topo.failed_replication_role_arn,
            "retained": [r.bucket_arn for r in topo.retained],
        },
        **point_groups_output(cfg),
    }


def add_failover_source_output(promoted: ReplicaStack, cfg: KitConfig, topo: FailoverTopology) -> TerraformOutput:
    return TerraformOutput(
        promoted,
        OUTPUT_SOURCE,
        description="Failover topology: the promoted bucket as the source, its replication role and destinations",
        value={**failover_source_output(cfg, topo), "encryption": promoted.bucket.encryption_output},
    )
