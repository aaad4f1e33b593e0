"""The configuration's model: one frozen pydantic model per section of `kit.toml` and the root `KitConfig` with the
names it derives (part of the deployed contract). Field-level rules only; the rules that read several sections are
`topology.checks`, loading is `topology.loader`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from s3tables_kit.topology.assurance import Assurance
from s3tables_kit.topology.rules import (
    ACCOUNT_RE,
    EMR_RELEASE_RE,
    IAM_PRINCIPAL_RE,
    KIT_NAME_RE,
    KIT_TAG_KEYS,
    KMS_KEY_ARN_RE,
    MAX_TAGS,
    ORG_TARGET_RE,
    PARTITION_RE,
    PROTECTION_TAG_KEY,
    ROLE_ARN_RE,
    SOURCE_ID_RE,
    SOURCE_TABLE_TAGS_KEY,
    TAG_KEY_RE,
    TAG_VALUE_RE,
    TRANSFORM_CANON,
    check_account,
    check_bucket_name,
    check_column_type,
    check_iceberg_name,
    check_region,
    partition_of_arn,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


AccountId = Annotated[str, Field(strict=True)]


class Encryption(_Frozen):
    """`sse-s3` (AES256) or `kms`. With `kms`, `kms_key` is either "create" (the kit creates a key with the
    service-required key policy) or the ARN of an existing key in the bucket's account and Region."""

    type: Literal["sse-s3", "kms"]
    kms_key: str | None = None

    @field_validator("kms_key")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        if v is not None and v != "create" and not KMS_KEY_ARN_RE.match(v):
            raise ValueError(
                f'kms_key {v!r} must be "create" or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)'
            )
        return v

    @property
    def sse_algorithm(self) -> str:
        return "aws:kms" if self.type == "kms" else "AES256"

    @property
    def creates_key(self) -> bool:
        return self.type == "kms" and self.kms_key == "create"


class SnapshotRetention(_Frozen):
    """Iceberg snapshot management for a table (S3 Tables `icebergSnapshotManagement`)."""

    max_snapshot_age_hours: int = Field(ge=1)
    min_snapshots_to_keep: int = Field(default=1, ge=1)


class UnreferencedFileRemoval(_Frozen):
    """Bucket-level `icebergUnreferencedFileRemoval`."""

    unreferenced_days: int = Field(default=3, ge=1)
    noncurrent_days: int = Field(default=10, ge=1)


class Column(_Frozen):
    name: str
    type: str
    required: bool = False
    doc: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_iceberg_name(v, "column")

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        return check_column_type(v)


@dataclass(frozen=True)
class PartitionField:
    source: str
    transform: str  # identity, year, month, day, hour, bucket[N], truncate[W], void

    @property
    def spark_sql(self) -> str:
        if self.transform == "identity":
            return self.source
        if self.transform.startswith(("bucket[", "truncate[")):
            fn, arg = self.transform[:-1].split("[")
            return f"{fn}({arg}, {self.source})"
        plural = {"year": "years", "month": "months", "day": "days", "hour": "hours"}
        return f"{plural.get(self.transform, self.transform)}({self.source})"


def parse_partition(expr: str) -> PartitionField:
    m = PARTITION_RE.match(expr.strip())
    if not m:
        raise ValueError(
            f"partition {expr!r} is not a transform; use 'column', 'month(column)', 'day(column)', "
            "'bucket(16, column)' or 'truncate(10, column)'"
        )
    if m.group("bare"):
        return PartitionField(m.group("bare"), "identity")
    fn = TRANSFORM_CANON[m.group("fn")]
    arg = m.group("arg")
    if fn in ("bucket", "truncate"):
        if arg is None or int(arg) < 1:
            raise ValueError(f"partition {expr!r}: {fn} needs a positive width, e.g. {fn}(16, column)")
        return PartitionField(m.group("col"), f"{fn}[{int(arg)}]")
    if arg is not None:
        raise ValueError(f"partition {expr!r}: {fn} takes only a column")
    return PartitionField(m.group("col"), fn)


class Table(_Frozen):
    name: str
    columns: tuple[Column, ...] = Field(min_length=1)
    partition_by: tuple[str, ...] = ()
    snapshot_retention: SnapshotRetention | None = None  # overrides the source default for this table

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_iceberg_name(v, "table")

    @property
    def partition_fields(self) -> tuple[PartitionField, ...]:
        return tuple(parse_partition(p) for p in self.partition_by)


class Namespace(_Frozen):
    name: str
    tables: tuple[Table, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_iceberg_name(v, "namespace")


class _BucketSite(_Frozen):
    account_id: AccountId
    region: str
    bucket: str
    encryption: Encryption
    storage_class: Literal["STANDARD", "INTELLIGENT_TIERING"] = "STANDARD"
    deploy_role_arn: str | None = None  # role the Terraform provider assumes in this account

    _acc = field_validator("account_id")(classmethod(lambda cls, v: check_account(v)))
    _reg = field_validator("region")(classmethod(lambda cls, v: check_region(v)))
    _bkt = field_validator("bucket")(classmethod(lambda cls, v: check_bucket_name(v)))

    @field_validator("deploy_role_arn")
    @classmethod
    def _role(cls, v: str | None) -> str | None:
        if v is not None and not ROLE_ARN_RE.match(v):
            raise ValueError(f"deploy_role_arn {v!r} must be an IAM role ARN")
        return v

    @property
    def partition(self) -> str:
        return partition_of_arn(self.region)

    @property
    def bucket_arn(self) -> str:
        return f"arn:{self.partition}:s3tables:{self.region}:{self.account_id}:bucket/{self.bucket}"

    @property
    def site_key(self) -> tuple[str, str, str]:
        return (self.account_id, self.region, self.bucket)


class Replication(_Frozen):
    """`bucket`: one bucket-level configuration covering existing and future tables.
    `tables`: one table-level configuration per listed `namespace.table` (must be declared in the source)."""

    mode: Literal["bucket", "tables"]
    tables: tuple[str, ...] = ()


class Source(_BucketSite):
    """A source table bucket: `[source]` (with `[replication]` beside it, replicating to every `[[replicas]]`), or one
    entry of `[[sources]]` in an estate, which also names itself (`id`), its destinations (`replicate_to`,
    bucket names of `[[replicas]]`) and its own `replication`. `topology.checks` refuses the estate keys under
    `[source]` and requires them under `[[sources]]`."""

    snapshot_retention: SnapshotRetention
    unreferenced_file_removal: UnreferencedFileRemoval = UnreferencedFileRemoval()
    namespaces: tuple[Namespace, ...] = ()
    # estate only ([[sources]]): stack `source-<id>`, names `<kit>-<id>-...`
    id: str | None = None
    replicate_to: tuple[str, ...] = ()
    replication: Replication | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        if v is not None and not SOURCE_ID_RE.match(v):
            raise ValueError(
                f"source id {v!r} must be 1-16 characters: lowercase letters, digits, hyphens, starting with a letter "
                "and not ending with a hyphen (it names the source's stack and prefixes its IAM role names)"
            )
        return v

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


class Replica(_BucketSite):
    snapshot_retention: SnapshotRetention
    unreferenced_file_removal: UnreferencedFileRemoval = UnreferencedFileRemoval()

    @property
    def stack_id(self) -> str:
        return f"replica-{self.bucket}"


class Organization(_Frozen):
    """Where the replica-protection SCP is attached. `targets` are roots, OUs or account ids; for a root or OU target,
    `ou_accounts` states which of the kit's accounts sit under it (as Organizations shows them), so that validation
    can prove every replica account and the source account are covered: an SCP that does not reach them protects
    nothing."""

    management_account_id: AccountId
    targets: tuple[str, ...] = Field(min_length=1)
    ou_accounts: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    deploy_role_arn: str | None = None

    _acc = field_validator("management_account_id")(classmethod(lambda cls, v: check_account(v)))

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

    break_glass_principals: tuple[str, ...] = Field(min_length=1)
    guardrail_attach_roles: tuple[str, ...] = ()  # IAM role names in replica accounts that get the guardrail
    organization: Organization | None = None
    # Whether a replica bucket's policy and the SCP exempt the replication role from the encryption, storage-class
    # and tag denies that `CreateTable` may also authorise (docs/aws-facts.md, "CreateTable and its dependent
    # actions"): "deny" keeps them; "allow" if the live check shows the service's CreateTable of a replica needs them.
    replication_role_createtable_dependents: Literal["deny", "allow"] = "deny"

    @field_validator("break_glass_principals")
    @classmethod
    def _bg(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not IAM_PRINCIPAL_RE.match(arn):
                raise ValueError(f"break-glass principal {arn!r} must be an IAM role or user ARN")
        return v


class Recovery(_Frozen):
    """Writable recovery target, in the Region and account of the replica named by `replica`."""

    replica: str  # bucket name of the replica recovery reads from
    bucket: str
    namespace: str = "recovered"
    encryption: Encryption = Encryption(type="sse-s3")
    emr_release: str = "emr-7.12.0"
    scripts_bucket: str | None = None
    # Scripts bucket lifecycle: job logs and recovery reports expire (a delete marker; the noncurrent version is
    # removed 30 days later); scripts never expire.
    logs_retention_days: int = Field(default=90, ge=1)
    reports_retention_days: int = Field(default=365, ge=1)

    _bkt = field_validator("bucket")(classmethod(lambda cls, v: check_bucket_name(v)))
    _ns = field_validator("namespace")(classmethod(lambda cls, v: check_iceberg_name(v, "namespace")))

    @field_validator("emr_release")
    @classmethod
    def _emr(cls, v: str) -> str:
        m = EMR_RELEASE_RE.match(v)
        if not m or (int(m.group(1)), int(m.group(2))) < (7, 5):
            raise ValueError(f"emr_release {v!r} must be emr-7.5.0 or later (first EMR release with S3 Tables)")
        return v


_STATE_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_STATE_KEY_PREFIX_RE = re.compile(r"^[A-Za-z0-9_.=-]+(/[A-Za-z0-9_.=-]+)*$")
# Terraform's S3 backend accepts a key ARN only with a real key id: a UUID (version 1-5, RFC 4122 variant) or a
# multi-Region key id (terraform internal/backend/remote-state/s3/validate.go); a made-up id fails `terraform init`.
_STATE_KMS_KEY_ARN_RE = re.compile(
    r"^arn:aws(-cn|-us-gov)?:kms:([a-z0-9-]+):(\d{12}):key/"
    r"([a-f0-9]{8}-[a-f0-9]{4}-[1-5][a-f0-9]{3}-[ab89][a-f0-9]{3}-[a-f0-9]{12}|mrk-[a-f0-9]{32})$"
)


class State(_Frozen):
    """Where Terraform keeps each stack's state (`[state]` in kit.toml).

    `local` (default): `terraform.<stack>.tfstate` in the working directory cdktf runs in (written as a path relative
    to `cdktf.out/stacks/<stack>/`, so the synthesized files carry no machine path). `s3`: one object per stack,
    `<key_prefix>/<stack>.tfstate` in `bucket` (`key_prefix` defaults to the kit name), always encrypted and always
    locked with Terraform's native S3 lock file (`use_lockfile`, Terraform >= 1.10); `kms_key_arn` optionally
    encrypts the state with a customer managed key in the bucket's Region."""

    backend: Literal["local", "s3"] = "local"
    bucket: str | None = None
    key_prefix: str | None = None
    region: str | None = None
    use_lockfile: bool = True
    encrypt: bool = True
    kms_key_arn: str | None = None

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        if v is not None and (not _STATE_BUCKET_RE.match(v) or ".." in v):
            raise ValueError(
                f"state bucket {v!r} is not an S3 bucket name (3-63 lowercase letters, digits, '.' and '-', "
                "starting and ending with a letter or digit)"
            )
        return v

    @field_validator("key_prefix")
    @classmethod
    def _prefix(cls, v: str | None) -> str | None:
        if v is not None and not _STATE_KEY_PREFIX_RE.match(v):
            raise ValueError(
                f"key_prefix {v!r} must be path segments of letters, digits, '_', '.', '=', '-' separated by single "
                "'/', without a leading or trailing '/'"
            )
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        return None if v is None else check_region(v)

    @field_validator("use_lockfile")
    @classmethod
    def _lock(cls, v: bool) -> bool:
        if not v:
            raise ValueError("state locking cannot be turned off: two concurrent applies would corrupt the state")
        return v

    @field_validator("encrypt")
    @classmethod
    def _encrypt(cls, v: bool) -> bool:
        if not v:
            raise ValueError("state encryption cannot be turned off: the state holds every resource's attributes")
        return v

    @field_validator("kms_key_arn")
    @classmethod
    def _kms(cls, v: str | None) -> str | None:
        if v is not None and not _STATE_KMS_KEY_ARN_RE.match(v):
            raise ValueError(
                f"kms_key_arn {v!r} must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>) whose id is a "
                "key id as KMS issues it (a UUID or mrk-...): Terraform's S3 backend rejects anything else"
            )
        return v


class Kit(_Frozen):
    name: str

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

    writer_roles: tuple[str, ...] = ()
    promoted_bucket: str | None = None
    replicate_to: tuple[str, ...] = ()
    new_buckets: tuple[Replica, ...] = ()

    @field_validator("writer_roles")
    @classmethod
    def _writers(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not ROLE_ARN_RE.match(arn):
                raise ValueError(f"writer role {arn!r} must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
        return v


class EstateError(ValueError):
    """A single-source name asked of an estate with several sources (use `sources`, `view(source)`)."""


class KitConfig(_Frozen):
    """The topology. `[source]` + `[replication]` describe one source bucket (every configuration before estates);
    `[[sources]]` an estate of one or more, each with its own destinations and replication, fan-in allowed (several
    sources naming one replica). Either form, never both (`topology.checks`). `sources` is the one list every layer
    iterates; `source`/`replication` are the single source's (an error on a multi-source estate), and `view(src)` is
    the configuration of one source with its own destinations, from which its stack, roles and monitor are built."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False, populate_by_name=True)

    kit: Kit
    source_section: Source | None = Field(default=None, alias="source")
    estate_sources: tuple[Source, ...] = Field(default=(), alias="sources")
    replicas: tuple[Replica, ...] = Field(min_length=1)
    replication_section: Replication | None = Field(default=None, alias="replication")
    protection: Protection
    recovery: Recovery
    assurance: Assurance = Assurance()  # [assurance]: monitor, rehearsal, alarm subscriptions (topology/assurance.py)
    failover: Failover | None = None  # [failover]: writers of a promoted replica, the promoted topology
    state: State = State()
    # Tags for every resource that takes them (aws provider default_tags, table buckets), besides the kit's own.
    tags: dict[str, str] = Field(default_factory=dict)
    # Set only through `[tags] on_replicated_source_tables` (see _source_table_tags_opt_in).
    tags_on_source_tables: bool = False

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

    # ---- the source(s) ----
    @property
    def is_estate(self) -> bool:
        """Declared with `[[sources]]`: the estate's protection (tagged buckets, constant-size SCPs)."""
        return bool(self.estate_sources)

    @property
    def sources(self) -> tuple[Source, ...]:
        return self.estate_sources or ((self.source_section,) if self.source_section is not None else ())

    @property
    def source(self) -> Source:
        """The configuration's one source (`[source]`, an estate of one, or a `view`)."""
        if len(self.sources) != 1:
            raise EstateError(
                f"this estate has {len(self.sources)} sources: a single-source name does not apply "
                "(iterate `sources`, or take `view(source)`)"
            )
        return self.sources[0]

    @property
    def replication(self) -> Replication:
        src = self.source
        rep = src.replication if self.is_estate else self.replication_section
        if rep is None:  # refused at load (topology.checks); a model built in code may lack it
            raise EstateError(f"source {src.bucket!r} has no replication section")
        return rep

    def replication_of(self, src: Source) -> Replication:
        return self.view(src).replication

    def destinations_of(self, src: Source) -> tuple[Replica, ...]:
        """The replicas `src` replicates to: every replica for `[source]`, its `replicate_to` in an estate."""
        if not self.is_estate:
            return self.replicas
        by_name = {r.bucket: r for r in self.replicas}
        return tuple(by_name[b] for b in src.replicate_to if b in by_name)

    def sources_into(self, replica: Replica) -> tuple[Source, ...]:
        """The sources replicating into `replica` (several: fan-in)."""
        return tuple(s for s in self.sources if replica in self.destinations_of(s))

    def view(self, src: Source) -> KitConfig:
        """The configuration of one source of the estate: that source, its destinations, its replication; names
        derived from it carry the source's id (`name_prefix`). The configuration itself for `[source]`."""
        if not self.is_estate:
            return self
        return self.model_copy(
            update={
                "estate_sources": (src,),
                "replicas": self.destinations_of(src),
                "replication_section": None,
            }
        )

    @property
    def name_prefix(self) -> str:
        """Prefix of the names derived for one source (its replication role, its monitor): the kit name, or
        `<kit>-<id>` for a source of an estate (at most 24 characters, like the kit name: `topology.checks`)."""
        src = self.source
        return self.kit.name if src.id is None else f"{self.kit.name}-{src.id}"

    def replication_role_arn_of(self, src: Source) -> str:
        return self.view(src).replication_role_arn

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
    def replication_role_name(self) -> str:
        return f"{self.name_prefix}-s3tables-replication"

    @property
    def replication_role_arn(self) -> str:
        return f"arn:{self.source.partition}:iam::{self.source.account_id}:role/{self.replication_role_name}"

    @property
    def recovery_role_name(self) -> str:
        return f"{self.kit.name}-s3tables-recovery"

    @property
    def recovery_replica(self) -> Replica:
        return next(r for r in self.replicas if r.bucket == self.recovery.replica)

    @property
    def recovery_role_arn(self) -> str:
        rep = self.recovery_replica
        return f"arn:{rep.partition}:iam::{rep.account_id}:role/{self.recovery_role_name}"

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
    def scp_name(self) -> str:
        return f"{self.kit.name}-protect-s3tables-replicas"

    @property
    def scp_guards_name(self) -> str:
        return f"{self.kit.name}-protect-s3tables-replica-guards"

    def state_key(self, stack_id: str) -> str:
        """The S3 object key of a stack's state (one key per stack)."""
        return f"{self.state.key_prefix or self.kit.name}/{stack_id}.tfstate"

    def replicated_tables(self) -> list[tuple[str, str]]:
        """(namespace, table) pairs under table-level replication, or every declared table in bucket mode."""
        if self.replication.mode == "tables":
            return [tuple(t.split(".", 1)) for t in self.replication.tables]  # type: ignore[misc]
        return [(ns.name, t.name) for ns, t in self.source.tables()]

    def tables_into(self, replica: Replica) -> list[tuple[str, str]]:
        """(namespace, table) of every declared table replicated into `replica`, from each source feeding it."""
        return [t for s in self.sources_into(replica) for t in self.view(s).replicated_tables()]

    def is_cross_account(self, replica: Replica) -> bool:
        """The single source's account differs from the replica's (`sources_into` for an estate)."""
        return replica.account_id != self.source.account_id
