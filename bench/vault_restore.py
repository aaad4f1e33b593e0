"""Restore from the vault vs a recovery from the replica of the same table, in the same interleaved rounds
(`bench.recovery.measure_rounds`): one backup point of `replica.bench.orders` in a local vault directory (the
layout's files and rewritten metadata, `harness.vault_points`), restored by the kit's file copy each round."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
    from s3tables_kit.jobs.vault.layout import BackupPoint

ORDERS = "bench.orders"


def backup_orders(spark: SparkSession, replica_wh: Path, vault: Path) -> BackupPoint:
    """The current snapshot of the replica's orders table (catalog `replica`) as a backup point in `vault`."""
    from harness.vault_points import backup_point, local_put
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.jobs.vault.reader import VaultReader

    vault.mkdir(parents=True, exist_ok=True)
    uri = VaultReader(str(vault)).root
    return backup_point(spark, "replica", replica_wh, Ident.parse(ORDERS), uri, local_put(vault), set())


def restore_in_session(
    spark: SparkSession, vault: Path, point: BackupPoint, target: CatalogSpec, report: Path, target_namespace: str
) -> Any:
    """`recover --from-vault --snapshot-id <point>` into `target` on the bench's session (its log beside the report
    directory); its TableResult, refused unless verified."""
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.jobs.kernel.selectors import Selector
    from s3tables_kit.jobs.recover.fromvault import open_point
    from s3tables_kit.jobs.recover.job import RecoveryRequest, run
    from s3tables_kit.jobs.recover.modes import CopyMode
    from s3tables_kit.jobs.vault.reader import VaultReader

    with tempfile.TemporaryDirectory(prefix="bench-vault-") as d:
        restore = open_point(VaultReader(str(vault)), point, Path(d))
        req = RecoveryRequest(
            replica=restore.catalog(), target=target, tables=[Ident.parse(ORDERS)],
            selector=Selector(snapshot_id=point.snapshot_id), target_namespace=target_namespace, report_dir=report,
            parallelism=1, copy_mode=CopyMode.FILES, vault=restore, batch=False,
        )  # fmt: skip
        report.parent.mkdir(parents=True, exist_ok=True)
        with report.with_suffix(".log").open("w") as out:
            outcome = run(req, lambda conf: spark, out=out, err=out)
    if outcome.exit_code != 0 or not outcome.results or outcome.results[0].verdict != "verified":
        raise RuntimeError(f"kit restore from the vault failed: {[r.as_dict() for r in outcome.results]}")
    return outcome.results[0]
