"""The outputs contract of the failover topology (`[failover] promoted_bucket`): the promoted bucket is the source.

A failover topology has no source stack, so without this `outputs.json` would have no `kit_source` and
`s3tables_kit.topology.outputs.KitOutputs` could not be parsed: `status`, `harden`, `audit` and `monitor` could not run
against the promoted topology. The promoted bucket's replica stack therefore exports `kit_source` as well (next to its
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

from s3tables_kit.infra.stacks.exported import export_output
from s3tables_kit.infra.stacks.replica import ReplicaStack
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.failover import FailoverTopology
from s3tables_kit.topology.outputs import FAILOVER_SOURCE_DESCRIPTION, OUTPUT_SOURCE, failover_source_value


def add_failover_source_output(promoted: ReplicaStack, cfg: KitConfig, topo: FailoverTopology) -> TerraformOutput:
    return export_output(
        promoted,
        OUTPUT_SOURCE,
        failover_source_value(cfg, topo, encryption=promoted.bucket.encryption_output),
        description=FAILOVER_SOURCE_DESCRIPTION,
    )
