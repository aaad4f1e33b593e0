"""The vault bucket from the backup job's driver: list what a table's prefix holds, read and commit point manifests
(`If-None-Match: *`), read and extend Object Lock retention, and the executors' digest of held objects. Its reads are
the restore's (`s3tables_kit.jobs.vault.reader.VaultReader`), over the driver's own S3 client (`driver_client`).

Writes of table files go through the executors' byte copy (`s3tables_kit.jobs.kernel.filecopy`); this module writes only
point manifests and retention. A point or file is never overwritten: every write is conditional, and a retention is only
ever moved forwards (Object Lock refuses the opposite, and `lock_until` reads back what it refused).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

from s3tables_kit.jobs.kernel import sdk
from s3tables_kit.jobs.kernel.filecopy import StoreConfig, crc_of, head_version, object_client
from s3tables_kit.jobs.vault.layout import BackupPoint, points_prefix, snapshot_of_point_key
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.plan import BackupRefused, needs_extension
from s3tables_kit.jobs.vault.points import scan_points
from s3tables_kit.jobs.vault.reader import Listed, VaultReader

LOCK_MODE = "COMPLIANCE"
DRIVER_CONNECTIONS = 32  # the driver's connection pool: its threads' listing, retention and metadata calls


def driver_client(target: VaultTarget) -> Any:
    """The driver's S3 client for the vault: the kit's standard retry mode, not the executors' adaptive one. Its calls
    are many small ones from a pool of threads (retention per held file, the listing, the point); in adaptive mode
    one `SlowDown` lowers the send rate of every later call of the client (an incremental backup of a large table
    extends a retention per held file), while standard mode backs off only the throttled call."""
    return object_client(target.region, target.endpoint, data_plane=False, max_pool_connections=DRIVER_CONNECTIONS)


@dataclass(frozen=True)
class VaultTarget:
    """Where backups go: the vault bucket (kit_vault output), its retention and storage class."""

    bucket: str
    region: str | None
    retention_days: int
    storage_class: str = "STANDARD"
    endpoint: str | None = None  # the local stand-in
    point_key: str | None = None  # ARN of the vault's point key (kit_vault.point_key_arn): every point is MACed with it

    def store_config(self, part_size: int) -> StoreConfig:
        return StoreConfig(self.region, self.endpoint, part_size, self.storage_class)


class VaultStore:
    """The backup's view of the vault: the restore's reader over the driver's S3 client (`driver_client`), and the
    point and retention writes."""

    def __init__(self, target: VaultTarget) -> None:
        self.target = target
        self.client: Any = driver_client(target)
        key = PointKey(target.point_key, target.region, target.endpoint) if target.point_key else None
        self.key = key
        self.reader = VaultReader(
            f"s3://{target.bucket}", target.region, target.endpoint, client=self.client, point_key=key
        )

    def listing(self, prefix: str) -> list[Listed]:
        return self.reader.listing(prefix)

    def held_files(self, prefix: str) -> dict[str, int]:
        """Relative path (below `files/`) -> size of every table file the vault holds for this table."""
        base = f"{prefix}files/"
        return {o.key[len(base) :]: o.size for o in self.listing(base)}

    def points(self, prefix: str) -> list[Listed]:
        """The complete points of this table (their manifests), newest first by write time."""
        found = [o for o in self.listing(points_prefix(prefix)) if snapshot_of_point_key(o.key) is not None]
        return sorted(found, key=lambda o: o.modified, reverse=True)

    def newest_point(self, prefix: str, points: list[Listed] | None = None, bucket: str = "") -> BackupPoint | None:
        """The most recently written point that verifies (`points.verify_point`: a refused one is skipped, its sizes,
        checksums and versions never trusted); `points`: the table's points as `points` listed them; `bucket`: the
        replica bucket's layout segment ("": `[recovery] replica`)."""
        check = self.reader.mac_check()
        for o in self.points(prefix) if points is None else points:
            read = partial(self.reader.read_object, o.key)
            scan = scan_points([(o.key, read)], check, versioned=True, bucket=bucket)
            if scan.points:
                return scan.points[0]
        return None

    def commit_point(self, point: BackupPoint) -> bool:
        """Write the point manifest, MACed with the point key, unless one exists: True when this call wrote it, False
        when another run had. A point nobody could verify is never written (no point key: refused)."""
        if self.key is None:
            raise BackupRefused("the vault's point key is not named: a point a restore cannot verify is not written")
        body = replace(point, mac=self.key.sign(point.canonical())).to_json().encode()
        try:
            self.client.put_object(
                Bucket=self.target.bucket,
                Key=point.key,
                Body=body,
                ContentType="application/json",
                ChecksumAlgorithm="CRC32",
                IfNoneMatch="*",
                StorageClass=self.target.storage_class,
            )
        except Exception as e:
            if sdk.error_code(e) in ("PreconditionFailed", "412") or _status(e) == 412:
                return False
            raise
        return True

    def lock_until(self, keys: Iterable[str], until: datetime, threads: int = 16) -> int:
        """Move the retention of each object to `until` where it is earlier (Object Lock moves it forwards only):
        how many were moved. One request per object where it is earlier (the usual case: every point is later than
        the last): the extension is sent first, and only a refused one reads the retention back, since S3 refuses a
        retention that would shorten the held one and the object then needs nothing."""

        def one(key: str) -> int:
            try:
                self.extend_retention(key, until)
            except Exception:
                if needs_extension(self.retention(key), until):
                    raise
                return 0
            return 1

        with ThreadPoolExecutor(threads) as pool:
            return sum(pool.map(one, keys))

    def retention(self, key: str) -> datetime | None:
        try:
            r = self.client.get_object_retention(Bucket=self.target.bucket, Key=key)
        except Exception as e:
            if sdk.error_code(e) in ("NoSuchObjectLockConfiguration", "ObjectLockConfigurationNotFoundError"):
                return None
            raise
        until = r.get("Retention", {}).get("RetainUntilDate")
        return until if isinstance(until, datetime) else None

    def extend_retention(self, key: str, until: datetime) -> None:
        self.client.put_object_retention(
            Bucket=self.target.bucket,
            Key=key,
            Retention={"Mode": LOCK_MODE, "RetainUntilDate": until},
        )


def _status(e: Exception) -> int:
    resp = getattr(e, "response", None) or {}
    return int(resp.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def held_digest(uri: str, cfg: StoreConfig) -> tuple[int, int, str]:
    """(size, CRC32, S3 version id) of a held vault object's current version: the checksum S3 stored with a
    single-part object (HeadObject, no data read), else that version read again (a multipart object's stored
    checksum is of its parts)."""
    h = head_version(uri, cfg)
    if h is None:
        raise FileNotFoundError(uri)
    size, stored, version = h
    if stored is not None and "-" not in stored:
        return size, int.from_bytes(base64.b64decode(stored), "big"), version
    return (*crc_of(uri, cfg, version), version)


def digest_partition(items: Iterable[tuple[str, str, str]], cfg: StoreConfig) -> Iterator[dict[str, Any]]:
    """Spark `mapPartitions` body: (relative, source URI, vault URI) -> {relative, size, crc32, version} of the held
    object when it holds the source's bytes, else {relative, error} (an object that is not the file is never
    trusted)."""
    for rel, src, uri in items:
        try:
            size, crc, version = held_digest(uri, cfg)
            want = crc_of(src, cfg)
            if want != (size, crc):
                raise ValueError(
                    f"the vault's object ({size} bytes, CRC32 {crc}) is not the file ({want[0]} bytes, CRC32 {want[1]})"
                )
            yield {"relative": rel, "size": size, "crc32": crc, "version": version}
        except Exception as e:
            yield {"relative": rel, "error": f"{type(e).__name__}: {str(e)[:300]}"}
