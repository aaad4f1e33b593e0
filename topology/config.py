"""The kit's one configuration: a frozen, typed description of the S3 Tables replication topology.

Loaded from TOML (`load_config`), validated completely before anything is built or written. Every error names the
field (``replicas[0].bucket``) and the rule it breaks. This module imports no CDKTF code: `policies/` and `jobs/`
use it too.

It is the package's front door: the names live in four modules, one concern each, and the public ones are
re-exported here so that `from s3tables_kit.topology.config import ...` is the one import callers need:

- `s3tables_kit.topology.rules`   the rules of AWS and Iceberg (quotas, name and ARN shapes, column types);
- `s3tables_kit.topology.model`   the frozen model of each section and the root `KitConfig` with its derived names;
- `s3tables_kit.topology.checks`  the cross-field rules (`cross_checks`, `assurance_checks`); `[failover]`'s in
  `s3tables_kit.topology.checks_failover` (`failover_checks`); a problem is a `s3tables_kit.topology.issues.Issue`;
- `s3tables_kit.topology.loader`  TOML -> model -> checks (`load_config`, `parse_config`, `ConfigError`).
"""

from __future__ import annotations

from s3tables_kit.topology.checks import assurance_checks, config_warnings, placeholder_issues
from s3tables_kit.topology.checks_failover import failover_checks, failover_recovery_replica
from s3tables_kit.topology.issues import Issue
from s3tables_kit.topology.loader import (
    ConfigError,
    load_config,
    parse_config,
)
from s3tables_kit.topology.model import (
    ESTATE,
    FAILOVER_MONITOR,
    FAILOVER_NAME_SUFFIX,
    PROTECTED,
    SCHEMES,
    SINGLE_SOURCE,
    AccountId,
    Column,
    Encryption,
    Failover,
    Kind,
    Kit,
    KitConfig,
    Namespace,
    Organization,
    PartitionField,
    Protection,
    Recovery,
    Replica,
    Replication,
    Scheme,
    SnapshotRetention,
    Source,
    State,
    Table,
    UnreferencedFileRemoval,
    Vault,
    parse_partition,
)
from s3tables_kit.topology.rules import (
    BUCKET_FORBIDDEN_PREFIXES,
    BUCKET_FORBIDDEN_SUFFIXES,
    KIT_PARTITIONS,
    KIT_TAG_KEYS,
    MAX_DESTINATIONS,
    MAX_FAILOVER_DESTINATIONS,
    MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION,
    MAX_TABLES_PER_BUCKET,
    MAX_TAGS,
    PRIMITIVE_TYPES,
    PROTECTION_TAG_KEY,
    SOURCE_TABLE_TAGS_KEY,
    UPPERCASE_REASON,
    check_account,
    check_bucket_name,
    check_column_type,
    check_iceberg_name,
    check_region,
    known_regions,
    partition_of_arn,
)

__all__ = [
    "BUCKET_FORBIDDEN_PREFIXES",
    "BUCKET_FORBIDDEN_SUFFIXES",
    "ESTATE",
    "FAILOVER_MONITOR",
    "FAILOVER_NAME_SUFFIX",
    "KIT_PARTITIONS",
    "KIT_TAG_KEYS",
    "MAX_DESTINATIONS",
    "MAX_FAILOVER_DESTINATIONS",
    "MAX_TABLES_PER_BUCKET",
    "MAX_TABLE_BUCKETS_PER_ACCOUNT_REGION",
    "MAX_TAGS",
    "PRIMITIVE_TYPES",
    "PROTECTED",
    "PROTECTION_TAG_KEY",
    "SCHEMES",
    "SINGLE_SOURCE",
    "SOURCE_TABLE_TAGS_KEY",
    "UPPERCASE_REASON",
    "AccountId",
    "Column",
    "ConfigError",
    "Encryption",
    "Failover",
    "Issue",
    "Kind",
    "Kit",
    "KitConfig",
    "Namespace",
    "Organization",
    "PartitionField",
    "Protection",
    "Recovery",
    "Replica",
    "Replication",
    "Scheme",
    "SnapshotRetention",
    "Source",
    "State",
    "Table",
    "UnreferencedFileRemoval",
    "Vault",
    "assurance_checks",
    "check_account",
    "check_bucket_name",
    "check_column_type",
    "check_iceberg_name",
    "check_region",
    "config_warnings",
    "failover_checks",
    "failover_recovery_replica",
    "known_regions",
    "load_config",
    "parse_config",
    "parse_partition",
    "partition_of_arn",
    "placeholder_issues",
]
