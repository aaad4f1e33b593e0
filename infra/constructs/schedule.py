"""An EventBridge Scheduler schedule that runs one of the kit's scheduled jobs (the replication monitor, the recovery
rehearsal, the scheduled hardener, the vault backup) as a role of its own: the role `schedule-role` with its
reviewed documents and the schedule `schedule` (`spark_job_target`: the target of a Spark job run), in the schedule
group `schedule-group` when it has one of its own; and the Python Lambda function such a schedule invokes, built from
a package the kit makes at synth (`scheduled_function`: its log group `logs`, its asset `package` and the function
`function`). The construct ids are the caller's scope's: they are Terraform addresses."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from cdktf import AssetType, TerraformAsset
from cdktf_cdktf_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktf_cdktf_provider_aws.lambda_function import (
    LambdaFunction,
    LambdaFunctionEnvironment,
    LambdaFunctionLoggingConfig,
)
from cdktf_cdktf_provider_aws.scheduler_schedule import (
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetRetryPolicy,
)
from cdktf_cdktf_provider_aws.scheduler_schedule_group import SchedulerScheduleGroup
from constructs import Construct

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.assurance import UNIVERSAL_TARGET
from s3tables_kit.topology.deployed import deployed_value

RUNTIME = "python3.12"
LOG_RETENTION_DAYS = 30


def job_schedule(
    scope: Construct,
    docs: DocumentSet,
    *,
    documents: str,
    role_name: str,
    role_description: str,
    name: str,
    description: str,
    expression: str,
    target_arn: str,
    window: SchedulerScheduleFlexibleTimeWindow | None = None,
    retry_policy: SchedulerScheduleTargetRetryPolicy | None = None,
    input: str | None = None,
    site: str | None = None,
    group: str | None = None,
) -> SchedulerSchedule:
    """The schedule `name` invoking `target_arn` (with `input`, when given) as the role `role_name`, which trusts the
    scheduler as `<documents>-trust` says and holds `<documents>-permissions` in its inline policy of the same name
    (of `site`, when the documents are per site); in the schedule group `group` (created here), else the default one.
    Without `window` and `retry_policy`, a job that runs every interval: no window, and a missed run is not retried
    (the next one comes within the interval; a late one would only report stale numbers under a later timestamp)."""
    window = window or SchedulerScheduleFlexibleTimeWindow(mode="OFF")
    retry_policy = retry_policy or SchedulerScheduleTargetRetryPolicy(
        maximum_retry_attempts=0, maximum_event_age_in_seconds=60
    )
    role, _ = documented_role(
        scope,
        "schedule-role",
        docs=docs,
        documents=documents,
        name=role_name,
        description=role_description,
        policy_id="schedule-role-permissions",
        policy_name=role_name,
        site=site,
    )
    in_group = SchedulerScheduleGroup(scope, "schedule-group", name=group) if group is not None else None
    return SchedulerSchedule(
        scope,
        "schedule",
        name=name,
        group_name=in_group.name if in_group is not None else None,
        description=description,
        schedule_expression=expression,
        flexible_time_window=window,
        target=SchedulerScheduleTarget(arn=target_arn, role_arn=role.arn, input=input, retry_policy=retry_policy),
    )


@dataclass(frozen=True)
class PackagedFunction:
    """A Lambda function of the kit's own package: `package` (the zip's bytes) staged as `file_name`."""

    name: str
    description: str
    log_group: str
    role_arn: str
    package: bytes
    file_name: str
    handler: str
    timeout: int
    variables: Mapping[str, str]


def scheduled_function(scope: Construct, fn: PackagedFunction) -> LambdaFunction:
    """The function `fn` with its log group: one run at a time, 512 MB, the package staged for the asset, which
    copies it into the synth output under a content hash (no path of this machine reaches the Terraform)."""
    logs = CloudwatchLogGroup(scope, "logs", name=fn.log_group, retention_in_days=LOG_RETENTION_DAYS)
    staging = Path(tempfile.mkdtemp(prefix="kit-function-package-"))
    atexit.register(shutil.rmtree, staging, ignore_errors=True)  # synth copies it; nothing to keep afterwards
    staged = staging / fn.file_name
    staged.write_bytes(fn.package)
    digest = packaging.sha256_base64(fn.package)
    asset = TerraformAsset(
        scope,
        "package",
        path=str(staged),
        type=AssetType.FILE,
        asset_hash=digest.replace("/", "_").replace("+", "-")[:32],
    )
    return LambdaFunction(
        scope,
        "function",
        function_name=fn.name,
        description=fn.description,
        role=fn.role_arn,
        runtime=RUNTIME,
        handler=fn.handler,
        filename=asset.path,
        source_code_hash=digest,
        timeout=fn.timeout,
        memory_size=512,
        reserved_concurrent_executions=1,  # runs never overlap
        logging_config=LambdaFunctionLoggingConfig(log_format="Text", log_group=logs.name),
        environment=LambdaFunctionEnvironment(variables=dict(fn.variables)),
        depends_on=[logs],
    )


def deployed_entry(
    functions: Sequence[LambdaFunction | None] = (),
    schedules: Sequence[SchedulerSchedule | None] = (),
    application: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """A stack output's `deployed` (`s3tables_kit.topology.deployed.deployed_value`): the code hash and the
    configuration (handler, role, environment, no layers) of each function and the target of each schedule as these
    constructs set them (None: a component the configuration leaves out)."""
    made = [f for f in functions if f is not None]
    fns = {str(f.function_name_input): str(f.source_code_hash_input) for f in made}
    configurations = {str(f.function_name_input): _configuration(f) for f in made}
    targets, groups = {}, {}
    for s in (s for s in schedules if s is not None):
        target = s.target_input
        assert isinstance(target, SchedulerScheduleTarget)
        targets[str(s.name_input)] = (str(target.arn), target.input)
        if s.group_name_input is not None:  # a job's own group: its schedule is read there
            groups[str(s.name_input)] = str(s.group_name_input)
    return deployed_value(fns, targets, application, configurations, groups=groups)


def _configuration(f: LambdaFunction) -> dict[str, Any]:
    """`FunctionOut`'s fields as `scheduled_function` set them (the role: its reference, resolved by Terraform)."""
    env = f.environment_input
    variables = dict(env.variables or {}) if isinstance(env, LambdaFunctionEnvironment) else {}
    return {"handler": str(f.handler_input), "role": str(f.role_input), "environment": variables, "layers": []}


def running_record(
    functions: Sequence[PackagedFunction],
    schedules: Mapping[str, str],
    others: Sequence[tuple[str, PackagedFunction]] = (),
) -> dict[str, Any]:
    """What a function's package records of the other kit functions (`functions`, with their roles' ARNs as derived
    from the configuration) and the schedules ({name: target function ARN}, no input) of its account, and of
    functions of other accounts (`others`: (ARN, function)), to compare at every run
    (`s3tables_kit.jobs.ops.running`): the code hash `scheduled_function` deploys, the handler, role, environment and
    (no) layers."""
    named = [(f.name, f) for f in functions] + list(others)
    return deployed_value(
        {key: packaging.sha256_base64(f.package) for key, f in named},
        {name: (arn, None) for name, arn in schedules.items()},
        configurations={
            key: {"handler": f.handler, "role": f.role_arn, "environment": dict(f.variables), "layers": []}
            for key, f in named
        },
    )


class ScheduleTarget(TypedDict):
    """What `job_schedule` needs besides the names: when, what and how often to retry."""

    window: SchedulerScheduleFlexibleTimeWindow
    target_arn: str
    input: str
    retry_policy: SchedulerScheduleTargetRetryPolicy


def spark_job_target(request: dict[str, Any]) -> ScheduleTarget:
    """A Spark job run on the kit's EMR Serverless application (`request`: `packaging.start_job_run_input`) through
    the universal target, within a 30-minute window; a failed start is retried for up to an hour (the request's
    client token makes a retried start the same run)."""
    return ScheduleTarget(
        window=SchedulerScheduleFlexibleTimeWindow(mode="FLEXIBLE", maximum_window_in_minutes=30),
        target_arn=UNIVERSAL_TARGET,
        input=json.dumps(request, indent=None, sort_keys=True),
        retry_policy=SchedulerScheduleTargetRetryPolicy(maximum_retry_attempts=2, maximum_event_age_in_seconds=3600),
    )
