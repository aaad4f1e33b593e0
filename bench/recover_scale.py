"""Recovery at lake scale: the dry-run plan of 10,000 tables on the emulator, and many small tables.

(a) plan: emulator (`emulator/`) on a free loopback port, `destinations` replica table buckets of `tables` tables each
    (`namespaces` namespaces), per-request latency on the S3 Tables operations; the kit's concurrent plan of every
    table of one replica bucket vs the serial per-table plan (`job.build_plan`, the call sequence a user scripts by
    hand) on a sample of the same run, scaled to the table count.
(b) many small tables: `tables` tables of ~20 KB in a local replica warehouse; the kit's batched file copy vs the
    per-table path (`--no-batch`) in the same Spark session, interleaved rounds, each into a fresh target warehouse;
    tables per minute after start-up (the session is up before the first round) and the per-phase breakdown.

`python -m bench.recover_scale plan|many [--tables N] [--rounds R]` prints one JSON document; `bench/run.py` calls
`run_all` at its scale.
"""

from __future__ import annotations

import io
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from s3tables_kit.topology.paths import ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb() -> float:
    """This process's peak RSS: VmHWM, which starts afresh at exec (Linux's ru_maxrss keeps the high-water mark of
    the image before exec, i.e. of the bench process that started this one)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_plan(
    tables: int = 10_000,
    namespaces: int = 100,
    destinations: int = 3,
    sample: int = 200,
    latency_s: float = 0.03,
    s3_latency_s: float = 0.02,
) -> dict[str, Any]:
    from emulator.process import Emulator
    from s3tables_kit.jobs.kernel import sdk
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.jobs.recover.job import RecoveryRequest, build_plan, plan_one
    from s3tables_kit.jobs.recover.lakeplan import build_plan_at_scale
    from s3tables_kit.jobs.recover.metadata import metadata_source

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        os.environ.setdefault(k, v)
    region = "us-west-2"
    emu = Emulator().start()
    url = emu.url
    try:
        ctl = emu.control
        st = sdk.client("s3tables", region, url)
        per_ns = tables // namespaces
        layout = {f"ns{j:03d}": [f"t{i:04d}" for i in range(per_ns)] for j in range(namespaces)}
        t0 = time.monotonic()
        replicas = [st.create_table_bucket(name=f"replica-{d}")["arn"] for d in range(destinations)]
        recovery = st.create_table_bucket(name="recovery")["arn"]
        commit_ms = int(time.time() * 1000) - 3_600_000
        for arn in replicas:
            for j in range(0, namespaces, 10):  # 10 namespaces per seeding call
                ctl.seed(arn, {ns: layout[ns] for ns in list(layout)[j : j + 10]}, commit_ms=commit_ms)
        seed_s = time.monotonic() - t0
        ctl.set_latency(service="s3tables", seconds=latency_s)
        ctl.set_latency(service="s3", seconds=s3_latency_s)

        def request(**kw: Any) -> RecoveryRequest:
            return RecoveryRequest(
                CatalogSpec("replica", "client", replicas[0], region=region, endpoint=url),
                CatalogSpec("recovery", "client", recovery, region=region, endpoint=url),
                dry_run=True,
                **kw,
            )

        idents = [Ident(ns, n) for ns, names in layout.items() for n in names]
        step = max(1, len(idents) // sample)
        picked = idents[::step][:sample]
        req = request(tables=picked)
        t = time.monotonic()
        serial = build_plan(req, metadata_source(req.replica), metadata_source(req.target))
        serial_s = time.monotonic() - t
        per_table = serial_s / len(picked)
        req = request(namespaces=list(layout))
        t = time.monotonic()
        plan = build_plan_at_scale(
            req, metadata_source(req.replica), metadata_source(req.target), plan_one, progress_out=sys.stderr
        )
        plan_s = time.monotonic() - t
        baseline_s = per_table * len(idents)
        return {
            "tables": len(idents),
            "namespaces": namespaces,
            "destinations": destinations,
            "latency_ms": latency_s * 1000,
            "s3_latency_ms": s3_latency_s * 1000,
            "seed_s": round(seed_s, 1),
            "sample": len(picked),
            "serial_sample_s": round(serial_s, 2),
            "serial_errors": len(serial.errors),
            "serial_per_table_ms": round(per_table * 1000, 1),
            "baseline_scaled_s": round(baseline_s, 1),
            "plan_s": round(plan_s, 1),
            "planned": len(plan.tables),
            "plan_errors": len(plan.errors),
            "plan_error_sample": plan.errors[:3],
            "speedup": round(baseline_s / plan_s, 1) if plan_s else None,
            "goal_60s": plan_s <= 60,
            "goal_20x": plan_s > 0 and baseline_s / plan_s >= 20,
            "calls": ctl.stats()["calls"],
            "peak_rss_mb": round(_rss_mb(), 0),
        }
    finally:
        emu.stop()


# --- (b) many small tables -----------------------------------------------------------------------------------------


def measure_many(root: Path, tables: int = 200, rounds: int = 2) -> dict[str, Any]:
    from bench.recovery import orders_select
    from harness.localreplica import file_uri
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
    from s3tables_kit.jobs.recover.job import RecoveryRequest, run
    from s3tables_kit.jobs.spark import add_catalogs, build_session

    root.mkdir(parents=True, exist_ok=True)
    rep = CatalogSpec("sc_replica", "hadoop", file_uri(root / "replica"))
    (root / "replica").mkdir(exist_ok=True)
    t0 = time.monotonic()
    spark = build_session(catalog_conf(rep), app_name="kit-bench-scale")
    startup_s = time.monotonic() - t0
    try:
        t = time.monotonic()
        spark.sql("CREATE NAMESPACE IF NOT EXISTS sc_replica.small")
        for i in range(tables):
            spark.sql(
                f"CREATE TABLE sc_replica.small.t{i:04d} USING iceberg AS {orders_select(i * 600, i * 600 + 600, 1)}"
            )
        build_s = time.monotonic() - t
        sizes = [p.stat().st_size for p in (root / "replica" / "small").rglob("*.parquet")]
        out: dict[str, Any] = {
            "tables": tables,
            "avg_file_kb": round(sum(sizes) / max(1, len(sizes)) / 1024, 1),
            "startup_s": round(startup_s, 1),
            "build_s": round(build_s, 1),
            "cores": spark.sparkContext.defaultParallelism,
            "rounds": [],
        }
        for r in range(rounds):
            order = ("batch", "per-table") if r % 2 == 0 else ("per-table", "batch")
            row: dict[str, Any] = {"round": r + 1, "order": list(order)}
            for how in order:
                name = f"r{r}{'b' if how == 'batch' else 'p'}"
                tgt = CatalogSpec(f"sc_{name}", "hadoop", file_uri(root / name))
                (root / name).mkdir(exist_ok=True)
                add_catalogs(spark, catalog_conf(tgt))
                req = RecoveryRequest(rep, tgt, namespaces=["small"], parallelism=2, batch=how == "batch")
                t = time.monotonic()
                outcome = run(req, lambda conf: spark, io.StringIO(), io.StringIO())
                wall = time.monotonic() - t
                ok = sum(1 for x in outcome.results if x.verdict == "verified")
                phases: dict[str, float] = {}
                for x in outcome.results:
                    for k, v in x.phases.items():
                        phases[k] = phases.get(k, 0.0) + v
                row[how] = {
                    "wall_s": round(wall, 1),
                    "verified": ok,
                    "tables_per_min": round(ok / wall * 60, 0) if wall else None,
                    "reported_s_sum": round(
                        sum(x.plan_seconds + x.copy_seconds + x.verify_seconds for x in outcome.results), 1
                    ),
                    "phases_s_sum": {k: round(v, 2) for k, v in phases.items()},
                }
                print(f"    round {r + 1} {how}: {row[how]}", file=sys.stderr, flush=True)
            row["speedup"] = round(row["per-table"]["wall_s"] / max(row["batch"]["wall_s"], 1e-9), 1)
            out["rounds"].append(row)
        worst = min(x["batch"]["tables_per_min"] or 0 for x in out["rounds"])
        out["worst_batch_tables_per_min"] = worst
        out["worst_per_table_tables_per_min"] = min(x["per-table"]["tables_per_min"] or 0 for x in out["rounds"])
        out["goal_600_per_min"] = worst >= 600
        return out
    finally:
        spark.stop()


def plan_in_child(tables: int) -> dict[str, Any]:
    """`measure_plan` in a fresh interpreter, as an engineer runs the dry run: its peak RSS is the planner's own,
    not the bench process's (which has held whole tables as Arrow by then)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("AWS_ENDPOINT_URL", None)
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.recover_scale", "plan", "--tables", str(tables)],
            cwd=ROOT,
            env=env,
            stdout=so,
            stderr=se,
            check=False,
        )
        so.seek(0)
        se.seek(0)
        out, err = so.read().decode(), se.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"plan benchmark exited {proc.returncode}: {err[-1500:]}")
    return dict(json.loads(out))


def run_all(root: Path, plan_tables: int = 10_000, many_tables: int = 200, rounds: int = 2) -> dict[str, Any]:
    """Both measurements; each failure is reported in the result, not raised (bench/run.py keeps going)."""
    out: dict[str, Any] = {}
    for key, fn in (
        ("plan", lambda: plan_in_child(plan_tables)),
        ("many", lambda: measure_many(root / "many", tables=many_tables, rounds=rounds)),
    ):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    return out


PLAN_GOAL_S, PLAN_GOAL_SPEEDUP, RSS_GOAL_MB, MANY_GOAL_PER_MIN = 60.0, 20.0, 500.0, 600.0


def goals(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals for the plan and the many small tables with this run's values (pure)."""
    out: list[dict[str, Any]] = []
    plan = doc.get("plan") or {}
    if "error" in plan or not plan:
        out.append({"goal": "dry-run plan: runs", "value": plan.get("error", "not run"), "met": False})
    else:
        n = plan["tables"]
        out += [
            {
                "goal": f"dry-run plan of {n:,} tables: <= {PLAN_GOAL_S:.0f} s",
                "value": plan["plan_s"],
                "met": plan["plan_s"] <= PLAN_GOAL_S,
            },
            {
                "goal": f"dry-run plan: >= {PLAN_GOAL_SPEEDUP:.0f}x the serial per-table plan",
                "value": plan["speedup"],
                "met": (plan["speedup"] or 0) >= PLAN_GOAL_SPEEDUP,
            },
            {
                "goal": f"dry-run plan: peak RSS <= {RSS_GOAL_MB:.0f} MB",
                "value": plan["peak_rss_mb"],
                "met": plan["peak_rss_mb"] <= RSS_GOAL_MB,
            },
            {"goal": "dry-run plan: 0 plan errors", "value": plan["plan_errors"], "met": plan["plan_errors"] == 0},
        ]
    many = doc.get("many") or {}
    if "error" in many or not many:
        out.append({"goal": "many small tables: runs", "value": many.get("error", "not run"), "met": False})
    else:
        worst = many["worst_batch_tables_per_min"]
        out.append(
            {
                "goal": f"many small tables ({many['tables']}, file copy): worst round >= {MANY_GOAL_PER_MIN:.0f} "
                "tables/min",
                "value": worst,
                "met": worst >= MANY_GOAL_PER_MIN,
            }
        )
    return out  # fmt: skip


def markdown(doc: dict[str, Any] | None) -> str:
    """The BENCHMARKS.md section of one run (pure)."""
    if not doc:
        return ""
    lines = ["", "## Recovery at lake scale (`bench/recover_scale.py`)", ""]
    plan = doc.get("plan") or {}
    if plan and "error" not in plan:
        calls = ", ".join(f"{k} {v:,}" for k, v in sorted((plan.get("calls") or {}).items()))
        lines += [
            f"Dry-run plan of every table of one replica bucket: {plan['tables']:,} tables in {plan['namespaces']} "
            f"namespaces ({plan['destinations']} replica buckets seeded), the emulator with "
            f"{plan['latency_ms']:.0f} ms per S3 Tables call and {plan['s3_latency_ms']:.0f} ms per S3 call, in a "
            "fresh interpreter. Baseline: the serial per-table plan (`job.build_plan`, the call sequence a user "
            "scripts by hand) on "
            f"{plan['sample']} tables of the same run, {plan['serial_per_table_ms']:.1f} ms per table, scaled: "
            f"{plan['baseline_scaled_s']:,.0f} s. Kit: **{plan['plan_s']} s** ({plan['speedup']}x), "
            f"{plan['planned']:,} tables planned, {plan['plan_errors']} plan errors, peak RSS "
            f"{plan['peak_rss_mb']:.0f} MB. Control-plane requests of the whole measurement (both plans): {calls}.",
            "",
        ]
    many = doc.get("many") or {}
    if many and "error" not in many:
        lines += [
            f"Many small tables: {many['tables']} tables of one ~{many['avg_file_kb']} KB file each in a local replica "
            f"warehouse, file copy into a fresh local warehouse per run, {many['cores']} cores; the kit's batched "
            "path (one copy job and one session for all tables) against its per-table path (`--no-batch`), "
            f"interleaved rounds in one Spark session started before the first round (start-up "
            f"{many['startup_s']} s, not counted).",
            "",
            "| round | order | batched | tables/min | per-table path | tables/min | speed-up "
            "| batched phases (s, summed over tables) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in many["rounds"]:
            b, p = r["batch"], r["per-table"]
            phases = ", ".join(f"{k} {v}" for k, v in b["phases_s_sum"].items())
            order = " first, ".join(r["order"]) + " second"
            lines.append(
                f"| {r['round']} | {order} | {b['wall_s']} s | {b['tables_per_min']:.0f} | "
                f"{p['wall_s']} s | {p['tables_per_min']:.0f} | {r['speedup']}x | {phases} |"
            )
        lines.append("")
    for key in ("plan", "many"):
        if (doc.get(key) or {}).get("error"):
            lines += [f"- {key}: ERROR {doc[key]['error']}", ""]
    lines += ["| goal | value | met |", "|---|---|---|"]
    lines += [f"| {g['goal']} | {g['value']} | {'yes' if g['met'] else 'NO'} |" for g in goals(doc)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    what = args[0] if args else "plan"
    n = int(args[args.index("--tables") + 1]) if "--tables" in args else None
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 2
    if what == "plan":
        res = measure_plan(tables=n or 10_000)
    elif what == "many":
        res = measure_many(Path(tempfile.mkdtemp(prefix="kit-scale-")), tables=n or 200, rounds=rounds)
    else:
        print("usage: python -m bench.recover_scale plan|many [--tables N] [--rounds R]", file=sys.stderr)
        return 2
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
