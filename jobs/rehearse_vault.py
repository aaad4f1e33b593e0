"""The rehearsal's restore from the backup vault: each rehearsed table the vault backs up (`[vault] tables`) is also
restored from its newest backup point, through the path of `recover --from-vault`
(`s3tables_kit.jobs.recover.cli.from_point`: the point's restore metadata, the verified file copy, every file checked
against the point's manifest), into the rehearsal namespace as `<name>_vault`, and reported as a row of its own
(`source: vault`).

A failed restore fails the rehearsal. A table without a backup point yet is a finding, not a failure: the vault's
backup age and its alarm are what say a backup is missing or late (docs/assurance.md); the rehearsal proves that what
the vault holds restores.

The pure parts (which tables, the verdict, the metrics) are apart from `restore_newest`, the one Spark step.
"""

from __future__ import annotations

import fnmatch
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.recover.job import RecoveryRequest, run
from s3tables_kit.jobs.vault.layout import choose_point
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.reader import VaultReader, list_points
from s3tables_kit.topology.contract import VAULT_POINTS_REFUSED

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

SOURCE = "vault"
SUFFIX = "_vault"  # the restored table's name in the rehearsal namespace, beside the replica's recovery
NO_POINT = "no backup point in the vault yet"
# Names of the metrics the rehearsal adds with a vault (beside RehearsalSucceeded and the others, which keep theirs).
VAULT_TABLES_METRIC, VAULT_SECONDS_METRIC = "RehearsalVaultTables", "RehearsedVaultRestoreSeconds"
REFUSED_METRIC = VAULT_POINTS_REFUSED


@dataclass(frozen=True)
class VaultSide:
    """Where the rehearsal restores from: the vault (`s3://bucket` or a local directory) and the `[vault] tables`
    patterns (`namespace.name` or `namespace.*`)."""

    root: str
    region: str | None
    tables: tuple[str, ...]
    endpoint: str | None = None
    point_key: str | None = None  # the vault's point key ARN (kit_vault.point_key_arn), which verifies every point


@dataclass
class VaultRow:
    """One table's restore from the vault: the point restored, the recovery's verdict and exit code, how long."""

    table: str
    source: str = SOURCE
    snapshot_id: int | None = None  # the point restored, and when it was backed up
    backed_up_at: str | None = None
    target: str | None = None  # the restored table, dropped after the rehearsal
    verdict: str | None = None  # the recovery's, as for a replica: verified, failed, refused
    exit_code: int | None = None
    seconds: float = 0.0
    finding: str | None = None  # nothing to restore yet (no point): reported, not a failure
    refused: list[str] = field(default_factory=list)  # point objects skipped (forged, malformed, future-dated)
    error: str | None = None
    report: str | None = None  # the recovery's report of this restore

    @property
    def verified(self) -> bool:
        return self.error is None and self.exit_code == 0 and self.verdict == "verified"

    @property
    def ok(self) -> bool:
        """Verified, or nothing to restore yet (a finding)."""
        return self.verified or (self.finding is not None and self.error is None)


def backed_up(tables: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """The rehearsed `tables` the vault backs up (`patterns`: `namespace.name` or `namespace.*`), in their order."""
    return [t for t in tables if any(fnmatch.fnmatchcase(t, p) for p in patterns)]


def vault_ok(rows: Sequence[VaultRow]) -> bool:
    return all(r.ok for r in rows)


def vault_metrics(rows: Sequence[VaultRow]) -> dict[str, tuple[float, str]]:
    """{metric name: (value, unit)}: the restores verified and their time; nothing when no table was in the vault."""
    if not rows:
        return {}
    return {
        VAULT_TABLES_METRIC: (float(sum(r.verified for r in rows)), "Count"),
        VAULT_SECONDS_METRIC: (round(sum(r.seconds for r in rows), 3), "Seconds"),
        REFUSED_METRIC: (float(sum(len(r.refused) for r in rows)), "Count"),
    }


def render_rows(rows: Sequence[VaultRow]) -> list[str]:
    out = []
    for r in rows:
        out += [f"  vault:              {r.table}: FINDING: {line}" for line in r.refused]
        if r.finding is not None and r.error is None:
            out.append(f"  vault:              {r.table}: FINDING: {r.finding}")
            continue
        point = f"point {r.snapshot_id} backed up at {r.backed_up_at}" if r.snapshot_id is not None else "no point"
        state = r.verdict or "failed"
        out.append(f"  vault:              {r.table}: {state} ({point}, {r.seconds:.1f} s)")
        if r.error:
            out.append(f"    error: {r.error}")
    return out


def rehearse_vault(
    side: VaultSide,
    tables: Sequence[str],
    *,
    target: CatalogSpec,
    namespace: str,
    spark: SparkSession,
    report_dir: Path,
) -> list[VaultRow]:
    """Restore each of `tables` the vault backs up from its newest point; never raises (a row says what happened)."""
    rows = []
    for table in backed_up(tables, side.tables):
        t0 = time.monotonic()
        row = VaultRow(table)
        try:
            restore_newest(row, side, target=target, namespace=namespace, spark=spark, report_dir=report_dir)
        except Exception as exc:  # a rehearsal reports every failure as a failed row
            row.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:500] if str(exc) else ''}"
        row.seconds = time.monotonic() - t0
        rows.append(row)
    return rows


def restore_newest(
    row: VaultRow, side: VaultSide, *, target: CatalogSpec, namespace: str, spark: SparkSession, report_dir: Path
) -> None:
    """The Spark step: `row.table`'s newest backup point restored as `recover --from-vault` restores it."""
    from s3tables_kit.jobs.recover.cli import from_point
    from s3tables_kit.jobs.recover.fromvault import open_point

    ident = Ident.parse(row.table)
    key = PointKey(side.point_key, side.region, side.endpoint) if side.point_key else None
    store = VaultReader(side.root, side.region, side.endpoint, point_key=key)
    scan = list_points(store, ident.namespace, ident.name)
    row.refused = scan.findings()
    point = choose_point(scan.points)
    if point is None:
        row.finding = NO_POINT
        return
    row.snapshot_id, row.backed_up_at = point.snapshot_id, point.backed_up_at
    with tempfile.TemporaryDirectory(prefix="kit-rehearsal-vault-") as work:
        restore = open_point(store, point, Path(work), scan.refused)
        req = RecoveryRequest(
            replica=restore.catalog(),
            target=target,
            tables=[ident],
            selector=Selector(snapshot_id=point.snapshot_id),
            target_namespace=namespace,
            suffix=SUFFIX,
            report_dir=report_dir / SOURCE,
        )
        outcome = run(from_point(req, restore), lambda conf: spark)
    row.exit_code = outcome.exit_code
    row.report = str(outcome.report) if outcome.report else None
    found = [r for r in outcome.results if r.replica_table == row.table]
    if found:
        row.verdict, row.target = found[0].verdict, found[0].target_table
    if not row.verified:
        message = found[0].message if found and found[0].message else None
        row.error = message or f"the restore ended with exit code {outcome.exit_code}"


def row_json(row: VaultRow) -> dict[str, Any]:
    return asdict(row) | {"ok": row.ok}
