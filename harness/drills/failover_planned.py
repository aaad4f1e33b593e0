"""The planned round trip of the failover drill (`make failover-drill`), on the S3 Tables emulator, no AWS:

  out:  the seed topology again, writers on the source; the planned failover to the replica (freeze, the simulated
        replication service catches up, promote, RPO 0 proven, freeze lifted); a writer's commit during the freeze
        is refused (the emulator evaluates the freeze's Deny on the commit path)
  in between: writers commit to the promoted tables
  back: the failback, once the original Region answers: the failover topology replicates the promoted bucket into a
        new bucket in the original Region; the same planned failover promotes it (freeze, wait, promote, RPO 0)
  re-protect: the new primary replicates to a new replica, as the next topology would deploy it

Writers are pyiceberg through the S3 Tables API (`s3tables_kit.jobs.failover.iceberg`, what a writer engine does).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.deploy import failover_outputs
from harness.drills.seed import deploy_seed, drill_doc, write_config
from s3tables_kit.jobs.kernel.killpoints import PLANNED_FAILOVER as points

FAILBACK_BUCKET = "demo-failback-use1-tablebucket"
REPROTECT_BUCKET = "demo-reprotect-usw2-tablebucket"
TABLES = ("analytics.orders", "analytics.customers")


@dataclass
class Direction:
    label: str
    code: int
    rpo_zero: bool
    tables: int
    equal: int
    outage_s: float | None
    refused_write: str


class ReplicationService:
    """The simulated replication service: replicates every configured source bucket, every `period` seconds."""

    def __init__(self, emu: Emulator, period: float = 0.2) -> None:
        self.emu, self.period = emu, period
        self.sources: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            for arn in list(self.sources):
                self.emu.control.call("replicate", {"sourceBucketArn": arn})

    def __enter__(self) -> ReplicationService:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()


def _committer(clients: Any, bucket_arn: str, region: str, endpoint: str) -> Any:
    from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props

    s3t = clients.s3tables(region)
    return S3TablesCommitter(s3t, bucket_arn, io_props(s3t, bucket_arn, endpoint))


def _write(committer: Any, first_id: int) -> None:
    from s3tables_kit.jobs.failover.writer import rows
    from s3tables_kit.jobs.kernel.idents import Ident

    for i, q in enumerate(TABLES):
        committer.load(Ident.parse(q)).append(rows(first_id + 10 * i))


def _try_write(committer: Any) -> str:
    from botocore.exceptions import ClientError

    try:
        _write(committer, 900)
        return "ACCEPTED"
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])


def _direction(label: str, code: int, report_dir: Path, refused: str) -> Direction:
    reports = sorted(report_dir.glob("*-planned/report.json"), key=lambda p: p.stat().st_mtime)
    doc = json.loads(reports[-1].read_text()) if reports else {}
    tables = doc.get("tables", [])
    equal = sum(1 for t in tables if t.get("rpo_zero"))
    return Direction(
        label, code, bool(doc.get("rpo_zero")), len(tables), equal, doc.get("write_outage_seconds"), refused
    )


def failback_config(seed_failover: Path, out: Path) -> Path:
    """examples/failover/seed.toml as the drill deploys it (`harness.drills.seed`), with its new bucket in the
    original Region (the failback's destination)."""
    doc = drill_doc(seed_failover)
    fo = doc["failover"]
    old = fo["new_buckets"][0]["bucket"]
    fo["new_buckets"][0] |= {"bucket": FAILBACK_BUCKET, "region": "us-east-1"}
    fo["replicate_to"] = [FAILBACK_BUCKET if b == old else b for b in fo["replicate_to"]]
    return write_config(doc, out / "kit-failback.toml")


def round_trip(
    emu: Emulator,
    out: Path,
    seed_failover: Path,
    account: str,
    break_glass: str,
) -> list[Direction]:
    """Out and back; returns the two directions' results (and prints them as it goes). The seed topology is the
    drill's (`harness.drills.seed`), deployed afresh."""
    from s3tables_kit.jobs.failover.cli import main as failover_main
    from s3tables_kit.jobs.failover.writer import writer_schema
    from s3tables_kit.jobs.kernel.clients import Clients
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.topology.config import load_config
    from s3tables_kit.topology.outputs import load_outputs

    emu.control.call("reset")
    out.mkdir(parents=True, exist_ok=True)
    seed, outputs_file = deploy_seed(emu, out)
    cfg = load_config(seed)
    clients = Clients(endpoint_url=emu.url)
    assert cfg.failover is not None
    writer = Clients(endpoint_url=emu.url, role_arns={account: cfg.failover.writer_roles[0]})  # the writers' role
    outputs = load_outputs(outputs_file)
    (src,), rep = outputs.sources, outputs.replicas[0]  # the seed: one source
    source_w = _committer(writer, src.table_bucket_arn, src.region, emu.url)
    schema, spec = writer_schema()
    clients.s3tables(src.region).create_namespace(tableBucketARN=src.table_bucket_arn, namespace=["analytics"])
    for q in TABLES:
        source_w.create(Ident.parse(q), schema, spec)
    _write(source_w, 0)
    emu.control.call("replicate", {"sourceBucketArn": src.table_bucket_arn})
    _write(source_w, 100)  # not replicated yet: the planned failover waits for it
    print(f"  writers ({cfg.failover.writer_roles[0]}) committed twice to both tables; the replica lacks the second")

    common = ["--endpoint-url", emu.url, "--role-arn", f"{account}={break_glass}", "--max-attempts", "2"]
    common += ["--planned", "--poll", "0.2", "--settle", "0", "--timeout", "120", "--quiet"]
    results = []
    with ReplicationService(emu) as service:
        refused: dict[str, str] = {}

        def during_freeze(writer: Any, source_arn: str) -> Any:
            def hook(point: str, _: str) -> None:
                if point == "after-freeze" and "w" not in refused:
                    refused["w"] = _try_write(writer)
                    service.sources.append(source_arn)  # the service catches up once writers are frozen

            return hook

        def direction(label: str, config: Path, outputs_file: Path, bucket: str, writer: Any, source: str) -> Direction:
            """One planned failover through the command line, `writer` trying to commit during the freeze."""
            emu.control.call("enforce-policies", {"bucketArns": [source]})
            points.hook = during_freeze(writer, source)
            try:
                code = failover_main(
                    [
                        *common,
                        *("--config", str(config), "--outputs", str(outputs_file)),
                        *("--replica-bucket", bucket, "--confirm", bucket),
                        *("--report", str(out / f"reports-{label}")),
                    ]
                )
            finally:
                points.hook = None
            return _direction(label, code, out / f"reports-{label}", refused.get("w", "-"))

        print(f"\n  -- out: planned failover {src.table_bucket_name} -> {rep.table_bucket_name}")
        results.append(direction("out", seed, outputs_file, rep.table_bucket_name, source_w, src.table_bucket_arn))
        service.sources.clear()

        promoted_w = _committer(writer, rep.table_bucket_arn, rep.region, emu.url)
        _write(promoted_w, 200)
        print(f"  in between: writers committed to the promoted tables in {rep.table_bucket_name}")

        print(f"\n  -- back: the original Region answers; failback {rep.table_bucket_name} -> {FAILBACK_BUCKET}")
        fb_config = failback_config(seed_failover, out)
        fb_cfg = load_config(fb_config)
        us_east = clients.s3tables("us-east-1")
        failback_arn = us_east.create_table_bucket(name=FAILBACK_BUCKET)["arn"]
        from s3tables_kit.policies.documents import compact_json
        from s3tables_kit.policies.failover import destination_bucket_policy
        from s3tables_kit.topology.failover import failover_topology

        topo = failover_topology(fb_cfg)
        dest = next(d for d in topo.destinations if d.bucket == FAILBACK_BUCKET)
        us_east.put_table_bucket_policy(
            tableBucketARN=failback_arn, resourcePolicy=compact_json(destination_bucket_policy(fb_cfg, topo, dest))
        )
        clients.s3tables(rep.region).put_table_bucket_replication(
            tableBucketARN=rep.table_bucket_arn,
            configuration={
                "role": topo.replication_role_arn,
                "rules": [{"destinations": [{"destinationTableBucketARN": failback_arn}]}],
            },
        )
        emu.control.call("replicate", {"sourceBucketArn": rep.table_bucket_arn})  # the backfill
        _write(promoted_w, 300)  # one more commit the failback bucket lacks
        fb_outputs = out / "outputs-failback.json"
        fb_outputs.write_text(json.dumps(failover_outputs(fb_cfg, [FAILBACK_BUCKET], cfg), indent=2), encoding="utf-8")
        print(f"  the failover topology replicates {rep.table_bucket_name} into {FAILBACK_BUCKET} (us-east-1)")
        refused.clear()
        results.append(direction("back", fb_config, fb_outputs, FAILBACK_BUCKET, promoted_w, rep.table_bucket_arn))

    home_w = _committer(writer, failback_arn, "us-east-1", emu.url)
    _write(home_w, 400)
    reprotect_arn = clients.s3tables("us-west-2").create_table_bucket(name=REPROTECT_BUCKET)["arn"]
    us_east.put_table_bucket_replication(
        tableBucketARN=failback_arn,
        configuration={
            "role": cfg.replication_role_arn_of(cfg.sources[0]),
            "rules": [{"destinations": [{"destinationTableBucketARN": reprotect_arn}]}],
        },
    )
    done = emu.control.call("replicate", {"sourceBucketArn": failback_arn})["replicated"]
    print(
        f"\n  re-protected: writers commit to {FAILBACK_BUCKET} (us-east-1) again, replicated to {REPROTECT_BUCKET} "
        f"({len(done)} table(s)); `make harden` and the next topology's deploy protect it"
    )
    return results
