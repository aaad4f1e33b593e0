"""Vault drill (`make drill-vault`): a restore from the backup vault of a snapshot the replica no longer holds.

  1. the local stand-in and the vault bucket in it: Object Lock on, COMPLIANCE default retention (as the vault stack)
  2. analytics.orders in a local replica warehouse, written in place by the stand-in for replication (`make demo`'s
     rewrite_table_path replica keeps the source's manifest lengths in its manifest lists, which the backup refuses)
  3. backup point 1 of the replica into the vault
  4. the table changes (a copy-on-write DELETE rewrites the files, an INSERT adds one); backup point 2
  5. the replica expires snapshot 1: the data files only it held are deleted; the replica cannot go back there
  6. `recover --from-vault --list-points`, then `--snapshot-id <point 1>` into a new writable table, verified
  7. an independent reader (pyiceberg over the restored table's own metadata and Parquet files, not Spark) finds the
     rows the source held at point 1, read at that time by the same reader
  8. a locked version in the vault cannot be deleted, break-glass or not (Object Lock, COMPLIANCE)

The backup points are made by the backup job (`jobs/vault/backup.py`, what `make backup` runs). Everything is written
under `vault-out/` (gitignored).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.drills.seed import EMULATOR_ENV, ROOT
from harness.localreplica import file_uri
from harness.world import create_point_key, create_vault_bucket
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.vault.backup import BackupContext, backup_table
from s3tables_kit.jobs.vault.reader import VaultReader, list_points
from s3tables_kit.jobs.vault.store import VaultTarget

REGION = "us-east-1"
BUCKET = "kit-backup-vault-123456789012-us-east-1"
TABLE = Ident("analytics", "orders")


def _step(n: int | str, text: str) -> None:
    print("", f"== {n}. {text}", sep="\n", flush=True)


def main(argv: list[str] | None = None) -> int:
    out = Path(_options(argv).out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    os.environ.update(EMULATOR_ENV)  # before the JVM starts: its S3 client and the executors read them
    os.environ.pop("AWS_ENDPOINT_URL", None)
    _step(1, "the local stand-in, and the vault bucket in it (Object Lock, COMPLIANCE, 1 day)")
    emu = Emulator(log=out / "emulator.log").start()
    try:
        return drill(emu.url, out)
    finally:
        emu.stop()


def _options(argv: list[str] | None) -> argparse.Namespace:
    doc = (__doc__ or "").splitlines()[0]
    ap = argparse.ArgumentParser(prog="python -m harness.drills.vault", description=doc)
    ap.add_argument("--out", default=str(ROOT / "vault-out"), help="output directory (wiped first)")
    return ap.parse_args(argv)


def _vault_bucket(endpoint: str, bucket: str) -> Any:
    from s3tables_kit.jobs.kernel import sdk

    s3 = sdk.client("s3", REGION, endpoint, s3={"addressing_style": "path"})
    create_vault_bucket(s3, days=1, bucket=bucket)
    print(f"  s3://{bucket}: {s3.get_object_lock_configuration(Bucket=bucket)['ObjectLockConfiguration']}")
    return s3


def _rows(location: str) -> list[tuple[Any, ...]]:
    """The rows of the table whose current metadata file is `location`, read by pyiceberg (no Spark)."""
    from pyiceberg.table import StaticTable

    arrow = StaticTable.from_metadata(location).scan().to_arrow()
    return sorted(zip(*(arrow.column(c).to_pylist() for c in arrow.column_names), strict=True))


SessionFactory = Callable[[Mapping[str, str]], Any]


def drill(endpoint: str, out: Path, *, bucket: str = BUCKET, session: SessionFactory | None = None) -> int:
    """The drill's steps 1-8 against the stand-in at `endpoint`; `session` (a test's) gives a running Spark session
    with the catalogs added (the drill's own otherwise, stopped at the end)."""
    from s3tables_kit.jobs.kernel import sdk
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
    from s3tables_kit.jobs.recover.cli import main as recover_main
    from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource
    from s3tables_kit.jobs.spark import build_session
    from s3tables_kit.jobs.vault.mac import PointKey

    t0 = time.monotonic()
    s3 = _vault_bucket(endpoint, bucket)
    point_key = create_point_key(sdk.client("kms", REGION, endpoint))  # the vault stack's HMAC key, on the stand-in
    wh = {k: out / "warehouses" / k for k in ("replica", "restored")}
    for p in wh.values():
        p.mkdir(parents=True)
    conf = catalog_conf(CatalogSpec("replica", "hadoop", file_uri(wh["replica"])))
    spark = session(conf) if session else build_session(conf, app_name="kit-vault-drill")
    rep = f"replica.{TABLE}"
    vault = VaultTarget(bucket, REGION, retention_days=1, endpoint=endpoint, point_key=point_key)
    reader = VaultReader(f"s3://{bucket}", REGION, endpoint, point_key=PointKey(point_key, REGION, endpoint))

    def backup(n: int) -> Any:
        """The backup job on the replica table, as `make backup` runs it; the point it committed."""
        ctx = BackupContext(spark, "replica", file_uri(wh["replica"]), vault, uuid.uuid4().hex[:8], lambda m: None)
        done = backup_table(ctx, str(TABLE))
        if done.status != "backed-up":
            raise RuntimeError(f"backup {n}: {done.status}: {done.error}")
        points = list_points(reader, TABLE.namespace, TABLE.name).points
        point = next(p for p in points if p.snapshot_id == done.snapshot_id)
        print(f"  point {n}: {done.status}, snapshot {point.snapshot_id}, {done.copied} file(s) copied, "
              f"{done.reused} reused, {len(point.files)} in the point")  # fmt: skip
        return point

    replica_meta = HadoopMetadataSource(file_uri(wh["replica"]))

    _step(2, f"create {rep}, written in place by the stand-in for replication")
    spark.sql(f"CREATE NAMESPACE replica.{TABLE.namespace}")
    spark.sql(
        f"CREATE TABLE {rep} (order_id string NOT NULL, order_date date, amount double, status string) USING iceberg "
        "PARTITIONED BY (months(order_date)) TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(
        f"INSERT INTO {rep} SELECT concat('o-', id), date_add(DATE '2025-10-01', CAST(id % 75 AS int)), id * 1.25, "
        "CASE WHEN id % 4 = 0 THEN 'returned' ELSE 'shipped' END FROM range(0, 2000)"
    )
    as_it_was = _rows(str(replica_meta.metadata_location(TABLE)))
    print(f"  {rep}: {len(as_it_was)} rows (read by pyiceberg)")

    _step(3, "backup point 1 of the replica")
    first = backup(1)

    _step(4, "the table changes (DELETE the returned orders, INSERT new ones); backup point 2")
    spark.sql(f"DELETE FROM {rep} WHERE status = 'returned'")
    spark.sql(f"INSERT INTO {rep} SELECT concat('n-', id), DATE '2026-01-15', 9.5, 'pending' FROM range(0, 300)")
    backup(2)

    _step(5, f"the replica expires snapshot {first.snapshot_id} (as its retention would)")
    spark.sql(f"CALL replica.system.expire_snapshots(table => '{TABLE}', snapshot_ids => array({first.snapshot_id}))")
    gone = [f.relative for f in first.files if f.kind == "data"]
    left = [r for r in gone if (wh["replica"] / str(TABLE).replace(".", "/") / r).exists()]
    try:
        spark.sql(f"SELECT count(*) FROM {rep} VERSION AS OF {first.snapshot_id}").collect()
        print("  UNEXPECTED: the replica still reads the expired snapshot")
        return 1
    except Exception as e:
        print(f"  the replica: {type(e).__name__}: {str(e).splitlines()[0][:140]}")
    print(f"  data files of point 1 still in the replica: {len(left)} of {len(gone)}")

    _step(6, "recover --from-vault: the points, then point 1 into a new writable table")
    common = ["--from-vault", "--vault", f"s3://{bucket}", "--vault-region", REGION, "--endpoint-url", endpoint,
              "--vault-point-key", point_key, "--table", str(TABLE)]  # fmt: skip
    recover_main([*common, "--list-points"])
    code = recover_main(
        [*common, "--snapshot-id", str(first.snapshot_id), "--target-warehouse", str(wh["restored"]),
         "--target-namespace", "restored", "--report", str(out / "report")],
        spark_factory=session or (lambda conf: spark),
    )  # fmt: skip
    print(f"  recover exit code: {code}")

    _step(7, "independent check: pyiceberg reads the restored table's own files")
    restored_meta = HadoopMetadataSource(file_uri(wh["restored"])).metadata_location(Ident("restored", TABLE.name))
    restored = _rows(str(restored_meta)) if restored_meta else []
    same = restored == as_it_was
    print(f"  restored: {len(restored)} rows; the replica at point 1: {len(as_it_was)} rows; identical: {same}")

    _step(8, "the vault keeps it: a locked version cannot be deleted")
    data = next(f for f in first.files if f.kind == "data")
    key = data.key(first.prefix)
    version = s3.head_object(Bucket=bucket, Key=key)["VersionId"]
    try:
        s3.delete_object(Bucket=bucket, Key=key, VersionId=version)
        print(f"  UNEXPECTED: deleted {key} version {version}")
        locked = False
    except Exception as e:
        print(f"  delete of {key.rsplit('/', 1)[-1]} version {version[:12]}...: refused ({type(e).__name__})")
        locked = True

    ok = code == 0 and same and not left and locked
    _step("done", f"{'SUCCESS' if ok else 'FAILED'} in {time.monotonic() - t0:.0f}s; report under {out / 'report'}")
    if session is None:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
