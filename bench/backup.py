"""Section 10 of `make bench`: the vault backup (`jobs/vault`), in the Spark application of sections 1-2, into vault
buckets with Object Lock on a local stand-in of its own (moto over HTTP, `emulator.process.Emulator`).

* the full first backup's rate against the kit's recovery file copy's, both writing the same table's bytes into the
  same stand-in over HTTP, in interleaved rounds after a warm-up of each (recovery, backup, recovery, backup...). The
  baseline is the kit's own recovery (`recover --copy-mode files`, plan + copy + commit as section 1 counts it) of
  the replica's `bench.orders` into a table bucket of the stand-in through the S3 Tables client catalog, as on AWS;
  each backup round goes into a new vault bucket, so each is a full first backup. Each round's figure is recovery
  seconds over backup seconds (the same data bytes on both sides; the backup also writes the table's metadata
  files). Both copy stages are the same executors' code (`s3tables_kit.jobs.kernel.filecopy.copy_partition`); the copy
  stages alone are reported beside it. The backup reads the source's table, whose data files are the replica's byte for
  byte: the bench's replica is relocated by RewriteTablePath, whose manifest lists keep the source manifests'
  lengths, and the backup refuses a manifest whose size is not the one its manifest list records;
* the incremental ratio: a table of its own (`increment_rows`), backed up, changed by about 1% of its rows, backed
  up again: the bytes the second backup wrote (the files it copied and its rewritten metadata) over the changed bytes
  plus the metadata (the files the change added, and the rest of the snapshot's metadata: manifests the change kept,
  which every point rewrites). Each point rewrites its own snapshot's metadata only, so the figure does not grow
  with the history.

`python -m bench.vault_section [--scale quick|small|full] [--rounds N]` runs this section alone, with the interleaved
rounds of section 1 that hold the restore-from-the-vault ratio (so every vault figure comes from one run).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

SECTION = "10"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
INCREMENT_ROWS = 200_000  # the incremental table's least rows; the change adds 1% of them


def increment_rows(orders_rows: int) -> int:
    """The incremental table's rows at a scale: a tenth of the orders table, at least `INCREMENT_ROWS`. Each point
    holds a rewritten copy of the change's own metadata files (about 14 KB here, whatever the change's size), so the
    ratio nears 1 as the changed bytes grow: 1.14x at 200,000 rows, 1.02x at 2,000,000 (BENCHMARKS.md)."""
    return max(INCREMENT_ROWS, orders_rows // 10)


METADATA_KINDS = ("metadata", "manifest-list", "manifest")


def _files_bytes(spark: SparkSession, catalog: str, table: str) -> dict[str, tuple[str, int]]:
    """Every file the current snapshot needs, by path: its kind and its size on the local disk."""
    from s3tables_kit.jobs.vault.backup import load_table, read_snapshot

    _snap, files = read_snapshot(spark, load_table(spark, catalog, table), table, catalog)
    return {f.path: (f.kind, Path(f.path.removeprefix("file:")).stat().st_size) for f in files}


STANDIN_REGION = "us-east-1"


def _standin_catalog(spark: SparkSession, url: str) -> Any:
    """A table bucket on the stand-in as a recovery target (the S3 Tables client catalog over HTTP, as on AWS), added
    to the running session; the JVM's AWS SDK reads the stand-in's credentials from its system properties (its
    environment was fixed at start)."""
    from s3tables_kit.jobs.kernel import sdk
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
    from s3tables_kit.jobs.spark import add_catalogs

    system = spark.sparkContext._jvm.java.lang.System  # type: ignore[union-attr]
    for prop, env in (("aws.accessKeyId", "AWS_ACCESS_KEY_ID"), ("aws.secretAccessKey", "AWS_SECRET_ACCESS_KEY")):
        system.setProperty(prop, CREDENTIALS[env])
    system.setProperty("aws.region", STANDIN_REGION)
    arn = sdk.client("s3tables", STANDIN_REGION, url).create_table_bucket(name=f"recovery-{uuid.uuid4().hex[:8]}")
    spec = CatalogSpec("standin", "client", str(arn["arn"]), region=STANDIN_REGION, endpoint=url)
    add_catalogs(spark, catalog_conf(spec))
    return spec


def _recover_into(spark: SparkSession, work: Any, target: Any, namespace: str, report: Path) -> dict[str, float]:
    """The kit's file-copy recovery of the replica's orders into `target` (section 1's, `bench.recovery`): its plan +
    copy + commit seconds as section 1 counts them (`recovery_s`), its file copy stage alone (`recovery_copy_s`) and
    the bytes it wrote."""
    from bench.recovery import run_kit_in_session
    from s3tables_kit.jobs.recover.modes import CopyMode

    r = run_kit_in_session(spark, work, target, report, copy_mode=CopyMode.FILES, target_namespace=namespace)
    return {
        "recovery_s": r.plan_seconds + r.copy_seconds,
        "recovery_copy_s": r.phases.get("copy", 0.0),
        "recovery_bytes": int(r.bytes or 0),
    }


def measure_in_run(
    spark: SparkSession,
    work: Any,
    orders: dict[str, Any],
    out: Path,
    increment_rows: int = INCREMENT_ROWS,
    rounds: int = 2,
) -> dict[str, Any]:
    import boto3
    from botocore.config import Config

    from emulator.process import Emulator
    from harness.world import create_point_key, create_vault_bucket
    from s3tables_kit.jobs.vault.backup import BackupContext, backup_table
    from s3tables_kit.jobs.vault.store import VaultTarget

    out.mkdir(parents=True, exist_ok=True)
    env = spark.sparkContext.environment
    env.update(CREDENTIALS)  # the executors' Python workers start with the context's environment
    os.environ.update(CREDENTIALS)
    result: dict[str, Any] = {}
    with Emulator(log=out / "emulator.log") as emu:
        s3 = boto3.client("s3", endpoint_url=emu.url, config=Config(s3={"addressing_style": "path"}))
        standin = _standin_catalog(spark, emu.url)

        point_key = create_point_key(boto3.client("kms", region_name=STANDIN_REGION, endpoint_url=emu.url))

        def vault() -> VaultTarget:
            bucket = create_vault_bucket(s3, days=1)
            return VaultTarget(bucket, STANDIN_REGION, 1, endpoint=emu.url, point_key=point_key)

        def backup(catalog: str, table: str, into: VaultTarget) -> Any:
            t0 = time.monotonic()

            def say(message: str) -> None:
                print(f"    {time.monotonic() - t0:7.2f} s  {message}", flush=True)

            ctx = BackupContext(spark, catalog, catalog, into, uuid.uuid4().hex[:8], say)
            row = backup_table(ctx, table)
            if row.error:
                raise RuntimeError(f"backup of {table}: {row.error}")
            return row

        # warm-up (not measured): both paths once, so neither pays the workers' first S3 client or the JIT
        _recover_into(spark, work, standin, "warm", out / "recovery-warm")
        backup("src", "bench.orders", vault())
        full_rounds = []
        for i in range(1, rounds + 1):
            rnd: dict[str, Any] = {"round": i}
            with work.timed(SECTION, f"round {i}: recovery file copy of bench.orders into the stand-in") as box:
                rnd.update(_recover_into(spark, work, standin, f"r{i}", out / f"recovery-{i}"))
                box["seconds"], box["bytes"] = rnd["recovery_s"], rnd["recovery_bytes"]
            name = f"round {i}: full backup of bench.orders into a new vault"
            with work.timed(SECTION, name, orders.get("rows")) as box:
                full = backup("src", "bench.orders", vault())
                box["bytes"] = full.bytes_copied
            rnd.update(backup_s=full.seconds, backup_bytes=full.bytes_copied, files=full.copied)
            rnd["backup_copy_s"] = full.copy_seconds
            full_rounds.append(rnd)
        result["full_rounds"] = full_rounds
        result["table_bytes"] = orders.get("bytes")
        into = vault()

        spark.sql("CREATE NAMESPACE IF NOT EXISTS src.vault_bench")
        spark.sql(
            "CREATE TABLE src.vault_bench.events (id bigint, v string) USING iceberg PARTITIONED BY (bucket(8, id))"
        )
        spark.sql(
            "INSERT INTO src.vault_bench.events SELECT id, sha2(CAST(id AS string), 256) "
            f"FROM range(0, {increment_rows}, 1, 4)"
        )
        backup("src", "vault_bench.events", into)
        before = _files_bytes(spark, "src", "vault_bench.events")
        change = increment_rows // 100
        spark.sql(
            f"INSERT INTO src.vault_bench.events SELECT id, sha2(CAST(id AS string), 256) "
            f"FROM range({increment_rows}, {increment_rows + change}, 1, 1)"
        )
        after = _files_bytes(spark, "src", "vault_bench.events")
        added = {p: n for p, (_k, n) in after.items() if p not in before}
        metadata = sum(n for p, (k, n) in after.items() if k in METADATA_KINDS and p not in added)
        with work.timed(SECTION, "incremental backup after a 1% change", change) as box:
            inc = backup("src", "vault_bench.events", into)
            box["bytes"] = inc.bytes_copied + inc.restorable_bytes
        result["incremental"] = {
            "copied_bytes": inc.bytes_copied,
            "restorable_bytes": inc.restorable_bytes,
            "added_bytes": sum(added.values()),
            "added_files": len(added),
            "other_metadata_bytes": metadata,  # the snapshot's metadata the change did not add (rewritten again)
            "table_bytes": sum(n for _k, n in before.values()),
            "table_rows": increment_rows,
        }
    for k in CREDENTIALS:
        env.pop(k, None)
    return result


def comparisons(res: Any) -> list[Any]:
    """Section 10 of the report: the full backup's rate against the recovery file copy's, both into the stand-in in
    interleaved rounds (the same table's bytes over each one's seconds, so each round's figure is recovery seconds
    over backup seconds), and the incremental ratio."""
    from bench.report import Comparison, Goal, ratio, rounds_comparison

    b: dict[str, Any] = res.extra.get("backup") or {}
    inc = b.get("incremental") or {}
    full = b.get("full_rounds") or []
    rates = [ratio(r.get("recovery_s"), r.get("backup_s")) for r in full]
    stages = [ratio(r.get("recovery_copy_s"), r.get("backup_copy_s")) for r in full]
    written = (inc.get("copied_bytes") or 0) + (inc.get("restorable_bytes") or 0) if inc else None
    changed = (inc.get("added_bytes") or 0) + (inc.get("other_metadata_bytes") or 0) if inc else None
    return [
        rounds_comparison(SECTION, "full backup rate / recovery file copy rate, bench.orders", rates, "x",
                          "the table's bytes per second of each, both into the stand-in over HTTP: recovery (plan + "
                          "copy + commit) s / full backup s, per interleaved round", Goal(">=", 1.0)),
        rounds_comparison(SECTION, "the same, the file copy stage alone (executors)", stages, "x",
                          "recovery's copy phase s / backup's copy s, per round: where the whole-job figure's "
                          "margin comes from"),
        Comparison(SECTION, "incremental backup after a 1% change: bytes written / changed bytes plus the metadata",
                   ratio(written, changed), "x",
                   "(files copied + rewritten metadata) / (files the change added + the snapshot's other metadata)",
                   Goal("<=", 1.1)),
    ]  # fmt: skip
