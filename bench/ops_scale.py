"""Ops tools at lake scale: status with windows, monitor, harden (nothing to change) and audit over
10,000 tables in 100 namespaces x 3 destinations on the emulator (emulator/) with 30 ms latency per S3 Tables
call and 20 ms per S3 call, against the baseline a user would script by hand (the same calls, one table after the
other, measured on a sample in the same run and scaled); each tool runs in a child process whose peak RSS is
measured; then the monitor under 20% throttling of every S3 Tables call plus a burst of 1,000 throttled
`GetTableReplicationStatus` calls.

    python -m bench.ops_scale [full|small]        # writes bench-out/ops_scale.json, prints the Markdown section
    python -m bench.ops_estate [scaled|full|tiny]   # status and audit over an estate (bench/ops_estate.py)

`bench.run` calls `run_ops_bench` (scale from BENCH_SCALE) and appends `markdown(...)` to BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.sites import SSE_S3, site
from emulator.process import Emulator
from s3tables_kit.topology.paths import ROOT

ACCOUNT = "123456789012"
SRC_REGION, DST_REGION = "us-east-1", "us-west-2"
BREAK_GLASS = f"arn:aws:iam::{ACCOUNT}:role/s3tables-break-glass"
S3TABLES_LATENCY, S3_LATENCY = 0.030, 0.020
GOAL_SECONDS, GOAL_SPEEDUP, GOAL_RSS_MB = 60.0, 20.0, 500.0


@dataclass(frozen=True)
class OpsScale:
    namespaces: int
    tables_per_namespace: int
    destinations: int
    sample: int  # tables in the hand-scripted baseline's sample
    concurrency: int
    burst: int = 1000  # throttled GetTableReplicationStatus calls in a row
    second_pass_pause: float = 5.0  # the monitor's default

    @property
    def tables(self) -> int:
        return self.namespaces * self.tables_per_namespace


SCALES = {
    "full": OpsScale(namespaces=100, tables_per_namespace=100, destinations=3, sample=40, concurrency=64),
    "medium": OpsScale(namespaces=20, tables_per_namespace=100, destinations=3, sample=10, concurrency=64),
    "small": OpsScale(namespaces=3, tables_per_namespace=40, destinations=3, sample=10, concurrency=32, burst=300),
    "tiny": OpsScale(
        namespaces=2, tables_per_namespace=10, destinations=2, sample=4, concurrency=8, burst=40, second_pass_pause=0.5
    ),
}


# ----------------------------------------------------------------------------------------------------
# The world: config, outputs, emulator
# ----------------------------------------------------------------------------------------------------


def _dest_bucket(i: int) -> str:
    return f"lake-replica-{i}"


def config_doc(destinations: int, ou_id: str = "ou-placeholder-00000000") -> dict[str, Any]:
    table = {"name": "t000", "columns": [{"name": "id", "type": "string"}]}
    return {
        "kit": {"name": "lake"},
        "source": site(
            ACCOUNT,
            SRC_REGION,
            "lake-source",
            encryption=SSE_S3,
            retention=(720, 1),
            deployed_by_role=False,
            namespaces=[{"name": "ns000", "tables": [table]}],
        ),
        "replicas": [
            site(ACCOUNT, DST_REGION, _dest_bucket(i), encryption=SSE_S3, retention=(2160, 1), storage_class="STANDARD")
            for i in range(destinations)
        ],
        "replication": {"mode": "bucket"},
        "protection": {
            "break_glass_principals": [BREAK_GLASS],
            "organization": {
                "management_account_id": "999988887777",
                "targets": [ou_id],
                "ou_accounts": {ou_id: [ACCOUNT]},
            },
        },
        "recovery": {"replica": _dest_bucket(0), "bucket": "lake-recovery", "namespace": "recovered"},
    }


LAKE_OU = "ou-lake-replicas"  # the lake's OU, created by the deploy under this id


def deploy_lake(
    emu: Emulator, make_config: Callable[[str], dict[str, Any]]
) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """The deploy of a lake on the emulator (`harness.deploy`): the configuration `make_config(ou_id)`, its SCPs on
    the OU, the replica buckets with their settings and policies, the source buckets with their bucket replication;
    the configuration (document and parsed) and the outputs of that deploy. The tables are the emulator's bulk
    seeding (`seed_namespaces`)."""
    from harness.deploy import deploy
    from s3tables_kit.topology.config import parse_config

    emu.control.reset()
    cfg_doc = make_config(LAKE_OU)
    cfg = parse_config(cfg_doc)
    return cfg_doc, cfg, deploy(cfg, emu, tables=False)


def seed_namespaces(emu: Emulator, source_arn: str, namespaces: int, tables_per_namespace: int, commit_ms: int) -> None:
    """`namespaces` x `tables_per_namespace` tables with one commit each (`ns000.t000`, ...) in a source bucket."""
    for n in range(namespaces):  # a namespace per request keeps each control call short
        names = [f"t{j:03d}" for j in range(tables_per_namespace)]
        emu.control.seed(source_arn, {f"ns{n:03d}": names}, commit_ms=commit_ms)


def harden_and_write(
    clients: Any, cfg_doc: dict[str, Any], out_doc: dict[str, Any], workdir: Path, concurrency: int
) -> tuple[int, int]:
    """Every replica hardened by the kit (set-up, not measured), then the configuration and outputs files the tools
    read; harden's exit code and the tables it hardened (its report, every result with its diff, is not kept: the
    tools' children are forked from this process)."""
    from s3tables_kit.jobs.ops.harden import harden
    from s3tables_kit.topology.outputs import parse_outputs

    report = harden(clients, parse_outputs(out_doc), concurrency=concurrency, show_progress=False)
    (workdir / "config.json").write_text(json.dumps(cfg_doc))
    (workdir / "outputs.json").write_text(json.dumps(out_doc))
    return report.exit_code, report.count("hardened")


def build_lake(emu: Emulator, sc: OpsScale, workdir: Path) -> dict[str, Any]:
    """Buckets, bucket replication to every destination, `sc.tables` seeded tables replicated everywhere, replica
    bucket policies and settings, then every replica hardened by the kit (zero latency: set-up, not measured)."""
    from harness.sandbox import put_source_bucket_policies
    from s3tables_kit.jobs.kernel.clients import Clients

    t0 = time.perf_counter()
    clients = Clients(endpoint_url=emu.url, max_pool_connections=sc.concurrency * 2)
    cfg_doc, cfg, out_doc = deploy_lake(emu, lambda ou_id: config_doc(sc.destinations, ou_id))
    put_source_bucket_policies(clients.s3tables, cfg)  # as the source stack deploys it: audit checks it
    commit_ms = int((time.time() - 3600) * 1000)
    seed_namespaces(emu, cfg.sources[0].bucket_arn, sc.namespaces, sc.tables_per_namespace, commit_ms)
    seeded = time.perf_counter() - t0
    emu.control.replicate(source_bucket_arn=cfg.sources[0].bucket_arn)
    replicated = time.perf_counter() - t0
    hardened = harden_and_write(clients, cfg_doc, out_doc, workdir, sc.concurrency)
    assert hardened == (0, sc.tables * sc.destinations), hardened
    return {
        "tables": sc.tables,
        "replicas": sc.tables * sc.destinations,
        "seed_s": round(seeded, 1),
        "replicate_s": round(replicated - seeded, 1),
        "harden_apply_s": round(time.perf_counter() - t0 - replicated, 1),
    }


# ----------------------------------------------------------------------------------------------------
# The tools, each in a child process (peak RSS of that process)
# ----------------------------------------------------------------------------------------------------


def child(
    tool: str, endpoint: str, workdir: str, concurrency: int, pause: float = 5.0, cache_dir: str | None = None
) -> dict[str, Any]:
    """Run one tool as its CLI would, return a summary (runs in the child process). `cache_dir`: the metadata cache of
    status and audit (`s3tables_kit.jobs.kernel.metadata_cache`; None: every metadata file read, as `--no-cache`)."""
    from datetime import timedelta

    from s3tables_kit.jobs.kernel.clients import Clients
    from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache
    from s3tables_kit.jobs.ops import audit, harden, monitor, status
    from s3tables_kit.topology.config import parse_config
    from s3tables_kit.topology.outputs import parse_outputs

    wd = Path(workdir)
    cfg = parse_config(json.loads((wd / "config.json").read_text()))
    outputs = parse_outputs(json.loads((wd / "outputs.json").read_text()))
    clients = Clients(endpoint_url=endpoint, max_pool_connections=concurrency * 2)
    t0, cpu0 = time.perf_counter(), _cpu_s()
    out: dict[str, Any]
    if tool == "status":
        promised: dict[str, timedelta | None] = {
            r.table_bucket_arn: timedelta(hours=r.snapshot_retention.max_snapshot_age_hours) for r in outputs.replicas
        }
        rep = status.collect_status(
            clients,
            [src.table_bucket_arn for src in outputs.sources],  # every source of an estate
            concurrency=concurrency,
            show_progress=False,
            windows=promised,
            # as the CLI: worker processes by the table count (`s3tables_kit.jobs.kernel.concurrency.processes_for`)
            processes=None,
            cache=MetadataCache.open(Path(cache_dir)) if cache_dir else None,
        )
        out = {
            "tables": rep.tables,
            "rows": len(rep.rows),
            "counts": rep.counts(),
            "unknown": len(rep.errors),
            "windows": sum(1 for r in rep.rows if r.window and r.window.start),
            "second_pass": rep.second_pass,
        }
    elif tool in ("monitor", "monitor-throttled"):
        settings = monitor.MonitorSettings(
            kit="lake",
            source_bucket_arns=tuple(s.table_bucket_arn for s in outputs.sources),
            destination_bucket_arns=tuple(r.table_bucket_arn for r in outputs.replicas),
            concurrency=concurrency,
            second_pass_pause=pause,
        )
        res = monitor.run_monitor(clients, settings, region=SRC_REGION)
        out = res.to_json() | {"unknown": res.errors}
    elif tool == "harden":
        hrep = harden.harden(clients, outputs, concurrency=concurrency, show_progress=False, processes=None)
        out = {"counts": hrep.counts, "exit_code": hrep.exit_code}
    elif tool == "audit":
        arep = audit.audit(
            clients,
            cfg,
            outputs,
            concurrency=concurrency,
            show_progress=False,
            processes=None,
            cache=MetadataCache.open(Path(cache_dir)) if cache_dir else None,
        )
        kinds: dict[str, int] = {}
        for d in arep.drifts:
            kinds[d.kind] = kinds.get(d.kind, 0) + 1
        out = {"checked": arep.checked, "drifts": kinds}
    else:
        raise ValueError(tool)
    out["seconds"] = time.perf_counter() - t0
    out["work_cpu_s"] = _cpu_s() - cpu0  # the tool's run without the interpreter's start-up and imports
    out["peak_rss_mb"] = _vm_hwm_mb()
    return out


def _cpu_s() -> float:
    """CPU seconds of this process and of its waited-for children (the tool's worker processes, once joined)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _vm_hwm_mb() -> float:
    """This process's peak RSS (VmHWM; exec starts a fresh count, unlike wait4's ru_maxrss, which also covers the
    forked parent's image before exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_child(
    tool: str, emu: Emulator, workdir: Path, concurrency: int, pause: float = 5.0, cache_dir: Path | None = None
) -> dict[str, Any]:
    """The tool in a fresh interpreter; wall time, its peak RSS with its worker processes', its CPU with theirs
    (wait4: the waited-for workers count), the emulator's CPU seconds meanwhile."""
    code = (
        "import json, sys; from bench.ops_scale import child; "
        f"print(json.dumps(child({tool!r}, {emu.url!r}, {str(workdir)!r}, {concurrency}, {pause}, "
        f"{str(cache_dir) if cache_dir else None!r})))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("AWS_ENDPOINT_URL", None)
    stats0 = emu.control.stats()
    cpu0, t0 = emu.cpu_seconds(), time.perf_counter()
    from bench.synthscale import TreeMemory

    mem = TreeMemory()  # the tool and its worker processes (`--processes`): each one's VmHWM, sampled
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=so, stderr=se)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            mem.sample(proc.pid)
            time.sleep(0.25)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read().decode(), se.read().decode()
    if proc.returncode != 0:
        return {"tool": tool, "crashed": True, "exit_code": proc.returncode, "stderr": stderr[-3000:], "wall_s": wall}
    emulator_cpu = emu.cpu_seconds() - cpu0
    doc = json.loads(stdout.strip().splitlines()[-1])
    hwm_sum_kb = sum(hwm for p, (_, hwm) in mem.hwm_by_pid.items() if p != proc.pid)
    return doc | {
        "tool": tool,
        "crashed": False,
        # peak RSS of the tool with its worker processes: the largest sum of their resident sets seen (sampled every
        # 0.25 s), or the tool's own VmHWM if larger; `rss_hwm_sum_mb` adds every process's own peak (an upper bound)
        "tool_rss_mb": doc["peak_rss_mb"],
        "peak_rss_mb": max(doc["peak_rss_mb"], mem.peak_tree_rss_kb / 1024),
        "rss_hwm_sum_mb": doc["peak_rss_mb"] + hwm_sum_kb / 1024,
        "processes": len(mem.hwm_by_pid) or 1,  # the tool, its workers and multiprocessing's resource tracker
        "wall_s": wall,
        "client_cpu_s": usage.ru_utime + usage.ru_stime,
        "emulator_cpu_s": emulator_cpu,
        "requests": requests_between(stats0, emu.control.stats()),
    }


def requests_between(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Requests the emulator served between two `stats()` snapshots, per operation (S3 Tables and other JSON
    operations by name, S3 object operations summed over buckets); pure."""
    out: dict[str, int] = {}
    for kind in ("calls", "s3_calls"):
        for key, n in (after.get(kind) or {}).items():
            op = key.rsplit(" ", 1)[-1]  # S3 calls are keyed "<bucket> <operation>"
            out[op] = out.get(op, 0) + n - (before.get(kind) or {}).get(key, 0)
    return {op: n for op, n in sorted(out.items()) if n}


# ----------------------------------------------------------------------------------------------------
# The hand-scripted baseline: the CLI call sequence per table, serial
# ----------------------------------------------------------------------------------------------------


def baseline(tool: str, emu: Emulator, sc: OpsScale) -> dict[str, Any]:
    """Seconds per source table of the calls `aws s3tables ...` / `aws s3api ...` a user would script, one table and
    one call after the other (a boto3 client per run, no process start per call: a lower bound for the CLI), on a
    sample of `sc.sample` tables, scaled to the lake."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=SRC_REGION, aws_access_key_id="x", aws_secret_access_key="x")
    conf = Config(retries={"mode": "standard", "total_max_attempts": 3}, s3={"addressing_style": "path"})
    s3t = session.client("s3tables", endpoint_url=emu.url, config=conf)
    dst = session.client("s3tables", endpoint_url=emu.url, config=conf, region_name=DST_REGION)
    s3 = session.client("s3", endpoint_url=emu.url, config=conf, region_name=DST_REGION)
    cw = session.client("cloudwatch", endpoint_url=emu.url, config=conf)
    src_arn = f"arn:aws:s3tables:{SRC_REGION}:{ACCOUNT}:bucket/lake-source"
    dests = [f"arn:aws:s3tables:{DST_REGION}:{ACCOUNT}:bucket/{_dest_bucket(i)}" for i in range(sc.destinations)]
    tables = s3t.list_tables(tableBucketARN=src_arn, maxTables=sc.sample)["tables"]  # one page: part of the sample
    t0 = time.perf_counter()
    for t in tables:
        ns, name = t["namespace"][0], t["name"]
        if tool in ("status", "monitor"):
            st = s3t.get_table_replication_status(tableArn=t["tableARN"])
            if tool == "status":
                for dest in st["destinations"]:
                    got = dst.get_table(tableBucketARN=dest["destinationTableBucketArn"], namespace=ns, name=name)
                    bucket, key = got["metadataLocation"].removeprefix("s3://").split("/", 1)
                    s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            else:
                cw.put_metric_data(
                    Namespace="HandScripted",
                    MetricData=[{"MetricName": "Lag", "Value": 0.0, "Dimensions": [{"Name": "Table", "Value": name}]}],
                )
        elif tool == "harden":
            for d in dests:
                dst.get_table(tableBucketARN=d, namespace=ns, name=name)
                dst.get_table_maintenance_configuration(tableBucketARN=d, namespace=ns, name=name)
                dst.get_table_policy(tableBucketARN=d, namespace=ns, name=name)
        elif tool == "audit":
            for d in dests:
                got = dst.get_table(tableBucketARN=d, namespace=ns, name=name)
                dst.get_table_maintenance_configuration(tableBucketARN=d, namespace=ns, name=name)
                src = got["managedTableInformation"]["replicationInformation"]["sourceTableARN"]
                s3t.get_table(tableArn=src)
                s3t.get_table_maintenance_configuration(tableBucketARN=src_arn, namespace=ns, name=name)
    per_table = (time.perf_counter() - t0) / len(tables)
    return {"tool": tool, "sample_tables": len(tables), "per_table_s": per_table, "scaled_s": per_table * sc.tables}


# ----------------------------------------------------------------------------------------------------


def run_ops_bench(scale_name: str | None = None, workdir: Path | None = None) -> dict[str, Any]:
    scale_name = scale_name or os.environ.get("BENCH_SCALE", "small")
    sc = SCALES[scale_name if scale_name in SCALES else "small"]
    wd = workdir or Path(tempfile.mkdtemp(prefix="ops-bench-"))
    wd.mkdir(parents=True, exist_ok=True)
    emu = Emulator().start()
    doc: dict[str, Any] = {"scale": scale_name, "config": sc.__dict__ | {"tables": sc.tables}, "cores": os.cpu_count()}
    try:
        print(f"    ops: building {sc.tables} tables x {sc.destinations} destinations", flush=True)
        doc["setup"] = build_lake(emu, sc, wd)
        print(f"    ops: set-up {doc['setup']}", flush=True)
        emu.control.set_latency(service="s3tables", seconds=S3TABLES_LATENCY)
        emu.control.set_latency(service="s3", seconds=S3_LATENCY)
        emu.control.set_latency(service="monitoring", seconds=S3_LATENCY)
        doc["kit"], doc["baseline"] = {}, {}
        cache = wd / "metadata-cache"  # status's metadata cache as the CLI keeps it: empty, then warm
        shutil.rmtree(cache, ignore_errors=True)
        for tool in KIT_RUNS:
            cli = TOOL_OF.get(tool, tool)
            if cli not in doc["baseline"]:
                doc["baseline"][cli] = baseline(cli, emu, sc)
            doc["kit"][tool] = run_child(cli, emu, wd, sc.concurrency, cache_dir=cache if cli == "status" else None)
            print(
                f"    ops: {tool}: kit {_brief(doc['kit'][tool])}; baseline {doc['baseline'][cli]['scaled_s']:.0f} s",
                flush=True,
            )
        # Throttling: 20% of every S3 Tables call (seeded) plus a burst of throttled status reads (1,000 at full scale;
        # the small scale's 120 tables get 300, or the burst would outnumber every attempt the tables make).
        emu.control.throttle("*", 0.2, seed=18, service="s3tables")
        emu.control.inject_faults("GetTableReplicationStatus", sc.burst)
        doc["kit"]["monitor-throttled"] = run_child("monitor-throttled", emu, wd, sc.concurrency, sc.second_pass_pause)
        doc["throttle_stats"] = [
            {k: f[k] for k in ("operation", "share", "served", "seen")} for f in emu.control.stats()["faults"]
        ]
        print(f"    ops: monitor under throttling: {_brief(doc['kit']['monitor-throttled'])}", flush=True)
    finally:
        emu.stop()
    return judged_and_written(doc, goals, "ops_scale")


def judged_and_written(
    doc: dict[str, Any], judge: Callable[[dict[str, Any]], list[dict[str, Any]]], name: str
) -> dict[str, Any]:
    """A scale benchmark's document with its goals judged, written to `bench-out/<name>.json` for the report."""
    doc["goals"] = judge(doc)
    (ROOT / "bench-out").mkdir(exist_ok=True)
    (ROOT / "bench-out" / f"{name}.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return doc


# `status` twice over the unchanged lake with one metadata cache (`s3tables_kit.jobs.kernel.metadata_cache`): the first
# run reads every replica's metadata file (cold), the second only their locations (warm); both against the one
# hand-scripted baseline (a script has no cache).
KIT_RUNS = ("status", "status-warm", "monitor", "harden", "audit")
TOOL_OF = {"status-warm": "status"}


def _brief(k: dict[str, Any]) -> str:
    if k.get("crashed"):
        return f"CRASHED ({k.get('stderr', '')[-300:]})"
    return f"{k['wall_s']:.1f} s, {k['peak_rss_mb']:.0f} MB, unknown {k.get('unknown', '-')}"


def goals(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal of the issue with the measured value and whether it is met (pure)."""
    out: list[dict[str, Any]] = []
    for tool in KIT_RUNS:
        k, b = doc["kit"].get(tool) or {}, doc["baseline"].get(TOOL_OF.get(tool, tool)) or {}
        if tool not in doc["kit"] and tool in TOOL_OF:
            continue  # a results document from before the run existed
        if k.get("crashed") or not k:
            out.append({"goal": f"{tool}: runs", "value": "crashed", "met": False})
            continue
        speed = b["scaled_s"] / k["wall_s"] if k.get("wall_s") else None
        out.append(
            {
                "goal": f"{tool}: <= {GOAL_SECONDS:.0f} s",
                "value": round(k["wall_s"], 1),
                "met": k["wall_s"] <= GOAL_SECONDS,
            }
        )
        out.append(
            {
                "goal": f"{tool}: >= {GOAL_SPEEDUP:.0f}x hand-scripted",
                "value": round(speed or 0, 1),
                "met": (speed or 0) >= GOAL_SPEEDUP,
            }
        )
        out.append(
            {
                "goal": f"{tool}: peak RSS <= {GOAL_RSS_MB:.0f} MB",
                "value": round(k["peak_rss_mb"]),
                "met": k["peak_rss_mb"] <= GOAL_RSS_MB,
            }
        )
    t = doc["kit"].get("monitor-throttled") or {}
    ok = bool(t) and not t.get("crashed") and t.get("unknown") == 0 and bool(t.get("heartbeat"))
    out.append(
        {"goal": "throttled monitor: 0 unknown, 0 crashes, heartbeat", "value": _brief(t) if t else "-", "met": ok}
    )
    return out  # fmt: skip


def _result_text(tool: str, x: dict[str, Any]) -> str:
    if TOOL_OF.get(tool, tool) == "status":
        return f"{x['rows']} rows, {x['windows']} windows, unknown {x['unknown']}"
    if tool == "monitor":
        return f"unknown {x['unknown']}, heartbeat {x['heartbeat']}"
    if tool == "monitor-throttled":
        return f"unknown {x['unknown']}, heartbeat {x['heartbeat']}, second pass {x['second_pass_tables']}"
    if tool == "harden":
        return str(x["counts"])
    return f"checked {x['checked']}, drifts {x['drifts'] or 0}"


def markdown(doc: dict[str, Any] | None) -> str:
    """The BENCHMARKS.md section of one run (pure)."""
    if not doc:
        return ""
    sc, k, b = doc["config"], doc["kit"], doc["baseline"]
    lines = [
        "",
        f"## Ops tools at lake scale (scale {doc['scale']})",
        "",
        f"{sc['tables']:,} tables in {sc['namespaces']} namespaces x {sc['destinations']} destinations on the emulator "
        f"(emulator/) with {S3TABLES_LATENCY * 1000:.0f} ms per S3 Tables call and {S3_LATENCY * 1000:.0f} ms per "
        f"S3/CloudWatch call; concurrency {sc['concurrency']}; each tool in a child process as its CLI runs (worker "
        f"processes by the table count, `--processes`; processes = the tool, its workers and multiprocessing's "
        f"resource tracker; peak RSS = the largest sum of their resident sets, sampled every 0.25 s). "
        f"Baseline: the same calls a user would script per table (`aws s3tables ...`), serial, measured on "
        f"{sc['sample']} tables in the same run and scaled. `status` runs twice with one metadata cache "
        f"(`s3tables_kit.jobs.kernel.metadata_cache`), as the CLI keeps it: first empty (each replica's location and "
        f"metadata read "
        f"with one loadTable of the Iceberg REST endpoint), then warm over the unchanged lake (`status-warm`: every "
        f"metadata location read, no file). "
        f"Set-up (not measured): {doc.get('setup')}.",
        "",
        "| tool | kit | hand-scripted (scaled) | speed-up | processes | peak RSS | client CPU | emulator CPU "
        "| result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tool in (*KIT_RUNS, "monitor-throttled"):
        x = k.get(tool) or {}
        base = b.get(TOOL_OF.get(tool, tool))
        if tool in TOOL_OF and tool not in k:
            continue
        if x.get("crashed") or not x:
            lines.append(f"| {tool} | crashed | | | | | | | {x.get('stderr', '')[-120:]} |")
            continue
        result = _result_text(tool, x)
        speed = f"{base['scaled_s'] / x['wall_s']:.1f}x" if base else "-"
        base_s = f"{base['scaled_s']:.0f} s" if base else "-"
        lines.append(
            f"| {tool} | {x['wall_s']:.1f} s | {base_s} | {speed} | {x.get('processes', 1)} | "
            f"{x['peak_rss_mb']:.0f} MB | {x['client_cpu_s']:.0f} s | {x['emulator_cpu_s']:.0f} s | {result} |"
        )
    lines += ["", "| goal | value | met |", "|---|---|---|"]
    lines += [f"| {g['goal']} | {g['value']} | {'yes' if g['met'] else 'NO'} |" for g in doc.get("goals", [])]
    if doc.get("throttle_stats"):
        lines += ["", f"Throttling served by the emulator: {doc['throttle_stats']}."]
    lines += limits_markdown(doc)
    return "\n".join(lines) + "\n"


def limits(x: dict[str, Any], concurrency: int, cores: int) -> dict[str, Any] | None:
    """What bounds one tool's wall time, from the run's own figures (pure): the requests it made, the client's and
    the emulator's CPU per request, the latency floor (requests x latency / concurrency) and the CPU floor on this
    machine ((client CPU + emulator CPU) / cores; the two processes share the cores)."""
    reqs = x.get("requests") or {}
    n = sum(reqs.values())
    if not n or x.get("crashed"):
        return None
    latency = sum(c * (S3_LATENCY if op in S3_OPERATIONS else S3TABLES_LATENCY) for op, c in reqs.items())
    cpu_floor = (x["client_cpu_s"] + x["emulator_cpu_s"]) / max(cores, 1)
    return {
        "requests": n,
        "by_operation": reqs,
        "client_ms_per_request": 1000 * x["client_cpu_s"] / n,
        "emulator_ms_per_request": 1000 * x["emulator_cpu_s"] / n,
        "latency_floor_s": latency / max(concurrency, 1),
        "cpu_floor_s": cpu_floor,
        "client_cpu_floor_s": x["client_cpu_s"],
        # With the service's latency alone (the emulator's CPU is AWS's): the tool's own CPU over these cores, or the
        # latency floor, whichever is longer.
        "aws_estimate_s": max(x["client_cpu_s"] / max(cores, 1), latency / max(concurrency, 1)),
        "bound": "CPU" if cpu_floor >= latency / max(concurrency, 1) else "latency",
    }


S3_OPERATIONS = ("GetObject", "HeadObject", "PutObject", "ListObjectsV2", "PutMetricData")  # 20 ms, the rest 30 ms


def limits_markdown(doc: dict[str, Any]) -> list[str]:
    """The 'what limits it' profile of every tool of the run (pure)."""
    cores = int(doc.get("cores") or os.cpu_count() or 1)
    conc = int(doc["config"]["concurrency"])
    rows = []
    for tool in KIT_RUNS:
        lim = limits(doc["kit"].get(tool) or {}, conc, cores)
        if lim is None:
            continue
        top = ", ".join(f"{op} {c:,}" for op, c in sorted(lim["by_operation"].items(), key=lambda kv: -kv[1])[:4])
        rows.append(
            f"| {tool} | {lim['requests']:,} ({top}) | {lim['client_ms_per_request']:.2f} ms | "
            f"{lim['emulator_ms_per_request']:.2f} ms | {lim['latency_floor_s']:.0f} s | {lim['cpu_floor_s']:.0f} s | "
            f"{lim['aws_estimate_s']:.0f} s | {lim['bound']} |"
        )
    if not rows:
        return []
    return [
        "",
        f"What limits each tool, from this run's figures ({cores} cores; the tool and the emulator are two processes "
        "on the same cores): the requests the emulator served during the tool, the CPU each process spent per "
        "request, the latency floor (requests x the injected latency / concurrency) and the CPU floor on this "
        "machine ((tool CPU + emulator CPU) / cores). A tool whose CPU floor is above the goal cannot meet it on this "
        "machine however its requests are scheduled; on AWS the emulator's share of the CPU is the service's, and "
        "the tool's own CPU is the floor: the estimate with the service's latency alone is the longer of the latency "
        "floor and the tool's CPU over these cores.",
        "",
        "| tool | requests | tool CPU / request | emulator CPU / request | latency floor | CPU floor here | "
        "estimate, service latency alone | bound |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ]


def run_scale_main(
    run: Callable[[str | None], dict[str, Any]], render: Callable[[dict[str, Any]], str], argv: list[str] | None
) -> int:
    """A scale benchmark's entry point: run it at the scale named first in `argv`, print its section, exit 1 when a
    goal is not met."""
    args = sys.argv[1:] if argv is None else argv
    doc = run(args[0] if args else None)
    print(render(doc))
    return 0 if all(g["met"] for g in doc["goals"]) else 1


def main(argv: list[str] | None = None) -> int:
    return run_scale_main(run_ops_bench, markdown, argv)


if __name__ == "__main__":
    sys.exit(main())
