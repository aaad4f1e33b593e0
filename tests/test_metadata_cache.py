"""The metadata summary cache (`s3tables_kit.jobs.kernel.metadata_cache`) on real files, and `status` through it over
real HTTP (moto + emulator/): a second run reads no metadata file, a new metadata location is read, a corrupt entry is a
miss and is rewritten, two processes write the same entries at once, the cache is bounded and can be bypassed."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
from pathlib import Path

from s3tables_kit.jobs.kernel.commits import commit_times
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, MetadataSummary, resolve_cache_dir
from s3tables_kit.jobs.ops import status as st
from tests.ops_fixtures import OpsEnv, deploy

NOW = dt.datetime.now(dt.UTC)
SUMMARY = MetadataSummary(commit_ms=(1000, 2000, 3000), snapshot_ms=(2000, 3000))


def _get_objects(env: OpsEnv) -> int:
    return sum(n for key, n in (env.control.stats().get("s3_calls") or {}).items() if key.endswith(" GetObject"))


def _windows(report: st.StatusReport) -> dict[str, tuple[str | None, str | None, int]]:
    return {r.table: (r.window.start, r.window.end, r.window.snapshots) for r in report.rows if r.window}


def test_summary_keeps_commit_and_snapshot_times() -> None:
    meta = {
        "last-updated-ms": 5000,
        "metadata-log": [{"timestamp-ms": 1000}, {"timestamp-ms": "x"}],
        "snapshots": [{"timestamp-ms": 4000}, {"timestamp-ms": 2000}, {"timestamp-ms": 0}],
    }
    s = MetadataSummary.of(meta)
    assert s == MetadataSummary(commit_ms=(1000, 2000, 4000, 5000), snapshot_ms=(2000, 4000), current_bytes=0)
    assert MetadataSummary.from_json(json.loads(json.dumps(s.to_json()))) == s
    assert [t.timestamp() for t in commit_times(meta)] == [1.0, 2.0, 4.0, 5.0]


def test_status_second_run_reads_no_metadata_file_and_a_new_location_once(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env, replicate=False)
    for table in world.tables:
        world.commit(table, NOW - dt.timedelta(hours=2))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    promised = {world.replica_arn: dt.timedelta(days=90)}
    cache = MetadataCache.open(tmp_path / "cache")

    def run() -> tuple[st.StatusReport, int]:
        before = _get_objects(ops_env)
        rep = st.collect_status(world.clients, [world.source_arn], windows=promised, show_progress=False, cache=cache)
        return rep, _get_objects(ops_env) - before

    cold, cold_reads = run()  # nothing cached: each replica read with one loadTable (no GetObject), then cached
    assert cold_reads == 0 and cache.writes == 3 and cache.hits == 0
    assert ops_env.control.stats()["calls"]["LoadTable"] == 3
    warm, warm_reads = run()
    assert warm_reads == 0 and cache.hits == 3
    assert _windows(warm) == _windows(cold) and all(w[2] == 1 for w in _windows(cold).values())
    # a commit replicated: the replica's metadata location is new, so only that file is read
    world.commit("analytics.orders", NOW - dt.timedelta(minutes=1))
    ops_env.control.replicate(source_table_arn=world.tables["analytics.orders"])
    after, reads = run()
    assert reads == 1
    assert _windows(after)["analytics.orders"][2] == 2
    assert {t: w for t, w in _windows(after).items() if t != "analytics.orders"} == {
        t: w for t, w in _windows(cold).items() if t != "analytics.orders"
    }


def test_a_corrupt_entry_is_a_miss_and_is_rewritten(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env, tables=("orders",))
    cache = MetadataCache.open(tmp_path)
    promised = {world.replica_arn: dt.timedelta(days=90)}
    first = st.collect_status(world.clients, [world.source_arn], windows=promised, show_progress=False, cache=cache)
    (entry,) = cache.entries()
    for garbage in (b"{not json", b'{"format": 1, "location": "s3://other/x.json", "summary": {}}', b"[]"):
        Path(entry.path).write_bytes(garbage)
        before = _get_objects(ops_env)
        again = st.collect_status(world.clients, [world.source_arn], windows=promised, show_progress=False, cache=cache)
        assert _get_objects(ops_env) - before == 1  # read from S3 again
        assert _windows(again) == _windows(first) and again.exit_code == 0
        assert (
            json.loads(Path(entry.path).read_bytes())["summary"]
            == cache.get(json.loads(Path(entry.path).read_bytes())["location"]).to_json()
        )  # type: ignore[union-attr]


def test_cli_caches_in_kit_cache_dir_and_no_cache_bypasses_it(ops_env: OpsEnv, tmp_path: Path, monkeypatch) -> None:
    world = deploy(ops_env, tables=("orders", "events"))
    outputs = world.write_outputs(tmp_path)
    args = ["--outputs", str(outputs), "--endpoint-url", ops_env.endpoint, "--quiet", "--json"]
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "env-cache"))
    assert resolve_cache_dir(None) == tmp_path / "env-cache"
    assert st.main([*args, "--no-cache"]) == 0
    assert not (tmp_path / "env-cache").exists()
    assert st.main(args) == 0
    assert len(MetadataCache(tmp_path / "env-cache").entries()) == 2
    assert st.main([*args, "--cache-dir", str(tmp_path / "flag-cache")]) == 0
    assert len(MetadataCache(tmp_path / "flag-cache").entries()) == 2


def _writer(directory: str, rounds: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    cache = MetadataCache(Path(directory))
    bad = 0
    for i in range(rounds):
        loc = f"s3://warehouse-{i % 50}/metadata/{i % 50:05d}.metadata.json"
        got = cache.get(loc)
        if got is not None and got != SUMMARY:
            bad += 1
        cache.put(loc, SUMMARY)
    out.put(bad)


def test_two_processes_write_the_same_entries_at_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), 400, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    bad = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert bad == [0, 0]  # never a partial or foreign entry
    cache = MetadataCache(tmp_path)
    assert len(cache.entries()) == 50
    assert all(cache.get(f"s3://warehouse-{i}/metadata/{i:05d}.metadata.json") == SUMMARY for i in range(50))
    assert not [p for p in tmp_path.rglob(".tmp-*")]  # no temporary file left behind


def test_the_cache_is_bounded_and_an_unusable_directory_disables_it(tmp_path: Path) -> None:
    cache = MetadataCache.open(tmp_path / "c")
    for i in range(8):
        cache.put(f"s3://w/{i}.metadata.json", SUMMARY)
        os.utime(cache.path_of(f"s3://w/{i}.metadata.json"), (1_000_000 + i, 1_000_000 + i))
    assert MetadataCache.open(tmp_path / "c", max_entries=5).get("s3://w/7.metadata.json") == SUMMARY
    assert len(cache.entries()) == 5
    assert cache.get("s3://w/2.metadata.json") is None and cache.get("s3://w/3.metadata.json") == SUMMARY
    left = cache.path_of("s3://w/7.metadata.json").parent / ".tmp-killed-writer"
    left.write_bytes(b"{")
    os.utime(left, (1_000_000, 1_000_000))
    cache.prune()
    assert not left.exists() and len(cache.entries()) == 5
    (tmp_path / "file").write_text("not a directory")
    off = MetadataCache.open(tmp_path / "file" / "cache")
    assert not off.enabled
    off.put("s3://w/0.metadata.json", SUMMARY)
    assert off.get("s3://w/0.metadata.json") is None


def test_a_cache_is_empty_until_it_holds_something_to_reuse(tmp_path: Path) -> None:
    """`empty` chooses status's first-run reads (one loadTable per replica) over location-then-cache."""
    cache = MetadataCache.open(tmp_path / "c")
    assert cache.empty and cache.size == 0
    cache.put("s3://w/1.metadata.json", SUMMARY)
    assert not cache.empty  # written by this process
    reopened = MetadataCache.open(tmp_path / "c")
    assert reopened.size == 1 and not reopened.empty
    assert MetadataCache.disabled().empty and MetadataCache.open(tmp_path / "c", max_entries=0).empty
