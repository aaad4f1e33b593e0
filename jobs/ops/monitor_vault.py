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

A table is `namespace.name`; the points of every incarnation (table UUID) of one name count as that table's. A vault
without any point publishes no age (nothing is known to be late); an unreadable vault stops the heartbeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from s3tables_kit.jobs.vault.layout import LAYOUT_VERSION, snapshot_of_point_key
from s3tables_kit.topology.contract import BACKUP_AGE, OLDEST_BACKUP_POINT_AGE


class PointSeen(NamedTuple):
    """One committed backup point as the vault lists it: its table (`namespace.name`) and its commit time."""

    table: str
    snapshot_id: int
    committed: datetime


@dataclass(frozen=True)
class BackupAges:
    """Seconds since each table's newest point, and since the vault's oldest point (None: the vault has none)."""

    last_backup: dict[str, float]
    oldest_point: float | None

    @property
    def stalest(self) -> float | None:
        return max(self.last_backup.values()) if self.last_backup else None


def backup_ages(points: Iterable[PointSeen], now: datetime) -> BackupAges:
    """Each table's last backup age and the vault's oldest point age at `now` (pure)."""
    newest: dict[str, datetime] = {}
    oldest: datetime | None = None
    for p in points:
        if p.table not in newest or p.committed > newest[p.table]:
            newest[p.table] = p.committed
        oldest = p.committed if oldest is None or p.committed < oldest else oldest
    return BackupAges(
        {t: max(0.0, (now - at).total_seconds()) for t, at in sorted(newest.items())},
        None if oldest is None else max(0.0, (now - oldest).total_seconds()),
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
    """The vault's data of one run (see the module's table); none for an empty vault."""
    kit_dim = [{"Name": "Kit", "Value": kit}]
    data: list[dict[str, Any]] = []

    def datum(name: str, value: float, dims: list[dict[str, str]]) -> None:
        data.append({"MetricName": name, "Dimensions": dims, "Value": value, "Unit": "Seconds", "Timestamp": ts})

    if ages.stalest is not None:
        datum(BACKUP_AGE, ages.stalest, kit_dim)
    for table in sorted(ages.last_backup)[:max_table_metrics]:
        datum(BACKUP_AGE, ages.last_backup[table], [*kit_dim, {"Name": "Table", "Value": table}])
    if ages.oldest_point is not None:
        datum(OLDEST_BACKUP_POINT_AGE, ages.oldest_point, kit_dim)
    return data
