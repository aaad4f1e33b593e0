"""The backup of one replica table into the vault, on Spark: the thin layer around `s3tables_kit.jobs.vault.plan`.

Steps (each a kill point of `BACKUP`, in this order):
  1. read the current snapshot's files from the replica's metadata (Iceberg's Java API through py4j, read-only) and
     list what the vault holds under the table's prefix; a snapshot that already has a point is done;
  2. `after-plan` -> copy the missing files on the executors (the kernel's byte copy: streamed, CRC32, written with
     `If-None-Match: *` in the vault's storage class; 412 = another writer's copy, kept after comparing checksums);
     a held file this run cannot vouch for (a killed run's) is read back for its size and CRC32;
  3. `after-copy` -> Iceberg's RewriteTablePath utilities rewrite the snapshot's metadata to the run's restore
     location, staged on the driver's disk; its metadata file, manifest list and manifests are uploaded under
     `restorable/<snapshot id>/<run id>/` (not its rewritten position deletes: see `plan.restorable_uploads`). This
     step starts with step 2 (the driver rewrites while the executors copy) and is awaited here;
  4. `after-restorable` -> every file this run did not write is locked at least until the point's time plus the
     retention (PutObjectRetention, forwards only; the files it wrote carry that default already);
  5. `after-retention` -> the point manifest, naming the S3 version id of every file and MACed with the vault's point
     key (KMS `GenerateMac`), `If-None-Match: *`: the commit point. `after-point`.
A killed run leaves files without a point; the next run reuses them. Two runs of one snapshot write one point.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.executors import TaskProgress, bins, run_on_executors
from s3tables_kit.jobs.kernel.filecopy import CopyItem, StoreConfig, copy_one, copy_partition
from s3tables_kit.jobs.kernel.killpoints import BACKUP, KillPoints
from s3tables_kit.jobs.kernel.selectors import to_ms
from s3tables_kit.jobs.kernel.snapshots import CLOCK_SKEW_MS, iso_ms
from s3tables_kit.jobs.vault.layout import file_key, point_key, table_prefix
from s3tables_kit.jobs.vault.plan import (
    BackupPlan,
    BackupRefused,
    SnapshotFile,
    TableSnapshot,
    Written,
    build_point,
    plan_backup,
    record_copies,
    restorable_uploads,
    restore_root,
    retain_until,
    trim_metadata,
)
from s3tables_kit.jobs.vault.store import VaultStore, VaultTarget, digest_partition

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DRIVER_THREADS = 16  # the driver's own object calls (rewritten metadata uploads, retention reads and extensions)


@dataclass
class TableBackup:
    """What one table's backup did (a row of the report)."""

    table: str
    status: str = "failed"  # backed-up | already-backed-up | committed-by-another-run | failed
    snapshot_id: int | None = None
    point: str = ""
    files: int = 0  # files of the snapshot
    bytes_total: int = 0  # their bytes as the vault holds them
    copied: int = 0  # files this run wrote
    bytes_copied: int = 0
    adopted: int = 0  # written by another run at the same moment (412), kept after comparing checksums
    reused: int = 0  # already held
    digested: int = 0  # held without a point that vouches for them: read back
    restorable: int = 0
    restorable_bytes: int = 0
    extended: int = 0  # retentions moved forwards
    copy_seconds: float = 0.0
    seconds: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BackupContext:
    spark: SparkSession
    catalog: str  # the Spark catalog of the replica
    source: str  # its warehouse (a table bucket ARN or a local warehouse), recorded in each point
    vault: VaultTarget
    run_id: str
    say: Callable[[str], None]
    part_size: int = 64 * 1024 * 1024
    scratch: Path | None = None  # where RewriteTablePath stages (default: a temporary directory)
    kill: KillPoints = field(default_factory=lambda: BACKUP)
    bucket: str = ""  # the replica is this vault account bucket: its points' layout segment ("": `[recovery] replica`)

    @property
    def cfg(self) -> StoreConfig:
        return self.vault.store_config(self.part_size)


def _jvm(spark: SparkSession) -> Any:
    jvm = spark._jvm
    assert jvm is not None
    return jvm


def _iter(iterable: Any) -> Iterator[Any]:
    it = iterable.iterator()
    while it.hasNext():
        yield it.next()


def load_table(spark: SparkSession, catalog: str, table: str) -> Any:
    """The replica table (Java `Table`) from the Iceberg catalog behind a Spark catalog of this session."""
    jsession = spark._jsparkSession
    jvm = _jvm(spark)
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(jsession)
    cat = jsession.sessionState().catalogManager().catalog(catalog).icebergCatalog()
    return cat.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(table))


def list_tables(spark: SparkSession, catalog: str, namespace: str) -> list[str]:
    """`NS.NAME` of every table of a namespace of the replica catalog."""
    rows = spark.sql(f"SHOW TABLES IN {catalog}.{namespace}").collect()
    return sorted(f"{namespace}.{r['tableName']}" for r in rows)


CONTENT_KINDS = {"DATA": "data", "POSITION_DELETES": "position-deletes", "EQUALITY_DELETES": "equality-deletes"}


def _entries(readers: Iterable[Any]) -> Iterator[Any]:
    """The live entries of each manifest reader in turn, each reader closed after its entries."""
    for reader in readers:
        with contextlib.closing(reader):
            yield from _iter(reader)


def read_snapshot(
    spark: SparkSession, jtable: Any, table: str, source: str, bucket: str = ""
) -> tuple[TableSnapshot, list[SnapshotFile]]:
    """The current snapshot and every file it needs: its metadata file, manifest list, manifests, live data and
    delete files, and its statistics files (read-only). `bucket`: a vault account bucket's layout segment."""
    ice = _jvm(spark).org.apache.iceberg
    meta = jtable.operations().current()
    snap = meta.currentSnapshot()
    if snap is None:
        raise BackupRefused(f"{table} has no snapshot: nothing to back up")
    ns, _, name = table.rpartition(".")
    sid = int(snap.snapshotId())
    info = TableSnapshot(
        ns,
        name,
        str(meta.uuid()),
        str(meta.location()).rstrip("/"),
        sid,
        int(snap.timestampMillis()),
        str(meta.metadataFileLocation()),
        source,
        bucket,
    )
    io, specs = jtable.io(), jtable.specs()
    files = [
        SnapshotFile(info.metadata_path, "metadata"),
        SnapshotFile(str(snap.manifestListLocation()), "manifest-list"),
    ]
    files += [SnapshotFile(str(m.path()), "manifest", int(m.length())) for m in _iter(snap.allManifests(io))]
    data = (ice.ManifestFiles.read(m, io, specs) for m in _iter(snap.dataManifests(io)))
    deletes = (ice.ManifestFiles.readDeleteManifest(m, io, specs) for m in _iter(snap.deleteManifests(io)))
    for f in _entries(itertools.chain(data, deletes)):
        files.append(SnapshotFile(str(f.location()), CONTENT_KINDS[str(f.content().name())], int(f.fileSizeInBytes())))
    for stats in (*_iter(meta.statisticsFiles()), *_iter(meta.partitionStatisticsFiles())):
        if int(stats.snapshotId()) == sid:
            path = stats.path() if hasattr(stats, "path") else stats.location()
            files.append(SnapshotFile(str(path), "statistics", int(stats.fileSizeInBytes())))
    return info, files


def _copy(ctx: BackupContext, plan: BackupPlan, row: TableBackup, written: Written) -> None:
    items = plan.copy_items()
    n = max(1, ctx.spark.sparkContext.defaultParallelism)
    group = f"kit-backup-{ctx.run_id}-{row.table}"
    ctx.say(f"{row.table}: copy {len(items)} file(s), {plan.bytes_to_copy() / 1e6:,.1f} MB -> s3://{plan.bucket}")
    t0 = time.monotonic()
    with TaskProgress(ctx.spark, group, ctx.say, f"{row.table}: copy"):
        results = run_on_executors(
            ctx.spark, group, f"backup {row.table}", bins(items, n, _size), copy_partition, ctx.cfg
        )
    row.copy_seconds = time.monotonic() - t0
    row.copied, row.bytes_copied, row.adopted = record_copies(plan, written, results)
    ctx.say(
        f"{row.table}: copied {row.copied} file(s), {row.bytes_copied / 1e6:,.1f} MB in {row.copy_seconds:.1f}s"
        + (f"; {row.adopted} written by another run at the same time, kept" if row.adopted else "")
    )


def _size(item: CopyItem) -> int:
    return max(item.size, 1)


def _digest(ctx: BackupContext, plan: BackupPlan, row: TableBackup, written: Written) -> None:
    pairs = [(rel, plan.files[rel].path, plan.uri(file_key(plan.prefix, rel))) for rel in plan.to_digest]
    ctx.say(f"{row.table}: {len(pairs)} held file(s) without a point (an earlier run's): comparing with the replica")
    n = max(1, ctx.spark.sparkContext.defaultParallelism)
    group = f"kit-backup-{ctx.run_id}-{row.table}-digest"
    groups = bins(pairs, n, lambda p: 1)
    results = run_on_executors(ctx.spark, group, f"digest {row.table}", groups, digest_partition, ctx.cfg)
    errors = [r for r in results if r.get("error")]
    if errors:
        raise BackupRefused(
            f"{len(errors)} held file(s) unreadable, e.g. {errors[0]['relative']}: {errors[0]['error']}"
        )
    for r in results:
        written.sizes[str(r["relative"])] = (int(r["size"]), int(r["crc32"]), str(r["version"]))
    row.digested = len(results)


def rewrite_metadata(
    spark: SparkSession, jtable: Any, snap: TableSnapshot, restore_uri: str, staging: str
) -> list[tuple[str, str]]:
    """The snapshot's metadata file trimmed to the snapshot (`plan.trim_metadata`), its manifest list and its manifests,
    rewritten by Iceberg 1.10's RewriteTablePathUtil from the replica's location to `restore_uri` and staged under
    `staging`: (staged file, target path) pairs. RewriteTablePath itself rewrites every metadata version and every
    snapshot the table holds (the start/end versions only narrow that to a range whose manifests the earlier points
    hold, at the other points' restore locations), so a point's copy would grow with the table's history; its
    utilities over one trimmed metadata rewrite exactly what a restore of the point reads."""
    ice = _jvm(spark).org.apache.iceberg
    util, parser = ice.RewriteTablePathUtil, ice.TableMetadataParser
    io, src, stage = jtable.io(), snap.location, staging.rstrip("/") + "/"
    original = parser.read(io, snap.metadata_path)
    doc = trim_metadata(json.loads(str(parser.toJson(original))), snap.snapshot_id)
    meta = parser.fromJson(snap.metadata_path, json.dumps(doc))
    pairs = []

    def staged(path: str) -> tuple[str, Any]:
        out = str(util.stagingPath(path, src, stage))
        pairs.append((out, str(util.newPath(path, src, restore_uri))))
        return out, io.newOutputFile(out)

    parser.overwrite(util.replacePaths(meta, src, restore_uri), staged(snap.metadata_path)[1])
    jsnap = meta.currentSnapshot()
    listed = _jvm(spark).java.util.HashSet()
    for m in _iter(jsnap.allManifests(io)):
        listed.add(m.path())
    ml_out, _ = staged(str(jsnap.manifestListLocation()))
    result = util.rewriteManifestList(jsnap, io, meta, listed, src, restore_uri, stage, ml_out)
    fmt, specs = meta.formatVersion(), meta.specsById()

    def manifest(m: Any) -> None:
        out = io.newOutputFile(str(util.stagingPath(m.path(), src, stage)))
        if str(m.content().name()) == "DATA":
            util.rewriteDataManifest(m, out, io, fmt, specs, src, restore_uri)
        else:  # position deletes named in it are read from the originals by a restore, not staged
            util.rewriteDeleteManifest(m, out, io, fmt, specs, src, restore_uri, stage)

    manifests = list(_iter(result.toRewrite()))
    with ThreadPoolExecutor(DRIVER_THREADS) as pool:
        list(pool.map(manifest, manifests))
    pairs += [
        (str(util.stagingPath(m.path(), src, stage)), str(util.newPath(m.path(), src, restore_uri))) for m in manifests
    ]
    return pairs


def _restorable(
    ctx: BackupContext, jtable: Any, plan: BackupPlan, row: TableBackup
) -> tuple[dict[str, tuple[int, int, str]], str]:
    """Rewrite and upload the point's metadata: (key relative to the table prefix -> size, CRC32, version), and the key
    relative to the table prefix of the rewritten metadata file a restore loads."""
    root_key, root_uri = restore_root(plan, ctx.run_id)
    scratch = Path(tempfile.mkdtemp(prefix="kit-backup-", dir=ctx.scratch))
    try:
        staging = "file:" + str(scratch / "staging")
        pairs = rewrite_metadata(ctx.spark, jtable, plan.snapshot, root_uri, staging)
        deletes = [rel for rel, f in plan.files.items() if f.kind.endswith("-deletes")]
        uploads = restorable_uploads(pairs, staging, root_uri, root_key, deletes)
        items = [CopyItem(src, plan.uri(key), plan.uri(key), -1, "data") for src, key in uploads]
        with ThreadPoolExecutor(DRIVER_THREADS) as pool:
            results = list(pool.map(lambda it: copy_one(it, ctx.cfg), items))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    bad = [r for r in results if r.error]
    if bad:
        raise BackupRefused(
            f"{len(bad)} rewritten metadata file(s) failed to upload, e.g. {bad[0].dst}: {bad[0].error}"
        )
    out = {
        key[len(plan.prefix) :]: (r.size, r.crc32, r.version) for (_src, key), r in zip(uploads, results, strict=True)
    }
    meta_rel = plan.snapshot.metadata_path[len(plan.snapshot.location) + 1 :]
    restore_metadata = f"{root_key[len(plan.prefix) :]}/{meta_rel}"
    if restore_metadata not in out:
        raise BackupRefused(f"RewriteTablePath did not rewrite the snapshot's metadata file {meta_rel}")
    row.restorable, row.restorable_bytes = len(out), sum(v[0] for v in out.values())
    ctx.say(f"{row.table}: rewritten metadata: {row.restorable} file(s), {row.restorable_bytes / 1e6:,.2f} MB")
    return out, restore_metadata


def backup_table(ctx: BackupContext, table: str) -> TableBackup:
    """Back up the current snapshot of one replica table (never raises for the table's own failures)."""
    row = TableBackup(table)
    t0 = time.monotonic()
    try:
        _backup(ctx, table, row)
    except Exception as e:
        row.status, row.error = "failed", f"{type(e).__name__}: {str(e)[:500]}"
        ctx.say(f"{table}: FAILED: {row.error}")
    row.seconds = time.monotonic() - t0
    return row


def _backup(ctx: BackupContext, table: str, row: TableBackup) -> None:
    if not ctx.vault.point_key:
        raise BackupRefused("the vault's point key is not named: a point a restore cannot verify is not written")
    backed_up_at = datetime.now(UTC).replace(microsecond=0)
    store = VaultStore(ctx.vault)
    jtable = load_table(ctx.spark, ctx.catalog, table)
    ns, _, name = table.rpartition(".")
    prefix = table_prefix(ns, name, str(jtable.operations().current().uuid()), ctx.bucket)
    with ThreadPoolExecutor(2) as pool:  # the vault's listings while the driver reads the replica's manifests
        listed_points = pool.submit(store.points, prefix)
        listed_held = pool.submit(store.held_files, prefix)
        snap, files = read_snapshot(ctx.spark, jtable, table, ctx.source, ctx.bucket)
        points, held = listed_points.result(), listed_held.result()
    if snap.prefix != prefix:
        raise BackupRefused(f"{table} changed identity while it was read ({prefix} -> {snap.prefix})")
    row.snapshot_id = snap.snapshot_id
    row.point = point_key(snap.prefix, snap.snapshot_id)
    if snap.snapshot_timestamp_ms > to_ms(backed_up_at) + CLOCK_SKEW_MS:  # a restore would refuse its point
        raise BackupRefused(f"snapshot {snap.snapshot_id} is dated {iso_ms(snap.snapshot_timestamp_ms)}, in the future")
    if row.point in {p.key for p in points}:
        row.status = "already-backed-up"
        ctx.say(f"{table}: snapshot {snap.snapshot_id} already has a point ({row.point})")
        return
    plan = plan_backup(snap, ctx.vault.bucket, files, held, store.newest_point(snap.prefix, points, snap.bucket))
    row.files, row.reused = len(plan.files), len(plan.known)
    ctx.say(
        f"{table}: snapshot {snap.snapshot_id}: {len(plan.files)} file(s), {len(plan.to_copy)} to copy, "
        f"{len(plan.known) + len(plan.to_digest)} already in the vault"
    )
    ctx.kill.at("after-plan", table)
    written = Written(sizes=dict(plan.known))
    with ThreadPoolExecutor(1) as pool:  # the driver rewrites the metadata while the executors copy the files
        rewritten = pool.submit(_restorable, ctx, jtable, plan, row)
        if plan.to_copy:
            _copy(ctx, plan, row, written)
        if plan.to_digest:
            _digest(ctx, plan, row, written)
        row.reused = len(plan.known) + row.digested
        ctx.kill.at("after-copy", table)
        restorable, restore_metadata = rewritten.result()
    ctx.kill.at("after-restorable", table)
    until = retain_until(backed_up_at, ctx.vault.retention_days)
    keys = [file_key(plan.prefix, rel) for rel in sorted(set(plan.files) - written.written)]
    row.extended = store.lock_until(keys, until, DRIVER_THREADS)
    ctx.say(f"{table}: {row.extended} held file(s) now locked until {until.isoformat()}")
    ctx.kill.at("after-retention", table)
    point = build_point(plan, written, restorable, restore_metadata, backed_up_at)
    row.bytes_total = sum(v[0] for v in written.sizes.values())
    if store.commit_point(point):
        row.status = "backed-up"
        ctx.say(f"{table}: point {row.point} committed")
    else:
        row.status = "committed-by-another-run"
        ctx.say(f"{table}: another run committed {row.point} first; its point stands")
    ctx.kill.at("after-point", table)
