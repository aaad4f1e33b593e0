"""Liveness alarms of every example's synthesized stacks: every scheduled Lambda function of the kit has its
"is it running and succeeding" alarms, and so has every scheduled EMR Serverless job run (the rehearsal, the vault
backup: its schedule in a group of its own, read by group in `AWS/Scheduler`, and the application's failed and
cancelled runs in `AWS/EMRServerless`); they read metrics AWS publishes (`AWS/...`), never the kit's namespace, in
which anyone who may write a log event can create a datum (CloudWatch's embedded metric format). Liveness alarms are
found by their record (`infra/constructs/alerts.py`: the `KitSignal` tag every `liveness_alarms` and
`job_liveness_alarm` alarm carries), not by their names."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3tables_kit.infra.constructs.alerts import LIVENESS, SIGNAL_TAG
from s3tables_kit.infra.constructs.rehearsal import alarm_window
from s3tables_kit.topology.assurance import UNIVERSAL_TARGET
from s3tables_kit.topology.contract import HEARTBEAT, METRIC_NAMESPACE

pytestmark = pytest.mark.synth
Stack = dict[str, Any]


def _res(stack: Stack, rtype: str) -> dict[str, Any]:
    return dict(stack.get("resource", {}).get(rtype, {}))


def _namespaces(alarm: dict[str, Any]) -> list[str]:
    """Every namespace an alarm reads: its metric's, or each metric of its metric math."""
    queries = alarm.get("metric_query") or []
    return (
        [alarm["namespace"]] if "namespace" in alarm else [q["metric"]["namespace"] for q in queries if "metric" in q]
    )


def liveness_problems(stack: Stack) -> list[str]:
    """What is wrong with one stack's liveness alarms: a function without both, or one reading a namespace a
    customer can write."""
    alarms = _res(stack, "aws_cloudwatch_metric_alarm").values()
    live = [a for a in alarms if (a.get("tags") or {}).get(SIGNAL_TAG) == LIVENESS]
    out = [
        f"{a['alarm_name']} reads {ns}"
        for a in live
        for ns in _namespaces(a)
        if not ns.startswith("AWS/") or ns == METRIC_NAMESPACE
    ]
    out += [f"{a['alarm_name']} reads the heartbeat" for a in alarms if a.get("metric_name") == HEARTBEAT]
    for fn in (f["function_name"] for f in _res(stack, "aws_lambda_function").values()):
        mine = {a["metric_name"]: a for a in live if a.get("dimensions") == {"FunctionName": fn}}
        invoked, errors = mine.get("Invocations"), mine.get("Errors")
        if invoked is None or invoked["treat_missing_data"] != "breaching" or invoked["threshold"] != 1:
            out.append(f"{fn}: no alarm when it is not invoked (missing data breaching)")
        if errors is None or errors["comparison_operator"] != "GreaterThanOrEqualToThreshold":
            out.append(f"{fn}: no alarm when it fails")
    return out + _job_problems(stack, live)


def _metrics(alarm: dict[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """(namespace, metric) -> dimensions of each metric a metric-math alarm reads."""
    return {
        (q["metric"]["namespace"], q["metric"]["metric_name"]): q["metric"].get("dimensions") or {}
        for q in alarm.get("metric_query") or []
        if "metric" in q
    }


def _job_problems(stack: Stack, live: list[dict[str, Any]]) -> list[str]:
    """A scheduled job run (a schedule whose target is EMR Serverless' StartJobRun) without a liveness alarm on its
    schedule group's attempts and the application's failed and cancelled runs, missing data breaching; or a schedule
    sharing its group (AWS/Scheduler's metrics would then be another schedule's too)."""
    groups = {
        f"${{aws_scheduler_schedule_group.{k}.name}}": g["name"]
        for k, g in _res(stack, "aws_scheduler_schedule_group").items()
    }
    schedules = list(_res(stack, "aws_scheduler_schedule").values())
    out = []
    for s in (s for s in schedules if s["target"]["arn"] == UNIVERSAL_TARGET):
        group = groups.get(str(s.get("group_name")))
        if group is None or sum(groups.get(str(o.get("group_name"))) == group for o in schedules) != 1:
            out.append(f"{s['name']}: not in a schedule group of its own")
            continue
        mine = [
            a for a in live if _metrics(a).get(("AWS/Scheduler", "InvocationAttemptCount")) == {"ScheduleGroup": group}
        ]
        ok = [
            a for a in mine
            if a["treat_missing_data"] == "breaching"
            and {("AWS/EMRServerless", "FailedJobs"), ("AWS/EMRServerless", "CancelledJobs")} <= set(_metrics(a))
        ]  # fmt: skip
        if not ok:
            out.append(f"{s['name']}: no alarm when it does not run or does not succeed")
    return out


def test_every_function_of_every_example_has_liveness_alarms_on_aws_published_metrics(
    synthesized: dict[str, dict[str, Stack]],
) -> None:
    functions = 0
    for example, stacks in synthesized.items():
        for name, stack in stacks.items():
            assert liveness_problems(stack) == [], (example, name)
            functions += len(_res(stack, "aws_lambda_function"))
    assert functions >= 8  # the monitors and the replica accounts' freshness checks of the examples
    jobs = [
        s["name"]
        for stacks in synthesized.values()
        for stack in stacks.values()
        for s in _res(stack, "aws_scheduler_schedule").values()
        if s["target"]["arn"] == UNIVERSAL_TARGET
    ]
    assert {"seed-recovery-rehearsal", "seed-vault-backup"} <= set(jobs), jobs  # rehearsals and backups are covered


def test_the_check_fails_on_a_job_liveness_alarm_reading_the_kits_namespace_or_a_job_without_one(
    synthesized: dict[str, dict[str, Stack]],
) -> None:
    stack = copy.deepcopy(synthesized["seed"]["recovery"])
    alarms = _res(stack, "aws_cloudwatch_metric_alarm")
    live = {k: a for k, a in alarms.items() if (a.get("tags") or {}).get(SIGNAL_TAG) == LIVENESS}
    assert sorted(a["alarm_name"] for a in live.values()) == [
        "seed-recovery-rehearsal-not-succeeding", "seed-vault-backup-not-succeeding"
    ]  # fmt: skip
    key = next(k for k, a in live.items() if a["alarm_name"] == "seed-recovery-rehearsal-not-succeeding")
    forged = copy.deepcopy(stack)
    failed = next(
        q for q in forged["resource"]["aws_cloudwatch_metric_alarm"][key]["metric_query"] if q["id"] == "failed"
    )
    failed["metric"] |= {"namespace": METRIC_NAMESPACE, "metric_name": "RehearsalSucceeded"}
    assert liveness_problems(forged) == [
        "seed-recovery-rehearsal-not-succeeding reads S3TablesReplicaKit",
        "seed-recovery-rehearsal: no alarm when it does not run or does not succeed",
    ]
    gone = copy.deepcopy(stack)
    del gone["resource"]["aws_cloudwatch_metric_alarm"][key]
    assert liveness_problems(gone) == ["seed-recovery-rehearsal: no alarm when it does not run or does not succeed"]
    shared = copy.deepcopy(stack)  # the backup's schedule moved into the rehearsal's group
    sched = shared["resource"]["aws_scheduler_schedule"]
    rehearsal = next(s for s in sched.values() if s["name"] == "seed-recovery-rehearsal")
    next(s for s in sched.values() if s["name"] == "seed-vault-backup")["group_name"] = rehearsal["group_name"]
    own = ": not in a schedule group of its own"
    assert sorted(liveness_problems(shared)) == [f"seed-recovery-rehearsal{own}", f"seed-vault-backup{own}"]


def test_the_check_fails_on_a_liveness_alarm_reading_the_kits_namespace_or_a_function_without_one(
    synthesized: dict[str, dict[str, Stack]],
) -> None:
    stack = copy.deepcopy(synthesized["seed"]["source"])
    alarms = _res(stack, "aws_cloudwatch_metric_alarm")
    live = {k: a for k, a in alarms.items() if (a.get("tags") or {}).get(SIGNAL_TAG) == LIVENESS}
    assert sorted(a["metric_name"] for a in live.values()) == ["Errors", "Invocations"]
    key = next(k for k, a in live.items() if a["metric_name"] == "Invocations")
    forged = copy.deepcopy(stack)
    forged["resource"]["aws_cloudwatch_metric_alarm"][key] |= {"namespace": METRIC_NAMESPACE, "metric_name": HEARTBEAT}
    problems, fn = liveness_problems(forged), "seed-replication-monitor"
    assert f"{fn}-not-reporting reads S3TablesReplicaKit" in problems
    assert f"{fn}-not-reporting reads the heartbeat" in problems
    assert f"{fn}: no alarm when it is not invoked (missing data breaching)" in problems
    gone = copy.deepcopy(stack)
    del gone["resource"]["aws_cloudwatch_metric_alarm"][key]
    assert liveness_problems(gone) == [f"{fn}: no alarm when it is not invoked (missing data breaching)"]


@pytest.mark.parametrize(("hours", "window"), [(1, (3600, 2)), (24, (86400, 2)), (84, (86400, 7)), (168, (86400, 7))])
def test_a_job_alarm_spans_two_intervals_within_cloudwatchs_seven_days(hours: int, window: tuple[int, int]) -> None:
    """Two intervals, or CloudWatch's 7-day maximum for a backup rarer than every 84 hours (at most 168)."""
    assert alarm_window(hours) == window and window[0] * window[1] <= 7 * 86400
