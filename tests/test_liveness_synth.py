"""Liveness alarms of every example's synthesized stacks: every scheduled Lambda function of the kit has its
"is it running and succeeding" alarms, and they read metrics AWS publishes (`AWS/...`), never the kit's namespace, in
which anyone who may write a log event can create a datum (CloudWatch's embedded metric format). Liveness alarms are
found by their record (`infra/constructs/alerts.py`: the `KitSignal` tag every `liveness_alarms` alarm carries), not
by their names."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3tables_kit.infra.constructs.alerts import LIVENESS, SIGNAL_TAG
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
