"""Ops tools over an estate (issue 24): status and audit over 3 source buckets x N tables, each source replicating to
its own replica bucket (a fan-in vault holds at most 10,000 tables: `topology.checks`), with the lake run's latency
(`bench.ops_scale`); its "estimate, service latency alone" for 3 x 10,000 tables is extrapolated per table from a
scaled-down run (`estate_estimate`).

    python -m bench.ops_estate [scaled|full|tiny]   # writes bench-out/ops_estate.json
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.ops_scale import (
    REPO,
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


@dataclass(frozen=True)
class EstateScale:
    sources: int
    namespaces: int  # per source
    tables_per_namespace: int
    concurrency: int

    @property
    def tables_per_source(self) -> int:
        return self.namespaces * self.tables_per_namespace

    @property
    def tables(self) -> int:
        return self.sources * self.tables_per_source


ESTATE_SCALES = {
    "full": EstateScale(sources=3, namespaces=100, tables_per_namespace=100, concurrency=64),
    "scaled": EstateScale(sources=3, namespaces=5, tables_per_namespace=100, concurrency=64),
    "tiny": EstateScale(sources=3, namespaces=2, tables_per_namespace=5, concurrency=8),
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
    from jobs.kernel.clients import Clients

    t0 = time.perf_counter()
    clients = Clients(endpoint_url=emu.url, max_pool_connections=es.concurrency * 2)
    cfg_doc, cfg, out_doc = deploy_lake(emu, clients, lambda ou_id: estate_config_doc(es, ou_id))
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


def run_estate_bench(scale_name: str = "scaled", workdir: Path | None = None) -> dict[str, Any]:
    """status and audit over an estate (issue 24), each in a child process as its CLI runs, with the latency of the
    lake bench; writes bench-out/ops_estate.json."""
    es = ESTATE_SCALES[scale_name]
    wd = workdir or Path(tempfile.mkdtemp(prefix="ops-estate-"))
    wd.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    emu = Emulator().start()
    doc: dict[str, Any] = {"scale": scale_name, "config": es.__dict__ | {"tables": es.tables}, "cores": cores}
    try:
        print(f"    estate: building {es.sources} sources x {es.tables_per_source} tables", flush=True)
        doc["setup"] = build_estate(emu, es, wd)
        emu.control.set_latency(service="s3tables", seconds=S3TABLES_LATENCY)
        emu.control.set_latency(service="s3", seconds=S3_LATENCY)
        doc["kit"], doc["estimate"] = {}, {}
        for tool in ("status", "audit"):
            x = run_child(tool, emu, wd, es.concurrency)
            doc["kit"][tool] = x
            if not x.get("crashed"):
                doc["estimate"][tool] = estate_estimate(x, es.tables, ESTATE_TARGET.tables, es.concurrency, cores)
            print(f"    estate: {tool}: {_brief(x)}", flush=True)
    finally:
        emu.stop()
    (REPO / "bench-out").mkdir(exist_ok=True)
    (REPO / "bench-out" / "ops_estate.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return doc


def estate_markdown(doc: dict[str, Any]) -> str:
    """The BENCHMARKS.md rows of an estate run (pure)."""
    sc = doc["config"]
    target = ESTATE_TARGET
    lines = [
        f"| tool | measured ({sc['sources']} x {sc['namespaces'] * sc['tables_per_namespace']:,} tables) | requests "
        f"| tool CPU / table | emulator CPU | bound here | estimate for {target.sources} x {target.tables_per_source:,}"
        " tables, service latency alone | bound |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tool in ("status", "audit"):
        x, est = doc["kit"].get(tool) or {}, doc["estimate"].get(tool) or {}
        if x.get("crashed") or not est:
            lines.append(f"| {tool} | crashed | | | | | | |")
            continue
        m = est["measured"]
        lines.append(
            f"| {tool} | {x['wall_s']:.1f} s | {m['requests']:,} | {est['client_ms_per_table']:.1f} ms | "
            f"{x['emulator_cpu_s']:.0f} s | {m['bound']} (latency floor {m['latency_floor_s']:.1f} s, CPU floor "
            f"{m['cpu_floor_s']:.1f} s) | {est['aws_estimate_s']:.0f} s | {est['bound']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    edoc = run_estate_bench(args[0] if args else "scaled")
    print(estate_markdown(edoc))
    return 0 if all(not x.get("crashed") for x in edoc["kit"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
