"""The vault's object layout and its backup manifest: the one contract between the backup job and a restore from the
vault (docs/decisions/0034-backup-vault.md). Pure functions, no I/O.

    v1/tables/<namespace>/<table>/<table-uuid>/files/<path relative to the table location>
    v1/tables/<namespace>/<table>/<table-uuid>/restorable/<snapshot id>/<run id>/...  (the point's rewritten metadata)
    v1/tables/<namespace>/<table>/<table-uuid>/points/<snapshot id>.json     (the commit point, written last)
    v1/tables/bucket=<table bucket>/<namespace>/<table>/<table-uuid>/...       (a vault account bucket's tables)

The `bucket=` segment keeps two feeding accounts' tables of one name apart (each account's bucket of a shared vault,
docs/decisions/0035-fan-in-by-account-namespaces.md); `[recovery] replica`'s own tables have none, so the points
written before it stay where they are (a namespace cannot contain `=`, so the two never meet).

A file key is derived from the file's path relative to the table location, so a file Iceberg never rewrites under the
same name is held once, whichever point refers to it; the table UUID keeps a dropped and re-created table apart.
The original metadata is kept byte for byte under `files/`; its paths name the replica, so each point also gets a copy
of its metadata, trimmed to the point's snapshot and rewritten with Iceberg's RewriteTablePath utilities to the
location `restorable/<snapshot id>/<run id>/` (the restore location), which a restore loads as a table. The rewrite
maps one location prefix to one other: the rewritten manifests cannot share names with the originals under `files/`,
so the restore location is a table location of its own that holds the rewritten metadata (metadata files, manifest
lists, manifests), while every other file it names, `<restore location>/<relative path>`, is held once under
`files/<relative path>` (`BackupPoint.content_key`).
Position-delete files are kept only as the originals: their rows name data files under `table_location` (the
replica's), which a restore rewrites to its own location as the recovery's file copy does. The run id keeps two runs
of one snapshot apart: rewritten Avro files differ byte for byte from run to run, and only the run whose point is
written is listed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

LAYOUT_VERSION = "v1"
POINT_FORMAT = 2  # 2: every file's S3 version id and the point's MAC (format 1 points are refused as unauthenticated)
BUCKET_SEGMENT = "bucket="  # the segment of an account bucket's tables; a namespace cannot contain `=`
_POINT_KEY_RE = re.compile(
    rf"^{LAYOUT_VERSION}/tables/(?:{BUCKET_SEGMENT}[^/]+/)?[^/]+/[^/]+/[^/]+/points/(-?[0-9]+)\.json$"
)
FILE_KINDS = (
    "data",
    "position-deletes",
    "equality-deletes",
    "manifest",
    "manifest-list",
    "metadata",
    "statistics",
    "restorable",  # under restorable/<snapshot id>/: the point's metadata rewritten to the vault's paths
)


class LayoutError(ValueError):
    """A key, path or point manifest that does not fit the layout (names the field and the rule)."""


def _segment(name: str, field: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise LayoutError(f"{field} {name!r} must be a non-empty name without '/'")
    return name


def _namespace(name: str) -> str:
    if name.startswith(BUCKET_SEGMENT):  # S3 Tables refuses `=`; a point naming one would pose as a bucket's
        raise LayoutError(f"namespace {name!r} must not start with {BUCKET_SEGMENT!r}")
    return _segment(name, "namespace")


def _tables_root(bucket: str) -> str:
    """`v1/tables/`, or for an account bucket of the vault `v1/tables/bucket=<bucket>/` ("": `[recovery] replica`)."""
    return f"{LAYOUT_VERSION}/tables/" + (f"{BUCKET_SEGMENT}{_segment(bucket, 'bucket')}/" if bucket else "")


def table_prefix(namespace: str, table: str, table_uuid: str, bucket: str = "") -> str:
    """Every object of one table incarnation lives under this prefix (`bucket`: an account bucket's segment)."""
    parts = (_namespace(namespace), _segment(table, "table"), _segment(table_uuid, "table_uuid"))
    return f"{_tables_root(bucket)}{parts[0]}/{parts[1]}/{parts[2]}/"


def tables_prefix(namespace: str, table: str, bucket: str = "") -> str:
    """The prefix of every incarnation (table UUID) of one table name, in one replica bucket's part of the vault."""
    return f"{_tables_root(bucket)}{_namespace(namespace)}/{_segment(table, 'table')}/"


def relative_path(table_location: str, file_path: str) -> str:
    """A file's path relative to its table's location; a file outside the location has no place in the layout."""
    base = table_location.rstrip("/") + "/"
    if not file_path.startswith(base) or len(file_path) == len(base):
        raise LayoutError(f"file {file_path!r} is not under the table location {table_location!r}")
    rel = file_path[len(base) :]
    if any(p in ("", ".", "..") for p in rel.split("/")):
        raise LayoutError(f"file {file_path!r} has an empty, '.' or '..' segment below the table location")
    return rel


def file_key(prefix: str, relative: str) -> str:
    return f"{prefix}files/{relative}"


def restorable_prefix(prefix: str, snapshot_id: int) -> str:
    return f"{prefix}restorable/{snapshot_id}/"


def restore_location(prefix: str, snapshot_id: int, run_id: str) -> str:
    """The key prefix (no trailing slash) a run rewrites the point's metadata to: a table location of its own."""
    return f"{restorable_prefix(prefix, snapshot_id)}{_segment(run_id, 'run_id')}"


def points_prefix(prefix: str) -> str:
    return f"{prefix}points/"


def point_key(prefix: str, snapshot_id: int) -> str:
    return f"{points_prefix(prefix)}{snapshot_id}.json"


def snapshot_of_point_key(key: str) -> int | None:
    """The snapshot id a `points/<id>.json` key names, or None for any other key."""
    m = _POINT_KEY_RE.match(key)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class BackupFile:
    """One file of a backup point: what it is, its size, the CRC32 of its bytes and the S3 version id of the object
    as the vault holds them (a restore reads that version; "" in a local directory, which has no versions).
    `relative` is the path relative to the table location (kept under `files/`), or for kind `restorable` the key
    relative to the table prefix (`restorable/<snapshot id>/...`)."""

    relative: str
    kind: str
    size: int
    crc32: int
    version: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FILE_KINDS:
            raise LayoutError(f"file kind {self.kind!r} must be one of {', '.join(FILE_KINDS)}")
        if self.size < 0 or not 0 <= self.crc32 <= 0xFFFFFFFF:
            raise LayoutError(f"file {self.relative!r}: size must be >= 0 and crc32 a 32-bit value")

    def key(self, prefix: str) -> str:
        """The file's object key in the vault, under the table prefix `prefix`."""
        return f"{prefix}{self.relative}" if self.kind == "restorable" else file_key(prefix, self.relative)


@dataclass(frozen=True)
class BackupPoint:
    """The backup manifest of one snapshot: complete once its object exists (it is written after every file)."""

    namespace: str
    table: str
    table_uuid: str
    snapshot_id: int
    snapshot_timestamp_ms: int  # the snapshot's commit time, what "as of" selects on
    metadata: str  # relative path (under files/) of the original metadata file holding this snapshot as current
    restore_metadata: str  # key relative to the table prefix of the rewritten metadata file a restore loads
    table_location: str  # the replica's location when backed up (informational: restores write elsewhere)
    source: str  # the replica table's ARN (or local path) it was read from
    backed_up_at: str  # ISO 8601 UTC
    files: tuple[BackupFile, ...]
    bucket: str = ""  # the vault account bucket it was read from, its layout segment ("": `[recovery] replica`)
    mac: str = field(default="", compare=False)  # base64 HMAC of `canonical()` with the vault's point key

    @property
    def backed_up_ms(self) -> int:
        """`backed_up_at` in epoch milliseconds (a LayoutError when it is not an ISO 8601 time with a zone)."""
        try:
            ts = datetime.fromisoformat(self.backed_up_at)
        except ValueError:
            raise LayoutError(f"backed_up_at {self.backed_up_at!r} is not an ISO 8601 time") from None
        if ts.tzinfo is None:
            raise LayoutError(f"backed_up_at {self.backed_up_at!r} has no zone")
        return int(ts.timestamp() * 1000)

    @property
    def prefix(self) -> str:
        return table_prefix(self.namespace, self.table, self.table_uuid, self.bucket)

    @property
    def key(self) -> str:
        return point_key(self.prefix, self.snapshot_id)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def restore_location(self) -> str:
        """The rewritten table's location, relative to the table prefix: `restorable/<snapshot id>/<run id>`."""
        return "/".join(self.restore_metadata.split("/")[:3])

    def content_key(self, relative: str) -> str:
        """The vault key of the file the rewritten metadata names `<restore location>/<relative>`: its rewritten copy
        where the point lists one (metadata files, manifest lists, manifests), else the original under `files/` (data,
        delete and statistics files; position deletes name data files under `table_location`)."""
        rewritten = f"{self.restore_location}/{relative}"
        if any(f.kind == "restorable" and f.relative == rewritten for f in self.files):
            return f"{self.prefix}{rewritten}"
        return file_key(self.prefix, relative)

    def canonical(self) -> bytes:
        """The bytes the point's MAC covers: its JSON without the MAC (sorted keys, no spaces)."""
        return json.dumps(self._body(), sort_keys=True, separators=(",", ":")).encode()

    def to_json(self) -> str:
        body = self._body()
        if self.mac:
            body["mac"] = self.mac
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    def _body(self) -> dict[str, object]:
        return {
            "format": POINT_FORMAT,
            "namespace": self.namespace,
            "table": self.table,
            "table_uuid": self.table_uuid,
            "snapshot_id": self.snapshot_id,
            "snapshot_timestamp_ms": self.snapshot_timestamp_ms,
            "metadata": self.metadata,
            "restore_metadata": self.restore_metadata,
            "table_location": self.table_location,
            "source": self.source,
            "backed_up_at": self.backed_up_at,
            "files": [
                [f.relative, f.kind, f.size, f.crc32, f.version] for f in sorted(self.files, key=lambda f: f.relative)
            ],
            # the MAC covers the bucket, so one account's point cannot be shown as another's (absent: as before)
            **({"bucket": self.bucket} if self.bucket else {}),
        }

    @classmethod
    def from_json(cls, text: str | bytes) -> BackupPoint:
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise LayoutError(f"backup point is not JSON: {e}") from e
        if not isinstance(raw, Mapping) or raw.get("format") != POINT_FORMAT:
            raise LayoutError(f"backup point format must be {POINT_FORMAT}")
        try:
            files = tuple(BackupFile(str(r), str(k), int(s), int(c), str(v)) for r, k, s, c, v in raw["files"])
            point = cls(
                namespace=str(raw["namespace"]),
                table=str(raw["table"]),
                table_uuid=str(raw["table_uuid"]),
                snapshot_id=int(raw["snapshot_id"]),
                snapshot_timestamp_ms=int(raw["snapshot_timestamp_ms"]),
                metadata=str(raw["metadata"]),
                restore_metadata=str(raw["restore_metadata"]),
                table_location=str(raw["table_location"]),
                source=str(raw["source"]),
                backed_up_at=str(raw["backed_up_at"]),
                files=files,
                bucket=str(raw.get("bucket", "")),
                mac=str(raw.get("mac", "")),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise LayoutError(f"backup point is missing or mistypes a field: {e}") from e
        if point.metadata not in {f.relative for f in point.files if f.kind == "metadata"}:
            raise LayoutError(f"backup point {point.snapshot_id}: its metadata file {point.metadata!r} is not listed")
        if (
            point.restore_metadata not in {f.relative for f in point.files if f.kind == "restorable"}
            or not point.restore_metadata.startswith(f"restorable/{point.snapshot_id}/")
            or point.restore_metadata.count("/") < 3
        ):
            raise LayoutError(
                f"backup point {point.snapshot_id}: {point.restore_metadata!r} is not a listed restorable"
            )
        return point


def missing_files(files: Iterable[BackupFile], held: Iterable[str]) -> list[BackupFile]:
    """What a backup still has to copy: the files whose relative path the vault does not hold (deduplicated)."""
    have = set(held)
    out: dict[str, BackupFile] = {}
    for f in files:
        if f.relative not in have:
            out.setdefault(f.relative, f)
    return [out[k] for k in sorted(out)]


def choose_point(
    points: Iterable[BackupPoint], *, snapshot_id: int | None = None, as_of: datetime | None = None
) -> BackupPoint | None:
    """The point to restore: the one of `snapshot_id`, else the newest committed at or before `as_of`, else the
    newest; None when nothing qualifies."""
    if snapshot_id is not None and as_of is not None:
        raise LayoutError("choose a point by snapshot_id or by as_of, not both")
    ordered = sorted(points, key=lambda p: (p.snapshot_timestamp_ms, p.backed_up_at))
    if snapshot_id is not None:
        return next((p for p in ordered if p.snapshot_id == snapshot_id), None)
    if as_of is not None:
        limit = int(as_of.astimezone(UTC).timestamp() * 1000)
        ordered = [p for p in ordered if p.snapshot_timestamp_ms <= limit]
    return ordered[-1] if ordered else None
