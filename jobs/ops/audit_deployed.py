"""What runs is what was deployed (`make audit`): the kit's Lambda functions, schedules and EMR Serverless application
as they are, against what the deploy recorded in each stack's output (`deployed`,
`s3tables_kit.topology.deployed.DeployedOut`):

- `deployed-function-code-changed`: a function's code (`GetFunction`'s `CodeSha256`) is not the deployed package:
  whoever changed it runs code as the monitor, the freshness check or the hardener (a break-glass principal);
- `deployed-schedule-changed`: a schedule invokes another target, or with another input (a job run's request: its
  entry point, arguments, execution role), than deployed;
- `deployed-application-changed`: the EMR Serverless application runs another release, a custom image, a runtime
  configuration or a network configuration than deployed: every scheduled job run (rehearsal, backup) and recovery
  runs in it;
- `deployed-unverifiable`: one of those could not be read (never a pass).

Outputs written before `deployed` existed are not checked (nothing recorded to compare with).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.sdk import call, describe_error
from s3tables_kit.jobs.ops.audit_scope import AuditReport
from s3tables_kit.topology.deployed import (
    ApplicationOut,
    DeployedOut,
    ScheduleOut,
    application_differences,
    function_differences,
    schedule_differences,
)
from s3tables_kit.topology.outputs import KitOutputs


def check_deployed(clients: Clients, outputs: KitOutputs, report: AuditReport) -> None:
    """Every stack's recorded functions, schedules and application against what runs."""
    sites: list[tuple[str, str, DeployedOut | None, str | None]] = [
        *((s.region, s.account_id, s.deployed, None) for s in outputs.sources),
        *((r.region, r.account_id, r.deployed, None) for r in outputs.replicas),
        (outputs.recovery.region, outputs.recovery.account_id, outputs.recovery.deployed,
         outputs.recovery.emr_application_id),
    ]  # fmt: skip
    for region, account, deployed, application_id in sites:
        if deployed is None:
            continue
        for name in deployed.functions:
            _check_function(clients.client("lambda", region, account), name, deployed, report)
        for name, target in deployed.schedules.items():
            _check_schedule(clients.client("scheduler", region, account), name, target, report)
        if deployed.application is not None and application_id is not None:
            emr = clients.client("emr-serverless", region, account)
            _check_application(emr, application_id, deployed.application, report)


def _read(report: AuditReport, what: str, name: str, op: Any, **request: Any) -> dict[str, Any] | None:
    """One `Get*` of a deployed resource, counted; None (and `deployed-unverifiable`) when it cannot be read."""
    report.count(f"{what}s")
    try:
        got: dict[str, Any] = call(op, **request)
    except (ClientError, BotoCoreError) as exc:
        report.add("deployed-unverifiable", name, f"{what} not read: {describe_error(exc)}")
        return None
    return got


def _check_function(client: Any, name: str, deployed: DeployedOut, report: AuditReport) -> None:
    got = _read(report, "function", name, client.get_function, FunctionName=name)
    if got is None:
        return
    live, recorded = got["Configuration"], deployed.configurations.get(name)
    changed = function_differences(live, deployed.functions[name], recorded.model_dump() if recorded else None)
    if changed:
        report.add(
            "deployed-function-code-changed",
            live.get("FunctionArn", name),
            "; ".join(changed) + " (CloudTrail UpdateFunctionCode, UpdateFunctionConfiguration)",
        )


def _check_schedule(client: Any, name: str, deployed: ScheduleOut, report: AuditReport) -> None:
    group = {"GroupName": deployed.group} if deployed.group else {}
    live = _read(report, "schedule", name, client.get_schedule, Name=name, **group)
    if live is None:
        return
    changed = schedule_differences(live, deployed.target_arn, deployed.input)
    if changed:
        report.add(
            "deployed-schedule-changed", live.get("Arn", name), "; ".join(changed) + " (CloudTrail UpdateSchedule)"
        )


def _check_application(client: Any, application_id: str, deployed: ApplicationOut, report: AuditReport) -> None:
    got = _read(report, "application", application_id, client.get_application, applicationId=application_id)
    if got is None:
        return
    app = got["application"]
    changed = application_differences(app, deployed)
    if changed:
        report.add(
            "deployed-application-changed",
            app.get("arn", application_id),
            "; ".join(changed) + " (CloudTrail UpdateApplication)",
        )
