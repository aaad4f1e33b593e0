"""Reading the vault for a restore: its objects by layout key, and a table's backup points (`jobs/vault/layout.py`).

The vault is an S3 bucket (`s3://bucket`); a local directory (`file:/abs/dir` or `/abs/dir`) holds the same layout for
the drills and the tests. Read-only: nothing here writes, a restore reads the vault and writes elsewhere; the backup's
`s3tables_kit.jobs.vault.store.VaultStore` reads through this class too and adds its conditional writes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint, LayoutError, snapshot_of_point_key, tables_prefix


class VaultError(ValueError):
    """The vault cannot be read, or holds something that does not fit its layout (the message names the key)."""


def _local_root(root: str) -> Path | None:
    if root.startswith("file://"):
        return Path(root[len("file://") :])
    if root.startswith("file:"):
        return Path(root[len("file:") :])
    return Path(root) if root.startswith("/") else None


@dataclass(frozen=True)
class Listed:
    """One object of a listing: its key, size and last write time."""

    key: str
    size: int
    modified: datetime


@dataclass
class VaultReader:
    """The vault at `root`: `s3://bucket` (an optional key prefix is refused: the layout starts at the bucket's
    root) or a local directory. `client`: the S3 client to read with (default: one with the kit's retry policy)."""

    root: str
    region: str | None = None
    endpoint: str | None = None
    client: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.root.startswith("s3://"):
            bucket = self.root[len("s3://") :].rstrip("/")
            if not bucket or "/" in bucket:
                raise VaultError(f"vault {self.root!r}: name the bucket only, s3://BUCKET")
            self.root = f"s3://{bucket}"
        elif (local := _local_root(self.root)) is not None:
            self.root = "file:" + str(local.resolve())
        else:
            raise VaultError(f"vault {self.root!r}: expected s3://BUCKET or an absolute local directory")

    @property
    def local(self) -> Path | None:
        return _local_root(self.root)

    @property
    def bucket(self) -> str:
        return self.root[len("s3://") :]

    def uri(self, key: str) -> str:
        """The URI of a layout key, as Iceberg and the file copy name it."""
        return f"{self.root}/{key}"

    def s3(self) -> Any:
        if self.client is None:
            from s3tables_kit.jobs.kernel import sdk

            extra: dict[str, Any] = {"s3": {"addressing_style": "path"}} if self.endpoint else {}
            self.client = sdk.client("s3", self.region, self.endpoint, **extra)
        return self.client

    def listing(self, prefix: str) -> list[Listed]:
        """Every object under `prefix` (ListObjectsV2 pages, or a walk of the local directory), in key order."""
        local = self.local
        if local is not None:
            base = local / prefix
            if not base.is_dir():
                return []
            found = (p for p in base.rglob("*") if p.is_file())
            return sorted(
                (Listed(str(p.relative_to(local)), (st := p.stat()).st_size, _mtime(st.st_mtime)) for p in found),
                key=lambda o: o.key,
            )
        try:
            return list(self._pages(prefix))
        except Exception as e:
            raise VaultError(f"cannot list {self.uri(prefix)}: {type(e).__name__}: {e}") from None

    def _pages(self, prefix: str) -> Iterator[Listed]:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        while True:
            page = self.s3().list_objects_v2(**kwargs)
            for o in page.get("Contents", []):
                yield Listed(str(o["Key"]), int(o["Size"]), o["LastModified"])
            if not page.get("IsTruncated"):
                return
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    def keys(self, prefix: str) -> list[str]:
        """Every key under `prefix`."""
        return [o.key for o in self.listing(prefix)]

    def read(self, key: str) -> bytes:
        local = self.local
        try:
            if local is not None:
                return (local / key).read_bytes()
            return bytes(self.s3().get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except Exception as e:
            raise VaultError(f"cannot read {self.uri(key)}: {type(e).__name__}: {e}") from None

    def read_checked(self, prefix: str, f: BackupFile) -> bytes:
        """A file of a point, refused unless its size and CRC32 are the ones its point manifest records."""
        data = self.read(f.key(prefix))
        crc = zlib.crc32(data)
        if len(data) != f.size or crc != f.crc32:
            raise VaultError(
                f"{self.uri(f.key(prefix))}: {len(data)} bytes with CRC32 {crc:08x}, the backup point records "
                f"{f.size} bytes with CRC32 {f.crc32:08x}"
            )
        return data


def _mtime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def list_points(store: VaultReader, namespace: str, table: str) -> list[BackupPoint]:
    """The complete backup points of a table, every incarnation (table UUID) of its name, oldest first. A point
    object that does not parse, or names another table or key than where it lies, is an error, never skipped."""
    points = []
    for key in store.keys(tables_prefix(namespace, table)):
        if snapshot_of_point_key(key) is None:
            continue
        try:
            p = BackupPoint.from_json(store.read(key))
        except LayoutError as e:
            raise VaultError(f"{store.uri(key)}: {e}") from None
        if p.key != key:
            raise VaultError(f"{store.uri(key)}: the point names {p.key}, not its own key")
        points.append(p)
    return sorted(points, key=lambda p: (p.snapshot_timestamp_ms, p.backed_up_at))


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def point_summary(p: BackupPoint) -> dict[str, object]:
    """What `--list-points --json` prints per point (the restore picks by `snapshot_id` or `committed_at`)."""
    fields = ("namespace", "table", "table_uuid", "snapshot_id", "backed_up_at", "source")
    out: dict[str, object] = {f: getattr(p, f) for f in fields}
    out.update(committed_at=_iso(p.snapshot_timestamp_ms), files=len(p.files), bytes=p.total_bytes, point=p.key)
    return out


def render_points(store: VaultReader, namespace: str, table: str, points: list[BackupPoint]) -> str:
    if not points:
        return f"{namespace}.{table}: no backup point in the vault {store.root}"
    lines = [
        f"{namespace}.{table}: {len(points)} backup point(s) in the vault {store.root}, oldest first",
        f"  {'snapshot id':>20}  {'committed at':<24}  {'backed up at':<25}  {'files':>6}  {'MB':>10}  table uuid",
    ]
    for p in points:
        s = point_summary(p)
        lines.append(
            f"  {p.snapshot_id:>20}  {s['committed_at']!s:<24}  {p.backed_up_at:<25}  {len(p.files):>6}  "
            f"{p.total_bytes / 1e6:>10,.1f}  {p.table_uuid}"
        )
    return "\n".join(lines)
