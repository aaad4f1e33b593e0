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
from functools import partial
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint, snapshot_of_point_key, tables_prefix
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.points import MacCheck, PointScan, scan_points


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
    root) or a local directory. `client`: the S3 client to read with (default: one with the kit's retry policy).
    `point_key`: the vault's point key, which verifies every point read from a bucket (`points.verify_point`)."""

    root: str
    region: str | None = None
    endpoint: str | None = None
    client: Any = field(default=None, repr=False, compare=False)
    point_key: PointKey | None = field(default=None, compare=False)

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

    def read(self, key: str, version: str = "") -> bytes:
        """The object's bytes: of the S3 version `version` when given (what a point recorded), else the current."""
        return self.read_object(key, version)[0]

    def read_object(self, key: str, version: str = "") -> tuple[bytes, datetime]:
        """(bytes, the time S3 set on that version: LastModified; a local file's modification time)."""
        local = self.local
        try:
            if local is not None:
                path = local / key
                return path.read_bytes(), _mtime(path.stat().st_mtime)
            got = self.s3().get_object(Bucket=self.bucket, Key=key, **({"VersionId": version} if version else {}))
            return bytes(got["Body"].read()), got["LastModified"]
        except Exception as e:
            raise VaultError(f"cannot read {self.uri(key)}: {type(e).__name__}: {e}") from None

    def current_version(self, key: str) -> str:
        """The S3 version id of the object's current version (HeadObject); "" in a local directory."""
        if self.local is not None:
            return ""
        try:
            return str(self.s3().head_object(Bucket=self.bucket, Key=key).get("VersionId") or "")
        except Exception as e:
            raise VaultError(f"cannot read {self.uri(key)}: {type(e).__name__}: {e}") from None

    def mac_check(self) -> MacCheck | None:
        """How a point's MAC is checked: with the point key; a bucket without one named is an error (its points
        cannot be trusted), a local directory (a drill's copy) has no key and no check."""
        if self.point_key is not None:
            return self.point_key.verify
        if self.local is not None:
            return None
        raise VaultError(
            f"vault {self.root}: its points are verified with the vault's point key; name it (--vault-point-key, "
            "or kit_vault.point_key_arn in --outputs)"
        )

    def read_checked(self, prefix: str, f: BackupFile) -> bytes:
        """A file of a point, refused unless its size and CRC32 are the ones its point manifest records."""
        data = self.read(f.key(prefix), f.version)
        crc = zlib.crc32(data)
        if len(data) != f.size or crc != f.crc32:
            raise VaultError(
                f"{self.uri(f.key(prefix))}: {len(data)} bytes with CRC32 {crc:08x}, the backup point records "
                f"{f.size} bytes with CRC32 {f.crc32:08x}"
            )
        return data


def _mtime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def list_points(store: VaultReader, namespace: str, table: str, bucket: str = "") -> PointScan:
    """The backup points of a table of one replica bucket (`bucket`: a vault account bucket, "" for `[recovery]
    replica`), every incarnation (table UUID) of its name: the verified ones oldest first, and each point object
    refused (malformed, not authenticated by the point key, another bucket's, dated after S3 wrote it) with its
    reason. A refused point is skipped, never fatal to the table; a vault that cannot be listed is an error."""
    check = store.mac_check()
    keys = [k for k in store.keys(tables_prefix(namespace, table, bucket)) if snapshot_of_point_key(k) is not None]
    objects = ((k, partial(store.read_object, k)) for k in keys)
    return scan_points(objects, check, versioned=store.local is None, bucket=bucket)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def point_summary(p: BackupPoint) -> dict[str, object]:
    """What `--list-points --json` prints per point (the restore picks by `snapshot_id` or `committed_at`)."""
    fields = ("namespace", "table", "table_uuid", "snapshot_id", "backed_up_at", "source")
    out: dict[str, object] = {f: getattr(p, f) for f in fields}
    out.update(committed_at=_iso(p.snapshot_timestamp_ms), files=len(p.files), bytes=p.total_bytes, point=p.key)
    return out


def render_points(store: VaultReader, namespace: str, table: str, scan: PointScan) -> str:
    points, refused = scan.points, [f"  {line}" for line in scan.findings()]
    if not points:
        return "\n".join([f"{namespace}.{table}: no backup point in the vault {store.root}", *refused])
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
    return "\n".join([*lines, *refused])
