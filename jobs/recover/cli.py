"""Command line of the recovery job (`s3tables-kit recover`, `spark-submit jobs/recover_entry.py`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from s3tables_kit.jobs.kernel.catalogs import MODES, CatalogSpec
from s3tables_kit.jobs.kernel.idents import ArgError, Ident, JobError
from s3tables_kit.jobs.kernel.options import tool_parser
from s3tables_kit.jobs.kernel.selectors import Selector, add_selection_args, selector_from_args, to_ms
from s3tables_kit.jobs.recover.errors import describe as describe_failure
from s3tables_kit.jobs.recover.fromvault import VaultRestore, open_point
from s3tables_kit.jobs.recover.job import RecoveryRequest, run
from s3tables_kit.jobs.recover.modes import COPY_MODES, CopyMode
from s3tables_kit.jobs.vault.layout import choose_point
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.reader import VaultError, VaultReader, list_points, point_summary, render_points
from s3tables_kit.topology.contract import AS_OF_REPLICATION_POINT as AS_OF_KEYWORD

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

EPILOG = """examples:
  # on AWS after apply (S3 Tables client catalog jar), plan only:
  s3tables-kit recover --outputs outputs.json --namespace analytics --dry-run
  # point in time, consistent across tables, into the recovery bucket's namespace:
  make recover ARGS="--outputs outputs.json --namespace analytics --as-of 2025-12-03T14:05:00Z"
  # the most recent state every selected table holds completely (the replication point, as make status shows it):
  make recover ARGS="--outputs outputs.json --namespace analytics --as-of replication-point"
  # local warehouses (Hadoop catalogs), as in the drill:
  s3tables-kit recover --catalog-mode hadoop --replica-warehouse /path/replica --target-warehouse /path/recovered \\
      --table analytics.orders --report reports/
  # from the backup vault: its points of a table, then one restored (also one the replica has expired):
  s3tables-kit recover --outputs outputs.json --from-vault --table analytics.orders --list-points
  s3tables-kit recover --outputs outputs.json --from-vault --table analytics.orders --as-of 2025-09-01T00:00:00Z
  # an adopted lake's table, from the backups of its account's bucket of the vault:
  s3tables-kit recover --outputs outputs.json --from-vault --replica vault-777777777777-euc1 --table sales.orders
exit codes: 0 every table verified or skipped, 1 some table failed (the others completed), 2 bad arguments or plan
(nothing written)."""


def parser() -> argparse.ArgumentParser:
    p = tool_parser(
        "recover", "Recover writable, verified Iceberg tables from a read-only S3 Tables replica.", epilog=EPILOG
    )
    src = p.add_argument_group("catalogs")
    src.add_argument("--outputs", metavar="FILE", help="the cdktf outputs JSON (make outputs)")
    src.add_argument("--catalog-mode", choices=MODES, help="client (default with --outputs), rest, glue, hadoop, jdbc")
    src.add_argument("--replica-warehouse", help="replica table bucket ARN, or a local warehouse path/URI")
    src.add_argument(
        "--replica",
        metavar="BUCKET",
        help="with --outputs: the replica bucket to read (default [recovery] replica; "
        "an account bucket of its vault for an adopted lake's tables); with --from-vault: whose backups",
    )
    src.add_argument("--target-warehouse", help="recovery table bucket ARN, or a local warehouse path/URI")
    src.add_argument("--replica-region")
    src.add_argument("--target-region")
    src.add_argument("--replica-uri", help="jdbc: catalog database URI (or REST endpoint override)")
    src.add_argument("--target-uri", help="jdbc: catalog database URI (or REST endpoint override)")
    src.add_argument(
        "--endpoint-url", dest="endpoint", help="S3 / S3 Tables endpoint override (e.g. the local stand-in)"
    )
    src.add_argument("--endpoint", dest="endpoint", help=argparse.SUPPRESS)  # the earlier spelling, still accepted
    sel = p.add_argument_group("what")
    add_selection_args(
        sel,
        table_help="repeatable",
        namespace_help="every table of NS; repeatable",
        as_of_help="instant WITH zone, e.g. 2025-12-03T14:05:00Z; or replication-point: the newest instant every "
        "selected table can be restored to (read now from the sources' replication status, as make status; needs "
        "--outputs)",
        snapshot_help="a replica snapshot id (one table)",
    )
    sel.add_argument("--group", metavar="NAME", help="the tables of a configured replication point group (+ --table)")
    tgt = p.add_argument_group("target")
    tgt.add_argument("--target-namespace", help="default: the recovery namespace of the outputs, else the source's")
    tgt.add_argument("--suffix", default="", help="appended to each table name in the target, e.g. _20251203")
    run_ = p.add_argument_group("run")
    run_.add_argument("--dry-run", action="store_true", help="print the plan only; no writes")
    run_.add_argument("--replace", action="store_true", help="overwrite existing targets (otherwise refused)")
    run_.add_argument("--parallelism", type=int, default=2, metavar="N", help="tables copied at once (default 2)")
    run_.add_argument(
        "--copy-mode",
        choices=COPY_MODES,
        default="auto",
        help="files: copy the snapshot's files byte for byte (refused at plan time where it cannot be proven "
        "correct); ctas: Spark CREATE TABLE AS SELECT; auto (default): files where the snapshot qualifies, else "
        "ctas. The plan shows each table's mode and why",
    )
    run_.add_argument(
        "--verify",
        choices=("auto", "full"),
        default="auto",
        help="auto: size + CRC32 per copied file and record counts per partition for file copies, the row "
        "fingerprint for CTAS; full: the row fingerprint as well (reads every row of both sides)",
    )
    run_.add_argument(
        "--no-batch",
        action="store_true",
        help="copy every table on its own (one copy and one check job per table, verified in a second commit) "
        "instead of batching the plain file copies of many tables into shared Spark jobs (one commit per table)",
    )
    run_.add_argument(
        "--part-size-mb", type=int, default=64, metavar="MB", help="file copy: multipart above this size (>= 5)"
    )
    run_.add_argument(
        "--wait",
        action="store_true",
        help="when another live recovery holds a target's lease, wait for it to end (default: refuse at plan time, "
        "naming that run's id, host, pid and start time; nothing written)",
    )
    run_.add_argument(
        "--lease-dir",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="where the per-target leases live (one place shared by everyone recovering into the target; S3: a "
        "general purpose bucket, conditional writes). Default: next to the table directory for a local target; "
        "none for AWS targets (the plan says so)",
    )
    run_.add_argument(
        "--report",
        metavar="DIR",
        help="reports go to DIR/<UTC time>-<run id>/report.{json,md} (default reports/; a --dry-run writes its plan "
        "report only when --report is given)",
    )
    add_vault_args(p)
    return p


def request_from_args(ns: argparse.Namespace) -> RecoveryRequest:
    """Validate the arguments into a request (pure apart from reading --outputs)."""
    if ns.group:
        from s3tables_kit.jobs.ops.point_live import with_group

        try:
            ns.table, ns.namespace = with_group(ns.outputs, ns.group, ns.table, ns.namespace)
        except ValueError as e:
            raise ArgError(str(e)) from None
    tables = [Ident.parse(t) for t in ns.table]
    if ns.snapshot_id is not None and (len(tables) != 1 or ns.namespace):
        raise ArgError("--snapshot-id applies to exactly one --table (snapshot ids are per table)")
    if ns.parallelism < 1:
        raise ArgError("--parallelism must be >= 1")
    selector, live = selector_from_args(ns.as_of, ns.snapshot_id)  # live: resolved below (needs --outputs)
    target_namespace = ns.target_namespace
    if ns.outputs:
        if ns.replica_warehouse or ns.target_warehouse:
            raise ArgError("use either --outputs or --replica-warehouse/--target-warehouse, not both")
        from s3tables_kit.topology.outputs import OutputsError, load_outputs

        try:
            outputs = load_outputs(ns.outputs)
        except OutputsError as e:
            raise ArgError(str(e)) from None
        mode = ns.catalog_mode or "client"
        if mode not in ("client", "rest", "glue"):
            raise ArgError(f"--catalog-mode {mode}: --outputs describes AWS catalogs (client, rest or glue)")
        try:
            rep, rec = outputs.recovery_replica_named(ns.replica), outputs.recovery
        except KeyError as e:
            raise ArgError(f"--replica {ns.replica}: {e.args[0]}") from None
        replica = CatalogSpec("replica", mode, rep.table_bucket_arn, region=rep.region, endpoint=ns.endpoint)
        target = CatalogSpec("recovery", mode, rec.table_bucket_arn, region=rec.region, endpoint=ns.endpoint)
        target_namespace = target_namespace or rec.namespace
        if live:
            selector = Selector(as_of_ms=replication_point_ms(ns, outputs, rep))
    else:
        if live:
            raise ArgError(f"--as-of {AS_OF_KEYWORD} needs --outputs (the sources whose replication status sets it)")
        if not (ns.replica_warehouse and ns.target_warehouse):
            raise ArgError("pass --outputs FILE, or both --replica-warehouse and --target-warehouse")
        if ns.replica:
            raise ArgError("--replica names a bucket of --outputs: pass --outputs, or --replica-warehouse alone")
        mode = ns.catalog_mode or ("client" if ns.replica_warehouse.startswith("arn:") else "hadoop")
        replica = CatalogSpec(
            "replica",
            mode,
            ns.replica_warehouse,
            region=ns.replica_region,
            uri=ns.replica_uri,
            endpoint=ns.endpoint,
        )
        target = CatalogSpec(
            "recovery",
            mode,
            ns.target_warehouse,
            region=ns.target_region or ns.replica_region,
            uri=ns.target_uri,
            endpoint=ns.endpoint,
        )
        if mode in ("client", "rest", "glue") and not (replica.region and target.region):
            raise ArgError("AWS catalog modes need --replica-region (and --target-region if different)")
    # A dry run writes nothing unless a plan report is asked for with --report; a run reports to reports/ by default.
    report = Path(ns.report) if ns.report else (None if ns.dry_run else Path("reports"))
    try:
        return RecoveryRequest(
            replica=replica,
            target=target,
            tables=tables,
            namespaces=list(ns.namespace),
            selector=selector,
            target_namespace=target_namespace,
            suffix=ns.suffix,
            dry_run=ns.dry_run,
            replace=ns.replace,
            parallelism=ns.parallelism,
            report_dir=report,
            copy_mode=CopyMode(ns.copy_mode),
            verify=ns.verify,
            part_size=ns.part_size_mb * 1024 * 1024,
            wait=ns.wait,
            lease_dir=ns.lease_dir,
            batch=not ns.no_batch,
        )
    except JobError as e:
        raise ArgError(str(e)) from None


def replication_point_ms(ns: argparse.Namespace, outputs: Any, replica: Any) -> int:
    """`--as-of replication-point`: the live replication point of the replica recovery reads, over the selected
    tables (`s3tables_kit.jobs.ops.point`), read from the replication status of the sources feeding it (default
    credentials, as `make status`); printed, so the run's instant is on record."""
    from s3tables_kit.jobs.kernel.clients import Clients
    from s3tables_kit.jobs.kernel.selectors import selection_patterns
    from s3tables_kit.jobs.ops.point_live import live_point  # read only for `--as-of replication-point`

    sources = [s.table_bucket_arn for s in (outputs.sources_into(replica) or outputs.sources)]
    patterns = selection_patterns(ns.table, ns.namespace)
    try:
        at = live_point(Clients(endpoint_url=ns.endpoint), sources, replica.table_bucket_arn, patterns)
    except ValueError as e:
        raise ArgError(str(e)) from None
    print(f"--as-of {AS_OF_KEYWORD}: {at.isoformat(timespec='milliseconds')}", file=sys.stderr)
    return to_ms(at)


def local_spark_factory(conf: dict[str, str]) -> SparkSession:
    from s3tables_kit.jobs.spark import build_session

    return build_session(conf, app_name="kit-recover")


def submitted_spark_factory(conf: dict[str, str]) -> SparkSession:
    """Under spark-submit: master, jars and resources come from the submit command."""
    from s3tables_kit.jobs.spark import build_session

    return build_session(conf, app_name="kit-recover", local=False)


def main(
    argv: list[str] | None = None,
    spark_factory: Callable[[dict[str, str]], SparkSession] = local_spark_factory,
) -> int:
    ns = parser().parse_args(argv)
    try:
        if ns.list_points and not ns.from_vault:
            raise ArgError("--list-points lists the backup points of the vault: add --from-vault")
        if ns.from_vault:
            return main_from_vault(ns, spark_factory)
        req = request_from_args(ns)
        return run(req, spark_factory).exit_code
    except (JobError, VaultError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a JVM failure outside a table (session, catalog): keep its Java cause in one line
        message, cause = describe_failure(e)
        if cause is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1


# --- the command line (`recover --from-vault`) ------------------------------------------------------------------


def add_vault_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("from the vault")
    g.add_argument(
        "--from-vault",
        action="store_true",
        help="restore from the backup vault instead of the replica: a backup point of one --table (latest, --as-of "
        "TIME: the newest point committed at or before it, --snapshot-id ID), also one the replica has expired or "
        "of a table that no longer exists in S3 Tables; file copy only, every file checked against the point",
    )
    g.add_argument("--vault", metavar="s3://BUCKET|DIR", help="the vault (default: the vault bucket of --outputs)")
    g.add_argument("--vault-region", metavar="REGION", help="default: the vault's Region in --outputs")
    g.add_argument(
        "--vault-point-key", metavar="ARN", help="the vault's point key, which verifies each point (default: --outputs)"
    )
    g.add_argument("--list-points", action="store_true", help="with --from-vault: list the table's backup points")
    g.add_argument("--json", action="store_true", help="with --list-points: one JSON document")


def vault_store(ns: argparse.Namespace) -> VaultReader:
    root, region, key = ns.vault, ns.vault_region, ns.vault_point_key
    if ns.outputs:
        from s3tables_kit.topology.outputs import OutputsError, load_outputs

        try:
            vault = load_outputs(ns.outputs).vault
        except OutputsError as e:
            raise ArgError(str(e)) from None
        if vault is not None:
            root, region = root or f"s3://{vault.bucket_name}", region or vault.region
            key = key or vault.point_key_arn
    if not root:
        raise ArgError("--from-vault needs --vault s3://BUCKET (or --outputs of a deployment with a [vault])")
    try:
        return VaultReader(root, region, ns.endpoint, point_key=PointKey(key, region, ns.endpoint) if key else None)
    except VaultError as e:
        raise ArgError(str(e)) from None


def vault_bucket(ns: argparse.Namespace) -> str:
    """Whose backups a restore reads: "" for `[recovery] replica`'s, else the account bucket `--replica` names (its
    segment in the vault's layout). With --outputs the name must be a bucket the recovery reads (the recovery
    replica's name is its own backups); without, it names an account bucket."""
    if not ns.replica or not ns.outputs:
        return str(ns.replica or "")
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    try:
        outputs = load_outputs(ns.outputs)
        rep = outputs.recovery_replica_named(ns.replica)
    except OutputsError as e:
        raise ArgError(str(e)) from None
    except KeyError as e:
        raise ArgError(f"--replica {ns.replica}: {e.args[0]}") from None
    return "" if rep.table_bucket_arn == outputs.recovery.replica_table_bucket_arn else rep.table_bucket_name


def preflight_from_vault(ns: argparse.Namespace) -> None:
    """What a restore from the vault refuses before it reads the vault (`recover_entry.py --preflight`): the
    selection, and the target side unless only listing."""
    _refuse_other_selections(ns)
    vault_bucket(ns)
    if not ns.list_points:
        target_request(argparse.Namespace(**{**vars(ns), "as_of": None, "snapshot_id": None, "replica": None}))


def _refuse_other_selections(ns: argparse.Namespace) -> Ident:
    if ns.namespace or ns.group or len(ns.table) != 1:
        raise ArgError("--from-vault restores exactly one --table (backup points are per table)")
    if ns.copy_mode == "ctas":
        raise ArgError("--from-vault copies the point's files (--copy-mode files or auto); ctas is not offered")
    if ns.verify == "full":
        raise ArgError("--from-vault verifies by checksums and counts; --verify full (a Spark scan) is not offered")
    if ns.replica_warehouse:
        raise ArgError("--from-vault reads the vault, not a replica: drop --replica-warehouse (--replica BUCKET "
                       "chooses whose backups: an account bucket of the vault)")  # fmt: skip
    if ns.as_of == AS_OF_KEYWORD and not ns.list_points:
        raise ArgError(f"--as-of {AS_OF_KEYWORD} is the replicas' point; for the vault pass an instant")
    return Ident.parse(ns.table[0])


def target_request(ns: argparse.Namespace) -> RecoveryRequest:
    """The request of a restore from the vault, its target side as for a replica (catalog, namespace, report, flags):
    without --outputs (on EMR, `recover-emr` passes explicit catalogs) the replica catalog stands in as the target's
    mode and Region until `from_point` replaces it with the point's."""
    if not ns.outputs:
        ns.replica_warehouse = ns.target_warehouse
        ns.replica_region = ns.replica_region or ns.target_region
    return request_from_args(ns)


def from_point(req: RecoveryRequest, restore: VaultRestore) -> RecoveryRequest:
    """`req` (its target side: catalog, namespace, suffix, report, flags) reading the backup point `restore` instead
    of a replica: the point's catalog and snapshot, the file copy of its one table, checked against its manifest."""
    return dataclasses.replace(
        req, replica=restore.catalog(), selector=Selector(snapshot_id=restore.point.snapshot_id),
        copy_mode=CopyMode.FILES, vault=restore, batch=False,
    )  # fmt: skip


def main_from_vault(
    ns: argparse.Namespace,
    spark_factory: Callable[[dict[str, str]], SparkSession],
    out: TextIO | None = None,
) -> int:
    """List the points, or choose one and run the recovery from it (the caller maps ArgError and VaultError to 2)."""
    out = out or sys.stdout
    ident = _refuse_other_selections(ns)
    store = vault_store(ns)
    bucket = vault_bucket(ns)
    ns.replica = None  # chosen: the point is the replica from here on
    scan = list_points(store, ident.namespace, ident.name, bucket)
    points = list(scan.points)
    if ns.list_points:
        if ns.json:
            refused = [{"point": r.key, "refused": r.reason} for r in scan.refused]
            print(json.dumps([*(point_summary(p) for p in points), *refused], indent=2), file=out)
        else:
            print(render_points(store, ident.namespace, ident.name, scan), file=out)
        return 0
    for line in scan.findings():
        print(f"FINDING: {line}", file=sys.stderr)
    sel, _ = selector_from_args(ns.as_of, ns.snapshot_id)
    as_of = datetime.fromtimestamp(sel.as_of_ms / 1000, UTC) if sel.as_of_ms is not None else None
    point = choose_point(points, snapshot_id=sel.snapshot_id, as_of=as_of)
    if point is None:
        raise ArgError(
            f"no backup point of {ident}{f' of {bucket}' if bucket else ''} in the vault {store.root} for "
            f"{sel.describe()} "
            f"({len(points)} verified point(s), {len(scan.refused)} refused; --list-points shows them)"
        )
    with tempfile.TemporaryDirectory(prefix="kit-vault-restore-") as work:
        restore = open_point(store, point, Path(work), scan.refused)
        # The target side (catalog, namespace, report, flags) is built as for a replica; the replica is the point.
        ns.as_of, ns.snapshot_id = None, point.snapshot_id
        req = from_point(target_request(ns), restore)
        print(f"restoring from {restore.describe()}", file=out, flush=True)
        return run(req, spark_factory, out=out).exit_code
