"""Policies of continuous assurance (`[assurance]`): the replication monitor, the schedules that run it and the recovery
rehearsal, the rehearsal's metrics, and the KMS key of the encrypted alarm topics.

Small named statement builders (reusing `s3tables_kit.policies.statements.statement`) and the documents built from them.
`s3tables_kit.policies.documents.build_documents` appends `documents(cfg)`, so they are rendered to
`policies/rendered/`, summarised in SUMMARY.md, linted at synth and proven with the IAM simulator like every other
document. Every ARN is derived from the configuration (names are deterministic), so what is rendered is what the stacks
deploy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import hardener, peers
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, PolicyDoc, doc, kms_resource, role_documents
from s3tables_kit.policies.sites import (  # the names every assurance document uses (the hardener's too)
    CLOUDWATCH_SERVICE,
    LAMBDA_SERVICE,
    Site,
    allow_scheduler_assume_role,
    schedule_arn,
    site_of,
)
from s3tables_kit.topology.config import KitConfig, Replica, Source
from s3tables_kit.topology.contract import METRIC_NAMESPACE  # where the monitor and the rehearsal publish

# GetChannel: rows a PutRows channel accepted and has not committed yet (outside every replica's recovery point)
MONITOR_STATUS_TABLE_READ = (
    "GetTable", "GetTableData", "GetTableMetadataLocation", "GetTableReplicationStatus", "GetChannel",
)  # fmt: skip
MONITOR_STATUS_BUCKET_READ = ("ListTables",)
# The drift checks (jobs/ops/drift.py): the source's replication configurations at both levels, each replica's policy.
MONITOR_DRIFT_BUCKET_READ = ("GetTableBucketReplication",)
MONITOR_DRIFT_TABLE_READ = ("GetTableReplication",)
MONITOR_DRIFT_REPLICA_READ = ("GetTableBucketPolicy",)
# The layers of a sample of replica tables (jobs/ops/monitor_drift.py): the table policy's presence and the retention.
MONITOR_LAYERS_READ = ("GetTableMaintenanceConfiguration", "GetTablePolicy")


# ---------------------------------------------------------------- names (deployed contract) ----


def recovery_site(cfg: KitConfig) -> Site:
    rep = cfg.recovery_replica
    return Site(rep.partition, rep.account_id, rep.region)


# The monitor is a source's (one per source stack), named by `cfg.name_prefix_of(src)` (`<kit>-<id>` for a source
# of an estate); the rehearsal and the recovery stack's alarms are the estate's, named by the kit.


def monitor_function_name(cfg: KitConfig, src: Source) -> str:
    return f"{cfg.name_prefix_of(src)}-replication-monitor"


def monitor_role_name(cfg: KitConfig, src: Source) -> str:
    return f"{cfg.name_prefix_of(src)}-replication-monitor"


def monitor_scheduler_role_name(cfg: KitConfig, src: Source) -> str:
    return f"{cfg.name_prefix_of(src)}-replication-monitor-schedule"


def rehearsal_scheduler_role_name(cfg: KitConfig) -> str:
    return f"{cfg.kit.name}-recovery-rehearsal-schedule"


def monitor_log_group(cfg: KitConfig, src: Source) -> str:
    # No "/" in the name: log group ARNs stay one segment, like every other resource the kit names.
    return f"{cfg.name_prefix_of(src)}-replication-monitor"


def monitor_function_arn(cfg: KitConfig, src: Source) -> str:
    return site_of(src).arn("lambda", f"function:{monitor_function_name(cfg, src)}")


def monitor_function_patterns(cfg: KitConfig, sources: list[Source]) -> list[str]:
    """The monitors of `sources` by name, in any Region and account: one pattern for a kit's source, one for all the
    sources of an estate (`<kit>-<id>-...`), so a document naming them keeps its size however many sources there are
    (another account's monitor is read only where its resource policy grants the read)."""
    names = {
        monitor_function_name(cfg, s) if s.id is None else f"{cfg.kit.name}-*-replication-monitor" for s in sources
    }
    return sorted({f"arn:{s.partition}:lambda:*:*:function:{n}" for s in sources for n in names})


def monitor_schedule_name(cfg: KitConfig, src: Source) -> str:
    """`<prefix>-replication-monitor`: a source's."""
    return f"{cfg.name_prefix_of(src)}-replication-monitor"


def monitor_watches(cfg: KitConfig, src: Source) -> tuple[tuple[str, ...], dict[str, str]]:
    """What the monitor of `src` compares at every run with the deploy's record (`jobs/ops/running.py`): the other kit
    function of its account (the hardener, with `[assurance.harden]`) and the account's kit schedules, {name: the
    function it invokes}; never its own code (a replaced function would be checking itself)."""
    schedules = {monitor_schedule_name(cfg, src): monitor_function_arn(cfg, src)}
    if not cfg.assurance.harden.enabled:
        return (), schedules
    name = hardener.hardener_name(cfg, src)
    return (name,), schedules | {name: hardener.hardener_function_arn(cfg, src)}


def allow_read_deployed(
    site: Site, functions: Sequence[str], schedules: Iterable[str]
) -> list[iam_statements.Statement]:
    """Read what a function compares with the deploy's record (`monitor_watches`): the kit functions' configuration
    and the schedules, by name, in its own account."""
    out = [iam_statements.statement("ReadDeployedKitSchedules", "Allow", ["scheduler:GetSchedule"],
                                    [schedule_arn(site, n) for n in schedules])]  # fmt: skip
    if functions:
        arns = [site.arn("lambda", f"function:{n}") for n in functions]
        out.append(
            iam_statements.statement("ReadDeployedKitFunctions", "Allow", ["lambda:GetFunctionConfiguration"], arns)
        )
    return out


REHEARSAL_SCHEDULE = "recovery-rehearsal"  # the schedule `<kit>-recovery-rehearsal`


def schedule_name(cfg: KitConfig, what: str) -> str:
    """`<kit>-recovery-rehearsal` or `<kit>-vault-backup`: the estate's. Each of these schedules lives in a schedule
    group of its own, of the same name (AWS/Scheduler publishes its metrics per group: they are that job's alone)."""
    return f"{cfg.kit.name}-{what}"


def _alarm_prefix(cfg: KitConfig, stack: str, src: Source | None) -> str:
    if stack.startswith("freshness-"):  # a replica account's freshness check (`s3tables_kit.policies.freshness`)
        return f"{cfg.kit.name}-freshness"
    if stack != "source":
        return cfg.kit.name
    if src is None:
        raise ValueError("the alarm topic of a source stack is named by its source")
    return cfg.name_prefix_of(src)


def alarm_topic_name(cfg: KitConfig, stack: str, src: Source | None = None) -> str:
    """The alarm topic of a source stack (`<prefix>-...` of `src`, one per source) or of another stack (`<kit>-...`)."""
    return f"{_alarm_prefix(cfg, stack, src)}-assurance-alarms"


def alarm_key_alias(cfg: KitConfig, stack: str, src: Source | None = None) -> str:
    return f"alias/{_alarm_prefix(cfg, stack, src)}-assurance-alarms"


# ---------------------------------------------------------------- statement builders ----


def allow_lambda_assume_role(site: Site, function_name: str) -> iam_statements.Statement:
    """Lambda assumes the function's role; confused-deputy conditions name the one function."""
    return iam_statements.allow_service_assume_role(
        "AllowLambdaServiceForTheMonitorFunction",
        LAMBDA_SERVICE,
        source_account=site.account_id,
        source_arns=[site.arn("lambda", f"function:{function_name}")],
    )


def allow_read_replication_status(bucket_arn: str) -> iam_statements.Statement:
    """What `status` reads per source table: replication status, and the metadata (location + object, which S3
    Tables authorises as GetTableData) for the commit times behind the lag."""
    return iam_statements.allow_actions(
        "ReadSourceReplicationStatus", MONITOR_STATUS_TABLE_READ, [iam_statements.table_arns(bucket_arn)]
    )


def allow_read_replication_configuration(bucket_arn: str) -> list[iam_statements.Statement]:
    """What the drift check reads on the source: the bucket-level configuration and every table's table-level one."""
    tables = [iam_statements.table_arns(bucket_arn)]
    return [
        iam_statements.allow_actions(
            "ReadSourceBucketReplicationConfiguration", MONITOR_DRIFT_BUCKET_READ, [bucket_arn]
        ),
        iam_statements.allow_actions("ReadSourceTableReplicationConfiguration", MONITOR_DRIFT_TABLE_READ, tables),
    ]


def allow_read_replica_bucket_policies(bucket_arns: list[str]) -> iam_statements.Statement:
    """What the drift check reads on each replica: its bucket policy (a replica of another account must also grant
    it in its bucket policy)."""
    return iam_statements.allow_actions("ReadReplicaBucketPolicies", MONITOR_DRIFT_REPLICA_READ, bucket_arns)


def allow_read_source_bucket_policy(bucket_arn: str) -> iam_statements.Statement:
    """What the drift check reads on the source: its bucket policy (compared with the reviewed document)."""
    return iam_statements.allow_actions("ReadSourceBucketPolicy", MONITOR_DRIFT_REPLICA_READ, [bucket_arn])


def allow_read_replica_table_layers(bucket_arns: list[str]) -> iam_statements.Statement:
    """What the layer check reads on a sample of each replica's tables: the table policy and the retention (a replica
    of another account must also grant it in its bucket policy)."""
    return iam_statements.allow_actions(
        "ReadReplicaTableLayers", MONITOR_LAYERS_READ, [iam_statements.table_arns(a) for a in bucket_arns]
    )


MONITOR_VAULT_READ = ("s3:ListBucket",)


def monitors_list_vault_grant(cfg: KitConfig, bucket_arn: str, account_id: str) -> iam_statements.Statement | None:
    """In the vault's bucket policy: the replication monitors of sources in other accounts than the vault's may list
    it (their backup age check). None when no such source has a monitor."""
    roles = sorted(
        {
            site_of(s).role_arn(monitor_role_name(cfg, s))
            for s in cfg.sources
            if cfg.assurance.monitor.enabled and s.account_id != account_id
        }
    )
    if not roles:
        return None
    return iam_statements.statement(
        "AllowReplicationMonitorsListVault", "Allow", MONITOR_VAULT_READ, [bucket_arn], principal={"AWS": roles}
    )


def monitor_roles_of_other_accounts(cfg: KitConfig, replica: Replica) -> list[str]:
    """The replication monitors' roles of the sources of other accounts feeding `replica`."""
    return sorted(
        {
            site_of(s).role_arn(monitor_role_name(cfg, s))
            for s in cfg.sources_into(replica)
            if cfg.assurance.monitor.enabled and s.account_id != replica.account_id
        }
    )


def monitor_layers_read_grant(cfg: KitConfig, replica: Replica) -> iam_statements.Statement | None:
    """In a replica's bucket policy: the replication monitors of the sources of other accounts may read the table
    policy and retention of its tables (the layer check). None when no such source has a monitor."""
    return monitors_read_table_layers(monitor_roles_of_other_accounts(cfg, replica), replica.bucket_arn)


def monitors_read_table_layers(role_arns: list[str], bucket_arn: str) -> iam_statements.Statement | None:
    """The grant of `monitor_layers_read_grant` (also a failover destination's, `s3tables_kit.policies.failover`)."""
    if not role_arns:
        return None
    return iam_statements.allow_principals_actions(
        "AllowReplicationMonitorsReadTableLayers",
        role_arns,
        MONITOR_LAYERS_READ,
        [iam_statements.table_arns(bucket_arn)],
    )


def monitor_policy_read_grant(cfg: KitConfig, replica: Replica) -> iam_statements.Statement | None:
    """In a replica's bucket policy: the replication monitors of the sources of other accounts feeding it may read
    the policy (an identity policy alone does not reach another account), so their drift check can compare it with
    the reviewed document. None when no such source has a monitor."""
    return monitors_read_bucket_policy(monitor_roles_of_other_accounts(cfg, replica), replica.bucket_arn)


def monitors_read_bucket_policy(role_arns: list[str], bucket_arn: str) -> iam_statements.Statement | None:
    """The grant of `monitor_policy_read_grant` (also a failover destination's, `s3tables_kit.policies.failover`)."""
    if not role_arns:
        return None
    return iam_statements.allow_principals_actions(
        "AllowReplicationMonitorsReadBucketPolicy", role_arns, MONITOR_DRIFT_REPLICA_READ, [bucket_arn]
    )


def allow_list_source_tables(bucket_arn: str) -> iam_statements.Statement:
    return iam_statements.allow_actions("ListSourceTablesToMonitor", MONITOR_STATUS_BUCKET_READ, [bucket_arn])


def allow_put_metric_data(sid: str, namespace: str) -> iam_statements.Statement:
    """PutMetricData authorises only Resource "*"; the cloudwatch:namespace condition keeps the role to the kit's
    own namespace."""
    return iam_statements.statement(
        sid,
        "Allow",
        ["cloudwatch:PutMetricData"],
        ["*"],
        condition={"StringEquals": {"cloudwatch:namespace": namespace}},
    )


def allow_write_function_logs(site: Site, log_group: str) -> iam_statements.Statement:
    return iam_statements.statement(
        "WriteMonitorFunctionLogs",
        "Allow",
        ["logs:CreateLogStream", "logs:PutLogEvents"],
        [site.arn("logs", f"log-group:{log_group}:log-stream:*")],
    )


def allow_invoke_function(function_arn: str) -> iam_statements.Statement:
    return iam_statements.statement("InvokeTheMonitorFunction", "Allow", ["lambda:InvokeFunction"], [function_arn])


def allow_start_rehearsal_job_run(
    site: Site, kit: str, sid: str = "StartRehearsalJobRunOnTheKitApplication"
) -> iam_statements.Statement:
    """StartJobRun on the kit's EMR Serverless application only. Its id is known only after apply, so the
    application is matched by the `kit` tag every kit resource carries (provider default_tags)."""
    return iam_statements.statement(
        sid,
        "Allow",
        ["emr-serverless:StartJobRun"],
        [site.arn("emr-serverless", "/applications/*")],
        condition={"StringEquals": {"aws:ResourceTag/kit": kit}},
    )


def allow_read_kit_application(site: Site, kit: str) -> iam_statements.Statement:
    """GetApplication on the kit's EMR Serverless application (by its `kit` tag, as `allow_start_rehearsal_job_run`):
    a scheduled job run checks the application it runs in is as deployed (`s3tables_kit.jobs.kernel.preflight`)."""
    return iam_statements.statement(
        "ReadTheKitApplication",
        "Allow",
        ["emr-serverless:GetApplication"],
        [site.arn("emr-serverless", "/applications/*")],
        condition={"StringEquals": {"aws:ResourceTag/kit": kit}},
    )


def allow_pass_role_to_service(sid: str, role_arn: str, service: str) -> iam_statements.Statement:
    return iam_statements.statement(
        sid, "Allow", ["iam:PassRole"], [role_arn], condition={"StringEquals": {"iam:PassedToService": service}}
    )


def kms_allow_service_use_for_topic(service: str, account_id: str) -> iam_statements.Statement:
    """CloudWatch alarms publish to a KMS-encrypted topic only if the key lets the cloudwatch service principal
    generate data keys and decrypt (an AWS managed key cannot grant this)."""
    return iam_statements.statement(
        "AllowCloudWatchAlarmsToPublishToTheEncryptedTopic",
        "Allow",
        ["kms:Decrypt", "kms:GenerateDataKey"],
        ["*"],
        principal={"Service": service},
        condition={"StringEquals": {"aws:SourceAccount": account_id}},
    )


def kms_allow_sns_delivery(account_id: str, region: str, partition: str) -> iam_statements.Statement:
    """Principals of the account may use the key only through SNS (publishing test messages, subscriptions)."""
    return iam_statements.statement(
        "AllowAccountUseOfTheKeyThroughSns",
        "Allow",
        ["kms:Decrypt", "kms:GenerateDataKey"],
        ["*"],
        principal={"AWS": f"arn:{partition}:iam::{account_id}:root"},
        condition={"StringEquals": {"kms:ViaService": f"sns.{region}.amazonaws.com"}},
    )


def key_policy_statements(cfg: KitConfig, src: Source | None) -> list[iam_statements.Statement]:
    """Statements for the kit-created key of a table bucket (`s3tables_kit.policies.keys.kms_key_policy`; `src`: the
    source whose key it is, None for another bucket's): KMS honours an identity policy only where the key policy allows
    it, and the kit's key policies name each key user."""
    if src is not None and cfg.assurance.monitor.enabled:
        role_arn = site_of(src).role_arn(monitor_role_name(cfg, src))
        return [iam_statements.kms_allow_key_use("AllowReplicationMonitorReadSourceMetadata", [role_arn], ["Decrypt"])]
    return []


# ---------------------------------------------------------------- documents ----


def _doc(*statements: iam_statements.Statement | None) -> Document:
    return doc(*statements)


def monitor_role_trust(cfg: KitConfig, src: Source) -> Document:
    return _doc(allow_lambda_assume_role(site_of(src), monitor_function_name(cfg, src)))


def monitor_role_permissions(cfg: KitConfig, src: Source) -> Document:
    site = site_of(src)
    destinations = [r.bucket_arn for r in cfg.destinations_of(src)]
    stmts: list[iam_statements.Statement | None] = [
        allow_list_source_tables(src.bucket_arn),
        allow_read_replication_status(src.bucket_arn),
        *allow_read_replication_configuration(src.bucket_arn),
        allow_read_replica_bucket_policies(destinations),
        allow_read_source_bucket_policy(src.bucket_arn),
        allow_read_replica_table_layers(destinations),
        allow_put_metric_data("PublishReplicationMetrics", METRIC_NAMESPACE),
        allow_write_function_logs(site, monitor_log_group(cfg, src)),
        *allow_read_deployed(site, *monitor_watches(cfg, src)),
    ]
    arns = [peers.function_arn(cfg, a) for a in peers.checks_of(cfg, src)]
    stmts.append(peers.allow_read_checked_functions("ReadTheFreshnessChecksOfItsReplicas", arns))
    if cfg.vault is not None:  # the backup ages: the keys of the committed points, no object read, no key
        vault_arn = cfg.vault.bucket_arn(cfg.kit.name)
        stmts.append(iam_statements.statement("ListBackupVaultPoints", "Allow", MONITOR_VAULT_READ, [vault_arn]))
    if src.encryption.type == "kms":
        res, cond = kms_resource(cfg, src.encryption, account_id=src.account_id, region=src.region, bucket=src.bucket)
        stmts.append(iam_statements.allow_kms("DecryptSourceTableMetadata", ["Decrypt"], [res], cond))
    return _doc(*stmts)


def monitor_scheduler_role_trust(cfg: KitConfig, src: Source) -> Document:
    return _doc(
        allow_scheduler_assume_role(
            "AllowSchedulerForTheMonitorSchedule", site_of(src), monitor_schedule_name(cfg, src)
        )
    )


def monitor_scheduler_role_permissions(cfg: KitConfig, src: Source) -> Document:
    return _doc(allow_invoke_function(monitor_function_arn(cfg, src)))


def rehearsal_scheduler_role_trust(cfg: KitConfig) -> Document:
    name = schedule_name(cfg, REHEARSAL_SCHEDULE)  # in the schedule group of its name
    return _doc(allow_scheduler_assume_role("AllowSchedulerForTheRehearsalSchedule", recovery_site(cfg), name, name))


def rehearsal_scheduler_role_permissions(cfg: KitConfig) -> Document:
    return _doc(
        allow_start_rehearsal_job_run(recovery_site(cfg), cfg.kit.name),
        allow_pass_role_to_service(
            "PassTheRecoveryRoleToEmrServerless", cfg.recovery_role_arn, iam_actions.EMR_SERVERLESS_SERVICE
        ),
    )


def rehearsal_metrics_permissions(cfg: KitConfig) -> Document:
    """A second inline policy on the recovery role: the rehearsal publishes its outcome and measured RTO."""
    return _doc(allow_put_metric_data("PublishRehearsalMetrics", METRIC_NAMESPACE))


def alarm_topic_key_policy(site: Site, guarded_by: list[str] | None = None) -> Document:
    """`guarded_by`: a source stack's key (the detection path): only they disable, delete or re-write it."""
    return _doc(
        iam_statements.kms_root_administration(site.account_id, site.partition),
        kms_allow_service_use_for_topic(CLOUDWATCH_SERVICE, site.account_id),
        kms_allow_sns_delivery(site.account_id, site.region, site.partition),
        iam_statements.kms_deny_destruction_except(guarded_by) if guarded_by is not None else None,
    )


def source_key_guardians(cfg: KitConfig, src: Source | None = None) -> list[str]:
    """Break-glass: who may disable, delete or re-write a source key or an alarm topic key (disabling either stops
    replication or every alarm; the deploy roles' allow-list on the kit's keys holds neither, `allowlists.KIT_KEYS`).
    Whatever the source `src`: break-glass principals of every account are exempt alike."""
    return list(cfg.protection.break_glass_principals)


def alarm_sites(cfg: KitConfig, src: Source | None) -> list[tuple[str, Site]]:
    """(stack, site) of every stack with assurance alarms, hence with an alarm topic and its key: the source stack of
    `src` (with a monitor), the recovery stack (with a rehearsal)."""
    out: list[tuple[str, Site]] = []
    if cfg.assurance.monitor.enabled and src is not None:
        out.append(("source", site_of(src)))
    if cfg.assurance.rehearsal.enabled:
        out.append(("recovery", recovery_site(cfg)))
    return out


def documents(cfg: KitConfig, src: Source | None) -> list[PolicyDoc]:
    """The assurance documents of `cfg`: the monitor's of the source `src` (none without it: an estate's monitors
    are each source's, `source_documents`), the rehearsal's, the hardener's and the alarm topic keys'."""
    a = cfg.assurance
    out: list[PolicyDoc] = []
    if a.monitor.enabled and src is not None:
        role, sched = monitor_role_name(cfg, src), monitor_scheduler_role_name(cfg, src)
        out += role_documents(
            "monitor-role", src.account_id, role, monitor_role_trust(cfg, src), monitor_role_permissions(cfg, src)
        )
        out += role_documents(
            "monitor-schedule-role",
            src.account_id,
            sched,
            monitor_scheduler_role_trust(cfg, src),
            monitor_scheduler_role_permissions(cfg, src),
        )
    if a.rehearsal.enabled:
        rec = recovery_site(cfg)
        sched = rehearsal_scheduler_role_name(cfg)
        out += role_documents(
            "rehearsal-schedule-role",
            rec.account_id,
            sched,
            rehearsal_scheduler_role_trust(cfg),
            rehearsal_scheduler_role_permissions(cfg),
        )
        out += [
            PolicyDoc(
                "recovery-role-rehearsal-metrics",
                "identity",
                rec.account_id,
                f"IAM role {cfg.recovery_role_name} (second inline policy)",
                rehearsal_metrics_permissions(cfg),
            ),
        ]
    out += hardener.documents(cfg, src) if src is not None else []  # `[assurance.harden]`: the hardener's two roles
    for stack, site in alarm_sites(cfg, src):
        out.append(
            PolicyDoc(
                f"kms-key-policy--alarm-topic-{stack}",
                "kms-key-policy",
                site.account_id,
                f"KMS key {alarm_key_alias(cfg, stack, src)} ({stack} stack)",
                alarm_topic_key_policy(site, source_key_guardians(cfg, src)),
            )
        )
    return out


def without_rehearsal(cfg: KitConfig) -> KitConfig:
    """`cfg` with the rehearsal off (the recovery stack's): what one source's stack deploys of assurance."""
    rehearsal = cfg.assurance.rehearsal.model_copy(update={"enabled": False})
    return cfg.model_copy(update={"assurance": cfg.assurance.model_copy(update={"rehearsal": rehearsal})})


def source_documents(cfg: KitConfig, src: Source) -> list[PolicyDoc]:
    """The documents of the source `src`'s stack: its monitor and its alarm topic's key (the rehearsal is the
    recovery stack's)."""
    return documents(without_rehearsal(cfg), src)


def estate_documents(cfg: KitConfig) -> list[PolicyDoc]:
    """An estate's own assurance documents: the rehearsal's and the recovery stack's alarm topic key (the monitors
    are each source's: `source_documents`)."""
    return documents(cfg, None)


def summary_principals(cfg: KitConfig, src: Source | None) -> list[tuple[str, list[str], str, list[str]]]:
    """(title, principal ARNs, intro, own identity documents) for SUMMARY.md's "Who may do what": the monitor's of
    `src` (none without it), the rehearsal's, the hardener's."""
    out: list[tuple[str, list[str], str, list[str]]] = []
    if cfg.assurance.monitor.enabled and src is not None:
        site = site_of(src)
        out.append(
            (
                "Replication monitor function role",
                [site.role_arn(monitor_role_name(cfg, src))],
                f"Assumed only by Lambda for the function `{monitor_function_name(cfg, src)}` (`monitor-role-trust`). "
                "Reads replication status and source metadata, publishes metrics to its own namespace.",
                ["monitor-role-permissions"],
            )
        )
        out.append(
            (
                "Replication monitor schedule role",
                [site.role_arn(monitor_scheduler_role_name(cfg, src))],
                "Assumed only by EventBridge Scheduler for the monitor's schedule. Invokes the monitor function.",
                ["monitor-schedule-role-permissions"],
            )
        )
    if cfg.assurance.rehearsal.enabled:
        rec = recovery_site(cfg)
        out.append(
            (
                "Recovery rehearsal schedule role",
                [rec.role_arn(rehearsal_scheduler_role_name(cfg))],
                "Assumed only by EventBridge Scheduler for the rehearsal schedule. Starts job runs on the kit's EMR "
                "Serverless application and passes it the recovery role, nothing else.",
                ["rehearsal-schedule-role-permissions"],
            )
        )
    return out + (hardener.summary_principals(cfg, src) if src is not None else [])
