"""Recovery under faults and concurrency on local Spark with real Iceberg tables on disk.

Two recoveries of one target at the same moment, a run that loses its lease, a foreign table created during a copy
(a failing Java commit), a kill -9 at the commit boundary, snapshots without data files, a committed table whose
version hint was never written, and a replica path that does not exist.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.localreplica import file_uri
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.killpoints import RECOVERY
from s3tables_kit.jobs.kernel.leases import LEASE_SUFFIX, Holder
from s3tables_kit.jobs.recover.fastpath import _iter, iceberg_catalog
from s3tables_kit.jobs.recover.job import ATTEMPT_MARKER, Outcome, RecoveryRequest, run
from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource
from s3tables_kit.jobs.recover.model import LINEAGE, PROP_VERIFIED
from s3tables_kit.jobs.recover.modes import CopyMode
from s3tables_kit.topology import paths
from tests.recover_world import Warehouses, digest, recover

pytestmark = pytest.mark.spark

W, REP, TGT = "ft_writer", "ft_replica", "ft_target"


World = Warehouses


@pytest.fixture(scope="module")
def world(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> World:
    w = World(tmp_path_factory.mktemp("faults"), REP, TGT)
    sql = w.writer(spark, W, w.replica_wh)
    sql(f"CREATE TABLE {W}.sales.plain (id bigint, v string) USING iceberg TBLPROPERTIES ('team'='sales')")
    sql(f"INSERT INTO {W}.sales.plain SELECT id, repeat('v', 50) FROM range(0, 3000, 1, 3)")
    # emptied: partitioned + sorted, rows inserted, then DELETE FROM (a metadata-only delete): 0 data files
    sql(
        f"CREATE TABLE {W}.sales.emptied (id bigint, d date, s string) USING iceberg PARTITIONED BY (months(d)) "
        "TBLPROPERTIES ('format-version'='2', 'team'='ops')"
    )
    sql(f"ALTER TABLE {W}.sales.emptied WRITE ORDERED BY id")
    sql(f"INSERT INTO {W}.sales.emptied SELECT id, date_add(DATE '2025-01-01', CAST(id AS int)), 'x' FROM range(40)")
    sql(f"DELETE FROM {W}.sales.emptied")
    # deletes_only: merge-on-read position deletes, then every data file removed: only delete files remain
    sql(
        f"CREATE TABLE {W}.sales.deletes_only (id bigint, s string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', 'team'='ops')"
    )
    sql(f"INSERT INTO {W}.sales.deletes_only SELECT id, 'y' FROM range(0, 100, 1, 2)")
    sql(f"DELETE FROM {W}.sales.deletes_only WHERE id % 3 = 0")
    jt = _writer_table(spark, "sales.deletes_only")
    io_, specs = jt.io(), jt.specs()
    ice = spark._jvm.org.apache.iceberg
    kept = [
        d.copy()
        for mf in _iter(jt.currentSnapshot().deleteManifests(io_))
        for d in _iter(ice.ManifestFiles.readDeleteManifest(mf, io_, specs))
    ]
    sql(f"DELETE FROM {W}.sales.deletes_only")  # Iceberg drops the delete files together with the data files ...
    jt.refresh()
    delta = jt.newRowDelta()
    for d in kept:  # ... so a writer that still had them adds them back: live delete files, no data file
        delta.addDeletes(d)
    delta.commit()
    return w


def _writer_table(spark: Any, name: str) -> Any:
    cat = iceberg_catalog(spark, W)
    return cat.loadTable(spark._jvm.org.apache.iceberg.catalog.TableIdentifier.parse(name))


@pytest.fixture(autouse=True)
def no_hook() -> Iterator[None]:
    yield
    RECOVERY.hook = None


def _request(world: World, table: str, ns: str, **kw: Any) -> RecoveryRequest:
    return world.request([table], target_namespace=ns, **kw)


_run = recover


def _referenced(spark: Any, table: str) -> set[str]:
    return {str(r[0]) for r in spark.sql(f"SELECT file_path FROM {table}.all_files").collect()}


def _batched(r: Any) -> bool:
    """Whether a table went through the batched copy (one commit with data + verified) or the per-table path."""
    return bool(r.verification and r.verification.get("verified_in_commit"))


def _listed(outcome: Outcome) -> set[str]:
    return {u for r in outcome.results for u in r.leftovers}


@pytest.mark.parametrize("batch", [True, False], ids=["batched", "per-table"])
def test_two_recoveries_of_one_target_at_the_same_moment(spark: Any, world: World, batch: bool) -> None:
    ns = "race" if batch else "race_pt"
    start = threading.Barrier(2)
    loser_done = threading.Event()
    results: dict[str, tuple[Outcome, str, str]] = {}

    def hold_the_commit(point: str, target: str) -> None:  # the winner commits only after the loser has ended
        if point == "before-commit":
            assert loser_done.wait(120), "the second run did not end while the first held the lease"

    RECOVERY.hook = hold_the_commit

    def engineer(name: str) -> None:
        req = _request(world, "sales.plain", ns, copy_mode=CopyMode.FILES, batch=batch)
        start.wait()
        try:
            results[name] = _run(spark.newSession(), req)
        finally:
            if name not in results or results[name][0].exit_code != 0:
                loser_done.set()

    threads = [threading.Thread(target=engineer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    codes = sorted(r[0].exit_code for r in results.values())
    assert codes == [0, 2], {k: (v[0].exit_code, v[1][-800:]) for k, v in results.items()}
    (winner,) = [v for v in results.values() if v[0].exit_code == 0]
    (loser,) = [v for v in results.values() if v[0].exit_code == 2]
    assert winner[0].results[0].verdict == "verified"
    assert _batched(winner[0].results[0]) is batch
    refusal = [ln for ln in loser[1].splitlines() if ln.startswith("REFUSED:")]
    assert len(refusal) == 1 and "is being recovered by run" in refusal[0] and "pid" in refusal[0]
    assert loser[0].results == []  # refused before anything was written
    tables = spark.sql(f"SHOW TABLES IN {TGT}.{ns}").collect()
    assert len(tables) == 1
    files = _referenced(spark, f"{TGT}.{ns}.plain")
    tdir = world.target_wh / ns / "plain"
    before = digest(tdir, with_crc=False)
    # reruns of either engineer: skipped, nothing named as leftover, nothing removed
    for _ in range(2):
        again, text, _ = _run(spark, _request(world, "sales.plain", ns, copy_mode=CopyMode.FILES, batch=batch))
        assert again.exit_code == 0 and again.results[0].verdict == "skipped", text[-1500:]
        assert not _listed(again) & files
    assert digest(tdir, with_crc=False) == before
    assert not list((world.target_wh / ns).glob("*" + LEASE_SUFFIX))  # leases released


@pytest.mark.parametrize("batch", [True, False], ids=["batched", "per-table"])
def test_a_run_that_loses_its_lease_says_who_won_and_lists_none_of_its_files(
    spark: Any, world: World, batch: bool
) -> None:
    """B's lease expires during its copy (a stalled process); A takes it over and commits. B must not commit, must
    say in one line who created the target, and must not list A's files as its leftovers."""
    outcomes: list[tuple[Outcome, str, str]] = []
    fired: list[str] = []
    ns = "stall" if batch else "stall_pt"
    lease_file = world.target_wh / ns / ("plain" + LEASE_SUFFIX)

    def stall_then_lose(point: str, target: str) -> None:
        if point != "before-commit" or fired:
            return
        fired.append(point)
        h = Holder.parse(lease_file.read_bytes())
        assert h is not None
        stale = Holder(h.run_id, "elsewhere", h.pid, h.started_at, h.target, time.time() - 3600, h.ttl_s)
        lease_file.write_bytes(stale.body())  # B's heartbeat is an hour old: its lease has expired
        outcomes.append(_run(spark, _request(world, "sales.plain", ns, copy_mode=CopyMode.FILES, batch=batch)))

    RECOVERY.hook = stall_then_lose
    b, b_out, b_err = _run(spark, _request(world, "sales.plain", ns, copy_mode=CopyMode.FILES, batch=batch))
    RECOVERY.hook = None
    (a,) = outcomes
    assert a[0].exit_code == 0 and a[0].results[0].verdict == "verified"
    assert _batched(a[0].results[0]) is batch
    a_run = a[0].results[0]
    assert b.exit_code == 1
    r = b.results[0]
    props = {x["key"]: x["value"] for x in spark.sql(f"SHOW TBLPROPERTIES {TGT}.{ns}.plain").collect()}
    winner = props[LINEAGE.run_id]
    line = f"target {TGT}.{ns}.plain was created by run {winner} at "
    assert r.message.startswith(line) and "nothing of this run remains referenced" in r.message
    assert [ln for ln in b_err.splitlines() if line in ln], b_err[-1500:]
    assert line in b_out  # the summary names it too
    files = _referenced(spark, f"{TGT}.{ns}.plain")
    assert not set(r.leftovers) & files and not r.leftovers  # every object B wrote is the winner's now
    assert a_run.verdict == "verified"
    again, _, _ = _run(spark, _request(world, "sales.plain", ns, copy_mode=CopyMode.FILES, batch=batch))
    assert again.exit_code == 0 and again.results[0].verdict == "skipped"
    assert _referenced(spark, f"{TGT}.{ns}.plain") == files
    assert all(Path(f.removeprefix("file:")).is_file() for f in files)


@pytest.mark.parametrize("batch", [True, False], ids=["batched", "per-table"])
def test_a_failing_java_commit_keeps_its_root_cause(spark: Any, world: World, batch: bool) -> None:
    """Someone creates the target table by hand while the kit copies: the kit's catalog commit fails in Java. The
    root cause's class and message reach stderr, the summary and report.json; the foreign table is untouched."""

    ns = "foreign" if batch else "foreign_pt"

    def someone_creates_the_table(point: str, target: str) -> None:
        if point == "before-commit":
            spark.sql(f"CREATE TABLE {TGT}.{ns}.plain (id bigint, v string) USING iceberg")
            spark.sql(f"INSERT INTO {TGT}.{ns}.plain VALUES (1, 'theirs')")

    RECOVERY.hook = someone_creates_the_table
    out, text, err = _run(spark, _request(world, "sales.plain", ns, copy_mode=CopyMode.FILES, batch=batch))
    RECOVERY.hook = None
    assert out.exit_code == 1
    r = out.results[0]
    assert r.cause is not None, r.message
    cls, msg = r.cause["class"], r.cause["message"]
    assert cls.startswith("org.apache.iceberg.exceptions.") and msg, r.cause
    assert r.cause["frames"] and all("." in f for f in r.cause["frames"])
    assert " ".join(f"{cls}: {msg}".split())[:300] in err and cls in text
    assert out.report is not None
    report = json.loads((out.report.parent / "report.json").read_text())
    assert report["tables"][0]["cause"]["class"] == cls and report["tables"][0]["cause"]["message"] == msg
    assert "created by something other than this kit" in r.message
    theirs = _referenced(spark, f"{TGT}.{ns}.plain")
    assert not set(r.leftovers) & theirs
    assert spark.sql(f"SELECT v FROM {TGT}.{ns}.plain").collect()[0][0] == "theirs"
    assert all(Path(f.removeprefix("file:")).is_file() for f in theirs)


def test_kill_at_the_commit_boundary_without_a_version_hint_then_rerun_converges(spark: Any, world: World) -> None:
    """kill -9 (driver + JVM) right after the catalog commit, before the verified-at property; the version hint is
    then removed as if the process had died between v1.metadata.json and version-hint.text. The rerun finds the
    committed table through the catalog, verifies it and deletes nothing."""
    log = world.root / "kill.log"
    cmd = [sys.executable, "-m", "s3tables_kit.jobs.recover", "--replica-warehouse", world.replica.warehouse]
    cmd += ["--target-warehouse", world.target.warehouse, "--table", "sales.plain", "--target-namespace", "kill"]
    cmd += ["--copy-mode", "files", "--report", str(world.root / "reports" / "killed")]
    cmd += ["--no-batch"]  # the batched copy commits data + verified at once: no unverified state to kill into
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT), **RECOVERY.kill_env("after-commit")}
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=paths.ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                              start_new_session=True, timeout=300)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, log.read_text()[-2000:]
    tdir = world.target_wh / "kill" / "plain"
    meta = tdir / "metadata"
    assert (tdir / ATTEMPT_MARKER).exists() and (world.target_wh / "kill" / ("plain" + LEASE_SUFFIX)).exists()
    (meta / "version-hint.text").unlink()
    src = HadoopMetadataSource(world.target.warehouse)
    loc = src.metadata_location(Ident("kill", "plain"))
    assert loc and PROP_VERIFIED not in src.read_json(loc)["properties"]
    before = {p for p in tdir.rglob("*") if p.is_file() and p.name != ATTEMPT_MARKER}

    out, text, _ = _run(spark, _request(world, "sales.plain", "kill", copy_mode=CopyMode.FILES))
    r = out.results[0]
    assert out.exit_code == 0 and r.verdict == "verified", text[-2000:]
    assert r.action.startswith("verify the committed earlier attempt")
    assert all(p.exists() for p in before), "the rerun deleted files of the committed table"
    data = {p for p in before if "/data/" in str(p)}
    assert {f.removeprefix("file:") for f in _referenced(spark, f"{TGT}.kill.plain")} == {str(p) for p in data}
    assert not (tdir / ATTEMPT_MARKER).exists()
    assert spark.sql(f"SELECT count(*) FROM {TGT}.kill.plain").first()[0] == 3000


def test_kill_before_the_batched_commit_then_rerun_converges(spark: Any, world: World) -> None:
    """kill -9 (driver + JVM) on the batched path after the copy and the checks, right before the one catalog
    commit: no table, only this attempt's files under its marker. The rerun asks the catalog (no table), removes
    them, copies again and commits one verified table."""
    log = world.root / "kill-batch.log"
    cmd = [sys.executable, "-m", "s3tables_kit.jobs.recover", "--replica-warehouse", world.replica.warehouse]
    cmd += ["--target-warehouse", world.target.warehouse, "--table", "sales.plain", "--target-namespace", "killb"]
    cmd += ["--copy-mode", "files", "--report", str(world.root / "reports" / "killed-batch")]
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT), **RECOVERY.kill_env("before-commit")}
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=paths.ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                              start_new_session=True, timeout=300)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, log.read_text()[-2000:]
    assert "file copy of 1 table(s)" in log.read_text()  # it was the batched copy that was killed
    tdir = world.target_wh / "killb" / "plain"
    assert (tdir / ATTEMPT_MARKER).exists()
    assert HadoopMetadataSource(world.target.warehouse).metadata_location(Ident("killb", "plain")) is None
    out, text, err = _run(spark, _request(world, "sales.plain", "killb", copy_mode=CopyMode.FILES))
    r = out.results[0]
    assert out.exit_code == 0 and r.verdict == "verified" and _batched(r), text[-2000:]
    assert "leftover file(s) of an unfinished attempt" in err
    assert not (tdir / ATTEMPT_MARKER).exists()
    data = {str(p) for p in tdir.rglob("*") if p.is_file() and "/data/" in str(p) and not p.name.endswith(".crc")}
    assert {f.removeprefix("file:") for f in _referenced(spark, f"{TGT}.killb.plain")} == data
    assert spark.sql(f"SELECT count(*) FROM {TGT}.killb.plain").first()[0] == 3000


@pytest.mark.parametrize("mode", [CopyMode.FILES, CopyMode.AUTO])
@pytest.mark.parametrize("table", ["emptied", "deletes_only"])
def test_a_snapshot_without_data_files_recovers_as_a_verified_empty_table(
    spark: Any, world: World, table: str, mode: CopyMode
) -> None:
    rep = HadoopMetadataSource(world.replica.warehouse)
    rep_meta = rep.read_json(rep.metadata_location(Ident("sales", table)) or "")
    summary = next(s for s in rep_meta["snapshots"] if s["snapshot-id"] == rep_meta["current-snapshot-id"])["summary"]
    assert summary["total-data-files"] == "0"
    if table == "deletes_only":
        assert int(summary["total-delete-files"]) > 0, summary  # only delete files are live
    ns = f"empty_{mode.value}"
    out, text, err = _run(spark, _request(world, f"sales.{table}", ns, copy_mode=mode))
    r = out.results[0]
    assert out.exit_code == 0 and r.verdict == "verified", text[-1500:] + err[-1500:]
    assert r.copy_mode == "files" and r.rows == 0
    assert r.verification and r.verification["source_rows"] == r.verification["target_rows"] == 0
    tgt = HadoopMetadataSource(world.target.warehouse)
    t_meta = tgt.read_json(tgt.metadata_location(Ident(ns, table)) or "")
    cur = next(s for s in t_meta["schemas"] if s["schema-id"] == t_meta["current-schema-id"])
    src = next(s for s in rep_meta["schemas"] if s["schema-id"] == rep_meta["current-schema-id"])
    assert cur["fields"] == src["fields"]
    assert [s["fields"] for s in t_meta["partition-specs"]] == [s["fields"] for s in rep_meta["partition-specs"]]
    assert [o["fields"] for o in t_meta["sort-orders"] if o["order-id"] == t_meta["default-sort-order-id"]] == [
        o["fields"] for o in rep_meta["sort-orders"] if o["order-id"] == rep_meta["default-sort-order-id"]
    ]
    assert t_meta["properties"]["team"] == "ops"
    assert spark.sql(f"SELECT count(*) FROM {TGT}.{ns}.{table}").first()[0] == 0
    assert not _batched(r)  # an empty snapshot takes the per-table path, also when batching is on (the default)


def test_an_empty_snapshot_in_a_batched_run_is_routed_to_the_per_table_path(spark: Any, world: World) -> None:
    """One run, batching on: the table with data files goes through the batched copy (one commit), the snapshots
    without data files through the per-table path; all verified, nothing crashes."""
    req = world.request(
        ("sales.plain", "sales.emptied", "sales.deletes_only"),
        target_namespace="mixed",
        copy_mode=CopyMode.FILES,
        report_dir=world.root / "reports" / "mixed",
    )
    assert req.batch
    out, text, err = _run(spark, req)
    assert out.exit_code == 0, text[-2000:] + err[-2000:]
    by = {r.replica_table: r for r in out.results}
    assert all(r.verdict == "verified" and r.copy_mode == "files" for r in by.values()), text[-2000:]
    assert _batched(by["sales.plain"]) and by["sales.plain"].rows == 3000
    for t in ("sales.emptied", "sales.deletes_only"):
        assert not _batched(by[t]) and by[t].rows == 0
        assert spark.sql(f"SELECT count(*) FROM {TGT}.mixed.{t.split('.')[1]}").first()[0] == 0
    assert spark.sql(f"SELECT count(*) FROM {TGT}.mixed.plain").first()[0] == 3000


def test_a_replica_path_that_does_not_exist_is_named(world: World) -> None:
    missing = world.root / "no-such-replica"
    req = world.request(
        ["sales.plain"],
        replica=CatalogSpec(REP, "hadoop", file_uri(missing)),
        report_dir=world.root / "reports" / "missing",
    )
    out = io.StringIO()

    def no_spark(conf: dict[str, str]) -> Any:
        raise AssertionError("no JVM for a plan error")

    outcome = run(req, no_spark, out=out, err=io.StringIO())
    assert outcome.exit_code == 2
    assert f"the warehouse path {missing} does not exist" in out.getvalue()
