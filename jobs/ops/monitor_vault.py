"""The backup vault seen by the replication monitor (`[vault]`, docs/decisions/0034-backup-vault.md): each table's
last backup age and the vault's oldest backup point, from the keys of the committed points.

A point manifest (`points/<snapshot id>.json`, `jobs/vault/layout.py`) is written last and never again
(`If-None-Match: *`), so its object's LastModified is the point's commit time: listing `points/` answers both
questions without reading a manifest (one lists every file of its point: megabytes for a large table) and without
the vault key (ListObjectsV2 decrypts nothing). The monitor needs only `s3:ListBucket` on the vault bucket.

| metric | dimensions | meaning |
|---|---|---|
| `BackupAgeSeconds` | Kit | seconds since the newest point of the table whose newest point is oldest (the alarm's) |
| `BackupAgeSeconds` | Kit, Table | seconds since the table's newest point (first `max_table_metrics` tables) |
| `OldestBackupPointAgeSeconds` | Kit | seconds since the vault's oldest point: how far back a restore reaches |
| `TablesWithoutBackupPoint` | Kit | selected tables with no point (with a selection only) |

A table is `namespace.name`; the points of every incarnation (table UUID) of one name count as that table's. An
unreadable vault stops the heartbeat.

A table `[vault] tables` selects (`ENV_VAULT_TABLES`; a source table the monitor lists, matched by name or namespace)
that has no point yet is as late as it is old: its `BackupAgeSeconds` is the seconds since the table's creation
(ListTables' `createdAt`), so the backup age alarm fires once it has gone `max_backup_age_hours` without a point, and a
table created after it was selected gets the whole budget for its first backup. `TablesWithoutBackupPoint` (Kit)
counts them whatever their age. A table that no source lists is not this monitor's to report.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from s3tables_kit.jobs.vault.layout import LAYOUT_VERSION, snapshot_of_point_key
from s3tables_kit.topology.contract import BACKUP_AGE, OLDEST_BACKUP_POINT_AGE, TABLES_WITHOUT_BACKUP_POINT


class PointSeen(NamedTuple):
    """One committed backup point as the vault lists it: its table (`namespace.name`) and its commit time."""

    table: str
    snapshot_id: int
    committed: datetime


@dataclass(frozen=True)
class BackupAges:
    """Seconds since each table's newest point, and since the vault's oldest point (None: the vault has none).
    `unbacked`: with a selection, each selected table without a point and the seconds since its creation (None:
    unknown); `selection`: a selection was given."""

    last_backup: dict[str, float]
    oldest_point: float | None
    unbacked: dict[str, float | None] = field(default_factory=dict)
    selection: bool = False

    @property
    def table_ages(self) -> dict[str, float]:
        """Each table's backup age: since its newest point, or since its creation for a selected one without any."""
        late = {t: age for t, age in self.unbacked.items() if age is not None}
        return dict(sorted((self.last_backup | late).items()))

    @property
    def stalest(self) -> float | None:
        return max(self.table_ages.values(), default=None)


def selected_tables(tables: Mapping[str, datetime | None], selectors: Iterable[str]) -> dict[str, datetime | None]:
    """The tables of `tables` ({namespace.name: created at}) that `[vault] tables` names: "ns.name" or "ns.*"."""
    chosen = set(selectors)
    return {t: at for t, at in sorted(tables.items()) if t in chosen or f"{t.split('.', 1)[0]}.*" in chosen}


def backup_ages(
    points: Iterable[PointSeen], now: datetime, selected: Mapping[str, datetime | None] | None = None
) -> BackupAges:
    """Each table's last backup age and the vault's oldest point age at `now` (pure); with `selected`
    (`selected_tables`), the age since creation of each selected table without a point."""
    newest: dict[str, datetime] = {}
    oldest: datetime | None = None
    for p in points:
        if p.table not in newest or p.committed > newest[p.table]:
            newest[p.table] = p.committed
        oldest = p.committed if oldest is None or p.committed < oldest else oldest
    unbacked = {
        t: None if at is None else max(0.0, (now - at).total_seconds())
        for t, at in (selected or {}).items()
        if t not in newest
    }
    return BackupAges(
        {t: max(0.0, (now - at).total_seconds()) for t, at in sorted(newest.items())},
        None if oldest is None else max(0.0, (now - oldest).total_seconds()),
        unbacked,
        selected is not None,
    )


def _children(s3: Any, bucket: str, prefix: str) -> Iterator[str]:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, Delimiter="/"):
        for common in page.get("CommonPrefixes", []):
            yield str(common["Prefix"])


def list_points(s3: Any, bucket: str) -> list[PointSeen]:
    """Every committed point of the vault `bucket`: `v1/tables/<namespace>/<table>/<uuid>/points/` of each table,
    walked by delimiter so no file under `files/` or `restorable/` is listed."""
    out: list[PointSeen] = []
    for ns in _children(s3, bucket, f"{LAYOUT_VERSION}/tables/"):
        for table in _children(s3, bucket, ns):
            name = ".".join(table.rstrip("/").split("/")[-2:])
            for incarnation in _children(s3, bucket, table):
                pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{incarnation}points/")
                for obj in (o for page in pages for o in page.get("Contents", [])):
                    sid = snapshot_of_point_key(str(obj["Key"]))
                    if sid is not None:
                        out.append(PointSeen(name, sid, obj["LastModified"]))
    return out


def vault_metric_data(ages: BackupAges, *, kit: str, max_table_metrics: int, ts: datetime) -> list[dict[str, Any]]:
    """The vault's data of one run (see the module's table); none for an empty vault without a selection."""
    kit_dim = [{"Name": "Kit", "Value": kit}]
    data: list[dict[str, Any]] = []

    def datum(name: str, value: float, dims: list[dict[str, str]], unit: str = "Seconds") -> None:
        data.append({"MetricName": name, "Dimensions": dims, "Value": value, "Unit": unit, "Timestamp": ts})

    if ages.stalest is not None:
        datum(BACKUP_AGE, ages.stalest, kit_dim)
    for table, age in list(ages.table_ages.items())[:max_table_metrics]:
        datum(BACKUP_AGE, age, [*kit_dim, {"Name": "Table", "Value": table}])
    if ages.oldest_point is not None:
        datum(OLDEST_BACKUP_POINT_AGE, ages.oldest_point, kit_dim)
    if ages.selection:
        datum(TABLES_WITHOUT_BACKUP_POINT, len(ages.unbacked), kit_dim, "Count")
    return data
