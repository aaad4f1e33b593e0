"""Failover benchmark: time to a writable table by failover (plan + promote + open + verify) on the S3 Tables
emulator, for one large table (the 20 M-row orders of `bench/recovery.py`, its real metadata) and for 1,000 small
tables; compared in `bench/run.py` with the kit's file copy and the default CTAS measured in the same run. The
planned failover (`--planned`) of another 1,000 small tables runs first, while the source still answers: its figure
is the time to writable after the caught-up check (writers frozen, every replica caught up).

The control plane is the kit's emulator (`emulator/` in a subprocess, as in the drill); the large table's
manifests stay on local disk (its metadata points at them), so the verification reads real manifests. Failover is
metadata only: its time must not grow with the table's size.

    python -m bench.failover [--tables 1000] [--orders-metadata /path/to/vN.metadata.json] [--profile]

Each failover records its wall time, the client's and the emulator's CPU seconds (the emulator is its own process)
and the requests it made per operation; `--profile` writes a cProfile of the fleet's run (all worker threads).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from s3tables_kit.topology.paths import ROOT


def _world(out: Path) -> tuple[Any, Any, Any, Any, Any]:
    """(emulator, clients, cfg, outputs, break-glass clients) for the seed topology in a fresh emulator."""
    from emulator.process import Emulator
    from harness.drills.seed import EMULATOR_ENV, SEED, deploy_seed, drill_doc
    from s3tables_kit.jobs.kernel.clients import Clients
    from s3tables_kit.topology.config import parse_config
    from s3tables_kit.topology.outputs import load_outputs

    os.environ.update(EMULATOR_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    cfg = parse_config(drill_doc(SEED))
    account = cfg.replicas[0].account_id
    emu = Emulator(log=out / "emulator.log", env={**EMULATOR_ENV, "MOTO_ACCOUNT_ID": account}).start()
    clients = Clients(endpoint_url=emu.url, max_pool_connections=64)
    outputs = load_outputs(deploy_seed(emu, out)[1])
    bg = Clients(
        endpoint_url=emu.url, role_arns={account: cfg.protection.break_glass_principals[0]}, max_pool_connections=64
    )
    return emu, clients, cfg, outputs, bg


def _clone(clients: Any, bucket_arn: str, region: str, namespace: str, names: list[str], doc: dict[str, Any]) -> None:
    """Create tables whose metadata is a copy of `doc` (location rewritten): what a writer engine leaves, fast."""
    s3t, s3 = clients.s3tables(region), clients.s3(region)
    with contextlib.suppress(s3t.exceptions.ConflictException):
        s3t.create_namespace(tableBucketARN=bucket_arn, namespace=[namespace])

    def one(name: str) -> None:
        s3t.create_table(tableBucketARN=bucket_arn, namespace=namespace, name=name, format="ICEBERG")
        r = s3t.get_table_metadata_location(tableBucketARN=bucket_arn, namespace=namespace, name=name)
        wh = r["warehouseLocation"]
        key = "metadata/00001-bench.metadata.json"
        s3.put_object(Bucket=wh.removeprefix("s3://"), Key=key, Body=json.dumps({**doc, "location": wh}).encode())
        s3t.update_table_metadata_location(
            tableBucketARN=bucket_arn,
            namespace=namespace,
            name=name,
            versionToken=r["versionToken"],
            metadataLocation=f"{wh}/{key}",
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, names))


def _template(clients: Any, bucket_arn: str, region: str, endpoint: str) -> dict[str, Any]:
    """A small real Iceberg table (pyiceberg: 2 partitions, 5 rows) whose metadata the fleet copies."""
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props
    from s3tables_kit.jobs.kernel.idents import Ident

    s3t = clients.s3tables(region)
    cm = S3TablesCommitter(s3t, bucket_arn, io_props(s3t, bucket_arn, endpoint))
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "region", StringType()))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    t = cm.create(Ident("template", "t"), schema, spec)
    t.append(pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()), "region": ["eu", "eu", "eu", "us", "us"]}))
    loc = cm.load(Ident("template", "t")).metadata_location
    bucket, _, key = loc.removeprefix("s3://").partition("/")
    doc: dict[str, Any] = json.loads(clients.s3(region).get_object(Bucket=bucket, Key=key)["Body"].read())
    return doc


def lose_region(emu: Any, bucket_name: str) -> None:
    for op in ("ListTables", "GetTable", "GetTableMetadataLocation", "GetTableReplicationStatus"):
        fault = {"operation": op, "remaining": 10**9, "code": "ServiceUnavailableException", "status": 503}
        down = {**fault, "message": "Region unavailable (bench)", "match": bucket_name}
        emu.control.call("faults", {"faults": [down]})


def _confirmed_run(
    outputs: Any, cfg: Any, namespace: str, concurrency: int, run: Any, **request: Any
) -> tuple[float, Any]:
    """(seconds, result) of `run(request, documents)` promoting the namespace's tables into the first replica."""
    from s3tables_kit.jobs.failover import aws

    bucket = outputs.replicas[0].table_bucket_name
    req = aws.Request(
        replica_bucket=bucket,
        namespaces=(namespace,),
        confirm=bucket,
        concurrency=concurrency,
        show_progress=False,
        **request,
    )
    documents = aws.documents_from_config(cfg, bucket)
    t0 = time.perf_counter()
    res = run(req, documents)
    return time.perf_counter() - t0, res


def _failover(bg: Any, outputs: Any, cfg: Any, namespace: str, concurrency: int) -> tuple[float, Any]:
    from s3tables_kit.jobs.failover import aws

    return _confirmed_run(outputs, cfg, namespace, concurrency, lambda req, docs: aws.run(bg, req, outputs, docs))


def _planned(bg: Any, outputs: Any, cfg: Any, namespace: str, concurrency: int, out: Path) -> tuple[float, Any]:
    """The planned failover of the namespace's tables (the source answering; every replica already caught up)."""
    from s3tables_kit.jobs.failover import planned

    freeze = planned.freeze_from_config(cfg, outputs.sources[0].table_bucket_arn)
    opts = planned.Options(timeout_s=600.0, poll_s=1.0, settle_s=0.0)
    return _confirmed_run(
        outputs,
        cfg,
        namespace,
        concurrency,
        lambda req, docs: planned.run(bg, req, outputs, docs, freeze, opts),
        report_dir=out / "planned-reports",
    )


def _profiled(prof_out: Path | None, emu: Any, fn: Any) -> tuple[Any, dict[str, Any]]:
    """Run `fn()`; the client's and the emulator's CPU seconds separately, and a cProfile of the client when asked."""
    import cProfile
    import pstats

    profiles: list[cProfile.Profile] = []

    def per_thread(*_: Any) -> None:  # cProfile sees one thread: give every worker thread its own profiler
        p = cProfile.Profile()
        profiles.append(p)
        sys.setprofile(None)
        p.enable()

    before = emu.control.call("stats")
    emu0, me0, w0 = emu.cpu_seconds(), time.process_time(), time.perf_counter()
    if prof_out:
        profiles.append(cProfile.Profile())
        threading.setprofile(per_thread)
        profiles[0].enable()
    try:
        value = fn()
    finally:
        if prof_out:
            profiles[0].disable()
            threading.setprofile(None)
    cpu: dict[str, Any] = {
        "wall_s": round(time.perf_counter() - w0, 2),
        "client_cpu_s": round(time.process_time() - me0, 2),
        "emulator_cpu_s": round(emu.cpu_seconds() - emu0, 2),
    }
    after = emu.control.call("stats")
    requests: dict[str, int] = {}
    for kind in ("calls", "s3_calls"):
        for k, n in after[kind].items():
            op = k.rsplit(" ", 1)[-1]  # S3 calls are keyed "<bucket> <operation>": summed over buckets
            requests[op] = requests.get(op, 0) + n - before[kind].get(k, 0)
    cpu["requests"] = {op: n for op, n in sorted(requests.items()) if n}
    if prof_out:
        with prof_out.open("w") as f:
            print(json.dumps(cpu, indent=2), file=f)
            for key in ("tottime", "cumulative"):
                stats = pstats.Stats(profiles[0], stream=f)
                for p in profiles[1:]:
                    stats.add(p)
                stats.sort_stats(key).print_stats(60)
    return value, cpu


def measure(
    out: Path, tables: int, orders_metadata: str | None, concurrency: int = 32, profile: bool = False
) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    emu, clients, cfg, outputs, bg = _world(out)
    (src,) = outputs.sources  # the seed: one source
    result: dict[str, Any] = {"tables": tables, "concurrency": concurrency}
    try:
        doc = _template(clients, src.table_bucket_arn, src.region, emu.url)
        t0 = time.perf_counter()
        _clone(clients, src.table_bucket_arn, src.region, "small1", ["t0"], doc)
        _clone(clients, src.table_bucket_arn, src.region, "fleet", [f"t{i:04d}" for i in range(tables)], doc)
        _clone(clients, src.table_bucket_arn, src.region, "planned", [f"p{i:04d}" for i in range(tables)], doc)
        if orders_metadata:
            big = json.loads(Path(orders_metadata.removeprefix("file:")).read_text())
            _clone(clients, src.table_bucket_arn, src.region, "big", ["orders"], big)
            snap = next(s for s in big["snapshots"] if s["snapshot-id"] == big["current-snapshot-id"])
            result["big_rows"] = int(snap["summary"]["total-records"])
        emu.control.call("replicate", {"sourceBucketArn": src.table_bucket_arn})
        result["setup_s"] = round(time.perf_counter() - t0, 1)
        (secs, pres), cpu = _profiled(None, emu, lambda: _planned(bg, outputs, cfg, "planned", concurrency, out))
        prep = pres.report
        ok = sum(t.rpo_zero for t in prep.tables) if prep else 0
        result["planned_fleet"] = {
            "seconds": prep.writable_after_caught_up_seconds if prep else None,
            "total_s": round(secs, 2),
            "ok": ok,
            "failed": (len(prep.tables) if prep else tables) - ok,
            "rows": None,
            "write_outage_s": prep.write_outage_seconds if prep else None,
            "catch_up_s": prep.catch_up_seconds if prep else None,
            "exit_code": pres.exit_code,
            **cpu,
        }
        print(f"  planned failover: {ok} table(s) with RPO 0 in {secs:.2f} s (exit {pres.exit_code})", flush=True)
        lose_region(emu, src.table_bucket_name)  # the failover scenario: the source Region does not answer
        for ns, key in (("small1", "one_small"), ("big", "one_big"), ("fleet", "fleet")):
            if ns == "big" and not orders_metadata:
                continue
            prof = out / f"profile-{ns}.txt" if profile and ns == "fleet" else None
            (secs, res), cpu = _profiled(prof, emu, lambda ns=ns: _failover(bg, outputs, cfg, ns, concurrency))
            ok = sum(o.ok for o in res.outcomes)
            result[key] = {"seconds": round(secs, 2), "ok": ok, "failed": len(res.outcomes) - ok, "rows": None}
            if res.outcomes:
                result[key]["rows"] = sum(o.rows or 0 for o in res.outcomes)
            result[key].update(cpu, plan_s=res.plan_seconds, steps_s=_step_totals(res.outcomes))
            print(f"  failover {ns}: {len(res.outcomes)} table(s) in {secs:.2f} s ({ok} ok)", flush=True)
        result["calls"] = emu.control.call("stats")["calls"]
        result["load_average"] = os.getloadavg()
    finally:
        emu.stop()
    return result


def _step_totals(outcomes: Any) -> dict[str, float]:
    """Seconds per step summed over the tables (threads overlap: a sum, not wall time)."""
    out: dict[str, float] = {}
    for o in outcomes:
        for k, v in o.steps.items():
            out[k] = round(out.get(k, 0.0) + v, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.failover", description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--orders-metadata", help="metadata.json of a large local Iceberg table (bench/recovery orders)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--out", default=str(ROOT / "bench-out" / "failover"))
    ap.add_argument("--profile", action="store_true", help="cProfile the fleet's failover into <out>/profile-fleet.txt")
    args = ap.parse_args(argv)
    r = measure(Path(args.out), args.tables, args.orders_metadata, args.concurrency, args.profile)
    print(json.dumps({k: v for k, v in r.items() if k != "calls"}, indent=2))
    fleet = r.get("fleet", {})
    return 0 if fleet.get("failed", 1) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())


# ----------------------------------------------------------------------------------------------------
# Hook for bench/run.py (`make bench`): same run as the file copy and CTAS it is compared with
# ----------------------------------------------------------------------------------------------------


def measure_in_run(work: Any, out: Path, orders: dict[str, Any] | None, tables: int) -> dict[str, Any]:
    """Run `measure` and record its figures as section-6 measurements of the run."""
    r = measure(out, tables, (orders or {}).get("metadata_location"))
    labels = {
        "one_small": "failover (plan+promote+open+verify): 1 small table",
        "one_big": f"failover (plan+promote+open+verify): 1 table of {r.get('big_rows')} rows",
        "fleet": f"failover (plan+promote+open+verify): {tables} small tables",
        "planned_fleet": f"planned failover of {tables} small tables: promote+open+verify after the caught-up check",
    }
    for key, label in labels.items():
        if key in r:
            with work.timed("6", label, r[key]["rows"]) as box:
                box["seconds"] = r[key]["seconds"]
                box["note"] = f"{r[key]['ok']} ok, {r[key]['failed']} failed; emulator control plane"
                if key == "planned_fleet":
                    box["note"] += f"; write outage {r[key]['write_outage_s']} s, RPO 0 for {r[key]['ok']}"
    return r


def comparisons(res: Any, ctas_s: float | None, kit_files_s: float | None) -> list[Any]:
    """Section 6 of the report: failover vs the kit's file copy and the default CTAS of the same run."""
    from bench.report import Comparison, Goal, ratio, speedup

    fo: dict[str, Any] = res.extra.get("failover") or {}
    big = (fo.get("one_big") or {}).get("seconds")
    small = (fo.get("one_small") or {}).get("seconds")
    fleet = (fo.get("fleet") or {}).get("seconds")
    planned = (fo.get("planned_fleet") or {}).get("seconds")
    n = fo.get("tables", 1000)
    rows: list[tuple[str, float | None, str, str, Goal | None]] = [
        (f"failover of {n} small tables: time to writable", fleet, "s",
         "plan + promote + open + verify, emulator control plane", Goal("<", 60)),
        (f"planned failover of {n} tables: time to writable after the caught-up check", planned, "s",
         "writers frozen, every replica caught up: promote + open + verify, emulator", Goal("<", 60)),
        ("failover vs kit file copy, the large table", speedup(kit_files_s, big), "x",
         "median kit file copy s / failover s", None),
        ("failover vs default Spark CTAS, the large table", speedup(ctas_s, big), "x",
         "median CTAS s / failover s", None),
        ("failover time: large / small table (independent of size)", ratio(big, small), "x",
         "failover s of the large table / of a 5-row table", Goal("<=", 2.0)),
    ]  # fmt: skip
    return [Comparison("6", label, value, unit, note, goal) for label, value, unit, note, goal in rows]
