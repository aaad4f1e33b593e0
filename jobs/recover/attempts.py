"""One attempt at one target table, shared by the per-table path (`job`) and the batched file copy (`batch`).

The attempt marker, the cleanup of an unfinished attempt (asked of the Iceberg catalog first), the leftovers a failed
copy reports, the lost-race check (`committed_by_other`) and the one way a table's failure is reported
(`record_failure`: the deepest Java cause kept, a lost race in one line, the winner's files never listed). A module
of its own so that `job` and `batch` both import it and neither imports the other.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.filecopy import StoreConfig
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.leases import LeaseLost
from s3tables_kit.jobs.recover import sql
from s3tables_kit.jobs.recover.errors import describe as describe_failure
from s3tables_kit.jobs.recover.metadata import local_path
from s3tables_kit.jobs.recover.model import LINEAGE, RecoveryError
from s3tables_kit.jobs.recover.planning import TablePlan
from s3tables_kit.jobs.recover.report import TableResult

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from s3tables_kit.jobs.recover.request import RecoveryRequest

ATTEMPT_MARKER = "_kit_recovery_attempt.json"


def _is_local(loc: str | None) -> bool:
    return bool(loc) and (loc.startswith("file:") or loc.startswith("/"))  # type: ignore[union-attr]


def _clean_attempt_dir(
    loc: str | None, replace: bool, say: Callable[[str], None], table_exists: Callable[[], bool] | None = None
) -> None:
    """Remove leftovers at a new table's location: ours (marker present) always, anything else only with --replace.

    Called with this run's lease on the target held (no other live attempt writes there). Whether a table lives
    there is asked of the Iceberg catalog (`table_exists`), never read from catalog-internal files: a committed
    table is never removed here."""
    if not _is_local(loc):
        return
    d = local_path(loc or "")
    if not d.exists() or not any(d.iterdir()):
        return
    if table_exists is not None and table_exists():
        raise RecoveryError(
            f"{loc}: the target catalog has a table there now; nothing was removed (rerun to plan again)"
        )
    if (d / ATTEMPT_MARKER).exists() or replace:
        n = sum(1 for p in d.rglob("*") if p.is_file())
        shutil.rmtree(d)
        say(f"removed {n} leftover file(s) of an unfinished attempt at {loc}")
        return
    raise RecoveryError(f"{loc} holds files that are not a table and not ours; pass --replace to delete them")


def _catalog_has_table(spark: SparkSession, catalog: str, ident: Ident) -> bool:
    """The Iceberg catalog's own answer (e.g. a Hadoop catalog finds v1.metadata.json without a version hint)."""
    from s3tables_kit.jobs.recover.fastpath import _jvm, iceberg_catalog

    jvm = _jvm(spark)
    cat = iceberg_catalog(spark, catalog)
    tid = jvm.org.apache.iceberg.catalog.TableIdentifier.parse(str(ident))
    cat.invalidateTable(tid)
    return bool(cat.tableExists(tid))


def committed_by_other(spark: SparkSession, catalog: str, ident: Ident, run_id: str) -> tuple[str, set[str]] | None:
    """After a failure: is the target now a committed table of ANOTHER run (a lost race)? Returns the one line that
    says so and every file that table references (never to be listed as leftovers), else None. Asked of the Iceberg
    catalog and the table's own metadata."""
    from s3tables_kit.jobs.recover.fastpath import _jvm, iceberg_catalog

    try:
        if not _catalog_has_table(spark, catalog, ident):
            return None
        jvm = _jvm(spark)
        t = iceberg_catalog(spark, catalog).loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(str(ident)))
        props = t.properties()
        other = props.get(LINEAGE.run_id)
        if other is not None and str(other) == run_id:
            return None
        created = int(t.operations().current().lastUpdatedMillis())
        first = t.history()
        if first is not None and first.size() > 0:
            created = int(first.get(0).timestampMillis())
        rows = spark.sql(f"SELECT file_path FROM {sql.table_ref(catalog, ident)}.all_files").collect()
    except Exception:
        return None
    when = datetime.fromtimestamp(created / 1000, tz=UTC).isoformat(timespec="seconds")
    by = f"run {other}" if other is not None else "something other than this kit"
    line = f"target {catalog}.{ident} was created by {by} at {when}; nothing of this run remains referenced"
    return line, {str(r[0]) for r in rows}


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


def unreferenced_window(spec: CatalogSpec) -> tuple[int, int, str]:
    """(unreferencedDays, nonCurrentDays, where from) of the target table bucket's unreferenced-file removal."""
    if not spec.is_aws:
        return 3, 10, "AWS defaults (local warehouse)"
    try:
        from s3tables_kit.jobs.kernel import sdk

        c = sdk.client("s3tables", spec.region, spec.endpoint)
        conf = c.get_table_bucket_maintenance_configuration(tableBucketARN=spec.warehouse)["configuration"]
        s = conf["icebergUnreferencedFileRemoval"]["settings"]["icebergUnreferencedFileRemoval"]
        return int(s["unreferencedDays"]), int(s["nonCurrentDays"]), "the target bucket's maintenance configuration"
    except Exception:
        return 3, 10, "AWS defaults (the bucket's configuration could not be read)"


def _record_leftovers(res: TableResult, files: Any, req: RecoveryRequest, cfg: StoreConfig, loc: str | None) -> None:
    """After a failed file copy: which objects it left in the target location, and who collects them."""
    from s3tables_kit.jobs.recover.fastpath import leftovers

    try:
        res.leftovers = leftovers(files, cfg) if files is not None else []
    except Exception as e:
        res.leftover_note = f"could not check for leftovers: {type(e).__name__}: {e}"
        return
    if not res.leftovers:
        return
    if _is_local(loc):
        res.leftover_note = f"{len(res.leftovers)} object(s) under {loc}; the next run removes them (attempt marker)"
    else:
        unref, noncurrent, src = unreferenced_window(req.target)
        res.leftover_note = (
            f"{len(res.leftovers)} object(s) under {files.location} that the kit cannot delete (table storage has no "
            f"DeleteObject). No table references them: the target bucket's unreferenced-file removal collects them "
            f"after unreferencedDays + nonCurrentDays = {unref} + {noncurrent} days ({src}). A rerun into the same "
            "name re-uses the identical ones."
        )


def _norm(uri: str) -> str:
    """`file:///x` and `file:/x` name the same local file (Iceberg writes the one-slash form)."""
    return "file:" + uri[len("file://") :] if uri.startswith("file://") else uri


def planned_result(req: RecoveryRequest, t: TablePlan, plan_seconds: float) -> TableResult:
    return TableResult(
        replica_table=str(t.replica),
        target_table=f"{req.target.name}.{t.target}",
        verdict="planned",
        snapshot_id=t.snapshot.snapshot_id,
        snapshot_committed_at=t.snapshot.committed_at,
        action=t.action.value,
        plan_seconds=plan_seconds,
        warnings=[*t.warnings, *(req.vault.findings() if req.vault is not None else [])],
        copy_mode=t.copy_mode.value,
        copy_mode_reason=t.mode.describe() if t.mode else "",
        expected_rows=t.rows,
        properties_as_of=t.properties_note,
    )


def record_failure(
    spark: SparkSession,
    req: RecoveryRequest,
    tp: TablePlan,
    run_id: str,
    res: TableResult,
    e: BaseException,
    say: Callable[[str], None],
) -> None:
    """Report one table's failure (the leftovers already recorded in `res`): the message with the deepest Java cause;
    if the target is now another run's committed table, the one lost-race line and none of its files as leftovers."""
    message, cause = describe_failure(e)
    res.verdict = "failed"
    res.rows = None
    res.message = message
    res.cause = cause.as_dict() if cause else None
    lost = committed_by_other(spark, req.target.name, tp.target, run_id)
    if lost is not None:  # a lost race: say so in one line, never list the winner's files
        line, referenced = lost
        res.message = f"{line} ({message})"
        kept = [u for u in res.leftovers if u not in referenced and _norm(u) not in referenced]
        if len(kept) != len(res.leftovers) or not kept:
            collector = (
                "the table's remove_orphan_files collects them"
                if _is_local(req.target.warehouse)
                else "the target bucket's unreferenced-file removal collects them"
            )
            res.leftover_note = (
                f"{len(kept)} object(s) written under this run's own names, referenced by no table; "
                f"{collector} (the committed table's files are never listed or touched)"
                if kept
                else ""
            )
        res.leftovers = kept
        say(f"FAILED: {line}")
        say(f"cause: {message}")
    else:
        say(f"FAILED: {message}")
        if isinstance(e, LeaseLost) and res.leftovers:  # the new holder writes the same location now
            res.leftovers = []
            res.leftover_note = "nothing listed: the target's location belongs to the run that took over the lease"
    if res.leftover_note:
        say(res.leftover_note)
