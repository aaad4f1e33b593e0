"""The replication monitor (`[assurance]`) over real HTTP: moto's CloudWatch + the kit's S3 Tables extension.

The handler's status logic is `s3tables_kit.jobs.ops.status` (tested in test_ops_status.py); these tests check what the
monitor makes of it: the documented metric names and dimensions, the failure metric driven by an injected failed
replication, the cardinality cap, throttled PutMetricData, thousands of tables, and the Lambda entry point.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops.status import DestinationStatus, StatusReport
from s3tables_kit.topology.contract import POINT_AGE
from tests.ops_fixtures import SRC_REGION, OpsEnv, World, deploy

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
KIT = "seed"


def _settings(world: World, **kw: Any) -> mon.MonitorSettings:
    return world.monitor_settings(
        **({"max_lag": timedelta(minutes=30), "max_table_metrics": 50, "concurrency": 8} | kw)
    )


def _cw(world: World) -> Any:
    return world.clients.client("cloudwatch", SRC_REGION)


def _series(world: World) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    cw = _cw(world)
    out = set()
    token = None
    while True:
        page = cw.list_metrics(Namespace=mon.METRIC_NAMESPACE, **({"NextToken": token} if token else {}))
        for m in page["Metrics"]:
            out.add((m["MetricName"], tuple(sorted((d["Name"], d["Value"]) for d in m["Dimensions"]))))
        token = page.get("NextToken")
        if not token:
            return out


def _max(world: World, metric: str, **dims: str) -> float | None:
    return max(world.metric_maxima(metric, NOW - timedelta(hours=1), NOW + timedelta(hours=1), **dims), default=None)


# ----------------------------------------------------------------------------------------------------
# Pure: report -> metric data
# ----------------------------------------------------------------------------------------------------


def _row(table: str, status: str, lag: float | None, dest: str | None = "arn:dest") -> DestinationStatus:
    return DestinationStatus("arn:src", table, f"arn:src/table/{table}", dest, status, lag_seconds=lag)


def test_metric_data_aggregates_beyond_the_cap() -> None:
    report = StatusReport(generated_at=NOW.isoformat(), max_lag_seconds=None, tables=5)
    report.rows = [
        _row("ns.a", "completed", 0.0),
        _row("ns.b", "failed", 50.0),
        _row("ns.c", "pending", 700.0),
        _row("ns.d", "failed", 90.0),
        _row("ns.e", "pending", 30.0),
        _row("ns.f", "unconfigured", None, dest=None),  # table-level mode, not replicated: no series
    ]
    data = mon.metric_data(report, kit=KIT, max_table_metrics=2, destinations=["arn:dest", "arn:idle"])
    by = {(d["MetricName"], tuple(x["Value"] for x in d["Dimensions"])): d["Value"] for d in data}
    # per destination: every table
    assert by[(mon.LAG, (KIT, "arn:dest"))] == 700.0
    assert by[(mon.FAILED_METRIC, (KIT, "arn:dest"))] == 2
    assert by[(mon.BEHIND, (KIT, "arn:dest"))] == 4
    assert by[(mon.TABLES, (KIT, "arn:dest"))] == 5
    # the cap: ns.a and ns.b (name order) get their own series, the other three one `_other` series
    tables = {k[1][2] for k in by if len(k[1]) == 3}
    assert tables == {"ns.a", "ns.b", mon.OTHER_TABLES}
    assert by[(mon.FAILED_METRIC, (KIT, "arn:dest", "ns.b"))] == 1
    assert by[(mon.LAG, (KIT, "arn:dest", mon.OTHER_TABLES))] == 700.0
    assert by[(mon.FAILED_METRIC, (KIT, "arn:dest", mon.OTHER_TABLES))] == 1
    assert by[(mon.BEHIND, (KIT, "arn:dest", mon.OTHER_TABLES))] == 3
    # a configured destination without tables still reports zeros (its alarms see data)
    assert by[(mon.FAILED_METRIC, (KIT, "arn:idle"))] == 0 and by[(POINT_AGE, (KIT, "arn:idle"))] == 0
    # no last replicated update on the pending and failed rows: no point, but its age is the oldest lag
    assert by[(POINT_AGE, (KIT, "arn:dest"))] == 700.0
    assert by[(mon.HEARTBEAT, (KIT,))] == 1 and by[(mon.ERRORS, (KIT,))] == 0


def test_no_heartbeat_when_a_status_could_not_be_read() -> None:
    report = StatusReport(generated_at=NOW.isoformat(), max_lag_seconds=None, tables=2)
    report.rows = [_row("ns.a", "completed", 0.0), _row("ns.b", "error", None, dest=None)]
    names = {d["MetricName"]: d["Value"] for d in mon.metric_data(report, kit=KIT, max_table_metrics=5)}
    assert names[mon.ERRORS] == 1 and mon.HEARTBEAT not in names
    assert POINT_AGE not in names  # a point with an unreadable table has no known age: no datum


def test_settings_from_the_lambda_environment() -> None:
    s = mon.MonitorSettings.from_env(
        {
            mon.ENV_KIT: "seed",
            mon.ENV_SOURCES: "arn:a",
            mon.ENV_DESTINATIONS: "arn:b,arn:c",
            mon.ENV_MAX_LAG: "1800",
            mon.ENV_CAP: "7",
            mon.ENV_CONCURRENCY: "4",
        }
    )
    assert s.source_bucket_arns == ("arn:a",) and s.destination_bucket_arns == ("arn:b", "arn:c")
    assert s.max_lag == timedelta(minutes=30) and s.max_table_metrics == 7 and s.concurrency == 4


# ----------------------------------------------------------------------------------------------------
# Against the moto server
# ----------------------------------------------------------------------------------------------------


def test_publishes_documented_metrics_and_a_failed_replication_drives_the_failure_metric(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    result = mon.run_monitor(world.clients, _settings(world), region=SRC_REGION, now=NOW)
    assert result.requests == 1 and result.errors == 0
    assert _max(world, mon.FAILED_METRIC, Kit=KIT, Destination=world.replica_arn) == 0
    assert _max(world, mon.HEARTBEAT, Kit=KIT) == 1

    msg = "Access denied when writing to the destination table bucket (KMS key policy)"
    ops_env.control.set_status(world.tables["analytics.customers"], world.replica_arn, "failed", failure_message=msg)
    later = NOW + timedelta(minutes=5)
    mon.run_monitor(world.clients, _settings(world), region=SRC_REGION, now=later)
    assert _max(world, mon.FAILED_METRIC, Kit=KIT, Destination=world.replica_arn) == 1
    assert _max(world, mon.FAILED_METRIC, Kit=KIT, Destination=world.replica_arn, Table="analytics.customers") == 1
    assert _max(world, mon.FAILED_METRIC, Kit=KIT, Destination=world.replica_arn, Table="analytics.orders") == 0
    assert _max(world, mon.BEHIND, Kit=KIT, Destination=world.replica_arn) == 1
    # replicated once before it failed: behind, not backfilling
    assert _max(world, mon.BACKFILLING, Kit=KIT, Destination=world.replica_arn) == 0

    series = _series(world)
    dest = (("Destination", world.replica_arn), ("Kit", KIT))
    for metric in (mon.LAG, mon.FAILED_METRIC, mon.BEHIND, mon.DETACHED_METRIC, mon.TABLES, mon.BACKFILLING):
        assert (metric, dest) in series
    for t in ("analytics.orders", "analytics.customers", "analytics.events"):
        for metric in (mon.LAG, mon.FAILED_METRIC, mon.BEHIND, mon.DETACHED_METRIC):
            assert (metric, (("Destination", world.replica_arn), ("Kit", KIT), ("Table", t))) in series
    assert (mon.HEARTBEAT, (("Kit", KIT),)) in series and (mon.ERRORS, (("Kit", KIT),)) in series
    assert (POINT_AGE, dest) in series  # the replication point's age, per destination
    assert len(series) == 7 + 3 * 4 + 2  # nothing else: the documented set


def test_lag_metric_is_the_age_of_the_oldest_unreplicated_commit(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.events", NOW - timedelta(hours=6))
    world.hold_back("analytics.events", NOW)
    mon.run_monitor(world.clients, _settings(world), region=SRC_REGION, now=NOW)
    lag = _max(world, mon.LAG, Kit=KIT, Destination=world.replica_arn)
    assert lag == pytest.approx(7200, abs=2)
    assert _max(world, mon.LAG, Kit=KIT, Destination=world.replica_arn, Table="analytics.orders") == 0
    # the replication point is held back by that table: its age is the lacking commit's (metadata times)
    assert _max(world, POINT_AGE, Kit=KIT, Destination=world.replica_arn) == pytest.approx(7200, abs=2)


def test_a_commit_dated_in_the_future_is_a_finding_that_alarms(ops_env: OpsEnv) -> None:
    """A pending commit dated a day ahead: its lag counts from the service's modifiedAt, and the table counts in
    `StatusReadErrors` (the `-replication-status-unreadable` alarm's metric), named in the run's log line."""
    world = deploy(ops_env, replicate=False)
    ops_env.control.replicate(source_bucket_arn=world.source_arn, at=NOW - timedelta(hours=3))
    world.commit("analytics.events", NOW + timedelta(days=1))
    ops_env.control.set_status(world.tables["analytics.events"], world.replica_arn, "pending")
    result = mon.run_monitor(world.clients, _settings(world), region=SRC_REGION, now=NOW)
    assert (
        result.future_dated == ["analytics.events"] and result.to_json()["future_dated_commits"] == result.future_dated
    )
    assert _max(world, mon.ERRORS, Kit=KIT) == 1 and _max(world, mon.HEARTBEAT, Kit=KIT) is None
    assert result.errors == 0  # every table was read: the run itself succeeds
    mon.fail_loud(result)


def test_cardinality_cap_bounds_the_series(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, tables=("orders",))
    ops_env.control.seed(world.source_arn, {"bulk": [f"t{i:03d}" for i in range(120)]}, commit_ms=None)
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    cap = 10
    result = mon.run_monitor(world.clients, _settings(world, max_table_metrics=cap), region=SRC_REGION, now=NOW)
    assert result.tables == 121
    series = _series(world)
    tables = {dict(dims).get("Table") for _, dims in series} - {None}
    assert len(tables) == cap + 1 and mon.OTHER_TABLES in tables
    assert tables - {mon.OTHER_TABLES} == {"analytics.orders", *(f"bulk.t{i:03d}" for i in range(cap - 1))}
    assert len(series) == 7 + (cap + 1) * 4 + 2
    # The per-destination series still count every table.
    hour = timedelta(hours=1)
    assert world.metric_maxima(mon.TABLES, NOW - hour, NOW + hour, Kit=KIT, Destination=world.replica_arn) == [121]


def test_over_a_thousand_tables_with_throttling(ops_env: OpsEnv) -> None:
    # 1,200 tables: two ListTables pages, twelve times the metric cap (the scale itself is `make bench`'s)
    world = deploy(ops_env, tables=("orders",))
    commit_ms = int((NOW - timedelta(hours=1)).timestamp() * 1000)
    ops_env.control.seed(world.source_arn, {"bulk": [f"t{i:04d}" for i in range(1199)]}, commit_ms=commit_ms)
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    failed = "bulk.t1100"
    failed_arn = next(
        t["tableARN"]
        for t in world.src().list_tables(tableBucketARN=world.source_arn, namespace="bulk", prefix="t1100")["tables"]
    )
    ops_env.control.set_status(failed_arn, world.replica_arn, "failed", failure_message="injected")
    ops_env.control.inject_faults("GetTableReplicationStatus", 20)
    # CloudWatch's throttling error (query-compatible code `Throttling`, HTTP 400) on PutMetricData
    ops_env.control.inject_faults("PutMetricData", 3, code="Throttling", status=400)

    result = mon.run_monitor(
        world.clients, _settings(world, max_table_metrics=100, concurrency=16), region=SRC_REGION, now=NOW
    )
    assert result.tables == 1200 and result.errors == 0
    assert result.counts == {"completed": 1199, "failed": 1}
    # 6 per destination (5 + the point age) + 101 table series x 4 + errors + heartbeat, in batches of 500
    assert len(result.data) == 7 + 101 * 4 + 2 and result.requests == 1
    served = {f["operation"]: f["served"] for f in ops_env.control.stats()["faults"]}
    assert served == {"GetTableReplicationStatus": 20, "PutMetricData": 3}
    assert _max(world, mon.FAILED_METRIC, Kit=KIT, Destination=world.replica_arn) == 1
    # bulk.t1100 is beyond the cap (100 tables in name order): its failure shows in `_other`
    assert failed not in {dict(d).get("Table") for _, d in _series(world)}
    assert _max(world, mon.FAILED_METRIC, Kit=KIT, Destination=world.replica_arn, Table=mon.OTHER_TABLES) == 1
    assert _max(world, mon.HEARTBEAT, Kit=KIT) == 1


def test_publish_batches_and_retries_throttling(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, tables=("orders",))
    data = [
        mon._datum(mon.LAG, float(i), "Seconds", mon._dims(KIT, world.replica_arn, f"ns.t{i:04d}"), NOW)
        for i in range(1200)
    ]
    ops_env.control.inject_faults("PutMetricData", 2, code="Throttling", status=400)
    assert mon.publish(_cw(world), mon.METRIC_NAMESPACE, data) == 3
    assert len(_series(world)) == 1200


def test_an_unreadable_table_is_a_finding_and_fails_the_run(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    arn = world.tables["analytics.events"]  # a Deny table policy naming the monitor, as the service answers it
    ops_env.control.inject_faults(
        "GetTableReplicationStatus", 1000, code="AccessDeniedException", status=403, match=arn
    )
    result = mon.run_monitor(ops_env.clients(max_attempts=1), _settings(world), region=SRC_REGION, now=NOW)
    assert result.errors == 1
    assert _max(world, mon.ERRORS, Kit=KIT) == 1  # the `-replication-status-unreadable` alarm's metric
    assert _max(world, mon.HEARTBEAT, Kit=KIT) is None
    assert _max(world, mon.LAG, Kit=KIT, Destination=world.replica_arn) is not None  # what it read is published
    with pytest.raises(mon.MonitorRunFailed, match="1 table"):  # then the run fails: AWS/Lambda Errors counts it
        mon.fail_loud(result)
    mon.fail_loud(replace(result, errors=0))  # every table read: the run succeeds


def test_lambda_handler_reads_its_environment(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    world = deploy(ops_env)
    monkeypatch.setenv("AWS_ENDPOINT_URL", ops_env.endpoint)
    monkeypatch.setenv("AWS_REGION", SRC_REGION)
    monkeypatch.setenv(mon.ENV_KIT, KIT)
    monkeypatch.setenv(mon.ENV_SOURCES, world.source_arn)
    monkeypatch.setenv(mon.ENV_DESTINATIONS, world.replica_arn)
    monkeypatch.setenv(mon.ENV_MAX_LAG, "1800")
    monkeypatch.setenv(mon.ENV_CAP, "2")
    summary = mon.handler({}, None)
    assert summary["tables"] == 3 and summary["put_metric_data_requests"] == 1
    assert summary["series"] == 7 + 3 * 4 + 2  # two tables + `_other`
    assert _max(world, mon.HEARTBEAT, Kit=KIT) == 1


def test_cli_dry_run_publishes_nothing(ops_env: OpsEnv, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    world = deploy(ops_env)
    out = world.write_outputs(tmp_path)
    assert mon.main(["--outputs", str(out), "--endpoint-url", ops_env.endpoint, "--dry-run"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    # + ReplicationConfigurationDrift, compared with the outputs' declared replication (no --config: no policies),
    # and the replica tables' layers against the outputs' configured retention (ReplicaLayersMissing,
    # RetentionBelowConfigured): nothing is hardened yet, so every replica has one layer
    assert doc["tables"] == 3 and doc["put_metric_data_requests"] == 0 and doc["series"] == 7 + 3 * 4 + 2 + 1 + 2
    assert (doc["drift"]["replication_configuration"], doc["drift"]["replica_bucket_policies"]) == ([], {})
    layers = doc["drift"]["replica_layers"]["destinations"][world.replica_arn]
    assert layers["sampled"] == 3 and len(layers["table_policy_missing"]) == 3
    assert _series(world) == set()
