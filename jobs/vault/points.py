"""Which backup points a restore trusts (pure: the reads and the MAC check are passed in).

A point is trusted when its manifest parses, lies at its own key, carries a MAC of its canonical bytes that the
vault's point key verifies (only the backup role may `GenerateMac` with it), names the S3 version id of every file
(on a versioned vault), and is dated no later than the time S3 set on its object (`LastModified`, plus Iceberg's one
minute of clock skew). Anything else is refused with a reason: skipped and reported, never fatal to the table, so one
forged or malformed object under `points/` neither becomes "latest" nor blocks the genuine points
(docs/decisions/0034-backup-vault.md, "Points that cannot be forged").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from s3tables_kit.jobs.kernel.snapshots import CLOCK_SKEW_MS, iso_ms
from s3tables_kit.jobs.vault.layout import BackupPoint, LayoutError

OWN_REPLICA = "[recovery] replica"  # whose points have no bucket segment
MacCheck = Callable[[bytes, str], bool]  # (canonical bytes, base64 MAC) -> whether the point key verifies it


class PointRefused(ValueError):
    """A point object that is not a point the backup role wrote (the message says why)."""


@dataclass(frozen=True)
class RefusedPoint:
    """A point object a restore skipped, and why."""

    key: str
    reason: str

    def line(self) -> str:
        return f"refused backup point {self.key}: {self.reason}"


@dataclass(frozen=True)
class PointScan:
    """A table's points as a restore sees them: the verified ones (oldest first) and the refused ones."""

    points: tuple[BackupPoint, ...] = ()
    refused: tuple[RefusedPoint, ...] = ()

    def findings(self) -> list[str]:
        return [r.line() for r in self.refused]


def verify_point(
    raw: bytes, key: str, modified: datetime, mac_ok: MacCheck | None, *, versioned: bool, bucket: str = ""
) -> BackupPoint:
    """The point the object `key` holds (`raw`, written at `modified` by S3's clock), or PointRefused. `mac_ok`: the
    point key's check; None only for a local directory vault (a drill's copy: nothing there is authenticated).
    `bucket`: the replica bucket whose points are read ("": `[recovery] replica`); the MAC covers the point's."""
    try:
        point = BackupPoint.from_json(raw)
    except LayoutError as e:
        raise PointRefused(f"malformed: {e}") from None
    if point.bucket != bucket:
        raise PointRefused(
            f"it is a point of {point.bucket or '[recovery] replica'}, not of {bucket or '[recovery] replica'}"
        )
    if point.key != key:
        raise PointRefused(f"it names {point.key}, not its own key")
    limit = int(modified.timestamp() * 1000) + CLOCK_SKEW_MS
    try:
        dated = max(point.snapshot_timestamp_ms, point.backed_up_ms)
    except LayoutError as e:
        raise PointRefused(f"malformed: {e}") from None
    if dated > limit:
        raise PointRefused(
            f"dated {iso_ms(dated)}, after S3 wrote its object ({iso_ms(limit - CLOCK_SKEW_MS)}): a writer's clock"
        )
    if versioned and (unversioned := [f.relative for f in point.files if not f.version]):
        raise PointRefused(f"{len(unversioned)} file(s) without an S3 version id, e.g. {unversioned[0]}")
    if mac_ok is not None and not (point.mac and mac_ok(point.canonical(), point.mac)):
        raise PointRefused("its MAC is missing or not the vault point key's: not written by the backup role")
    return point


def scan_points(
    objects: Iterable[tuple[str, Callable[[], tuple[bytes, datetime]]]],
    mac_ok: MacCheck | None,
    *,
    versioned: bool,
    bucket: str = "",
) -> PointScan:
    """Every point object (key, reader of its bytes and LastModified) of the replica bucket `bucket` verified: the
    points, oldest first by their snapshot's commit time, and the refused ones. A read that fails refuses that point
    only."""
    points, refused = [], []
    for key, read in objects:
        try:
            raw, modified = read()
            points.append(verify_point(raw, key, modified, mac_ok, versioned=versioned, bucket=bucket))
        except (PointRefused, OSError, ValueError) as e:
            reason = str(e) if isinstance(e, PointRefused) else f"unreadable: {e}"
            refused.append(RefusedPoint(key, reason))
    ordered = sorted(points, key=lambda p: (p.snapshot_timestamp_ms, p.backed_up_at))
    return PointScan(tuple(ordered), tuple(refused))
