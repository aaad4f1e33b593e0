"""The recovery job: plan (metadata only), then copy + verify each table on one SparkSession, in parallel.

One code path for every catalog mode; the only branch is whether the target catalog stages CTAS (atomic) or not
(S3 Tables REST endpoint: create, insert, drop the half-made table on failure).
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.killpoints import RECOVERY
from s3tables_kit.jobs.kernel.leases import LEASE_SUFFIX, Lease, LeaseHeld, Leases, store_for
from s3tables_kit.jobs.kernel.selectors import PlanError
from s3tables_kit.jobs.kernel.snapshots import (
    IcebergColumn,
    IcebergPartitionField,
    Snapshot,
    TableInfo,
    table_info_from_metadata,
)
from s3tables_kit.jobs.recover import sql
from s3tables_kit.jobs.recover.attempts import (  # noqa: F401  (re-exported: tests and callers import them from here)
    ATTEMPT_MARKER,
    _catalog_has_table,
    _clean_attempt_dir,
    _is_local,
    _norm,
    _record_leftovers,
    _remove_marker,
    _write_marker,
    committed_by_other,
    planned_result,
    record_failure,
    unreferenced_window,
)
from s3tables_kit.jobs.recover.fromvault import VaultMetadataSource
from s3tables_kit.jobs.recover.guard import GuardedSql
from s3tables_kit.jobs.recover.lakeplan import build_plan_at_scale
from s3tables_kit.jobs.recover.metadata import (
    MetadataSource,
    load_table_info,
    local_path,
    metadata_source,
    missing_warehouse,
    read_manifest_list,
    table_properties,
)
from s3tables_kit.jobs.recover.model import PROP_VERIFIED, RecoveryError
from s3tables_kit.jobs.recover.modes import CopyMode, Layout, ModeDecision, decide, parse_layout
from s3tables_kit.jobs.recover.planning import (
    Action,
    Plan,
    TablePlan,
    check_distinct_targets,
    plan_table,
    properties_point,
    property_changes,
    target_ident,
)
from s3tables_kit.jobs.recover.report import TableResult, summary_table, write_reports
from s3tables_kit.jobs.recover.request import RecoveryRequest
from s3tables_kit.jobs.recover.verify import verify

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


# A CTAS skips Iceberg's default hash distribution only when every data file of the snapshot was written with the
# target's spec: each file then holds one target partition, tasks (one per file split) write few files through the
# fanout writer, and the ~1 GB shuffle of a 20 M-row copy disappears (BENCHMARKS.md). After partition evolution the
# files mix target partitions and `none` scatters them (137-141 files for 12 partitions, varying between runs): the
# default distribution is kept. Set per table on the table's own Spark session (`table_session`); the session setting
# wins over the table's `write.distribution-mode`, which is still copied to the target for its future writers.
DISTRIBUTION_NONE = {"spark.sql.iceberg.distribution-mode": "none"}


class RecoveryProgress:
    """Live, line-oriented progress per table on stderr (safe from several threads)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self.lock = threading.Lock()
        self.t0 = time.monotonic()

    def __call__(self, table: str, msg: str) -> None:
        with self.lock:
            print(f"[recover {time.monotonic() - self.t0:6.1f}s] {table}: {msg}", file=self.out, flush=True)


def build_plan(req: RecoveryRequest, replica_src: MetadataSource, target_src: MetadataSource) -> Plan:
    """Resolve every table (read-only metadata). Any error is collected; a plan with errors writes nothing."""
    now_ms = req.now_ms if req.now_ms is not None else int(time.time() * 1000)
    plan = Plan(selector=req.selector)
    if req.replica.mode == "hadoop" and (missing := missing_warehouse(req.replica.warehouse)):
        plan.errors.append(f"replica catalog {req.replica.name}: {missing}")
        return plan
    idents = list(dict.fromkeys(req.tables))
    seen = set(idents)  # O(1) membership: a 10,000-table namespace de-duplicates in milliseconds
    for ns in req.namespaces:
        names = replica_src.list_tables(ns)
        if not names:
            plan.errors.append(f"namespace {ns}: no tables in the replica catalog")
        for n in names:
            if Ident(ns, n) not in seen:
                seen.add(Ident(ns, n))
                idents.append(Ident(ns, n))
    for ident in idents:
        tp, errors = plan_one(req, replica_src, target_src, ident, now_ms)
        plan.errors.extend(errors)
        if tp is not None:
            plan.tables.append(tp)
    same = req.replica.mode == req.target.mode and req.replica.warehouse == req.target.warehouse
    plan.errors.extend(check_distinct_targets(plan.tables, same))
    return plan


def plan_one(
    req: RecoveryRequest, replica_src: MetadataSource, target_src: MetadataSource, ident: Ident, now_ms: int
) -> tuple[TablePlan | None, list[str]]:
    """One table's plan and its plan errors (metadata reads only; safe to call from several threads)."""
    errors: list[str] = []
    try:
        info = load_table_info(replica_src, ident)
        if info is None:
            return None, [f"{ident}: no such table in the replica catalog {req.replica.name} ({req.replica.warehouse})"]
        tgt = target_ident(ident, req.target_namespace, req.suffix)
        tp = plan_table(
            info,
            req.selector,
            now_ms,
            tgt,
            table_properties(target_src, tgt),
            req.replace,
            decide_mode=_mode_decider(req, info, replica_src),
            properties_at=_properties_reader(req, info, replica_src),
        )
        if tp.action is Action.REFUSE:
            errors.append(f"{ident}: target {req.target.name}.{tgt} {tp.state.value}; pass --replace to overwrite it")
        elif req.copy_mode is CopyMode.FILES and tp.copy_mode is not CopyMode.FILES:
            reason = tp.mode.reason if tp.mode else "?"
            errors.append(f"{ident}: --copy-mode files is not possible: {reason} (use auto or ctas)")
        return tp, errors
    except PlanError as e:
        return None, [str(e)]


def _mode_decider(
    req: RecoveryRequest, info: TableInfo, src: MetadataSource
) -> Callable[[Snapshot, tuple[IcebergColumn, ...], tuple[IcebergPartitionField, ...]], ModeDecision]:
    def decide_for(
        snap: Snapshot, schema: tuple[IcebergColumn, ...], spec: tuple[IcebergPartitionField, ...]
    ) -> ModeDecision:
        layout: Layout | None = None
        error: str | None = None
        # The manifest list (one small Avro file, read without a JVM) says which specs the live files use. Only a table
        # that has had several specs needs it (file copy: which specs to create; CTAS: write distribution): with one
        # spec every file uses it, and the plan of a 100-table namespace stays metadata-file reads only.
        if snap.manifest_list and len(info.specs) > 1:
            try:
                layout = parse_layout(read_manifest_list(snap.manifest_list, getattr(src, "io_props", None)))
            except Exception as e:
                error = f"{type(e).__name__}: {str(e)[:200]}"
        return decide(req.copy_mode, info, snap, schema, spec, layout, req.target.staged_ctas, error)

    return decide_for


def _properties_reader(
    req: RecoveryRequest, info: TableInfo, src: MetadataSource
) -> Callable[[Snapshot], tuple[dict[str, str] | None, str, list[str]]]:
    def at(snap: Snapshot) -> tuple[dict[str, str] | None, str, list[str]]:
        loc, note = properties_point(info, snap, req.selector)
        if loc is None:
            return None, note, []
        try:
            props = {str(k): str(v) for k, v in (src.read_json(loc).get("properties") or {}).items()}
        except Exception as e:
            return (
                None,
                "current properties",
                [
                    f"the metadata file of the recovery point ({loc}) is not readable ({type(e).__name__}); "
                    "the current properties are used"
                ],
            )
        changed = property_changes(props, info.properties)
        if changed:
            note += f"; differs from the current properties in: {', '.join(changed)}"
        return props, note, []

    return at


# --- execution ----------------------------------------------------------------------------------------------


def table_session(spark: SparkSession, req: RecoveryRequest, tp: TablePlan) -> SparkSession:
    """A session of its own per table (same SparkContext and executors): the CTAS write distribution is a session
    setting and tables run in parallel."""
    s = spark.newSession()
    conf = req.spark_conf()
    if tp.mode is not None and tp.mode.ctas_distribution_none:
        conf = {**conf, **DISTRIBUTION_NONE}
    for k, v in conf.items():
        s.conf.set(k, v)
    return s


# Streaming rate assumed for the plan's copy-time estimate (per executor core; BENCHMARKS.md measures it locally,
# S3 to S3 is network-bound): the estimate is only used to warn about the unreferenced-file window.
ASSUMED_MB_PER_S_PER_CORE = 50.0


def copy_time_warning(nbytes: int | None, cores: int, unreferenced_days: int) -> str | None:
    """Objects of a running copy are unreferenced until its commit; S3 Tables marks unreferenced objects after
    `unreferencedDays` and deletes them `nonCurrentDays` later. Warn at half the first window (pure)."""
    if not nbytes:
        return None
    est_s = nbytes / 1e6 / (ASSUMED_MB_PER_S_PER_CORE * max(1, cores))
    window_s = unreferenced_days * 86400
    if est_s >= 0.5 * window_s:
        return (
            f"estimated copy time {est_s / 3600:.1f} h ({nbytes / 1e9:,.1f} GB at {ASSUMED_MB_PER_S_PER_CORE:.0f} MB/s "
            f"x {cores} core(s)) approaches the target's unreferenced-file window ({unreferenced_days} days): "
            "copied objects could be marked unreferenced before the commit; add executors or raise unreferencedDays"
        )
    return None


def recover_table(
    spark: SparkSession,
    req: RecoveryRequest,
    tp: TablePlan,
    target_src: MetadataSource,
    run_id: str,
    say: Callable[[str], None],
    res: TableResult,
    lease: Lease | None = None,
) -> None:
    """Copy + verify one table, filling `res` as it goes (the caller reports it as failed on an exception)."""
    from s3tables_kit.jobs.recover.fastpath import FastPathUnavailable, FilesOutcome, recover_files

    rep, tgt = req.replica.name, req.target.name
    s = tp.snapshot
    if tp.action is Action.SKIP:
        res.verdict, res.message = "skipped", "already recovered and verified from this snapshot"
        say(res.message)
        return
    if tp.action is Action.REFUSE:  # refused at plan time (exit 2); kept for callers that build plans themselves
        res.verdict = "refused"
        res.message = f"target {tgt}.{tp.target} {tp.state.value}; pass --replace to overwrite it"
        say(res.message)
        return
    tspark = table_session(spark, req, tp)
    gsql = GuardedSql(tspark, [rep])
    loc = target_src.table_location(tp.target)
    t0 = time.monotonic()

    def before_commit() -> None:
        RECOVERY.at("before-commit", str(tp.target))
        if req.vault is not None and files is not None:  # what was read is what the backup point recorded
            problems = req.vault.check_copied(files.results)
            if problems:
                detail = "; ".join(problems[:3])
                raise RecoveryError(
                    f"{len(problems)} file(s) read from the vault differ from its backup point: {detail}"
                )
        if lease is not None:
            lease.ensure_held()

    if tp.action is Action.VERIFY:
        say("the target was committed by an earlier attempt from this snapshot: verifying it (nothing is copied)")
        _verify_and_mark(tspark, gsql, req, tp, target_src, None, None, t0, say, res)
        return
    if tp.action is Action.REDO:
        say("dropping the unfinished earlier attempt")
        gsql.sql(sql.drop_table(tgt, tp.target))
    if tp.action in (Action.CREATE, Action.REDO):
        _clean_attempt_dir(loc, req.replace, say, lambda: _catalog_has_table(tspark, tgt, tp.target))
    gsql.sql(sql.create_namespace(tgt, tp.target.namespace))
    replacing = tp.action is Action.REPLACE
    mode = tp.copy_mode
    files: FilesOutcome | None = None
    jreplica: Any = None
    if mode is CopyMode.FILES:
        say(f"file copy of snapshot {s.describe()} ({tp.rows} rows expected) -> {tgt}.{tp.target}")
        files = FilesOutcome()
        files.before_commit = before_commit
        cfg = req.store_config()
        cores = tspark.sparkContext.defaultParallelism
        warn = copy_time_warning(s.total_bytes, cores, unreferenced_window(req.target)[0])
        if warn:
            res.warnings.append(warn)
            say("WARNING: " + warn)
        if not replacing:
            _write_marker(loc, tp, run_id)
        try:
            read_from = req.vault.read_from if req.vault is not None else None
            _, jreplica = recover_files(tspark, rep, tgt, tp, run_id, cfg, say, replacing, files, read_from)
        except FastPathUnavailable as e:
            if req.copy_mode is not CopyMode.AUTO or files.results:
                raise
            say(f"file copy not possible ({e}); falling back to CTAS")
            res.copy_mode_reason = f"fallback from files: {e}"
            mode, files = CopyMode.CTAS, None
            tspark = table_session(spark, req, tp)
            gsql = GuardedSql(tspark, [rep])
        except BaseException:
            _record_leftovers(res, files, req, cfg, loc)
            raise
    if mode is CopyMode.CTAS:
        res.copy_mode = "ctas"
        say(f"copying snapshot {s.describe()} ({tp.rows} rows expected) -> {tgt}.{tp.target} (CTAS)")
        if req.target.staged_ctas:
            if not replacing:
                _write_marker(loc, tp, run_id)
            before_commit()
            try:
                gsql.sql(sql.ctas(tgt, rep, tp, run_id, replace=replacing))
            except Exception:
                if not replacing:  # atomic CTAS left no table, only orphan data files (unless another run's table)
                    _clean_attempt_dir(loc, False, say, lambda: _catalog_has_table(tspark, tgt, tp.target))
                raise
        else:
            before_commit()
            if replacing:
                gsql.sql(sql.drop_table(tgt, tp.target))
            gsql.sql(sql.create_table(tgt, tp, run_id))
            try:
                gsql.sql(sql.insert_select(tgt, rep, tp))
            except Exception:
                say("insert failed: dropping the half-made target")
                gsql.sql(sql.drop_table(tgt, tp.target))
                raise
        order = sql.write_ordered_by(tgt, tp)
        if order:
            gsql.sql(order)
    RECOVERY.at("after-commit", str(tp.target))
    if replacing:
        _unset_stale_properties(gsql, req, tp, target_src, run_id)
    _verify_and_mark(tspark, gsql, req, tp, target_src, files, jreplica if files is not None else None, t0, say, res)


def _verify_and_mark(
    tspark: SparkSession,
    gsql: GuardedSql,
    req: RecoveryRequest,
    tp: TablePlan,
    target_src: MetadataSource,
    files: Any,
    jreplica: Any,
    t0: float,
    say: Callable[[str], None],
    res: TableResult,
) -> None:
    """Verify the committed target and, when it agrees with the replica, set its verified-at property."""
    from s3tables_kit.jobs.recover.fastpath import verify_counts

    rep, tgt = req.replica.name, req.target.name
    s = tp.snapshot
    loc = target_src.table_location(tp.target)
    checked = files.check_seconds if files is not None else 0.0
    res.copy_seconds = time.monotonic() - t0 - checked  # the per-file checks are verification
    say(f"copied in {res.copy_seconds:.1f}s; verifying")
    t1 = time.monotonic() - checked
    tinfo = _target_info(target_src, tp.target)
    target_schema = tinfo.schemas[tinfo.current_schema_id] if tinfo else None
    problems: list[str] = []
    methods: list[str] = []
    verification: dict[str, Any] = {}
    if files is not None:
        res.copy_mb_per_s = files.bytes_copied / 1e6 / max(files.copy_seconds, 1e-9)
        per_file = ", ".join(f"{n} by {m}" for m, n in sorted(files.check_methods.items()))
        methods.append(f"size + CRC32 of every copied file, streamed vs written object ({per_file})")
        if req.vault is not None:
            methods.append("size (data files: + CRC32) of every file read vs the backup point's manifest")
        count_problems, partitions, data_records = verify_counts(tspark, tgt, tp, jreplica)
        methods.append("record counts per partition and in total, target metadata vs replica manifests")
        problems.extend(count_problems)
        if target_schema is not None:
            from s3tables_kit.jobs.recover.verify import schema_problems

            problems.extend(schema_problems(tp.schema, target_schema))
        src_rows = tgt_rows = None
        if files.delete_files:
            # Deletes must still apply to the copied data under the new paths: live rows, both sides.
            tgt_rows = _count(gsql, sql.table_ref(tgt, tp.target))
            if req.vault is None:
                src_rows = _count(gsql, f"{sql.table_ref(rep, tp.replica)} VERSION AS OF {s.snapshot_id}")
                methods.append("live row count (deletes applied), both sides")
            else:  # a point's files lie apart from the paths its metadata names: Spark cannot scan it there
                src_rows = tp.rows
                methods.append("live row count of the target (deletes applied) vs the snapshot summary's")
            if src_rows != tgt_rows:
                problems.append(f"live rows: replica {src_rows}, target {tgt_rows}")
        else:
            src_rows = tgt_rows = data_records  # no deletes: the rows are the data files' records
        verification = {
            "ok": not problems,
            "source_rows": src_rows,
            "target_rows": tgt_rows,
            "partitions": partitions,
            "problems": list(problems),
            "files_checked": len(files.checks),
            "bytes_copied": files.bytes_copied,
            "objects_reused": files.reused,
            "missing_sample": [],
            "extra_sample": [],
        }
        res.rows = tgt_rows
    if files is None or req.verify == "full":
        v = verify(gsql, tp, rep, tgt, target_schema)
        methods.append("row fingerprint: per-partition count + sum(xxhash64(row)) + sum(hash(row)), both sides")
        problems.extend(p for p in v.problems if p not in problems)
        fp = v.as_dict()
        verification = {**fp, **{k: v_ for k, v_ in verification.items() if k not in fp}, "problems": list(problems)}
        verification["ok"] = not problems
        res.rows = v.target_rows
    res.verify_seconds = time.monotonic() - t1
    res.verification = verification
    res.verification_method = "; ".join(methods)
    nfiles, nbytes = _target_files(gsql, tgt, tp.target)
    res.files, res.bytes = nfiles, nbytes
    if not problems:
        gsql.sql(sql.set_properties(tgt, tp.target, {PROP_VERIFIED: datetime.now(UTC).isoformat(timespec="seconds")}))
        _remove_marker(loc)
        res.verdict = "verified"
        say(f"VERIFIED ({res.copy_mode}): {res.rows} rows, {nfiles} file(s); {res.verification_method}")
    else:
        res.rows = None
        res.message = "verification failed: " + "; ".join(problems[:5])
        say(res.message)


def _count(gsql: GuardedSql, relation: str) -> int:
    row = gsql.sql(f"SELECT count(*) AS n FROM {relation}").first()
    return int(row["n"]) if row else 0


def _target_info(src: MetadataSource, ident: Ident) -> Any:
    loc = src.metadata_location(ident)
    return table_info_from_metadata(ident, src.read_json(loc), loc) if loc else None


def _target_files(gsql: GuardedSql, catalog: str, ident: Ident) -> tuple[int, int]:
    row = gsql.sql(
        "SELECT count(*) AS n, coalesce(sum(file_size_in_bytes), 0) AS b "
        f"FROM {sql.table_ref(catalog, ident)}.data_files"
    ).first()
    return (int(row["n"]), int(row["b"])) if row else (0, 0)


def _unset_stale_properties(
    gsql: GuardedSql, req: RecoveryRequest, tp: TablePlan, target_src: MetadataSource, run_id: str
) -> None:
    props = table_properties(target_src, tp.target) or {}
    wanted = sql.target_properties(tp, run_id)
    stale = [k for k in sql.user_properties(props) if k not in wanted] + [
        k for k in props if k.startswith("kit.recovery.") and k not in wanted
    ]
    if stale:
        gsql.sql(sql.unset_properties(req.target.name, tp.target, stale))


def execute(
    spark: SparkSession,
    req: RecoveryRequest,
    plan: Plan,
    progress: RecoveryProgress,
    plan_seconds: float,
    run_id: str,
    leases: Leases | None = None,
) -> list[TableResult]:
    target_src = metadata_source(req.target, spark)
    per_table_plan = plan_seconds / max(1, len(plan.tables))

    def one(tp: TablePlan) -> TableResult:
        label = f"{tp.replica} -> {req.target.name}.{tp.target}"
        spark.sparkContext.setLocalProperty("spark.job.description", f"recover {label}")
        say: Callable[[str], None] = lambda msg: progress(label, msg)  # noqa: E731
        res = planned_result(req, tp, per_table_plan)
        res.verdict = "failed"
        try:
            lease = leases.get(str(tp.target)) if leases is not None else None
            recover_table(spark, req, tp, target_src, run_id, say, res, lease)
        except Exception as e:  # one table's failure must not stop the others
            record_failure(spark, req, tp, run_id, res, e, say)
        return res

    done: dict[str, TableResult] = {}
    if req.batch:
        from s3tables_kit.jobs.recover.batch import batchable, recover_many

        many = [tp for tp in plan.tables if batchable(req, tp)]
        if many:
            results, _ = recover_many(spark, req, many, target_src, run_id, progress, plan_seconds, leases)
            done = {r.replica_table: r for r in results}
    rest = [tp for tp in plan.tables if str(tp.replica) not in done]
    with ThreadPoolExecutor(max_workers=req.parallelism, thread_name_prefix="recover") as pool:
        done.update((str(tp.replica), r) for tp, r in zip(rest, pool.map(one, rest), strict=True))
    return [done[str(tp.replica)] for tp in plan.tables]


def lease_key(lease_dir: str, target_warehouse: str, target: str) -> str:
    """One key per (target warehouse, table) under a lease directory shared by every engineer who recovers there."""
    wh = hashlib.sha256(target_warehouse.encode()).hexdigest()[:12]
    return f"{lease_dir.rstrip('/')}/{wh}/{target}{LEASE_SUFFIX}"


def local_table_lease_key(table_location: str) -> str:
    """A Hadoop-catalog target: the lease lives next to the table directory (not in it: a cleanup never removes
    it, and a Hadoop catalog lists only directories as namespaces and tables)."""
    return str(local_path(table_location.rstrip("/"))) + LEASE_SUFFIX


def run_leases(req: RecoveryRequest, plan: Plan, target_src: MetadataSource, run_id: str, started: str) -> Leases:
    """One lease per table this run will write (not for skips). Without a lease store (an AWS or JDBC target and
    no --lease-dir) none: the plan says so and the catalog commit decides a race."""
    out = []
    for tp in plan.tables:
        if tp.action in (Action.SKIP, Action.REFUSE):
            continue
        target = str(tp.target)
        if req.lease_dir:
            key = lease_key(req.lease_dir, req.target.warehouse, target)
        else:
            loc = target_src.table_location(tp.target)
            if not _is_local(loc):
                continue
            key = local_table_lease_key(loc or "")
        out.append(Lease(store_for(key), key, target, run_id, started, req.lease_ttl_s))
    return Leases(out)


@dataclass
class Outcome:
    plan: Plan
    results: list[TableResult]
    report: Path | None
    exit_code: int


def run(
    req: RecoveryRequest,
    spark_factory: Callable[[dict[str, str]], SparkSession],
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> Outcome:
    """Plan, print it, then (unless dry-run) recover. Exit code: 0 all ok, 1 some table failed, 2 plan error."""
    out = out or sys.stdout
    progress = RecoveryProgress(err)
    t0 = time.monotonic()
    run_id = uuid.uuid4().hex[:12]
    started = datetime.now(UTC)
    run_dir = req.report_dir / f"{started:%Y%m%dT%H%M%SZ}-{run_id}" if req.report_dir else None
    spark: SparkSession | None = None
    needs_spark = not (_jvm_free(req.replica) and _jvm_free(req.target))
    if needs_spark:
        spark = spark_factory(req.spark_conf())
    replica_src = VaultMetadataSource(req.vault) if req.vault is not None else metadata_source(req.replica, spark)
    target_src = metadata_source(req.target, spark)
    plan = build_plan_at_scale(req, replica_src, target_src, plan_one, progress_out=err)
    plan_seconds = time.monotonic() - t0
    print(plan.render(), file=out, flush=True)
    header: dict[str, Any] = {
        "selector": req.selector.describe(),
        "replica_catalog": req.vault.describe()
        if req.vault is not None
        else f"{req.replica.name} ({req.replica.mode} {req.replica.warehouse})",
        "target_catalog": f"{req.target.name} ({req.target.mode} {req.target.warehouse})",
        "dry_run": req.dry_run,
        "copy_mode": req.copy_mode.value,
        "verify": req.verify,
        "run_id": run_id,
        "started_at": started.isoformat(timespec="seconds"),
    }
    if plan.errors:
        print("\nNothing was written: fix the errors above.", file=out)
        return Outcome(plan, [], None, 2)
    if req.dry_run:
        results = []
        for t in plan.tables:
            r = planned_result(req, t, plan_seconds)
            r.rows, r.files, r.bytes = t.rows, t.snapshot.data_files, t.snapshot.total_bytes
            results.append(r)
        report = write_reports(run_dir, results, header) if run_dir else None
        print("\nDry run: nothing was written." + (f" Plan report: {report}" if report else ""), file=out)
        return Outcome(plan, results, report, 0)
    leases = run_leases(req, plan, target_src, run_id, started.isoformat(timespec="seconds"))
    unleased = [str(t.target) for t in plan.tables if t.action not in (Action.SKIP, Action.REFUSE)]
    unleased = [t for t in unleased if t not in leases.by_target]
    if unleased:
        print(
            f"note: no lease store for {', '.join(unleased)} (pass --lease-dir s3://bucket/prefix): a concurrent "
            "run into the same target is not excluded up front; the catalog commit decides, and the loser says so",
            file=out,
        )
    try:
        leases.acquire_all(req.wait, lambda msg: progress("lease", msg))
    except LeaseHeld as e:
        print(f"\nREFUSED: {e}", file=out, flush=True)
        print(f"refused: {e}", file=progress.out, flush=True)
        return Outcome(plan, [], None, 2)
    try:
        if leases.by_target:  # re-plan under the leases: the targets' state as of now (another run may have ended)
            plan = build_plan(req, replica_src, target_src)
            if plan.errors:
                print(plan.render(), file=out, flush=True)
                print("\nNothing was written: fix the errors above.", file=out)
                return Outcome(plan, [], None, 2)
        if spark is None:
            spark = spark_factory(req.spark_conf())
        results = execute(spark, req, plan, progress, plan_seconds, run_id, leases)
    finally:
        leases.release_all()
    header["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print("\n" + summary_table(results), file=out)
    report = write_reports(run_dir, results, header) if run_dir else None
    if report:
        print(f"Report: {report}", file=out)
    code = 0 if all(r.ok for r in results) else 1
    return Outcome(plan, results, report, code)


def _jvm_free(spec: CatalogSpec) -> bool:
    return spec.mode == "hadoop" or spec.is_aws
