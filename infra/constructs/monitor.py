"""The replication monitor (`[assurance]`): a Python Lambda function running the kit's `status` logic (packaged at synth
from `jobs/ops`, `infra/packaging.py`) on an EventBridge Scheduler schedule, its least-privilege roles, its log
group, and the alarms on the metrics it publishes (`jobs/ops/monitor.py` documents names and dimensions):

- `<kit>-replication-lag-<replica>`: worst lag to that replica above `max_lag_minutes`;
- `<kit>-replication-failed-<replica>`: any table's replication to that replica FAILED;
- `<kit>-replication-point-<replica>`: the replication point of that replica (the newest instant every table in it
  can be restored to, `jobs/ops/point.py`) is older than `max_replication_point_age_minutes`;
- `<kit>-replication-detached-<replica>`: a replica table in that bucket was disassociated from replication
  (DETACHED: replication to it has stopped for good; docs/assurance.md#detached-replicas has the
  on-call steps);
- `<kit>-replication-monitor-not-reporting` / `-failing`: the function was not invoked in two intervals, or failed
  two runs in a row (AWS/Lambda `Invocations` / `Errors` of the function: metrics only Lambda writes; a run that
  cannot read some table fails, `jobs/ops/monitor.py`);
- `<kit>-replication-status-unreadable`: some table's replication status could not be read (`StatusReadErrors`);
- `<kit>-replication-configuration-drift`: the source's live replication configurations (bucket level and every
  table's table level) differ from the declared one (a new destination, a deleted configuration, another role);
- `<kit>-replica-bucket-policy-drift-<replica>`: that replica's bucket policy is not the reviewed document;
- `<kit>-source-bucket-policy-drift`: the source bucket policy (its layer against changing its replication,
  docs/decisions/0028-lock-after-first-deploy.md) is not the reviewed document;
- `<kit>-replica-layers-missing-<replica>`: a replica table read this run has no table policy (one of its two
  layers: a new replica `harden` has not reached, or a deleted policy);
- `<kit>-replica-retention-below-configured-<replica>`: a replica table read this run keeps snapshots for less than
  the replica's configured `snapshot_retention`;
- `<kit>-backup-age` (with `[vault]`): the newest backup point of some table in the vault is older than
  `max_backup_age_hours`, or a source table `[vault] tables` selects has no point and was created longer ago than
  that (`jobs/ops/monitor_vault.py`: the monitor lists the vault's committed points; it needs only `s3:ListBucket` on
  the vault bucket, granted by the vault's bucket policy where the vault is in another account).

The two replica-table alarms read a bounded sample of each replica's tables per run (`LAYER_SAMPLE`, two requests
per table; `jobs/ops/monitor_drift.py` says which), so a gap is seen within ceil(tables / LAYER_SAMPLE) runs.

The monitor also publishes the tables still backfilling (`TablesBackfilling`, per replica): no alarm, since a first
backfill is expected to take a while; the dashboard shows the line and `s3tables-kit status --backfill` the bytes and an
ETA.

The drift alarms compare with the package's `kit_declared.json` (`declared_document`: the source's declared
replication, each replica's and the source's reviewed bucket policy, from the same document set the stacks deploy, and
each replica's configured snapshot retention).

`<kit>` is the configuration's name prefix (`KitConfig.name_prefix`): the kit name, or `<kit>-<id>` for a source of
an estate (`[[sources]]`), whose monitor is its own: it publishes under `Kit=<kit>-<id>` and its alarms carry that
prefix, so two sources in one account and Region never share an alarm name, a heartbeat or a lag metric (a fan-in
vault gets one set of alarms per source feeding it).

The monitor and each replica account's freshness check compare each other's code and configuration at every run,
across accounts (`monitor_function`, `freshness_function`: the builders both stacks deploy from; each function's
resource policy grants the other account `lambda:GetFunctionConfiguration`; decision 0039, addendum).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdktf_cdktf_provider_aws.cloudwatch_metric_alarm import CloudwatchMetricAlarm
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.lambda_permission import LambdaPermission
from constructs import Construct

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.alerts import (
    AlarmTopic,
    FunctionLiveness,
    KitMetricAlarm,
    above_threshold_alarm,
    liveness_alarms,
)
from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.infra.constructs.replica_hardener import hardener_function
from s3tables_kit.infra.constructs.schedule import PackagedFunction, job_schedule, running_record, scheduled_function
from s3tables_kit.policies import assurance, docset, freshness
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.model import Document
from s3tables_kit.policies.sites import site_of
from s3tables_kit.topology import contract
from s3tables_kit.topology.assurance import monitor_schedule_expression
from s3tables_kit.topology.checks import hardener_role_arn
from s3tables_kit.topology.config import KitConfig, Replica, Source
from s3tables_kit.topology.deployed_compare import configuration_digest
from s3tables_kit.topology.outputs import declared_replication

MONITOR_ROLE_ABOUT = "Replication monitor: reads replication status, publishes the kit's metrics"
SCHEDULE_ROLE_ABOUT = "EventBridge Scheduler: invokes the replication monitor"
FRESHNESS_ABOUT = "Publishes how many tables of each replica are stale (s3tables-replica-kit freshness check)"


def _role(scope: Construct, docs: DocumentSet, id: str, name: str, description: str) -> IamRole:
    """The monitor's role `id`: trusts as `monitor-<id>-trust` says, with one inline policy of the same name
    (construct `<id>-permissions`) holding `monitor-<id>-permissions`."""
    role, _ = documented_role(
        scope,
        id,
        docs=docs,
        documents=f"monitor-{id}",
        name=name,
        description=description,
        policy_id=f"{id}-permissions",
        policy_name=name,
    )
    return role


def declared_document(
    cfg: KitConfig, src: Source, reviewed: Mapping[str, Document], source_policy: Document | None = None
) -> dict[str, Any]:
    """`kit_declared.json` of the monitor of the source `src` (`s3tables_kit.topology.contract.DECLARED_FILE`): its
    declared replication, the reviewed bucket policy of each replica (`reviewed`: {bucket ARN: document}) and of the
    source (`source_policy`, when its stack deploys one), each replica's configured snapshot retention and the interval
    between runs (the layers of a sample of the replica tables), the deploy's record of what it compares at every run
    (`ReplicationMonitor.watched`), and the replication point groups whose age it publishes (when configured)."""
    groups = {k: list(v) for k, v in cfg.assurance.point_groups.items()}
    retention = {  # as `harden` writes it (icebergSnapshotManagement settings)
        r.bucket_arn: {
            "maxSnapshotAgeHours": r.snapshot_retention.max_snapshot_age_hours,
            "minSnapshotsToKeep": r.snapshot_retention.min_snapshots_to_keep,
        }
        for r in cfg.destinations_of(src)
    }
    doc: dict[str, Any] = {
        contract.DECLARED_REPLICATION: declared_replication(cfg, src),
        contract.DECLARED_POLICIES: dict(reviewed),
    }
    if source_policy is not None:
        doc[contract.DECLARED_SOURCE_POLICY] = source_policy
    doc |= {
        contract.DECLARED_RETENTION: retention,
        contract.DECLARED_INTERVAL: cfg.assurance.monitor.interval_minutes * 60,
        contract.DECLARED_DEPLOYED: ReplicationMonitor.watched(cfg, src),  # compared at every run (jobs/ops/running.py)
    }
    return doc | ({contract.DECLARED_GROUPS: groups} if groups else {})


def monitor_function(
    cfg: KitConfig,
    src: Source,
    role_arn: str,
    reviewed: Mapping[str, Document],
    source_policy: Document | None,
    *,
    peers: bool = True,
) -> PackagedFunction:
    """The monitor's function of the source `src` as deployed (its package's record: `declared_document`), run as
    `role_arn` (the construct's role; a freshness check's record of it: the ARN derived from the configuration).
    `peers`: with its record of the freshness checks it reads (`contract.ENV_PEERS`); without it, what those checks
    compare (the variable is this side's record of them)."""
    mon = cfg.assurance.monitor
    variables = {
        "AWS_DATA_PATH": f"{packaging.LAMBDA_TASK_ROOT}/{packaging.DATA_DIR}",
        contract.ENV_KIT: cfg.name_prefix_of(src),
        contract.ENV_SOURCES: src.bucket_arn,
        contract.ENV_DESTINATIONS: ",".join(r.bucket_arn for r in cfg.destinations_of(src)),
        contract.ENV_MAX_LAG: str(mon.max_lag_minutes * 60),
        contract.ENV_CAP: str(mon.max_table_metrics),
        contract.ENV_CONCURRENCY: str(mon.concurrency),
        contract.ENV_NAMESPACE: assurance.METRIC_NAMESPACE,
    } | ReplicationMonitor._vault_environment(cfg)
    checked = freshness.checks_of(cfg, src) if peers else []
    if checked:
        variables[contract.ENV_PEERS] = json.dumps(freshness_record_of(cfg, checked), sort_keys=True)
    declared = declared_document(cfg, src, reviewed, source_policy)
    return PackagedFunction(
        name=assurance.monitor_function_name(cfg, src),
        description="Publishes S3 Tables replication lag/failure metrics (s3tables-replica-kit status logic)",
        log_group=assurance.monitor_log_group(cfg, src),
        role_arn=role_arn,
        package=packaging.monitor_zip(packaging.declared_bytes(declared)),
        file_name="replication-monitor.zip",
        handler=packaging.HANDLER,
        timeout=mon.timeout_seconds,
        variables=variables,
    )


def freshness_function(cfg: KitConfig, account_id: str, role_arn: str, docs: DocumentSet) -> PackagedFunction:
    """The account's check as deployed, run as `role_arn` (the construct's role; a monitor's record of it: the ARN
    derived from the configuration). Its package records the account's schedule and, by ARN, the monitors of the
    sources feeding its replicas (`docs`: the topology's whole set, from which each source's monitor is built), which
    it compares at every run (`s3tables_kit.jobs.ops.running`)."""
    mon = cfg.assurance.monitor
    settings = {  # what `s3tables_kit.jobs.ops.freshness.FreshnessSettings.from_env` reads, besides the replicas
        contract.ENV_KIT: cfg.kit.name,
        contract.ENV_MAX_LAG: mon.max_lag_minutes * 60,
        contract.ENV_CONCURRENCY: mon.concurrency,
        contract.ENV_NAMESPACE: assurance.METRIC_NAMESPACE,
    }
    env = {
        "AWS_DATA_PATH": f"{packaging.LAMBDA_TASK_ROOT}/{packaging.DATA_DIR}",
        contract.ENV_MODE: contract.MODE_FRESHNESS,
        contract.ENV_DESTINATIONS: ",".join(r.bucket_arn for r in freshness.replicas_of(cfg, account_id)),
        # the sources of each replica, whose tables' last change the check compares with where it may read them
        contract.ENV_REPLICA_SOURCES: json.dumps(freshness.sources_of(cfg, account_id), sort_keys=True),
        **{k: str(v) for k, v in settings.items()},
    }
    monitors = []
    for src in freshness.monitors_checked(cfg, account_id):
        mine = docs.for_source(cfg, src)
        role = site_of(src).role_arn(assurance.monitor_role_name(cfg, src))
        monitor = monitor_function(
            cfg,
            src,
            role,
            reviewed_replica_policies(cfg, src, mine),
            mine.optional("source-bucket-policy"),
            peers=False,
        )
        monitors.append((assurance.monitor_function_arn(cfg, src), monitor))
    # the monitor's package; its declared document: the deploy's record of the account's schedule and the monitors
    record = {contract.DECLARED_DEPLOYED: running_record([], freshness.watches(cfg, account_id), others=monitors)}
    package = packaging.monitor_zip(packaging.declared_bytes(record))
    name = freshness.name(cfg)
    return PackagedFunction(
        name,
        FRESHNESS_ABOUT,
        name,
        role_arn,
        package,
        "replica-freshness.zip",
        packaging.HANDLER,
        mon.timeout_seconds,
        env,
    )


def freshness_record_of(cfg: KitConfig, accounts: list[str]) -> dict[str, dict[str, str]]:
    """A monitor's record of the checks of `accounts` (`contract.ENV_PEERS`): {function ARN: {"code": the package's
    SHA-256, "configuration": the digest of its handler, role, environment and layers}}."""
    docs = docset.build(cfg)  # the whole set, as the replica stacks deploy from it
    out = {}
    for acct in accounts:
        fn = freshness_function(cfg, acct, freshness.role_arn(cfg, acct), docs)
        configuration = {"handler": fn.handler, "role": fn.role_arn, "environment": dict(fn.variables), "layers": []}
        out[freshness.function_arn(cfg, acct)] = {
            "code": packaging.sha256_base64(fn.package),
            "configuration": configuration_digest(configuration),
        }
    return out


def reviewed_replica_policies(cfg: KitConfig, src: Source, docs: DocumentSet) -> dict[str, Document]:
    """The bucket policy each destination's replica stack deploys, by bucket ARN (the set resolves a failover
    topology's names)."""
    return {r.bucket_arn: docs.document("replica-bucket-policy", r.bucket) for r in cfg.destinations_of(src)}


class ReplicationMonitor(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: KitConfig,
        src: Source,
        docs: DocumentSet,
        alarm_topic_arn: str,
        reviewed: Mapping[str, Document],
        source_policy: Document | None = None,
    ) -> None:
        super().__init__(scope, id)
        mon = cfg.assurance.monitor
        fn_name = assurance.monitor_function_name(cfg, src)
        role = _role(self, docs, "role", assurance.monitor_role_name(cfg, src), MONITOR_ROLE_ABOUT)
        prefix, destinations = cfg.name_prefix_of(src), cfg.destinations_of(src)
        # Region: the function's own (AWS_REGION); the metrics and alarms are in the source Region.
        self.function = scheduled_function(self, monitor_function(cfg, src, role.arn, reviewed, source_policy))
        for account in (a for a in freshness.checks_of(cfg, src) if a != src.account_id):
            # the freshness check of that replica account reads this function's code and configuration (its
            # identity policy names it; a principal of this account never vouches for its monitor)
            LambdaPermission(
                self,
                f"read-by-freshness-{account}",
                function_name=self.function.function_name,
                statement_id=f"FreshnessCheckOf{account}ReadsIt",
                action="lambda:GetFunctionConfiguration",
                principal=account,
            )
        self.schedule = job_schedule(
            self,
            docs,
            documents="monitor-schedule-role",
            role_name=assurance.monitor_scheduler_role_name(cfg, src),
            role_description=SCHEDULE_ROLE_ABOUT,
            name=assurance.monitor_schedule_name(cfg, src),
            description="Runs the replication monitor",
            expression=monitor_schedule_expression(mon),
            target_arn=self.function.arn,
        )
        period = mon.interval_minutes * 60
        self.alarm_topic_arn = alarm_topic_arn
        actions = [alarm_topic_arn]
        self.alarms = [a for rep in destinations for a in self._replica_alarms(cfg, prefix, rep, period, actions)]
        # whether it runs and succeeds: AWS/Lambda's metrics of the function (`not-reporting` read the kit's heartbeat)
        self.liveness = FunctionLiveness(
            fn_name, "The replication monitor", "README: 'Assurance' (docs/assurance.md#alarms-and-what-to-do)."
        )
        self.alarms += liveness_alarms(self, self.liveness, period=period, actions=actions)
        read_errors = KitMetricAlarm(
            "read-errors",
            f"{prefix}-replication-status-unreadable",
            "The replication monitor could not read the replication status of some table (StatusReadErrors): a "
            "table policy or key denying the monitor blinds it to that table; the run fails too. Its log line names "
            "the tables. README: 'Assurance'.",
            contract.ERRORS,
            {"Kit": prefix},
        )
        self.alarms.append(
            above_threshold_alarm(
                self, read_errors, period=period, threshold=1, comparison="GreaterThanOrEqualToThreshold",
                actions=actions,
            )
        )  # fmt: skip
        self.alarms += self._drift_alarms(cfg, src, period, actions, source_policy is not None)
        if cfg.vault is not None:
            self.alarms.append(self._backup_age_alarm(prefix, cfg.vault.max_backup_age_hours, period, actions))

    @staticmethod
    def watched(cfg: KitConfig, src: Source) -> dict[str, Any]:
        """The deploy's record of what the monitor compares at every run (`assurance.monitor_watches`): the hardener's
        function as its construct deploys it (its role's ARN derived from the configuration) and the schedules."""
        functions, schedules = assurance.monitor_watches(cfg, src)
        role = hardener_role_arn(cfg, src)
        return running_record([hardener_function(cfg, src, role) for _ in functions], schedules)

    @staticmethod
    def _vault_environment(cfg: KitConfig) -> dict[str, str]:
        """Where the vault's backup points are listed (nothing without `[vault]`)."""
        if cfg.vault is None:
            return {}
        env = {
            contract.ENV_VAULT_BUCKET: cfg.vault.bucket_name(cfg.kit.name),
            contract.ENV_VAULT_REGION: cfg.vault.region,
        }
        return env | ({contract.ENV_VAULT_TABLES: ",".join(cfg.vault.tables)} if cfg.vault.tables else {})

    def _backup_age_alarm(self, prefix: str, max_hours: int, period: int, actions: list[str]) -> CloudwatchMetricAlarm:
        """Fires when the stalest table's newest backup point is older than the budget, a selected table without a
        point counting from its creation (an unreadable vault fails the run instead: the failing alarm)."""
        return above_threshold_alarm(
            self,
            KitMetricAlarm(
                "backup-age",
                f"{prefix}-backup-age",
                f"A table's newest backup point in the vault is older than max_backup_age_hours ({max_hours} h), or "
                "a table [vault] tables selects has none and was created longer ago: the scheduled backup fails or "
                "does not run. `make backup` backs up now; docs/recovery.md 'The backup vault'.",
                contract.BACKUP_AGE,
                {"Kit": prefix},
            ),
            period=period,
            threshold=max_hours * 3600,
            comparison="GreaterThanThreshold",
            actions=actions,
        )

    def _drift_alarms(
        self, cfg: KitConfig, src: Source, period: int, actions: list[str], source_policy: bool
    ) -> list[CloudwatchMetricAlarm]:
        """Replication configuration drift (the source's), bucket policy drift (one per replica, and the source's
        when its policy is declared) and the replica tables' layers (two per replica): any finding."""
        kit, destinations = cfg.name_prefix_of(src), cfg.destinations_of(src)
        drifts = [
            KitMetricAlarm(
                "configuration-drift",
                f"{kit}-replication-configuration-drift",
                f"The replication configuration of {src.bucket} differs from the declared one (a destination "
                "added at either level, a deleted configuration, another role) or could not be read. README: "
                "'Assurance' (docs/assurance.md#drift).",
                contract.CONFIG_DRIFT,
                {"Kit": kit},
            )
        ]
        drifts += [
            KitMetricAlarm(
                f"policy-drift-{rep.bucket}",
                f"{kit}-replica-bucket-policy-drift-{rep.bucket}",
                f"The bucket policy of {rep.bucket} ({rep.region}) is not the reviewed document, or could not be "
                "read. README: 'Assurance' (docs/assurance.md#drift).",
                contract.POLICY_DRIFT,
                {"Kit": kit, "Destination": rep.bucket_arn},
            )
            for rep in destinations
        ]
        if source_policy:
            drifts.append(
                KitMetricAlarm(
                    "source-policy-drift",
                    f"{kit}-source-bucket-policy-drift",
                    f"The bucket policy of {src.bucket} (its layer against changing its replication) is not the "
                    "reviewed document, or could not be read. README: 'Assurance' (docs/assurance.md#drift).",
                    contract.SOURCE_POLICY_DRIFT,
                    {"Kit": kit},
                )
            )
        for rep in destinations:
            where, dims = f"{rep.bucket} ({rep.region})", {"Kit": kit, "Destination": rep.bucket_arn}
            drifts.append(
                KitMetricAlarm(
                    f"layers-missing-{rep.bucket}",
                    f"{kit}-replica-layers-missing-{rep.bucket}",
                    f"A replica table in {where} has no table policy (one of its two layers), or it could not be "
                    "read: run `make harden`. README: 'Assurance' (docs/assurance.md#drift).",
                    contract.LAYERS_MISSING,
                    dims,
                )
            )
            drifts.append(
                KitMetricAlarm(
                    f"retention-below-{rep.bucket}",
                    f"{kit}-replica-retention-below-configured-{rep.bucket}",
                    f"A replica table in {where} keeps snapshots for less than its configured snapshot_retention, or "
                    "it could not be read: `make audit` names it. README: 'Assurance' (docs/assurance.md#drift).",
                    contract.RETENTION_BELOW,
                    dims,
                )
            )
        return [
            above_threshold_alarm(
                self, a, period=period, threshold=1, comparison="GreaterThanOrEqualToThreshold", actions=actions
            )
            for a in drifts
        ]

    def _replica_alarms(
        self, cfg: KitConfig, prefix: str, rep: Replica, period: int, actions: list[str]
    ) -> list[CloudwatchMetricAlarm]:
        """Lag, FAILED and detached alarms of one destination: the maximum over its tables, one run at a time."""
        max_lag = cfg.assurance.monitor.max_lag_minutes
        max_point = cfg.assurance.monitor.max_replication_point_age_minutes
        where = f"{rep.bucket} ({rep.region})"
        problems_only = "Run `make status ARGS=--problems-only` for"
        alarms = (  # (kind, metric, threshold, comparison, description)
            ("lag", contract.LAG, max_lag * 60, "GreaterThanThreshold",
             f"Replication to {where} lags more than {max_lag} min: the oldest source commit the replica lacks is "
             "older than that. README: 'Assurance'."),
            ("failed", contract.FAILED_METRIC, 1, "GreaterThanOrEqualToThreshold",
             f"At least one table's replication to {where} is FAILED. {problems_only} the failure message. "
             "README: 'Assurance'."),
            ("detached", contract.DETACHED_METRIC, 1, "GreaterThanOrEqualToThreshold",
             f"A replica table in {where} was disassociated from replication (DisassociateTableReplication): "
             f"replication to it has stopped for good. {problems_only} the table. README: 'Detached replicas'."),
            ("point", contract.POINT_AGE, max_point * 60, "GreaterThanThreshold",
             f"The replication point of {where} (the newest instant to which every table in it can be restored) is "
             f"older than {max_point} min. `make status` names the table holding it back. README: 'Assurance'."),
        )  # fmt: skip
        # Dimension values must be known at synth: the replica's bucket ARN is derived from the configuration.
        dims = {"Kit": prefix, "Destination": rep.bucket_arn}
        return [
            above_threshold_alarm(
                self,
                KitMetricAlarm(f"{kind}-{rep.bucket}", f"{prefix}-replication-{kind}-{rep.bucket}", text, metric, dims),
                period=period,
                threshold=threshold,
                comparison=comparison,
                actions=actions,
            )
            for kind, metric, threshold, comparison, text in alarms
        ]


def source_assurance(
    scope: Construct, cfg: KitConfig, src: Source, docs: DocumentSet, reviewed: Mapping[str, Document] | None = None
) -> ReplicationMonitor | None:
    """What the stack of the source `src` gets from `[assurance.monitor]`: the alarm topic and the monitor (one hook
    line).
    `reviewed`: each replica's reviewed bucket policy by bucket ARN (default: `reviewed_replica_policies`)."""
    if not cfg.assurance.monitor.enabled:
        return None

    topic = AlarmTopic(scope, "alarm-topic", cfg=cfg, docs=docs, stack="source", src=src)
    reviewed = reviewed_replica_policies(cfg, src, docs) if reviewed is None else reviewed
    return ReplicationMonitor(
        scope,
        "replication-monitor",
        cfg=cfg,
        src=src,
        docs=docs,
        alarm_topic_arn=topic.arn,
        reviewed=reviewed,
        source_policy=docs.optional("source-bucket-policy"),  # the source stack's; the failover monitor's set has none
    )
