"""Many-table recovery with a small fixed cost (lake scale): the file copies of many tables in one Spark job.

The per-table path (`job.recover_table`) pays per table: a session, `CREATE NAMESPACE`, two Spark jobs (copy, check),
an Iceberg commit, a second commit for `verified`, both tables' manifests re-read for the counts and a Spark query for
the target's files. Here, for the tables whose plan is a plain file copy (new target, no delete files, `--verify auto`):

  1. once per run: `CREATE NAMESPACE` for each distinct target namespace, on the run's one session;
  2. per table on the driver (threads): the replica's live files from its manifests, the staged create transaction
     (nothing visible in the catalog), the copy list;
  3. ONE Spark job copies the flat list of file pairs of every table of the batch (table boundaries do not matter to
     it), ONE Spark job checks every written object (size + CRC32 vs what was streamed);
  4. per table: the files are appended inside the staged transaction; the counts per (content, spec, partition) of the
     staged snapshot's manifests (just written) are compared with the replica's, which the kit already read in
     step 2; only when every check passed is `kit.recovery.verified-at` set, in the same transaction, and the
     transaction committed: data, lineage and `verified` in ONE catalog commit. A failed check commits nothing (no
     half-made table; the copied objects are reported as leftovers, as in the per-table path).

Tables that need anything else (CTAS, delete files, `--replace`, `--verify full`) run on the per-table path. The
verification is the per-table path's: per-file size + CRC32, per-partition record counts, the staged schema's field
ids (`fastpath.stage`); only the moment moves (before the commit instead of after it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.executors import bins, run_on_executors
from s3tables_kit.jobs.kernel.filecopy import check_partition, copy_partition
from s3tables_kit.jobs.kernel.killpoints import RECOVERY
from s3tables_kit.jobs.recover import sql
from s3tables_kit.jobs.recover.attempts import (
    _catalog_has_table,
    _clean_attempt_dir,
    _record_leftovers,
    _remove_marker,
    _write_marker,
    planned_result,
    record_failure,
)
from s3tables_kit.jobs.recover.fastpath import (
    FastPathUnavailable,
    FilesOutcome,
    SourceFile,
    _jvm,
    compare_counts,
    copied_data_file,
    copy_items,
    enumerate_files,
    iceberg_catalog,
    metadata_counts,
    stage,
    stamp_file_copy,
)
from s3tables_kit.jobs.recover.guard import GuardedSql
from s3tables_kit.jobs.recover.model import PROP_VERIFIED, RecoveryError
from s3tables_kit.jobs.recover.modes import CopyMode
from s3tables_kit.jobs.recover.planning import Action, TablePlan
from s3tables_kit.jobs.recover.report import TableResult

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from s3tables_kit.jobs.kernel.leases import Leases
    from s3tables_kit.jobs.recover.metadata import MetadataSource
    from s3tables_kit.jobs.recover.request import RecoveryRequest

BATCH_TABLES = 250  # tables per copy job: bounds the driver's staged transactions and the job's task list

Key = tuple[str, int, str]


def batchable(req: RecoveryRequest, tp: TablePlan) -> bool:
    """Whether the table can take the batched file copy (pure). A snapshot with no data files (a metadata-only
    `DELETE FROM`, or only delete files left) takes the per-table path, which commits it as a verified empty table
    with the replica's schema, specs, sort order and properties; `prepare` routes one there too when the
    snapshot summary did not say."""
    return (
        tp.copy_mode is CopyMode.FILES
        and tp.action in (Action.CREATE, Action.REDO)
        and req.verify == "auto"
        and not tp.snapshot.delete_files
        and tp.snapshot.data_files != 0
    )


@dataclass
class Staged:
    tp: TablePlan
    res: TableResult
    say: Callable[[str], None]
    loc: str | None
    src_loc: str = ""
    txn: Any = None
    data: list[SourceFile] = field(default_factory=list)
    files: FilesOutcome = field(default_factory=FilesOutcome)
    phases: dict[str, float] = field(default_factory=dict)
    lease: Any = None  # this run's lease on the target (taken by `job.run`), checked right before the commit


def source_counts(data: list[SourceFile]) -> dict[Key, list[int]]:
    """Per (content, spec id, partition): [files, records] of the replica's live data files (pure; from the manifests
    the kit read to enumerate them)."""
    out: dict[Key, list[int]] = {}
    for f in data:
        c = out.setdefault(("data", f.spec_id, f.partition), [0, 0])
        c[0] += 1
        c[1] += f.records
    return out


def share(total: float, part: int, whole: int) -> float:
    """A table's share of a batch-wide duration, by bytes (pure)."""
    return total * (part / whole) if whole > 0 else 0.0


def recover_many(
    spark: SparkSession,
    req: RecoveryRequest,
    plans: list[TablePlan],
    target_src: MetadataSource,
    run_id: str,
    progress: Callable[[str, str], None],
    plan_seconds: float,
    leases: Leases | None = None,
) -> tuple[list[TableResult], list[TablePlan]]:
    """Recover `plans` (all `batchable`) in batches. Returns the results, and the plans that turned out to need the
    per-table path (no data files or delete files found, or the staged table could not be proven identical): the
    caller runs those. Each table's lease (from `leases`) is checked right before its catalog commit."""
    rep, tgt = req.replica.name, req.target.name
    spark = _run_session(spark, req)
    gsql = GuardedSql(spark, [rep])
    t0 = time.monotonic()
    for ns in sorted({tp.target.namespace for tp in plans}):
        gsql.sql(sql.create_namespace(tgt, ns))
    ns_share = (time.monotonic() - t0) / max(1, len(plans))
    cfg = req.store_config()
    n_tasks = max(1, spark.sparkContext.defaultParallelism)
    rcat = iceberg_catalog(spark, rep)
    ice = _jvm(spark).org.apache.iceberg
    results: list[TableResult] = []
    fallback: list[TablePlan] = []
    per_plan = plan_seconds / max(1, len(plans))

    def prepare(tp: TablePlan) -> Staged | TablePlan:
        label = f"{tp.replica} -> {tgt}.{tp.target}"
        st = Staged(
            tp, planned_result(req, tp, per_plan), lambda m: progress(label, m), target_src.table_location(tp.target)
        )
        st.res.verdict = "failed"
        st.res.copy_mode = "files"
        st.lease = leases.get(str(tp.target)) if leases is not None else None
        t = time.monotonic()
        iceberg_catalog(spark, rep)  # the thread's active session (Spark reads the catalog conf from it)
        jtable = rcat.loadTable(ice.catalog.TableIdentifier.parse(str(tp.replica)))
        st.src_loc = str(jtable.location()).rstrip("/")
        data, deletes = enumerate_files(spark, jtable, tp.snapshot.snapshot_id)
        assert tp.mode is not None
        if not data or deletes or not {f.spec_id for f in data} <= set(tp.mode.spec_ids or (0,)):
            return tp  # the per-table path handles empty snapshots, delete files, unexpected specs (read-only so far)
        st.data = data
        if tp.action is Action.REDO:
            st.say("dropping the unfinished earlier attempt")
            GuardedSql(spark, [rep]).sql(sql.drop_table(tgt, tp.target))
        _clean_attempt_dir(st.loc, req.replace, st.say, lambda: _catalog_has_table(spark, tgt, tp.target))
        _write_marker(st.loc, tp, run_id)
        try:
            st.txn = stage(spark, tgt, tp, run_id, jtable, False)
        except FastPathUnavailable:
            return tp
        dst_loc = str(st.txn.table().location()).rstrip("/")
        if dst_loc == st.src_loc:
            return tp
        st.files.location = dst_loc
        st.files.items = copy_items(data, [], st.src_loc, dst_loc, run_id)
        st.files.data_files = len(data)
        st.phases["stage"] = time.monotonic() - t + ns_share
        return st

    def fail(st: Staged, e: BaseException) -> None:
        # as on the per-table path: leftovers first, then the cause kept and a lost race said in one line
        _record_leftovers(st.res, st.files, req, cfg, st.loc)
        record_failure(spark, req, st.tp, run_id, st.res, e, st.say)

    for start in range(0, len(plans), BATCH_TABLES):
        chunk = plans[start : start + BATCH_TABLES]
        staged: list[Staged] = []
        with ThreadPoolExecutor(max_workers=req.parallelism, thread_name_prefix="stage") as pool:
            for tp, out in zip(chunk, pool.map(lambda p: _safe(prepare, p), chunk), strict=True):
                if isinstance(out, BaseException):
                    res = planned_result(req, tp, per_plan)
                    res.copy_mode = "files"
                    record_failure(
                        spark, req, tp, run_id, res, out, _say(progress, f"{tp.replica} -> {tgt}.{tp.target}")
                    )
                    results.append(res)
                elif isinstance(out, Staged):
                    staged.append(out)
                else:
                    fallback.append(out)
        if not staged:
            continue
        _copy_and_check(spark, staged, cfg, n_tasks, run_id, progress, fail)
        with ThreadPoolExecutor(max_workers=req.parallelism, thread_name_prefix="commit") as pool:
            list(pool.map(lambda st: _finish(spark, st, fail, ice), staged))
        results.extend(st.res for st in staged)
    return results, fallback


def _run_session(spark: SparkSession, req: RecoveryRequest) -> SparkSession:
    """The batch's one session (same SparkContext), with the request's catalogs set on it as the per-table path's
    `job.table_session` does: the caller's session need not carry them (e.g. a second run in the same process)."""
    s = spark.newSession()
    for k, v in req.spark_conf().items():
        s.conf.set(k, v)
    return s


def _say(progress: Callable[[str, str], None], label: str) -> Callable[[str], None]:
    return lambda msg: progress(label, msg)


def _safe(fn: Callable[[TablePlan], Any], tp: TablePlan) -> Any:
    try:
        return fn(tp)
    except Exception as e:  # one table's failure must not stop the others
        return e


def _copy_and_check(
    spark: SparkSession,
    staged: list[Staged],
    cfg: Any,
    n_tasks: int,
    run_id: str,
    progress: Callable[[str, str], None],
    fail: Callable[[Staged, BaseException], None],
) -> None:
    """One Spark job copies every file of the batch, one checks every written object; results go back per table."""
    items = [i for st in staged for i in st.files.items]
    if not items:  # empty snapshots: nothing to copy, the commit still records the (empty) table
        for st in staged:
            st.phases["copy"] = st.phases["check"] = 0.0
        return
    total = sum(i.size for i in items)
    progress("batch", f"file copy of {len(staged)} table(s): {len(items)} file(s), {total / 1e6:,.1f} MB, one job")
    group = f"kit-copy-{run_id}-batch"
    t = time.monotonic()
    results = run_on_executors(
        spark, group, f"copy {len(staged)} tables", bins(items, n_tasks, lambda i: i.size), copy_partition, cfg
    )
    copy_s = time.monotonic() - t
    by_src = {r["src"]: r for r in results}
    pairs: list[tuple[dict[str, Any], int | None]] = []
    for st in staged:
        mine = [by_src[i.src] for i in st.files.items]
        st.files.results = mine
        nbytes = sum(i.size for i in st.files.items)
        st.phases["copy"] = share(copy_s, nbytes, total)
        st.files.copy_seconds = st.phases["copy"]
        errors = [r for r in mine if r.get("error")]
        if errors:
            fail(
                st,
                RecoveryError(f"{len(errors)} file(s) failed to copy, e.g. {errors[0]['src']}: {errors[0]['error']}"),
            )
            st.txn = None
            continue
        st.files.bytes_copied = sum(int(r["size"]) for r in mine)
        st.files.reused = sum(1 for r in mine if r.get("reused"))
        pairs.extend((r, f.size) for r, f in zip(mine, st.data, strict=True))
    if not pairs:
        return
    t = time.monotonic()
    checks = run_on_executors(
        spark, group + "-check", f"check {len(pairs)} files", bins(pairs, n_tasks, lambda p: int(p[0]["size"])),
        check_partition, cfg,
    )  # fmt: skip
    check_s = time.monotonic() - t
    by_dst = {c["dst"]: c for c in checks}
    checked_total = sum(int(p[0]["size"]) for p in pairs)
    for st in staged:
        if st.txn is None:
            continue
        mine = [by_dst[r["dst"]] for r in st.files.results]
        st.files.checks = mine
        st.phases["check"] = share(check_s, st.files.bytes_copied, checked_total)
        st.files.check_seconds = st.phases["check"]
        for c in mine:
            st.files.check_methods[c["method"]] = st.files.check_methods.get(c["method"], 0) + 1
        bad = [c for c in mine if not c["ok"]]
        if bad:
            fail(
                st,
                RecoveryError(
                    f"{len(bad)} written object(s) differ from what was read, e.g. {bad[0]['dst']}: {bad[0]['detail']}"
                ),
            )
            st.txn = None


def _finish(spark: SparkSession, st: Staged, fail: Callable[[Staged, BaseException], None], ice: Any) -> None:
    """Append the files inside the staged transaction, verify the staged snapshot's counts, then ONE commit with
    data, lineage and `verified` -- or no commit at all."""
    if st.txn is None:
        return
    tp, res = st.tp, st.res
    t = time.monotonic()
    try:
        txn = st.txn
        tspecs = txn.table().specs()
        op = txn.newFastAppend()
        unsorted = ice.SortOrder.unsorted()
        by_src = {r["src"]: r for r in st.files.results}
        for f in st.data:
            op.appendFile(copied_data_file(ice, tspecs.get(f.spec_id), f, by_src[f.path], unsorted))
        stamp_file_copy(op, tp.snapshot.snapshot_id)
        op.commit()  # into the transaction (manifest + manifest list written): nothing is visible in the catalog yet
        st.phases["append"] = time.monotonic() - t
        t = time.monotonic()
        src = source_counts(st.data)
        dst = metadata_counts(spark, txn.table(), None)
        problems = compare_counts(src, dst)
        st.phases["verify"] = time.monotonic() - t
        if problems:
            raise RecoveryError("verification failed before the commit (nothing committed): " + "; ".join(problems[:5]))
        verified_at = datetime.now(UTC).isoformat(timespec="seconds")
        txn.updateProperties().set(PROP_VERIFIED, verified_at).commit()
        RECOVERY.at("before-commit", str(tp.target))
        if st.lease is not None:  # still ours? (a stalled run whose lease was taken over must not commit)
            st.lease.ensure_held()
        t = time.monotonic()
        txn.commitTransaction()
        st.files.committed = True
        st.phases["commit"] = time.monotonic() - t
    except Exception as e:
        st.phases.setdefault("verify", time.monotonic() - t)
        fail(st, e)
        return
    _remove_marker(st.loc)
    records = sum(v[1] for v in src.values())
    per_file = ", ".join(f"{n} by {m}" for m, n in sorted(st.files.check_methods.items()))
    res.verdict = "verified"
    res.rows = records
    res.files = len(st.data)
    res.bytes = st.files.bytes_copied
    res.copy_seconds = sum(st.phases.get(k, 0.0) for k in ("stage", "copy", "append", "commit"))
    res.verify_seconds = st.phases.get("check", 0.0) + st.phases.get("verify", 0.0)
    res.copy_mb_per_s = st.files.bytes_copied / 1e6 / max(st.files.copy_seconds, 1e-9)
    res.verification_method = (
        f"size + CRC32 of every copied file, streamed vs written object ({per_file}); record counts per partition and "
        "in total, staged snapshot vs replica manifests, before the commit; field ids of the staged schema"
    )
    res.verification = {
        "ok": True,
        "source_rows": records,
        "target_rows": records,
        "partitions": len(src),
        "problems": [],
        "files_checked": len(st.files.checks),
        "bytes_copied": st.files.bytes_copied,
        "objects_reused": st.files.reused,
        "verified_in_commit": True,
        "missing_sample": [],
        "extra_sample": [],
    }
    res.phases = {k: round(v, 4) for k, v in st.phases.items()}
    st.say(f"VERIFIED (files): {records} rows, {len(st.data)} file(s); batched, one commit with data + verified")
