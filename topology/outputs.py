"""The outputs contract between `infra/` and `jobs/`.

After `cdktf deploy`, `npx cdktf output '*' --outputs-file outputs.json` writes one object per stack, keyed by the
output's construct id. Every kit stack exports exactly one structured output:

    {"source":                        {"kit_source":       {...}},
     "replica-<bucket>":              {"kit_replica":      {...}},   one per destination
     "recovery":                      {"kit_recovery":     {...}},
     "organization":                  {"kit_organization": {...}},   only with [protection.organization]
     "vault":                         {"kit_vault":        {...}}}   only with [vault]

An estate (`[[sources]]`) has one source stack per source, `source-<id>`, each exporting its own
`kit_source` (with `source_id`); each replica's `kit_replica` lists every source feeding it
(`source_table_bucket_arns`).

In a failover topology (`[failover] promoted_bucket`) there is no source stack: the promoted bucket's
replica stack exports `kit_source` too (the promoted bucket as the source, the failover replication role, the
destinations, and a `failover` section naming the failed source), so the ops tools read either topology.

`load_outputs` finds them wherever they are (stack names do not matter) and returns a frozen `KitOutputs`.
The field names below are the contract: add fields freely, never rename or remove one without a migration note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from s3tables_kit.topology.backup import backup_role_arn
from s3tables_kit.topology.checks import hardener_principals
from s3tables_kit.topology.deployed import DEPLOYED, DeployedOut, deployed_field
from s3tables_kit.topology.model import KitConfig, Replica, Source
from s3tables_kit.topology.rules import replication_role_pattern
from s3tables_kit.topology.textfile import read_parsed
from s3tables_kit.topology.vault_accounts import recovery_reads

if TYPE_CHECKING:
    from s3tables_kit.topology.failover import FailoverTopology

OUTPUT_SOURCE = "kit_source"
OUTPUT_REPLICA = "kit_replica"
OUTPUT_RECOVERY = "kit_recovery"
OUTPUT_ORGANIZATION = "kit_organization"
OUTPUT_VAULT = "kit_vault"
# How each stack's one structured output describes itself (`cdktf output`, the plan): declared with the contract.
OUTPUT_DESCRIPTIONS = {
    OUTPUT_SOURCE: "Source bucket, tables, replication role and destinations",
    OUTPUT_REPLICA: "Replica bucket, retention to apply to service-created replica tables, protection principals",
    OUTPUT_RECOVERY: "Where recovery writes, the role and EMR Serverless application it runs with",
    OUTPUT_ORGANIZATION: "The replica-protection SCPs and where they are attached",
    OUTPUT_VAULT: "The backup vault: its Object Lock bucket, key and retention, and the backup role",
}
FAILOVER_SOURCE_DESCRIPTION = (
    "Failover topology: the promoted bucket as the source, its replication role and destinations"
)


class _Out(BaseModel):
    # Unknown keys are tolerated so that a newer infra can add outputs without breaking older jobs.
    model_config = ConfigDict(frozen=True, extra="ignore")


def _bucket(what: str, kind: str, note: str = "") -> str:
    """A field locating a stack's table bucket, described alike on the source, replica and recovery outputs."""
    return Field(description=f"{what} of the {kind} table bucket{note}.")


class RetentionOut(_Out):
    max_snapshot_age_hours: int = Field(description="Hours a snapshot is kept before snapshot management expires it.")
    min_snapshots_to_keep: int = Field(description="Snapshots always kept, however old they are.")


class EncryptionOut(_Out):
    sse_algorithm: str = Field(description="AES256 (SSE-S3) or aws:kms.")
    kms_key_arn: str | None = Field(default=None, description="ARN of the bucket's KMS key; null with AES256.")


class FailoverOut(_Out):
    """Present when the source is a promoted replica (`[failover] promoted_bucket`): the topology's
    documents differ per bucket (destinations exempt the failover replication role, not the failed source's)."""

    kit: str = Field(description="The kit's own name (the source's `kit` is the failover topology's, `<kit>-fo`).")
    failed_source_table_bucket_arn: str = Field(description="ARN of the failed source's table bucket.")
    failed_source_region: str = Field(description="Region of the failed source.")
    failed_replication_role_arn: str = Field(
        description="ARN of the failed source's replication role, still exempt on the promoted and retained buckets."
    )
    retained: list[str] = Field(
        default=[],
        description="Table bucket ARNs of the failed source's replicas left as they are (still its replicas).",
    )


class SourceOut(_Out):
    kit: str = Field(description="The kit's name (in a failover topology, `<kit>-fo`).")
    account_id: str = _bucket("Account id", "source")
    region: str = _bucket("Region", "source")
    table_bucket_arn: str = _bucket("ARN", "source")
    table_bucket_name: str = _bucket("Name", "source")
    replication_mode: str = Field(description='The replication mode: "bucket" or "tables".')
    replication_role_arn: str = Field(description="ARN of the role S3 Tables replication assumes for this source.")
    namespaces: dict[str, list[str]] = Field(description="The declared namespaces, each with its table names.")
    replicated_tables: list[str] = Field(description="`namespace.table` of every declared table that replicates.")
    partition_by: dict[str, list[str]] = Field(
        default={},
        description="The partition transforms of each declared table (`namespace.table`: transforms, as written in "
        "kit.toml); in a failover topology, of each replicated table.",
    )
    snapshot_retention: RetentionOut = Field(description="The source's snapshot retention.")
    destinations: list[str] = Field(description="Table bucket ARNs this source replicates to.")
    encryption: EncryptionOut = Field(description="Default encryption of the source bucket's tables.")
    failover: FailoverOut | None = Field(
        default=None,
        description="Only in a failover topology, whose source is the promoted bucket: the failed source; null in a "
        "normal one.",
    )
    source_id: str | None = Field(
        default=None, description="An estate source's `[[sources]]` id (stack `source-<id>`); null for `[source]`."
    )
    replication_point_groups: dict[str, list[str]] = Field(
        default={},
        description="The configured replication point groups, {name: table patterns}; empty when none are configured.",
    )
    deployed: DeployedOut | None = DEPLOYED

    @property
    def monitor_kit(self) -> str:
        """The `Kit` dimension this source's replication monitor publishes under: `<kit>-<id>` for a source of an
        estate (each source's monitor is its own), else `kit`."""
        return self.kit if self.source_id is None else f"{self.kit}-{self.source_id}"


class ReplicaOut(_Out):
    account_id: str = _bucket("Account id", "replica")
    region: str = _bucket("Region", "replica")
    table_bucket_arn: str = _bucket("ARN", "replica")
    table_bucket_name: str = _bucket("Name", "replica")
    storage_class: str = Field(description="Storage class of the bucket's new tables: STANDARD or INTELLIGENT_TIERING.")
    encryption: EncryptionOut = Field(description="Default encryption of the replica bucket's tables.")
    snapshot_retention: RetentionOut = Field(
        description="The retention `make harden` applies to the replica tables the service creates."
    )
    source_table_bucket_arn: str = Field(
        description="ARN of the source feeding the replica (the first one, for an estate's fan-in replica)."
    )
    source_table_bucket_arns: list[str] = Field(
        default=[],
        description="Estates only: the ARN of every source bucket replicating into it; empty for a `[source]` "
        "configuration.",
    )
    break_glass_principals: list[str] = Field(description="The principals that may still delete or loosen the replica.")
    hardener_principals: list[str] = Field(
        default=[],
        description="`[assurance.harden]` only: the scheduled hardener's role, exempt in the table policy from writing "
        "a replica table's policy and retention (and nothing else).",
    )
    deploy_role_arns: list[str] = Field(
        default=[],
        description="The replica's Terraform deploy role, exempt from protection changes as in the rendered table "
        "policy.",
    )
    guardrail_policy_arn: str = Field(description="ARN of the IAM guardrail policy in the replica's account.")
    deployed: DeployedOut | None = DEPLOYED

    @property
    def feeding_source_arns(self) -> list[str]:
        """The source buckets replicating into this replica, in either form of the outputs."""
        return list(self.source_table_bucket_arns) or [self.source_table_bucket_arn]


class RecoveryOut(_Out):
    account_id: str = _bucket("Account id", "recovery", " (the recovery replica's)")
    region: str = _bucket("Region", "recovery", " (the recovery replica's)")
    table_bucket_arn: str = _bucket("ARN", "recovery")
    table_bucket_name: str = _bucket("Name", "recovery")
    namespace: str = Field(description="Namespace that tables are recovered into.")
    role_arn: str = Field(description="ARN of the recovery role the recovery and rehearsal jobs run as.")
    emr_application_id: str = Field(description="Id of the EMR Serverless application that runs recovery.")
    emr_release: str = Field(description="EMR release of that application.")
    scripts_uri: str = Field(description="S3 URI of the job scripts.")
    logs_uri: str = Field(description="S3 URI the job logs are written under.")
    replica_table_bucket_arn: str = Field(description="ARN of the replica table bucket recovery reads from.")
    vault_account_table_bucket_arns: list[str] = Field(
        default_factory=list,
        description="ARNs of the account buckets of the vault recovery reads (`feeding_account`), which it also reads; "
        "absent without them.",
    )
    deployed: DeployedOut | None = DEPLOYED


class OrganizationOut(_Out):
    policy_id: str = Field(description="Id of the replica-protection SCP.")
    policy_name: str = Field(description="Name of the replica-protection SCP.")
    targets: list[str] = Field(description="Roots, OUs and account ids both SCPs are attached to.")
    guards_policy_id: str | None = Field(
        default=None,
        description="Id of the second SCP, guarding keys, privileged roles and the guardrail; null in outputs of kit "
        "versions before it existed.",
    )
    guards_policy_name: str | None = Field(default=None, description="Name of the second SCP.")

    @property
    def policies(self) -> list[tuple[str, str]]:
        """(policy id, name) of every kit SCP."""
        out = [(self.policy_id, self.policy_name)]
        if self.guards_policy_id:
            out.append((self.guards_policy_id, self.guards_policy_name or self.guards_policy_id))
        return out


class VaultOut(_Out):
    account_id: str = Field(description="Account id of the vault.")
    region: str = Field(description="Region of the vault bucket and its key.")
    bucket_name: str = Field(description="Name of the vault's S3 bucket (versioned, Object Lock in COMPLIANCE mode).")
    bucket_arn: str = Field(description="ARN of the vault's S3 bucket.")
    kms_key_arn: str = Field(description="ARN of the vault's KMS key (SSE-KMS of every object).")
    retention_days: int = Field(description="Object Lock default retention, in days, of every object written.")
    storage_class: str = Field(description="The storage class the backup job writes objects in.")
    backup_role_arn: str = Field(description="ARN of the backup role, the only principal that writes the vault.")
    point_key_arn: str | None = Field(
        default=None,
        description="ARN of the vault's point key (KMS HMAC_256): the backup role MACs every backup point with it, a "
        "restore verifies it; a point that does not verify is refused.",
    )


class KitOutputs(_Out):
    """Every stack's output. `sources`: each source stack's `kit_source` (one per source of an estate, in stack-name
    order); a replica's are `sources_into(replica)`, its one source `source_of(replica)`."""

    sources: list[SourceOut] = Field(min_length=1, description="Each source stack's `kit_source`, in stack-name order.")
    replicas: list[ReplicaOut] = Field(min_length=1, description="Each replica stack's `kit_replica`.")
    recovery: RecoveryOut = Field(description="The recovery stack's `kit_recovery`.")
    organization: OrganizationOut | None = Field(
        default=None,
        description="The organization stack's `kit_organization`; absent without `[protection.organization]`.",
    )
    vault: VaultOut | None = Field(default=None, description="The vault stack's `kit_vault`; absent without `[vault]`.")

    @model_validator(mode="before")
    @classmethod
    def _one_source(cls, data: Any) -> Any:
        """`source=` (the single-source form, before estates) is `sources=[source]`."""
        if isinstance(data, dict) and "source" in data and "sources" not in data:
            data = {**{k: v for k, v in data.items() if k != "source"}, "sources": [data["source"]]}
        return data

    # ---- the source(s) ----
    @property
    def several_sources(self) -> bool:
        """Several source stacks (an estate of more than one source): what a report names per source or bucket."""
        return len(self.sources) > 1

    def source_by_arn(self, arn: str) -> SourceOut:
        for s in self.sources:
            if s.table_bucket_arn == arn:
                return s
        raise KeyError(f"no source with table bucket ARN {arn!r}")

    def sources_into(self, replica: ReplicaOut) -> list[SourceOut]:
        """The sources replicating into `replica` (several: fan-in). A single source's outputs name every replica
        as its destination; in a failover topology the promoted bucket and the retained replicas are not the
        promoted source's destinations and have none."""
        return [s for s in self.sources if replica.table_bucket_arn in s.destinations]

    def source_of(self, replica: ReplicaOut) -> SourceOut:
        """The one source feeding `replica`: a fan-in vault is refused (restored from, never promoted). A replica no
        source lists is the single source's (before estates, and the buckets of a failover topology)."""
        feeding = self.feeding(replica)
        if len(feeding) > 1:
            names = ", ".join(s.table_bucket_name for s in feeding)
            raise EstateOutputsError(
                f"{replica.table_bucket_name} receives from {len(feeding)} sources ({names}): a fan-in vault is "
                "restored from (s3tables-kit recover), never promoted"
            )
        if feeding:
            return feeding[0]
        raise EstateOutputsError(f"no source of the outputs replicates into {replica.table_bucket_name}")

    def feeding(self, replica: ReplicaOut) -> list[SourceOut]:
        """`sources_into(replica)`, where a replica no source lists is the one source's (before estates, and the
        buckets of a failover topology)."""
        return self.sources if not self.several_sources else self.sources_into(replica)

    def replicas_of(self, source: SourceOut) -> list[ReplicaOut]:
        """The replicas `source` feeds: every replica of a one-source topology (a failover topology's retained
        replicas are not its destinations), the destinations of one source of an estate."""
        return [r for r in self.replicas if source in self.feeding(r)]

    def replicated_tables_into(self, replica: ReplicaOut) -> list[str]:
        """`namespace.name` of every declared table replicated into `replica`, from each source feeding it."""
        return [t for s in self.feeding(replica) for t in s.replicated_tables]

    @property
    def replication_point_groups(self) -> dict[str, tuple[str, ...]]:
        """The configured replication point groups ({name: table patterns}; every source exports the same)."""
        return {k: tuple(v) for s in self.sources for k, v in s.replication_point_groups.items()}

    # ---- replicas ----
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

    def replica_by_name(self, name: str) -> ReplicaOut:
        for r in self.replicas:
            if r.table_bucket_name == name:
                return r
        names = ", ".join(r.table_bucket_name for r in self.replicas)
        raise KeyError(f"no replica bucket {name!r} in the outputs ({names})")

    @property
    def recovery_replica(self) -> ReplicaOut:
        return self.replica_by_arn(self.recovery.replica_table_bucket_arn)

    def recovery_replica_named(self, name: str | None) -> ReplicaOut:
        """The replica a recovery reads: `recovery_replica`, or by name one the recovery role reads (an account
        bucket of its vault); KeyError naming the buckets it reads otherwise."""
        readable = [self.recovery.replica_table_bucket_arn, *self.recovery.vault_account_table_bucket_arns]
        found = [r for r in self.replicas if r.table_bucket_arn in readable]
        if name is None:
            return self.recovery_replica
        for r in found:
            if r.table_bucket_name == name:
                return r
        names = ", ".join(r.table_bucket_name for r in found)
        raise KeyError(f"recovery reads no replica bucket {name!r} (it reads {names})")

    @property
    def destination_replicas(self) -> list[ReplicaOut]:
        """The replicas the sources replicate to. In a normal topology every replica; in a failover one the
        promoted bucket and the retained replicas of the failed source also export `kit_replica`, but are not."""
        dest = {d for s in self.sources for d in s.destinations}
        return [r for r in self.replicas if r.table_bucket_arn in dest] or list(self.replicas)

    def is_failover_destination(self, replica: ReplicaOut) -> bool:
        """A destination of a promoted source: its replica tables get the failover documents."""
        return any(s.failover is not None for s in self.sources_into(replica))

    def replication_role_for(self, replica: ReplicaOut) -> str:
        """The replication role that writes `replica`'s tables: the source's, except in a failover topology for the
        buckets that are not its destinations (promoted, retained), still written by the failed source's role.
        One role: an error for a fan-in vault (`replication_roles_for`)."""
        roles = self.replication_roles_for(replica)
        if len(roles) != 1:
            raise EstateOutputsError(
                f"{replica.table_bucket_name} is written by {len(roles)} replication roles: use replication_roles_for"
            )
        return roles[0]

    def table_policy_writers(self, replica: ReplicaOut) -> list[str]:
        """The writers a replica's table policy exempts: `replication_roles_for`, or where several sources of an
        estate feed it their name pattern (its bucket policy's too: `s3tables_kit.policies.fan_in`)."""
        roles = self.replication_roles_for(replica)
        if len(roles) < 2:
            return roles
        return [replication_role_pattern(roles[0].split(":")[1], self.sources[0].kit)]

    def replication_roles_for(self, replica: ReplicaOut) -> list[str]:
        """Every replication role that writes `replica`'s tables: one per source feeding it (fan-in: several);
        in a failover topology the failed source's role for the promoted bucket and the retained replicas."""
        arn = replica.table_bucket_arn
        roles: list[str] = []
        for s in self.sources:
            fo = s.failover
            if arn in s.destinations:
                roles.append(s.replication_role_arn)
            elif fo is not None and (arn == s.table_bucket_arn or arn in fo.retained):
                roles.append(fo.failed_replication_role_arn)
        if not roles and len(self.sources) == 1:  # a bucket the single source's outputs do not list
            only = self.sources[0]
            roles.append(only.failover.failed_replication_role_arn if only.failover else only.replication_role_arn)
        return list(dict.fromkeys(roles))


class OutputsError(ValueError):
    pass


def declared(model: type[_Out], value: Mapping[str, Any]) -> dict[str, Any]:
    """An output's value as its model declares it: the builders below return what the ops tools read, through the
    one declaration. Validated by `model`; a key the model does not declare, or a value it would read differently,
    is refused (an `OutputsError` at synth, never a field silently dropped)."""
    out = model.model_validate(value).model_dump(mode="json", exclude_unset=True)
    if out != value:
        differ = sorted(k for k in {*value, *out} if out.get(k) != value.get(k))
        raise OutputsError(f"{model.__name__}: the built value differs from the declared contract at {differ}")
    return out


class EstateOutputsError(OutputsError):
    """One source or role asked of a replica that several sources of an estate feed (a fan-in vault), or of none."""


def parse_outputs(doc: dict[str, Any], source: str = "<dict>") -> KitOutputs:
    found: dict[str, list[Any]] = {k: [] for k in OUTPUT_DESCRIPTIONS}
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
    for k in (OUTPUT_RECOVERY, OUTPUT_ORGANIZATION, OUTPUT_VAULT):
        if len(found[k]) > 1:
            raise OutputsError(f"{source}: output {k!r} appears in more than one stack")
    try:
        out = KitOutputs.model_validate(
            {
                "sources": found[OUTPUT_SOURCE],
                "replicas": found[OUTPUT_REPLICA],
                "recovery": found[OUTPUT_RECOVERY][0],
                "organization": found[OUTPUT_ORGANIZATION][0] if found[OUTPUT_ORGANIZATION] else None,
                "vault": found[OUTPUT_VAULT][0] if found[OUTPUT_VAULT] else None,
            }
        )
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise OutputsError(f"{source}: outputs do not match the contract: {problems}") from None
    arns = [s.table_bucket_arn for s in out.sources]
    twice = sorted({a for a in arns if arns.count(a) > 1})
    if twice:
        raise OutputsError(f"{source}: output {OUTPUT_SOURCE!r} names the source bucket {twice} in more than one stack")
    return out


def load_outputs(path: str | Path) -> KitOutputs:
    p = Path(path)
    doc = read_parsed(
        p,
        json.loads,
        lambda reason: OutputsError(f"{p}: {reason}"),
        missing="outputs file not found (run `make outputs CONFIG=kit.toml` after `cdktf deploy`)",
        invalid="not JSON",
        parse_errors=(json.JSONDecodeError,),
    )
    if not isinstance(doc, dict):
        raise OutputsError(f"{p}: not the outputs of `cdktf output` (a JSON object of stacks)")
    return parse_outputs(doc, str(p))


# ---------------------------------------------------------------- the builders: the contract written once ----
# Every output value of the contract is built here, from the configuration and the values only a deploy knows (an
# ARN Terraform resolves, a policy id): the stacks (`infra/stacks/`) call them with Terraform references, the local
# stand-in's deployer (`harness/deploy.py`) with the values it created. Nothing else writes an outputs value.


def encryption_value(sse_algorithm: str, kms_key_arn: str | None) -> dict[str, object]:
    """The `encryption` member of a bucket's output: the key's ARN only when there is one."""
    out: dict[str, object] = {"sse_algorithm": sse_algorithm}
    if kms_key_arn:
        out["kms_key_arn"] = kms_key_arn
    return out


def source_value(
    cfg: KitConfig,
    src: Source,
    *,
    table_bucket_arn: str,
    replication_role_arn: str,
    destinations: Sequence[str],
    encryption: Mapping[str, object],
    deployed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The `kit_source` value of the source `src` of `cfg` (`deployed`: from
    `s3tables_kit.topology.deployed.deployed_value`)."""
    return declared(
        SourceOut,
        {
            "kit": cfg.kit.name,
            "account_id": src.account_id,
            "region": src.region,
            "table_bucket_arn": table_bucket_arn,
            "table_bucket_name": src.bucket,
            "replication_mode": cfg.replication_of(src).mode,
            "replication_role_arn": replication_role_arn,
            "namespaces": {ns.name: [t.name for t in ns.tables] for ns in src.namespaces},
            "replicated_tables": [f"{n}.{t}" for n, t in cfg.replicated_tables_of(src)],
            "partition_by": {f"{ns.name}.{t.name}": list(t.partition_by) for ns, t in src.tables()},
            "snapshot_retention": src.snapshot_retention.model_dump(),
            "destinations": list(destinations),
            "encryption": dict(encryption),
            **({"source_id": src.id} if src.id is not None else {}),
            **point_groups_output(cfg),
            **deployed_field(deployed),
        },
    )


def failover_source_value(
    cfg: KitConfig, topo: FailoverTopology, *, encryption: Mapping[str, object]
) -> dict[str, Any]:
    """The `kit_source` value of a failover topology: the promoted bucket is the source. Its ARNs are the
    configuration's (deterministic names), not Terraform references: reading them needs no other state."""
    p = topo.promoted
    replicated = cfg.replicated_tables_of(topo.failed_source)
    names = {f"{n}.{t}" for n, t in replicated}
    namespaces: dict[str, list[str]] = {}
    for n, t in replicated:
        namespaces.setdefault(n, []).append(t)
    return declared(
        SourceOut,
        {
            "kit": topo.name_prefix,  # the failover monitor's kit name: it publishes under Kit=<kit>-fo
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
                for ns, t in topo.failed_source.tables()
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
            "encryption": dict(encryption),
        },
    )


def replica_value(
    cfg: KitConfig,
    replica: Replica,
    *,
    table_bucket_arn: str,
    encryption: Mapping[str, object],
    feeding: Sequence[str] | None = None,
    deployed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The `kit_replica` value of `replica`. `feeding`: the source buckets replicating into it (default: the
    configuration's sources into it; a bucket fed by none of them, like a failover topology's new bucket, names the
    configuration's sources)."""
    arns = list(feeding) if feeding is not None else [s.bucket_arn for s in (cfg.sources_into(replica) or cfg.sources)]
    guardrail = f"arn:{replica.partition}:iam::{replica.account_id}:policy/{cfg.guardrail_policy_name}"
    return declared(
        ReplicaOut,
        {
            "account_id": replica.account_id,
            "region": replica.region,
            "table_bucket_arn": table_bucket_arn,
            "table_bucket_name": replica.bucket,
            "storage_class": replica.storage_class,
            "encryption": dict(encryption),
            "snapshot_retention": replica.snapshot_retention.model_dump(),
            "source_table_bucket_arn": arns[0],
            **({"source_table_bucket_arns": arns} if cfg.scheme.lists_feeding_sources else {}),
            "break_glass_principals": list(cfg.protection.break_glass_principals),
            **({"hardener_principals": list(hardeners)} if (hardeners := hardener_principals(cfg)) else {}),
            "deploy_role_arns": [replica.deploy_role_arn] if replica.deploy_role_arn else [],
            "guardrail_policy_arn": guardrail,
            **deployed_field(deployed),
        },
    )


def recovery_value(
    cfg: KitConfig, *, table_bucket_arn: str, role_arn: str, emr_application_id: str, replica_table_bucket_arn: str,
    deployed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The `kit_recovery` value: where recovery writes, its role and EMR Serverless application."""
    rep, extra = cfg.recovery_replica, recovery_reads(cfg)[1:]
    return declared(
        RecoveryOut,
        {
            "account_id": rep.account_id,
            "region": rep.region,
            "table_bucket_arn": table_bucket_arn,
            "table_bucket_name": cfg.recovery.bucket,
            "namespace": cfg.recovery.namespace,
            "role_arn": role_arn,
            "emr_application_id": emr_application_id,
            "emr_release": cfg.recovery.emr_release,
            "scripts_uri": f"s3://{cfg.recovery_scripts_bucket}/scripts/",
            "logs_uri": f"s3://{cfg.recovery_scripts_bucket}/logs/",
            "replica_table_bucket_arn": replica_table_bucket_arn,
            **({"vault_account_table_bucket_arns": [r.bucket_arn for r in extra]} if extra else {}),
            **deployed_field(deployed),
        },
    )


def organization_value(
    cfg: KitConfig, targets: Sequence[str], *, policy_id: str, guards_policy_id: str
) -> dict[str, Any]:
    """The `kit_organization` value: the kit's two SCPs and where they are attached."""
    return declared(
        OrganizationOut,
        {
            "policy_id": policy_id,
            "policy_name": cfg.scp_name,
            "guards_policy_id": guards_policy_id,
            "guards_policy_name": cfg.scp_guards_name,
            "targets": list(targets),
        },
    )


def vault_value(cfg: KitConfig, *, bucket_arn: str, kms_key_arn: str, point_key_arn: str) -> dict[str, Any]:
    """The `kit_vault` value: what the backup job (and a restore from the vault) reads."""
    v = cfg.vault
    if v is None:
        raise ValueError("the configuration has no [vault]")
    return declared(
        VaultOut,
        {
            "account_id": v.account_id,
            "region": v.region,
            "bucket_name": v.bucket_name(cfg.kit.name),
            "bucket_arn": bucket_arn,
            "kms_key_arn": kms_key_arn,
            "retention_days": v.retention_days,
            "storage_class": v.storage_class,
            "backup_role_arn": backup_role_arn(cfg),
            "point_key_arn": point_key_arn,
        },
    )


def point_groups_output(cfg: KitConfig) -> dict[str, Any]:
    """`replication_point_groups` of a `kit_source` output: only when groups are configured."""
    groups = cfg.assurance.point_groups
    return {"replication_point_groups": {k: list(v) for k, v in groups.items()}} if groups else {}


def declared_replication(cfg: KitConfig, src: Source) -> dict[str, Any]:
    """The declared replication of one source, as the drift checks compare it
    (`s3tables_kit.jobs.ops.drift.DeclaredReplication.from_json`): what the replication construct deploys for that
    source."""
    mode = cfg.replication_of(src).mode
    return {
        "source_bucket_arn": src.bucket_arn,
        "mode": mode,
        "role_arn": cfg.replication_role_arn_of(src),
        "destinations": [r.bucket_arn for r in cfg.destinations_of(src)],
        "tables": [f"{n}.{t}" for n, t in cfg.replicated_tables_of(src)] if mode == "tables" else [],
    }
