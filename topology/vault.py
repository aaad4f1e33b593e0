"""The `[vault]` section of `kit.toml`: a backup vault outside S3 Tables, a general-purpose S3 bucket with versioning
and Object Lock in compliance mode, encrypted with its own KMS key (docs/decisions/0034-backup-vault.md).

    [vault]
    account_id = "333333333333"
    region = "us-east-2"
    retention_days = 365            # Object Lock default retention (COMPLIANCE); at least the replicas' snapshot age
    storage_class = "GLACIER_IR"    # what the backup job writes and the lifecycle rule moves objects to
    kms_key = "create"              # the only value: the kit writes its policy once (a key of your own is refused)
    tables = ["analytics.*"]        # what `s3tables-kit backup --config` backs up: "ns.name" or "ns.*"
    interval_hours = 24             # the scheduled backup of `tables` (an EMR Serverless job run) runs this often
    max_backup_age_hours = 48       # the monitor's alarm fires when a table's newest backup point is older

Optional: without it nothing changes. The vault stack (`infra/stacks/vault.py`) deploys the bucket and its key in
the vault's account and Region; the backup role lives beside the Spark runtime it runs in (the recovery account).
This module is imported by `topology/model.py` (the root `KitConfig.vault` field) and imports no other section; the
names and rules that read the whole topology are `topology/backup.py`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from s3tables_kit.topology.contract import VAULT_STORAGE_CLASSES as VAULT_STORAGE_CLASSES
from s3tables_kit.topology.rules import AccountId, DeployRoleArn, RegionName, check_kms_key, partition_of_arn

# Object Lock retention is at most 100 years (S3 user guide, "Object Lock considerations").
MAX_RETENTION_DAYS = 36500
MAX_BACKUP_INTERVAL_HOURS = 168  # a backup at least weekly: a longer gap is history the vault never holds
# General-purpose bucket names (S3 user guide, "General purpose bucket naming rules"): the kit writes no dots, so
# virtual-hosted TLS requests keep working.
_S3_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_TABLE_SELECTOR_RE = re.compile(r"^[a-z0-9_]+\.([a-z0-9_]+|\*)$")
_S3_FORBIDDEN_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_S3_FORBIDDEN_SUFFIXES = ("-s3alias", "--ol-s3", "--x-s3", "--table-s3", ".mrap")


def check_s3_bucket_name(v: str) -> str:
    if not _S3_BUCKET_RE.match(v) or v.startswith(_S3_FORBIDDEN_PREFIXES):
        raise ValueError(
            f"vault bucket {v!r} must be 3-63 lower case letters, digits and hyphens, start and end with a letter or "
            f"digit, and not start with {', '.join(_S3_FORBIDDEN_PREFIXES)}"
        )
    if v.endswith(_S3_FORBIDDEN_SUFFIXES):
        raise ValueError(f"vault bucket {v!r} must not end with {', '.join(_S3_FORBIDDEN_SUFFIXES)}")
    return v


class Vault(BaseModel):
    """Where backups of the replicas are kept immutable: an S3 bucket with Object Lock in compliance mode."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    account_id: AccountId = Field(
        description='12-digit AWS account id of the vault, quoted: "333333333333" (best: its own account).'
    )
    region: RegionName = Field(description="AWS Region of the vault bucket and its key, e.g. us-east-2.")
    retention_days: int = Field(
        ge=1,
        le=MAX_RETENTION_DAYS,
        description="Object Lock default retention in days (COMPLIANCE mode: nobody, root included, deletes a "
        "version or shortens its retention before then); at least the longest replica snapshot retention.",
    )
    storage_class: Literal["STANDARD", "INTELLIGENT_TIERING", "STANDARD_IA", "GLACIER_IR"] = Field(
        default="STANDARD",
        description="S3 storage class of the vault's objects, readable without a restore request: STANDARD, "
        "INTELLIGENT_TIERING, STANDARD_IA or GLACIER_IR.",
    )
    kms_key: str = Field(
        default="create",
        description='"create", the only value accepted: the kit creates the vault key with a policy written once, '
        "so that nobody, break-glass included, can disable or delete it (a key ARN of your own is refused).",
    )
    bucket: str | None = Field(
        default=None,
        description="Name of the vault's S3 bucket; unset, `<kit>-backup-vault-<account>-<region>`.",
    )
    deploy_role_arn: DeployRoleArn = Field(
        default=None,
        description="IAM role the Terraform provider assumes in the vault account; unset, the deploying credentials "
        "are used.",
    )
    tables: list[str] = Field(
        default_factory=list,
        description="The recovery replica's tables `s3tables-kit backup --config` backs up when no --table or "
        '--namespace is given: "namespace.name", or "namespace.*" for every table of a namespace.',
    )

    interval_hours: int = Field(
        default=24,
        ge=1,
        le=MAX_BACKUP_INTERVAL_HOURS,
        description="Hours between two scheduled backups of `tables` (an EMR Serverless job run of the backup job "
        "as the backup role, deployed with the recovery stack when `tables` is set).",
    )
    max_backup_age_hours: int = Field(
        default=48,
        ge=2,
        le=MAX_RETENTION_DAYS * 24,
        description="Backup budget: the monitor's alarm fires when a table's newest backup point is older than this "
        "many hours; more than `interval_hours` (a backup is that old just before the next one).",
    )

    _key = field_validator("kms_key")(classmethod(lambda cls, v: check_kms_key(v)))

    @field_validator("tables")
    @classmethod
    def _tables(cls, v: list[str]) -> list[str]:
        bad = [t for t in v if not _TABLE_SELECTOR_RE.match(t)]
        if bad:
            raise ValueError(f'tables {bad} must each be "namespace.name" or "namespace.*"')
        return v

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        return None if v is None else check_s3_bucket_name(v)

    @property
    def schedule_expression(self) -> str:
        return f"rate({self.interval_hours} {'hour' if self.interval_hours == 1 else 'hours'})"

    @property
    def partition(self) -> str:
        return partition_of_arn(self.region)

    @property
    def creates_key(self) -> bool:
        return self.kms_key == "create"

    @property
    def transition_days(self) -> int | None:
        """Days after which the lifecycle rule moves an object to `storage_class` (S3's minimum for the class), or
        None for STANDARD (objects are written there)."""
        return {"STANDARD": None, "STANDARD_IA": 30}.get(self.storage_class, 0)

    def selection(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(`namespace.name` tables, namespaces of `namespace.*`) of `tables`."""
        spaces = tuple(t[:-2] for t in self.tables if t.endswith(".*"))
        return tuple(t for t in self.tables if not t.endswith(".*")), spaces

    def bucket_name(self, kit: str) -> str:
        return self.bucket or f"{kit}-backup-vault-{self.account_id}-{self.region}"

    def bucket_arn(self, kit: str) -> str:
        return f"arn:{self.partition}:s3:::{self.bucket_name(kit)}"
