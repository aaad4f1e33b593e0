"""Iceberg tables as the jobs read them: a metadata file (format v1, v2 or v3) parsed into frozen dataclasses
(`table_info_from_metadata`: pure, no I/O, no Spark), so that planners and reports are tested with hand-written
metadata. Recovery copies one `Snapshot`; failover promotes one and reports its age."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from s3tables_kit.jobs.kernel.idents import Ident

# How far a writer's clock may run ahead of the service's, or a snapshot log step back, before a time is not trusted:
# Iceberg's own metadata builder allows one minute (TableMetadata.ONE_MINUTE) and refuses a log that goes back further.
CLOCK_SKEW_MS = 60_000


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    timestamp_ms: int
    schema_id: int | None = None
    parent_id: int | None = None
    summary: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    manifest_list: str | None = field(default=None, compare=False)

    @property
    def committed_at(self) -> str:
        return iso_ms(self.timestamp_ms)

    def _int(self, key: str) -> int | None:
        v = self.summary.get(key)
        return int(v) if v is not None and v.lstrip("-").isdigit() else None

    @property
    def total_records(self) -> int | None:
        return self._int("total-records")

    @property
    def deleted_records(self) -> int:
        return (self._int("total-position-deletes") or 0) + (self._int("total-equality-deletes") or 0)

    @property
    def data_files(self) -> int | None:
        return self._int("total-data-files")

    @property
    def delete_files(self) -> int:
        return self._int("total-delete-files") or 0

    @property
    def total_bytes(self) -> int | None:
        return self._int("total-files-size")

    def describe(self) -> str:
        return f"{self.snapshot_id} at {self.committed_at}"


@dataclass(frozen=True)
class IcebergColumn:
    """A schema field; `type` is the Iceberg type as in the metadata file (a string or a nested dict)."""

    field_id: int
    name: str
    type: Any = field(hash=False)
    required: bool = False
    doc: str | None = None


@dataclass(frozen=True)
class IcebergPartitionField:
    source_id: int
    transform: str
    name: str


@dataclass(frozen=True)
class SortField:
    source_id: int
    transform: str
    direction: str  # asc | desc
    null_order: str  # nulls-first | nulls-last


@dataclass(frozen=True)
class TableInfo:
    ident: Ident
    location: str
    format_version: int
    current_snapshot_id: int | None
    snapshots: tuple[Snapshot, ...]
    snapshot_log: tuple[tuple[int, int], ...]  # (timestamp_ms, snapshot_id), oldest first
    schemas: dict[int, tuple[IcebergColumn, ...]] = field(hash=False)
    current_schema_id: int
    partition_spec: tuple[IcebergPartitionField, ...]
    sort_order: tuple[SortField, ...]
    properties: dict[str, str] = field(hash=False)
    metadata_location: str | None = None
    source_table_arn: str | None = None
    # Every partition spec by id, void fields included (a byte copy needs the specs the files were written with).
    specs: dict[int, tuple[IcebergPartitionField, ...]] = field(default_factory=dict, hash=False)
    default_spec_id: int = 0
    statistics_snapshots: frozenset[int] = frozenset()  # snapshots with a table statistics (Puffin) file
    partition_statistics_snapshots: frozenset[int] = frozenset()
    metadata_log: tuple[tuple[int, str], ...] = ()  # (timestamp_ms, metadata file), oldest first
    last_updated_ms: int | None = None

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        for s in self.snapshots:
            if s.snapshot_id == snapshot_id:
                return s
        return None

    def schema_at(self, snap: Snapshot) -> tuple[IcebergColumn, ...]:
        if snap.schema_id is not None and snap.schema_id in self.schemas:
            return self.schemas[snap.schema_id]
        # v1 tables written by old engines lack schema-id on snapshots: Iceberg then reads with the current schema.
        return self.schemas[self.current_schema_id]


def _columns(fields: list[dict[str, Any]]) -> tuple[IcebergColumn, ...]:
    return tuple(
        IcebergColumn(
            field_id=int(f["id"]),
            name=str(f["name"]),
            type=f["type"],
            required=bool(f.get("required", False)),
            doc=f.get("doc"),
        )
        for f in fields
    )


def table_info_from_metadata(
    ident: Ident,
    doc: dict[str, Any],
    metadata_location: str | None = None,
    source_table_arn: str | None = None,
) -> TableInfo:
    """Build a `TableInfo` from a parsed Iceberg metadata JSON document (v1, v2 or v3)."""
    fmt = int(doc.get("format-version", 1))
    if "schemas" in doc:
        schemas = {int(s.get("schema-id", 0)): _columns(s["fields"]) for s in doc["schemas"]}
        current_schema_id = int(doc.get("current-schema-id", 0))
    else:  # v1 with a single schema
        schemas = {0: _columns(doc["schema"]["fields"])}
        current_schema_id = 0
    if "partition-specs" in doc:
        default_spec = int(doc.get("default-spec-id", 0))
        spec_fields = next(s["fields"] for s in doc["partition-specs"] if int(s["spec-id"]) == default_spec)
    else:
        spec_fields = doc.get("partition-spec", [])
    spec = tuple(
        IcebergPartitionField(int(f["source-id"]), str(f["transform"]), str(f["name"]))
        for f in spec_fields
        if str(f["transform"]) != "void"
    )
    if "partition-specs" in doc:
        specs = {
            int(s["spec-id"]): tuple(
                IcebergPartitionField(int(f["source-id"]), str(f["transform"]), str(f["name"])) for f in s["fields"]
            )
            for s in doc["partition-specs"]
        }
        default_spec_id = int(doc.get("default-spec-id", 0))
    else:
        specs = {
            0: tuple(
                IcebergPartitionField(int(f["source-id"]), str(f["transform"]), str(f["name"])) for f in spec_fields
            )
        }
        default_spec_id = 0
    order_id = int(doc.get("default-sort-order-id", 0))
    sort_fields: list[dict[str, Any]] = next(
        (o["fields"] for o in doc.get("sort-orders", []) if int(o["order-id"]) == order_id), []
    )
    sort = tuple(
        SortField(int(f["source-id"]), str(f["transform"]), str(f["direction"]), str(f["null-order"]))
        for f in sort_fields
    )
    snaps = tuple(
        sorted(
            (
                Snapshot(
                    snapshot_id=int(s["snapshot-id"]),
                    timestamp_ms=int(s["timestamp-ms"]),
                    schema_id=int(s["schema-id"]) if s.get("schema-id") is not None else None,
                    parent_id=int(s["parent-snapshot-id"]) if s.get("parent-snapshot-id") is not None else None,
                    summary={str(k): str(v) for k, v in (s.get("summary") or {}).items()},
                    manifest_list=str(s["manifest-list"]) if s.get("manifest-list") else None,
                )
                for s in doc.get("snapshots", [])
            ),
            key=lambda s: (s.timestamp_ms, s.snapshot_id),
        )
    )
    log = tuple((int(e["timestamp-ms"]), int(e["snapshot-id"])) for e in doc.get("snapshot-log", []))
    current = doc.get("current-snapshot-id")
    current_id = int(current) if current is not None and int(current) != -1 else None
    return TableInfo(
        ident=ident,
        location=str(doc["location"]),
        format_version=fmt,
        current_snapshot_id=current_id,
        snapshots=snaps,
        snapshot_log=log,
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_spec=spec,
        sort_order=sort,
        properties={str(k): str(v) for k, v in (doc.get("properties") or {}).items()},
        metadata_location=metadata_location,
        source_table_arn=source_table_arn,
        specs=specs,
        default_spec_id=default_spec_id,
        statistics_snapshots=frozenset(int(x["snapshot-id"]) for x in doc.get("statistics") or []),
        partition_statistics_snapshots=frozenset(int(x["snapshot-id"]) for x in doc.get("partition-statistics") or []),
        metadata_log=tuple((int(e["timestamp-ms"]), str(e["metadata-file"])) for e in doc.get("metadata-log") or []),
        last_updated_ms=int(doc["last-updated-ms"]) if doc.get("last-updated-ms") is not None else None,
    )
