"""The scheduled hardener (`[assurance.harden]`): a Python Lambda function running `harden` on the source's replica
buckets (`jobs/ops/harden_scheduled.py`, packaged at synth with the monitor's kernel, `infra/packaging.py`) on an
EventBridge Scheduler schedule, its log group and its two roles (`policies/hardener.py`). A replica the service
creates (bucket mode: one per new source table) has one layer, its bucket's, for at most
`Harden.one_layer_bound_minutes`: one interval and one run.

What it writes is packaged with it (`kit_harden.json`, `plan`): each replica bucket's configured retention and its
reviewed table policy with a placeholder for the table's ARN, so nothing at run time decides what a replica's layer
says; a change of the configuration or the documents is a change of the package, deployed like code.

Whether it runs and succeeds: `<prefix>-replica-hardener-not-reporting` / `-failing`, on the function's AWS/Lambda
`Invocations` and `Errors` (`infra/constructs/alerts.py`), through the source stack's alarm topic (the monitor's, or
its own when the monitor is off).
"""

from __future__ import annotations

from typing import Any

from constructs import Construct

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.alerts import AlarmTopic, FunctionLiveness, liveness_alarms
from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.infra.constructs.schedule import PackagedFunction, job_schedule, scheduled_function
from s3tables_kit.policies import hardener
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.documents import replica_table_policy_for
from s3tables_kit.topology.assurance import monitor_schedule_expression
from s3tables_kit.topology.config import KitConfig, Source
from s3tables_kit.topology.contract import HARDEN_PLAN_FILE, HARDEN_REPLICAS, HARDEN_TABLE_ARN


def hardener_plan(cfg: KitConfig, src: Source) -> dict[str, Any]:
    """`kit_harden.json`: the reviewed table policy (`s3tables_kit.policies.documents.replica_table_policy_for`, as
    `make harden` puts it) and the configured retention of each replica bucket of the source `src`."""
    return {
        HARDEN_REPLICAS: [
            {
                "table_bucket_arn": r.bucket_arn,
                "max_snapshot_age_hours": r.snapshot_retention.max_snapshot_age_hours,
                "min_snapshots_to_keep": r.snapshot_retention.min_snapshots_to_keep,
                "table_policy": replica_table_policy_for(cfg, r, HARDEN_TABLE_ARN),
            }
            for r in cfg.destinations_of(src)
        ]
    }


def hardener_function(cfg: KitConfig, src: Source, role_arn: str) -> PackagedFunction:
    """The hardener's function of the source `src` as deployed, run as `role_arn` (the construct's role; the
    monitor's record of it: the ARN derived from the configuration)."""
    plan = (HARDEN_PLAN_FILE, packaging.declared_bytes(hardener_plan(cfg, src)))
    return PackagedFunction(
        name=hardener.hardener_name(cfg, src),
        description="Hardens new S3 Tables replicas: table policy and retention (s3tables-replica-kit harden)",
        log_group=hardener.hardener_name(cfg, src),
        role_arn=role_arn,
        package=packaging.hardener_zip(plan),
        file_name="replica-hardener.zip",
        handler=packaging.handler_of(packaging.HARDENER_ENTRY),
        timeout=cfg.assurance.harden.timeout_seconds,
        variables={"AWS_DATA_PATH": f"{packaging.LAMBDA_TASK_ROOT}/{packaging.DATA_DIR}"},
    )


class ReplicaHardener(Construct):
    def __init__(
        self, scope: Construct, id: str, *, cfg: KitConfig, src: Source, docs: DocumentSet, alarm_topic_arn: str
    ) -> None:
        super().__init__(scope, id)
        h = cfg.assurance.harden
        name = hardener.hardener_name(cfg, src)
        role, _ = documented_role(
            self,
            "role",
            docs=docs,
            documents="hardener-role",
            name=name,
            description="Scheduled hardener: writes replica table policies and retention (its own narrow exemption)",
            policy_id="role-permissions",
            policy_name=name,
        )
        self.function = scheduled_function(self, hardener_function(cfg, src, role.arn))
        self.schedule = job_schedule(
            self,
            docs,
            documents="hardener-schedule-role",
            role_name=hardener.hardener_schedule_role_name(cfg, src),
            role_description="EventBridge Scheduler: invokes the scheduled hardener",
            name=name,
            description=f"Hardens new replicas within {h.one_layer_bound_minutes} minutes of their creation",
            expression=monitor_schedule_expression(h),
            target_arn=self.function.arn,
        )
        self.liveness = FunctionLiveness(
            name, "The scheduled hardener", "docs/assurance.md#scheduled-hardening: run `make harden` meanwhile."
        )
        liveness_alarms(self, self.liveness, period=h.interval_minutes * 60, actions=[alarm_topic_arn])


def source_hardener(
    scope: Construct, cfg: KitConfig, src: Source, docs: DocumentSet, alarm_topic_arn: str | None
) -> ReplicaHardener | None:
    """What the stack of the source `src` gets from `[assurance.harden]` (one hook line); `alarm_topic_arn`: the
    stack's alarm topic (the monitor's; None: the monitor is off, and the hardener brings the stack's topic)."""
    if not cfg.assurance.harden.enabled:
        return None
    if alarm_topic_arn is None:
        alarm_topic_arn = AlarmTopic(scope, "alarm-topic", cfg=cfg, docs=docs, stack="source", src=src).arn
    return ReplicaHardener(scope, "replica-hardener", cfg=cfg, src=src, docs=docs, alarm_topic_arn=alarm_topic_arn)
