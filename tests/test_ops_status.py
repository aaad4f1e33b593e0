"""`s3tables_kit.jobs.ops.status` over real HTTP (moto + emulator/): healthy, pending, failed, lagging, throttled,
3,000."""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta

import pytest

from s3tables_kit.jobs.kernel.commits import compute_lag
from s3tables_kit.jobs.kernel.render import parse_duration
from s3tables_kit.jobs.ops import status as st
from s3tables_kit.jobs.ops.status_metadata import recovery_window
from tests.ops_fixtures import DST_REGION, OpsEnv, deploy, ms

NOW = dt.datetime.now(dt.UTC)


def _rows(report: st.StatusReport, table: str) -> list[st.DestinationStatus]:
    return [r for r in report.rows if r.table == table]


def _run_cli(world, tmp_path, capsys, *extra: str) -> tuple[int, str]:
    out = world.write_outputs(tmp_path)
    code = st.main(["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--quiet", *extra])
    return code, capsys.readouterr().out


def test_parse_duration() -> None:
    assert parse_duration("30m") == timedelta(minutes=30)
    assert parse_duration("2h") == timedelta(hours=2)
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("1d") == timedelta(days=1)
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_compute_lag_is_age_of_oldest_unreplicated_commit() -> None:
    commits = [NOW - timedelta(hours=5), NOW - timedelta(hours=2), NOW - timedelta(minutes=10)]
    assert compute_lag(commits, NOW - timedelta(hours=3), NOW) == pytest.approx(7200)
    assert compute_lag(commits, NOW - timedelta(minutes=5), NOW) == 0
    assert compute_lag(commits, None, NOW) == pytest.approx(5 * 3600)


def test_healthy(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env)
    report = st.collect_status(world.clients, [world.source_arn], max_lag=timedelta(minutes=30), show_progress=False)
    assert report.tables == 3
    assert {r.status for r in report.rows} == {"completed"}
    assert all(r.lag_seconds == 0 and r.destination_table_arn and r.last_replicated_at for r in report.rows)
    assert report.exit_code == 0
    # a streaming writer's rows, accepted and not yet committed: shown outside the replicas' recovery point
    ops_env.control.putrows(commitDelayS=600)
    (orders,) = ops_env.control.seed(world.source_arn, {"analytics": ["orders"]}, commit_ms=ms(NOW))  # a schema
    world.src().put_rows(tableArn=orders, payloadFormat="JSON", payload=b'{"id": 1}\n{"id": 2}\n')
    code, out = _run_cli(world, tmp_path, capsys, "--max-lag", "30m", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["counts"] == {"completed": 3} and doc["failed"] == 0 and doc["lagging"] == 0
    assert doc["buffered_rows"] == 2
    assert {d["table"]: d["buffered_rows"] for d in doc["destinations"]} == {
        "analytics.orders": 2,
        "analytics.customers": None,
        "analytics.events": None,
    }
    code, out = _run_cli(world, tmp_path, capsys)
    assert code == 0 and "streaming: ~2 row(s) accepted on 1 table(s) not yet committed: outside every replica" in out


def test_upper_case_status_is_understood(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    arn = world.tables["analytics.orders"]
    ops_env.control.set_status(arn, world.replica_arn, "FAILED", failure_message="boom")
    report = st.collect_status(world.clients, [world.source_arn], show_progress=False)
    assert _rows(report, "analytics.orders")[0].status == "failed"


def test_pending_within_max_lag(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.orders", NOW - timedelta(hours=4))
    ops_env.control.replicate(source_bucket_arn=world.source_arn, at=NOW - timedelta(hours=3))
    world.commit("analytics.orders", NOW - timedelta(minutes=5))
    ops_env.control.set_status(world.tables["analytics.orders"], world.replica_arn, "pending")
    report = st.collect_status(
        world.clients, [world.source_arn], now=NOW, max_lag=timedelta(minutes=30), show_progress=False
    )
    (row,) = _rows(report, "analytics.orders")
    assert row.status == "pending"
    assert row.lag_seconds == pytest.approx(300, abs=2)
    assert row.lag_source == "metadata"
    assert not row.lagging and report.exit_code == 0
    code, out = _run_cli(world, tmp_path, capsys, "--max-lag", "30m")
    assert code == 0 and "PENDING" in out


def test_failed_with_message(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env)
    msg = "Access denied when writing to the destination table bucket (KMS key policy)"
    ops_env.control.set_status(world.tables["analytics.customers"], world.replica_arn, "failed", failure_message=msg)
    report = st.collect_status(world.clients, [world.source_arn], max_lag=timedelta(hours=24), show_progress=False)
    assert [r.table for r in report.failed] == ["analytics.customers"]
    assert report.failed[0].failure_message == msg
    assert report.exit_code == 1
    code, out = _run_cli(world, tmp_path, capsys, "--max-lag", "24h")
    assert code == 1
    assert "FAILED" in out and "Access denied" in out
    # Without --max-lag a failure still fails the run.
    code, _ = _run_cli(world, tmp_path, capsys)
    assert code == 1


def test_lagging(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.events", NOW - timedelta(hours=6))
    ops_env.control.replicate(source_bucket_arn=world.source_arn, at=NOW - timedelta(hours=3))
    world.commit("analytics.events", NOW - timedelta(hours=2))  # not replicated since
    world.commit("analytics.events", NOW - timedelta(minutes=1))
    ops_env.control.set_status(world.tables["analytics.events"], world.replica_arn, "pending")
    report = st.collect_status(
        world.clients, [world.source_arn], now=NOW, max_lag=timedelta(minutes=30), show_progress=False
    )
    (row,) = _rows(report, "analytics.events")
    assert row.lag_seconds == pytest.approx(7200, abs=2)  # the oldest commit the replica lacks, not the newest
    assert row.lagging and report.exit_code == 1
    assert [r.table for r in report.lagging] == ["analytics.events"]
    code, out = _run_cli(world, tmp_path, capsys, "--max-lag", "30m", "--problems-only")
    assert code == 1 and "analytics.events" in out and "LAGGING" in out and "analytics.orders" not in out
    code, _ = _run_cli(world, tmp_path, capsys, "--max-lag", "3h")
    assert code == 0


def test_never_replicated_counts_from_first_commit(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.orders", NOW - timedelta(hours=1))
    report = st.collect_status(
        world.clients, [world.source_arn], now=NOW, max_lag=timedelta(minutes=30), show_progress=False
    )
    (row,) = _rows(report, "analytics.orders")
    assert row.status == "pending" and row.last_replicated_at is None
    assert row.lag_seconds == pytest.approx(3600, abs=2) and row.lagging
    # Tables without any commit have nothing to replicate.
    assert _rows(report, "analytics.customers")[0].lag_seconds == 0


def test_tables_mode_unlisted_tables_do_not_fail(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, mode="tables")
    report = st.collect_status(world.clients, [world.source_arn], max_lag=timedelta(minutes=30), show_progress=False)
    assert _rows(report, "analytics.orders")[0].status == "completed"
    assert _rows(report, "analytics.customers")[0].status == "unconfigured"
    assert report.exit_code == 0


@pytest.mark.parametrize("code", ["TooManyRequestsException", "ThrottlingException"])
def test_throttling_is_retried(ops_env: OpsEnv, code: str) -> None:
    world = deploy(ops_env)
    ops_env.control.inject_faults("ListTables", 2, code=code)
    ops_env.control.inject_faults("GetTableReplicationStatus", 6, code=code)
    report = st.collect_status(world.clients, [world.source_arn], concurrency=4, show_progress=False)
    assert report.tables == 3 and {r.status for r in report.rows} == {"completed"}
    served = {f["operation"]: f["served"] for f in ops_env.control.stats()["faults"]}
    assert served == {"ListTables": 2, "GetTableReplicationStatus": 6}


def test_throttling_injection_is_real(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control for the test above: without retries the same injection makes the run unreadable."""
    world = deploy(ops_env)
    monkeypatch.setattr(st, "call", lambda fn, *a, **kw: fn(*a, **kw))
    monkeypatch.setattr(st, "SECOND_PASSES", 0)  # and no second pass
    ops_env.control.inject_faults("GetTableReplicationStatus", 1)
    report = st.collect_status(ops_env.clients(max_attempts=1), [world.source_arn], concurrency=1, show_progress=False)
    assert len(report.errors) == 1 and "TooManyRequestsException" in (report.errors[0].failure_message or "")
    assert report.exit_code == 2


def test_three_thousand_tables(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, tables=("orders",))
    src = world.src()
    second = src.create_table_bucket(name="demo-source-two")["arn"]
    conf = {
        "role": world.cfg.replication_role_arn_of(world.cfg.sources[0]),
        "rules": [{"destinations": [{"destinationTableBucketARN": world.replica_arn}]}],
    }
    src.put_table_bucket_replication(tableBucketARN=second, configuration=conf)
    commit_ms = int((NOW - timedelta(hours=1)).timestamp() * 1000)
    for bucket in (world.source_arn, second):
        names = [f"t{i:04d}" for i in range(1500 if bucket == second else 1499)]
        ops_env.control.seed(bucket, {"bulk": names}, commit_ms=commit_ms)
        ops_env.control.replicate(source_bucket_arn=bucket)
    arns = [t["tableARN"] for t in src.list_tables(tableBucketARN=second, namespace="bulk", maxTables=3)["tables"]]
    for arn in arns:
        ops_env.control.set_status(arn, world.replica_arn, "failed", failure_message="injected")
    ops_env.control.inject_faults("GetTableReplicationStatus", 20)
    ops_env.control.set_latency("GetTableReplicationStatus", 0.01)  # 30 s if the calls were made one at a time

    code, out = _run_cli(
        world,
        tmp_path,
        capsys,
        "--source-bucket-arn",
        world.source_arn,
        "--source-bucket-arn",
        second,
        "--max-lag",
        "30m",
        "--json",
        "--concurrency",
        "16",
    )
    doc = json.loads(out)
    assert doc["tables"] == 3000
    assert doc["counts"] == {"completed": 2997, "failed": 3}
    assert sorted(r["source_table_arn"] for r in doc["destinations"] if r["status"] == "failed") == sorted(arns)
    assert code == 1
    stats = ops_env.control.stats()
    assert stats["calls"]["ListTables"] >= 4 + 1  # 1,499 and 1,500 tables: two pages per bucket (+ the probe above)
    assert 4 <= stats["max_in_flight"] <= 16 + 2  # calls overlapped, bounded by --concurrency (+ control calls)
    assert DST_REGION in world.replica_arn


# ----------------------------------------------------------------------------------------------------
# Recovery windows
# ----------------------------------------------------------------------------------------------------


def _meta(*ages: timedelta) -> dict:
    snaps = [{"snapshot-id": i, "timestamp-ms": int((NOW - a).timestamp() * 1000)} for i, a in enumerate(ages)]
    return {"snapshots": snaps}


def test_recovery_window_is_oldest_retained_snapshot_to_last_commit() -> None:
    w = recovery_window(
        _meta(timedelta(days=80), timedelta(days=3), timedelta(hours=2)),
        NOW,
        promised=timedelta(days=90),
        created_at=NOW - timedelta(days=200),
    )
    assert w.snapshots == 3
    assert abs((dt.datetime.fromisoformat(w.start or "") - (NOW - timedelta(days=80))).total_seconds()) < 0.01
    assert w.reaches_back_seconds == pytest.approx(80 * 86400, abs=1)
    assert w.seconds == pytest.approx(80 * 86400 - 7200, abs=1)
    assert w.promised_seconds == 90 * 86400 and w.expected_seconds == 90 * 86400
    assert w.short and "90d" in (w.note or "")


def test_recovery_window_meets_the_promise_within_the_grace() -> None:
    meta = _meta(timedelta(days=90) - timedelta(minutes=30), timedelta(hours=1))
    w = recovery_window(meta, NOW, promised=timedelta(days=90), created_at=NOW - timedelta(days=365))
    assert not w.short


def test_young_replica_is_measured_against_its_age() -> None:
    meta = _meta(timedelta(days=10), timedelta(hours=1))
    young = recovery_window(meta, NOW, promised=timedelta(days=90), created_at=NOW - timedelta(days=10))
    assert not young.short and young.expected_seconds == pytest.approx(10 * 86400, abs=1)
    old = recovery_window(meta, NOW, promised=timedelta(days=90), created_at=NOW - timedelta(days=30))
    assert old.short  # 30 days old, 10 days recoverable: snapshots were expired early
    unknown = recovery_window(meta, NOW, promised=None, created_at=None)
    assert not unknown.short and unknown.promised_seconds is None


def test_empty_replica_promises_nothing() -> None:
    w = recovery_window({"snapshots": []}, NOW, promised=timedelta(days=90), created_at=NOW - timedelta(days=30))
    assert not w.short and w.start is None and w.snapshots == 0


def test_status_json_carries_the_recovery_windows(ops_env: OpsEnv, tmp_path, capsys) -> None:
    # The CLI measures against the wall clock: anchor the commits to this test's start, not the module's import
    # (a long session made a module-level NOW minutes stale).
    now = dt.datetime.now(dt.UTC)
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.orders", now - timedelta(hours=6))
    world.commit("analytics.orders", now - timedelta(hours=1))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    code, out = _run_cli(world, tmp_path, capsys, "--json")
    assert code == 0
    doc = json.loads(out)
    (orders,) = [d for d in doc["destinations"] if d["table"] == "analytics.orders"]
    w = orders["window"]
    assert w["snapshots"] == 2
    assert abs((dt.datetime.fromisoformat(w["start"]) - (now - timedelta(hours=6))).total_seconds()) < 0.01
    assert w["promised_seconds"] == 2160 * 3600  # the replica's retention from the outputs
    assert w["reaches_back_seconds"] == pytest.approx(6 * 3600, abs=120) and not w["short"]
    assert doc["short_windows"] == 0
    code, text = _run_cli(world, tmp_path, capsys)
    assert "RECOVERABLE" in text and "6h0" in text and "/ 90d00h" in text
    # --no-windows skips the reads
    code, out = _run_cli(world, tmp_path, capsys, "--json", "--no-windows")
    assert all(d["window"] is None for d in json.loads(out)["destinations"])


def test_replication_point_over_http_names_the_table_holding_it_back(ops_env: OpsEnv, tmp_path, capsys) -> None:
    """The point of the replica: every table complete but `analytics.events`, which lacks the commit of 2 h ago
    (replicated last 3 h ago): the point is the millisecond before that commit (the source's commit times read
    from its metadata over HTTP), and status names the table (text and JSON, whole bucket and a group)."""
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.events", NOW - timedelta(hours=6))
    ops_env.control.replicate(source_bucket_arn=world.source_arn, at=NOW - timedelta(hours=3))
    lacking = NOW - timedelta(hours=2)
    world.commit("analytics.events", lacking)
    world.commit("analytics.events", NOW - timedelta(minutes=1))
    ops_env.control.set_status(world.tables["analytics.events"], world.replica_arn, "pending")
    report = st.collect_status(world.clients, [world.source_arn], now=NOW, show_progress=False)
    [p] = [p for p in report.points if p.destination_bucket_arn == world.replica_arn]
    assert p.held_back_by == "analytics.events" and p.reason == "PENDING: lacks commits since"
    assert p.point is not None and p.age_seconds == pytest.approx(2 * 3600, abs=1)
    point = dt.datetime.fromisoformat(p.point.replace("Z", "+00:00"))
    assert timedelta(0) < lacking - point <= timedelta(milliseconds=2)
    code, out = _run_cli(world, tmp_path, capsys, "--json", "--group", "orders=analytics.orders")
    assert code == 0  # a point is information: no --max-lag, nothing failed
    points = {(x["destination_bucket_arn"], x["group"]): x for x in json.loads(out)["replication_points"]}
    assert points[(world.replica_arn, "*")]["held_back_by"] == "analytics.events"
    assert points[(world.replica_arn, "orders")]["held_back_by"] is None  # the group's one table is complete
    code, out = _run_cli(world, tmp_path, capsys)
    assert code == 0 and "replication point" in out
    assert "held back by analytics.events (PENDING: lacks commits since then)" in out


def test_recover_and_failover_take_as_of_replication_point_from_live_status(
    ops_env: OpsEnv, tmp_path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--as-of replication-point` is the point `status` shows, resolved when the tool starts, over the selected
    tables: the recovery's and the failover plan's instant (no Spark: the request and the plan only)."""
    from s3tables_kit.jobs.failover.cli import main as failover
    from s3tables_kit.jobs.kernel.snapshots import iso_ms
    from s3tables_kit.jobs.recover.cli import parser, request_from_args

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")  # the recovery takes the environment's credentials
    world = deploy(ops_env, replicate=False)
    lacking = world.hold_back("analytics.events", NOW)
    outputs = str(world.write_outputs(tmp_path))
    argv = ["--outputs", outputs, "--endpoint-url", ops_env.endpoint, "--dry-run", "--as-of", "replication-point"]
    req = request_from_args(parser().parse_args([*argv, "--namespace", "analytics"]))
    point_ms = req.selector.as_of_ms
    assert point_ms is not None and 0 < int(lacking.timestamp() * 1000) - point_ms <= 2  # the ms before it
    # a selection without the lagging table: every table complete, the point is the time of the read
    req = request_from_args(parser().parse_args([*argv, "--table", "analytics.orders"]))
    assert req.selector.as_of_ms is not None and req.selector.as_of_ms >= int(NOW.timestamp() * 1000)
    assert "--as-of replication-point: " in capsys.readouterr().err
    bucket = world.replica_arn.rsplit("/", 1)[-1]
    args = ["--outputs", outputs, "--endpoint-url", ops_env.endpoint, "--quiet", "--json", "--dry-run"]
    code = failover([*args, "--replica-bucket", bucket, "--as-of", "replication-point"])
    plan = json.loads(capsys.readouterr().out)
    assert code == 2 and plan["selector"] == f"as of {iso_ms(point_ms)}"  # the plan's cut (refused: not break-glass)
