"""The configuration's model: one frozen pydantic model per section of `kit.toml` and the root `KitConfig` with the
names it derives (part of the deployed contract). Field-level rules only; the rules that read several sections are
`s3tables_kit.topology.checks`, loading is `s3tables_kit.topology.loader`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from s3tables_kit.topology.adoption import AdoptableReplica, AdoptableSite
from s3tables_kit.topology.assurance import Assurance
from s3tables_kit.topology.feeding import VaultAccountBucket
from s3tables_kit.topology.rules import (
    ACCOUNT_RE,
    EMR_RELEASE_RE,
    IAM_PRINCIPAL_RE,
    KIT_NAME_RE,
    KIT_TAG_KEYS,
    MAX_TAGS,
    ORG_TARGET_RE,
    PROTECTION_TAG_KEY,
    ROLE_ARN_RE,
    SOURCE_ID_RE,
    SOURCE_TABLE_TAGS_KEY,
    TAG_KEY_RE,
    TAG_VALUE_RE,
    AccountId,
    DeployRoleArn,
    RegionName,
    check_account,
    check_bucket_name,
    check_iceberg_name,
    check_kms_key,
    check_optional,
    partition_of_arn,
)

# Sections of their own modules, re-exported here: the model is where `s3tables_kit.topology.config` takes every section
# from.
from s3tables_kit.topology.schema import Column as Column
from s3tables_kit.topology.schema import Namespace as Namespace
from s3tables_kit.topology.schema import PartitionField as PartitionField
from s3tables_kit.topology.schema import SnapshotRetention as SnapshotRetention
from s3tables_kit.topology.schema import Table as Table
from s3tables_kit.topology.schema import parse_partition as parse_partition
from s3tables_kit.topology.state import State as State
from s3tables_kit.topology.vault import Vault as Vault


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class Encryption(_Frozen):
    """`sse-s3` (AES256) or `kms`. With `kms`, `kms_key` is either "create" (the kit creates a key with the
    service-required key policy) or the ARN of an existing key in the bucket's account and Region."""

    type: Literal["sse-s3", "kms"] = Field(
        description='How the bucket encrypts its tables: "sse-s3" (AES256, keys managed by S3) or "kms" (a KMS key).'
    )
    kms_key: str | None = Field(
        default=None,
        description='With type = "kms": "create" (the kit creates a key with the key policy the service requires) or '
        "the ARN of an existing key in the bucket's account and Region.",
    )

    _key = field_validator("kms_key")(classmethod(lambda cls, v: check_kms_key(v)))

    @property
    def sse_algorithm(self) -> str:
        return "aws:kms" if self.type == "kms" else "AES256"

    @property
    def creates_key(self) -> bool:
        return self.type == "kms" and self.kms_key == "create"


class UnreferencedFileRemoval(_Frozen):
    """Bucket-level `icebergUnreferencedFileRemoval`."""

    unreferenced_days: int = Field(
        default=3, ge=1, description="Days after which a file that no snapshot references is marked noncurrent."
    )
    noncurrent_days: int = Field(default=10, ge=1, description="Days after which a noncurrent file is deleted.")


class _BucketSite(_Frozen):
    account_id: AccountId = Field(description='12-digit AWS account id of the bucket, quoted: "111122223333".')
    region: RegionName = Field(description="AWS Region of the bucket, e.g. us-east-1.")
    bucket: str = Field(
        description="Table bucket name: 3-63 lower case letters, digits and hyphens, unique in its account and Region."
    )
    encryption: Encryption = Field(description="Default encryption of the bucket's tables.")
    storage_class: Literal["STANDARD", "INTELLIGENT_TIERING"] = Field(
        default="STANDARD",
        description="Storage class of tables created in the bucket later on (updatable; existing tables keep theirs).",
    )
    deploy_role_arn: DeployRoleArn = Field(
        default=None,
        description="IAM role the Terraform provider assumes in the bucket's account; unset, the deploying "
        "credentials are used.",
    )

    _bkt = field_validator("bucket")(classmethod(lambda cls, v: check_bucket_name(v)))

    @property
    def partition(self) -> str:
        return partition_of_arn(self.region)

    @property
    def bucket_arn(self) -> str:
        return f"arn:{self.partition}:s3tables:{self.region}:{self.account_id}:bucket/{self.bucket}"

    @property
    def site_key(self) -> tuple[str, str, str]:
        return (self.account_id, self.region, self.bucket)

    def role_arn(self, name: str) -> str:
        """The ARN of the IAM role `name` in the bucket's account (IAM is global: no Region)."""
        return f"arn:{self.partition}:iam::{self.account_id}:role/{name}"


class Replication(_Frozen):
    """`bucket`: one bucket-level configuration covering existing and future tables.
    `tables`: one table-level configuration per listed `namespace.table` (must be declared in the source)."""

    mode: Literal["bucket", "tables"] = Field(
        description='"bucket": one configuration covering existing and future tables; "tables": one per table '
        "listed in `tables`."
    )
    tables: tuple[str, ...] = Field(
        default=(),
        description='With mode = "tables": the `namespace.table` names to replicate, each declared in the source.',
    )


class Source(AdoptableSite, _BucketSite):
    """A source table bucket: `[source]` (with `[replication]` beside it, replicating to every `[[replicas]]`), or one
    entry of `[[sources]]` in an estate, which also names itself (`id`), its destinations (`replicate_to`,
    bucket names of `[[replicas]]`) and its own `replication`. The loader refuses the estate keys under `[source]`
    and loads it with `[replication]` and every replica as its own (`s3tables_kit.topology.loader`);
    `s3tables_kit.topology.checks` requires them under `[[sources]]`."""

    snapshot_retention: SnapshotRetention = Field(
        description="Snapshot retention of every source table that sets none of its own."
    )
    unreferenced_file_removal: UnreferencedFileRemoval = Field(
        default=UnreferencedFileRemoval(), description="Removal of the source bucket's unreferenced files."
    )
    namespaces: tuple[Namespace, ...] = Field(
        default=(), description="The namespaces the kit creates in the source bucket, with their tables."
    )
    id: str | None = Field(
        default=None,
        description="Only under `[[sources]]`: 1-16 lower case letters, digits and hyphens naming the stack "
        "`source-<id>` and prefixing the source's role and monitor names (`<kit>-<id>-...`).",
    )
    replicate_to: tuple[str, ...] = Field(
        default=(),
        description="Only under `[[sources]]`: 1-5 bucket names of `[[replicas]]` this source replicates to (several "
        "sources may name one: fan-in).",
    )
    replication: Replication | None = Field(
        default=None,
        description="Only under `[[sources]]`: this source's replication (`[source]` uses `[replication]`).",
    )
    adopt_changes: tuple[Literal["bucket_policy", "encryption", "replication"], ...] = Field(
        default=(),
        description='With adopt = true: "encryption" (a different encryption than the bucket has), '
        '"bucket_policy" (the kit\'s policy created on a bucket that has none) and "replication" (a destination of '
        "`existing_destinations` dropped), changes the adoption gate (`s3tables_kit.infra.adoptgate`) otherwise "
        "refuses; a written storage class or file removal states itself.",
    )

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        return check_optional(
            v,
            SOURCE_ID_RE,
            f"source id {v!r} must be 1-16 characters: lowercase letters, digits, hyphens, starting with a letter "
            "and not ending with a hyphen (it names the source's stack and prefixes its IAM role names)",
        )

    @property
    def stack_id(self) -> str:
        """`source` for `[source]`, `source-<id>` for an estate's source (part of the state contract)."""
        return "source" if self.id is None else f"source-{self.id}"

    def tables(self) -> Iterable[tuple[Namespace, Table]]:
        for ns in self.namespaces:
            for t in ns.tables:
                yield ns, t

    def retention_for(self, table: Table) -> SnapshotRetention:
        return table.snapshot_retention or self.snapshot_retention


class Replica(AdoptableReplica, VaultAccountBucket, _BucketSite):
    snapshot_retention: SnapshotRetention = Field(
        description="Snapshot retention of the replica's tables, at least the source's for every table (age and "
        "count), applied by `make harden`."
    )
    unreferenced_file_removal: UnreferencedFileRemoval = Field(
        default=UnreferencedFileRemoval(), description="Removal of the replica bucket's unreferenced files."
    )

    @property
    def stack_id(self) -> str:
        return f"replica-{self.bucket}"


class Organization(_Frozen):
    """Where the replica-protection SCP is attached. `targets` are roots, OUs or account ids; for a root or OU target,
    `ou_accounts` states which of the kit's accounts sit under it (as Organizations shows them), so that validation
    can prove every replica account and the source account are covered: an SCP that does not reach them protects
    nothing."""

    management_account_id: AccountId = Field(
        description="12-digit id of the Organizations management account that holds the SCPs (SCPs do not apply "
        "there, so no kit bucket may live in it)."
    )
    targets: tuple[str, ...] = Field(
        min_length=1,
        description="Roots (r-...), OUs (ou-...-...) or 12-digit account ids the kit's SCPs and resource control "
        "policy are attached to.",
    )
    ou_accounts: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="For each root or OU target, the kit's accounts under it as Organizations shows them, so that "
        "validation can prove the SCPs reach every replica account and the source account.",
    )
    deploy_role_arn: str | None = Field(
        default=None,
        description="IAM role Terraform assumes in the management account; unset, the deploying credentials are used.",
    )

    @field_validator("ou_accounts")
    @classmethod
    def _ou_accounts(cls, v: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for target, accounts in v.items():
            if not (target.startswith("r-") or target.startswith("ou-")) or not ORG_TARGET_RE.match(target):
                raise ValueError(f"ou_accounts key {target!r} must be a root (r-...) or an OU (ou-...-...)")
            for a in accounts:
                check_account(a)
        return v

    @property
    def covered_accounts(self) -> frozenset[str]:
        """Accounts the SCP reaches, as the configuration states it."""
        direct = {t for t in self.targets if ACCOUNT_RE.match(t)}
        under = {a for t in self.targets for a in self.ou_accounts.get(t, ())}
        return frozenset(direct | under)

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for t in v:
            if not ORG_TARGET_RE.match(t):
                raise ValueError(
                    f"SCP target {t!r} must be a root (r-...), an OU (ou-...-...) or a 12-digit account id"
                )
        return v


class Protection(_Frozen):
    """Who may bypass replica protection. List the human break-glass role and any automation role that runs
    `make harden` (it writes replica table policies and retention, which only these principals may do)."""

    break_glass_principals: tuple[str, ...] = Field(
        min_length=1,
        description="IAM role or user ARNs that may still delete or loosen replicas: the human break-glass role and "
        "the automation role that runs `make harden` (never a deploy, replication or recovery role).",
    )
    guardrail_attach_roles: tuple[str, ...] = Field(
        default=(),
        description="IAM role names in replica accounts that get the guardrail policy besides each replica account's "
        "deploy role (never a break-glass role).",
    )
    source_guardrail_attach_roles: tuple[str, ...] = Field(
        default=(),
        description="IAM role names in source accounts that hold no replica that get the pipeline guardrail (the "
        "pipeline's second layer there, after the pipeline SCP; never a break-glass role).",
    )
    organization: Organization | None = Field(
        default=None,
        description="Where the replica-protection SCPs are attached; validation requires it, since an SCP that "
        "reaches no kit account protects nothing.",
    )
    replication_role_createtable_dependents: Literal["deny", "allow"] = Field(
        default="deny",
        description="Whether a replica's bucket policy and the SCP exempt the replication role from the encryption, "
        'storage-class and tag denies that CreateTable may also authorise: keep "deny" unless the live check shows '
        "the service's CreateTable of a replica needs them (docs/aws-facts.md#createtable-and-its-dependent-actions).",
    )
    replication_setup: Literal["deploy-role", "break-glass"] = Field(
        default="deploy-role",
        description="Who sets up and changes a source's replication: \"deploy-role\" (the sources' and a promoted "
        'bucket\'s deploy roles, in the reviewed deploy) or "break-glass" (break-glass only, so applying a replication '
        'configuration, cross-account or in a failover, is a break-glass step): choose "break-glass" when the live '
        "check shows that setup needs CreateTable, CreateNamespace and PutTableMaintenanceConfiguration on the "
        "destination (docs/aws-facts.md#replication-setup-and-the-destination-permissions).",
    )

    @field_validator("break_glass_principals")
    @classmethod
    def _bg(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not IAM_PRINCIPAL_RE.match(arn):
                raise ValueError(f"break-glass principal {arn!r} must be an IAM role or user ARN")
        return v


class Recovery(_Frozen):
    """Writable recovery target, in the Region and account of the replica named by `replica`."""

    replica: str = Field(
        description="Bucket name of the `[[replicas]]` entry recovery reads from; the recovery stack lives in its "
        "account and Region."
    )
    bucket: str = Field(description="Name of the writable recovery table bucket the kit creates.")
    namespace: str = Field(
        default="recovered", description="Namespace of the recovery bucket that tables are recovered into."
    )
    encryption: Encryption = Field(
        default=Encryption(type="sse-s3"), description="Default encryption of the recovery bucket's tables."
    )
    emr_release: str = Field(
        default="emr-7.12.0",
        description="EMR Serverless release of the recovery application: emr-7.5.0 or later, the first with S3 Tables.",
    )
    scripts_bucket: str | None = Field(
        default=None,
        description="Private S3 bucket for job scripts, logs and recovery reports; unset, the kit creates "
        "`<kit>-recovery-<account>-<region>`.",
    )
    logs_retention_days: int = Field(
        default=90,
        ge=1,
        description="Days after which job logs in the scripts bucket expire (the noncurrent version goes 30 days "
        "later; scripts never expire).",
    )
    reports_retention_days: int = Field(
        default=365,
        ge=1,
        description="Days after which recovery reports in the scripts bucket expire (the noncurrent version goes 30 "
        "days later).",
    )

    _bkt = field_validator("bucket")(classmethod(lambda cls, v: check_bucket_name(v)))
    _ns = field_validator("namespace")(classmethod(lambda cls, v: check_iceberg_name(v, "namespace")))

    @field_validator("emr_release")
    @classmethod
    def _emr(cls, v: str) -> str:
        m = EMR_RELEASE_RE.match(v)
        if not m or (int(m.group(1)), int(m.group(2))) < (7, 5):
            raise ValueError(f"emr_release {v!r} must be emr-7.5.0 or later (first EMR release with S3 Tables)")
        return v


class Kit(_Frozen):
    name: str = Field(
        description="3-24 lower case letters, digits and hyphens, starting with a letter; prefixes the names of the "
        "kit's IAM roles and policies."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not KIT_NAME_RE.match(v):
            raise ValueError(
                f"kit name {v!r} must be 3-24 characters: lowercase letters, digits, hyphens, starting with a letter "
                "(it prefixes IAM role and policy names)"
            )
        return v


# Names of what the failover topology adds get this suffix after the kit name: IAM is global, so a role of the
# promoted account must never take the name of one the failed source's stacks still hold (same-account kits).
FAILOVER_NAME_SUFFIX = "-fo"


class Failover(_Frozen):
    """`writer_roles`: IAM role ARNs allowed to write (data and metadata pointer, new namespaces and tables) the
    tables of a promoted replica bucket in their own account; nothing else changes for them (deletion, retention,
    policies, replication and settings stay as protected as on a replica). `promoted_bucket`: set once promoted;
    then `replicate_to` (1-5 bucket names: remaining replicas and/or `new_buckets`) is required."""

    writer_roles: tuple[str, ...] = Field(
        default=(),
        description="IAM role ARNs allowed to write the tables of a promoted replica in their own account (data, "
        "metadata pointer, new namespaces and tables); everything else stays protected.",
    )
    promoted_bucket: str | None = Field(
        default=None, description="Bucket name of the replica promoted to be the source: set once a failover happened."
    )
    replicate_to: tuple[str, ...] = Field(
        default=(),
        description="With promoted_bucket: 1-5 bucket names (remaining replicas or new_buckets) the promoted bucket "
        "replicates to.",
    )
    new_buckets: tuple[Replica, ...] = Field(
        default=(), description="New replica buckets of the failover topology, with the keys of `[[replicas]]`."
    )

    @field_validator("writer_roles")
    @classmethod
    def _writers(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not ROLE_ARN_RE.match(arn):
                raise ValueError(f"writer role {arn!r} must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
        return v


@dataclass(frozen=True)
class Kind:
    """Which topology the configuration describes, chosen once at load from `[failover] promoted_bucket` so that no
    layer re-derives it: the protected topology (`promoted_bucket` None), or the promoted (failover) topology whose
    source is the replica `promoted_bucket`."""

    promoted_bucket: str | None = None
    # the configuration a promoted topology's monitor is built from (`infra/stacks/failover.py`): the freshness checks
    # of its replicas' accounts are the protected topology's, which neither record it nor are recorded by it
    failover_monitor: bool = False

    @property
    def promoted(self) -> bool:
        """The failover topology: a promoted replica is the source."""
        return self.promoted_bucket is not None


PROTECTED = Kind()
FAILOVER_MONITOR = Kind(failover_monitor=True)


@dataclass(frozen=True)
class Scheme:
    """How a topology is protected and named, chosen once at load from the form it is declared in, so that no layer
    re-derives it: a `[source]` names each protected bucket and replication role by ARN; an estate (`[[sources]]`)
    tags its protected buckets and matches them by tag and name pattern, so that its organization layer keeps a
    constant size whatever the number of sources (docs/decisions/0026-estate.md). Paths take the
    source's index `i`; `s3tables_kit.policies.documents.SCHEME_DOCUMENTS` holds what each scheme builds its own way."""

    key: Literal["source", "sources"]  # the TOML form the topology is declared in
    by_tag: bool  # protected buckets matched by their protection tag and roles by name pattern, not by ARN
    protection_tags: tuple[str, ...]  # tag keys the kit puts on a protected bucket besides its own
    source_path: str  # the field path of a source in kit.toml
    replication_path: str  # the field path of a source's replication in kit.toml
    lists_feeding_sources: bool  # a replica's outputs list every source feeding it (`source_table_bucket_arns`)
    # The failover topology (a promoted replica as the new source) and the planned failover's freeze are built: a
    # promotion seen from one source of an estate would drop the other sources' replication into shared replicas.
    builds_failover_topology: bool


SINGLE_SOURCE = Scheme(
    key="source",
    by_tag=False,
    protection_tags=(),
    source_path="source",
    replication_path="replication",
    lists_feeding_sources=False,
    builds_failover_topology=True,
)
ESTATE = Scheme(
    key="sources",
    by_tag=True,
    protection_tags=(PROTECTION_TAG_KEY,),
    source_path="sources[{i}]",
    replication_path="sources[{i}].replication",
    lists_feeding_sources=True,
    builds_failover_topology=False,
)
SCHEMES: dict[str, Scheme] = {s.key: s for s in (SINGLE_SOURCE, ESTATE)}


class KitConfig(_Frozen):
    """The topology: one or more sources (`sources`, the one list every layer iterates), each with its destinations
    (`replicate_to`, bucket names of `replicas`) and its own replication; fan-in allowed (several sources naming one
    replica). `[source]` + `[replication]` loads as the estate of its one source, replicating to every replica
    (`s3tables_kit.topology.loader`); `scheme` is the protection the declared form chose, `kind` the topology (protected
    or promoted). Per-source names take the source (`*_of(src)`, `destinations_of(src)`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    kit: Kit = Field(description="The kit's name.")
    sources: tuple[Source, ...] = Field(
        min_length=1,
        description="An estate: one entry per source table bucket, each with its own id, replicate_to and "
        "replication besides the keys of `[source]`.",
    )
    replicas: tuple[Replica, ...] = Field(
        min_length=1, description="The 1-5 destination table buckets, protected from deletion and loosening."
    )
    protection: Protection = Field(description="Who may bypass replica protection, and where the SCPs are attached.")
    recovery: Recovery = Field(
        description="The writable recovery bucket and the EMR Serverless application that recovers into it."
    )
    assurance: Assurance = Field(
        default=Assurance(),
        description="The replication monitor, the scheduled recovery rehearsal and whom their alarms notify.",
    )
    failover: Failover | None = Field(
        default=None, description="Writers of a promoted replica and, once promoted, the failover topology."
    )
    vault: Vault | None = Field(
        default=None, description="The backup vault: an S3 bucket with Object Lock (compliance)."
    )
    state: State = Field(default=State(), description="Where Terraform keeps each stack's state.")
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Tags for every resource that takes them (provider default tags, table buckets) besides the "
        "kit's own `kit` and `managed-by`; not on replicated source tables unless opted in.",
    )
    tags_on_source_tables: bool = Field(
        default=False,
        description="The opt-in that tags replicated source tables too, written `on_replicated_source_tables = true` "
        "under `[tags]` (a boolean, not a tag).",
    )
    scheme: Scheme = Field(
        default=ESTATE,
        exclude=True,
        description="The protection scheme the declared form chose, set by the loader (never written in kit.toml).",
    )
    kind: Kind = Field(
        default=PROTECTED,
        exclude=True,
        description="The topology the configuration describes, chosen at load from failover.promoted_bucket (never "
        "written in kit.toml).",
    )

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, data: Any) -> Any:
        """The kind is chosen once, here, from what `[failover]` says; nothing reads `promoted_bucket` to decide it."""
        if not isinstance(data, dict) or "kind" in data:
            return data
        fo = data.get("failover")
        bucket = fo.get("promoted_bucket") if isinstance(fo, dict) else getattr(fo, "promoted_bucket", None)
        return {**data, "kind": Kind(bucket) if isinstance(bucket, str) else PROTECTED}

    @model_validator(mode="before")
    @classmethod
    def _source_table_tags_opt_in(cls, data: Any) -> Any:
        """`[tags] on_replicated_source_tables = true|false` is the opt-in, not a tag: taken out of the tag map."""
        tags = data.get("tags") if isinstance(data, dict) else None
        if isinstance(tags, dict) and SOURCE_TABLE_TAGS_KEY in tags:
            tags = dict(tags)
            value = tags.pop(SOURCE_TABLE_TAGS_KEY)
            if not isinstance(value, bool):
                raise ValueError(
                    f"tags.{SOURCE_TABLE_TAGS_KEY} must be true or false (the opt-in that tags replicated source "
                    f"tables, not a tag), got {value!r}"
                )
            data = {**data, "tags": tags, "tags_on_source_tables": value}
        return data

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not TAG_KEY_RE.match(key) or key.lower().startswith("aws:"):
                raise ValueError(
                    f"tag key {key!r} must be 1-128 letters, digits, spaces or _ . : / = + - @ and must not start "
                    "with 'aws:'"
                )
            if not isinstance(value, str) or not TAG_VALUE_RE.match(value):
                raise ValueError(
                    f"tag {key!r}: value {value!r} must be 0-256 letters, digits, spaces or _ . : / = + - @"
                )
            if key == PROTECTION_TAG_KEY:
                raise ValueError(f"tag key {key!r} is the kit's protection tag, set by the kit on protected buckets")
            if key in KIT_TAG_KEYS:
                raise ValueError(f"tag key {key!r} is set by the kit itself ({', '.join(KIT_TAG_KEYS)})")
        if len(v) + len(KIT_TAG_KEYS) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS - len(KIT_TAG_KEYS)} tags (AWS allows {MAX_TAGS} per resource)")
        return v

    # ---- the source(s): per-source names take the source ----
    def replication_of(self, src: Source) -> Replication:
        if src.replication is None:  # refused at load (s3tables_kit.topology.checks); a model built in code may lack it
            raise ValueError(f"{self.replication_path_of(src)}: the source {src.bucket!r} has no replication section")
        return src.replication

    def destinations_of(self, src: Source) -> tuple[Replica, ...]:
        """The replicas `src` replicates to, in `replicate_to` order (every replica, in order, for `[source]`)."""
        by_name = {r.bucket: r for r in self.replicas}
        return tuple(by_name[b] for b in src.replicate_to if b in by_name)

    def sources_into(self, replica: Replica) -> tuple[Source, ...]:
        """The sources replicating into `replica` (several: fan-in)."""
        return tuple(s for s in self.sources if replica in self.destinations_of(s))

    def path_of(self, src: Source) -> str:
        """The field path of a source in kit.toml: `source` or `sources[i]`."""
        return self.scheme.source_path.format(i=self.sources.index(src))

    def replication_path_of(self, src: Source) -> str:
        return self.scheme.replication_path.format(i=self.sources.index(src))

    def name_prefix_of(self, src: Source) -> str:
        """Prefix of the names derived for one source (its replication role, its monitor): the kit name, or
        `<kit>-<id>` for a source of an estate (at most 24 characters, like the kit name:
        `s3tables_kit.topology.checks`)."""
        return self.kit.name if src.id is None else f"{self.kit.name}-{src.id}"

    def replication_role_name_of(self, src: Source) -> str:
        return f"{self.name_prefix_of(src)}-s3tables-replication"

    def replication_role_arn_of(self, src: Source) -> str:
        return src.role_arn(self.replication_role_name_of(src))

    def replication_role_arns_into(self, replica: Replica) -> tuple[str, ...]:
        """The replication roles that write `replica` (one per source replicating into it)."""
        return tuple(self.replication_role_arn_of(s) for s in self.sources_into(replica))

    @property
    def replication_role_arns(self) -> tuple[str, ...]:
        return tuple(self.replication_role_arn_of(s) for s in self.sources)

    @property
    def resource_tags(self) -> dict[str, str]:
        """The configured tags plus the kit's own (`kit`, `managed-by`), sorted by key."""
        return dict(sorted({**self.tags, "kit": self.kit.name, "managed-by": "s3tables-replica-kit"}.items()))

    # ---- derived names (part of the deployed contract: never rename casually) ----
    @property
    def recovery_role_name(self) -> str:
        return f"{self.kit.name}-s3tables-recovery"

    @property
    def recovery_replica(self) -> Replica:
        return next(r for r in self.replicas if r.bucket == self.recovery.replica)

    @property
    def recovery_role_arn(self) -> str:
        return self.recovery_replica.role_arn(self.recovery_role_name)

    @property
    def recovery_bucket_arn(self) -> str:
        rep = self.recovery_replica
        return f"arn:{rep.partition}:s3tables:{rep.region}:{rep.account_id}:bucket/{self.recovery.bucket}"

    @property
    def recovery_scripts_bucket(self) -> str:
        rep = self.recovery_replica
        return self.recovery.scripts_bucket or f"{self.kit.name}-recovery-{rep.account_id}-{rep.region}"

    @property
    def guardrail_policy_name(self) -> str:
        return f"{self.kit.name}-s3tables-replica-guardrail"

    @property
    def pipeline_guardrail_policy_name(self) -> str:
        """The pipeline guardrail's managed policy (a source account without a replica; a failover topology)."""
        return f"{self.kit.name}-s3tables-pipeline-guardrail"

    @property
    def pipeline_guardrail_accounts(self) -> list[str]:
        """The accounts that hold a source and no replica, hence no guardrail, where roles are named to carry the
        pipeline guardrail (`protection.source_guardrail_attach_roles`)."""
        if not self.protection.source_guardrail_attach_roles:
            return []
        return sorted({s.account_id for s in self.sources} - {r.account_id for r in self.replicas})

    @property
    def scp_name(self) -> str:
        return f"{self.kit.name}-protect-s3tables-replicas"

    @property
    def scp_guards_name(self) -> str:
        return f"{self.kit.name}-protect-s3tables-replica-guards"

    @property
    def scp_pipeline_name(self) -> str:
        return f"{self.kit.name}-protect-s3tables-pipeline"

    @property
    def rcp_name(self) -> str:
        return f"{self.kit.name}-protect-s3tables-replication-roles"

    def state_key(self, stack_id: str) -> str:
        """The S3 object key of a stack's state (one key per stack)."""
        return f"{self.state.key_prefix or self.kit.name}/{stack_id}.tfstate"

    def replicated_tables_of(self, src: Source) -> list[tuple[str, str]]:
        """(namespace, table) pairs of `src` under table-level replication, or every declared table in bucket mode."""
        rep = self.replication_of(src)
        if rep.mode == "tables":
            return [tuple(t.split(".", 1)) for t in rep.tables]  # type: ignore[misc]
        return [(ns.name, t.name) for ns, t in src.tables()]

    def tables_into(self, replica: Replica) -> list[tuple[str, str]]:
        """(namespace, table) of every declared table replicated into `replica`, from each source feeding it."""
        return [t for s in self.sources_into(replica) for t in self.replicated_tables_of(s)]
