"""The scheduled vault backup (`[vault] tables`, `interval_hours`): an EventBridge Scheduler schedule that starts an
EMR Serverless job run of `jobs/backup_entry.py` (the backup job, `jobs/vault/cli.py`) as the backup role, through
the universal target, as the recovery rehearsal is started (`infra/constructs/rehearsal.py`).

The job run uses the artifacts `make rehearse-upload` puts under the scripts bucket's `scheduled/` prefix
(`backup_entry.py` beside `rehearse_entry.py`, the `jobs` zip and the pinned jars of jars/pom.xml), which only the
deploy roles and break-glass may write (`s3tables_kit.policies.pipeline.scheduled_jobs`). Whether it keeps up is the
replication monitor's `<kit>-backup-age` alarm (`infra/constructs/monitor.py`); whether it runs and succeeds is
`<kit>-vault-backup-not-succeeding`, on what AWS publishes (its schedule's group and the application's job runs).
"""

from __future__ import annotations

from collections.abc import Sequence

from cdktf_cdktf_provider_aws.scheduler_schedule import SchedulerSchedule
from constructs import Construct

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.alerts import JobLiveness, job_liveness_alarm
from s3tables_kit.infra.constructs.recovery import RecoverySparkApplication
from s3tables_kit.infra.constructs.rehearsal import alarm_window
from s3tables_kit.infra.constructs.schedule import job_schedule, spark_job_target
from s3tables_kit.policies import assurance
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology import contract
from s3tables_kit.topology.backup import (
    BACKUP_SCHEDULE,
    backup_role_arn,
    backup_scheduler_role_name,
    vault_point_key_alias_arn,
)
from s3tables_kit.topology.config import KitConfig, Vault
from s3tables_kit.topology.vault_accounts import recovery_reads


def backup_job_args(cfg: KitConfig, vault: Vault, preflight: Sequence[str] = ()) -> list[str]:
    """The backup's arguments on EMR Serverless: the recovery replica and the vault's account buckets (what the backup
    role reads) and the vault named explicitly (no outputs file on the remote side), the `[vault] tables`, and
    `preflight`: the application's check before it works (`RecoverySparkApplication.preflight_args`)."""
    rep = cfg.recovery_replica
    args = [
        "--catalog-mode", "client",
        "--replica-warehouse", rep.bucket_arn,
        "--replica-region", rep.region,
        "--vault-bucket", vault.bucket_name(cfg.kit.name),
        "--vault-region", vault.region,
        "--retention-days", str(vault.retention_days),
        "--storage-class", vault.storage_class,
        "--point-key", vault_point_key_alias_arn(cfg, vault),
        *preflight,
    ]  # fmt: skip
    for account in recovery_reads(cfg)[1:]:
        args += ["--account-bucket", account.bucket_arn]
    tables, namespaces = vault.selection()
    for t in tables:
        args += ["--table", t]
    for ns in namespaces:
        args += ["--namespace", ns]
    return args


def scheduled_backup(
    scope: Construct,
    cfg: KitConfig,
    docs: DocumentSet,
    *,
    app: RecoverySparkApplication,
    topic_arn: str | None,
) -> SchedulerSchedule | None:
    """Under the construct `vault-backup`: the schedule (in a group of its own) and its role, and the alarm on no
    success notifying `topic_arn` (one hook line of the recovery stack); None without `[vault]` or without `tables`.
    Each run first checks that `app`, where it runs, is as deployed (a FAILED run otherwise)."""
    vault = cfg.vault
    if vault is None or not vault.tables or topic_arn is None:
        return None
    request = packaging.start_job_run_input(
        application_id=app.application.id,
        execution_role_arn=backup_role_arn(cfg),
        scripts_uri=f"s3://{cfg.recovery_scripts_bucket}/{contract.SCHEDULED_ARTIFACTS_PREFIX}",
        logs_uri=f"s3://{cfg.recovery_scripts_bucket}/logs/",
        job_args=backup_job_args(cfg, vault, app.preflight_args()),
        jar_names=contract.pinned_jar_names(),
        entry=contract.BACKUP_ENTRY,
        name="kit-vault-backup",
    )
    backup, name = Construct(scope, "vault-backup"), assurance.schedule_name(cfg, BACKUP_SCHEDULE)
    period, periods = alarm_window(vault.interval_hours)
    liveness = JobLiveness(
        f"{name}-not-succeeding",
        f"The vault backup (every {vault.interval_hours} h)",
        "The job run's driver log (logs/ prefix, job name kit-vault-backup) says why; `make backup` backs up now. "
        "README: 'Assurance' (docs/assurance.md#backups-in-the-vault).",
        schedule_group=name,
        application=app.job_metrics,
    )
    job_liveness_alarm(backup, "not-succeeding", liveness, period=period, periods=periods, actions=[topic_arn])
    return job_schedule(  # a retried start is safe: a run never copies a file the vault holds
        backup,
        docs,
        name=name,
        group=name,  # AWS/Scheduler's metrics are per group: this group's are the backup's alone
        expression=vault.schedule_expression,
        description="Vault backup: copy what the vault lacks of [vault] tables, commit a point (jobs/vault)",
        documents="backup-schedule-role",
        role_name=backup_scheduler_role_name(cfg),
        role_description="EventBridge Scheduler: starts the vault backup job run",
        **spark_job_target(request),
    )
