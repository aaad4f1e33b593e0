"""The rules of AWS and of Iceberg that the configuration is checked against: quotas, name and ARN shapes, column
types and partition transforms (S3 user guide: naming rules and quotas; see docs/aws-facts.md#names-and-quotas).
Pure functions and constants, used by the model's field validators (`s3tables_kit.topology.model`) and the cross-field
checks (`s3tables_kit.topology.checks`), and the field types that carry the checks every section placing a resource
shares.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field

MAX_DESTINATIONS = 5
MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION = 10
MAX_TABLES_PER_BUCKET = 10_000
MAX_FAILOVER_DESTINATIONS = 5  # = MAX_DESTINATIONS (one replication rule, 1 to 5 destinations)

# The partitions whose ARNs the kit writes (`partition_of_arn`); their Regions come from botocore's endpoint data, so
# a Region AWS opens is accepted as soon as the pinned botocore knows it (nothing hand-written to fall behind).
KIT_PARTITIONS = ("aws", "aws-cn", "aws-us-gov")


@functools.cache
def known_regions() -> frozenset[str]:
    """Every Region of the kit's partitions in botocore's `partitions.json` (its `*-global` pseudo Regions left out)."""
    import botocore

    data = json.loads((Path(botocore.__file__).parent / "data" / "partitions.json").read_text(encoding="utf-8"))
    return frozenset(
        region
        for partition in data["partitions"]
        if partition["id"] in KIT_PARTITIONS
        for region in partition["regions"]
        if not region.endswith("-global")
    )


def check_optional(v: str | None, pattern: re.Pattern[str], message: str) -> str | None:
    """An optional name or ARN: unset passes, set must match `pattern` (else `message`, which names the value)."""
    if v is not None and not pattern.match(v):
        raise ValueError(message)
    return v


def check_deploy_role_arn(v: str | None) -> str | None:
    """A `deploy_role_arn` of a section: unset (the deploying credentials) or an IAM role ARN."""
    return check_optional(v, ROLE_ARN_RE, f"deploy_role_arn {v!r} must be an IAM role ARN")


def check_kms_key(v: str | None) -> str | None:
    """A `kms_key` of a section: "create" (the kit creates the key) or an existing key's ARN; unset passes."""
    if v is not None and v != "create" and not KMS_KEY_ARN_RE.match(v):
        raise ValueError(f'kms_key {v!r} must be "create" or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)')
    return v


BUCKET_FORBIDDEN_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-", "aws")
BUCKET_FORBIDDEN_SUFFIXES = ("-s3alias", "--ol-s3", "--x-s3", "--table-s3")
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
ICEBERG_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,254}$")
ACCOUNT_RE = re.compile(r"^\d{12}$")
PLACEHOLDER_ACCOUNT = "000000000000"  # what a proposal (`s3tables-kit discover`) writes for an account to name
KIT_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{1,22}[a-z0-9]$")
SOURCE_ID_RE = re.compile(r"^[a-z]([a-z0-9-]{0,14}[a-z0-9])?$")
MAX_NAME_PREFIX = 24  # `<kit>-<id>` prefixes IAM names like the kit name
IAM_PRINCIPAL_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::(\d{12}):(role|user)/[\w+=,.@/-]{1,512}$")
ROLE_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::(\d{12}):role/[\w+=,.@/-]{1,512}$")
KMS_KEY_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:kms:([a-z0-9-]+):(\d{12}):key/[0-9a-f-]{36}$")
ORG_TARGET_RE = re.compile(r"^(r-[0-9a-z]{4,32}|ou-[0-9a-z]{4,32}-[a-z0-9]{8,32}|\d{12})$")
EMR_RELEASE_RE = re.compile(r"^emr-(\d+)\.(\d+)\.(\d+)$")
# Tag rules of S3 Tables (CloudFormation AWS::S3Tables::TableBucket Tag) that hold for every AWS service's tags too.
TAG_KEY_RE = re.compile(r"^[\w .:/=+@-]{1,128}$")
TAG_VALUE_RE = re.compile(r"^[\w .:/=+@-]{0,256}$")
KIT_TAG_KEYS = ("kit", "managed-by")
# Estates only: every protected table bucket carries `kit-protection = <kit name>`; the estate's SCPs match
# it (`s3tables:TableBucketTag/kit-protection`), so their size does not grow with the number of buckets. Changing or
# removing it is denied to all but break-glass. Never on source buckets, never on tables.
PROTECTION_TAG_KEY = "kit-protection"
# In a replica that several sources of an estate feed, every replicated namespace of a source starts with this prefix
# of its account: one Deny with `${aws:PrincipalAccount}` (a value the caller cannot choose) then confines every
# source's replication role to its own account's namespaces, whatever the number of sources.
FAN_IN_NAMESPACE_PREFIX = "acct{account}_"
# The accounts of other sources than the replica's one fan-in replica's grants list (each about 60 characters of its
# bucket policy's 20,480; measured in tests/test_policy_fan_in.py with the longest names the kit accepts).
MAX_FAN_IN_SOURCE_ACCOUNTS = 100


def fan_in_namespace_prefix(account_id: str) -> str:
    return FAN_IN_NAMESPACE_PREFIX.format(account=account_id)


def replication_role_pattern(partition: str, kit: str) -> str:
    """Every source's replication role of an estate (`<kit>-<id>-s3tables-replication`), in any account."""
    return f"arn:{partition}:iam::*:role/{kit}-*-s3tables-replication"


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
DECIMAL_RE = re.compile(r"^decimal\((\d{1,2}),\s*(\d{1,2})\)$")
FIXED_RE = re.compile(r"^fixed\[(\d+)\]$")
PARTITION_RE = re.compile(
    r"^(?:(?P<fn>identity|years?|months?|days?|hours?|bucket|truncate|void)\((?:(?P<arg>\d+),\s*)?(?P<col>[a-z0-9_]+)\)"
    r"|(?P<bare>[a-z0-9_]+))$"
)
TRANSFORM_CANON = {
    "identity": "identity", "year": "year", "years": "year", "month": "month", "months": "month",
    "day": "day", "days": "day", "hour": "hour", "hours": "hour", "bucket": "bucket",
    "truncate": "truncate", "void": "void",
}  # fmt: skip
TEMPORAL_TRANSFORM_TYPES = {
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


def _all_of(what: str, name: str, problems: list[str]) -> None:
    """Every problem of one name in one message (not the first only, then the next after a fix)."""
    if problems:
        raise ValueError(f"{what} {name!r} " + "; and it ".join(problems))


def check_bucket_name(name: str) -> str:
    problems = [UPPERCASE_REASON] if name != name.lower() else []
    if not 3 <= len(name) <= 63:
        problems.append(f"must be 3-63 characters long (it has {len(name)})")
    elif not BUCKET_RE.match(name.lower()):
        problems.append(
            "may contain only lowercase letters, digits and hyphens, and must start and end with a letter or digit "
            "(no '_' or '.')"
        )
    _all_of("table bucket name", name, problems)
    for prefix in BUCKET_FORBIDDEN_PREFIXES:
        if name.startswith(prefix):
            raise ValueError(f"table bucket name {name!r} must not start with the reserved prefix {prefix!r}")
    for suffix in BUCKET_FORBIDDEN_SUFFIXES:
        if name.endswith(suffix):
            raise ValueError(f"table bucket name {name!r} must not end with the reserved suffix {suffix!r}")
    return name


def check_iceberg_name(name: str, what: str) -> str:
    problems = [UPPERCASE_REASON] if name != name.lower() else []
    if not 1 <= len(name) <= 255:
        problems.append("must be 1-255 characters long")
    elif not ICEBERG_NAME_RE.match(name.lower()):
        problems.append(
            "may contain only lowercase letters, digits and underscores and must start with a letter or digit"
        )
    _all_of(f"{what} name", name, problems)
    if what == "namespace" and name.startswith("aws"):
        raise ValueError(f"namespace name {name!r} must not start with 'aws' (reserved)")
    return name


def check_account(value: str) -> str:
    if not isinstance(value, str) or not ACCOUNT_RE.match(value):
        raise ValueError(
            f"account id {value!r} must be a string of exactly 12 digits (quote it in TOML so leading zeros survive)"
        )
    return value


def check_region(value: str) -> str:
    if value not in known_regions():
        raise ValueError(
            f"unknown AWS Region {value!r}; expected a Region name such as 'us-east-1' (the Regions botocore "
            f"{botocore_version()} knows in partitions {', '.join(KIT_PARTITIONS)})"
        )
    return value


# The fields of a section that places a resource (a table bucket, the vault): one type each, so that every section
# declaring one is checked the same way. An account id must be a TOML string (strict), so leading zeros survive.
AccountId = Annotated[str, Field(strict=True), AfterValidator(check_account)]
RegionName = Annotated[str, AfterValidator(check_region)]
DeployRoleArn = Annotated[str | None, AfterValidator(check_deploy_role_arn)]


def botocore_version() -> str:
    import botocore

    return str(botocore.__version__)


def check_column_type(value: str) -> str:
    if value in PRIMITIVE_TYPES:
        return value
    m = DECIMAL_RE.match(value)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        if not 1 <= precision <= 38 or scale > precision:
            raise ValueError(f"decimal type {value!r} needs 1 <= precision <= 38 and scale <= precision")
        return f"decimal({precision},{scale})"
    if FIXED_RE.match(value):
        return value
    raise ValueError(
        f"unknown Iceberg type {value!r}; expected one of {sorted(PRIMITIVE_TYPES)}, 'decimal(P,S)' or 'fixed[L]'"
    )
