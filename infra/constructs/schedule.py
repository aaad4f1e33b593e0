"""An EventBridge Scheduler schedule that runs one of the kit's assurance jobs (the replication monitor, the recovery
rehearsal) as a role of its own: the role `schedule-role` with its reviewed documents and the schedule `schedule`.
The construct ids are the caller's scope's: they are Terraform addresses."""

from __future__ import annotations

from cdktf_cdktf_provider_aws.scheduler_schedule import (
    SchedulerSchedule,
    SchedulerScheduleFlexibleTimeWindow,
    SchedulerScheduleTarget,
    SchedulerScheduleTargetRetryPolicy,
)
from constructs import Construct

from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.policies.docset import DocumentSet


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
    window: SchedulerScheduleFlexibleTimeWindow,
    target_arn: str,
    retry_policy: SchedulerScheduleTargetRetryPolicy,
    input: str | None = None,
) -> SchedulerSchedule:
    """The schedule `name` invoking `target_arn` (with `input`, when given) as the role `role_name`, which trusts the
    scheduler as `<documents>-trust` says and holds `<documents>-permissions` in its inline policy of the same name."""
    role, _ = documented_role(
        scope,
        "schedule-role",
        docs=docs,
        documents=documents,
        name=role_name,
        description=role_description,
        policy_id="schedule-role-permissions",
        policy_name=role_name,
    )
    return SchedulerSchedule(
        scope,
        "schedule",
        name=name,
        description=description,
        schedule_expression=expression,
        flexible_time_window=window,
        target=SchedulerScheduleTarget(arn=target_arn, role_arn=role.arn, input=input, retry_policy=retry_policy),
    )
