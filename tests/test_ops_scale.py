"""Ops tools that finish what they start: under 20% throttling plus a burst of 500 throttled
`GetTableReplicationStatus` calls every table is read in the end (a second pass after a pause), the monitor publishes
its heartbeat and says how many tables needed the second pass; harden reads each replica once when nothing changes;
audit reads each source table once. Real HTTP against the emulator (emulator/), 100 tables x 3 destinations (the
scale itself is `make bench`'s)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops import status as st
from tests.ops_fixtures import DST_REGION, SRC_REGION, OpsEnv, World, deploy

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
TABLES = 100
BURST = 5 * TABLES  # throttled calls in a row: more than the first pass's retries absorb


def _lake(ops_env: OpsEnv, destinations: int = 3) -> tuple[World, list[str]]:
    """`TABLES` tables in 4 namespaces replicated to `destinations` buckets."""
    world = deploy(ops_env, tables=("orders",))
    dst = world.dst()
    extra = [dst.create_table_bucket(name=f"scale-dest-{i}")["arn"] for i in range(destinations - 1)]
    dests = [world.replica_arn, *extra]
    world.src().put_table_bucket_replication(
        tableBucketARN=world.source_arn,
        configuration={
            "role": world.cfg.replication_role_arn_of(world.cfg.sources[0]),
            "rules": [{"destinations": [{"destinationTableBucketARN": d} for d in dests]}],
        },
        versionToken=world.src().get_table_bucket_replication(tableBucketARN=world.source_arn)["versionToken"],
    )
    commit_ms = int((NOW - dt.timedelta(hours=1)).timestamp() * 1000)
    per_ns = (TABLES - 1) // 4
    namespaces = {f"ns{i}": [f"t{j:03d}" for j in range(per_ns + (1 if i < (TABLES - 1) % 4 else 0))] for i in range(4)}
    ops_env.control.seed(world.source_arn, namespaces, commit_ms=commit_ms)
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    return world, dests


def _throttle(ops_env: OpsEnv) -> None:
    ops_env.control.throttle("GetTableReplicationStatus", 0.2, seed=18)
    ops_env.control.inject_faults("GetTableReplicationStatus", BURST)


def test_status_reads_every_table_under_throttling_and_a_burst(ops_env: OpsEnv) -> None:
    world, dests = _lake(ops_env)
    _throttle(ops_env)
    report = st.collect_status(
        ops_env.clients(max_attempts=3),  # few attempts: the burst outlasts the retries of many calls
        [world.source_arn],
        now=NOW,
        concurrency=64,
        show_progress=False,
        second_pass_pause=0.5,
    )
    assert report.tables == TABLES and report.errors == []
    assert report.counts() == {"completed": TABLES * 3}
    # tables unread after the first pass's retries (the control: without the second pass they were unknown)
    assert report.second_pass > 0 and report.second_pass_unresolved == 0
    faults = {(f["share"], f["operation"]): f for f in ops_env.control.stats()["faults"]}
    assert faults[(1.0, "GetTableReplicationStatus")]["served"] == BURST  # the whole burst was served
    assert faults[(0.2, "GetTableReplicationStatus")]["served"] > 0
    assert {r.destination_bucket_arn for r in report.rows} == set(dests)


def test_monitor_publishes_heartbeat_under_throttling_and_a_burst(ops_env: OpsEnv) -> None:
    world, dests = _lake(ops_env)
    _throttle(ops_env)
    settings = mon.MonitorSettings(
        kit="seed",
        source_bucket_arns=(world.source_arn,),
        destination_bucket_arns=tuple(dests),
        concurrency=64,
        second_pass_pause=0.5,
    )
    result = mon.run_monitor(ops_env.clients(max_attempts=3), settings, region=SRC_REGION, now=NOW)
    assert result.tables == TABLES and result.errors == 0
    assert result.heartbeat and result.second_pass > 0
    assert result.to_json()["second_pass_tables"] == result.second_pass
    cw = ops_env.clients().client("cloudwatch", SRC_REGION)
    stats = cw.get_metric_statistics(
        Namespace=mon.METRIC_NAMESPACE,
        MetricName=mon.HEARTBEAT,
        Dimensions=[{"Name": "Kit", "Value": "seed"}],
        StartTime=NOW - dt.timedelta(hours=1),
        EndTime=NOW + dt.timedelta(hours=1),
        Period=3600,
        Statistics=["Maximum"],
    )["Datapoints"]
    assert [d["Maximum"] for d in stats] == [1.0]
    assert DST_REGION in dests[0]


@pytest.mark.parametrize("concurrency", [1, 8])
def test_stream_concurrently_is_bounded_and_complete(concurrency: int) -> None:
    import threading

    from s3tables_kit.jobs.kernel.concurrency import stream_concurrently

    taken = 0
    lock = threading.Lock()

    def items():  # type: ignore[no-untyped-def]
        nonlocal taken
        for i in range(1000):
            with lock:
                taken += 1
            yield i

    seen_ahead = []

    def fn(i: int) -> int:
        with lock:
            seen_ahead.append(taken - i)  # how far the producer ran ahead of this item
        return i * 2

    out = sorted(stream_concurrently(fn, items(), concurrency))
    assert out == [i * 2 for i in range(1000)]
    assert max(seen_ahead) <= max(1, concurrency * 2)


def _calls(env: OpsEnv) -> dict[str, int]:
    return dict(env.control.stats()["calls"])


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}


def _storage_reads(env: OpsEnv) -> int:
    """GetObject calls on table storage so far (here: a replica's metadata file read over S3; every source table
    is COMPLETED, so no source metadata is read for a lag)."""
    return sum(n for key, n in env.control.stats()["s3_calls"].items() if key.endswith(" GetObject"))


def test_status_lists_each_destination_once_and_reads_each_replica_by_its_location(
    ops_env: OpsEnv, tmp_path: Path
) -> None:
    """With windows, each destination bucket is listed once, up front: ListTables tells each replica's creation time
    and whether the service manages it, and the detached check lists nothing again.

    * A first run (an empty cache) reads each replica with one loadTable of the Iceberg REST endpoint: its location
      and metadata together, no GetTableMetadataLocation and no GetObject.
    * A second run (the cache now holds every summary) reads each replica's location (GetTableMetadataLocation) and
      nothing else: the small answer, the file not at all.
    * Without the listing, GetTable tells the location and the creation time (and the file is read, uncached).

    The three give the same windows."""
    from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache

    world, dests = _lake(ops_env)
    now = dt.datetime.now(dt.UTC)  # the replicas were created moments ago: younger than the promise
    windows: dict[str, dt.timedelta | None] = {d: dt.timedelta(days=90) for d in dests}
    replicas = len(dests) * TABLES

    def run(cache: MetadataCache | None, **kw: object) -> tuple[st.StatusReport, dict[str, int], int]:
        before, reads = _calls(ops_env), _storage_reads(ops_env)
        got = st.collect_status(
            world.clients, [world.source_arn], now=now, show_progress=False, windows=windows, cache=cache, **kw
        )
        return got, _delta(before, _calls(ops_env)), _storage_reads(ops_env) - reads

    first, calls, reads = run(MetadataCache.open(tmp_path / "cache"))
    assert calls == {"ListTables": 1 + len(dests), "GetTableReplicationStatus": TABLES, "LoadTable": replicas}
    assert reads == 0
    second, calls, reads = run(MetadataCache.open(tmp_path / "cache"))
    assert calls == {
        "ListTables": 1 + len(dests),
        "GetTableReplicationStatus": TABLES,
        "GetTableMetadataLocation": replicas,
    }
    assert reads == 0
    asked, calls, reads = run(None, list_destinations=False)
    assert calls == {"ListTables": 1, "GetTableReplicationStatus": TABLES, "GetTable": replicas}
    assert reads == replicas
    got = [(r.table, r.destination_bucket_arn, r.window) for r in first.rows]
    assert got == [(r.table, r.destination_bucket_arn, r.window) for r in second.rows]
    assert got == [(r.table, r.destination_bucket_arn, r.window) for r in asked.rows]
    windows_read = [w for _, _, w in got if w is not None and w.snapshots]  # the deployed `orders` has no commit
    assert len(windows_read) == len(dests) * (TABLES - 1)
    # measured against each replica's age (moments), not the 90 days promised: none is short
    assert not any(w.short for w in windows_read)
    assert all(w.expected_seconds is not None and w.expected_seconds < 600 for w in windows_read)


def test_status_reads_the_windows_over_the_s3_tables_api_where_the_rest_endpoint_is_refused(ops_env: OpsEnv) -> None:
    """An endpoint refused to the caller (here every loadTable answered AccessDenied) costs the requests in flight
    when the first refusal arrives (at most one per thread): the run reads every window with GetTableMetadataLocation
    and GetObject instead, and asks the endpoint no more."""
    world, dests = _lake(ops_env, destinations=1)
    windows: dict[str, dt.timedelta | None] = {d: dt.timedelta(days=90) for d in dests}
    ops_env.control.inject_faults("LoadTable", -1, "AccessDeniedException", 403, "not authorized")
    before = _calls(ops_env)
    report = st.collect_status(world.clients, [world.source_arn], show_progress=False, windows=windows, concurrency=16)
    calls = _delta(before, _calls(ops_env))
    assert 1 <= calls["LoadTable"] <= 16 and calls["GetTableMetadataLocation"] == TABLES
    assert all(r.window is not None and r.window.note is None for r in report.rows if r.table != "analytics.orders")
    assert sum(1 for r in report.rows if r.window and r.window.snapshots) == TABLES - 1


def test_status_retries_a_throttled_rest_read(ops_env: OpsEnv) -> None:
    """Throttled loadTable answers (HTTP 429) are retried like botocore's: every window is read, through the
    endpoint, with one request more per throttled answer."""
    world, dests = _lake(ops_env, destinations=1)
    windows: dict[str, dt.timedelta | None] = {d: dt.timedelta(days=90) for d in dests}
    ops_env.control.inject_faults("LoadTable", 5)
    before = _calls(ops_env)
    report = st.collect_status(world.clients, [world.source_arn], show_progress=False, windows=windows)
    calls = _delta(before, _calls(ops_env))
    assert calls["LoadTable"] == TABLES + 5 and "GetTableMetadataLocation" not in calls
    assert sum(1 for r in report.rows if r.window and r.window.snapshots) == TABLES - 1
    assert report.second_pass == 0


def test_harden_reads_each_hardened_replica_once(ops_env: OpsEnv) -> None:
    from s3tables_kit.jobs.ops import harden as hd

    world, _ = _lake(ops_env, destinations=1)
    first = hd.harden(world.clients, world.outputs, show_progress=False, concurrency=16)
    assert first.count("hardened") == TABLES and first.exit_code == 0
    before = _calls(ops_env)
    seen: list[str] = []
    again = hd.harden(
        world.clients, world.outputs, show_progress=False, concurrency=16, on_result=lambda r: seen.append(r.table)
    )
    assert again.count("unchanged") == TABLES and again.results == []  # only the summary is kept
    assert len(seen) == TABLES  # every result was streamed to the caller
    # one ListTables page and one GetTablePolicy per replica; no GetTable, no maintenance read
    assert _delta(before, _calls(ops_env)) == {"ListTables": 1, "GetTablePolicy": TABLES}


def test_audit_reads_each_source_table_once(ops_env: OpsEnv) -> None:
    from s3tables_kit.jobs.ops import audit as au

    world, _ = _lake(ops_env, destinations=1)
    from s3tables_kit.jobs.ops import harden as hd

    assert hd.harden(world.clients, world.outputs, show_progress=False, concurrency=16).exit_code == 0
    before, files_before = _calls(ops_env), _storage_reads(ops_env)
    report = au.audit(world.clients, world.cfg, world.outputs, concurrency=16, show_progress=False)
    assert report.checked["source tables"] == TABLES and report.checked["replica tables"] == TABLES
    assert "retention-below-source" not in report.kinds() and "replica-missing" not in report.kinds()
    calls = _delta(before, _calls(ops_env))
    # A replica's source is known by its name (the service gives a replica its source's): no GetTable and no
    # replication status at all (one status per source table, or a GetTable per replica, before); each source's
    # retention once, each replica's once, and each replica's table policy (its second layer) once.
    assert "GetTable" not in calls and "GetTableReplicationStatus" not in calls
    assert calls["GetTableMaintenanceConfiguration"] == TABLES + TABLES
    assert calls["GetTablePolicy"] == TABLES
    # and each replica's metadata once, for the snapshot times it holds (snapshot-time-untrusted): with no cache to
    # reuse, its location and metadata in one loadTable
    assert calls["LoadTable"] == TABLES and "GetTableMetadataLocation" not in calls
    assert _storage_reads(ops_env) == files_before


def test_audit_asks_the_replicas_whose_source_its_name_does_not_tell(ops_env: OpsEnv) -> None:
    """A replica no longer managed by the service (disassociated) is asked with GetTable, which names no source:
    `replica-detached`, and one GetTable for it alone; the others stay paired by name."""
    from s3tables_kit.jobs.ops import audit as au
    from s3tables_kit.jobs.ops import harden as hd

    world, _ = _lake(ops_env, destinations=1)
    assert hd.harden(world.clients, world.outputs, show_progress=False, concurrency=16).exit_code == 0
    first = world.dst().list_tables(tableBucketARN=world.replica_arn, maxTables=1)["tables"][0]
    world.dst().disassociate_table_replication(tableArn=first["tableARN"])
    before = _calls(ops_env)
    report = au.audit(world.clients, world.cfg, world.outputs, concurrency=16, show_progress=False)
    assert report.kinds() == {"replica-detached"}
    assert [d.resource.split(" ")[0] for d in report.drifts] == [f"{first['namespace'][0]}.{first['name']}"]
    assert _delta(before, _calls(ops_env))["GetTable"] == 1


def test_worker_processes_give_the_same_reports(ops_env: OpsEnv) -> None:
    """status, harden and audit in 2 worker processes (the large-lake path,
    `s3tables_kit.jobs.kernel.concurrency.WorkerPool`) report exactly what one process does; small jobs so every process
    gets several."""
    import s3tables_kit.jobs.ops.audit as au
    import s3tables_kit.jobs.ops.harden as hd

    world, _ = _lake(ops_env, destinations=2)
    clients = world.clients
    first = hd.harden(clients, world.outputs, show_progress=False, concurrency=8, processes=1)
    assert first.count("hardened") == TABLES  # the outputs name one of the two destinations
    for mod in (st, hd, au):
        mod.CHUNK = 37  # type: ignore[attr-defined]
    try:
        one = st.collect_status(clients, [world.source_arn], now=NOW, concurrency=8, show_progress=False, processes=1)
        two = st.collect_status(clients, [world.source_arn], now=NOW, concurrency=8, show_progress=False, processes=2)
        assert [r.__dict__ for r in two.rows] == [r.__dict__ for r in one.rows]
        assert len(two.rows) == 2 * TABLES and not two.errors

        seen: list[str] = []
        again = hd.harden(
            clients,
            world.outputs,
            show_progress=False,
            concurrency=8,
            processes=2,
            on_result=lambda r: seen.append(r.table),
        )
        assert again.count("unchanged") == TABLES and len(seen) == TABLES and again.exit_code == 0

        a1 = au.audit(clients, world.cfg, world.outputs, concurrency=8, show_progress=False, processes=1)
        a2 = au.audit(clients, world.cfg, world.outputs, concurrency=8, show_progress=False, processes=2)
        assert a2.checked == a1.checked and [d.__dict__ for d in a2.drifts] == [d.__dict__ for d in a1.drifts]
        assert a2.checked["replica tables"] == TABLES  # the configuration names one of the two destinations
    finally:
        for mod in (st, hd, au):
            mod.CHUNK = {st: 250, hd: 500, au: 500}[mod]  # type: ignore[attr-defined,index]


def test_processes_for() -> None:
    from s3tables_kit.jobs.kernel.concurrency import PROCESSES_FROM, processes_for

    assert processes_for(None, PROCESSES_FROM - 1) == 1
    assert processes_for(None, PROCESSES_FROM) >= 1
    assert processes_for(3, 10) == 3
    with pytest.raises(ValueError, match="at least 1"):
        processes_for(0, 10)
