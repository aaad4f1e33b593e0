"""Section 10 of `make bench` alone (the vault backup): the orders table, the interleaved rounds that hold the
restore-from-the-vault ratio, then the backup's full and incremental runs (`bench.backup`), in one run."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from bench import backup as backup_bench
    from bench import recovery as recovery_bench
    from bench.report import ROOT, Results, fmt_value
    from bench.run import comparisons as all_comparisons

    ap = argparse.ArgumentParser(prog="python -m bench.vault_section", description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(recovery_bench.SCALES), default="quick", help="the orders table's size")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the restore-vs-recovery ratio")
    ap.add_argument("--backup-rounds", type=int, help="rounds of the full backup rate (default: --rounds)")
    ap.add_argument("--increment-rows", type=int, help="rows of the incremental table (default: the scale's)")
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "backup-section"))
    args = ap.parse_args(argv)
    root = Path(args.out)
    shutil.rmtree(root, ignore_errors=True)
    work = recovery_bench.Work(root)
    spark = recovery_bench.session(work)
    try:
        orders = recovery_bench.build_orders(spark, work, recovery_bench.SCALES[args.scale])
        res = Results(args.scale, extra={"data": {"orders": orders}})
        res.extra["rounds"] = recovery_bench.measure_rounds(spark, work, orders, args.rounds)
        rows = args.increment_rows or backup_bench.increment_rows(recovery_bench.SCALES[args.scale].orders_rows)
        res.extra["backup"] = backup_bench.measure_in_run(
            spark, work, orders, root / "backup", rows, args.backup_rounds or args.rounds
        )
    finally:
        spark.stop()
    res.measurements = work.measurements
    wanted = [c for c in all_comparisons(res) if c.section == backup_bench.SECTION or "vault" in c.name]
    out = {"scale": args.scale, "orders": orders, "backup": res.extra["backup"]}
    out["comparisons"] = [c.as_dict() for c in wanted]
    (root / "results.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    for c in wanted:
        print(f"[{c.section}] {c.name}: {fmt_value(c)} (goal {c.goal or '-'}; {c.how})")
    return 0 if not work.errors else 1


if __name__ == "__main__":
    sys.exit(main())
