"""The vault half of `s3tables_kit.jobs.ops.audit` (`[vault]`, docs/decisions/0034-backup-vault.md): the vault bucket's
settings against the configuration and the outputs. Object Lock binds even root only while its default retention is as
configured, so a shortened or weakened lock is the drift that matters most:

* ``vault-lock-changed``: Object Lock is not enabled, or its default retention is not COMPLIANCE (GOVERNANCE can be
  bypassed), or is longer than configured;
* ``vault-retention-below-configured``: the default retention is shorter than `retention_days` (new backups would
  be kept less long than configured);
* ``vault-versioning-disabled``: versioning is not Enabled (Object Lock needs it);
* ``vault-encryption-mismatch``: not SSE-KMS with the vault key of the outputs and an S3 Bucket Key;
* ``bucket-policy-*``: the bucket policy is the reviewed ``vault-bucket-policy``
(`s3tables_kit.policies.vault.bucket_policy`),
  compared by statement as the replicas' are;
* ``vault-table-without-backup-point``: a source table `[vault] tables` selects has no backup point and was created
  longer than `max_backup_age_hours` ago (the backup age alarm's rule, `s3tables_kit.jobs.ops.monitor_vault`);
* ``vault-missing``: the bucket does not exist; ``unverifiable``: a setting could not be read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.sdk import call, describe_error, error_code
from s3tables_kit.jobs.ops.audit_scope import AuditReport
from s3tables_kit.jobs.ops.drift import Unreadable, policy_drift
from s3tables_kit.jobs.ops.monitor_vault import backup_ages, list_points, selected_tables
from s3tables_kit.topology.config import KitConfig, Vault
from s3tables_kit.topology.outputs import KitOutputs

VaultPolicyBuilder = Callable[[KitConfig], Mapping[str, Any]]
DAYS_PER_YEAR = 365  # S3 counts a default retention of N years as N * 365 days


def default_vault_policy_builder() -> VaultPolicyBuilder:
    """`s3tables_kit.policies.vault.bucket_policy(cfg)`, imported lazily (the jobs import no policy code at load)."""
    from s3tables_kit.policies.vault import bucket_policy

    return bucket_policy  # type: ignore[no-any-return,unused-ignore]


def lock_drift(vault: Vault, lock: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, detail) of an Object Lock configuration (GetObjectLockConfiguration's) that is not the configured
    COMPLIANCE default retention of `retention_days`, or None."""
    if lock.get("ObjectLockEnabled") != "Enabled":
        return "vault-lock-changed", "Object Lock is not enabled"
    default = (lock.get("Rule") or {}).get("DefaultRetention") or {}
    mode = default.get("Mode")
    days = int(default.get("Days") or 0) + DAYS_PER_YEAR * int(default.get("Years") or 0)
    if mode != "COMPLIANCE":
        return "vault-lock-changed", f"default retention mode is {mode or 'unset'}, expected COMPLIANCE"
    if days < vault.retention_days:
        return (
            "vault-retention-below-configured",
            f"default retention is {days} days, below the configured {vault.retention_days}",
        )
    if days != vault.retention_days:
        return "vault-lock-changed", f"default retention is {days} days, configured {vault.retention_days}"
    return None


def encryption_drift(rules: list[Mapping[str, Any]], kms_key_arn: str) -> str | None:
    """Why the bucket's default encryption (GetBucketEncryption's rules) is not SSE-KMS with `kms_key_arn` and an S3
    Bucket Key, or None."""
    if len(rules) != 1:
        return f"{len(rules)} encryption rules, expected one"
    by_default = rules[0].get("ApplyServerSideEncryptionByDefault") or {}
    if by_default.get("SSEAlgorithm") != "aws:kms":
        return f"SSEAlgorithm is {by_default.get('SSEAlgorithm')}, expected aws:kms"
    if by_default.get("KMSMasterKeyID") != kms_key_arn:
        return f"KMSMasterKeyID is {by_default.get('KMSMasterKeyID')}, expected {kms_key_arn}"
    if not rules[0].get("BucketKeyEnabled"):
        return "the S3 Bucket Key is off"
    return None


def check_vault(
    clients: Clients,
    cfg: KitConfig,
    outputs: KitOutputs,
    report: AuditReport,
    builder: VaultPolicyBuilder | None = None,
    created: Mapping[str, datetime | None] | None = None,
    now: datetime | None = None,
) -> None:
    """Every setting of the vault bucket against `[vault]` and the vault's outputs (nothing without `[vault]`);
    with `created` (each source table's creation time) the selected tables without a backup point past the budget."""
    vault = cfg.vault
    if vault is None:
        return
    if outputs.vault is None:
        report.add("vault-missing", vault.bucket_arn(cfg.kit.name), "the outputs have no vault stack (not deployed)")
        return
    out = outputs.vault
    s3 = clients.s3(out.region, out.account_id)
    name, arn = out.bucket_name, out.bucket_arn
    report.count("vault buckets")
    try:
        lock = call(s3.get_object_lock_configuration, Bucket=name)["ObjectLockConfiguration"]
    except ClientError as exc:
        if error_code(exc) == "NoSuchBucket":
            report.add("vault-missing", arn, f"the vault bucket {name} does not exist")
            return
        if error_code(exc) == "ObjectLockConfigurationNotFoundError":
            lock = {}
        else:
            report.add("unverifiable", arn, f"Object Lock configuration: {describe_error(exc)}")
            lock = None
    if lock is not None and (found := lock_drift(vault, lock)):
        report.add(found[0], arn, found[1])
    _check_versioning(s3, name, arn, report)
    _check_encryption(s3, name, arn, out.kms_key_arn, report)
    report.count("bucket policies")
    report.drifts.extend(policy_drift(arn, _read_policy(s3, name), (builder or default_vault_policy_builder())(cfg)))
    if created is not None:
        check_backup_points(
            s3, name, arn, vault, selected_tables(created, vault.tables), report, now or datetime.now(UTC)
        )


def check_backup_points(
    s3: Any,
    name: str,
    arn: str,
    vault: Vault,
    selected: Mapping[str, datetime | None],
    report: AuditReport,
    now: datetime,
) -> None:
    """A finding for each of the `selected` tables ({namespace.name: created at}) without a backup point in the vault
    bucket `name` and created longer than `max_backup_age_hours` before `now` (or at an unknown time)."""
    if not selected:
        return
    try:
        ages = backup_ages(list_points(s3, name), now, selected)
    except ClientError as exc:
        report.add("unverifiable", arn, f"backup points: {describe_error(exc)}")
        return
    budget = vault.max_backup_age_hours * 3600
    for table, age in ages.unbacked.items():
        if age is None or age > budget:
            since = "" if age is None else f", created {age / 3600:.0f} h ago"
            report.add(
                "vault-table-without-backup-point",
                arn,
                f"{table} is selected by [vault] tables and has no backup point{since} (budget: "
                f"max_backup_age_hours {vault.max_backup_age_hours})",
            )


def _check_versioning(s3: Any, name: str, arn: str, report: AuditReport) -> None:
    try:
        status = call(s3.get_bucket_versioning, Bucket=name).get("Status")
    except ClientError as exc:
        report.add("unverifiable", arn, f"versioning: {describe_error(exc)}")
        return
    if status != "Enabled":
        report.add("vault-versioning-disabled", arn, f"versioning is {status or 'never enabled'}, expected Enabled")


def _check_encryption(s3: Any, name: str, arn: str, kms_key_arn: str, report: AuditReport) -> None:
    try:
        rules = call(s3.get_bucket_encryption, Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
    except ClientError as exc:
        if error_code(exc) != "ServerSideEncryptionConfigurationNotFoundError":
            report.add("unverifiable", arn, f"encryption: {describe_error(exc)}")
            return
        rules = []
    if why := encryption_drift(list(rules), kms_key_arn):
        report.add("vault-encryption-mismatch", arn, why)


def _read_policy(s3: Any, name: str) -> Any:
    """The bucket policy's JSON text, None without one (`policy_drift` reports both and an unreadable one)."""
    try:
        return call(s3.get_bucket_policy, Bucket=name)["Policy"]
    except ClientError as exc:
        return None if error_code(exc) == "NoSuchBucketPolicy" else Unreadable(describe_error(exc))
