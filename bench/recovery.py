"""Recovery benchmarks on local Spark with real Iceberg tables on disk (Hadoop catalogs), using the kit's own code.

Data: an orders-like table (24 month partitions) built in a source warehouse and relocated into a replica warehouse
with `harness.localreplica.replicate_table` (the stand-in for managed replication). Everything lives under
`bench-out/work/` and is rebuilt every run.

Measurements (sections of the issue):
  1. copy: plain Spark CTAS (defaults) vs the kit's recovery (`s3tables_kit.jobs.recover.job.run`) vs a pyiceberg Arrow
     copy vs a raw file copy of the data files;
  2. verification: the kit's verification vs its copy, and vs EXCEPT ALL both ways;
  3. many tables: the kit recovering a namespace at one instant in one application (`s3tables-kit recover`) vs one
     `spark-submit jobs/recover_entry.py --table ...` per table in sequence;
  5. planning: `s3tables-kit recover --dry-run` for 100 tables in a fresh interpreter, with a Spark factory that
     fails if called (no JVM).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.arrow_baseline import pyiceberg_copy
from bench.eventlog import Phase
from bench.report import Measurement
from bench.vault_restore import backup_orders, restore_in_session
from s3tables_kit.topology.paths import ROOT

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec


ORDERS_DDL = (
    "order_id bigint NOT NULL, customer_id string NOT NULL, order_date date NOT NULL, order_ts timestamp, "
    "status string, amount decimal(12,2), quantity int, channel string, note string"
)
ORDERS_PROPS = "'format-version'='2', 'owner.team'='sales', 'comment.source'='bench'"


def orders_select(start: int, end: int, partitions: int) -> str:
    """Deterministic orders-like rows for ids [start, end): 24 months (2024-01 .. 2025-12) of order dates."""
    return f"""
SELECT id AS order_id,
  concat('c-', lpad(CAST(pmod(xxhash64(id, 7), 500000) AS string), 7, '0')) AS customer_id,
  d AS order_date,
  timestamp_seconds(CAST(unix_date(d) AS bigint) * 86400 + pmod(xxhash64(id, 13), 86400)) AS order_ts,
  element_at(array('pending', 'shipped', 'delivered', 'returned', 'cancelled'), CAST(pmod(id, 5) + 1 AS int))
    AS status,
  CAST(pmod(xxhash64(id, 17), 1000000) / 100 AS decimal(12,2)) AS amount,
  CAST(pmod(id, 9) + 1 AS int) AS quantity,
  element_at(array('web', 'app', 'store', 'partner'), CAST(pmod(xxhash64(id, 19), 4) + 1 AS int)) AS channel,
  CASE WHEN pmod(id, 10) = 0 THEN NULL ELSE concat('n', CAST(pmod(xxhash64(id, 23), 1000) AS string)) END AS note
FROM (SELECT id, date_add(DATE '2024-01-01', CAST(pmod(xxhash64(id, 11), 731) AS int)) AS d
      FROM range({start}, {end}, 1, {partitions}))"""


@dataclass(frozen=True)
class Scale:
    name: str
    orders_rows: int
    orders_batches: int
    many_tables: int
    many_rows: int
    plan_tables: int
    synth_destinations: int
    synth_tables: int
    submit_sample: int | None = None  # None: one spark-submit per table for every table
    rounds: int = 3  # interleaved rounds of the copy comparison (after a warm-up)


SCALES = {
    "quick": Scale("quick", 200_000, 1, 4, 20_000, 100, 2, 100, submit_sample=2, rounds=1),  # bench/plan.py
    "small": Scale("small", 1_000_000, 2, 6, 50_000, 100, 5, 1000),
    "full": Scale("full", 20_000_000, 4, 50, 200_000, 100, 5, 1000, submit_sample=8, rounds=4),
}


def load() -> float:
    return os.getloadavg()[0]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Work:
    root: Path
    phases: list[Phase] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)

    def wh(self, name: str) -> Path:
        p = self.root / "warehouses" / name
        p.mkdir(parents=True, exist_ok=True)
        return p

    @contextmanager
    def attempt(self, what: str) -> Iterator[None]:
        """Record a failure of one measurement and carry on with the next."""
        try:
            yield
        except Exception as e:
            import traceback

            traceback.print_exc()
            self.errors.append(f"{what}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:400]}")

    @contextmanager
    def timed(
        self, section: str, name: str, rows: int | None = None, nbytes: int | None = None, note: str = ""
    ) -> Iterator[dict[str, Any]]:
        """Time a block; the block may set `box['rows'|'bytes'|'note'|'seconds']` to refine what is recorded."""
        box: dict[str, Any] = {}
        l0, w0, t0 = load(), now_ms(), time.perf_counter()
        print(f"  [{section}] {name} ...", flush=True)
        yield box
        secs = box.get("seconds", time.perf_counter() - t0)
        self.phases.append(Phase(f"{section} {name}", w0, now_ms()))
        m = Measurement(
            section,
            name,
            secs,
            rows=box.get("rows", rows),
            bytes=box.get("bytes", nbytes),
            note=box.get("note", note),
            load=(l0, load()),
        )
        self.measurements.append(m)
        rate = f", {m.rows_per_s / 1e3:,.0f} k rows/s" if m.rows_per_s else ""
        print(f"  [{section}] {name}: {secs:.2f} s{rate}", flush=True)


def dir_bytes(p: Path, suffix: str = "") -> int:
    return sum(f.stat().st_size for f in p.rglob(f"*{suffix}") if f.is_file())


# --- Spark session and catalogs ----------------------------------------------------------------------------------


def catalogs(work: Work) -> dict[str, Any]:
    from harness.localreplica import file_uri
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec

    return {
        name: CatalogSpec(name, "hadoop", file_uri(work.wh(wh)))
        for name, wh in (
            ("src", "source"),
            ("replica", "replica"),
            ("base", "baseline"),
            ("recovery", "kit"),
        )
    }


def session(work: Work) -> SparkSession:
    from s3tables_kit.jobs.kernel.catalogs import catalog_conf
    from s3tables_kit.jobs.spark import build_session

    conf: dict[str, str] = {}
    for spec in catalogs(work).values():
        conf.update(catalog_conf(spec))
    evdir = work.root / "eventlog"
    evdir.mkdir(parents=True, exist_ok=True)
    return build_session(
        conf,
        app_name="kit-bench",
        extra={"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file:" + str(evdir)},
    )


# --- data ----------------------------------------------------------------------------------------------------------


def build_orders(spark: SparkSession, work: Work, sc: Scale) -> dict[str, Any]:
    from harness.localreplica import replicate_table
    from s3tables_kit.jobs.kernel.idents import Ident

    spark.sql("CREATE NAMESPACE IF NOT EXISTS src.bench")
    spark.sql(
        f"CREATE TABLE src.bench.orders ({ORDERS_DDL}) USING iceberg PARTITIONED BY (months(order_date)) "
        f"TBLPROPERTIES ({ORDERS_PROPS})"
    )
    per = sc.orders_rows // sc.orders_batches
    for b in range(sc.orders_batches):
        end = sc.orders_rows if b == sc.orders_batches - 1 else (b + 1) * per
        spark.sql(f"INSERT INTO src.bench.orders {orders_select(b * per, end, 4)}")
        print(f"    orders: batch {b + 1}/{sc.orders_batches} committed", flush=True)
    rep = replicate_table(spark, "src", work.wh("source"), "replica", work.wh("replica"), Ident("bench", "orders"))
    from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource, load_table_info

    info = load_table_info(HadoopMetadataSource("file:" + str(work.wh("replica"))), Ident("bench", "orders"))
    assert info is not None and info.current_snapshot_id is not None
    snap = info.snapshot(info.current_snapshot_id)
    assert snap is not None
    return {
        "rows": snap.total_records,
        "data_files": snap.data_files,
        "bytes": snap.total_bytes,
        "snapshot_id": snap.snapshot_id,
        "snapshots": len(info.snapshots),
        "metadata_location": info.metadata_location,
        "files_replicated": rep["files_copied"],
    }


def build_many(spark: SparkSession, work: Work, sc: Scale) -> dict[str, Any]:
    """`fleet.t00..` in the source, then relocated into the replica one by one; returns the consistent-cut instant."""
    from harness.localreplica import replicate_table
    from s3tables_kit.jobs.kernel.idents import Ident

    spark.sql("CREATE NAMESPACE IF NOT EXISTS src.fleet")
    names = [f"t{i:02d}" for i in range(sc.many_tables)]

    def make(n: str) -> None:
        spark.sql(
            f"CREATE TABLE src.fleet.{n} USING iceberg PARTITIONED BY (months(order_date)) "
            f"TBLPROPERTIES ({ORDERS_PROPS}) AS {orders_select(0, sc.many_rows, 2)}"
        )

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(make, names))
    print(f"    fleet: {len(names)} tables x {sc.many_rows} rows created", flush=True)
    time.sleep(1.1)
    cut = datetime.now(UTC)
    time.sleep(1.1)
    # A later commit on every table: the consistent cut must pick the earlier snapshot.
    for n in names[: max(1, len(names) // 5)]:
        spark.sql(f"INSERT INTO src.fleet.{n} {orders_select(sc.many_rows, sc.many_rows + 1000, 1)}")
    for n in names:
        replicate_table(spark, "src", work.wh("source"), "replica", work.wh("replica"), Ident("fleet", n))
    print(f"    fleet: {len(names)} tables replicated", flush=True)
    return {"tables": len(names), "rows_per_table": sc.many_rows, "as_of": cut.isoformat().replace("+00:00", "Z")}


def build_planning(spark: SparkSession, work: Work, sc: Scale) -> dict[str, Any]:
    """`planning.p000..`: small tables with two snapshots each, for the JVM-free dry run (read from the source
    warehouse directly: planning reads only metadata, whose layout is the same as a replica's)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS src.planning")
    names = [f"p{i:03d}" for i in range(sc.plan_tables)]

    def make(n: str) -> None:
        spark.sql(
            f"CREATE TABLE src.planning.{n} USING iceberg PARTITIONED BY (days(d)) TBLPROPERTIES ('format-version'='2')"
            " AS SELECT id, date_add(DATE '2025-01-01', CAST(id % 3 AS int)) AS d, CAST(id AS string) AS v "
            "FROM range(0, 30, 1, 1)"
        )

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(make, names))
    time.sleep(1.1)
    cut = datetime.now(UTC)
    time.sleep(1.1)

    def more(n: str) -> None:
        spark.sql(f"INSERT INTO src.planning.{n} VALUES (1000, DATE '2025-02-01', 'later')")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(more, names))
    print(f"    planning: {len(names)} tables with 2 snapshots each", flush=True)
    return {"tables": len(names), "as_of": cut.isoformat().replace("+00:00", "Z")}


# --- measurement 1 + 2 ------------------------------------------------------------------------------------------


def kit_request(work: Work, target: str | CatalogSpec, tables: list[str], report: Path, **kw: Any) -> Any:
    """A recovery of the bench's replica into `target`: one of the bench's catalogs by name, or a catalog of its own."""
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.jobs.recover.job import RecoveryRequest

    cats = catalogs(work)
    into = cats[target] if isinstance(target, str) else target
    return RecoveryRequest(
        replica=cats["replica"], target=into, tables=[Ident.parse(t) for t in tables], report_dir=report, **kw
    )


def run_kit_in_session(spark: SparkSession, work: Work, target: str | CatalogSpec, report: Path, **kw: Any) -> Any:
    from s3tables_kit.jobs.recover.job import run
    from s3tables_kit.jobs.spark import add_catalogs

    def factory(conf: dict[str, str]) -> SparkSession:
        add_catalogs(spark, conf)
        return spark

    req = kit_request(work, target, ["bench.orders"], report, parallelism=1, **kw)
    name = target if isinstance(target, str) else target.name
    with (work.root / f"kit-{name}-{report.name}.log").open("w") as out:
        outcome = run(req, factory, out=out, err=out)
    if outcome.exit_code != 0 or not outcome.results or outcome.results[0].verdict != "verified":
        raise RuntimeError(f"kit recovery into {target} failed: {[r.as_dict() for r in outcome.results]}")
    return outcome.results[0]


def _ctas(spark: SparkSession, name: str) -> None:
    spark.sql(
        f"CREATE TABLE base.bench.{name} USING iceberg PARTITIONED BY (months(order_date)) "
        "AS SELECT * FROM replica.bench.orders"
    )


def measure_rounds(spark: SparkSession, work: Work, orders: dict[str, Any], rounds: int) -> dict[str, Any]:
    """Interleaved rounds after a warm-up: kit file copy (A), the kit's restore of that snapshot from the vault (D),
    default Spark CTAS (B), pyiceberg Arrow copy (C), A D B C A D B C ... Each round's ratios compare neighbours in
    time (the machine is shared: 2 cores, other work)."""
    from s3tables_kit.jobs.recover.modes import CopyMode

    rows, nbytes = int(orders["rows"]), int(orders["bytes"])
    reports = work.root / "reports"
    out: dict[str, Any] = {"rounds": []}
    # warm-up (not measured): every code path once (JIT, Python workers, catalogs, page cache)
    spark.sql(
        "CREATE TABLE base.warm.w USING iceberg PARTITIONED BY (months(order_date)) AS "
        "SELECT * FROM replica.bench.orders LIMIT 50000"
    )
    spark.sql("SELECT count(*), sum(xxhash64(*)) FROM replica.bench.orders").collect()
    run_kit_in_session(spark, work, "recovery", reports / "warm", copy_mode=CopyMode.FILES, target_namespace="warm")
    pyiceberg_copy(str(orders["metadata_location"]), int(orders["snapshot_id"]), work.wh("pyiceberg-warm"))
    point = backup_orders(spark, work.wh("replica"), work.wh("vault"))  # the same snapshot, for (D)
    kit = catalogs(work)["recovery"]
    restore_in_session(spark, work.wh("vault"), point, kit, reports / "vault-warm", "vwarm")
    for i in range(1, rounds + 1):
        rnd: dict[str, Any] = {"round": i}
        box_kit: dict[str, Any] = {}
        with work.timed("1", f"round {i}: (A) kit file copy, whole run", rows, nbytes) as box:
            r = run_kit_in_session(
                spark, work, "recovery", reports / f"files-{i}", copy_mode=CopyMode.FILES, target_namespace=f"r{i}"
            )
            box_kit["r"] = r
            box["note"] = (
                f"plan {r.plan_seconds:.2f} s + copy and commit {r.copy_seconds:.2f} s + verification "
                f"{r.verify_seconds:.2f} s; {r.files} files; {r.verification_method.split(';')[0][:60]}"
            )
        r = box_kit["r"]
        rnd["kit"] = r.as_dict()
        rnd["kit_copy_s"] = r.plan_seconds + r.copy_seconds
        rnd["kit_verify_s"] = r.verify_seconds
        rnd["kit_copy_mb_per_s"] = r.copy_mb_per_s
        work.measurements.append(
            Measurement(
                "1",
                f"round {i}: (A) kit file copy: plan + copy + commit",
                rnd["kit_copy_s"],
                rows,
                nbytes,
                "TableResult.plan_seconds + copy_seconds",
            )
        )
        work.measurements.append(
            Measurement(
                "2",
                f"round {i}: (A) kit file-copy verification",
                r.verify_seconds,
                rows,
                nbytes,
                "size + CRC32 per file, record counts per partition (TableResult.verify_seconds)",
            )
        )
        with work.timed("1", f"round {i}: (D) kit restore from the vault, whole run", rows, nbytes) as box:
            v = restore_in_session(spark, work.wh("vault"), point, kit, reports / f"vault-{i}", f"v{i}")
            rnd["vault_s"] = v.plan_seconds + v.copy_seconds
            box["note"] = f"plan {v.plan_seconds:.2f} s + copy and commit {v.copy_seconds:.2f} s"
        with work.timed("1", f"round {i}: (B) plain Spark CTAS, default settings", rows, nbytes) as box:
            t0 = time.perf_counter()
            _ctas(spark, f"orders_ctas_{i}")
            rnd["ctas_s"] = time.perf_counter() - t0
        with (
            work.attempt(f"round {i} (C) pyiceberg copy"),
            work.timed("1", f"round {i}: (C) pyiceberg Arrow copy", rows, nbytes) as box,
        ):
            t0 = time.perf_counter()
            pc = pyiceberg_copy(str(orders["metadata_location"]), int(orders["snapshot_id"]), work.wh(f"pyiceberg-{i}"))
            rnd["arrow_s"] = time.perf_counter() - t0
            box["note"] = f"read {pc['read_s']:.1f} s + write {pc['write_s']:.1f} s"
        out["rounds"].append(rnd)
        # free the disk (each copy is the table's size)
        spark.sql(f"DROP TABLE IF EXISTS base.bench.orders_ctas_{i} PURGE")
        shutil.rmtree(work.wh(f"pyiceberg-{i}"), ignore_errors=True)
        if i > 1:
            spark.sql(f"DROP TABLE IF EXISTS recovery.r{i}.orders PURGE")
        spark.sql(f"DROP TABLE IF EXISTS recovery.v{i}.orders PURGE")
    return out


def measure_copy(spark: SparkSession, work: Work, orders: dict[str, Any], except_all: bool = True) -> dict[str, Any]:
    """The CTAS-mode kit once (the row fingerprint's figures, kept), a raw copy, the fingerprint profile, EXCEPT ALL."""
    from s3tables_kit.jobs.recover.modes import CopyMode

    rows, nbytes, sid = int(orders["rows"]), int(orders["bytes"]), int(orders["snapshot_id"])
    out: dict[str, Any] = {}
    reports = work.root / "reports"
    box_kit: dict[str, Any] = {}
    with work.timed("1", "(b) kit recovery, --copy-mode ctas: copy + fingerprint verification", rows, nbytes) as box:
        r = run_kit_in_session(spark, work, "recovery", reports / "kit", copy_mode=CopyMode.CTAS)
        box["note"] = f"plan+copy+verify+report; {r.files} files written"
        box_kit["r"] = r
    r = box_kit["r"]
    work.measurements.append(
        Measurement(
            "1",
            "(b) kit recovery, --copy-mode ctas: copy only",
            r.copy_seconds,
            rows,
            nbytes,
            "TableResult.copy_seconds",
        )
    )
    work.measurements.append(
        Measurement(
            "2", "kit row fingerprint verification (both sides, one pass each)", r.verify_seconds, rows, nbytes,
            "TableResult.verify_seconds of the CTAS-mode run",
        )
    )  # fmt: skip
    out["kit"] = r.as_dict()
    with work.attempt("1 (d) raw copy"):
        _raw_copy(work, rows)
    with work.attempt("1 (c) pyiceberg profile"):
        out["pyiceberg"] = _arrow_copy(work, orders)
    with work.attempt("2 verification profile"):
        out["verification_profile"] = verification_profile(spark, work, rows)
    if except_all:
        with work.attempt("2 EXCEPT ALL"):
            _except_all(spark, work, rows, nbytes, sid)
    return out


ORDERS_COLS = "order_id, customer_id, order_date, order_ts, status, amount, quantity, channel, note"
FINGERPRINT_VARIANTS = {
    "scan floor: count(*) per partition": "count(*)",
    "earlier fingerprint: count + sum(DECIMAL xxhash64) + sum(DECIMAL hash)": (
        f"count(*), sum(CAST(xxhash64({ORDERS_COLS}) AS DECIMAL(38,0))), "
        f"sum(CAST(hash({ORDERS_COLS}) AS DECIMAL(38,0)))"
    ),
    "kit's fingerprint: count + bigint halves of xxhash64 + bigint hash": (
        f"count(*), sum(shiftright(xxhash64({ORDERS_COLS}), 32)), sum(xxhash64({ORDERS_COLS}) & 4294967295), "
        f"sum(CAST(hash({ORDERS_COLS}) AS BIGINT))"
    ),
}


def verification_profile(spark: SparkSession, work: Work, rows: int) -> dict[str, float]:
    """Profile by elimination of the verification aggregate on ONE side (the kit's target), grouped by partition
    as the kit does: what the scan costs, what the earlier DECIMAL sums cost, and what the kit's exact bigint sums
    cost (two 32-bit halves of xxhash64 summed as bigint cannot overflow below 2^31 rows per partition)."""
    t = "recovery.bench.orders"
    p = "recovery.system.months(order_date)"
    out: dict[str, float] = {}
    spark.sql(f"SELECT {p}, count(*) FROM {t} GROUP BY 1").collect()  # warm
    for name, agg in FINGERPRINT_VARIANTS.items():
        with work.timed("2", f"profile, one side: {name}", rows) as box:
            spark.sql(f"SELECT {p} AS p0, {agg} FROM {t} GROUP BY 1").collect()
            box["note"] = "profile by elimination (not a kit figure)"
        m = work.measurements[-1]
        out[name] = m.seconds or 0.0
    return out


def _arrow_copy(work: Work, orders: dict[str, Any]) -> dict[str, Any]:
    rows, nbytes, sid = int(orders["rows"]), int(orders["bytes"]), int(orders["snapshot_id"])
    prof = cProfile.Profile()
    with work.timed("1", "(c) pyiceberg Arrow copy, profiled (cProfile on)", rows, nbytes) as box:
        prof.enable()
        pc = pyiceberg_copy(str(orders["metadata_location"]), sid, work.wh("pyiceberg"))
        prof.disable()
        box["rows"] = pc["rows"]
        box["note"] = (
            f"read {pc['read_s']:.1f} s + write {pc['write_s']:.1f} s; Arrow {pc['arrow_mb']:.0f} MB in RAM; "
            f"{pc['files']} files; month transform: {pc['month_transform']}"
        )
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(14)
    work.profiles["1 (c) pyiceberg Arrow copy — cProfile, top cumulative"] = _trim_pstats(s.getvalue())
    return pc


def _raw_copy(work: Work, rows: int) -> None:
    data_dir = work.wh("replica") / "bench" / "orders" / "data"
    raw = work.root / "raw-copy"
    shutil.rmtree(raw, ignore_errors=True)
    with work.timed("1", "(d) raw file copy of the data files (cp -r, floor)", rows, dir_bytes(data_dir, ".parquet")):
        subprocess.run(["cp", "-r", str(data_dir), str(raw)], check=True)


def _except_all(spark: SparkSession, work: Work, rows: int, nbytes: int, sid: int) -> None:
    src_rel, dst_rel = f"replica.bench.orders VERSION AS OF {sid}", "recovery.bench.orders"

    def count(q: str) -> int:
        row = spark.sql(f"SELECT count(*) AS n FROM ({q})").first()
        return int(row["n"]) if row else -1

    with work.timed("2", "EXCEPT ALL both ways (replica vs kit target)", rows, nbytes) as box:
        a = count(f"SELECT * FROM {src_rel} EXCEPT ALL SELECT * FROM {dst_rel}")
        b = count(f"SELECT * FROM {dst_rel} EXCEPT ALL SELECT * FROM {src_rel}")
        box["note"] = f"differences: {a} and {b} rows"


def _trim_pstats(text: str) -> str:
    keep, started = [], False
    for line in text.splitlines():
        if "ncalls" in line:
            started = True
        if started and line.strip():
            keep.append(line.replace(str(ROOT) + "/", "").replace(str(Path(sys.prefix)) + "/", "")[:160])
    return "\n".join(keep)


# --- measurement 3: many tables -----------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def kit_namespace_cmd(work: Work, as_of: str, report: Path) -> list[str]:
    return [
        sys.executable, "-m", "s3tables_kit.jobs.recover", "--catalog-mode", "hadoop",
        "--replica-warehouse", str(work.wh("replica")), "--target-warehouse", str(work.wh("many-kit")),
        "--namespace", "fleet", "--as-of", as_of, "--parallelism", "2", "--report", str(report),
    ]  # fmt: skip


def submit_cmd(work: Work, table: str, as_of: str, report: Path) -> list[str]:
    from s3tables_kit.jobs.spark import kit_jars

    return [
        str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
        "--driver-memory", os.environ.get("KIT_SPARK_DRIVER_MEMORY", "2g"),
        "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
        "--jars", ",".join(str(j) for j in kit_jars()),
        str(ROOT / "jobs" / "recover_entry.py"), "--catalog-mode", "hadoop",
        "--replica-warehouse", str(work.wh("replica")), "--target-warehouse", str(work.wh("many-submit")),
        "--table", table, "--as-of", as_of, "--report", str(report),
    ]  # fmt: skip


def find_report(directory: Path) -> dict[str, Any]:
    """The recovery job's JSON report under `--report DIR` (it may write into a per-run subdirectory)."""
    found = [p for name in ("report.json", "summary.json") for p in directory.rglob(name)]
    if not found:
        raise FileNotFoundError(f"no report.json under {directory}")
    doc = json.loads(max(found, key=lambda p: p.stat().st_mtime).read_text())
    return dict(doc)


def _run_logged(cmd: list[str], log: Path) -> float:
    t0 = time.perf_counter()
    with log.open("w") as fh:
        p = subprocess.run(cmd, cwd=ROOT, env=_env(), stdout=fh, stderr=subprocess.STDOUT, check=False)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {p.returncode}; see {log}:\n{log.read_text()[-2000:]}")
    return secs


def measure_many(work: Work, many: dict[str, Any], sc: Scale) -> dict[str, Any]:
    n, rows, as_of = many["tables"], many["rows_per_table"], many["as_of"]
    logs = work.root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"tables": n, "as_of": as_of}
    with work.timed("3", f"kit: namespace of {n} tables, one application (--as-of, parallelism 2)", n * rows) as box:
        _run_logged(kit_namespace_cmd(work, as_of, work.root / "reports" / "many-kit"), logs / "many-kit.log")
        summary = find_report(work.root / "reports" / "many-kit")
        verdicts = [t["verdict"] for t in summary["tables"]]
        box["note"] = f"{verdicts.count('verified')}/{n} verified; includes JVM start"
    out["kit_tables"] = summary["tables"]
    sample = os.environ.get("BENCH_SUBMIT_SAMPLE")  # "0": every table; "N": the first N, scaled to all
    limit = (int(sample) or None) if sample else sc.submit_sample
    k = n if limit is None else min(n, limit)
    per: list[float] = []
    with work.timed("3", f"baseline: one spark-submit per table, {k} in sequence", k * rows) as box:
        for i in range(k):
            t = f"fleet.t{i:02d}"
            per.append(_run_logged(submit_cmd(work, t, as_of, work.root / "reports" / f"many-submit-{i:02d}"),
                                   logs / f"submit-{i:02d}.log"))  # fmt: skip
            print(f"    spark-submit {t}: {per[-1]:.1f} s", flush=True)
        if k < n:
            box["seconds"] = sum(per) / k * n
            box["rows"] = n * rows
            box["note"] = f"{k} of {n} submits measured (mean {sum(per) / k:.1f} s), scaled to {n}"
        else:
            box["note"] = f"per submit: min {min(per):.1f} s, mean {sum(per) / k:.1f} s, max {max(per):.1f} s"
    out["submit_seconds"] = per
    return out


# --- measurement 5: planning without a JVM --------------------------------------------------------------------------


def plan_child(argv: list[str], result: Path) -> int:
    t0 = time.perf_counter()
    from s3tables_kit.jobs.recover.cli import main

    def no_jvm(conf: dict[str, str]) -> Any:
        raise RuntimeError("the dry run asked for a SparkSession (a JVM)")

    t1 = time.perf_counter()
    rc = main(argv, spark_factory=no_jvm)
    t2 = time.perf_counter()
    result.write_text(
        json.dumps(
            {
                "exit_code": rc,
                "import_s": t1 - t0,
                "plan_s": t2 - t1,
                "pyspark_imported": "pyspark" in sys.modules,
                "py4j_imported": "py4j" in sys.modules,
                "pyiceberg_imported": "pyiceberg" in sys.modules,
            }
        )
    )
    return rc


def measure_planning(work: Work, planning: dict[str, Any]) -> dict[str, Any]:
    res = work.root / "plan-result.json"
    report = work.root / "reports" / "plan"
    argv = [
        "--catalog-mode", "hadoop", "--replica-warehouse", str(work.wh("source")),
        "--target-warehouse", str(work.wh("plan-target")), "--namespace", "planning",
        "--as-of", planning["as_of"], "--dry-run", "--report", str(report),
    ]  # fmt: skip
    cmd = [sys.executable, "-m", "bench.recovery", "--plan-child", str(res), "--", *argv]
    with work.timed("5", f"dry-run plan of {planning['tables']} tables (fresh interpreter, no JVM)") as box:
        _run_logged(cmd, work.root / "logs" / "plan.log")
        child = json.loads(res.read_text())
        box["note"] = (
            f"in-process: imports {child['import_s']:.2f} s + plan {child['plan_s']:.2f} s; "
            f"pyspark imported: {child['pyspark_imported']}"
        )
    summary = find_report(report)
    child["tables_planned"] = len(summary["tables"])
    child["snapshots_chosen_first"] = sum(1 for t in summary["tables"] if t.get("rows") == 30)
    return child


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.recovery")
    ap.add_argument("--plan-child", metavar="RESULT_JSON")
    ap.add_argument("rest", nargs="*")
    ns = ap.parse_args(argv)
    if ns.plan_child:
        return plan_child(ns.rest, Path(ns.plan_child))
    ap.error("internal entry point of bench.run")
    return 2


if __name__ == "__main__":
    sys.exit(main())
