"""Local recovery drill (`make demo`): the seed walkthrough end to end on this machine, no AWS.

  1. create analytics.orders (seed schema, partitioned by month(order_date)); 5 rows committed one by one, a 6th later
  2. build a read-only replica in its own warehouse (rewrite_table_path + copy + register_table)
  3. drop the source table
  4. the replica still answers: 6 rows, snapshot history, time travel
  5. recover the latest state into a writable table: 6 rows, symmetric difference empty both ways
  6. recover as of an instant between the 5th and the 6th commit: 5 rows
  7. INSERT / UPDATE / DELETE succeed on the recovered table and are refused on the replica

Everything is written under `demo-out/` (gitignored).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from harness.localreplica import file_uri, replicate_table
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import Selector, to_ms
from s3tables_kit.jobs.recover.guard import GuardedSql, ReadOnlyReplicaError
from s3tables_kit.jobs.recover.job import Outcome, RecoveryRequest, run
from s3tables_kit.topology.paths import ROOT

SEED = ROOT / "examples" / "seed.toml"

SEED_ROWS = [
    ("o-1001", "c-01", "2025-10-03", 120.50, "shipped"),
    ("o-1002", "c-02", "2025-10-17", 75.00, "shipped"),
    ("o-1003", "c-01", "2025-11-02", 310.25, "delivered"),
    ("o-1004", "c-03", "2025-11-20", 42.10, "returned"),
    ("o-1005", "c-04", "2025-12-01", 99.99, "pending"),
]
SIXTH_ROW = ("o-1006", "c-02", "2025-12-02", 15.00, "pending")


def _step(n: int | str, text: str) -> None:
    print(f"\n== {n}. {text}", flush=True)


def _seed_table() -> tuple[Ident, list[tuple[str, str, bool, str | None]], list[str], str]:
    """analytics.orders from examples/seed.toml: columns and partition transforms, plus the recovery namespace."""
    from s3tables_kit.topology.config import load_config

    cfg = load_config(SEED)
    ns = cfg.sources[0].namespaces[0]
    table = ns.tables[0]
    cols = [(c.name, c.type, c.required, c.doc) for c in table.columns]
    parts = [p.spark_sql for p in table.partition_fields]
    return Ident(ns.name, table.name), cols, parts, cfg.recovery.namespace if cfg.recovery else "recovered"


def _values(row: tuple[str, str, str, float, str]) -> str:
    o, c, d, a, s = row
    return f"('{o}', '{c}', DATE '{d}', {a}, '{s}')"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m harness.drills.demo", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    ap.add_argument("--out", default=str(ROOT / "demo-out"), help="output directory (wiped first)")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    wh = {k: out / "warehouses" / k for k in ("source", "replica", "recovered")}
    for p in wh.values():
        p.mkdir(parents=True)
    report_dir = out / "report"

    ident, cols, parts, recovery_ns = _seed_table()
    replica = CatalogSpec("replica", "hadoop", file_uri(wh["replica"]))
    target = CatalogSpec("recovery", "hadoop", file_uri(wh["recovered"]))
    source = CatalogSpec("source", "hadoop", file_uri(wh["source"]))
    print("Local recovery drill: the seed walkthrough (analytics.orders) with a local stand-in for the replica")
    print(f"  warehouses under {out / 'warehouses'}")

    from s3tables_kit.jobs.spark import build_session

    spark = build_session(
        {**catalog_conf(source), **catalog_conf(replica), **catalog_conf(target)}, app_name="kit-drill"
    )
    src_t, rep_t = f"source.{ident}", f"replica.{ident}"

    _step(1, f"create {src_t} (seed schema, PARTITIONED BY {', '.join(parts)}); five commits, then a sixth")
    ddl = ", ".join(f"{n} {t}{' NOT NULL' if req else ''}" for n, t, req, _ in cols)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS source.{ident.namespace}")
    spark.sql(
        f"CREATE TABLE {src_t} ({ddl}) USING iceberg PARTITIONED BY ({', '.join(parts)}) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', 'comment.team'='analytics')"
    )
    for row in SEED_ROWS:
        spark.sql(f"INSERT INTO {src_t} VALUES {_values(row)}")
        print(f"  committed {row[0]}")
    time.sleep(1.0)
    between = datetime.now(UTC)
    time.sleep(1.0)
    spark.sql(f"INSERT INTO {src_t} VALUES {_values(SIXTH_ROW)}")
    print(f"  committed {SIXTH_ROW[0]} (the sixth, later); 'between' instant = {between.isoformat()}")

    _step(2, "build the read-only replica: rewrite_table_path + copy the listed files + register_table")
    info = replicate_table(spark, "source", wh["source"], "replica", wh["replica"], ident)
    print(f"  copied {info['files_copied']} data/manifest files; registered the rewritten {info['latest_version']}")

    _step(3, f"drop the source table ({src_t}) — the incident")
    spark.sql(f"DROP TABLE {src_t} PURGE")
    print(f"  source table exists: {spark.catalog.tableExists(src_t)}")

    _step(4, "the replica still answers")
    n = spark.sql(f"SELECT count(*) FROM {rep_t}").first()[0]  # type: ignore[index]
    print(f"  SELECT count(*) FROM {rep_t} -> {n} rows")
    hist = spark.sql(
        f"SELECT made_current_at, snapshot_id, is_current_ancestor FROM {rep_t}.history ORDER BY made_current_at"
    ).collect()
    print(f"  snapshot history ({len(hist)} snapshots):")
    for h in hist:
        print(f"    {h['made_current_at']}  {h['snapshot_id']}")
    n_tt = spark.sql(f"SELECT count(*) FROM {rep_t} TIMESTAMP AS OF '{between.isoformat()}'").first()[0]  # type: ignore[index]
    print(f"  time travel TIMESTAMP AS OF '{between.isoformat()}' -> {n_tt} rows")

    def factory(conf: dict[str, str]):  # type: ignore[no-untyped-def]
        return spark  # the catalogs are already registered on the drill's session

    def recover(report: str, suffix: str = "", selector: Selector | None = None) -> Outcome:
        """Recover the table into `recovery_ns` (named with `suffix`), as the drill shows it: the full row
        fingerprint after a file copy as well; then the mode used and the recovered table against the replica."""
        req = RecoveryRequest(
            replica=replica,
            target=target,
            tables=[ident],
            target_namespace=recovery_ns,
            suffix=suffix,
            selector=selector or Selector(),
            report_dir=report_dir / report,
            verify="full",
        )
        outcome = run(req, factory)
        _show_mode(outcome)
        snapshot_id = outcome.plan.tables[0].snapshot.snapshot_id if selector else None
        _show_recovered(spark, rep_t, f"recovery.{recovery_ns}.{ident.name}{suffix}", snapshot_id)
        return outcome

    _step(5, f"recover the latest state into {target.name}.{recovery_ns}.{ident.name}")
    latest = recover("latest")
    rec_latest = f"recovery.{recovery_ns}.{ident.name}"

    _step(6, f"recover as of {between.isoformat()} (between the 5th and the 6th commit)")
    pit = recover("as-of", "_asof", Selector(as_of_ms=to_ms(between)))

    _step(7, "writes: succeed on the recovered table, refused on the replica")
    gsql = GuardedSql(spark, ["replica"])
    for label, stmt in (
        ("INSERT", "INSERT INTO {t} VALUES ('o-2001', 'c-09', DATE '2025-12-05', 10.0, 'pending')"),
        ("UPDATE", "UPDATE {t} SET status = 'cancelled' WHERE order_id = 'o-1005'"),
        ("DELETE", "DELETE FROM {t} WHERE order_id = 'o-1004'"),
    ):
        gsql.sql(stmt.format(t=rec_latest)).collect()
        cnt = spark.sql(f"SELECT count(*) FROM {rec_latest}").first()[0]  # type: ignore[index]
        print(f"  {label:<6} on {rec_latest}: ok ({cnt} rows now)")
        try:
            gsql.sql(stmt.format(t=rep_t)).collect()
            print(f"  {label:<6} on {rep_t}: UNEXPECTEDLY SUCCEEDED")
            return 1
        except ReadOnlyReplicaError as e:
            print(f"  {label:<6} on {rep_t}: refused -> {e}")
    n_after = spark.sql(f"SELECT count(*) FROM {rep_t}").first()[0]  # type: ignore[index]
    print(f"  replica still has {n_after} rows")

    ok = latest.exit_code == 0 and pit.exit_code == 0
    _step("done", f"{'SUCCESS' if ok else 'FAILED'} in {time.monotonic() - t_start:.0f}s")
    print(f"  reports: {latest.report}")
    print(f"           {pit.report}")
    spark.stop()
    return 0 if ok else 1


def _show_mode(outcome) -> None:  # type: ignore[no-untyped-def]
    for r in outcome.results:
        print(f"  recovery mode used: {r.copy_mode.upper()} ({r.copy_mode_reason})")
        print(f"  verification: {r.verification_method}")


def _show_recovered(spark, replica_t: str, target_t: str, snapshot_id: int | None) -> None:  # type: ignore[no-untyped-def]
    rel = f"{replica_t} VERSION AS OF {snapshot_id}" if snapshot_id else replica_t
    n = spark.sql(f"SELECT count(*) FROM {target_t}").first()[0]
    a = spark.sql(f"SELECT count(*) FROM (SELECT * FROM {rel} EXCEPT ALL SELECT * FROM {target_t})").first()[0]
    b = spark.sql(f"SELECT count(*) FROM (SELECT * FROM {target_t} EXCEPT ALL SELECT * FROM {rel})").first()[0]
    print(f"  {target_t}: {n} rows; replica EXCEPT ALL recovered = {a} rows, recovered EXCEPT ALL replica = {b} rows")
    props = dict((r["key"], r["value"]) for r in spark.sql(f"SHOW TBLPROPERTIES {target_t}").collect())
    for k in sorted(k for k in props if k.startswith("kit.recovery.")):
        print(f"    {k} = {props[k]}")


if __name__ == "__main__":
    sys.exit(main())
