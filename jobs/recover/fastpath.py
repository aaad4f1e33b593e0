"""The file copy mode on Spark: enumerate the snapshot's live files from its manifests, stage the new table, stream
the files into the staged table's own location on the executors, commit them in one atomic catalog commit.

Iceberg's own Java API does the metadata work (through py4j, on the driver):
  - `Snapshot.dataManifests/deleteManifests` + `ManifestFiles.read*`: the live files (never a listing);
  - `Catalog.buildTable(...).createTransaction()`: a staged create; nothing is visible in the catalog until
    `commitTransaction()`, so a failed or killed copy leaves no table (on S3 Tables the client catalog registers the
    name without metadata to learn the location; that is not a table, and a rerun re-uses it and its objects);
  - `TableMetadata.buildFrom(...).addPartitionSpec(...)` inside the transaction: the specs the files were written with,
    under the replica's spec ids;
  - `DataFiles.builder(spec).copy(file)` (metrics, partition, split offsets kept) and, for position deletes,
    `FileMetadata.deleteFileBuilder` with `ContentFileUtil.replacePathBounds` (the bounds RewriteTablePath writes);
  - one `newFastAppend()` (or `newRowDelta()` with deletes) = one snapshot in the new table.
Before a byte is copied, the staged table is checked against the replica (field ids, specs, delete kinds, paths);
anything unexpected raises `FastPathUnavailable`, and `auto` falls back to CTAS.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.executors import TaskProgress, bins, run_on_executors
from s3tables_kit.jobs.kernel.filecopy import (
    CopyItem,
    StoreConfig,
    alt_name,
    check_partition,
    copy_partition,
    existing_objects,
    relocate,
)
from s3tables_kit.jobs.recover import sql
from s3tables_kit.jobs.recover.model import RecoveryError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from s3tables_kit.jobs.recover.planning import TablePlan

Key = tuple[str, int, str]  # (content, spec id, partition path)


class FastPathUnavailable(RecoveryError):
    """The byte copy cannot be proven correct for this table; raised before anything is written."""


@dataclass
class SourceFile:
    jfile: Any  # org.apache.iceberg.DataFile | DeleteFile (a copy)
    path: str
    size: int
    records: int
    spec_id: int
    partition: str
    kind: str  # data | position-deletes
    referenced: str | None = None


@dataclass
class FilesOutcome:
    location: str = ""
    items: list[CopyItem] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    counts_problems: list[str] = field(default_factory=list)
    partitions: int = 0
    data_files: int = 0
    delete_files: int = 0
    bytes_copied: int = 0
    reused: int = 0
    copy_seconds: float = 0.0
    commit_seconds: float = 0.0
    check_seconds: float = 0.0  # per-file check of the written objects: part of the verification, not the copy
    check_methods: dict[str, int] = field(default_factory=dict)
    committed: bool = False
    before_commit: Callable[[], None] | None = None  # e.g. "is the lease still ours"; raises to abort the commit


def _iter(iterable: Any) -> Iterator[Any]:
    it = iterable.iterator()
    while it.hasNext():
        yield it.next()


def iceberg_catalog(spark: SparkSession, name: str) -> Any:
    """The Iceberg catalog behind a Spark catalog of this session. Spark's CatalogManager reads the catalog
    configuration from the thread's active session, so this session is made active first."""
    jsession = spark._jsparkSession
    _jvm(spark).org.apache.spark.sql.SparkSession.setActiveSession(jsession)
    return jsession.sessionState().catalogManager().catalog(name).icebergCatalog()


def _jvm(spark: SparkSession) -> Any:
    jvm = spark._jvm
    assert jvm is not None
    return jvm


def enumerate_files(spark: SparkSession, jtable: Any, snapshot_id: int) -> tuple[list[SourceFile], list[SourceFile]]:
    """The snapshot's live data and delete files, read from its manifests (read-only)."""
    jvm = _jvm(spark)
    ice = jvm.org.apache.iceberg
    snap = jtable.snapshot(snapshot_id)
    if snap is None:
        raise FastPathUnavailable(f"snapshot {snapshot_id} not found by the replica catalog")
    io, specs = jtable.io(), jtable.specs()
    data: list[SourceFile] = []
    deletes: list[SourceFile] = []
    for mf in _iter(snap.dataManifests(io)):
        reader = ice.ManifestFiles.read(mf, io, specs)
        try:
            data += [_source_file(f, specs, "data") for f in _iter(reader)]
        finally:
            reader.close()
    for mf in _iter(snap.deleteManifests(io)):
        reader = ice.ManifestFiles.readDeleteManifest(mf, io, specs)
        try:
            for d in _iter(reader):
                content, fmt = str(d.content().name()), str(d.format().name())
                if content != "POSITION_DELETES":
                    raise FastPathUnavailable(f"the snapshot has {content.lower()} files (sequence numbers)")
                if fmt != "PARQUET":
                    raise FastPathUnavailable(f"a position-delete file in {fmt} (only Parquet is rewritten)")
                ref = d.referencedDataFile()
                deletes.append(_source_file(d, specs, "position-deletes", str(ref) if ref is not None else None))
        finally:
            reader.close()
    return data, deletes


def _source_file(f: Any, specs: Any, kind: str, referenced: str | None = None) -> SourceFile:
    """A copy of the Java content file `f` (a data or delete file) with what the copy plan reads of it."""
    spec_id = int(f.specId())
    return SourceFile(
        f.copy(),
        str(f.location()),
        int(f.fileSizeInBytes()),
        int(f.recordCount()),
        spec_id,
        str(specs.get(spec_id).partitionToPath(f.partition())),
        kind,
        referenced,
    )


def _rebind(jvm: Any, spec: Any, schema: Any) -> Any:
    parser = jvm.org.apache.iceberg.PartitionSpecParser
    return parser.fromJson(schema, parser.toJson(spec))


def stage(spark: SparkSession, target_catalog: str, tp: TablePlan, run_id: str, jtable: Any, replace: bool) -> Any:
    """The staged create transaction of the target: schema of the snapshot, the replica's specs 0..M (same ids),
    default spec, sort order, properties + lineage. Checked against the replica; nothing is committed here."""
    jvm = _jvm(spark)
    ice = jvm.org.apache.iceberg
    assert tp.mode is not None
    snap = jtable.snapshot(tp.snapshot.snapshot_id)
    sid = snap.schemaId()
    schema = jtable.schemas().get(sid) if sid is not None else jtable.schema()
    specs = jtable.specs()
    spec_ids = list(tp.mode.spec_ids) or [0]
    missing = [i for i in spec_ids if specs.get(i) is None]
    if missing:
        raise FastPathUnavailable(f"partition spec(s) {missing} not found in the replica")
    bound = {i: _rebind(jvm, specs.get(i), schema) for i in spec_ids}
    if len(tp.sort_order) == len(tp.info.sort_order) and tp.sort_order:
        parser = ice.SortOrderParser
        order = parser.fromJson(schema, parser.toJson(jtable.sortOrder()))
    else:
        order = ice.SortOrder.unsorted()
    props = jvm.java.util.HashMap()
    for k, v in sql.target_properties(tp, run_id).items():
        props.put(k, v)
    cat = iceberg_catalog(spark, target_catalog)
    tid = ice.catalog.TableIdentifier.parse(f"{tp.target.namespace}.{tp.target.name}")
    builder = cat.buildTable(tid, schema).withPartitionSpec(bound[spec_ids[0]]).withSortOrder(order)
    builder = builder.withProperties(props)
    txn = builder.createOrReplaceTransaction() if replace else builder.createTransaction()
    ops = txn.table().operations()
    base = ops.current()
    default = tp.mode.default_spec_id if tp.mode.default_spec_id is not None else spec_ids[-1]
    if len(spec_ids) > 1 or default != int(base.defaultSpecId()):
        b = ice.TableMetadata.buildFrom(base)
        for i in spec_ids[1:]:
            b = b.addPartitionSpec(bound[i])
        b = b.setDefaultPartitionSpec(default)
        ops.commit(base, b.build())
    t = txn.table()
    if not t.schema().sameSchema(schema):
        raise FastPathUnavailable(
            "the staged table's field ids differ from the snapshot's (a new table renumbers them): "
            f"{t.schema().toString()[:200]}"
        )
    tspecs = t.specs()
    for i in spec_ids:
        ts = tspecs.get(i)
        if ts is None or not ts.compatibleWith(bound[i]):
            raise FastPathUnavailable(f"partition spec {i} of the replica has no identical spec {i} in the target")
    return txn


@dataclass(frozen=True)
class SourceBytes:
    """Where the bytes of a file the source table names are read, and the location the data file paths in its
    rows start with when it is a position-delete file (a backup point keeps some files apart from the paths its
    rewritten metadata names, and their rows as the replica wrote them)."""

    uri: str
    rows_prefix: str
    version: str = ""  # the S3 version to read (a backup point's), else the object's current one


def copy_items(
    data: list[SourceFile],
    deletes: list[SourceFile],
    src_loc: str,
    dst_loc: str,
    run_id: str,
    read_from: Callable[[str], SourceBytes] | None = None,
) -> list[CopyItem]:
    """One copy per file, to its place under `dst_loc`; by default its bytes are read where the table names it."""
    locate = read_from or (lambda path: SourceBytes(path, src_loc))
    items = []
    for f in [*data, *deletes]:
        try:
            dst = relocate(f.path, src_loc, dst_loc)
        except ValueError as e:
            raise FastPathUnavailable(f"{e} (files outside the table location are not copied by path)") from None
        src = locate(f.path)
        items.append(
            CopyItem(
                src.uri,
                dst,
                alt_name(dst, run_id),
                f.size,
                f.kind,
                src.rows_prefix if f.kind == "position-deletes" else "",
                dst_loc if f.kind == "position-deletes" else "",
                src.version,
            )
        )
    return items


def metadata_counts(spark: SparkSession, jtable: Any, snapshot_id: int | None) -> dict[Key, list[int]]:
    """Per (content, spec id, partition): [files, records] from the manifests of a snapshot (None: current)."""
    jvm = _jvm(spark)
    ice = jvm.org.apache.iceberg
    snap = jtable.snapshot(snapshot_id) if snapshot_id is not None else jtable.currentSnapshot()
    out: dict[Key, list[int]] = {}
    if snap is None:
        return out
    io, specs = jtable.io(), jtable.specs()
    for kind, manifests, read in (
        ("data", snap.dataManifests(io), ice.ManifestFiles.read),
        ("deletes", snap.deleteManifests(io), ice.ManifestFiles.readDeleteManifest),
    ):
        for mf in _iter(manifests):
            reader = read(mf, io, specs)
            try:
                for f in _iter(reader):
                    sid = int(f.specId())
                    key = (kind, sid, str(specs.get(sid).partitionToPath(f.partition())))
                    c = out.setdefault(key, [0, 0])
                    c[0] += 1
                    c[1] += int(f.recordCount())
            finally:
                reader.close()
    return out


def compare_counts(src: dict[Key, list[int]], dst: dict[Key, list[int]]) -> list[str]:
    """Record counts per partition and in total, target metadata vs replica manifests (pure)."""
    problems = []
    if not any(k[0] == "data" for k in src):  # deletes without data files delete nothing and are not copied
        src = {k: v for k, v in src.items() if k[0] != "deletes"}
    for kind in ("data", "deletes"):
        a = sum(v[1] for k, v in src.items() if k[0] == kind)
        b = sum(v[1] for k, v in dst.items() if k[0] == kind)
        if a != b:
            problems.append(f"{kind} records in total: replica {a}, target {b}")
    for key in sorted(set(src) | set(dst)):
        x, y = src.get(key), dst.get(key)
        if x != y:
            problems.append(
                f"{key[0]} spec {key[1]} partition {key[2] or '(unpartitioned)'}: replica [files, records] {x}, "
                f"target {y}"
            )
        if len(problems) > 20:
            problems.append("...")
            break
    return problems


def recover_files(
    spark: SparkSession,
    replica_catalog: str,
    target_catalog: str,
    tp: TablePlan,
    run_id: str,
    cfg: StoreConfig,
    say: Callable[[str], None],
    replace: bool,
    outcome: FilesOutcome,
    read_from: Callable[[str], SourceBytes] | None = None,
) -> Any:
    """Stage, copy, check, commit. Returns the committed target table (Java). `outcome` is filled as it goes, so a
    caller can report what a failed attempt left behind. `read_from`: where the bytes of a file the source table
    names are read (a backup point holds them apart from the paths its rewritten metadata names)."""
    jvm = _jvm(spark)
    ice = jvm.org.apache.iceberg
    rcat = iceberg_catalog(spark, replica_catalog)
    jtable = rcat.loadTable(ice.catalog.TableIdentifier.parse(str(tp.replica)))
    src_loc = str(jtable.location()).rstrip("/")
    data, deletes = enumerate_files(spark, jtable, tp.snapshot.snapshot_id)
    if not data:
        deletes = []  # no data file for them to apply to: the snapshot's table is empty (`compare_counts` agrees)
    used = {f.spec_id for f in data + deletes}
    assert tp.mode is not None
    if not used <= set(tp.mode.spec_ids or (0,)):
        raise FastPathUnavailable(f"files use spec(s) {sorted(used)}, the plan prepared {list(tp.mode.spec_ids)}")
    txn = stage(spark, target_catalog, tp, run_id, jtable, replace)
    dst_loc = str(txn.table().location()).rstrip("/")
    outcome.location = dst_loc
    if dst_loc == src_loc:
        raise FastPathUnavailable("the target location is the replica's")
    items = copy_items(data, deletes, src_loc, dst_loc, run_id, read_from)
    uri = {f.path: i.src for f, i in zip([*data, *deletes], items, strict=True)}  # where each file was read
    outcome.items = items
    outcome.data_files, outcome.delete_files = len(data), len(deletes)
    total = sum(i.size for i in items)
    sc = spark.sparkContext
    # one task per executor core, files balanced by size (largest first): one wave, no scheduling tail
    n_tasks = max(1, sc.defaultParallelism)
    groups = bins(items, n_tasks, lambda i: i.size)
    say(
        f"file copy: {len(data)} data + {len(deletes)} position-delete file(s), {total / 1e6:,.1f} MB, "
        f"{len(groups)} task(s) -> {dst_loc}"
    )
    group = f"kit-copy-{run_id}-{tp.target}"
    t0 = time.monotonic()
    with TaskProgress(spark, group, say, "copy"):
        results = (
            run_on_executors(spark, group, f"copy {tp.replica} -> {tp.target}", groups, copy_partition, cfg)
            if groups
            else []  # a snapshot without data files: an empty table, no Spark job (0 partitions)
        )
    outcome.copy_seconds = time.monotonic() - t0
    outcome.results = results
    errors = [r for r in results if r.get("error")]
    if errors:
        raise RecoveryError(f"{len(errors)} file(s) failed to copy, e.g. {errors[0]['src']}: {errors[0]['error']}")
    outcome.bytes_copied = sum(int(r["size"]) for r in results)
    outcome.reused = sum(1 for r in results if r.get("reused"))
    say(
        f"copied {outcome.bytes_copied / 1e6:,.1f} MB in {outcome.copy_seconds:.1f}s "
        f"({outcome.bytes_copied / 1e6 / max(outcome.copy_seconds, 1e-9):,.0f} MB/s)"
        + (f"; {outcome.reused} object(s) of an earlier attempt re-used" if outcome.reused else "")
    )
    # per-file check of the written objects (size + CRC32 streamed vs what the object store holds)
    by_src = {r["src"]: r for r in results}
    expected = {uri[f.path]: (f.size if f.kind == "data" else None) for f in data + deletes}
    pairs = [(by_src[i.src], expected[i.src]) for i in items]
    t1 = time.monotonic()
    check_groups = bins(pairs, n_tasks, lambda p: int(p[0]["size"]))
    checks = run_on_executors(
        spark, group + "-check", f"check {tp.target}", check_groups, check_partition, cfg,
    ) if check_groups else []  # fmt: skip
    outcome.checks = checks
    outcome.check_methods = {}
    for c in checks:
        outcome.check_methods[c["method"]] = outcome.check_methods.get(c["method"], 0) + 1
    bad = [c for c in checks if not c["ok"]]
    if bad:
        raise RecoveryError(
            f"{len(bad)} written object(s) differ from what was read, e.g. {bad[0]['dst']}: {bad[0]['detail']}"
        )
    for f in deletes:
        r = by_src[uri[f.path]]
        if r.get("records") is not None and int(r["records"]) != f.records:
            raise RecoveryError(f"{f.path}: rewrote {r['records']} position deletes, the manifest says {f.records}")
    outcome.check_seconds = time.monotonic() - t1
    # commit: one snapshot with every file, in the staged (invisible) table, then the catalog commit
    t2 = time.monotonic()
    t = txn.table()
    tspecs = t.specs()
    op = txn.newRowDelta() if deletes else txn.newFastAppend()
    unsorted = ice.SortOrder.unsorted()
    for f in data:
        df = copied_data_file(ice, tspecs.get(f.spec_id), f, by_src[uri[f.path]], unsorted)
        if deletes:
            op.addRows(df)
        else:
            op.appendFile(df)
    util = ice.util.ContentFileUtil
    for f in deletes:
        r = by_src[uri[f.path]]
        spec = tspecs.get(f.spec_id)
        b = (
            ice.FileMetadata.deleteFileBuilder(spec)
            .ofPositionDeletes()
            .withPath(r["dst"])
            .withFormat("parquet")
            .withFileSizeInBytes(int(r["size"]))
            .withMetrics(util.replacePathBounds(f.jfile, src_loc, dst_loc))
        )
        if spec.isPartitioned():
            b = b.withPartition(f.jfile.partition())
        if f.referenced:
            b = b.withReferencedDataFile(relocate(f.referenced, src_loc, dst_loc))
        op.addDeletes(b.build())
    stamp_file_copy(op, tp.snapshot.snapshot_id)
    if outcome.before_commit is not None:
        outcome.before_commit()
    op.commit()
    txn.commitTransaction()
    outcome.committed = True
    outcome.commit_seconds = time.monotonic() - t2
    say(f"committed {len(data)} data + {len(deletes)} delete file(s) in one snapshot ({outcome.commit_seconds:.1f}s)")
    return rcat, jtable


def copied_data_file(ice: Any, spec: Any, replica_file: SourceFile, copied: dict[str, Any], sort_order: Any) -> Any:
    """The Iceberg DataFile of a copied replica data file: the replica's entry (`replica_file.jfile`: partition,
    metrics) at the path and size the copy wrote (`copied`: its copy result), in the target's `sort_order`."""
    return (
        ice.DataFiles.builder(spec)
        .copy(replica_file.jfile)
        .withPath(copied["dst"])
        .withFileSizeInBytes(int(copied["size"]))
        .withSortOrder(sort_order)
        .build()
    )


def stamp_file_copy(op: Any, replica_snapshot_id: int) -> None:
    """The snapshot summary of a file-copy commit: the copy mode and the replica snapshot it copied."""
    op.set("kit.recovery.copy-mode", "files")
    op.set("kit.recovery.replica-snapshot-id", str(replica_snapshot_id))


def verify_counts(spark: SparkSession, target_catalog: str, tp: TablePlan, jreplica: Any) -> tuple[list[str], int, int]:
    """Target metadata vs replica manifests: files and record counts per (content, spec, partition)."""
    jvm = _jvm(spark)
    tcat = iceberg_catalog(spark, target_catalog)
    ttable = tcat.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(str(tp.target)))
    src = metadata_counts(spark, jreplica, tp.snapshot.snapshot_id)
    dst = metadata_counts(spark, ttable, None)
    partitions = len({k for k in src if k[0] == "data"})
    records = sum(v[1] for k, v in src.items() if k[0] == "data")
    return compare_counts(src, dst), partitions, records


def leftovers(outcome: FilesOutcome, cfg: StoreConfig) -> list[str]:
    """The objects a failed attempt left in the target location (HeadObject on every name it may have written)."""
    if outcome.committed or not outcome.items:
        return []
    names = [u for i in outcome.items for u in (i.dst, i.alt_dst)]
    with ThreadPoolExecutor(8) as pool:
        found = pool.map(
            lambda chunk: existing_objects(chunk, cfg), [names[i : i + 200] for i in range(0, len(names), 200)]
        )
    return [u for part in found for u in part]
