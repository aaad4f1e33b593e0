"""Command line of the vault backup (`s3tables-kit backup`, `make backup`): back up replica tables into the vault.

Reads the infrastructure outputs (`kit_vault`: the bucket, its Region, retention and storage class; the recovery
replica's table bucket, which the backup role reads), or, for local warehouses, the vault named on the command line.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from s3tables_kit.jobs.kernel import preflight
from s3tables_kit.jobs.kernel.catalogs import MODES, CatalogSpec, catalog_conf, specs_from_outputs
from s3tables_kit.jobs.kernel.idents import ArgError, Ident, JobError
from s3tables_kit.jobs.kernel.options import refuse, tool_parser
from s3tables_kit.jobs.vault.backup import BackupContext, TableBackup, backup_table, list_tables
from s3tables_kit.jobs.vault.report import exit_code, summary_text, write_reports
from s3tables_kit.jobs.vault.store import VaultTarget
from s3tables_kit.topology.contract import VAULT_STORAGE_CLASSES

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

CATALOG = "replica"
# S3 for the replica's table storage, the local disk for RewriteTablePath's staging (the driver's scratch).
RESOLVING_FILE_IO = "org.apache.iceberg.io.ResolvingFileIO"

EPILOG = """examples:
  # every table of a namespace of the recovery replica, into the vault of the outputs:
  s3tables-kit backup --outputs outputs.json --namespace analytics
  # the tables [vault] tables names (what a schedule runs):
  s3tables-kit backup --outputs outputs.json --config kit.toml
  make backup ARGS="--outputs outputs.json --table analytics.orders"
  # a local warehouse into a vault bucket on the local stand-in:
  s3tables-kit backup --replica-warehouse /path/replica --vault-bucket my-vault --vault-region us-east-1 \\
      --retention-days 30 --point-key arn:aws:kms:us-east-1:111122223333:key/KEY-ID \\
      --endpoint-url http://127.0.0.1:4566 --table sales.orders
exit codes: 0 every table has a backup point of its current snapshot, 1 some table failed (the others completed),
2 bad arguments (nothing written)."""


@dataclass(frozen=True)
class AccountBucket:
    """A vault account bucket the backup role also reads (`[[replicas]] feeding_account`): its catalog, and its name,
    the segment its points take in the layout (`jobs/vault/layout.py`)."""

    bucket: str
    catalog: CatalogSpec


@dataclass(frozen=True)
class BackupRequest:
    """What to back up (tables and whole namespaces of the replica catalog, and of each account bucket of the vault
    what it holds of them) into which vault, reported where."""

    replica: CatalogSpec
    vault: VaultTarget
    selection: tuple[tuple[str, ...], tuple[str, ...]]  # (NS.NAME tables, namespaces)
    report_dir: Path | None
    part_size: int
    account_buckets: tuple[AccountBucket, ...] = ()


def parser() -> argparse.ArgumentParser:
    p = tool_parser(
        "backup", "Back up replica tables into the vault, incrementally (a point per snapshot).", epilog=EPILOG
    )
    vault = p.add_argument_group("vault (from --outputs, or named here for a local run)")
    vault.add_argument("--outputs", metavar="FILE", help="cdktf outputs JSON (make outputs): kit_vault and the replica")
    vault.add_argument("--vault-bucket", help="the vault's bucket")
    vault.add_argument("--vault-region", help="the vault's Region")
    vault.add_argument("--retention-days", type=int, help="the vault's Object Lock retention, in days")
    vault.add_argument("--storage-class", choices=VAULT_STORAGE_CLASSES, default="STANDARD", help="objects' class")
    vault.add_argument("--endpoint-url", dest="endpoint", help="S3 / S3 Tables endpoint (the local stand-in)")
    vault.add_argument("--point-key", metavar="ARN", help="the vault's point key (KMS HMAC), which MACs every point")
    rep = p.add_argument_group("replica (without --outputs)")
    rep.add_argument("--replica-warehouse", help="the replica's table bucket ARN, or a local warehouse")
    rep.add_argument("--replica-region", help="the replica's Region (AWS catalog modes)")
    rep.add_argument("--catalog-mode", choices=MODES, help="how Spark reads the replica: client (default), rest, ...")
    rep.add_argument(
        "--account-bucket",
        action="append",
        default=[],
        metavar="ARN|NAME=WAREHOUSE",
        help="also a vault account bucket (feeding_account): its table bucket ARN, or NAME=a local warehouse; "
        "its tables the selection names are backed up under its own layout segment; repeatable",
    )
    sel = p.add_argument_group("what (--table/--namespace, else the [vault] tables of --config)")
    sel.add_argument("--config", metavar="FILE", help="kit.toml: its [vault] tables, when no --table or --namespace")
    sel.add_argument("--table", action="append", default=[], metavar="NS.NAME", help="repeatable")
    sel.add_argument("--namespace", action="append", default=[], metavar="NS", help="every table of NS; repeatable")
    run_ = p.add_argument_group("run")
    run_.add_argument("--part-size-mb", type=int, default=64, metavar="MB", help="multipart above this size (>= 5)")
    run_.add_argument("--report", metavar="DIR", default="reports", help="DIR/<UTC time>-backup-<run id>/report.*")
    preflight.add_arguments(p)
    return p


def request_from_args(ns: argparse.Namespace) -> BackupRequest:
    """Validate the arguments into a request (pure apart from reading --outputs)."""
    chosen = (tuple(ns.table), tuple(ns.namespace))
    if not any(chosen) and ns.config:
        chosen = _configured(ns.config)
    if not any(chosen):
        raise ArgError("name what to back up: --table NS.NAME and/or --namespace NS, or [vault] tables in --config")
    if ns.part_size_mb < 5:
        raise ArgError("--part-size-mb must be at least 5 (S3's smallest multipart part)")
    tables = tuple(str(Ident.parse(t)) for t in chosen[0])
    if ns.outputs:
        if ns.replica_warehouse or ns.vault_bucket:
            raise ArgError("use either --outputs or --replica-warehouse/--vault-bucket, not both")
        replica, vault, arns = _from_outputs(ns.outputs, ns.catalog_mode or "client", ns.endpoint)
        vault = replace(vault, point_key=ns.point_key or vault.point_key)
        accounts = [*arns, *ns.account_bucket]
    else:
        if not (ns.replica_warehouse and ns.vault_bucket and ns.retention_days is not None):
            raise ArgError("pass --outputs FILE, or --replica-warehouse, --vault-bucket and --retention-days")
        if ns.retention_days < 1:
            raise ArgError("--retention-days must be at least 1")
        mode = ns.catalog_mode or ("client" if ns.replica_warehouse.startswith("arn:") else "hadoop")
        replica = CatalogSpec(CATALOG, mode, ns.replica_warehouse, region=ns.replica_region, endpoint=ns.endpoint)
        if replica.is_aws and not replica.region:
            raise ArgError("AWS catalog modes need --replica-region")
        vault = VaultTarget(
            ns.vault_bucket, ns.vault_region, ns.retention_days, ns.storage_class, ns.endpoint, ns.point_key
        )
        accounts = list(ns.account_bucket)
    if not vault.point_key:
        raise ArgError(
            "name the vault's point key: --point-key ARN (or kit_vault.point_key_arn in --outputs); a point a restore "
            "cannot verify is never written"
        )
    if replica.is_aws:
        replica = replace(replica, extra={"io-impl": RESOLVING_FILE_IO})
    selection = (tables, chosen[1])
    buckets = account_buckets(replica, accounts)
    return BackupRequest(replica, vault, selection, Path(ns.report), ns.part_size_mb * 1024 * 1024, buckets)


def account_buckets(replica: CatalogSpec, values: list[str]) -> tuple[AccountBucket, ...]:
    """Each `--account-bucket` (a table bucket ARN, or NAME=WAREHOUSE for a local one) as a catalog of its own, read
    as the replica is (its mode, Region and FileIO)."""
    out: list[AccountBucket] = []
    for i, value in enumerate(values):
        if value.startswith("arn:"):
            name, warehouse = value.rsplit("/", 1)[-1], value
        else:
            name, _, warehouse = value.partition("=")
        if not name or not warehouse or "/" in name or name in {b.bucket for b in out}:
            raise ArgError(f"--account-bucket {value!r}: a table bucket ARN, or NAME=WAREHOUSE, each bucket once")
        out.append(AccountBucket(name, replace(replica, name=f"{CATALOG}_account{i}", warehouse=warehouse)))
    return tuple(out)


def _configured(path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `[vault] tables` of a configuration file, as (tables, namespaces)."""
    from s3tables_kit.topology.config import ConfigError, load_config

    try:
        cfg = load_config(path)
    except ConfigError as e:
        raise ArgError(str(e)) from None
    if cfg.vault is None:
        raise ArgError(f"{path} has no [vault]")
    return cfg.vault.selection()


def _from_outputs(path: str, mode: str, endpoint: str | None) -> tuple[CatalogSpec, VaultTarget, list[str]]:
    """The recovery replica, the vault and the vault's account buckets (what the backup role reads beside the
    replica) of the infrastructure outputs."""
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    if mode not in ("client", "rest", "glue"):
        raise ArgError(f"--catalog-mode {mode}: --outputs describes AWS catalogs (client, rest or glue)")
    try:
        outputs = load_outputs(path)
    except OutputsError as e:
        raise ArgError(str(e)) from None
    v = outputs.vault
    if v is None:
        raise ArgError(f"{path} has no kit_vault output: the configuration has no [vault]")
    replica = replace(specs_from_outputs(outputs, mode, CATALOG)[0], endpoint=endpoint)
    target = VaultTarget(v.bucket_name, v.region, v.retention_days, v.storage_class, endpoint, v.point_key_arn)
    return replica, target, list(outputs.recovery.vault_account_table_bucket_arns)


def run(
    req: BackupRequest,
    spark_factory: Callable[[dict[str, str]], SparkSession],
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> tuple[int, list[TableBackup]]:
    """Back up every selected table in turn; progress on `err`, the summary on `out`. (exit code, rows)."""
    out, err = out or sys.stdout, err or sys.stderr
    run_id = uuid.uuid4().hex[:12]
    started = datetime.now(UTC)

    def say(msg: str) -> None:
        print(f"[backup {time.strftime('%H:%M:%S')}] {msg}", file=err, flush=True)

    conf = catalog_conf(req.replica)
    for b in req.account_buckets:
        conf.update(catalog_conf(b.catalog))
    spark = spark_factory(conf)
    tables = list(req.selection[0])
    for ns in req.selection[1]:
        tables += [t for t in list_tables(spark, req.replica.name, ns) if t not in tables]
    say(f"run {run_id}: {len(tables)} table(s) -> s3://{req.vault.bucket} (retention {req.vault.retention_days} days)")
    ctx = BackupContext(spark, req.replica.name, req.replica.warehouse, req.vault, run_id, say, req.part_size)
    rows = [backup_table(ctx, t) for t in tables]
    for b in req.account_buckets:  # the same selection, of what each account bucket holds, under its own segment
        held = selected_in(spark, b.catalog.name, req.selection)
        say(f"account bucket {b.bucket}: {len(held)} table(s)")
        actx = replace(ctx, catalog=b.catalog.name, source=b.catalog.warehouse, bucket=b.bucket)
        rows += [replace(backup_table(actx, t), table=f"{b.bucket}:{t}") for t in held]
    print(summary_text(rows), file=out)
    if req.report_dir is not None:
        header = {
            "run_id": run_id,
            "started": started.isoformat(timespec="seconds"),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "replica": req.replica.warehouse,
            "vault": f"s3://{req.vault.bucket}",
            "retention_days": req.vault.retention_days,
            "storage_class": req.vault.storage_class,
        }
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
        path = write_reports(req.report_dir / f"{stamp}-backup-{run_id}", rows, header)
        say(f"report: {path}")
    return exit_code(rows), rows


def selected_in(spark: SparkSession, catalog: str, selection: tuple[tuple[str, ...], tuple[str, ...]]) -> list[str]:
    """The tables of an account bucket the selection names: a named table where the bucket has it, every table of a
    named namespace (a namespace it lacks: none). Another account's lake need not hold what the replica holds."""
    tables, namespaces = selection
    present = {str(r[0]) for r in spark.sql(f"SHOW NAMESPACES IN {catalog}").collect()}
    out: list[str] = []
    for ns in dict.fromkeys([*namespaces, *(t.rpartition(".")[0] for t in tables)]):
        if ns in present:
            out += [t for t in list_tables(spark, catalog, ns) if (ns in namespaces or t in tables) and t not in out]
    return out


def _emr_client(ns: argparse.Namespace, req: BackupRequest) -> Any:
    """The application's EMR Serverless client: in the recovery account and Region, the replica's."""
    from s3tables_kit.jobs.kernel.sdk import client

    return client("emr-serverless", region=req.replica.region, endpoint_url=ns.endpoint)


def local_spark_factory(conf: dict[str, str]) -> SparkSession:
    from s3tables_kit.jobs.spark import build_session

    return build_session(conf, app_name="kit-backup")


def main(argv: list[str] | None = None, spark_factory: Callable[[dict[str, str]], SparkSession] | None = None) -> int:
    """Exit 0 when every table has its point, 1 when some table failed, 2 for bad arguments (before a JVM)."""
    ns = parser().parse_args(argv)
    try:
        req = request_from_args(ns)
        if preflight.refused(ns, lambda: _emr_client(ns, req), sys.stderr):
            return 1  # a FAILED job run: the backup's liveness alarm (AWS/EMRServerless)
        return run(req, spark_factory or local_spark_factory)[0]
    except JobError as e:  # bad arguments, or the pinned jars a local session needs (one line, before a JVM)
        return refuse(e)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
