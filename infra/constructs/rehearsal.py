"""Scheduled recovery rehearsal (`[assurance]`): an EventBridge Scheduler schedule that starts an EMR Serverless job run
of `jobs/rehearse_entry.py` with the recovery role through the universal target
`arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun`; the rehearsal namespace in the recovery bucket; the
recovery role's permission to publish the rehearsal's metrics; the alarm that fires when no rehearsal has
succeeded in two rehearsal intervals (read from what AWS publishes: the schedule's attempts in its own group,
`AWS/Scheduler`, and the application's failed and cancelled job runs, `AWS/EMRServerless`), and the one that fires
when a rehearsal recovered a point older than the lag budget (`RehearsalStaleTables`).

The job run uses the artifacts `make rehearse-upload` puts under the scripts bucket's `scheduled/` prefix
(`rehearse_entry.py`, the `jobs` zip and the pinned jars of jars/pom.xml, the same ones `make recover-emr` uploads
under `scripts/`), which only the deploy roles and break-glass may write
(`s3tables_kit.policies.pipeline.scheduled_jobs`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cdktf_cdktf_provider_aws.s3_tables_namespace import S3TablesNamespace
from cdktf_cdktf_provider_aws.scheduler_schedule import SchedulerSchedule
from constructs import Construct

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.alerts import (
    AlarmTopic,
    JobLiveness,
    KitMetricAlarm,
    above_threshold_alarm,
    job_liveness_alarm,
)
from s3tables_kit.infra.constructs.iam import role_policy
from s3tables_kit.infra.constructs.recovery import RecoverySparkApplication
from s3tables_kit.infra.constructs.schedule import job_schedule, spark_job_target
from s3tables_kit.policies import assurance
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology import contract
from s3tables_kit.topology.backup import vault_point_key_alias_arn
from s3tables_kit.topology.config import KitConfig, Replica


def _rehearsal_job_args(cfg: KitConfig, replica: Replica | None = None, preflight: Sequence[str] = ()) -> list[str]:
    """The rehearsal's arguments on EMR Serverless: explicit catalogs (no outputs file on the remote side).
    `replica`: what it reads (default `recovery.replica`; in the failover topology a replica of the new source,
    possibly in another Region than the recovery bucket, which stays where `recovery.replica` is); `preflight`: the
    application's check before it works (`RecoverySparkApplication.preflight_args`)."""
    site, reh = cfg.recovery_replica, cfg.assurance.rehearsal
    rep = replica or site
    args = [
        "--kit", cfg.kit.name,
        "--catalog-mode", "client",
        "--replica-warehouse", rep.bucket_arn,
        "--replica-region", rep.region,
        "--target-warehouse", cfg.recovery_bucket_arn,
        "--target-region", site.region,
        "--namespace", reh.namespace,
        "--offset-hours", str(reh.offset_hours),
        "--max-lag-minutes", str(cfg.assurance.monitor.max_lag_minutes),
        "--report-uri", f"s3://{cfg.recovery_scripts_bucket}/{contract.REHEARSAL_REPORT_PREFIX}",
        "--metrics-region", site.region,
        *preflight,
    ]  # fmt: skip
    if reh.tables:
        for t in reh.tables:
            args += ["--table", t]
    else:
        for ns, t in rehearsal_candidates(cfg, rep):
            args += ["--candidate", f"{ns}.{t}"]
        args += ["--sample", str(reh.sample)]
    v = cfg.vault
    if v is not None and v.tables:  # the tables the vault backs up are restored from it too, as the recovery role
        args += ["--vault", f"s3://{v.bucket_name(cfg.kit.name)}", "--vault-region", v.region]
        args += ["--vault-point-key", vault_point_key_alias_arn(cfg, v)]  # by its alias: the key's ARN is the apply's
        for t in v.tables:
            args += ["--vault-table", t]
    return args


def rehearsal_candidates(cfg: KitConfig, replica: Replica) -> list[tuple[str, str]]:
    """The tables the rehearsal samples from: every table replicated into the replica read, from each source feeding
    it; a bucket no source replicates into (a failover topology's new bucket) holds the one source's."""
    feeding = cfg.sources_into(replica) or cfg.sources
    return [t for s in feeding for t in cfg.replicated_tables_of(s)]


MAX_ALARM_WINDOW_H = 7 * 24  # CloudWatch: period x evaluation periods at most 7 days


def alarm_window(interval_hours: int) -> tuple[int, int]:
    """(period seconds, evaluation periods) covering two intervals of a scheduled job run (the rehearsal's, the
    backup's) within CloudWatch's limits (a period of at most a day here, period x evaluation periods <= 7 days):
    a backup rarer than every 84 hours is watched over those 7 days, one interval at least."""
    period_h = min(interval_hours, 24)
    return period_h * 3600, min(math.ceil(2 * interval_hours / period_h), MAX_ALARM_WINDOW_H // period_h)


def recovery_alarm_topic(scope: Construct, cfg: KitConfig, docs: DocumentSet) -> AlarmTopic | None:
    """The recovery stack's alarm topic (construct `alarm-topic`), when it schedules a rehearsal or a backup."""
    backups = cfg.vault is not None and bool(cfg.vault.tables)
    if not (cfg.assurance.rehearsal.enabled or backups):
        return None
    return AlarmTopic(scope, "alarm-topic", cfg=cfg, docs=docs, stack="recovery")


def not_succeeding_alarm_name(kit: str) -> str:
    """The rehearsal's alarm (also shown on the replication dashboard, `infra/constructs/dashboard.py`)."""
    return f"{kit}-recovery-rehearsal-not-succeeding"


def recovery_assurance(
    scope: Construct,
    cfg: KitConfig,
    docs: DocumentSet,
    *,
    recovery_bucket_arn: str,
    app: RecoverySparkApplication,
    recovery_role_name: str,
    topic_arn: str | None,
    replica: Replica | None = None,
) -> SchedulerSchedule | None:
    """What the recovery stack gets from `[assurance.rehearsal]` (one hook line): under the construct
    `recovery-rehearsal`, the rehearsal namespace, the recovery role's permission to publish the rehearsal's metrics,
    the schedule (in a group of its own) and its role, the alarm on no success (AWS-published metrics of the schedule
    and of `app`'s job runs) and the alarm on a stale recovered point, notifying `topic_arn` (`recovery_alarm_topic`).
    Each run first checks that `app` is as deployed (a FAILED run otherwise)."""
    reh = cfg.assurance.rehearsal
    if not reh.enabled or topic_arn is None:
        return None

    rehearsal = Construct(scope, "recovery-rehearsal")
    S3TablesNamespace(rehearsal, "namespace", namespace=reh.namespace, table_bucket_arn=recovery_bucket_arn)
    role_policy(
        rehearsal,
        "recovery-role-metrics",
        name="assurance-rehearsal-metrics",
        role=recovery_role_name,
        policy=docs.document("recovery-role-rehearsal-metrics"),
    )
    request = packaging.start_job_run_input(
        application_id=app.application.id,
        execution_role_arn=cfg.recovery_role_arn,
        scripts_uri=f"s3://{cfg.recovery_scripts_bucket}/{contract.SCHEDULED_ARTIFACTS_PREFIX}",
        logs_uri=f"s3://{cfg.recovery_scripts_bucket}/logs/",
        job_args=_rehearsal_job_args(cfg, replica, app.preflight_args()),
        jar_names=contract.pinned_jar_names(),
    )
    name = assurance.schedule_name(cfg, assurance.REHEARSAL_SCHEDULE)
    schedule = job_schedule(
        rehearsal,
        docs,
        documents="rehearsal-schedule-role",
        role_name=assurance.rehearsal_scheduler_role_name(cfg),
        role_description="EventBridge Scheduler: starts the recovery rehearsal job run",
        name=name,
        group=name,  # AWS/Scheduler's metrics are per group: this group's are the rehearsal's alone
        description="Recovery rehearsal: recover, verify, report, drop (jobs/rehearse.py)",
        expression=reh.schedule_expression,
        **spark_job_target(request),
    )
    period, periods = alarm_window(reh.interval_hours)
    no_success = JobLiveness(  # AWS-published only: `RehearsalSucceeded` is in a namespace anyone can write (EMF)
        not_succeeding_alarm_name(cfg.kit.name),
        f"The recovery rehearsal (every {reh.interval_hours} h)",
        "Read the latest reports/rehearsals/*/rehearsal.json and the job run's driver log. README: 'Assurance'.",
        schedule_group=name,
        application=app.job_metrics,
    )
    job_liveness_alarm(rehearsal, "no-success", no_success, period=period, periods=periods, actions=[topic_arn])
    stale = KitMetricAlarm(
        "stale",
        f"{cfg.kit.name}-recovery-rehearsal-stale",
        f"The last recovery rehearsal recovered a point older than the lag budget "
        f"({cfg.assurance.monitor.max_lag_minutes} min): the replica had stopped receiving updates. README: "
        "'Assurance' (docs/assurance.md#replica-side-freshness).",
        contract.REHEARSAL_STALE,
        {"Kit": cfg.kit.name},
    )
    above_threshold_alarm(
        rehearsal, stale, period=period, threshold=1, comparison="GreaterThanOrEqualToThreshold", actions=[topic_arn]
    )
    return schedule
