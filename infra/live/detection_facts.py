"""What AWS must honour for the detection path (docs/aws-facts.md U37-U39; decision 0039): the `AWS/Scheduler` counts of
a universal-target schedule in a group of its own and the dimensions of an EMR Serverless 7.10+ application's
job-state counts, which the scheduled job runs' liveness alarms read (`probe_job_metrics`), and a Lambda function read
from another account through its resource policy, as the monitor and the freshness checks read each other
(`probe_function_read`).

U39 runs on the stand-in too, which serves a function read by ARN from another account under the function's resource
policy (`emulator.lambda_policy`); it needs a run with a second account (`second_account_id`), since within one
account the run's administrator role reads any function anyway.

U37 and U38:

Both run on AWS only: the stand-in's Scheduler stores schedules but never fires one, its EMR Serverless runs no job,
and neither publishes a datum to CloudWatch, so a stand-in run could only report the stand-in's own model. On AWS the
probe makes, in the replica account and Region, a schedule group and a one-time schedule of its own whose
`StartJobRun` (the kit's universal target) names an application that does not exist, with no retry (one attempt, one
dropped start), and an EMR Serverless application (the kit's default release) with one job run whose entry point does
not exist (one FAILED run: no data is read, the execution role holds no permission). Every resource carries the run's
name prefix and tag; the group (its schedule with it) and the application are deleted here, the roles by the run's
cleanup. CloudWatch's data arrive minutes late: the probe waits up to `METRICS_WAIT_S`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.infra.live.plan import RUN_TAG, RunPlan
from s3tables_kit.infra.live.probes import Fact, code_of, judge
from s3tables_kit.infra.live.world import LiveTarget
from s3tables_kit.topology.assurance import UNIVERSAL_TARGET, job_metric_dimensions
from s3tables_kit.topology.model import Recovery

STANDIN_NO_SCHEDULER_METRICS = (
    "the stand-in's Scheduler never fires a schedule and publishes no AWS/Scheduler datum; a run on AWS settles it "
    "(make live-verify AWS=1)"
)
STANDIN_NO_EMR_METRICS = (
    "the stand-in's EMR Serverless runs no job and publishes no AWS/EMRServerless datum; a run on AWS settles it "
    "(make live-verify AWS=1)"
)
NEEDS_TWO_ACCOUNTS = "not probed: needs a run with a second account (settings second_account_id)"
METRICS_WAIT_S, POLL_S = 900.0, 30.0  # CloudWatch's delivery is best effort and minutes late
FIRE_AFTER = timedelta(minutes=2)  # the one-time schedule's time: after IAM has propagated the new role
MISSING_APPLICATION = "00fakeapplication0"  # no such application: StartJobRun fails, the start is dropped


def _trust(service: str, account: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": account}}}]})  # fmt: skip


def _role(iam: Any, plan: RunPlan, what: str, service: str, account: str) -> str:
    """A role of the run with no permission, trusted by `service` of this account; its ARN."""
    got = iam.create_role(
        RoleName=plan.name(what), AssumeRolePolicyDocument=_trust(service, account),
        Tags=[{"Key": RUN_TAG, "Value": plan.run_id}],
    )  # fmt: skip
    return str(got["Role"]["Arn"])


def _retrying(call: Callable[[], Any], tries: int = 6, wait_s: float = 10.0, code: str = "ValidationException") -> Any:
    """`call` until what it waits for has propagated (IAM a new role, Lambda a new grant: the error `code`), at most
    `tries` times."""
    for i in range(tries):
        try:
            return call()
        except ClientError as exc:
            if code_of(exc) != code or i == tries - 1:
                raise
            time.sleep(wait_s)
    return None


def judge_schedule_counts(fact: Fact, attempts: float, dropped: float, evidence: str) -> Fact:
    """U37 from the group's sums since the schedule fired: one attempt and one dropped start."""
    ok = attempts >= 1 and dropped >= 1
    return judge(
        fact, "InvocationAttemptCount >= 1 and InvocationDroppedCount >= 1 under the probe's own ScheduleGroup",
        ok, f"InvocationAttemptCount {attempts:g}; InvocationDroppedCount {dropped:g}", evidence,
        change="the job liveness alarms cannot rely on the group's counts: read the schedule's starts elsewhere "
        "(the application's SubmittedJobs, or the job run's own report) in infra/constructs/recovery.py",
        endangers="protection" if attempts >= 1 and dropped < 1 else "",  # a dropped start unseen passes a period
    )  # fmt: skip


def judge_job_dimensions(fact: Fact, expected: dict[str, str], series: Iterable[dict[str, str]], failed: float,
                         evidence: str) -> Fact:  # fmt: skip
    """U38 from the dimension sets of `FailedJobs` that name the application and the failed run's count under the
    set the kit's alarms read (`expected`)."""
    found = sorted(json.dumps(s, sort_keys=True) for s in series)
    ok = json.dumps(expected, sort_keys=True) in found and failed >= 1
    return judge(
        fact, f"FailedJobs >= 1 under exactly {json.dumps(expected, sort_keys=True)}", ok,
        f"FailedJobs series {found or 'none'}; FailedJobs under the kit's set {failed:g}", evidence,
        change="set the job-state dimensions the observed series carry in infra/constructs/recovery.py "
        "(job_metric_dimensions)", endangers="protection",  # an alarm on the wrong set never sees a failure
    )  # fmt: skip


def _sum(cw: Any, namespace: str, metric: str, dims: dict[str, str], since: datetime) -> float:
    got = cw.get_metric_statistics(
        Namespace=namespace, MetricName=metric, Dimensions=[{"Name": k, "Value": v} for k, v in dims.items()],
        StartTime=since, EndTime=datetime.now(UTC) + timedelta(minutes=1), Period=60, Statistics=["Sum"],
    )  # fmt: skip
    return float(sum(p["Sum"] for p in got.get("Datapoints", [])))


def _series(cw: Any, application_id: str) -> list[dict[str, str]]:
    got = cw.list_metrics(
        Namespace="AWS/EMRServerless", MetricName="FailedJobs",
        Dimensions=[{"Name": "ApplicationId", "Value": application_id}],
    )  # fmt: skip
    return [{d["Name"]: d["Value"] for d in m["Dimensions"]} for m in got.get("Metrics", [])]


def probe_job_metrics(facts: dict[str, Fact], target: LiveTarget, plan: RunPlan) -> None:
    """U37 and U38 in the replica account and Region (AWS only; the stand-in's reason otherwise)."""
    if target.local:
        facts["U37"].observed, facts["U38"].observed = STANDIN_NO_SCHEDULER_METRICS, STANDIN_NO_EMR_METRICS
        return
    s = plan.settings
    region, account = s.replica_region, s.replica_account_id
    iam, cw = target.client("iam", "us-east-1", account), target.client("cloudwatch", region, account)
    scheduler, emr = target.client("scheduler", region, account), target.client("emr-serverless", region, account)
    group, app_name = plan.name("u37"), plan.name("u38")
    tags = [{"Key": RUN_TAG, "Value": plan.run_id}]
    since = datetime.now(UTC) - timedelta(minutes=1)
    app_id = ""
    try:
        schedule_role = _role(iam, plan, "u37-schedule", "scheduler.amazonaws.com", account)
        job_role = _role(iam, plan, "u38-job", "emr-serverless.amazonaws.com", account)
        scheduler.create_schedule_group(Name=group, Tags=tags)
        request = {
            "applicationId": MISSING_APPLICATION,
            "executionRoleArn": job_role,
            "clientToken": uuid.uuid4().hex,
            "jobDriver": {"sparkSubmit": {"entryPoint": "s3://none/u37.py"}},
        }
        fire = (datetime.now(UTC) + FIRE_AFTER).strftime("%Y-%m-%dT%H:%M:%S")
        _retrying(lambda: scheduler.create_schedule(
            Name=group, GroupName=group, ScheduleExpression=f"at({fire})", FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": UNIVERSAL_TARGET, "RoleArn": schedule_role, "Input": json.dumps(request),
                    "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}},
        ))  # fmt: skip
        release = str(Recovery.model_fields["emr_release"].default)  # the kit's default release
        app = emr.create_application(
            name=app_name, releaseLabel=release, type="SPARK", tags={RUN_TAG: plan.run_id},
            maximumCapacity={"cpu": "4 vCPU", "memory": "16 GB"},
            autoStopConfiguration={"enabled": True, "idleTimeoutMinutes": 1},
        )  # fmt: skip
        app_id = str(app["applicationId"])
        _retrying(lambda: emr.start_job_run(
            applicationId=app_id, executionRoleArn=job_role, name=plan.name("u38-run"),
            jobDriver={"sparkSubmit": {"entryPoint": f"s3://{plan.name('u38-none')}/u38.py"}},
            executionTimeoutMinutes=10,
        ))  # fmt: skip
        expected = job_metric_dimensions(app_id, app_name, release)
        deadline = time.monotonic() + METRICS_WAIT_S + FIRE_AFTER.total_seconds()
        attempts = dropped = failed = 0.0
        series: list[dict[str, str]] = []
        while time.monotonic() < deadline and not (attempts >= 1 and dropped >= 1 and failed >= 1):
            time.sleep(POLL_S)
            attempts = _sum(cw, "AWS/Scheduler", "InvocationAttemptCount", {"ScheduleGroup": group}, since)
            dropped = _sum(cw, "AWS/Scheduler", "InvocationDroppedCount", {"ScheduleGroup": group}, since)
            series = _series(cw, app_id)
            failed = _sum(cw, "AWS/EMRServerless", "FailedJobs", expected, since)
        waited = f"GetMetricStatistics and ListMetrics over {(datetime.now(UTC) - since).seconds // 60} min"
        judge_schedule_counts(facts["U37"], attempts, dropped, waited)
        judge_job_dimensions(facts["U38"], expected, series, failed, f"{waited}; application {app_id} ({release})")
    finally:
        _gone(scheduler.delete_schedule_group, Name=group)
        if app_id:
            _remove_application(emr, app_id)


def _gone(call: Callable[..., Any], **request: Any) -> None:
    """`call(**request)`, where a resource already gone (or never made) is fine."""
    try:
        call(**request)
    except ClientError as exc:
        if "NotFound" not in code_of(exc):
            raise


def detection_probe_leftovers(target: LiveTarget, plan: RunPlan, prefix: str) -> list[str]:
    """The probes' schedule groups, EMR Serverless applications and functions whose names start with `prefix`."""
    s = plan.settings
    region, account = s.replica_region, s.replica_account_id
    groups = target.client("scheduler", region, account).list_schedule_groups(NamePrefix=prefix)["ScheduleGroups"]
    apps = target.client("emr-serverless", region, account).list_applications()["applications"]
    functions = target.client("lambda", s.source_region, s.account_id).list_functions()["Functions"]
    return (
        [f"lambda:{f['FunctionName']}" for f in functions if f["FunctionName"].startswith(prefix)]
        + [f"scheduler:{g['Name']}" for g in groups]
        + [
            f"emr-serverless:{a['id']}:{a['name']}"
            for a in apps
            if a["name"].startswith(prefix) and a["state"] != "TERMINATED"
        ]
    )


def remove_detection_probes(target: LiveTarget, plan: RunPlan) -> None:
    """The run's probe group (with its schedule) and application, each only with the run's name and tag."""
    s = plan.settings
    region, account = s.replica_region, s.replica_account_id
    scheduler, emr = target.client("scheduler", region, account), target.client("emr-serverless", region, account)
    lam = target.client("lambda", s.source_region, s.account_id)
    for what in detection_probe_leftovers(target, plan, plan.name_prefix + "-"):
        kind, _, rest = what.partition(":")
        if kind == "lambda":
            fn = lam.get_function(FunctionName=rest)
            plan.require_owned(rest, dict(fn.get("Tags", {})))
            _gone(lam.delete_function, FunctionName=rest)
        elif kind == "scheduler":
            arn = scheduler.get_schedule_group(Name=rest)["Arn"]
            tags = {t["Key"]: t["Value"] for t in scheduler.list_tags_for_resource(ResourceArn=arn)["Tags"]}
            plan.require_owned(rest, tags)
            _gone(scheduler.delete_schedule_group, Name=rest)
        else:
            app_id, _, name = rest.partition(":")
            plan.require_owned(name, dict(emr.get_application(applicationId=app_id)["application"].get("tags", {})))
            _remove_application(emr, app_id)


def _remove_application(emr: Any, app_id: str) -> None:
    """Stopped, then deleted once stopped (a ValidationException while it stops is retried)."""
    _gone(emr.stop_application, applicationId=app_id)
    _gone(lambda: _retrying(lambda: emr.delete_application(applicationId=app_id), tries=12))


def _function_zip() -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    return out.getvalue()


def probe_function_read(fact: Fact, target: LiveTarget, plan: RunPlan) -> None:
    """U39: a function of the source account read by ARN (`GetFunctionConfiguration`) as the replica account's
    administrator role: refused without a grant, answered once the function's resource policy grants that account the
    action (`AddPermission` with the account as principal, as `aws_lambda_permission` deploys it)."""
    s = plan.settings
    if not s.cross_account:
        fact.observed = NEEDS_TWO_ACCOUNTS
        return
    region = s.source_region
    iam, lam = target.client("iam", "us-east-1", s.account_id), target.client("lambda", region, s.account_id)
    reader = target.as_role(plan.role_arn("admin", s.replica_account_id), "lambda", region)
    role = _role(iam, plan, "u39-fn", "lambda.amazonaws.com", s.account_id)
    name = plan.name("u39")
    try:
        fn = _retrying(lambda: lam.create_function(
            FunctionName=name, Runtime="python3.12", Role=role, Handler="handler.handler",
            Code={"ZipFile": _function_zip()}, Tags={RUN_TAG: plan.run_id},
        ), tries=12, code="InvalidParameterValueException")  # fmt: skip
        arn = str(fn["FunctionArn"])
        before = _attempt_read(reader, arn)
        lam.add_permission(FunctionName=name, StatementId="ReadByTheReplicaAccount",
                           Action="lambda:GetFunctionConfiguration", Principal=s.replica_account_id)  # fmt: skip
        after = _retrying(lambda: _read_or_raise(reader, arn), tries=6, code="AccessDeniedException")
        ok = before.startswith("AccessDenied") and after.get("CodeSha256") == fn["CodeSha256"]
        judge(
            fact, "AccessDeniedException without a grant; the function's configuration with the account's grant", ok,
            f"without a grant {before}; with it {'the configuration' if after else 'nothing'}",
            f"GetFunctionConfiguration {arn} as {plan.role_arn('admin', s.replica_account_id)}",
            change="the monitor and the freshness checks cannot read each other across accounts: their runs fail "
            "(-failing fires); check each other through `make audit` run from outside and drop the cross-account "
            "records (infra/constructs/monitor.py, docs/decisions/0039)",
        )  # fmt: skip
    finally:
        _gone(lam.delete_function, FunctionName=name)


def _attempt_read(reader: Any, arn: str) -> str:
    try:
        reader.get_function_configuration(FunctionName=arn)
    except ClientError as exc:
        return code_of(exc)
    return "allowed"


def _read_or_raise(reader: Any, arn: str) -> dict[str, Any]:
    return dict(reader.get_function_configuration(FunctionName=arn))
