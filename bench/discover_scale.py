"""Discovery of a live lake at scale: `s3tables-kit discover` (`s3tables_kit.jobs.ops.discover`, its CLI in a child
process as an engineer runs it) over 3 table buckets of 10,000 tables each on the emulator, with the ops benchmark's
latency per call (`bench.ops_scale`), against the loop an engineer would script with boto3 (list the buckets, namespaces
and tables, then per table its metadata location and one read of its metadata file, one call after the other), measured
on a sample in the same run and scaled to the lake.

    python -m bench.discover_scale [full|small|tiny]   # writes bench-out/discover_scale.json, prints the section

`bench.run` calls `run_discover_bench` (its scale from `bench.plan`) and appends `markdown(...)` to BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.ops_scale import S3_LATENCY, S3TABLES_LATENCY, judged_and_written, limits, requests_between, run_scale_main
from emulator.process import Emulator
from s3tables_kit.topology.paths import ROOT

ACCOUNT = "123456789012"
REGION, DST_REGION = "us-east-1", "us-west-2"
GOAL_SECONDS = 60.0
FILE_SIZE, RECORDS = 8 * 1024 * 1024, 100_000  # each seeded table's current snapshot summary


@dataclass(frozen=True)
class DiscoverScale:
    buckets: int
    namespaces: int  # per bucket
    tables_per_namespace: int
    sample: int  # tables in the hand-scripted baseline's sample
    concurrency: int

    @property
    def tables(self) -> int:
        return self.buckets * self.namespaces * self.tables_per_namespace


SCALES = {
    "full": DiscoverScale(buckets=3, namespaces=100, tables_per_namespace=100, sample=60, concurrency=96),
    "small": DiscoverScale(buckets=3, namespaces=5, tables_per_namespace=40, sample=30, concurrency=32),
    "tiny": DiscoverScale(buckets=3, namespaces=2, tables_per_namespace=10, sample=6, concurrency=8),
}


def scale_named(tables_per_bucket: int) -> str:
    """The scale whose buckets hold `tables_per_bucket` tables (`bench.plan.Plan.discover_tables`)."""
    for name, sc in SCALES.items():
        if sc.namespaces * sc.tables_per_namespace == tables_per_bucket:
            return name
    raise ValueError(f"no discovery scale has {tables_per_bucket} tables per bucket")


def bucket_arn(i: int) -> str:
    return f"arn:aws:s3tables:{REGION}:{ACCOUNT}:bucket/lake-{i}"


def build_lake(emu: Emulator, sc: DiscoverScale) -> dict[str, Any]:
    """The buckets (one with a bucket policy granting an analytics role), their tables seeded in bulk with a snapshot
    summary each, one table's own maintenance, policy and table-level replication (set-up, not measured)."""
    from s3tables_kit.jobs.kernel.clients import Clients

    t0 = time.perf_counter()
    emu.control.reset()
    s3t = Clients(endpoint_url=emu.url).s3tables(REGION)
    commit_ms = int((time.time() - 3600) * 1000)
    summary: dict[str, int | str] = {"total-files-size": FILE_SIZE, "total-records": RECORDS, "total-data-files": 4}
    for b in range(sc.buckets):
        s3t.create_table_bucket(name=f"lake-{b}")
        for n in range(sc.namespaces):  # a namespace per request keeps each control call short
            names = [f"t{j:03d}" for j in range(sc.tables_per_namespace)]
            emu.control.seed(bucket_arn(b), {f"ns{n:03d}": names}, commit_ms=commit_ms, summary=summary)
    grant = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AnalyticsRead",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/analytics"},
                "Action": ["s3tables:GetTable", "s3tables:GetTableData"],
                "Resource": f"{bucket_arn(0)}/table/*",
            }
        ],
    }
    s3t.put_table_bucket_policy(tableBucketARN=bucket_arn(0), resourcePolicy=json.dumps(grant))
    s3t.put_table_policy(tableBucketARN=bucket_arn(0), namespace="ns000", name="t000", resourcePolicy=json.dumps(grant))
    return {"tables": sc.tables, "setup_s": round(time.perf_counter() - t0, 1)}


def run_kit(emu: Emulator, sc: DiscoverScale, out: Path) -> dict[str, Any]:
    """The discover CLI in a fresh interpreter: wall time, exit code, its CPU with its worker processes', the emulator's
    requests and CPU meanwhile."""
    import resource

    cmd = [sys.executable, "-m", "s3tables_kit.jobs.ops.discover", "--endpoint-url", emu.url, "--region", REGION]
    cmd += ["--replicate-to", DST_REGION, "--out", str(out), "--concurrency", str(sc.concurrency), "--quiet", "--json"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("AWS_ENDPOINT_URL", None)
    stats0, cpu0 = emu.control.stats(), emu.cpu_seconds()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    got: dict[str, Any] = {"wall_s": wall, "exit_code": proc.returncode, "emulator_cpu_s": emu.cpu_seconds() - cpu0}
    got["client_cpu_s"] = client  # the CLI and its worker processes (waited for, so counted)
    got["requests"] = requests_between(stats0, emu.control.stats())
    if proc.returncode != 0:
        return got | {"crashed": True, "stderr": proc.stderr[-2000:]}
    doc = json.loads(proc.stdout)
    return got | {
        "crashed": False,
        "buckets": len(doc["buckets"]),
        "tables": doc["tables"],
        "bytes": doc["bytes"],
        "backfill": {d["destination"]: d["bytes"] for d in doc["backfill"]},
        "second_pass": doc["second_pass"],
        "tool_seconds": doc["seconds"],  # the discovery itself, without the interpreter's start-up and the writing
    }


def baseline(emu: Emulator, sc: DiscoverScale) -> dict[str, Any]:
    """The boto3 loop an engineer would script, serial: every bucket, namespace and table listed (measured whole),
    then each table's metadata location and its metadata file read (measured on `sc.sample` tables, scaled)."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    conf = Config(retries={"mode": "standard", "total_max_attempts": 3}, s3={"addressing_style": "path"})
    s3t = session.client("s3tables", endpoint_url=emu.url, config=conf)
    s3 = session.client("s3", endpoint_url=emu.url, config=conf)
    t0 = time.perf_counter()
    tables: list[tuple[str, str, str]] = []
    for entry in s3t.list_table_buckets()["tableBuckets"]:
        arn = entry["arn"]
        namespaces = [n["namespace"][0] for n in s3t.list_namespaces(tableBucketARN=arn)["namespaces"]]
        for ns in namespaces:
            kwargs: dict[str, Any] = {"tableBucketARN": arn, "namespace": ns}
            while True:
                page = s3t.list_tables(**kwargs)
                tables += [(arn, ns, t["name"]) for t in page["tables"]]
                if not page.get("continuationToken"):
                    break
                kwargs["continuationToken"] = page["continuationToken"]
    listed = time.perf_counter() - t0
    step = max(1, len(tables) // sc.sample)
    sample = tables[::step][: sc.sample]
    total = 0
    t1 = time.perf_counter()
    for arn, ns, name in sample:
        loc = s3t.get_table_metadata_location(tableBucketARN=arn, namespace=ns, name=name)["metadataLocation"]
        bucket, key = loc.removeprefix("s3://").split("/", 1)
        doc = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        snap = next(s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"])
        total += int(snap["summary"]["total-files-size"])
    per_table = (time.perf_counter() - t1) / len(sample)
    return {
        "tables": len(tables),
        "list_s": listed,
        "sample_tables": len(sample),
        "per_table_s": per_table,
        "scaled_s": listed + per_table * len(tables),
    }


def run_discover_bench(scale_name: str | None = None) -> dict[str, Any]:
    scale_name = scale_name if scale_name in SCALES else "small"
    sc = SCALES[scale_name]
    emu = Emulator().start()
    doc: dict[str, Any] = {"scale": scale_name, "config": asdict(sc) | {"tables": sc.tables}, "cores": os.cpu_count()}
    try:
        print(f"    discover: building {sc.buckets} buckets x {sc.tables // sc.buckets} tables", flush=True)
        doc["setup"] = build_lake(emu, sc)
        emu.control.set_latency(service="s3tables", seconds=S3TABLES_LATENCY)
        emu.control.set_latency(service="s3", seconds=S3_LATENCY)
        doc["baseline"] = baseline(emu, sc)
        with tempfile.TemporaryDirectory(prefix="discover-bench-") as tmp:
            doc["kit"] = run_kit(emu, sc, Path(tmp) / "discover-out")
        doc["load_average"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"    discover: kit {_brief(doc['kit'])}; baseline {doc['baseline']['scaled_s']:.0f} s", flush=True)
    finally:
        emu.stop()
    return judged_and_written(doc, goals, "discover_scale")


def _brief(k: dict[str, Any]) -> str:
    if k.get("crashed"):
        return f"CRASHED (exit {k.get('exit_code')}: {k.get('stderr', '')[-300:]})"
    return f"{k['wall_s']:.1f} s, {k['tables']} tables, second pass {k['second_pass']}"


def goals(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals with the measured values (pure)."""
    k, sc = doc.get("kit") or {}, doc["config"]
    if not k or k.get("crashed"):
        return [{"goal": "discover: runs", "value": "crashed", "met": False}]
    per_bucket = sc["tables"] // max(sc["buckets"], 1)
    expected = {f"arn:aws:s3tables:{DST_REGION}:{ACCOUNT}:bucket/lake-{i}-{DST_REGION}": per_bucket * FILE_SIZE
                for i in range(sc["buckets"])}  # fmt: skip
    return [
        {"goal": f"discover {sc['tables']:,} tables: <= {GOAL_SECONDS:.0f} s", "value": round(k["wall_s"], 1),
         "met": k["wall_s"] <= GOAL_SECONDS},
        {"goal": "every table read, bytes per destination = sum of the summaries",
         "value": f"{k['tables']} tables", "met": k["tables"] == sc["tables"] and k["backfill"] == expected},
    ]  # fmt: skip


def markdown(doc: dict[str, Any] | None) -> str:
    """The BENCHMARKS.md section of one run (pure)."""
    if not doc:
        return ""
    sc, k, b = doc["config"], doc.get("kit") or {}, doc["baseline"]
    lines = [
        "",
        f"## Discovery of a live lake (scale {doc['scale']})",
        "",
        f"`s3tables-kit discover` over {sc['buckets']} table buckets x {sc['namespaces']} namespaces x "
        f"{sc['tables_per_namespace']} tables ({sc['tables']:,} tables) on the emulator with "
        f"{S3TABLES_LATENCY * 1000:.0f} ms per S3 Tables call and {S3_LATENCY * 1000:.0f} ms per S3 call; the CLI in "
        f"a child process, concurrency {sc['concurrency']}, worker processes by the table count. Per table: one "
        "loadTable (its size from the current snapshot's summary), its maintenance, its policy and its table-level "
        "replication. Baseline: a boto3 loop an engineer would script (list buckets, namespaces and tables, then per "
        "table GetTableMetadataLocation and a GetObject of the metadata file), serial, the listing measured whole and "
        f"the per-table reads on {b['sample_tables']} tables, scaled, in the same run. Set-up (not measured): "
        f"{doc.get('setup')}.",
        "",
        "| tool | wall | hand-scripted (scaled) | speed-up | requests | emulator CPU | result |",
        "|---|---|---|---|---|---|---|",
    ]
    if k.get("crashed") or not k:
        lines.append(f"| discover | crashed | {b['scaled_s']:.0f} s | | | | {k.get('stderr', '')[-120:]} |")
    else:
        top = ", ".join(f"{op} {c:,}" for op, c in sorted(k["requests"].items(), key=lambda kv: -kv[1])[:5])
        lines.append(
            f"| discover | {k['wall_s']:.1f} s | {b['scaled_s']:.0f} s | {b['scaled_s'] / k['wall_s']:.1f}x | "
            f"{sum(k['requests'].values()):,} ({top}) | {k['emulator_cpu_s']:.0f} s | {k['tables']:,} tables, "
            f"{k['bytes']:,} bytes, second pass {k['second_pass']} |"
        )
    lines += ["", "| goal | value | met |", "|---|---|---|"]
    lines += [f"| {g['goal']} | {g['value']} | {'yes' if g['met'] else 'NO'} |" for g in doc.get("goals", [])]
    cores = int(doc.get("cores") or 1)
    lim = limits(k, int(sc["concurrency"]), cores) if "client_cpu_s" in k else None
    if lim:
        lines += [
            "",
            f"What limits it, from this run's figures ({cores} cores shared by the CLI, its workers and the "
            f"emulator): {lim['requests']:,} requests; the CLI's CPU {lim['client_ms_per_request']:.2f} ms and the "
            f"emulator's {lim['emulator_ms_per_request']:.2f} ms per request; latency floor (requests x injected "
            "latency / concurrency) "
            f"{lim['latency_floor_s']:.0f} s; CPU floor here ((CLI + emulator CPU) / cores) "
            f"{lim['cpu_floor_s']:.0f} s; "
            f"with the service's latency alone (the emulator's CPU is the service's on AWS) "
            f"{lim['aws_estimate_s']:.0f} s. Load average when it ended: {doc.get('load_average', '-')}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return run_scale_main(run_discover_bench, markdown, argv)


if __name__ == "__main__":
    sys.exit(main())
