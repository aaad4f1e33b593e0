"""`status --backfill` (`s3tables_kit.jobs.ops.backfill`) and the monitor's `TablesBackfilling` over real HTTP (moto +
emulator/): a lake whose replication was just turned on, with a table completed, a slow one held PENDING and a failing
one held FAILED by the emulator's replication simulation; sizes from the snapshot summaries the tables really carry."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, MetadataSummary
from s3tables_kit.jobs.ops import backfill as bf
from s3tables_kit.jobs.ops import monitor
from s3tables_kit.jobs.ops import status as st
from s3tables_kit.topology import contract
from tests.ops_fixtures import ACCOUNT, OpsEnv, World, deploy, ms

NOW = dt.datetime.now(dt.UTC)
SIZES = {"orders": 7_000, "customers": 3_000, "events": 50_000}  # total-files-size of each current snapshot
KMS_DENIED = "Access denied when writing to the destination table bucket (KMS key policy)"


def _lake(env: OpsEnv) -> World:
    """Three tables written before replication reached them (each with a sized snapshot); `orders` backfills at once,
    `events` is slow (held PENDING), `customers` fails (held FAILED)."""
    world = deploy(env, replicate=False)
    for name, size in SIZES.items():
        env.control.seed(
            world.source_arn, {"analytics": [name]}, ms(NOW - dt.timedelta(hours=5)), {"total-files-size": size}
        )
    env.control.hold_replication(world.tables["analytics.events"], world.replica_arn, "pending")
    env.control.hold_replication(
        world.tables["analytics.customers"], world.replica_arn, "failed", failure_message=KMS_DENIED
    )
    env.control.replicate(source_bucket_arn=world.source_arn)
    return world


def _release(env: OpsEnv, world: World, *names: str) -> None:
    for name in names:
        env.control.hold_replication(world.tables[f"analytics.{name}"], world.replica_arn, release=True)
    env.control.replicate(source_bucket_arn=world.source_arn)


def _cli(world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    out = world.write_outputs(tmp_path)
    argv = ["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--quiet", "--no-cache", *extra]
    code = st.main(argv)
    return code, capsys.readouterr().out


def test_summary_keeps_the_current_snapshots_size() -> None:
    meta = {
        "current-snapshot-id": 2,
        "snapshots": [
            {"snapshot-id": 1, "timestamp-ms": 1000, "summary": {"total-files-size": "10"}},
            {"snapshot-id": 2, "timestamp-ms": 2000, "summary": {"total-files-size": "25"}},
        ],
    }
    s = MetadataSummary.of(meta)
    assert s.current_bytes == 25
    assert MetadataSummary.from_json(json.loads(json.dumps(s.to_json()))) == s
    assert MetadataSummary.of({"current-snapshot-id": -1, "snapshots": []}).current_bytes == 0
    assert MetadataSummary.of({"current-snapshot-id": 1, "snapshots": [{"snapshot-id": 1}]}).current_bytes is None


def test_backfill_counts_completed_pending_failed_with_bytes(ops_env: OpsEnv, tmp_path: Path, capsys) -> None:
    world = _lake(ops_env)
    report = st.collect_backfill(world.clients, [world.source_arn], show_progress=False, second_pass_pause=0)
    (dest,) = report.destinations
    assert dest.destination_bucket_arn == world.replica_arn
    assert (dest.completed, dest.pending, dest.failed) == (1, 1, 1)
    assert dest.bytes_done == SIZES["orders"]  # the held replicas were never created: they hold nothing
    assert dest.bytes_remaining == SIZES["customers"] + SIZES["events"]
    assert dest.bytes_pending == SIZES["events"] and dest.unsized == 0
    assert dest.rate_bytes_per_second is None and report.rate_note == bf.RATE_UNKNOWN
    failing = next(r for r in report.rows if r.table == "analytics.customers")
    assert failing.status == "failed" and failing.failure_message == KMS_DENIED
    assert report.exit_code == 1

    code, out = _cli(world, tmp_path, capsys, "--backfill")
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("demo-dest-tablebucket@"))
    assert line.split()[1:4] == ["1", "1", "1"] and "6.8 KiB" in line and "51.8 KiB" in line and "unknown" in line
    assert "analytics.events" in out and "PENDING" in out and "analytics.customers" in out and "Access denied" in out
    assert "analytics.orders" not in out  # completed tables are counted, not listed
    assert "backfill not complete" in out

    code, out = _cli(world, tmp_path, capsys, "--backfill", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and not doc["complete"]
    assert doc["destinations"][0]["bytes_done"] == 7_000 and doc["destinations"][0]["bytes_remaining"] == 53_000
    assert sorted(t["table"] for t in doc["tables_backfilling"]) == ["analytics.customers", "analytics.events"]

    _release(ops_env, world, "events", "customers")
    code, out = _cli(world, tmp_path, capsys, "--backfill")
    assert code == 0 and "backfill complete" in out
    done = st.collect_backfill(world.clients, [world.source_arn], show_progress=False)
    assert done.destinations[0].bytes_done == sum(SIZES.values()) and done.destinations[0].bytes_remaining == 0

    # A table's own table-level replication (to a bucket outside the kit) overrides the bucket's: its replica in the
    # kit's destination is no longer a copy, whatever the other destination reports.
    other = world.src().create_table_bucket(name="team-copy")["arn"]
    conf = {"role": f"arn:aws:iam::{ACCOUNT}:role/team", "rules": [{"destinations": [
        {"destinationTableBucketARN": other}]}]}  # fmt: skip
    world.src().put_table_replication(tableArn=world.tables["analytics.orders"], configuration=conf)
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    code, out = _cli(world, tmp_path, capsys, "--backfill")
    assert code == 1 and "1 bypassed" in out and "backfill not complete" in out
    assert "BYPASSED" in out and "own table-level replication to team-copy: not a copy" in out
    assert "analytics.orders: replicates to team-copy (its own table-level replication)" in out


def test_a_partly_copied_replica_counts_what_it_holds(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = _lake(ops_env)
    _release(ops_env, world, "events")  # the replica exists at the source's state then ...
    ops_env.control.seed(world.source_arn, {"analytics": ["events"]}, ms(NOW), {"total-files-size": 80_000})
    ops_env.control.hold_replication(world.tables["analytics.events"], world.replica_arn, "pending")  # ... it grew
    cache = MetadataCache.open(tmp_path / "cache")
    loads = []
    for _ in range(2):  # a first run (one loadTable per table), then locations and the cached summaries
        report = st.collect_backfill(world.clients, [world.source_arn], show_progress=False, cache=cache)
        events = next(r for r in report.rows if r.table == "analytics.events")
        assert (events.source_bytes, events.replica_bytes) == (80_000, SIZES["events"])
        assert (events.done_bytes, events.remaining_bytes) == (SIZES["events"], 30_000)
        assert report.destinations[0].bytes_pending == 30_000
        loads.append(ops_env.control.stats()["calls"].get("LoadTable", 0))
    # Three sources and two replicas read by loadTable first (the failing one's replica does not exist); none after.
    assert loads == [5, 5] and cache.hits >= 4


def test_watch_measures_the_rate_and_stops_when_complete(ops_env: OpsEnv) -> None:
    world = _lake(ops_env)
    shown: list[bf.BackfillReport] = []
    steps = iter([("events",), ("customers",)])

    def observe() -> bf.BackfillReport:
        return st.collect_backfill(world.clients, [world.source_arn], show_progress=False, second_pass_pause=0)

    def sleep(_: float) -> None:  # between refreshes the service moves on (the slow table, then the fixed one)
        _release(ops_env, world, *next(steps))

    last = bf.watch(observe, shown.append, interval=1.0, sleep=sleep)
    assert [r.exit_code for r in shown] == [1, 1, 0] and last is shown[-1]
    assert [r.observations for r in shown] == [1, 2, 3]
    second = shown[1].destinations[0]
    seconds = dt.datetime.fromisoformat(shown[1].generated_at) - dt.datetime.fromisoformat(shown[0].generated_at)
    assert second.rate_bytes_per_second == pytest.approx(SIZES["events"] / seconds.total_seconds())
    assert (second.pending, second.failed, second.eta_seconds) == (0, 1, None)  # a failed table waits for a fix
    assert "failed tables only" in bf.render(shown[1]) and shown[1].rate_note is None
    assert shown[2].destinations[0].eta_seconds == 0.0 and "done" in bf.render(shown[2])


def test_watch_stops_after_its_refreshes(ops_env: OpsEnv, tmp_path: Path, capsys) -> None:
    world = _lake(ops_env)
    code, out = _cli(world, tmp_path, capsys, "--backfill", "--watch", "0.01", "--refreshes", "2", "--json")
    docs = [json.loads(x) for x in out.replace("}\n{", "}\x00{").split("\x00")]
    assert code == 1 and [d["observations"] for d in docs] == [1, 2]
    assert docs[0]["rate_note"] == bf.RATE_UNKNOWN and docs[1]["rate_note"] is None
    assert docs[1]["destinations"][0]["rate_bytes_per_second"] == 0.0  # nothing moved between the two
    assert docs[1]["destinations"][0]["eta_seconds"] is None


def test_watch_without_backfill_is_refused(ops_env: OpsEnv, tmp_path: Path, capsys) -> None:
    world = deploy(ops_env)
    outputs = str(world.write_outputs(tmp_path))
    assert st.main(["--outputs", outputs, "--endpoint-url", world.env.endpoint, "--watch", "10"]) == 2
    assert "--backfill" in capsys.readouterr().err
    assert st.main(["--outputs", outputs, "--endpoint-url", world.env.endpoint, "--backfill", "--watch", "0"]) == 2
    assert "positive" in capsys.readouterr().err


def test_monitor_publishes_the_tables_still_backfilling(ops_env: OpsEnv) -> None:
    world = _lake(ops_env)
    settings = world.monitor_settings(second_pass_pause=0)

    def backfilling() -> float:
        result = monitor.run_monitor(world.clients, settings, region="us-east-1", dry_run=True)
        (value,) = [
            d["Value"]
            for d in result.data
            if d["MetricName"] == contract.BACKFILLING
            and [x["Name"] for x in d["Dimensions"]] == ["Kit", "Destination"]
        ]
        return float(value)

    assert backfilling() == 2  # the slow and the failing table: neither replica is a copy yet
    _release(ops_env, world, "events")
    assert backfilling() == 1
    # A table that completed once and lags again is behind, not backfilling.
    ops_env.control.hold_replication(world.tables["analytics.events"], world.replica_arn, "pending")
    _release(ops_env, world, "customers")
    assert backfilling() == 0
