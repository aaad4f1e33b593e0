"""The scheduled hardener (`[assurance.harden]`): a Python Lambda function running `harden` on the source's replica
buckets (`jobs/ops/harden_scheduled.py`, packaged at synth with the monitor's kernel, `infra/packaging.py`) on an
EventBridge Scheduler schedule, its log group and its two roles (`policies/hardener.py`). A replica the service
creates (bucket mode: one per new source table) has one layer, its bucket's, for at most
`Harden.one_layer_bound_minutes`: one interval and one run.

What it writes is packaged with it (`kit_harden.json`, `plan`): each replica bucket's configured retention and its
reviewed table policy with a placeholder for the table's ARN, so nothing at run time decides what a replica's layer
says; a change of the configuration or the documents is a change of the package, deployed like code.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cdktf import AssetType, TerraformAsset
from cdktf_cdktf_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktf_cdktf_provider_aws.lambda_function import (
    LambdaFunction,
    LambdaFunctionEnvironment,
    LambdaFunctionLoggingConfig,
)
from cdktf_cdktf_provider_aws.scheduler_schedule import (
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTargetRetryPolicy,
)
from constructs import Construct

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.infra.constructs.schedule import job_schedule
from s3tables_kit.jobs.ops.harden_scheduled import HARDEN_PLAN_FILE, HARDEN_TABLE_ARN, MODULES, plan_document
from s3tables_kit.policies import hardener
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.documents import replica_table_policy_for
from s3tables_kit.topology.assurance import monitor_schedule_expression
from s3tables_kit.topology.config import KitConfig

RUNTIME = "python3.12"
LOG_RETENTION_DAYS = 30


def hardener_plan(cfg: KitConfig) -> dict[str, Any]:
    """`kit_harden.json`: the reviewed table policy (`policies.documents.replica_table_policy_for`, as `make harden`
    puts it) and the configured retention of each replica bucket of the source."""
    return plan_document(
        [
            (
                r.bucket_arn,
                r.snapshot_retention.max_snapshot_age_hours,
                r.snapshot_retention.min_snapshots_to_keep,
                replica_table_policy_for(cfg, r, HARDEN_TABLE_ARN),
            )
            for r in cfg.replicas
        ]
    )


class ReplicaHardener(Construct):
    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet) -> None:
        super().__init__(scope, id)
        h = cfg.assurance.harden
        name = hardener.hardener_name(cfg)
        role, _ = documented_role(
            self,
            "role",
            docs=docs,
            documents="hardener-role",
            name=name,
            description="Scheduled hardener: writes replica table policies and retention (a break-glass principal)",
            policy_id="role-permissions",
            policy_name=name,
        )
        logs = CloudwatchLogGroup(self, "logs", name=name, retention_in_days=LOG_RETENTION_DAYS)
        zip_bytes = packaging.hardener_zip(MODULES, (HARDEN_PLAN_FILE, packaging.declared_bytes(hardener_plan(cfg))))
        staging = Path(tempfile.mkdtemp(prefix="kit-hardener-package-"))
        atexit.register(shutil.rmtree, staging, ignore_errors=True)  # synth copies it; nothing to keep afterwards
        staged = staging / "replica-hardener.zip"
        staged.write_bytes(zip_bytes)
        asset = TerraformAsset(
            self,
            "package",
            path=str(staged),
            type=AssetType.FILE,
            asset_hash=packaging.sha256_base64(zip_bytes).replace("/", "_").replace("+", "-")[:32],
        )
        self.function = LambdaFunction(
            self,
            "function",
            function_name=name,
            description="Hardens new S3 Tables replicas: table policy and retention (s3tables-replica-kit harden)",
            role=role.arn,
            runtime=RUNTIME,
            handler=packaging.handler_of(MODULES[-1]),
            filename=asset.path,
            source_code_hash=packaging.sha256_base64(zip_bytes),
            timeout=h.timeout_seconds,
            memory_size=512,
            reserved_concurrent_executions=1,  # runs never overlap
            logging_config=LambdaFunctionLoggingConfig(log_format="Text", log_group=logs.name),
            environment=LambdaFunctionEnvironment(
                variables={"AWS_DATA_PATH": f"{packaging.LAMBDA_TASK_ROOT}/{packaging.DATA_DIR}"}
            ),
            depends_on=[logs],
        )
        self.schedule = job_schedule(
            self,
            docs,
            documents="hardener-schedule-role",
            role_name=hardener.hardener_schedule_role_name(cfg),
            role_description="EventBridge Scheduler: invokes the scheduled hardener",
            name=name,
            description=f"Hardens new replicas within {h.one_layer_bound_minutes} minutes of their creation",
            expression=monitor_schedule_expression(h),
            window=SchedulerScheduleFlexibleTimeWindow(mode="OFF"),
            target_arn=self.function.arn,
            # A missed run is not retried: the next one comes within the interval (the published bound counts it).
            retry_policy=SchedulerScheduleTargetRetryPolicy(maximum_retry_attempts=0, maximum_event_age_in_seconds=60),
        )


def source_hardener(scope: Construct, cfg: KitConfig, docs: DocumentSet) -> ReplicaHardener | None:
    """What the source stack gets from `[assurance.harden]` (one hook line)."""
    return ReplicaHardener(scope, "replica-hardener", cfg=cfg, docs=docs) if cfg.assurance.harden.enabled else None
