"""`make bench` / `python -m bench.run`: every benchmark of issue 6 in one run, kit figures against baselines measured
in the same run. `BENCH_SCALE=small` (default, a few minutes) or `full` (20 M rows, 50 tables; within 25 minutes on
2 cores). Writes `BENCHMARKS.md` (repo root, or `BENCH_MARKDOWN`) and `bench-out/results.json`.

Order: build the data (one Spark application), 1+2 copy and verification in that application, stop it, 3 many
tables (fresh applications, as an engineer would run them), 5 planning (fresh interpreter), 4 synth (fresh
interpreter), then the profiles from Spark's event log.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench import eventlog
from bench.report import (
    REPO,
    Comparison,
    Goal,
    Results,
    console_table,
    machine_info,
    ratio,
    render_markdown,
    speedup,
    verdict,
)

OUT = REPO / "bench-out"


def _secs(res: Results, section: str, prefix: str) -> float | None:
    m = next((x for x in res.measurements if x.section == section and x.name.startswith(prefix)), None)
    return m.seconds if m else None


def comparisons(res: Results) -> list[Comparison]:
    """Every ratio and goal of the issue from the run's measurements (pure)."""
    ctas = _secs(res, "1", "(a)")
    kit = _secs(res, "1", "(b) kit recovery: copy only")
    kit_all = _secs(res, "1", "(b) kit recovery: copy + verification")
    arrow = _secs(res, "1", "(c)")
    raw = _secs(res, "1", "(d)")
    verify = _secs(res, "2", "kit verification")
    except_all = _secs(res, "2", "EXCEPT ALL")
    many_kit = _secs(res, "3", "kit:")
    many_submit = _secs(res, "3", "baseline:")
    plan = _secs(res, "5", "dry-run")
    syn: dict[str, Any] = res.extra.get("synth", {})
    out = [
        Comparison("1", "kit copy vs plain Spark CTAS (rows/s ratio)", speedup(ctas, kit), "x",
                   "CTAS s / kit copy s", Goal(">=", 1.5)),
        Comparison("1", "kit copy vs pyiceberg Arrow copy (rows/s ratio)", speedup(arrow, kit), "x",
                   "Arrow copy s / kit copy s", Goal(">=", 1.0)),
        Comparison("1", "kit copy + verification vs plain CTAS (no verification)", speedup(ctas, kit_all), "x",
                   "CTAS s / kit whole run s"),
        Comparison("1", "raw file copy (floor) vs kit copy", speedup(kit, raw), "x", "kit copy s / cp s"),
        Comparison("2", "kit verification / kit copy", ratio(verify, kit), "x", "verify s / copy s",
                   Goal("<=", 0.5)),
        Comparison("2", "kit verification vs EXCEPT ALL both ways", speedup(except_all, verify), "x",
                   "EXCEPT ALL s / verify s"),
        Comparison("3", "many tables: kit (one app) vs one spark-submit per table", speedup(many_submit, many_kit),
                   "x", "submits s / kit s", Goal(">=", 4.0)),
        Comparison("4", "synth 5 destinations x 1,000 tables: wall time", syn.get("wall_s"), "s",
                   "fresh interpreter, start to exit", Goal("<=", 60)),
        Comparison("4", "synth: peak RSS (Python + jsii node)",
                   syn["peak_tree_rss_kb"] / 1024 / 1024 if syn.get("peak_tree_rss_kb") else None, "GB",
                   "sampled sum of VmRSS over the process tree", Goal("<=", 3)),
        Comparison("4", "synth: provider import", syn.get("import_s"), "s", "import cdktf + provider bindings"),
        Comparison("4", "synth: build + synth", syn.get("build_synth_s"), "s", "parse config, build_app, synth()"),
        Comparison("5", "planning: dry run of 100 tables, no JVM", plan, "s",
                   "fresh interpreter, start to exit", Goal("<", 3)),
    ]  # fmt: skip
    return out


def _phase(prof: dict[str, dict[str, Any]], prefix: str) -> dict[str, Any] | None:
    return next((v for k, v in prof.items() if k.startswith(prefix)), None)


def _kind(ph: dict[str, Any] | None, prefix: str) -> dict[str, float] | None:
    if not ph:
        return None
    return next((v for k, v in (ph.get("by_kind") or {}).items() if k.startswith(prefix)), None)


def _w(k: dict[str, float] | None) -> str:
    if not k:
        return "n/a"
    return (
        f"{k['stage_wall_s']:.1f} s of stages (executor run {k['executor_run_s']:.1f} s, "
        f"CPU {k['executor_cpu_s']:.1f} s, shuffle write {k['shuffle_write_mb']:.0f} MB)"
    )


FILE_COPY_PROPOSAL = (
    " The same data files copy byte-for-byte in {raw:.2f} s ({x:.0f}x faster than the kit's Spark copy): beating "
    "a columnar engine by a wide margin needs a file-level copy, not a Spark setting. Proposal for the recovery owner: "
    "when the chosen snapshot has no delete files and is written with the table's current spec and schema (the "
    "usual case for 'latest'), copy the snapshot's data files into the target location and commit them (Iceberg "
    "`add_files`, or `rewrite_table_path` with a staging location outside the replica + `register_table`, as "
    "`jobs/recover/localreplica.py` already does for the drill), then verify by file sizes/checksums and metadata "
    "row counts; keep the CTAS for the other cases."
)


def notes(res: Results, prof: dict[str, dict[str, Any]]) -> list[str]:
    """Explanations derived from the measured profiles (pure)."""
    out: list[str] = []
    by = {c.name: c for c in res.comparisons}
    ctas_p, kit_p = _phase(prof, "1 (a)"), _phase(prof, "1 (b) kit recovery")
    ctas_w, kit_w = _kind(ctas_p, "write"), _kind(kit_p, "write")
    kit_v = _kind(kit_p, "verification")
    cp = by.get("kit copy vs plain Spark CTAS (rows/s ratio)")
    raw_s, kit_s = _secs(res, "1", "(d)"), _secs(res, "1", "(b) kit recovery: copy only")
    if cp and cp.value is not None:
        text = (
            f"Recovery copy vs CTAS ({cp.value:.2f}x, goal >= 1.5x {verdict(cp.met)}). Profile (event log): the CTAS "
            f"write {_w(ctas_w)}; the kit's write {_w(kit_w)}. Both are a Spark CTAS with the same SELECT and "
            "partition spec; the plain CTAS runs under Iceberg's default write distribution for a partitioned table "
            "(hash: every row is shuffled by month before the write), while the kit sets "
            "`spark.sql.iceberg.distribution-mode=none` for its copies (`jobs/recover/job.py` `COPY_CONF`): the "
            "replica's data files already hold one partition each, so the fan-out writer needs no shuffle (at the "
            "cost of more, smaller files). Earlier runs of the kit with the default distribution measured "
            "0.99x-1.05x."
        )
        if not cp.met:
            text += (
                " What remains is decoding and re-encoding every row of Parquet in the JVM (the write stage's CPU "
                "above)."
            )
            if raw_s and kit_s:
                text += FILE_COPY_PROPOSAL.format(raw=raw_s, x=kit_s / raw_s)
        out.append(text)
    ar = by.get("kit copy vs pyiceberg Arrow copy (rows/s ratio)")
    pc = (res.extra.get("copy") or {}).get("pyiceberg") or {}
    fast_w: dict[str, float] = kit_w or {}
    if ar and ar.value is not None and pc:
        out.append(
            f"Recovery copy vs pyiceberg Arrow ({ar.value:.2f}x, goal >= 1.0x {verdict(ar.met)}). The Arrow copy "
            f"reads with multi-threaded C++ Parquet (read {pc.get('read_s', 0):.1f} s) and writes with pyarrow "
            f"(write {pc.get('write_s', 0):.1f} s; cProfile below), with no shuffle and no row-by-row JVM "
            f"conversion, but it holds the whole snapshot in memory ({pc.get('arrow_mb', 0):.0f} MB of Arrow here; "
            "a table larger than RAM fails) and has no atomic create, no time travel across schema changes and no "
            "verification. The Spark write stage is CPU-bound (event log above: executor CPU "
            f"{fast_w.get('executor_cpu_s', 0):.1f} s of {fast_w.get('executor_run_s', 0):.1f} s run time for the "
            "kit's write), i.e. row-wise Parquet decode/encode in the JVM vs Arrow's vectorised C++."
            + (FILE_COPY_PROPOSAL.format(raw=raw_s, x=kit_s / raw_s) if raw_s and kit_s and not ar.met else "")
        )
    vr = by.get("kit verification / kit copy")
    ve = by.get("kit verification vs EXCEPT ALL both ways")
    vp: dict[str, float] = (res.extra.get("copy") or {}).get("verification_profile") or {}
    if vr and vr.value is not None:
        text = (
            f"Verification ({vr.value:.2f}x of the copy, goal <= 0.5x {verdict(vr.met)}; "
            + (f"{ve.value:.1f}x faster than EXCEPT ALL both ways" if ve and ve.value else "EXCEPT ALL not measured")
            + f"). Profile (event log): the two fingerprint aggregates {_w(kit_v)}, against the copy's write "
            f"{_w(kit_w)}."
        )
        if vp and kit_s:
            names = list(vp)
            floor, kitfp = vp.get(names[0]), vp.get(names[1]) if len(names) > 1 else None
            big = vp.get(names[-1])
            text += (
                " Profile by elimination on one side (same query shape, grouped by month): "
                + "; ".join(f"{k}: {v:.1f} s" for k, v in vp.items())
                + "."
            )
            if floor is not None and kitfp and big:
                text += (
                    f" A count per partition takes {floor:.1f} s (it reads only the partition column); reading "
                    f"every column and hashing every row make up the rest. The earlier DECIMAL(38,0) sums took "
                    f"{kitfp:.1f} s per side; the kit's exact bigint sums (the 64-bit hash split into two 32-bit "
                    f"halves, recombined exactly in `verify.fingerprint_from_rows`; no overflow below 2^31 rows per "
                    f"partition; still order-independent) take {big:.1f} s per side."
                )
        out.append(text)
    mt = by.get("many tables: kit (one app) vs one spark-submit per table")
    many = res.extra.get("many") or {}
    sub = many.get("submit_seconds") or []
    if mt and mt.value is not None and sub:
        n = many.get("tables", len(sub))
        per_kit = [t.get("copy_seconds", 0) + t.get("verify_seconds", 0) for t in many.get("kit_tables", [])]
        out.append(
            f"Many tables ({mt.value:.1f}x, goal >= 4x {verdict(mt.met)}): each spark-submit pays JVM start, jar "
            f"loading, session and catalog start again: {sum(sub) / len(sub):.1f} s per table on average"
            + (
                f" ({len(sub)} of {n} submits measured, the total scaled to {n}; the tables are identical)"
                if len(sub) < n
                else ""
            )
            + (
                f", while inside the kit's one application a table's copy + verification took "
                f"{sum(per_kit) / len(per_kit):.1f} s on average, 2 tables at a time"
                if per_kit
                else ""
            )
            + "."
        )
    sy = by.get("synth 5 destinations x 1,000 tables: wall time")
    syn = res.extra.get("synth") or {}
    if sy and syn.get("wall_s"):
        other = syn["wall_s"] - syn["import_s"] - syn["build_synth_s"]
        out.append(
            f"Synth ({syn['wall_s']:.1f} s, goal <= 60 s {verdict(sy.met)}): {syn['import_s']:.1f} s is importing the "
            f"provider bindings (`cdktf_cdktf_provider_aws` loads all of its submodules through jsii; REFERENCE §4: "
            f"15-25 s on an idle machine), build {syn['build_s']:.1f} s and synth {syn['synth_s']:.1f} s for "
            f"{syn['resources']} resources in {len(syn['stacks'])} stacks, {other:.1f} s interpreter start and jsii "
            "shutdown. Peak memory per process (VmHWM): "
            + ", ".join(f"{k} {v / 1024:.0f} MB" for k, v in syn["hwm_by_process_kb"].items())
            + "."
        )
    pl = res.extra.get("planning") or {}
    if pl:
        out.append(
            f"Planning: in the fresh interpreter, imports {pl.get('import_s', 0):.2f} s and planning "
            f"{pl.get('plan_s', 0):.2f} s for {pl.get('tables_planned', '?')} tables at one instant "
            f"(pyspark imported: {pl.get('pyspark_imported')}; the Spark factory raises if called)."
        )
    runs = [v for k, v in prof.items() if v.get("executor_run_s")]
    loads = [m.load for m in res.measurements if m.load]
    if runs and loads:
        share = sum(v["executor_cpu_s"] for v in runs) / sum(v["executor_run_s"] for v in runs)
        hi = max(max(lo) for lo in loads)
        busy = (
            "the Spark work was CPU-bound: the limits above are computation, not I/O"
            if share >= 0.75
            else "tasks spent much of their time waiting for a CPU, so absolute rates are below REFERENCE §5's"
        )
        out.append(
            f"Load: executor CPU time was {100 * share:.0f}% of executor run time over all Spark phases; {busy}. The "
            f"1-minute load average reached {hi:.1f} on {res.machine.get('cores')} cores (other work shares the "
            "machine; each measurement lists its load); both sides of each ratio ran minutes apart under similar load."
        )
    out.append(
        "Method: sections 1-2 run in one local[2] Spark application (driver memory 2g, `jobs.spark.build_session`) "
        "after an unmeasured warm-up, data warm in the page cache for every approach alike. The CTAS baseline is "
        "`CREATE TABLE ... PARTITIONED BY (months(order_date)) AS SELECT * FROM replica...` (same layout as the kit's "
        "target). The kit's copy and verification times are its own (`TableResult.copy_seconds`, "
        "`verify_seconds`). Sections 3-5 run as fresh processes, as an engineer would run them. The planning tables "
        "are read from the source warehouse (a dry run reads metadata only). Re-render this file from "
        "`bench-out/results.json` with `python -m bench.run --render`."
    )
    return out


PROFILE_TITLE = "Spark event log: per phase, work by statement kind, top stages by wall time, plan exchanges"


def spark_profile(res: Results, evdir: Path) -> None:
    """Attribute the event log's stages to the measured phases; store summaries and the rendered profile."""
    if not evdir.is_dir():
        return
    try:
        log = eventlog.read(evdir)
        phases = [eventlog.Phase(**p) for p in res.extra.get("phases", [])]
        pps = [pp for pp in eventlog.attribute(log, phases) if pp.stages]
        res.extra["spark_profile"] = {pp.phase.name: {**pp.summary(), "by_kind": pp.by_kind(log)} for pp in pps}
        if pps:
            res.profiles[PROFILE_TITLE] = eventlog.render(pps, log=log)
    except Exception as e:
        res.errors.append(f"event log profile: {type(e).__name__}: {e}")


def render_from_json(path: Path, md: Path) -> Results:
    """Recompute ratios, goals and notes from a results.json and write the Markdown (no measuring)."""
    res = Results.from_dict(json.loads(path.read_text()))
    spark_profile(res, OUT / "work" / "eventlog")
    res.comparisons = comparisons(res)
    res.notes = notes(res, res.extra.get("spark_profile", {}))
    md.write_text(render_markdown(res))
    path.write_text(json.dumps(res.as_dict(), indent=2, default=str) + "\n")
    return res


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    md = Path(os.environ.get("BENCH_MARKDOWN", REPO / "BENCHMARKS.md"))
    if args[:1] == ["--render"]:
        src = Path(args[1]) if len(args) > 1 else OUT / "results.json"
        res = render_from_json(src, md)
        print(console_table(res))
        print(f"\nwrote {md} from {src}")
        return 0
    scale_name = os.environ.get("BENCH_SCALE", "small")
    from bench.recovery import SCALES, Work

    if scale_name not in SCALES:
        print(f"BENCH_SCALE={scale_name!r}: expected one of {', '.join(SCALES)}", file=sys.stderr)
        return 2
    sc = SCALES[scale_name]
    t_start = time.perf_counter()
    OUT.mkdir(exist_ok=True)
    root = OUT / "work"
    shutil.rmtree(root, ignore_errors=True)
    work = Work(root)
    res = Results(scale_name, machine=machine_info())
    res.extra["scale"] = sc.__dict__
    print(f"Benchmarks, scale {scale_name}: {sc}", flush=True)

    def step(title: str, fn: Any) -> Any:
        print(f"\n== {title} (t={time.perf_counter() - t_start:.0f}s)", flush=True)
        try:
            return fn()
        except Exception as e:
            res.errors.append(f"{title}: {type(e).__name__}: {str(e).splitlines()[0][:400] if str(e) else ''}")
            traceback.print_exc()
            return None

    spark_box: dict[str, Any] = {}

    def data() -> dict[str, Any]:
        from bench import recovery as R

        spark = R.session(work)
        spark_box["spark"] = spark
        t0 = time.perf_counter()
        d: dict[str, Any] = {"orders": R.build_orders(spark, work, sc)}
        print(f"    orders ready in {time.perf_counter() - t0:.0f} s: {d['orders']}", flush=True)
        d["many"] = R.build_many(spark, work, sc)
        d["planning"] = R.build_planning(spark, work, sc)
        d["setup_s"] = time.perf_counter() - t0
        return d

    d = step("setup: data in the source warehouse, relocated into the replica", data) or {}
    res.extra["data"] = d
    spark = spark_box.get("spark")
    if spark is not None and d.get("orders"):
        from bench import recovery as R

        res.extra["copy"] = step("1+2 recovery copy and verification", lambda: R.measure_copy(spark, work, d["orders"]))
    if spark is not None:
        spark.stop()
    if d.get("many"):
        from bench import recovery as R

        res.extra["many"] = step("3 many tables", lambda: R.measure_many(work, d["many"], sc))
    if d.get("planning"):
        from bench import recovery as R

        res.extra["planning"] = step("5 planning", lambda: R.measure_planning(work, d["planning"]))

    def synth() -> dict[str, Any]:
        from bench.synthscale import run_synth

        with work.timed("4", f"synth {sc.synth_destinations} destinations x {sc.synth_tables} tables") as box:
            s = run_synth(root / "synth-scale", sc.synth_destinations, sc.synth_tables)
            box["seconds"] = s["wall_s"]
            box["note"] = f"import {s['import_s']:.1f} s, build {s['build_s']:.1f} s, synth {s['synth_s']:.1f} s"
        return s

    res.extra["synth"] = step("4 synth scale", synth) or {}
    res.measurements = work.measurements
    res.errors.extend(work.errors)
    res.profiles.update(work.profiles)

    res.extra["phases"] = [p.__dict__ for p in work.phases]
    spark_profile(res, root / "eventlog")
    res.comparisons = comparisons(res)
    res.notes = notes(res, res.extra.get("spark_profile", {}))
    res.machine["load average at end (1/5/15 min)"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    res.machine["bench wall time"] = f"{time.perf_counter() - t_start:.0f} s"

    (OUT / "results.json").write_text(json.dumps(res.as_dict(), indent=2, default=str) + "\n")
    md.write_text(render_markdown(res))
    print("\n" + console_table(res))
    print(f"\nwrote {md} and {OUT / 'results.json'} in {time.perf_counter() - t_start:.0f} s", flush=True)
    return 1 if res.errors else 0


if __name__ == "__main__":
    sys.exit(main())
