"""Section 10 of `make bench`: the vault backup (`jobs/vault`), in the Spark application of sections 1-2, into a vault
bucket with Object Lock on a local stand-in of its own.

* the full first backup of `bench.orders` against the kit's recovery file copy of the same table in the same run
  (MB/s of each; the backup writes over HTTP to the stand-in, the recovery to the local disk). The backup reads the
  source's table, whose data files are the replica's byte for byte: the bench's replica is relocated by
  RewriteTablePath, whose manifest lists keep the source manifests' lengths, and the backup refuses a manifest whose
  size is not the one its manifest list records;
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


def measure_in_run(
    spark: SparkSession, work: Any, orders: dict[str, Any], out: Path, increment_rows: int = INCREMENT_ROWS
) -> dict[str, Any]:
    import boto3
    from botocore.config import Config

    from emulator.process import Emulator
    from harness.world import create_vault_bucket
    from s3tables_kit.jobs.vault.backup import BackupContext, backup_table
    from s3tables_kit.jobs.vault.store import VaultTarget

    out.mkdir(parents=True, exist_ok=True)
    env = spark.sparkContext.environment
    env.update(CREDENTIALS)  # the executors' Python workers start with the context's environment
    os.environ.update(CREDENTIALS)
    result: dict[str, Any] = {}
    with Emulator(log=out / "emulator.log") as emu:
        s3 = boto3.client("s3", endpoint_url=emu.url, config=Config(s3={"addressing_style": "path"}))
        bucket = create_vault_bucket(s3, days=1)
        vault = VaultTarget(bucket, "us-east-1", 1, endpoint=emu.url)

        def backup(catalog: str, table: str) -> Any:
            ctx = BackupContext(spark, catalog, catalog, vault, uuid.uuid4().hex[:8], lambda m: None)
            row = backup_table(ctx, table)
            if row.error:
                raise RuntimeError(f"backup of {table}: {row.error}")
            return row

        with work.timed(SECTION, "full backup of bench.orders into the vault", orders.get("rows")) as box:
            full = backup("src", "bench.orders")
            box["bytes"] = full.bytes_copied
        result["full"] = {"seconds": full.seconds, "bytes": full.bytes_copied, "files": full.copied}

        spark.sql("CREATE NAMESPACE IF NOT EXISTS src.vault_bench")
        spark.sql(
            "CREATE TABLE src.vault_bench.events (id bigint, v string) USING iceberg PARTITIONED BY (bucket(8, id))"
        )
        spark.sql(
            "INSERT INTO src.vault_bench.events SELECT id, sha2(CAST(id AS string), 256) "
            f"FROM range(0, {increment_rows}, 1, 4)"
        )
        backup("src", "vault_bench.events")
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
            inc = backup("src", "vault_bench.events")
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


def comparisons(res: Any, kit_files_s: float | None, orders_bytes: int | None) -> list[Any]:
    """Section 10 of the report: the backup's rate against the recovery file copy's, and the incremental ratio."""
    from bench.report import Comparison, Goal, ratio

    b: dict[str, Any] = res.extra.get("backup") or {}
    full, inc = b.get("full") or {}, b.get("incremental") or {}
    backup_rate = ratio(full.get("bytes"), full.get("seconds"))
    copy_rate = ratio(orders_bytes, kit_files_s)
    written = (inc.get("copied_bytes") or 0) + (inc.get("restorable_bytes") or 0) if inc else None
    changed = (inc.get("added_bytes") or 0) + (inc.get("other_metadata_bytes") or 0) if inc else None
    rows: list[tuple[str, float | None, str, str, Goal | None]] = [
        ("full backup rate / recovery file copy rate, bench.orders", ratio(backup_rate, copy_rate), "x",
         "backup bytes/s (to the stand-in over HTTP) / median kit file copy bytes/s (local disk)", Goal(">=", 1.0)),
        ("incremental backup after a 1% change: bytes written / changed bytes plus the metadata",
         ratio(written, changed), "x",
         "(files copied + rewritten metadata) / (files the change added + the snapshot's other metadata)",
         Goal("<=", 1.1)),
    ]  # fmt: skip
    return [Comparison(SECTION, label, value, unit, note, goal) for label, value, unit, note, goal in rows]
