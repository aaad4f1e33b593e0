"""CloudWatch and Lambda as the detection drill plays them on the stand-in (`harness/drills/detection.py`).

- `AlarmRule`: one alarm as the synthesized stack defines it (namespace, metric, dimensions, statistic, threshold,
  comparison, evaluation periods, datapoints to alarm, missing-data treatment), evaluated over the drill's runs with
  one run of the scheduled functions standing for one period (every kit alarm's period is its function's interval).
- `Metrics`: what an alarm reads. `AWS/Lambda` only from what the Lambda player recorded (on AWS only Lambda writes
  there); every other namespace from the stand-in's CloudWatch (PutMetricData) and from the log events in the
  embedded metric format of every log group (CloudWatch creates metrics from those for anyone who may write a log
  event), so a forged datum reaches exactly the alarms it would reach on AWS.
- `LambdaPlayer`: invokes each scheduled function's handler with the environment the stack gives it, and records
  the invocation, and an error when the handler raises, in `AWS/Lambda`; the handler never writes those itself.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

LAMBDA_NAMESPACE = "AWS/Lambda"
Window = tuple[datetime, datetime]
Part = tuple[float, float, float, float]  # (Sum, Maximum, Minimum, SampleCount) of some data
Stacks = Mapping[str, Mapping[str, Any]]  # stack id -> the parsed cdk.tf.json

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": lambda v, t: v > t,
    "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
    "LessThanThreshold": lambda v, t: v < t,
    "LessThanOrEqualToThreshold": lambda v, t: v <= t,
}


@dataclass(frozen=True)
class AlarmRule:
    name: str
    region: str
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    period: int
    statistic: str
    threshold: float
    comparison: str
    periods: int
    datapoints: int
    missing: str

    @classmethod
    def of(cls, res: Mapping[str, Any], region: str) -> AlarmRule | None:
        """The rule of one `aws_cloudwatch_metric_alarm`; None for an alarm on metric math (`math_alarms`)."""
        if "metric_name" not in res:
            return None
        periods = int(res["evaluation_periods"])
        return cls(
            name=str(res["alarm_name"]),
            region=region,
            namespace=str(res["namespace"]),
            metric=str(res["metric_name"]),
            dimensions=tuple(sorted((res.get("dimensions") or {}).items())),
            period=int(res["period"]),
            statistic=str(res["statistic"]),
            threshold=float(res["threshold"]),
            comparison=str(res["comparison_operator"]),
            periods=periods,
            datapoints=int(res.get("datapoints_to_alarm") or periods),
            missing=str(res.get("treat_missing_data") or "missing"),
        )

    def breaching(self, value: float | None) -> bool:
        if value is None:  # "missing" and "ignore" keep the state: never a breach here
            return self.missing == "breaching"
        return _COMPARE[self.comparison](value, self.threshold)

    def fires(self, values: Sequence[float | None]) -> bool:
        """ALARM after these periods' values (oldest first): `datapoints` of the last `periods` breaching."""
        window = values[-self.periods :]
        return len(window) == self.periods and sum(self.breaching(v) for v in window) >= self.datapoints


def stack_region(stack: Mapping[str, Any]) -> str:
    return str(stack["provider"]["aws"][0]["region"])


def alarm_rules(stacks: Stacks) -> list[AlarmRule]:
    """Every metric alarm of the synthesized stacks, by name."""
    rules = []
    for stack in stacks.values():
        for res in stack.get("resource", {}).get("aws_cloudwatch_metric_alarm", {}).values():
            rule = AlarmRule.of(res, stack_region(stack))
            if rule is not None:
                rules.append(rule)
    return sorted(rules, key=lambda r: r.name)


def math_alarms(stacks: Stacks) -> list[str]:
    """The alarms on metric math (the scheduled job runs' liveness, on AWS/Scheduler and AWS/EMRServerless), which
    the drill does not evaluate: it runs no schedule of a job run."""
    return sorted(
        str(res["alarm_name"])
        for stack in stacks.values()
        for res in stack.get("resource", {}).get("aws_cloudwatch_metric_alarm", {}).values()
        if "metric_name" not in res
    )


@dataclass(frozen=True)
class ScheduledFunction:
    name: str
    region: str
    env: Mapping[str, str]


# The package layout's botocore data (the Lambda runtime's /var/task): the harness imports the kit's own.
_PACKAGE_ONLY = ("AWS_DATA_PATH",)


def scheduled_functions(stacks: Stacks) -> list[ScheduledFunction]:
    """Every Lambda function of the synthesized stacks with its environment."""
    out = []
    for stack in stacks.values():
        for fn in stack.get("resource", {}).get("aws_lambda_function", {}).values():
            env = dict((fn.get("environment") or {}).get("variables") or {})
            env = {k: str(v) for k, v in env.items() if k not in _PACKAGE_ONLY}
            out.append(ScheduledFunction(str(fn["function_name"]), stack_region(stack), env))
    return sorted(out, key=lambda f: f.name)


@dataclass
class Metrics:
    """The metrics the drill's alarms read (module docstring)."""

    cloudwatch: Callable[[str], Any]  # Region -> a CloudWatch client of the stand-in
    logs: Callable[[str], Any]  # Region -> a CloudWatch Logs client of the stand-in
    lambda_data: list[tuple[datetime, str, str, float]] = field(default_factory=list)  # (at, function, metric, v)
    _seen: dict[tuple[AlarmRule, Window], float | None] = field(default_factory=dict)  # a past period is final
    _events: dict[tuple[str, Window], list[str]] = field(default_factory=dict)

    def record(self, at: datetime, function: str, metric: str, value: float) -> None:
        self.lambda_data.append((at, function, metric, value))

    def value(self, rule: AlarmRule, window: Window) -> float | None:
        """The rule's statistic of its metric over the window; None: no datum (missing data)."""
        if (rule, window) not in self._seen:
            self._seen[rule, window] = self._value(rule, window)
        return self._seen[rule, window]

    def _value(self, rule: AlarmRule, window: Window) -> float | None:
        start, end = window
        if rule.namespace == LAMBDA_NAMESPACE:
            fn = dict(rule.dimensions).get("FunctionName")
            got = [v for at, f, m, v in self.lambda_data if f == fn and m == rule.metric and start <= at <= end]
            parts = [(v, v, v, 1.0) for v in got]
        else:
            parts = self._put(rule, window) + [(v, v, v, 1.0) for v in self._embedded(rule, window)]
        return statistic(rule.statistic, parts)

    def _put(self, rule: AlarmRule, window: Window) -> list[Part]:
        """What PutMetricData wrote in the window, as (Sum, Maximum, Minimum, SampleCount)."""
        start, end = window
        got = self.cloudwatch(rule.region).get_metric_statistics(
            Namespace=rule.namespace,
            MetricName=rule.metric,
            Dimensions=[{"Name": k, "Value": v} for k, v in rule.dimensions],
            StartTime=start,
            EndTime=end + timedelta(seconds=1),
            Period=60 * 60,
            Statistics=["Sum", "Maximum", "Minimum", "SampleCount"],
        )["Datapoints"]
        return [(p["Sum"], p["Maximum"], p["Minimum"], p["SampleCount"]) for p in got if p["SampleCount"]]

    def _embedded(self, rule: AlarmRule, window: Window) -> Iterator[float]:
        """The values of the rule's metric in log events in the embedded metric format, in any log group."""
        if (rule.region, window) not in self._events:
            self._events[rule.region, window] = self._log_events(rule.region, window)
        for message in self._events[rule.region, window]:
            yield from _emf_values(message, rule)

    def _log_events(self, region: str, window: Window) -> list[str]:
        start, end = (int(t.timestamp() * 1000) for t in window)
        logs, out = self.logs(region), []
        for group in logs.describe_log_groups().get("logGroups", []):
            got = logs.filter_log_events(logGroupName=group["logGroupName"], startTime=start, endTime=end + 1000)
            out += [e["message"] for e in got.get("events", [])]
        return out


def _emf_values(message: str, rule: AlarmRule) -> list[float]:
    try:
        doc = json.loads(message)
        directives = doc["_aws"]["CloudWatchMetrics"]
    except (ValueError, KeyError, TypeError):
        return []
    out = []
    for d in directives:
        if d.get("Namespace") != rule.namespace or rule.namespace.startswith("AWS/"):
            continue  # a reserved namespace is refused, as PutMetricData refuses it
        names = {m.get("Name") for m in d.get("Metrics", [])}
        sets = [tuple(sorted(s)) for s in d.get("Dimensions", [])]
        dims = tuple(sorted(k for k, _ in rule.dimensions))
        values_match = all(str(doc.get(k)) == v for k, v in rule.dimensions)
        if rule.metric in names and dims in sets and values_match:
            value = doc.get(rule.metric)
            out += [float(v) for v in value] if isinstance(value, list) else [float(value)]
    return out


def statistic(name: str, parts: Sequence[Part]) -> float | None:
    """The statistic `name` of partial aggregates; None without any datum."""
    if not parts:
        return None
    total, count = sum(p[0] for p in parts), sum(p[3] for p in parts)
    return {
        "Sum": total,
        "Maximum": max(p[1] for p in parts),
        "Minimum": min(p[2] for p in parts),
        "Average": total / count,
        "SampleCount": count,
    }[name]


@dataclass
class LambdaPlayer:
    """Lambda on the stand-in: runs a scheduled function's handler with its stack's environment (plus `base`: the
    stand-in's endpoint and credentials, and `overrides` per function) and records `Invocations` and `Errors`."""

    functions: Sequence[ScheduledFunction]
    metrics: Metrics
    handler: Callable[[Any, Any], Any]
    base: Mapping[str, str]
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    disabled: set[str] = field(default_factory=set)  # functions whose schedule an attacker disabled
    now: Callable[[], datetime] = field(default=lambda: datetime.now().astimezone())

    def run(self) -> dict[str, str]:
        """One interval: every function whose schedule is enabled, invoked once; each one's outcome."""
        return {fn.name: self.invoke(fn) for fn in self.functions if fn.name not in self.disabled}

    def invoke(self, fn: ScheduledFunction) -> str:
        env = {**fn.env, "AWS_REGION": fn.region, "AWS_DEFAULT_REGION": fn.region, **self.base}
        env |= self.overrides.get(fn.name, {})
        at = self.now()
        self.metrics.record(at, fn.name, "Invocations", 1)
        with environ(env), contextlib.redirect_stdout(io.StringIO()):
            try:
                self.handler({}, None)
            except Exception as exc:  # the run failed: what Lambda counts in Errors
                self.metrics.record(at, fn.name, "Errors", 1)
                return f"failed: {type(exc).__name__}: {str(exc)[:120]}"
        self.metrics.record(at, fn.name, "Errors", 0)
        return "ok"


@contextlib.contextmanager
def environ(env: Mapping[str, str]) -> Iterator[None]:
    """The process environment with `env` added, restored afterwards (the handlers read their settings there)."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
