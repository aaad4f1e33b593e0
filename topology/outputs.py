"""The outputs contract between `infra/` and `jobs/`.

After `cdktf deploy`, `npx cdktf output '*' --outputs-file outputs.json` writes one object per stack, keyed by the
output's construct id. Every kit stack exports exactly one structured output:

    {"source":                        {"kit_source":       {...}},
     "replica-<bucket>":              {"kit_replica":      {...}},   one per destination
     "recovery":                      {"kit_recovery":     {...}},
     "organization":                  {"kit_organization": {...}}}   only with [protection.organization]

An estate (issue 24, `[[sources]]`) has one source stack per source, `source-<id>`, each exporting its own
`kit_source` (with `source_id`); each replica's `kit_replica` lists every source feeding it
(`source_table_bucket_arns`).

In a failover topology (issue 17: `[failover] promoted_bucket`) there is no source stack: the promoted bucket's
replica stack exports `kit_source` too (the promoted bucket as the source, the failover replication role, the
destinations, and a `failover` section naming the failed source), so the ops tools read either topology.

`load_outputs` finds them wherever they are (stack names do not matter) and returns a frozen `KitOutputs`.
The field names below are the contract: add fields freely, never rename or remove one without a migration note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OUTPUT_SOURCE = "kit_source"
OUTPUT_REPLICA = "kit_replica"
OUTPUT_RECOVERY = "kit_recovery"
OUTPUT_ORGANIZATION = "kit_organization"


class _Out(BaseModel):
    # Unknown keys are tolerated so that a newer infra can add outputs without breaking older jobs.
    model_config = ConfigDict(frozen=True, extra="ignore")


class RetentionOut(_Out):
    max_snapshot_age_hours: int
    min_snapshots_to_keep: int


class EncryptionOut(_Out):
    sse_algorithm: str
    kms_key_arn: str | None = None


class FailoverOut(_Out):
    """Present when the source is a promoted replica (`[failover] promoted_bucket`, issue 17): the topology's
    documents differ per bucket (destinations exempt the failover replication role, not the failed source's)."""

    kit: str  # the kit's own name (the source's `kit` is the failover view's, `<kit>-fo`)
    failed_source_table_bucket_arn: str
    failed_source_region: str
    failed_replication_role_arn: str
    # Replicas of the failed source left as they are (still its replicas, its replication role still exempt).
    retained: list[str] = []


class SourceOut(_Out):
    kit: str
    account_id: str
    region: str
    table_bucket_arn: str
    table_bucket_name: str
    replication_mode: str
    replication_role_arn: str
    namespaces: dict[str, list[str]]
    replicated_tables: list[str]
    snapshot_retention: RetentionOut
    destinations: list[str]
    encryption: EncryptionOut
    # Only in a failover topology, whose source is the promoted bucket; absent (None) in a normal one.
    failover: FailoverOut | None = None
    # An estate's source (issue 24): its `[[sources]]` id (stack `source-<id>`); absent (None) for `[source]`.
    source_id: str | None = None

    @property
    def monitor_kit(self) -> str:
        """The `Kit` dimension this source's replication monitor publishes under: `<kit>-<id>` for a source of an
        estate (each source's monitor is its own), else `kit`."""
        return self.kit if self.source_id is None else f"{self.kit}-{self.source_id}"


class ReplicaOut(_Out):
    account_id: str
    region: str
    table_bucket_arn: str
    table_bucket_name: str
    storage_class: str
    encryption: EncryptionOut
    snapshot_retention: RetentionOut
    source_table_bucket_arn: str  # the first (in an estate's fan-in replica) or only source feeding it
    # Every source bucket replicating into it (issue 24; a fan-in vault has several). Estates only: empty for a
    # `[source]` configuration, whose one source is `source_table_bucket_arn` (`feeding_source_arns` covers both).
    source_table_bucket_arns: list[str] = []
    break_glass_principals: list[str]
    # The replica's Terraform deploy role, exempt from protection changes like in the rendered table policy.
    deploy_role_arns: list[str] = []
    guardrail_policy_arn: str

    @property
    def feeding_source_arns(self) -> list[str]:
        """The source buckets replicating into this replica, in either form of the outputs."""
        return list(self.source_table_bucket_arns) or [self.source_table_bucket_arn]


class RecoveryOut(_Out):
    account_id: str
    region: str
    table_bucket_arn: str
    table_bucket_name: str
    namespace: str
    role_arn: str
    emr_application_id: str
    emr_release: str
    scripts_uri: str
    logs_uri: str
    replica_table_bucket_arn: str


class OrganizationOut(_Out):
    policy_id: str
    policy_name: str
    targets: list[str]
    # The second SCP (keys, privileged roles, guardrail); absent in outputs of kit versions before it existed.
    guards_policy_id: str | None = None
    guards_policy_name: str | None = None

    @property
    def policies(self) -> list[tuple[str, str]]:
        """(policy id, name) of every kit SCP."""
        out = [(self.policy_id, self.policy_name)]
        if self.guards_policy_id:
            out.append((self.guards_policy_id, self.guards_policy_name or self.guards_policy_id))
        return out


class KitOutputs(_Out):
    source: SourceOut
    replicas: list[ReplicaOut] = Field(min_length=1)
    recovery: RecoveryOut
    organization: OrganizationOut | None = None

    def replica_by_region(self, region: str) -> ReplicaOut:
        for r in self.replicas:
            if r.region == region:
                return r
        raise KeyError(f"no replica in Region {region!r}; replicas are in {[r.region for r in self.replicas]}")

    def replica_by_arn(self, arn: str) -> ReplicaOut:
        for r in self.replicas:
            if r.table_bucket_arn == arn:
                return r
        raise KeyError(f"no replica with table bucket ARN {arn!r}")

    @property
    def recovery_replica(self) -> ReplicaOut:
        return self.replica_by_arn(self.recovery.replica_table_bucket_arn)

    @property
    def destination_replicas(self) -> list[ReplicaOut]:
        """The replicas the source replicates to. In a normal topology every replica; in a failover one the
        promoted bucket and the retained replicas of the failed source also export `kit_replica`, but are not."""
        dest = set(self.source.destinations)
        return [r for r in self.replicas if r.table_bucket_arn in dest] or list(self.replicas)

    def is_failover_destination(self, replica: ReplicaOut) -> bool:
        """A destination of a promoted source: its replica tables get the failover documents."""
        return self.source.failover is not None and replica.table_bucket_arn in self.source.destinations

    def replication_role_for(self, replica: ReplicaOut) -> str:
        """The replication role that writes `replica`'s tables: the source's, except in a failover topology for the
        buckets that are not its destinations (promoted, retained), still written by the failed source's role."""
        fo = self.source.failover
        if fo is None or self.is_failover_destination(replica):
            return self.source.replication_role_arn
        return fo.failed_replication_role_arn


class OutputsError(ValueError):
    pass


def parse_outputs(doc: dict[str, Any], source: str = "<dict>") -> KitOutputs:
    found: dict[str, list[Any]] = {OUTPUT_SOURCE: [], OUTPUT_REPLICA: [], OUTPUT_RECOVERY: [], OUTPUT_ORGANIZATION: []}
    for _stack, outputs in sorted(doc.items()):
        if not isinstance(outputs, dict):
            continue
        for key, value in outputs.items():
            if key in found:
                found[key].append(value)
    missing = [k for k in (OUTPUT_SOURCE, OUTPUT_REPLICA, OUTPUT_RECOVERY) if not found[k]]
    if missing:
        raise OutputsError(
            f"{source}: outputs {missing} not found; expected the JSON written by "
            "`npx cdktf output '*' --outputs-file FILE` after `cdktf deploy` of every kit stack"
        )
    for k in (OUTPUT_SOURCE, OUTPUT_RECOVERY, OUTPUT_ORGANIZATION):
        if len(found[k]) > 1:
            raise OutputsError(f"{source}: output {k!r} appears in more than one stack")
    try:
        return KitOutputs.model_validate(
            {
                "source": found[OUTPUT_SOURCE][0],
                "replicas": found[OUTPUT_REPLICA],
                "recovery": found[OUTPUT_RECOVERY][0],
                "organization": found[OUTPUT_ORGANIZATION][0] if found[OUTPUT_ORGANIZATION] else None,
            }
        )
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise OutputsError(f"{source}: outputs do not match the contract: {problems}") from None


def load_outputs(path: str | Path) -> KitOutputs:
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OutputsError(f"{p}: outputs file not found (run `make outputs` after `cdktf deploy`)") from None
    except json.JSONDecodeError as exc:
        raise OutputsError(f"{p}: not JSON: {exc}") from None
    return parse_outputs(doc, str(p))
