"""Integration tests of the recovery job on local Spark with real Iceberg tables on disk.

One module-scoped "world": source tables built with Spark, relocated into a replica warehouse by
`harness.localreplica.replicate_table` (rewrite_table_path + copy + register_table), source dropped. Every test
checks that every file of the replica warehouse is byte-identical before and after it (autouse fixture).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.localreplica import file_uri, replicate_table
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.recover.cli import main as cli_main
from s3tables_kit.jobs.recover.guard import GuardedSql, ReadOnlyReplicaError
from s3tables_kit.jobs.recover.job import ATTEMPT_MARKER, Outcome
from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource, load_table_info
from s3tables_kit.jobs.recover.model import LINEAGE, PROP_VERIFIED
from s3tables_kit.jobs.recover.verify import verify
from s3tables_kit.topology import paths
from tests.recover_world import Warehouses, digest, recover, sym_diff, table_metadata

pytestmark = pytest.mark.spark

SRC, REP, TGT = "rt_source", "rt_replica", "rt_target"


@dataclass
class World(Warehouses):
    orders_commits: list[tuple[int, int]] = field(default_factory=list)  # (snapshot id, timestamp ms)
    evolving_snapshot: int = 0
    between_ms: int = 0
    after_all_ms: int = 0

    @property
    def source_wh(self) -> Path:
        return self.root / "source"


def _snapshots(spark: Any, table: str) -> list[tuple[int, int]]:
    rows = spark.sql(f"SELECT snapshot_id, committed_at FROM {table}.snapshots ORDER BY committed_at").collect()
    return [(int(r["snapshot_id"]), int(r["committed_at"].replace(tzinfo=UTC).timestamp() * 1000)) for r in rows]


@pytest.fixture(scope="module")
def world(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> World:
    w = World(tmp_path_factory.mktemp("recover"), REP, TGT)
    sql = w.writer(spark, SRC, w.source_wh)

    # orders: the seed walkthrough (5 commits, pause, 6th)
    sql(
        f"CREATE TABLE {SRC}.sales.orders (order_id string NOT NULL COMMENT 'business key', customer_id string, "
        "order_date date, amount double, status string) USING iceberg PARTITIONED BY (months(order_date)) "
        "TBLPROPERTIES ('format-version'='2', 'team'='analytics', 'write.metadata.previous-versions-max'='50')"
    )
    for i in range(1, 6):
        sql(f"INSERT INTO {SRC}.sales.orders VALUES ('o-{i}', 'c-{i % 3}', DATE '2025-{9 + i % 3}-0{i}', {i}.5, 'new')")
    time.sleep(0.6)
    w.between_ms = int(time.time() * 1000)
    time.sleep(0.6)
    sql(f"INSERT INTO {SRC}.sales.orders VALUES ('o-6', 'c-0', DATE '2025-12-02', 6.5, 'new')")
    w.orders_commits = _snapshots(spark, f"{SRC}.sales.orders")

    # evolving: schema evolves after the recovery point (column added + one renamed)
    sql(f"CREATE TABLE {SRC}.sales.evolving (id int, name string, amount double) USING iceberg")
    sql(f"INSERT INTO {SRC}.sales.evolving VALUES (1, 'a', 1.0), (2, 'b', 2.0)")
    w.evolving_snapshot = _snapshots(spark, f"{SRC}.sales.evolving")[-1][0]
    sql(f"ALTER TABLE {SRC}.sales.evolving ADD COLUMN region string")
    sql(f"ALTER TABLE {SRC}.sales.evolving RENAME COLUMN name TO customer_name")
    sql(f"INSERT INTO {SRC}.sales.evolving VALUES (3, 'c', 3.0, 'eu')")

    # partevo: partition spec evolves; the target gets the current spec with all its transforms
    sql(
        f"CREATE TABLE {SRC}.sales.partevo (id bigint, ts timestamp, cat string) USING iceberg "
        "PARTITIONED BY (days(ts))"
    )
    sql(
        f"INSERT INTO {SRC}.sales.partevo VALUES (1, TIMESTAMP '2025-01-01 10:00:00', 'x'), "
        "(2, TIMESTAMP '2025-01-02 11:00:00', 'y')"
    )
    sql(f"ALTER TABLE {SRC}.sales.partevo REPLACE PARTITION FIELD days(ts) WITH months(ts)")
    sql(f"ALTER TABLE {SRC}.sales.partevo ADD PARTITION FIELD bucket(4, id)")
    sql(f"ALTER TABLE {SRC}.sales.partevo ADD PARTITION FIELD truncate(2, cat)")
    sql(
        f"INSERT INTO {SRC}.sales.partevo VALUES (3, TIMESTAMP '2025-02-03 12:00:00', 'zz'), "
        "(4, TIMESTAMP '2025-03-04 13:00:00', 'yy')"
    )

    # mor: merge-on-read deletes in the replica (position delete files)
    sql(
        f"CREATE TABLE {SRC}.sales.mor (id int, v string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    sql(f"INSERT INTO {SRC}.sales.mor SELECT CAST(id AS int), concat('v', id) FROM range(0, 200, 1, 1)")
    sql(f"DELETE FROM {SRC}.sales.mor WHERE id % 7 = 0")
    # One data file -> one position delete file, on purpose: when a commit has several position delete files,
    # rewrite_table_path (Iceberg 1.10) staged only one of them (a missing file, or FileAlreadyExists when
    # partitioned) although its file list names all.

    # types: nested, decimal, timestamps, docs, NOT NULL, sort order
    sql(
        f"CREATE TABLE {SRC}.sales.types (id bigint NOT NULL COMMENT 'the key', price decimal(38,10), "
        "small decimal(5,2), ts timestamp, ts_ntz timestamp_ntz, d date, "
        "addr struct<street: string NOT NULL COMMENT 'street line', zip int>, tags array<string>, "
        "attrs map<string, bigint>, nested array<struct<k: string, v: decimal(10,3)>>, b binary, ok boolean, f float) "
        "USING iceberg PARTITIONED BY (years(ts), identity(ok)) TBLPROPERTIES ('format-version'='2')"
    )
    sql(
        f"INSERT INTO {SRC}.sales.types VALUES "
        "(1, 12345678901234567890.0123456789, 1.25, TIMESTAMP '2024-02-29 23:59:59.123456', "
        "TIMESTAMP_NTZ '2024-02-29 23:59:59.123456', DATE '2024-02-29', named_struct('street', 'Main 1', 'zip', 1000), "
        "array('a', 'b'), map('x', 1L, 'y', 2L), array(named_struct('k', 'p', 'v', 1.5)), X'CAFE', true, 1.5), "
        "(2, NULL, -3.10, NULL, NULL, NULL, named_struct('street', 'Side 2', 'zip', NULL), array(), map(), "
        "array(), NULL, false, NULL), "
        "(3, -0.0000000001, 0.00, TIMESTAMP '1999-12-31 00:00:00', TIMESTAMP_NTZ '1999-12-31 00:00:00', "
        "DATE '1999-12-31', named_struct('street', 'Ünïcode ✓', 'zip', 99999), array(NULL, 'z'), map('k', NULL), "
        "array(named_struct('k', NULL, 'v', NULL)), X'', NULL, -0.0)"
    )
    sql(f"ALTER TABLE {SRC}.sales.types WRITE ORDERED BY id DESC NULLS LAST, d")

    # big: for the kill test
    sql(f"CREATE NAMESPACE {SRC}.big")
    sql(
        f"CREATE TABLE {SRC}.big.events USING iceberg PARTITIONED BY (bucket(8, id)) "
        "TBLPROPERTIES ('write.distribution-mode'='none') AS "
        "SELECT id, concat('payload-', id, '-', repeat('x', 40)) AS payload, id % 1000 AS k, "
        "CAST(id AS double) * 1.5 AS v FROM range(0, 1000000, 1, 8)"
    )

    for name in ("sales.orders", "sales.evolving", "sales.partevo", "sales.mor", "sales.types", "big.events"):
        replicate_table(spark, SRC, w.source_wh, REP, w.replica_wh, Ident.parse(name))
        sql(f"DROP TABLE {SRC}.{name} PURGE")
    w.after_all_ms = int(time.time() * 1000)
    return w


@pytest.fixture(autouse=True)
def replica_untouched(world: World) -> Iterator[None]:
    before = digest(world.replica_wh)
    assert before, "replica warehouse is empty"
    yield
    after = digest(world.replica_wh)
    assert after == before, "the replica warehouse changed during the test"


def _run(spark: Any, world: World, tables: list[str], **kw: Any) -> Outcome:
    return recover(spark, world.request(tables, **kw))[0]


def _props(spark: Any, table: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


# --- point in time ----------------------------------------------------------------------------------------------


def test_latest(spark: Any, world: World) -> None:
    out = _run(spark, world, ["sales.orders"], target_namespace="latest")
    assert out.exit_code == 0, out.results
    r = out.results[0]
    assert r.verdict == "verified" and r.rows == 6
    assert sym_diff(spark, f"{REP}.sales.orders", f"{TGT}.latest.orders") == (0, 0)
    props = _props(spark, f"{TGT}.latest.orders")
    assert props[LINEAGE.snapshot_id] == str(world.orders_commits[-1][0])
    assert props["kit.recovery.replica-snapshot-committed-at"].endswith("Z")
    assert props["team"] == "analytics"  # user property carried
    assert "write.metadata.previous-versions-max" not in props  # service/storage-managed: not carried
    assert PROP_VERIFIED in props
    meta = table_metadata(world.target.warehouse, "latest.orders")
    assert meta["format-version"] == 2
    spec = meta["partition-specs"][-1]["fields"]
    assert [(f["transform"]) for f in spec] == ["month"]
    field0 = meta["schemas"][-1]["fields"][0]
    assert field0["required"] is True and field0["doc"] == "business key"
    # reports on disk, JSON + Markdown
    assert out.report and out.report.exists()
    reports = json.loads((out.report.parent / "report.json").read_text())
    assert reports["tables"][0]["verdict"] == "verified"
    assert list(out.report.parent.glob("*.md"))

    # a rerun converges: already recovered and verified for the same snapshot -> skipped, nothing rewritten
    before = digest(world.target_wh / "latest")
    again = _run(spark, world, ["sales.orders"], target_namespace="latest")
    assert again.exit_code == 0 and again.results[0].verdict == "skipped"
    assert digest(world.target_wh / "latest") == before


def test_as_of_timestamp_between_commits(spark: Any, world: World) -> None:
    out = _run(spark, world, ["sales.orders"], target_namespace="asof", selector=Selector(as_of_ms=world.between_ms))
    assert out.exit_code == 0
    assert out.results[0].snapshot_id == world.orders_commits[4][0]
    assert spark.sql(f"SELECT count(*) FROM {TGT}.asof.orders").first()[0] == 5
    assert sym_diff(spark, f"{REP}.sales.orders VERSION AS OF {world.orders_commits[4][0]}", f"{TGT}.asof.orders") == (
        0,
        0,
    )


def test_as_of_exactly_at_a_commit_includes_it(spark: Any, world: World) -> None:
    sid, ts = world.orders_commits[2]
    out = _run(spark, world, ["sales.orders"], target_namespace="exact", selector=Selector(as_of_ms=ts), dry_run=True)
    assert out.exit_code == 0 and out.plan.tables[0].snapshot.snapshot_id == sid


def test_snapshot_id(spark: Any, world: World) -> None:
    sid = world.orders_commits[2][0]
    out = _run(spark, world, ["sales.orders"], target_namespace="bysnap", selector=Selector(snapshot_id=sid))
    assert out.exit_code == 0
    assert spark.sql(f"SELECT count(*) FROM {TGT}.bysnap.orders").first()[0] == 3
    assert _props(spark, f"{TGT}.bysnap.orders")[LINEAGE.snapshot_id] == str(sid)


@pytest.mark.parametrize(
    ("label", "selector", "expect"),
    [
        ("before-first", lambda w: Selector(as_of_ms=w.orders_commits[0][1] - 60_000), "no snapshot at or before"),
        ("future", lambda w: Selector(as_of_ms=int(time.time() * 1000) + 3_600_000), "is in the future"),
        ("unknown-id", lambda w: Selector(snapshot_id=42), "does not exist in the replica"),
    ],
)
def test_bad_point_in_time_writes_nothing(spark: Any, world: World, label: str, selector: Any, expect: str) -> None:
    before = digest(world.target_wh)
    out = _run(
        spark, world, ["sales.orders"], target_namespace=f"bad_{label.replace('-', '_')}", selector=selector(world)
    )
    assert out.exit_code == 2
    text = " ".join(out.plan.errors)
    assert expect in text and "Retained window: 6 snapshot(s) retained" in text
    assert str(world.orders_commits[0][0]) in text or str(world.orders_commits[-1][0]) in text  # nearest listed
    assert digest(world.target_wh) == before


def test_cli_timestamp_without_zone_is_refused(spark: Any, world: World, capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(world.target_wh)
    naive = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=1)
    code = cli_main(
        [
            "--replica-warehouse",
            world.replica.warehouse,
            "--target-warehouse",
            world.target.warehouse,
            "--table",
            "sales.orders",
            "--as-of",
            naive.isoformat(),
        ],
        spark_factory=lambda conf: spark,
    )
    assert code == 2
    assert "has no zone" in capsys.readouterr().err
    assert digest(world.target_wh) == before


# --- faithful copy -------------------------------------------------------------------------------------------------


def test_schema_as_of_the_recovery_point(spark: Any, world: World) -> None:
    out = _run(
        spark,
        world,
        ["sales.evolving"],
        target_namespace="schema",
        selector=Selector(snapshot_id=world.evolving_snapshot),
    )
    assert out.exit_code == 0, out.results
    cols = [f["name"] for f in table_metadata(world.target.warehouse, "schema.evolving")["schemas"][-1]["fields"]]
    assert cols == ["id", "name", "amount"]
    assert sorted(r[0] for r in spark.sql(f"SELECT name FROM {TGT}.schema.evolving").collect()) == ["a", "b"]
    # and the latest state has the evolved schema
    out2 = _run(spark, world, ["sales.evolving"], target_namespace="schema", suffix="_latest")
    assert out2.exit_code == 0
    cols2 = [
        f["name"] for f in table_metadata(world.target.warehouse, "schema.evolving_latest")["schemas"][-1]["fields"]
    ]
    assert cols2 == ["id", "customer_name", "amount", "region"]


def test_partition_evolution_current_spec(spark: Any, world: World) -> None:
    out = _run(spark, world, ["sales.partevo"], target_namespace="parts")
    assert out.exit_code == 0, out.results
    assert out.results[0].verification and out.results[0].verification["partitions"] >= 3
    meta = table_metadata(world.target.warehouse, "parts.partevo")
    spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])["fields"]
    assert [f["transform"] for f in spec] == ["month", "bucket[4]", "truncate[2]"]
    assert spark.sql(f"SELECT count(*) FROM {TGT}.parts.partevo").first()[0] == 4


def test_merge_on_read_deletes(spark: Any, world: World) -> None:
    info = load_table_info(HadoopMetadataSource(world.replica.warehouse), Ident.parse("sales.mor"))
    assert info and info.snapshots[-1].delete_files > 0  # the replica really has delete files
    out = _run(spark, world, ["sales.mor"], target_namespace="mor")
    assert out.exit_code == 0, out.results
    expected = 200 - len([i for i in range(200) if i % 7 == 0])
    assert out.results[0].rows == expected
    assert sym_diff(spark, f"{REP}.sales.mor", f"{TGT}.mor.mor") == (0, 0)


def test_nested_decimal_timestamp_types_and_sort_order(spark: Any, world: World) -> None:
    out = _run(spark, world, ["sales.types"], target_namespace="types")
    assert out.exit_code == 0, out.results[0].message  # verification includes names/types/nullability/docs
    meta = table_metadata(world.target.warehouse, "types.types")
    fields = {f["name"]: f for f in meta["schemas"][-1]["fields"]}
    assert fields["price"]["type"] == "decimal(38, 10)" and fields["ts"]["type"] == "timestamptz"
    assert fields["ts_ntz"]["type"] == "timestamp"
    assert fields["addr"]["type"]["fields"][0]["required"] is True
    assert fields["addr"]["type"]["fields"][0]["doc"] == "street line"
    order = next(o for o in meta["sort-orders"] if o["order-id"] == meta["default-sort-order-id"])["fields"]
    assert [(o["direction"], o["null-order"]) for o in order] == [("desc", "nulls-last"), ("asc", "nulls-first")]
    spec = next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])["fields"]
    assert [f["transform"] for f in spec] == ["year", "identity"]
    # maps cannot be compared by EXCEPT ALL directly; compare all other columns
    cols = "id, price, small, ts, ts_ntz, d, addr, tags, nested, b, ok, f"
    assert sym_diff(spark, f"(SELECT {cols} FROM {REP}.sales.types)", f"(SELECT {cols} FROM {TGT}.types.types)") == (
        0,
        0,
    )


def test_create_then_insert_path_of_the_rest_endpoint(spark: Any, world: World) -> None:
    """The S3 Tables REST endpoint cannot stage CTAS: the same job path with create + insert."""
    unstaged = CatalogSpec(TGT, "hadoop", file_uri(world.target_wh), stage_create=False)
    out = _run(spark, world, ["sales.types", "sales.orders"], target=unstaged, target_namespace="rest")
    assert out.exit_code == 0, [r.message for r in out.results]
    assert all(r.verdict == "verified" for r in out.results)


# --- safety --------------------------------------------------------------------------------------------------------


def test_existing_target_refused_then_replace(spark: Any, world: World) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {TGT}.taken")
    spark.sql(f"CREATE TABLE {TGT}.taken.orders (x int) USING iceberg TBLPROPERTIES ('someone'='else')")
    spark.sql(f"INSERT INTO {TGT}.taken.orders VALUES (1)")
    out = _run(spark, world, ["sales.orders", "sales.mor"], target_namespace="taken", parallelism=2)
    # refused at plan time (exit 2, no JVM needed): nothing is written, not even the other table; no result rows
    assert out.exit_code == 2 and not out.results
    assert any("sales.orders: target" in e and "pass --replace" in e for e in out.plan.errors)
    assert spark.sql(f"SELECT * FROM {TGT}.taken.orders").collect()[0][0] == 1  # untouched
    assert not spark.catalog.tableExists(f"{TGT}.taken.mor")

    out2 = _run(spark, world, ["sales.orders"], target_namespace="taken", replace=True)
    assert out2.exit_code == 0, out2.results[0].message
    assert spark.sql(f"SELECT count(*) FROM {TGT}.taken.orders").first()[0] == 6
    props = _props(spark, f"{TGT}.taken.orders")
    assert "someone" not in props and props[LINEAGE.snapshot_id] == str(world.orders_commits[-1][0])


def test_verification_detects_a_tampered_copy_with_samples(spark: Any, world: World) -> None:
    out = _run(spark, world, ["sales.orders"], target_namespace="tamper")
    assert out.exit_code == 0
    spark.sql(f"UPDATE {TGT}.tamper.orders SET amount = 99.0 WHERE order_id = 'o-2'")
    spark.sql(f"DELETE FROM {TGT}.tamper.orders WHERE order_id = 'o-6'")
    plan = out.plan.tables[0]
    v = verify(GuardedSql(spark, [REP]), plan, REP, TGT, None)
    assert not v.ok and v.source_rows == 6 and v.target_rows == 5
    assert any("row count" in p for p in v.problems)
    assert any("different row contents" in p for p in v.problems)
    assert sorted(r["order_id"] for r in v.missing_sample) == ["o-2", "o-6"]
    assert [r["amount"] for r in v.extra_sample] == [99.0]


def test_guard_refuses_every_write_to_the_replica(spark: Any, world: World) -> None:
    g = GuardedSql(spark, [REP])
    for stmt in (
        f"INSERT INTO {REP}.sales.orders SELECT * FROM {REP}.sales.orders",
        f"INSERT OVERWRITE {REP}.sales.orders SELECT * FROM {REP}.sales.orders",
        f"UPDATE {REP}.sales.orders SET status = 'x'",
        f"DELETE FROM {REP}.sales.orders WHERE true",
        f"MERGE INTO {REP}.sales.orders t USING (SELECT 'o-1' AS order_id) s ON t.order_id = s.order_id "
        "WHEN MATCHED THEN DELETE",
        f"DROP TABLE {REP}.sales.orders",
        f"ALTER TABLE {REP}.sales.orders SET TBLPROPERTIES ('a'='b')",
        f"ALTER TABLE {REP}.sales.orders WRITE ORDERED BY order_id",
        f"CALL {REP}.system.expire_snapshots(table => 'sales.orders')",
        f"CALL {TGT}.system.remove_orphan_files(table => '{REP}.sales.orders')",
        f"CREATE TABLE {REP}.sales.new AS SELECT 1 AS x",
        f"TRUNCATE TABLE {REP}.sales.orders",
        f"USE {REP}",
    ):
        with pytest.raises(ReadOnlyReplicaError):
            g.sql(stmt)
    # reads and writes elsewhere that merely read the replica are fine
    first = g.sql(f"SELECT count(*) FROM {REP}.sales.orders VERSION AS OF {world.orders_commits[0][0]}").first()
    assert first is not None and first[0] == 1
    g.check(f"CREATE TABLE {TGT}.x.y AS SELECT * FROM {REP}.sales.orders")


def test_killed_during_copy_then_rerun_converges(spark: Any, world: World) -> None:
    """SIGKILL the whole job (python driver + JVM, its process group) while the CTAS writes data files; rerun (auto:
    a file copy) over the leftovers."""
    data_dir = world.target_wh / "kill" / "events" / "data"
    log = world.root / "killed-job.log"
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT)}
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "s3tables_kit.jobs.recover",
                "--replica-warehouse",
                world.replica.warehouse,
                "--target-warehouse",
                world.target.warehouse,
                "--table",
                "big.events",
                "--target-namespace",
                "kill",
                "--copy-mode",
                "ctas",
                "--report",
                str(world.root / "reports" / "killed"),
            ],
            cwd=paths.ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if data_dir.exists() and any(data_dir.rglob("*.parquet")):
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, log.read_text()[-2000:]
    # killed mid-write: orphan data files, no committed (let alone verified) table
    assert any(data_dir.rglob("*.parquet")), "the kill did not happen during the copy"
    props = HadoopMetadataSource(world.target.warehouse)
    assert props.metadata_location(Ident("kill", "events")) is None
    assert (world.target_wh / "kill" / "events" / ATTEMPT_MARKER).exists()

    out = _run(spark, world, ["big.events"], target_namespace="kill")
    assert out.exit_code == 0, out.results[0].message
    assert out.results[0].verdict == "verified" and out.results[0].rows == 1_000_000
    assert out.results[0].copy_mode == "files"
    referenced = {
        r[0].removeprefix("file:")
        for r in spark.sql(f"SELECT file_path FROM {TGT}.kill.events.all_data_files").collect()
    }
    on_disk = {str(p) for p in data_dir.rglob("*") if p.is_file() and not p.name.startswith(".")}
    assert on_disk == referenced, "orphan files left behind"
    assert not (world.target_wh / "kill" / "events" / ATTEMPT_MARKER).exists()
    assert len(spark.sql(f"SHOW TABLES IN {TGT}.kill").collect()) == 1


def _dry_run(world: World, as_of_ms: int, *tables: str) -> subprocess.CompletedProcess[str]:
    """`s3tables-kit recover --dry-run` in a fresh interpreter that fails if a SparkContext was started."""
    args = ["--replica-warehouse", world.replica.warehouse, "--target-warehouse", world.target.warehouse]
    for t in tables:
        args += [t] if t.startswith("--") else ["--table", t]
    args += ["--as-of", datetime.fromtimestamp(as_of_ms / 1000, tz=UTC).isoformat(), "--target-namespace", "dry"]
    args += ["--dry-run", "--report", str(world.root / "reports" / f"dry{as_of_ms}")]
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, s3tables_kit.jobs.recover.cli as c; code = c.main(sys.argv[1:]); "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'; sys.exit(code)",
            *args,
        ],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(paths.ROOT)},
    )


def test_dry_run_consistent_cut_starts_no_jvm_and_writes_nothing(world: World) -> None:
    before = digest(world.target_wh)
    t0 = time.monotonic()
    r = _dry_run(world, world.after_all_ms, "--namespace=sales")
    assert r.returncode == 0, r.stdout + r.stderr
    assert time.monotonic() - t0 < 20
    assert "consistent cut" in r.stdout
    (report,) = (world.root / "reports" / f"dry{world.after_all_ms}").glob("*/report.json")
    plan = json.loads(report.read_text())
    snaps = {t["replica_table"]: t["snapshot_id"] for t in plan["tables"]}
    assert snaps["sales.orders"] == world.orders_commits[-1][0]
    assert all(t["verdict"] == "planned" for t in plan["tables"])
    assert sorted(snaps) == ["sales.evolving", "sales.mor", "sales.orders", "sales.partevo", "sales.types"]
    # an instant at which only some tables existed: the cut is impossible, the plan says why, nothing is written
    r2 = _dry_run(world, world.between_ms, "sales.orders", "sales.mor")
    assert r2.returncode == 2
    assert "sales.mor: no snapshot at or before" in r2.stdout and "Retained window" in r2.stdout
    assert digest(world.target_wh) == before
