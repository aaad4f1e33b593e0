"""The replication dashboard (`infra/constructs/dashboard.py`) as synthesized for every example, the estate
included (the shared session synth, tests/synth_fixtures.py): one dashboard per stack that deploys the monitor, and
every metric its widgets show is one the monitor or the rehearsal really publishes. "Really publishes" is derived
from the publishing code, fed the settings the synthesized stacks give it: `s3tables_kit.jobs.ops.monitor.metric_data`
of a status report over every destination of the deployed function's environment (`MonitorSettings.from_env`), and
`s3tables_kit.jobs.rehearse.metric_data` with the `--kit` and `--metrics-region` the deployed rehearsal schedule
passes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from s3tables_kit.jobs import rehearse
from s3tables_kit.jobs.ops import monitor
from s3tables_kit.jobs.ops.status import COMPLETED, DestinationStatus, StatusReport
from s3tables_kit.topology import contract

pytestmark = pytest.mark.synth
Stacks = dict[str, dict[str, Any]]
Series = tuple[str, str, str, tuple[tuple[str, str], ...]]  # (region, namespace, metric, dimensions)
NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _res(stack: dict[str, Any], rtype: str) -> list[dict[str, Any]]:
    return list(stack.get("resource", {}).get(rtype, {}).values())


def _monitors(stack: dict[str, Any]) -> list[dict[str, Any]]:
    """The stack's source-side monitor functions (a replica account's freshness check runs in a mode of its own)."""
    return [f for f in _res(stack, "aws_lambda_function") if contract.ENV_MODE not in f["environment"]["variables"]]


def _region(stack: dict[str, Any]) -> str:
    return str(stack["provider"]["aws"][0]["region"])


def monitor_series(stack: dict[str, Any]) -> set[Series]:
    """What the stack's monitor function publishes: `metric_data` run with its deployed environment over a report
    holding a table for each of its destinations."""
    (fn,) = _monitors(stack)
    env = fn["environment"]["variables"]
    settings = monitor.MonitorSettings.from_env(env)
    report = StatusReport(generated_at=NOW.isoformat(), max_lag_seconds=None, tables=1)
    src = settings.source_bucket_arns[0]
    report.rows = [
        DestinationStatus(src, "ns.t", f"{src}/table/t", dest, COMPLETED, lag_seconds=0.0)
        for dest in settings.destination_bucket_arns
    ]
    data = monitor.metric_data(
        report,
        kit=settings.kit,
        max_table_metrics=settings.max_table_metrics,
        destinations=settings.destination_bucket_arns,
    )
    return {
        (_region(stack), settings.namespace, d["MetricName"], tuple((x["Name"], x["Value"]) for x in d["Dimensions"]))
        for d in data
    }


def rehearsal_series(synth: Stacks) -> set[Series]:
    out: set[Series] = set()
    for stack in synth.values():
        for sched in _res(stack, "aws_scheduler_schedule"):
            if "rehearsal" not in sched["name"]:
                continue
            args = json.loads(sched["target"]["input"])["jobDriver"]["sparkSubmit"]["entryPointArguments"]
            kit, region = args[args.index("--kit") + 1], args[args.index("--metrics-region") + 1]
            data = rehearse.metric_data(kit, succeeded=True, seconds=1.0, tables=1, at=NOW)
            out |= {
                (
                    region,
                    contract.METRIC_NAMESPACE,
                    d["MetricName"],
                    tuple((x["Name"], x["Value"]) for x in d["Dimensions"]),
                )
                for d in data
            }
    return out


def widget_series(widget: dict[str, Any]) -> list[Series]:
    props = widget["properties"]
    out = []
    for line in props["metrics"]:
        ns, name, *rest = line
        dims = rest[:-1] if rest and isinstance(rest[-1], dict) else rest
        out.append((props["region"], ns, name, tuple(zip(dims[::2], dims[1::2], strict=True))))
    return out


def dashboards(synth: Stacks) -> dict[str, dict[str, Any]]:
    return {
        name: json.loads(d["dashboard_body"])
        for name, stack in synth.items()
        for d in _res(stack, "aws_cloudwatch_dashboard")
    }


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate"])
def test_every_widget_metric_is_one_the_monitor_or_the_rehearsal_publishes(
    synthesized: dict[str, Stacks], example: str
) -> None:
    synth = synthesized[example]
    with_monitor = {n for n, st in synth.items() if _monitors(st)}
    boards = dashboards(synth)
    assert set(boards) == with_monitor and with_monitor  # one dashboard per stack that deploys the monitor
    rehearsal = rehearsal_series(synth)
    for name, body in boards.items():
        published = monitor_series(synth[name]) | rehearsal
        metrics = [w for w in body["widgets"] if w["type"] == "metric"]
        shown = [s for w in metrics for s in widget_series(w)]
        assert shown and set(shown) <= published, set(shown) - published
        # what a person looks at first: per destination the point's age, lag, failures and detached replicas;
        # the rehearsal's RTO and outcome
        dests = {dict(s[3]).get("Destination") for s in monitor_series(synth[name])} - {None}
        for metric in (contract.POINT_AGE, contract.LAG, contract.FAILED_METRIC, contract.DETACHED_METRIC):
            assert {dict(s[3]).get("Destination") for s in shown if s[2] == metric} == dests, metric
        assert {s[2] for s in shown if s in rehearsal} == {contract.REHEARSAL_RTO, contract.REHEARSAL_SUCCEEDED}
        # the alarm widget shows the state of every alarm of the stack (and the rehearsal's, same account)
        (alarms,) = [w["properties"]["alarms"] for w in body["widgets"] if w["type"] == "alarm"]
        stack_alarms = {a["alarm_name"]: a for a in _res(synth[name], "aws_cloudwatch_metric_alarm")}
        shown_alarms = {a.rsplit(":alarm:", 1)[1] for a in alarms}
        assert set(stack_alarms) <= shown_alarms
        assert all(a.endswith("-recovery-rehearsal-not-succeeding") for a in shown_alarms - set(stack_alarms))
        # the point's widget marks the threshold its alarms fire at
        (point,) = [w for w in metrics if contract.POINT_AGE in w["properties"]["metrics"][0]]
        thresholds = {a["threshold"] for a in stack_alarms.values() if a["metric_name"] == contract.POINT_AGE}
        assert [h["value"] for h in point["properties"]["annotations"]["horizontal"]] == sorted(thresholds)


def test_the_point_widget_shows_each_configured_group_as_the_monitor_publishes_it() -> None:
    """With `[assurance] replication_point_groups`, the point's widget has a line per replica and group, and each is
    a series the monitor publishes with the groups its package declares (`kit_declared.json`, the construct's
    `declared_document`), for a report holding a table of every group (pure: no synth)."""
    from s3tables_kit.infra import packaging
    from s3tables_kit.infra.constructs.dashboard import dashboard_body
    from s3tables_kit.infra.constructs.monitor import declared_document
    from s3tables_kit.jobs.ops.monitor_drift import Declared
    from s3tables_kit.topology.config import parse_config
    from tests.ops_fixtures import config_dict

    doc = config_dict()
    doc["assurance"] = {
        "replication_point_groups": [
            {"name": "orders", "tables": ["analytics.orders"]},
            {"name": "analytics", "tables": ["analytics.*"]},
        ]
    }
    cfg = parse_config(doc)
    declared = Declared.from_json(json.loads(packaging.declared_bytes(declared_document(cfg, cfg.sources[0], {}))))
    assert declared.groups == {"orders": ("analytics.orders",), "analytics": ("analytics.*",)}
    body = dashboard_body(cfg, cfg.sources[0], alarm_arns=[], rehearsal=None)
    (point,) = [
        w for w in body["widgets"] if w["type"] == "metric" and contract.POINT_AGE in w["properties"]["metrics"][0]
    ]
    shown = widget_series(point)
    dests = [r.bucket_arn for r in cfg.replicas]
    report = StatusReport(generated_at=NOW.isoformat(), max_lag_seconds=None, tables=2)
    src = cfg.sources[0].bucket_arn
    report.rows = [
        DestinationStatus(src, t, f"{src}/table/{t}", d, COMPLETED, lag_seconds=0.0)
        for d in dests
        for t in ("analytics.orders", "analytics.events")
    ]
    data = monitor.metric_data(
        report, kit=cfg.name_prefix_of(cfg.sources[0]), max_table_metrics=50, destinations=dests, groups=declared.groups
    )
    region = cfg.sources[0].region
    published = {
        (region, contract.METRIC_NAMESPACE, d["MetricName"], tuple((x["Name"], x["Value"]) for x in d["Dimensions"]))
        for d in data
    }
    assert set(shown) <= published, set(shown) - published
    assert sorted(dict(s[3]).get("Group", "*") for s in shown) == sorted(["*", "orders", "analytics"] * len(dests))
