"""Ops tools over an estate: status and audit over 3 source buckets x N tables, each source replicating to
its own replica bucket (a fan-in vault holds at most 10,000 tables: `s3tables_kit.topology.checks`), with the lake run's
latency (`bench.ops_scale`). `status`, then `audit`, runs twice over the same estate with its own metadata cache
(`s3tables_kit.jobs.kernel.metadata_cache`): cold (an empty cache: every metadata file read and its summary written),
then warm (nothing changed: every metadata location read, no file). The "estimate, service latency alone" for 3 x 10,000
tables is extrapolated per table from the run (`estate_estimate`; at full scale it is the run's own size).

    python -m bench.ops_estate [scaled|full|tiny] [status|audit ...]   # writes bench-out/ops_estate.json, prints the
                                                                         # Markdown section; only the tools named
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ops_scale import (
    GOAL_SECONDS,
    S3_LATENCY,
    S3TABLES_LATENCY,
    _brief,
    config_doc,
    deploy_lake,
    harden_and_write,
    limits,
    run_child,
    seed_namespaces,
)
from emulator.process import Emulator
from emulator.server import FRONT_ENV
from s3tables_kit.topology.paths import ROOT


@dataclass(frozen=True)
class EstateScale:
    sources: int
    namespaces: int  # per source
    tables_per_namespace: int
    concurrency: int
    # audit's: five requests per source table and replica (status: two), so at 64 in flight the latency floor alone
    # (3 x 10,000 x 5 x 30 ms / 64 = 70 s) is past the goal; at 128 it is 35 s, leaving the rest to the CPU
    audit_concurrency: int

    def concurrency_of(self, tool: str) -> int:
        return self.audit_concurrency if tool == "audit" else self.concurrency

    @property
    def tables_per_source(self) -> int:
        return self.namespaces * self.tables_per_namespace

    @property
    def tables(self) -> int:
        return self.sources * self.tables_per_source


ESTATE_SCALES = {
    "full": EstateScale(sources=3, namespaces=100, tables_per_namespace=100, concurrency=64, audit_concurrency=128),
    "scaled": EstateScale(sources=3, namespaces=5, tables_per_namespace=100, concurrency=64, audit_concurrency=128),
    "tiny": EstateScale(sources=3, namespaces=2, tables_per_namespace=5, concurrency=8, audit_concurrency=8),
}
ESTATE_TARGET = ESTATE_SCALES["full"]  # what the estimate is extrapolated to


def estate_config_doc(es: EstateScale, ou_id: str = "ou-placeholder-00000000") -> dict[str, Any]:
    """`es.sources` sources `lake-src-<i>` (one declared table each; the seeded ones replicate at bucket level), each
    replicating to its own replica `lake-rep-<i>`."""
    base = config_doc(1, ou_id)
    src = base["source"]
    return {
        **{k: v for k, v in base.items() if k not in ("source", "replication", "replicas", "recovery")},
        "sources": [
            {**src, "id": f"s{i}", "bucket": f"lake-src-{i}", "replicate_to": [f"lake-rep-{i}"],
             "replication": {"mode": "bucket"}}
            for i in range(es.sources)
        ],
        "replicas": [{**base["replicas"][0], "bucket": f"lake-rep-{i}"} for i in range(es.sources)],
        "recovery": {"replica": "lake-rep-0", "bucket": "lake-recovery", "namespace": "recovered"},
    }  # fmt: skip


def build_estate(emu: Emulator, es: EstateScale, workdir: Path) -> dict[str, Any]:
    """The estate on the emulator: buckets, each source's bucket replication with its own role, `es.tables` seeded
    tables replicated, replica bucket policies, every replica hardened (zero latency: set-up, not measured)."""
    from harness.sandbox import put_source_bucket_policies
    from s3tables_kit.jobs.kernel.clients import Clients

    t0 = time.perf_counter()
    clients = Clients(endpoint_url=emu.url, max_pool_connections=es.concurrency * 2)
    cfg_doc, cfg, out_doc = deploy_lake(emu, lambda ou_id: estate_config_doc(es, ou_id))
    put_source_bucket_policies(clients.s3tables, cfg)  # as each source stack deploys it: audit checks it
    commit_ms = int((time.time() - 3600) * 1000)
    for src in cfg.sources:
        seed_namespaces(emu, src.bucket_arn, es.namespaces, es.tables_per_namespace, commit_ms)
        emu.control.replicate(source_bucket_arn=src.bucket_arn)
    seeded = time.perf_counter() - t0
    hardened = harden_and_write(clients, cfg_doc, out_doc, workdir, es.concurrency)
    assert hardened == (0, es.tables), hardened
    return {
        "tables": es.tables,
        "seed_and_replicate_s": round(seeded, 1),
        "harden_apply_s": round(time.perf_counter() - t0 - seeded, 1),
    }


def estate_estimate(x: dict[str, Any], tables: int, target_tables: int, concurrency: int, cores: int) -> dict[str, Any]:
    """The "estimate, service latency alone" of a run over `tables` tables, extrapolated to `target_tables` (pure):
    the tool's requests and its CPU grow with the tables (one status read per table and destination, one retention
    read per table: `BENCHMARKS.md`), so both are scaled per table (the CPU of the tool's run, `work_cpu_s`; the
    interpreter's start-up is added once); the estimate is then the longer of the latency floor and the tool's CPU
    over the cores, as in `limits`."""
    lim = limits(x, concurrency, cores)
    if lim is None:
        return {}
    factor = target_tables / max(tables, 1)
    latency_floor = lim["latency_floor_s"] * factor
    work = x.get("work_cpu_s", x["client_cpu_s"])  # per-table CPU: without the start-up, which does not scale
    cpu = (x["client_cpu_s"] - work + work * factor) / max(cores, 1)
    return {
        "measured_tables": tables,
        "target_tables": target_tables,
        "requests_per_table": lim["requests"] / max(tables, 1),
        "client_ms_per_table": 1000 * work / max(tables, 1),
        "startup_cpu_s": x["client_cpu_s"] - work,
        "latency_floor_s": latency_floor,
        "client_cpu_floor_s": cpu,
        "aws_estimate_s": max(latency_floor, cpu),
        "bound": "CPU" if cpu >= latency_floor else "latency",
        "measured": lim,
    }


def run_estate_bench(
    scale_name: str = "scaled", workdir: Path | None = None, tools: tuple[str, ...] = ("status", "audit")
) -> dict[str, Any]:
    """status and audit (`tools`) over an estate, each in a child process as its CLI runs, with the latency of the
    lake bench; writes bench-out/ops_estate.json."""
    es = ESTATE_SCALES[scale_name]
    wd = workdir or Path(tempfile.mkdtemp(prefix="ops-estate-"))
    wd.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    # the stand-in's event-loop front door: its threads' CPU is not AWS's, which runs on other cores than the tool's
    emu = Emulator(env={FRONT_ENV: "loop"}).start()
    doc: dict[str, Any] = {
        "scale": scale_name,
        "front": "loop",
        "config": es.__dict__ | {"tables": es.tables},
        "cores": cores,
    }
    try:
        print(f"    estate: building {es.sources} sources x {es.tables_per_source} tables", flush=True)
        doc["setup"] = build_estate(emu, es, wd)
        emu.control.set_latency(service="s3tables", seconds=S3TABLES_LATENCY)
        emu.control.set_latency(service="s3", seconds=S3_LATENCY)
        doc["kit"], doc["estimate"] = {}, {}
        for _key, tool in RUNS:
            shutil.rmtree(wd / f"metadata-cache-{tool}", ignore_errors=True)  # each tool's first run: cold
        for key, tool in RUNS:
            if tool not in tools:
                continue
            load = [os.getloadavg()]
            conc = es.concurrency_of(tool)
            x = run_child(tool, emu, wd, conc, cache_dir=wd / f"metadata-cache-{tool}")
            x["load"] = [*load, os.getloadavg()]  # 1/5/15-minute load averages before and after the run
            doc["kit"][key] = x
            if not x.get("crashed"):
                doc["estimate"][key] = estate_estimate(x, es.tables, ESTATE_TARGET.tables, conc, cores)
            print(f"    estate: {key}: {_brief(x)}", flush=True)
    finally:
        emu.stop()
    (ROOT / "bench-out").mkdir(exist_ok=True)
    (ROOT / "bench-out" / "ops_estate.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return doc


# (key in the results, tool): each tool's first run with an empty cache, its second with what the first wrote
RUNS = (("status", "status"), ("status-warm", "status"), ("audit", "audit"), ("audit-warm", "audit"))
LABELS = {
    "status": "status, cold cache",
    "status-warm": "status, warm cache",
    "audit": "audit, cold cache",
    "audit-warm": "audit, warm cache",
}


def _load(x: dict[str, Any]) -> str:
    loads = x.get("load") or []
    return " → ".join("/".join(f"{v:.1f}" for v in lo) for lo in loads) or "-"


def _requests(m: dict[str, Any]) -> str:
    ops = sorted(m["by_operation"].items(), key=lambda kv: -kv[1])
    return f"{m['requests']:,} (" + ", ".join(f"{op} {n:,}" for op, n in ops[:4]) + ")"


def estate_markdown(doc: dict[str, Any]) -> str:
    """The BENCHMARKS.md rows of an estate run (pure)."""
    sc = doc["config"]
    target = ESTATE_TARGET
    lines = [
        f"| tool | measured ({sc['sources']} x {sc['namespaces'] * sc['tables_per_namespace']:,} tables) | load "
        "1/5/15 min (before → after) | requests | tool CPU / table | emulator CPU | bound here | estimate for "
        f"{target.sources} x {target.tables_per_source:,} tables, service latency alone | bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, _tool in RUNS:
        x, est = doc["kit"].get(key) or {}, doc["estimate"].get(key) or {}
        if not x:
            continue
        if x.get("crashed") or not est:
            lines.append(f"| {LABELS[key]} | crashed | | | | | | | |")
            continue
        m = est["measured"]
        lines.append(
            f"| {LABELS[key]} | {x['wall_s']:.1f} s ({_result(key, x)}; processes {x.get('processes', 1)}, "
            f"{x.get('peak_rss_mb', 0):.0f} MB) | {_load(x)} | {_requests(m)} | {est['client_ms_per_table']:.1f} ms | "
            f"{_s(x['emulator_cpu_s'])} | {m['bound']} (latency floor {m['latency_floor_s']:.1f} s, CPU floor "
            f"{m['cpu_floor_s']:.1f} s) | {est['aws_estimate_s']:.0f} s | {est['bound']} |"
        )
    return "\n".join(lines) + "\n"


def _s(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def _result(key: str, x: dict[str, Any]) -> str:
    if key.startswith("status"):
        return f"{x.get('rows', 0):,} rows, {x.get('unknown', 0)} unknown"
    checked = x.get("checked") or {}
    return (
        f"{sum((x.get('drifts') or {}).values())} drifts over {checked.get('source tables', 0):,} source and "
        f"{checked.get('replica tables', 0):,} replica tables"
    )


def section_markdown(doc: dict[str, Any] | None) -> str:
    """The whole estate section of BENCHMARKS.md (pure): the set-up, the rows, which run meets the goal and what
    bounds each."""
    if not doc:
        return ""
    sc = doc["config"]
    per_source = sc["namespaces"] * sc["tables_per_namespace"]
    full = sc["sources"] * per_source >= ESTATE_TARGET.tables
    verdicts = []
    for key, _tool in RUNS:
        x, est = doc["kit"].get(key) or {}, doc["estimate"].get(key) or {}
        if x and not x.get("crashed") and est:
            m = est["measured"]
            met = "meets" if x["wall_s"] <= GOAL_SECONDS else "does not meet"
            verdicts.append(
                f"{LABELS[key]}: {x['wall_s']:.1f} s"
                + (f", {met} the {GOAL_SECONDS:.0f} s goal" if full else " (the goal is defined at 3 x 10,000 tables)")
                + f"; bound by {m['bound']} here (tool {_s(x['client_cpu_s'])} + emulator {_s(x['emulator_cpu_s'])}"
                f" of CPU over {doc['cores']} cores = {_s(m['cpu_floor_s'])}; latency floor "
                f"{_s(m['latency_floor_s'])})"
            )
    return "\n".join(
        [
            "",
            f"### An estate: status and audit over every bucket (`python -m bench.ops_estate {doc['scale']}`)",
            "",
            f"{sc['sources']} source buckets x {per_source:,} tables, each replicating at bucket level to its own "
            "replica bucket (a fan-in vault holds at most 10,000 tables, so 3 x 10,000 cannot fan into one), the "
            f"lake run's emulator latency ({S3TABLES_LATENCY * 1000:.0f} ms per S3 Tables call, "
            f"{S3_LATENCY * 1000:.0f} ms per S3 call), concurrency {sc['concurrency']} (audit "
            f"{sc.get('audit_concurrency', sc['concurrency'])}), each tool in a child process "
            "as its CLI runs. `status` and `audit` read the replicas' metadata files through a cache "
            "(`s3tables_kit.jobs.kernel.metadata_cache`, keyed by metadata location: a metadata file never changes), "
            "each its own: first with an "
            "empty cache (cold: every file read and its summary written), then again over the unchanged estate "
            "(warm: every replica's metadata location read, no file). Both are real runs of the same code; a run "
            "after a day of commits lies between them (a table whose metadata changed is read again). The load "
            "column is the machine's (the tool, the emulator and other work). Set-up (not measured): "
            f"{doc.get('setup')}.",
            "",
            estate_markdown(doc).rstrip("\n"),
            "",
            *[f"- {v}." for v in verdicts],
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    edoc = run_estate_bench(args[0] if args else "scaled", tools=tuple(args[1:]) or ("status", "audit"))
    print(section_markdown(edoc))
    return 0 if all(not x.get("crashed") for x in edoc["kit"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
