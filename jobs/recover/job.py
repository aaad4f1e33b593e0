"""The recovery job: plan (metadata only), then copy + verify each table on one SparkSession, in parallel.

One code path for every catalog mode; the only branch is whether the target catalog stages CTAS (atomic) or not
(S3 Tables REST endpoint: create, insert, drop the half-made table on failure).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from jobs.recover import sql as S
from jobs.recover.catalogs import CatalogSpec, catalog_conf
from jobs.recover.guard import GuardedSql
from jobs.recover.metadata import (
    MetadataSource,
    load_table_info,
    local_path,
    metadata_source,
    table_properties,
)
from jobs.recover.model import PROP_VERIFIED, Ident, PlanError, RecoveryError, table_info_from_metadata
from jobs.recover.planning import (
    Action,
    Plan,
    Selector,
    TablePlan,
    check_distinct_targets,
    plan_table,
    target_ident,
)
from jobs.recover.report import TableResult, summary_table, write_reports
from jobs.recover.verify import verify

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

ATTEMPT_MARKER = "_kit_recovery_attempt.json"


@dataclass
class RecoveryRequest:
    replica: CatalogSpec
    target: CatalogSpec
    tables: list[Ident] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    selector: Selector = field(default_factory=Selector)
    target_namespace: str | None = None
    suffix: str = ""
    dry_run: bool = False
    replace: bool = False
    parallelism: int = 2
    report_dir: Path | None = None
    now_ms: int | None = None

    def __post_init__(self) -> None:
        if self.replica.name == self.target.name:
            raise RecoveryError("the replica and the target must be different Spark catalogs")
        if not self.tables and not self.namespaces:
            raise RecoveryError("nothing to recover: pass --table ns.name (repeatable) or --namespace ns")
        if self.parallelism < 1:
            raise RecoveryError("--parallelism must be >= 1")

    def spark_conf(self) -> dict[str, str]:
        return {**catalog_conf(self.replica), **catalog_conf(self.target), **COPY_CONF}


# Recovery writes skip Iceberg's default hash distribution: a replica snapshot's data files already hold one partition
# each, so tasks (one per file split) write few files through the fanout writer, and the ~1 GB shuffle of a 20 M-row
# copy disappears (BENCHMARKS.md: the copy's only stage besides that shuffle). The session setting wins over the table's
# `write.distribution-mode`, which is still copied to the target for its future writers.
COPY_CONF = {"spark.sql.iceberg.distribution-mode": "none"}


class Progress:
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
    idents = list(dict.fromkeys(req.tables))
    for ns in req.namespaces:
        names = replica_src.list_tables(ns)
        if not names:
            plan.errors.append(f"namespace {ns}: no tables in the replica catalog")
        idents.extend(Ident(ns, n) for n in names if Ident(ns, n) not in idents)
    for ident in idents:
        try:
            info = load_table_info(replica_src, ident)
            if info is None:
                plan.errors.append(f"{ident}: no such table in the replica catalog {req.replica.name}")
                continue
            tgt = target_ident(ident, req.target_namespace, req.suffix)
            plan.tables.append(
                plan_table(info, req.selector, now_ms, tgt, table_properties(target_src, tgt), req.replace)
            )
        except PlanError as e:
            plan.errors.append(str(e))
    same = req.replica.mode == req.target.mode and req.replica.warehouse == req.target.warehouse
    plan.errors.extend(check_distinct_targets(plan.tables, same))
    return plan


# --- execution ----------------------------------------------------------------------------------------------


def _is_local(loc: str | None) -> bool:
    return bool(loc) and (loc.startswith("file:") or loc.startswith("/"))  # type: ignore[union-attr]


def _clean_attempt_dir(loc: str | None, replace: bool, say: Callable[[str], None]) -> None:
    """Remove leftovers at a new table's location: ours (marker present) always, anything else only with --replace."""
    if not _is_local(loc):
        return
    d = local_path(loc or "")
    if not d.exists() or not any(d.iterdir()):
        return
    if (d / ATTEMPT_MARKER).exists() or replace:
        n = sum(1 for p in d.rglob("*") if p.is_file())
        shutil.rmtree(d)
        say(f"removed {n} leftover file(s) of an unfinished attempt at {loc}")
        return
    raise RecoveryError(f"{loc} holds files that are not a table and not ours; pass --replace to delete them")


def _write_marker(loc: str | None, plan: TablePlan, run_id: str) -> None:
    if not _is_local(loc):
        return
    d = local_path(loc or "")
    d.mkdir(parents=True, exist_ok=True)
    (d / ATTEMPT_MARKER).write_text(
        json.dumps({"run_id": run_id, "replica": str(plan.replica), "snapshot": plan.snapshot.snapshot_id}) + "\n"
    )


def _remove_marker(loc: str | None) -> None:
    if _is_local(loc):
        (local_path(loc or "") / ATTEMPT_MARKER).unlink(missing_ok=True)


def recover_table(
    gsql: GuardedSql,
    req: RecoveryRequest,
    tp: TablePlan,
    target_src: MetadataSource,
    run_id: str,
    say: Callable[[str], None],
    plan_seconds: float,
) -> TableResult:
    rep, tgt = req.replica.name, req.target.name
    s = tp.snapshot
    res = TableResult(
        replica_table=str(tp.replica),
        target_table=f"{tgt}.{tp.target}",
        verdict="failed",
        snapshot_id=s.snapshot_id,
        snapshot_committed_at=s.committed_at,
        rows=tp.rows,
        action=tp.action.value,
        plan_seconds=plan_seconds,
        warnings=list(tp.warnings),
    )
    if tp.action is Action.SKIP:
        res.verdict, res.message = "skipped", "already recovered and verified from this snapshot"
        say(res.message)
        return res
    if tp.action is Action.REFUSE:
        res.verdict = "refused"
        res.message = f"target {tgt}.{tp.target} {tp.state.value}; pass --replace to overwrite it"
        say(res.message)
        return res
    loc = target_src.table_location(tp.target)
    t0 = time.monotonic()
    if tp.action is Action.REDO:
        say("dropping the unfinished earlier attempt")
        gsql.sql(S.drop_table(tgt, tp.target))
    if tp.action in (Action.CREATE, Action.REDO):
        _clean_attempt_dir(loc, req.replace, say)
    gsql.sql(S.create_namespace(tgt, tp.target.namespace))
    replacing = tp.action is Action.REPLACE
    say(f"copying snapshot {s.describe()} ({tp.rows} rows expected) -> {tgt}.{tp.target}")
    if req.target.staged_ctas:
        if not replacing:
            _write_marker(loc, tp, run_id)
        try:
            gsql.sql(S.ctas(tgt, rep, tp, run_id, replace=replacing))
        except Exception:
            if not replacing:
                _clean_attempt_dir(loc, False, say)  # atomic CTAS left no table, only orphan data files
            raise
    else:
        if replacing:
            gsql.sql(S.drop_table(tgt, tp.target))
        gsql.sql(S.create_table(tgt, tp, run_id))
        try:
            gsql.sql(S.insert_select(tgt, rep, tp))
        except Exception:
            say("insert failed: dropping the half-made target")
            gsql.sql(S.drop_table(tgt, tp.target))
            raise
    order = S.write_ordered_by(tgt, tp)
    if order:
        gsql.sql(order)
    if replacing:
        _unset_stale_properties(gsql, req, tp, target_src, run_id)
    res.copy_seconds = time.monotonic() - t0
    say(f"copied in {res.copy_seconds:.1f}s; verifying")
    t1 = time.monotonic()
    tinfo = _target_info(target_src, tp.target)
    v = verify(gsql, tp, rep, tgt, tinfo.schemas[tinfo.current_schema_id] if tinfo else None)
    res.verify_seconds = time.monotonic() - t1
    res.verification = v.as_dict()
    res.rows = v.target_rows
    files, nbytes = _target_files(gsql, tgt, tp.target)
    res.files, res.bytes = files, nbytes
    if v.ok:
        gsql.sql(S.set_properties(tgt, tp.target, {PROP_VERIFIED: datetime.now(UTC).isoformat(timespec="seconds")}))
        _remove_marker(loc)
        res.verdict = "verified"
        say(f"VERIFIED: {v.target_rows} rows, {v.partitions} partition(s), {files} file(s)")
    else:
        res.message = "verification failed: " + "; ".join(v.problems[:5])
        say(res.message)
    return res


def _target_info(src: MetadataSource, ident: Ident) -> Any:
    loc = src.metadata_location(ident)
    return table_info_from_metadata(ident, src.read_json(loc), loc) if loc else None


def _target_files(gsql: GuardedSql, catalog: str, ident: Ident) -> tuple[int, int]:
    row = gsql.sql(
        f"SELECT count(*) AS n, coalesce(sum(file_size_in_bytes), 0) AS b FROM {S.table_ref(catalog, ident)}.data_files"
    ).first()
    return (int(row["n"]), int(row["b"])) if row else (0, 0)


def _unset_stale_properties(
    gsql: GuardedSql, req: RecoveryRequest, tp: TablePlan, target_src: MetadataSource, run_id: str
) -> None:
    props = table_properties(target_src, tp.target) or {}
    wanted = S.target_properties(tp, run_id)
    stale = [k for k in S.user_properties(props) if k not in wanted] + [
        k for k in props if k.startswith("kit.recovery.") and k not in wanted
    ]
    if stale:
        gsql.sql(S.unset_properties(req.target.name, tp.target, stale))


def execute(
    spark: SparkSession, req: RecoveryRequest, plan: Plan, progress: Progress, plan_seconds: float, run_id: str
) -> list[TableResult]:
    gsql = GuardedSql(spark, [req.replica.name])
    target_src = metadata_source(req.target, spark)
    per_table_plan = plan_seconds / max(1, len(plan.tables))

    def one(tp: TablePlan) -> TableResult:
        label = f"{tp.replica} -> {req.target.name}.{tp.target}"
        spark.sparkContext.setLocalProperty("spark.job.description", f"recover {label}")
        say: Callable[[str], None] = lambda msg: progress(label, msg)  # noqa: E731
        try:
            return recover_table(gsql, req, tp, target_src, run_id, say, per_table_plan)
        except Exception as e:  # one table's failure must not stop the others
            say(f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
            return TableResult(
                replica_table=str(tp.replica),
                target_table=f"{req.target.name}.{tp.target}",
                verdict="failed",
                snapshot_id=tp.snapshot.snapshot_id,
                snapshot_committed_at=tp.snapshot.committed_at,
                action=tp.action.value,
                message=f"{type(e).__name__}: {str(e).splitlines()[0][:500]}",
                plan_seconds=per_table_plan,
            )

    with ThreadPoolExecutor(max_workers=req.parallelism, thread_name_prefix="recover") as pool:
        return list(pool.map(one, plan.tables))


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
    progress = Progress(err)
    t0 = time.monotonic()
    run_id = uuid.uuid4().hex[:12]
    started = datetime.now(UTC)
    run_dir = req.report_dir / f"{started:%Y%m%dT%H%M%SZ}-{run_id}" if req.report_dir else None
    spark: SparkSession | None = None
    needs_spark = not (_jvm_free(req.replica) and _jvm_free(req.target))
    if needs_spark:
        spark = spark_factory(req.spark_conf())
    replica_src = metadata_source(req.replica, spark)
    target_src = metadata_source(req.target, spark)
    plan = build_plan(req, replica_src, target_src)
    plan_seconds = time.monotonic() - t0
    print(plan.render(), file=out, flush=True)
    header: dict[str, Any] = {
        "selector": req.selector.describe(),
        "replica_catalog": f"{req.replica.name} ({req.replica.mode} {req.replica.warehouse})",
        "target_catalog": f"{req.target.name} ({req.target.mode} {req.target.warehouse})",
        "dry_run": req.dry_run,
        "run_id": run_id,
        "started_at": started.isoformat(timespec="seconds"),
    }
    if plan.errors:
        print("\nNothing was written: fix the errors above.", file=out)
        return Outcome(plan, [], None, 2)
    if req.dry_run:
        results = [
            TableResult(
                replica_table=str(t.replica),
                target_table=f"{req.target.name}.{t.target}",
                verdict="planned",
                snapshot_id=t.snapshot.snapshot_id,
                snapshot_committed_at=t.snapshot.committed_at,
                rows=t.rows,
                files=t.snapshot.data_files,
                bytes=t.snapshot.total_bytes,
                action=t.action.value,
                plan_seconds=plan_seconds,
                warnings=list(t.warnings),
            )
            for t in plan.tables
        ]
        report = write_reports(run_dir, results, header) if run_dir else None
        print("\nDry run: nothing was written." + (f" Plan report: {report}" if report else ""), file=out)
        return Outcome(plan, results, report, 0)
    if spark is None:
        spark = spark_factory(req.spark_conf())
    results = execute(spark, req, plan, progress, plan_seconds, run_id)
    header["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print("\n" + summary_table(results), file=out)
    report = write_reports(run_dir, results, header) if run_dir else None
    if report:
        print(f"Report: {report}", file=out)
    code = 0 if all(r.ok for r in results) else 1
    return Outcome(plan, results, report, code)


def _jvm_free(spec: CatalogSpec) -> bool:
    return spec.mode == "hadoop" or spec.is_aws
