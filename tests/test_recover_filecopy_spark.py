"""The file copy mode on local Spark with real Iceberg tables on disk.

The "replica" tables are written directly into their own warehouse by a writer catalog (a replica is a read-only
table in another warehouse; `rewrite_table_path` cannot relocate several position-delete files per commit,
docs/aws-facts.md#spark-and-iceberg), then only read by the kit. Every test checks that the replica warehouse is
byte-identical before and after it.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.localreplica import file_uri
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.recover.job import Outcome
from s3tables_kit.jobs.recover.model import PROP_VERIFIED
from s3tables_kit.jobs.recover.modes import CopyMode
from tests.recover_world import Warehouses, digest, recover, sym_diff, table_metadata

pytestmark = pytest.mark.spark

W, REP, TGT = "fc_writer", "fc_replica", "fc_target"


@dataclass
class World(Warehouses):
    evo_before_deletes: int = 0  # snapshot id
    evo_before_props_ms: int = 0
    info: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> World:
    w = World(tmp_path_factory.mktemp("filecopy"), REP, TGT)
    sql = w.writer(spark, W, w.replica_wh)

    # evo: schema evolution (add + rename), partition evolution (days -> months + bucket), merge-on-read deletes
    # spread over both specs (many position-delete files), a property set after the deletes.
    sql(
        f"CREATE TABLE {W}.sales.evo (id bigint NOT NULL COMMENT 'key', ts timestamp, cat string, amount double) "
        "USING iceberg PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2', 'team'='sales', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    sql(
        f"INSERT INTO {W}.sales.evo SELECT id, timestamp_seconds(1735689600 + (id % 6) * 86400 + id), "
        "concat('c', id % 5), id * 1.5 FROM range(0, 3000, 1, 3)"
    )
    sql(f"ALTER TABLE {W}.sales.evo ADD COLUMN region string")
    sql(f"ALTER TABLE {W}.sales.evo RENAME COLUMN cat TO category")
    sql(f"ALTER TABLE {W}.sales.evo REPLACE PARTITION FIELD days(ts) WITH months(ts)")
    sql(f"ALTER TABLE {W}.sales.evo ADD PARTITION FIELD bucket(4, id)")
    sql(
        f"INSERT INTO {W}.sales.evo SELECT id, timestamp_seconds(1738368000 + (id % 90) * 86400), "
        "concat('c', id % 5), id * 1.5, CASE WHEN id % 2 = 0 THEN 'eu' ELSE 'us' END FROM range(3000, 6000, 1, 3)"
    )
    w.evo_before_deletes = _current(spark, f"{W}.sales.evo")
    time.sleep(0.05)
    w.evo_before_props_ms = int(time.time() * 1000)
    time.sleep(0.05)
    sql(f"DELETE FROM {W}.sales.evo WHERE id % 7 = 0")
    sql(f"DELETE FROM {W}.sales.evo WHERE id % 11 = 3")
    sql(f"ALTER TABLE {W}.sales.evo SET TBLPROPERTIES ('later'='set after the deletes')")

    # dropped: a dropped column leaves a gap in the field ids -> a new table would renumber -> CTAS
    sql(f"CREATE TABLE {W}.sales.dropped (a int, b string, c int) USING iceberg")
    sql(f"INSERT INTO {W}.sales.dropped VALUES (1, 'x', 10), (2, 'y', 20)")
    sql(f"ALTER TABLE {W}.sales.dropped DROP COLUMN b")
    sql(f"INSERT INTO {W}.sales.dropped VALUES (3, 30)")  # a snapshot with the gap in its schema

    # plain: unpartitioned, two commits, no deletes; its copy is broken on purpose in one test
    sql(f"CREATE TABLE {W}.sales.plain (id bigint, v string) USING iceberg")
    sql(f"INSERT INTO {W}.sales.plain SELECT id, repeat('v', 100) FROM range(0, 5000, 1, 2)")
    sql(f"INSERT INTO {W}.sales.plain VALUES (9999, 'last')")

    # months12: 12 month partitions written under two specs (days, then months): the CTAS write distribution case
    sql(f"CREATE TABLE {W}.sales.months12 (id bigint, d date) USING iceberg PARTITIONED BY (days(d))")
    sql(
        f"INSERT INTO {W}.sales.months12 SELECT id, date_add(DATE '2025-01-01', CAST(id % 365 AS int)) "
        "FROM range(0, 1500, 1, 4)"
    )
    sql(f"ALTER TABLE {W}.sales.months12 REPLACE PARTITION FIELD days(d) WITH months(d)")
    sql(
        f"INSERT INTO {W}.sales.months12 SELECT id, date_add(DATE '2025-01-01', CAST(id % 365 AS int)) "
        "FROM range(1500, 2970, 1, 4)"
    )
    return w


def _current(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0])


@pytest.fixture(autouse=True)
def replica_untouched(world: World) -> Iterator[None]:
    before = digest(world.replica_wh, with_crc=False)
    yield
    assert digest(world.replica_wh, with_crc=False) == before, "the replica warehouse changed during the test"


def _run(spark: Any, world: World, tables: list[str], **kw: Any) -> tuple[Outcome, str]:
    outcome, out, _err = recover(spark, world.request(tables, **kw))
    return outcome, out


def test_file_copy_with_partition_and_schema_evolution_and_position_deletes(spark: Any, world: World) -> None:
    rep_files = spark.sql(
        f"SELECT content, file_path, spec_id FROM {REP}.sales.evo.files"
    ).collect()  # fmt: skip
    deletes = [r for r in rep_files if r["content"] == 1]
    assert len(deletes) >= 8 and {r["spec_id"] for r in deletes} == {0, 2}, "many delete files over two specs"

    out, text = _run(spark, world, ["sales.evo"], target_namespace="files")
    r = out.results[0]
    assert out.exit_code == 0, (r.message, text)
    assert r.copy_mode == "files" and r.verdict == "verified"
    assert "mode: files" in text and "position-delete file(s) rewritten" in text
    assert "size + CRC32" in r.verification_method and "record counts per partition" in r.verification_method
    assert "live row count" in r.verification_method and "fingerprint" not in r.verification_method
    assert sym_diff(spark, f"{REP}.sales.evo", f"{TGT}.files.evo") == (0, 0)
    n = spark.sql(f"SELECT count(*) FROM {TGT}.files.evo").first()[0]
    assert r.rows == n and n < 6000

    # every file byte-identical (data) or rewritten (deletes), all inside the target's own location
    tgt_loc = file_uri(world.target_wh) + "/files/evo/"
    tgt_files = spark.sql(f"SELECT content, file_path, spec_id, record_count FROM {TGT}.files.evo.files").collect()
    assert sorted((f["content"], f["spec_id"]) for f in tgt_files) == sorted(
        (f["content"], f["spec_id"]) for f in rep_files
    )
    assert all(f["file_path"].startswith(tgt_loc) for f in tgt_files)
    rep_loc = file_uri(world.replica_wh) + "/sales/evo/"
    for f in (f for f in rep_files if f["content"] == 0):
        rel = f["file_path"][len(rep_loc) :]
        src_bytes = Path(f["file_path"][len("file:") :]).read_bytes()
        assert (world.target_wh / "files" / "evo" / rel).read_bytes() == src_bytes
    # the target holds the replica's specs under the same ids, the current one as default, the snapshot's schema
    rm, tm = table_metadata(world.replica.warehouse, "sales.evo"), table_metadata(world.target.warehouse, "files.evo")
    strip = lambda specs: [(s["spec-id"], [(f["source-id"], f["transform"]) for f in s["fields"]]) for s in specs]  # noqa: E731
    assert strip(tm["partition-specs"]) == strip(rm["partition-specs"])
    assert tm["default-spec-id"] == rm["default-spec-id"] == 2  # spec 1 (months only) is used by no file
    cur = next(s for s in tm["schemas"] if s["schema-id"] == tm["current-schema-id"])["fields"]
    assert [(f["id"], f["name"]) for f in cur] == [(1, "id"), (2, "ts"), (3, "category"), (4, "amount"), (5, "region")]
    assert tm["properties"]["later"] == "set after the deletes" and PROP_VERIFIED in tm["properties"]
    assert len(tm["snapshots"]) == 1  # one atomic commit

    # deletes keep working on the recovered table (writable, merge-on-read)
    spark.sql(f"DELETE FROM {TGT}.files.evo WHERE id = 1")
    assert spark.sql(f"SELECT count(*) FROM {TGT}.files.evo").first()[0] == n - 1

    # a rerun converges: skipped, nothing rewritten
    again, _ = _run(spark, world, ["sales.evo"], target_namespace="files")
    assert again.exit_code == 2 or again.results[0].verdict in ("skipped", "refused")


def test_point_in_time_takes_the_properties_as_of_the_snapshot(spark: Any, world: World) -> None:
    out, text = _run(
        spark, world, ["sales.evo"], target_namespace="pit", selector=Selector(as_of_ms=world.evo_before_props_ms)
    )
    assert out.exit_code == 0, out.results[0].message
    r = out.results[0]
    assert r.snapshot_id == world.evo_before_deletes and r.copy_mode == "files"
    assert "differs from the current properties in: later" in text
    props = table_metadata(world.target.warehouse, "pit.evo")["properties"]
    assert "later" not in props and props["team"] == "sales"
    assert sym_diff(spark, f"{REP}.sales.evo VERSION AS OF {world.evo_before_deletes}", f"{TGT}.pit.evo") == (0, 0)


def test_dropped_column_goes_to_ctas_in_auto_and_is_refused_in_files_mode(spark: Any, world: World) -> None:
    refused, text = _run(spark, world, ["sales.dropped"], target_namespace="drop", copy_mode=CopyMode.FILES)
    assert refused.exit_code == 2 and not refused.results
    assert "--copy-mode files is not possible" in text and "field ids" in text
    assert not (world.target_wh / "drop").exists()

    out, text = _run(spark, world, ["sales.dropped"], target_namespace="drop", verify="full")
    assert out.exit_code == 0, out.results[0].message
    r = out.results[0]
    assert r.copy_mode == "ctas" and "field ids" in r.copy_mode_reason
    assert "fingerprint" in r.verification_method
    assert sym_diff(spark, f"{REP}.sales.dropped", f"{TGT}.drop.dropped") == (0, 0)


def test_ctas_keeps_the_default_distribution_after_partition_evolution(spark: Any, world: World) -> None:
    out, text = _run(spark, world, ["sales.months12"], target_namespace="dist", copy_mode=CopyMode.CTAS)
    assert out.exit_code == 0, out.results[0].message
    assert "write distribution hash" in text and "partition evolution" in text
    files = spark.sql(f"SELECT count(*) FROM {TGT}.dist.months12.files").first()[0]
    parts = spark.sql(f"SELECT count(DISTINCT partition) FROM {TGT}.dist.months12.files").first()[0]
    assert parts == 12 and files == 12
    # the same table in files mode keeps the replica's files and both specs
    out2, _ = _run(spark, world, ["sales.months12"], target_namespace="dist2")
    assert out2.exit_code == 0 and out2.results[0].copy_mode == "files"
    assert sym_diff(spark, f"{REP}.sales.months12", f"{TGT}.dist2.months12") == (0, 0)


def test_a_failed_copy_leaves_no_table_reports_leftovers_and_a_rerun_converges(spark: Any, world: World) -> None:
    rows = spark.sql(f"SELECT file_path FROM {REP}.sales.plain.files").collect()
    victim = Path(sorted(r["file_path"] for r in rows)[0][len("file:") :])
    hidden = world.root / "hidden.parquet"
    shutil.move(victim, hidden)  # the replica's storage loses one object for a moment
    try:
        out, text = _run(spark, world, ["sales.plain"], target_namespace="fail", copy_mode=CopyMode.FILES)
    finally:
        shutil.move(hidden, victim)
    r = out.results[0]
    assert out.exit_code == 1 and r.verdict == "failed" and r.rows is None
    assert not spark.catalog.tableExists(f"{TGT}.fail.plain")
    assert r.leftovers and all(u.startswith(file_uri(world.target_wh) + "/fail/plain/") for u in r.leftovers)
    assert "next run removes them" in r.leftover_note
    lines = text.splitlines()
    row = lines[next(i for i, line in enumerate(lines) if line.startswith("replica table")) + 2].split()
    # the summary row's cells: replica table, target, verdict, mode, snapshot, rows (the message may hold any digits)
    assert row[2] == "failed" and row[5] == "-", row  # no rows shown for a table that was not copied
    report = json.loads((out.report.parent / "report.json").read_text()) if out.report else {}
    assert report["tables"][0]["leftovers"] == r.leftovers

    again, _ = _run(spark, world, ["sales.plain"], target_namespace="fail", copy_mode=CopyMode.FILES)
    assert again.exit_code == 0 and again.results[0].verdict == "verified" and again.results[0].rows == 5001
    assert sym_diff(spark, f"{REP}.sales.plain", f"{TGT}.fail.plain") == (0, 0)


def test_verify_full_runs_the_fingerprint_after_a_file_copy(spark: Any, world: World) -> None:
    out, _ = _run(spark, world, ["sales.plain"], target_namespace="full", verify="full")
    r = out.results[0]
    assert out.exit_code == 0 and r.copy_mode == "files"
    assert "size + CRC32" in r.verification_method and "row fingerprint" in r.verification_method
    assert r.verification and r.verification["source_rows"] == r.verification["target_rows"] == 5001
