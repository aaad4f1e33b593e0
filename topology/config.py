"""The kit's one configuration: a frozen, typed description of the S3 Tables replication topology.

Loaded from TOML (`load_config`), validated completely before anything is built or written. Every error names the
field (``replicas[0].bucket``) and the rule it breaks. This module imports no CDKTF code: `policies/` and `jobs/`
use it too.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from topology.assurance import Assurance

# --------------------------------------------------------------------------------------------------------------
# Rules (S3 user guide: naming rules and quotas; see docs/aws-facts.md#names-and-quotas)
# --------------------------------------------------------------------------------------------------------------

MAX_DESTINATIONS = 5
MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION = 10
MAX_TABLES_PER_BUCKET = 10_000

KNOWN_REGIONS = frozenset(
    {
        "us-east-1", "us-east-2", "us-west-1", "us-west-2",
        "af-south-1",
        "ap-east-1", "ap-east-2", "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2",
        "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7",
        "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
        "ca-central-1", "ca-west-1",
        "eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "eu-west-3",
        "eu-south-1", "eu-south-2", "eu-north-1",
        "il-central-1", "me-south-1", "me-central-1", "mx-central-1", "sa-east-1",
        "us-gov-east-1", "us-gov-west-1", "cn-north-1", "cn-northwest-1",
    }
)  # fmt: skip

BUCKET_FORBIDDEN_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-", "aws")
BUCKET_FORBIDDEN_SUFFIXES = ("-s3alias", "--ol-s3", "--x-s3", "--table-s3")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_ICEBERG_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,254}$")
_ACCOUNT_RE = re.compile(r"^\d{12}$")
_KIT_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{1,22}[a-z0-9]$")
_IAM_PRINCIPAL_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::(\d{12}):(role|user)/[\w+=,.@/-]{1,512}$")
_ROLE_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::(\d{12}):role/[\w+=,.@/-]{1,512}$")
_KMS_KEY_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:kms:([a-z0-9-]+):(\d{12}):key/[0-9a-f-]{36}$")
_ORG_TARGET_RE = re.compile(r"^(r-[0-9a-z]{4,32}|ou-[0-9a-z]{4,32}-[a-z0-9]{8,32}|\d{12})$")
_EMR_RELEASE_RE = re.compile(r"^emr-(\d+)\.(\d+)\.(\d+)$")
# Tag rules of S3 Tables (CloudFormation AWS::S3Tables::TableBucket Tag) that hold for every AWS service's tags too.
_TAG_KEY_RE = re.compile(r"^[\w .:/=+@-]{1,128}$")
_TAG_VALUE_RE = re.compile(r"^[\w .:/=+@-]{0,256}$")
KIT_TAG_KEYS = ("kit", "managed-by")
# `[tags] on_replicated_source_tables = true`: the opt-in that puts the tags on replicated source tables too (a
# boolean, not a tag). Off by default: replication does not support "tables with tags"
# (docs/provisioning.md#tags-and-replicated-tables).
SOURCE_TABLE_TAGS_KEY = "on_replicated_source_tables"
MAX_TAGS = 50

UPPERCASE_REASON = (
    "must be lower case: AWS analytics services (Glue Data Catalog, Lake Formation, Athena) reach S3 Tables "
    "through the Glue federation, which lower-cases names, so an upper-case name cannot be resolved there"
)

PRIMITIVE_TYPES = frozenset(
    {"boolean", "int", "long", "float", "double", "date", "time", "timestamp", "timestamptz", "string",
     "uuid", "binary"}
)  # fmt: skip
_DECIMAL_RE = re.compile(r"^decimal\((\d{1,2}),\s*(\d{1,2})\)$")
_FIXED_RE = re.compile(r"^fixed\[(\d+)\]$")
_PARTITION_RE = re.compile(
    r"^(?:(?P<fn>identity|years?|months?|days?|hours?|bucket|truncate|void)\((?:(?P<arg>\d+),\s*)?(?P<col>[a-z0-9_]+)\)"
    r"|(?P<bare>[a-z0-9_]+))$"
)
_TRANSFORM_CANON = {
    "identity": "identity", "year": "year", "years": "year", "month": "month", "months": "month",
    "day": "day", "days": "day", "hour": "hour", "hours": "hour", "bucket": "bucket",
    "truncate": "truncate", "void": "void",
}  # fmt: skip
_TEMPORAL_TRANSFORM_TYPES = {
    "year": {"date", "timestamp", "timestamptz"},
    "month": {"date", "timestamp", "timestamptz"},
    "day": {"date", "timestamp", "timestamptz"},
    "hour": {"timestamp", "timestamptz"},
}


def partition_of_arn(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def check_bucket_name(name: str) -> str:
    if name != name.lower():
        raise ValueError(f"table bucket name {name!r} {UPPERCASE_REASON}")
    if not 3 <= len(name) <= 63:
        raise ValueError(f"table bucket name {name!r} must be 3-63 characters long (it has {len(name)})")
    if not _BUCKET_RE.match(name):
        raise ValueError(
            f"table bucket name {name!r} may contain only lowercase letters, digits and hyphens, and must start "
            "and end with a letter or digit (no '_' or '.')"
        )
    for prefix in BUCKET_FORBIDDEN_PREFIXES:
        if name.startswith(prefix):
            raise ValueError(f"table bucket name {name!r} must not start with the reserved prefix {prefix!r}")
    for suffix in BUCKET_FORBIDDEN_SUFFIXES:
        if name.endswith(suffix):
            raise ValueError(f"table bucket name {name!r} must not end with the reserved suffix {suffix!r}")
    return name


def check_iceberg_name(name: str, what: str) -> str:
    if name != name.lower():
        raise ValueError(f"{what} name {name!r} {UPPERCASE_REASON}")
    if not 1 <= len(name) <= 255:
        raise ValueError(f"{what} name {name!r} must be 1-255 characters long")
    if not _ICEBERG_NAME_RE.match(name):
        raise ValueError(
            f"{what} name {name!r} may contain only lowercase letters, digits and underscores and must start "
            "with a letter or digit"
        )
    if what == "namespace" and name.startswith("aws"):
        raise ValueError(f"namespace name {name!r} must not start with 'aws' (reserved)")
    return name


def check_account(value: str) -> str:
    if not isinstance(value, str) or not _ACCOUNT_RE.match(value):
        raise ValueError(
            f"account id {value!r} must be a string of exactly 12 digits (quote it in TOML so leading zeros survive)"
        )
    return value


def check_region(value: str) -> str:
    if value not in KNOWN_REGIONS:
        raise ValueError(f"unknown AWS Region {value!r}; expected one of the Region names such as 'us-east-1'")
    return value


def check_column_type(value: str) -> str:
    if value in PRIMITIVE_TYPES:
        return value
    m = _DECIMAL_RE.match(value)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        if not 1 <= precision <= 38 or scale > precision:
            raise ValueError(f"decimal type {value!r} needs 1 <= precision <= 38 and scale <= precision")
        return f"decimal({precision},{scale})"
    if _FIXED_RE.match(value):
        return value
    raise ValueError(
        f"unknown Iceberg type {value!r}; expected one of {sorted(PRIMITIVE_TYPES)}, 'decimal(P,S)' or 'fixed[L]'"
    )


# --------------------------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------------------------


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
        if v is not None and v != "create" and not _KMS_KEY_ARN_RE.match(v):
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
    m = _PARTITION_RE.match(expr.strip())
    if not m:
        raise ValueError(
            f"partition {expr!r} is not a transform; use 'column', 'month(column)', 'day(column)', "
            "'bucket(16, column)' or 'truncate(10, column)'"
        )
    if m.group("bare"):
        return PartitionField(m.group("bare"), "identity")
    fn = _TRANSFORM_CANON[m.group("fn")]
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
        if v is not None and not _ROLE_ARN_RE.match(v):
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


class Source(_BucketSite):
    snapshot_retention: SnapshotRetention
    unreferenced_file_removal: UnreferencedFileRemoval = UnreferencedFileRemoval()
    namespaces: tuple[Namespace, ...] = ()

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


class Replication(_Frozen):
    """`bucket`: one bucket-level configuration covering existing and future tables.
    `tables`: one table-level configuration per listed `namespace.table` (must be declared in the source)."""

    mode: Literal["bucket", "tables"]
    tables: tuple[str, ...] = ()


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
            if not (target.startswith("r-") or target.startswith("ou-")) or not _ORG_TARGET_RE.match(target):
                raise ValueError(f"ou_accounts key {target!r} must be a root (r-...) or an OU (ou-...-...)")
            for a in accounts:
                check_account(a)
        return v

    @property
    def covered_accounts(self) -> frozenset[str]:
        """Accounts the SCP reaches, as the configuration states it."""
        direct = {t for t in self.targets if _ACCOUNT_RE.match(t)}
        under = {a for t in self.targets for a in self.ou_accounts.get(t, ())}
        return frozenset(direct | under)

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for t in v:
            if not _ORG_TARGET_RE.match(t):
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

    @field_validator("break_glass_principals")
    @classmethod
    def _bg(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not _IAM_PRINCIPAL_RE.match(arn):
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
        m = _EMR_RELEASE_RE.match(v)
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
        if not _KIT_NAME_RE.match(v):
            raise ValueError(
                f"kit name {v!r} must be 3-24 characters: lowercase letters, digits, hyphens, starting with a letter "
                "(it prefixes IAM role and policy names)"
            )
        return v


# ---------------------------------------------------------------- [failover] (issue 17; topology/failover.py) ----

MAX_FAILOVER_DESTINATIONS = 5  # = topology.config.MAX_DESTINATIONS (one replication rule, 1 to 5 destinations)
_ROLE_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::(\d{12}):role/[\w+=,.@/-]{1,512}$")
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
            if not _ROLE_ARN_RE.match(arn):
                raise ValueError(f"writer role {arn!r} must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
        return v


class KitConfig(_Frozen):
    kit: Kit
    source: Source
    replicas: tuple[Replica, ...] = Field(min_length=1, max_length=MAX_DESTINATIONS)
    replication: Replication
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
            if not _TAG_KEY_RE.match(key) or key.lower().startswith("aws:"):
                raise ValueError(
                    f"tag key {key!r} must be 1-128 letters, digits, spaces or _ . : / = + - @ and must not start "
                    "with 'aws:'"
                )
            if not isinstance(value, str) or not _TAG_VALUE_RE.match(value):
                raise ValueError(
                    f"tag {key!r}: value {value!r} must be 0-256 letters, digits, spaces or _ . : / = + - @"
                )
            if key in KIT_TAG_KEYS:
                raise ValueError(f"tag key {key!r} is set by the kit itself ({', '.join(KIT_TAG_KEYS)})")
        if len(v) + len(KIT_TAG_KEYS) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS - len(KIT_TAG_KEYS)} tags (AWS allows {MAX_TAGS} per resource)")
        return v

    @property
    def resource_tags(self) -> dict[str, str]:
        """The configured tags plus the kit's own (`kit`, `managed-by`), sorted by key."""
        return dict(sorted({**self.tags, "kit": self.kit.name, "managed-by": "s3tables-replica-kit"}.items()))

    # ---- derived names (part of the deployed contract: never rename casually) ----
    @property
    def replication_role_name(self) -> str:
        return f"{self.kit.name}-s3tables-replication"

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

    def is_cross_account(self, replica: Replica) -> bool:
        return replica.account_id != self.source.account_id


# --------------------------------------------------------------------------------------------------------------
# Loading and cross-field rules
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issue:
    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


class ConfigError(ValueError):
    """Invalid configuration. `issues` lists every problem found, each naming the field and the rule."""

    def __init__(self, source: str, issues: list[Issue]):
        self.source = source
        self.issues = issues
        lines = "\n".join(f"  - {i}" for i in issues)
        super().__init__(f"invalid configuration {source}: {len(issues)} problem(s)\n{lines}")


def _loc(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def _pydantic_issues(err: ValidationError) -> list[Issue]:
    issues = []
    for e in err.errors():
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not part of the configuration schema; check the spelling)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] in ("too_short", "too_long"):
            ctx = e.get("ctx", {})
            bound = (
                f"at least {ctx.get('min_length')}" if e["type"] == "too_short" else f"at most {ctx.get('max_length')}"
            )
            msg = f"needs {bound} item(s), got {ctx.get('actual_length')}"
            if tuple(e["loc"]) == ("replicas",):
                msg += f" (S3 Tables replicates to 1 to {MAX_DESTINATIONS} destination table buckets)"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        issues.append(Issue(_loc(tuple(e["loc"])), msg))
    return issues


def _cross_checks(cfg: KitConfig) -> list[Issue]:
    out: list[Issue] = []
    src = cfg.source

    # Tables, columns, partitions
    seen_ns: set[str] = set()
    total_tables = 0
    for i, ns in enumerate(src.namespaces):
        if ns.name in seen_ns:
            out.append(Issue(f"source.namespaces[{i}].name", f"duplicate namespace {ns.name!r}"))
        seen_ns.add(ns.name)
        seen_t: set[str] = set()
        for j, t in enumerate(ns.tables):
            total_tables += 1
            where = f"source.namespaces[{i}].tables[{j}]"
            if t.name in seen_t:
                out.append(Issue(f"{where}.name", f"duplicate table {ns.name}.{t.name}"))
            seen_t.add(t.name)
            cols = Counter(c.name for c in t.columns)
            for c, n in cols.items():
                if n > 1:
                    out.append(Issue(f"{where}.columns", f"duplicate column {c!r}"))
            types = {c.name: c.type for c in t.columns}
            for k, p in enumerate(t.partition_by):
                try:
                    pf = parse_partition(p)
                except ValueError as exc:
                    out.append(Issue(f"{where}.partition_by[{k}]", str(exc)))
                    continue
                if pf.source not in types:
                    out.append(
                        Issue(
                            f"{where}.partition_by[{k}]",
                            f"partition source column {pf.source!r} is not a column of the table",
                        )
                    )
                    continue
                allowed = _TEMPORAL_TRANSFORM_TYPES.get(pf.transform)
                if allowed and types[pf.source] not in allowed:
                    out.append(
                        Issue(
                            f"{where}.partition_by[{k}]",
                            f"transform {pf.transform} needs a date/timestamp column; "
                            f"{pf.source!r} is {types[pf.source]}",
                        )
                    )
            ret = src.retention_for(t)
            for r_i, rep in enumerate(cfg.replicas):
                if rep.snapshot_retention.max_snapshot_age_hours < ret.max_snapshot_age_hours:
                    out.append(
                        Issue(
                            f"replicas[{r_i}].snapshot_retention.max_snapshot_age_hours",
                            f"replica retention ({rep.snapshot_retention.max_snapshot_age_hours} h) is shorter "
                            f"than table {ns.name}.{t.name}'s source retention ({ret.max_snapshot_age_hours} h); "
                            "replicas must keep snapshots at least as long as the source",
                        )
                    )
    if total_tables > MAX_TABLES_PER_BUCKET:
        out.append(
            Issue(
                "source.namespaces",
                f"{total_tables} tables exceed the quota of {MAX_TABLES_PER_BUCKET} tables per table bucket",
            )
        )

    # Replicas vs source and each other
    for r_i, rep in enumerate(cfg.replicas):
        where = f"replicas[{r_i}]"
        if rep.site_key == src.site_key or (rep.account_id == src.account_id and rep.region == src.region):
            if rep.bucket == src.bucket:
                out.append(Issue(f"{where}.bucket", "a destination must not be the source table bucket itself"))
            else:
                out.append(
                    Issue(
                        f"{where}.region",
                        "a destination in the source's own account and Region protects nothing against a Regional "
                        "outage or account compromise; use another Region or account",
                    )
                )
        if rep.snapshot_retention.min_snapshots_to_keep < src.snapshot_retention.min_snapshots_to_keep:
            out.append(
                Issue(
                    f"{where}.snapshot_retention.min_snapshots_to_keep",
                    "replica keeps fewer snapshots than the source; replicas must keep at least as many",
                )
            )
        for fld, arn in (("deploy_role_arn", rep.deploy_role_arn), ("encryption.kms_key", rep.encryption.kms_key)):
            if arn and arn.startswith("arn:"):
                acct = arn.split(":")[4]
                if acct != rep.account_id:
                    out.append(
                        Issue(
                            f"{where}.account_id",
                            f"cross-account destination: {fld} is in account {acct}, so account_id must be {acct} "
                            f"(it is {rep.account_id}); set the destination's own account",
                        )
                    )
    for site_key, n in Counter(r.site_key for r in cfg.replicas).items():
        if n > 1:
            idx = [i for i, r in enumerate(cfg.replicas) if r.site_key == site_key]
            acct, region, bucket = site_key
            out.append(Issue(f"replicas[{idx[1]}].bucket", f"duplicate destination {bucket!r} in {region}/{acct}"))

    # Encryption on every bucket site
    sites: list[tuple[str, Encryption, str]] = [("source", src.encryption, src.region)]
    sites += [(f"replicas[{i}]", r.encryption, r.region) for i, r in enumerate(cfg.replicas)]
    rec_rep = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    sites.append(("recovery", cfg.recovery.encryption, rec_rep.region if rec_rep else ""))
    for where, enc, region in sites:
        if enc.type == "kms" and not enc.kms_key:
            out.append(
                Issue(
                    f"{where}.encryption.kms_key",
                    'KMS encryption needs a key: set kms_key = "create" or the ARN of an existing key',
                )
            )
        if enc.type == "sse-s3" and enc.kms_key:
            out.append(Issue(f"{where}.encryption.kms_key", 'kms_key is only valid with type = "kms"'))
        if enc.kms_key and enc.kms_key.startswith("arn:") and region and enc.kms_key.split(":")[3] != region:
            out.append(Issue(f"{where}.encryption.kms_key", f"the KMS key must be in the bucket's Region ({region})"))

    # Replication mode
    declared = {f"{ns.name}.{t.name}" for ns, t in src.tables()}
    if cfg.replication.mode == "tables":
        if not cfg.replication.tables:
            out.append(Issue("replication.tables", 'mode = "tables" needs at least one "namespace.table"'))
        for k, name in enumerate(cfg.replication.tables):
            if name not in declared:
                out.append(
                    Issue(f"replication.tables[{k}]", f"{name!r} is not a table declared under source.namespaces")
                )
        for listed, n in Counter(cfg.replication.tables).items():
            if n > 1:
                out.append(Issue("replication.tables", f"{listed!r} is listed twice"))
    elif cfg.replication.tables:
        out.append(Issue("replication.tables", 'only valid with mode = "tables" (bucket mode covers every table)'))

    # Recovery
    if rec_rep is None:
        out.append(Issue("recovery.replica", f"{cfg.recovery.replica!r} is not the bucket of any entry in replicas"))
    else:
        taken = {(src.account_id, src.region, src.bucket)} | {r.site_key for r in cfg.replicas}
        if (rec_rep.account_id, rec_rep.region, cfg.recovery.bucket) in taken:
            out.append(
                Issue(
                    "recovery.bucket", "the recovery target must be its own table bucket, not the source or a replica"
                )
            )

    # Quota: table buckets per account and Region
    per_site = Counter(
        [(src.account_id, src.region)]
        + [(r.account_id, r.region) for r in cfg.replicas]
        + ([(rec_rep.account_id, rec_rep.region)] if rec_rep else [])
    )
    for (acct, region), n in per_site.items():
        if n > MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION:
            out.append(
                Issue(
                    "replicas",
                    f"{n} table buckets in {acct}/{region} exceed the quota of {MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION}",
                )
            )

    # State
    st = cfg.state
    if st.backend == "s3":
        for fld in ("bucket", "region"):
            if getattr(st, fld) is None:
                out.append(Issue(f"state.{fld}", 'required with backend = "s3"'))
        if st.kms_key_arn and st.region and st.kms_key_arn.split(":")[3] != st.region:
            out.append(Issue("state.kms_key_arn", f"the KMS key must be in the state bucket's Region ({st.region})"))
    else:
        for fld in ("bucket", "key_prefix", "region", "kms_key_arn"):
            if getattr(st, fld) is not None:
                out.append(Issue(f"state.{fld}", 'only valid with backend = "s3"'))

    # Protection
    out += _protection_checks(cfg)
    out += failover_checks(cfg)
    return out


def _protection_checks(cfg: KitConfig) -> list[Issue]:
    """Configurations under which a protection layer would not be effective are refused, not deployed."""
    out: list[Issue] = []
    prot = cfg.protection
    deploy_roles = {r.deploy_role_arn for r in (cfg.source, *cfg.replicas) if r.deploy_role_arn}
    if prot.organization and prot.organization.deploy_role_arn:
        deploy_roles.add(prot.organization.deploy_role_arn)
    for k, arn in enumerate(prot.break_glass_principals):
        where = f"protection.break_glass_principals[{k}]"
        if arn == cfg.replication_role_arn:
            out.append(Issue(where, "the replication role cannot be a break-glass principal"))
        elif any(r.bucket == cfg.recovery.replica for r in cfg.replicas) and arn == cfg.recovery_role_arn:
            out.append(
                Issue(where, "the recovery role cannot be a break-glass principal (it must never write replicas)")
            )
        elif arn in deploy_roles:
            out.append(
                Issue(
                    where,
                    "a deploy role cannot be a break-glass principal: every `cdktf deploy` could then delete replicas; "
                    "break-glass must be a separate, rarely used identity",
                )
            )
    replica_accounts = {r.account_id for r in cfg.replicas}
    carried = {
        f"arn:{r.partition}:iam::{r.account_id}:role/{n}" for r in cfg.replicas for n in prot.guardrail_attach_roles
    }
    for k, name in enumerate(prot.guardrail_attach_roles):
        arns = {a for a in carried if a.rsplit("/", 1)[1] == name}
        if arns & set(prot.break_glass_principals) or any(
            p.split(":")[4] in replica_accounts and p.rsplit("/", 1)[1] == name for p in prot.break_glass_principals
        ):
            out.append(
                Issue(
                    f"protection.guardrail_attach_roles[{k}]",
                    f"{name!r} is a break-glass role: the guardrail exempts nobody but deploy roles, so it would lock "
                    "break-glass out",
                )
            )
        if cfg.replication_role_arn in arns:
            out.append(
                Issue(f"protection.guardrail_attach_roles[{k}]", "the replication role must not carry the guardrail")
            )
    org = prot.organization
    if org is None:
        out.append(
            Issue(
                "protection.organization",
                "required: the SCP is the layer that no role in a replica or source account can remove (it keeps the "
                "deploy role from detaching its guardrail and stops anyone from taking over the replication, deploy "
                "or break-glass roles); without it a deploy role could strip every other layer",
            )
        )
        return out
    for t in org.ou_accounts:
        if t not in org.targets:
            out.append(Issue(f"protection.organization.ou_accounts.{t}", f"{t!r} is not one of the SCP targets"))
    covered = org.covered_accounts
    sites = [("source.account_id", cfg.source.account_id, "source")]
    sites += [(f"replicas[{i}].account_id", r.account_id, f"replica {r.bucket}") for i, r in enumerate(cfg.replicas)]
    reported: set[str] = set()
    for where, acct, what in sites:
        if acct == org.management_account_id:
            out.append(
                Issue(
                    where,
                    f"the {what} is in the organization's management account {acct}, where SCPs do not apply; "
                    "put it in a member account",
                )
            )
        elif acct not in covered and acct not in reported:
            reported.add(acct)
            out.append(
                Issue(
                    "protection.organization.targets",
                    f"account {acct} ({what}) is not covered by the SCP: add it to targets, or list it under "
                    "protection.organization.ou_accounts for the root or OU target it sits in",
                )
            )
    out += assurance_checks(cfg)
    return out


def assurance_checks(cfg: KitConfig) -> list[Issue]:
    """Cross-field rules of `[assurance]` (topology/assurance.py), run by `parse_config` after the model validates."""
    out: list[Issue] = []
    a = cfg.assurance
    replicated = {f"{ns}.{t}" for ns, t in cfg.replicated_tables()}
    for k, name in enumerate(a.rehearsal.tables):
        if name not in replicated:
            out.append(
                Issue(
                    f"assurance.rehearsal.tables[{k}]",
                    f"{name!r} is not a replicated table (replicated: {sorted(replicated)})",
                )
            )
    if a.rehearsal.namespace == cfg.recovery.namespace:
        out.append(
            Issue(
                "assurance.rehearsal.namespace",
                "must differ from recovery.namespace: the rehearsal drops every table it creates there",
            )
        )
    rep = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    if rep is not None and a.rehearsal.offset_hours >= rep.snapshot_retention.max_snapshot_age_hours:
        out.append(
            Issue(
                "assurance.rehearsal.offset_hours",
                f"{a.rehearsal.offset_hours} h reaches back as far as the recovery replica's retention "
                f"({rep.snapshot_retention.max_snapshot_age_hours} h): the rehearsal would fail once snapshots expire",
            )
        )
    return out


def parse_config(data: dict[str, object], source: str = "<dict>") -> KitConfig:
    try:
        cfg = KitConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(source, _pydantic_issues(err)) from None
    issues = _cross_checks(cfg)
    if issues:
        raise ConfigError(source, issues)
    return cfg


def load_config(path: str | Path) -> KitConfig:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(str(p), [Issue("(file)", "configuration file not found")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), [Issue("(file)", f"not valid TOML: {exc}")]) from None
    return parse_config(data, str(p))


def failover_recovery_replica(cfg: KitConfig, promoted: str, destinations: Sequence[Replica]) -> Replica | None:
    """The replica recovery and its rehearsal read in the failover topology: a replica OF THE NEW SOURCE.

    The recovery stack never moves (its bucket, role, EMR application and scripts bucket stay in the account and
    Region of `recovery.replica`, at the same Terraform addresses), but what it reads follows the promoted source:

    - `recovery.replica` is a destination of the promoted bucket (`failover.replicate_to`): it stays;
    - otherwise (it is the promoted bucket, now the writable source, or a retained replica the failed source no longer
      feeds): the first destination, in `replicate_to` order, in the recovery account and Region, else the first in
      the recovery account (another Region: the rehearsal reads across Regions, `--replica-region`);
    - none in the recovery account: None (a replica of another account would need a grant to the recovery role in
      its resource and key policies, which a protected replica gives nobody): `failover_checks` refuses it.
    """
    if any(d.bucket == cfg.recovery.replica for d in destinations):
        return next(d for d in destinations if d.bucket == cfg.recovery.replica)
    site = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    if site is None:
        return None
    same_account = [d for d in destinations if d.account_id == site.account_id]
    same_region = [d for d in same_account if d.region == site.region]
    found = same_region or same_account
    return found[0] if found else None


def failover_checks(cfg: KitConfig) -> list[Issue]:
    """Cross-field rules of the section (run by `topology.config.parse_config` after the model validates)."""

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
