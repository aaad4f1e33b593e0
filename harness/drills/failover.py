"""Local failover drill (`make failover-drill`): the seed topology on the S3 Tables emulator, no AWS.

  1. start the kit's S3 Tables emulator (`emulator/`, a moto server on a free loopback port) and "deploy" the
     seed topology into it: source and replica table buckets, bucket-level replication, the replica bucket policy
  2. Spark with the S3 Tables client catalog writes analytics.orders and analytics.customers in the source; one bad
     commit (a DELETE) hits orders; the replication service replicates everything (simulated); `harden` puts the
     replica table policies; then the source gets one more commit that is never replicated
  3. the source Region is lost (every S3 Tables call on the source bucket fails)
  4. plan (dry run): RPO "at least since", the caller, the policy changes, the steps
  5. promote analytics.customers (latest state): disassociate, open to writers, verify
  6. promote analytics.orders AS OF an instant before the bad commit: point in time without a copy
  7. Spark writes to the promoted orders table; the report; RPO and RTO
  8. the failback plan (dry run)
  9. the planned round trip (`harness.drills.failover_planned`): the seed again, a planned failover to the replica
     (RPO 0
     proven, the write outage), writes to the promoted tables, the failback into a new bucket in the original Region
     (RPO 0, the write outage), re-protected by replication to a new replica

Everything is written under `failover-out/` (gitignored with the other drill output).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.drills.seed import EMULATOR_ENV, ROOT, SEED, SEED_FAILOVER, deploy_seed, drill_doc


def _step(n: int | str, text: str) -> None:
    print(f"\n== {n}. {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.drills.failover", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "failover-out"), help="output directory (wiped first)")
    args = ap.parse_args(argv)
    t_start = time.monotonic()
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    os.environ.update(EMULATOR_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)

    from s3tables_kit.topology.config import parse_config

    cfg = parse_config(drill_doc(SEED))
    account = cfg.replicas[0].account_id
    break_glass = cfg.protection.break_glass_principals[0]

    _step(1, "the S3 Tables emulator, and the seed topology deployed into it")
    emu = Emulator(log=out / "emulator.log", env={"MOTO_ACCOUNT_ID": account}).start()
    try:
        return _drill(cfg, emu, out, account, break_glass, t_start)
    finally:
        emu.stop()


def _drill(cfg: Any, emu: Emulator, out: Path, account: str, break_glass: str, t_start: float) -> int:
    from s3tables_kit.jobs.failover.cli import main as failover_main
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
    from s3tables_kit.jobs.ops.harden import main as harden_main
    from s3tables_kit.jobs.spark import build_session
    from s3tables_kit.topology.outputs import load_outputs

    config, outputs_path = deploy_seed(emu, out)
    outputs = load_outputs(outputs_path)
    (src,), rep = outputs.sources, outputs.replicas[0]  # the seed: one source
    print(
        f"  emulator {emu.url}; source {src.table_bucket_name}@{src.region}, "
        f"replica {rep.table_bucket_name}@{rep.region}"
    )

    _step(2, "Spark (S3 Tables client catalog) writes the source; a bad commit; replication; one more commit")
    writer = CatalogSpec("source", "client", src.table_bucket_arn, region=src.region, endpoint=emu.url)
    replica = CatalogSpec("promoted", "client", rep.table_bucket_arn, region=rep.region, endpoint=emu.url)
    spark = build_session({**catalog_conf(writer), **catalog_conf(replica)}, app_name="kit-failover-drill")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS source.analytics")
    spark.sql(
        "CREATE TABLE source.analytics.orders (order_id string NOT NULL, order_date date, amount double, "
        "status string) USING iceberg PARTITIONED BY (months(order_date))"
    )
    spark.sql("CREATE TABLE source.analytics.customers (customer_id string NOT NULL, name string) USING iceberg")
    for i, (d, s) in enumerate([("2025-10-03", "shipped"), ("2025-10-17", "shipped"), ("2025-11-02", "delivered")]):
        spark.sql(f"INSERT INTO source.analytics.orders VALUES ('o-{i + 1}', DATE '{d}', {10.0 * (i + 1)}, '{s}')")
    spark.sql("INSERT INTO source.analytics.customers VALUES ('c-1', 'Ada'), ('c-2', 'Grace')")
    time.sleep(1.0)
    before_bad = datetime.now(UTC)
    time.sleep(1.0)
    spark.sql("DELETE FROM source.analytics.orders WHERE status = 'shipped'")
    print(
        f"  3 orders and 2 customers committed; then the bad commit (DELETE of 2 orders) after {before_bad.isoformat()}"
    )
    emu.control.call("replicate", {"sourceBucketArn": src.table_bucket_arn})
    harden_main(["--outputs", str(outputs_path), "--endpoint-url", emu.url, "--quiet"])
    spark.sql("INSERT INTO source.analytics.customers VALUES ('c-3', 'Edsger')")
    print("  replicated (simulated service), replica table policies put by `harden`; then customers got one more")
    print("  commit that was never replicated")

    _step(3, "the source Region is lost")
    for op in ("ListTables", "GetTable", "GetTableMetadataLocation", "GetTableReplicationStatus"):
        emu.control.call(
            "faults",
            {
                "faults": [
                    {
                        "operation": op,
                        "remaining": 10**6,
                        "code": "ServiceUnavailableException",
                        "status": 503,
                        "message": "Region unavailable (drill)",
                        "match": src.table_bucket_name,
                    }
                ]
            },
        )
    print(f"  every S3 Tables call naming {src.table_bucket_name} now fails with 503")

    common = ["--config", str(config), "--outputs", str(outputs_path), "--endpoint-url", emu.url]
    common += [
        "--replica-bucket",
        rep.table_bucket_name,
        "--role-arn",
        f"{account}={break_glass}",
        "--max-attempts",
        "2",
    ]
    common += ["--report", str(out / "reports")]
    _step(4, "plan (dry run): nothing is changed")
    plan_code = failover_main([*common, "--dry-run"])

    _step(5, "promote analytics.customers (latest replicated state)")
    t0 = time.monotonic()
    code_c = failover_main([*common, "--table", "analytics.customers", "--confirm", rep.table_bucket_name])
    rto_c = time.monotonic() - t0

    _step(6, f"promote analytics.orders AS OF {before_bad.isoformat()} (before the bad commit): no copy")
    t0 = time.monotonic()
    as_of = before_bad.isoformat().replace("+00:00", "Z")
    code_o = failover_main(
        [*common, "--table", "analytics.orders", "--as-of", as_of, "--confirm", rep.table_bucket_name]
    )
    rto_o = time.monotonic() - t0

    _step(7, "writers: Spark writes to the promoted tables")
    spark.sql("INSERT INTO promoted.analytics.orders VALUES ('o-9', DATE '2025-12-01', 99.0, 'pending')")
    spark.sql("INSERT INTO promoted.analytics.customers VALUES ('c-9', 'Barbara')")
    n_orders = spark.sql("SELECT count(*) FROM promoted.analytics.orders").first()[0]  # type: ignore[index]
    n_customers = spark.sql("SELECT count(*) FROM promoted.analytics.customers").first()[0]  # type: ignore[index]
    print(f"  promoted.analytics.orders: {n_orders} rows (3 before the bad commit + 1 new)")
    print(f"  promoted.analytics.customers: {n_customers} rows (2 replicated + 1 new; c-3 was lost: the RPO)")
    props = {r["key"]: r["value"] for r in spark.sql("SHOW TBLPROPERTIES promoted.analytics.orders").collect()}
    for k in sorted(k for k in props if k.startswith("kit.failover.")):
        print(f"    {k} = {props[k]}")
    spark.stop()

    _step("8", "failback plan (dry run), as soon as the original Region answers again")
    print("  (the original Region is still down in this drill: the plan says so)")
    failover_main([*common[:-2], "--failback", "--dry-run"])

    _step(9, "planned failover round trip (RPO 0): out to the replica, writes, back to the original Region")
    from harness.drills.failover_planned import round_trip

    planned = round_trip(emu, out / "planned", SEED_FAILOVER, account, break_glass)

    ok = plan_code == 0 and code_c == 0 and code_o == 0 and n_orders == 4 and n_customers == 3
    ok = ok and all(w.code == 0 and w.rpo_zero and w.refused_write == "AccessDeniedException" for w in planned)
    reports = sorted((out / "reports").glob("*/report.md"))
    _step("done", f"{'SUCCESS' if ok else 'FAILED'} in {time.monotonic() - t_start:.0f}s")
    rpo = json.loads(reports[0].with_suffix(".json").read_text())["rpo"] if reports else "unknown"
    print(f"  RPO: {rpo}")
    print(
        f"  RTO: {rto_c:.1f}s (customers, latest), {rto_o:.1f}s (orders, point in time) to a writable, verified table"
    )
    for way in planned:
        rpo = "RPO 0" if way.rpo_zero else "RPO NOT ZERO"
        print(
            f"  planned {way.label}: {rpo} (snapshot ids equal for {way.equal}/{way.tables} tables), write outage "
            + (f"{way.outage_s:.1f}s" if way.outage_s is not None else "unknown")
            + f"; a writer's commit during the freeze: {way.refused_write}"
        )
    for r in reports:
        print(f"  report: {r}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
