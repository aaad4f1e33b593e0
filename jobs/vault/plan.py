"""What one backup of one replica table does, decided before anything is written (pure: no Spark, no I/O).

The Spark layer (`jobs/vault/backup.py`) reads the snapshot's files from the replica's metadata and lists what the
vault holds under the table's prefix; this module turns that into the plan: the files to copy, the files already held
(reused, never written again) and how each one's size and CRC32 is known, the rewritten metadata to upload, whose
retention to extend, and finally the point manifest. Docs: docs/decisions/0034-backup-vault.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from s3tables_kit.jobs.kernel.filecopy import CopyItem
from s3tables_kit.jobs.vault.layout import (
    BackupFile,
    BackupPoint,
    LayoutError,
    file_key,
    relative_path,
    restore_location,
    table_prefix,
)

PROGRESS_PREFIX = "backup"


class BackupRefused(LayoutError):
    """The table cannot be backed up as it is (a file outside its location, a held object that is not the file)."""


@dataclass(frozen=True)
class SnapshotFile:
    """A file the snapshot needs, as its metadata names it; `size` is -1 where the metadata does not say (the
    metadata file, the manifest list)."""

    path: str
    kind: str
    size: int = -1


@dataclass(frozen=True)
class TableSnapshot:
    """The replica table and the snapshot a backup copies."""

    namespace: str
    table: str
    table_uuid: str
    location: str
    snapshot_id: int
    snapshot_timestamp_ms: int
    metadata_path: str  # the metadata file in which this snapshot is current
    source: str  # the replica's table bucket ARN or local warehouse, for the record
    bucket: str = ""  # a vault account bucket's layout segment ("": `[recovery] replica`)

    @property
    def prefix(self) -> str:
        return table_prefix(self.namespace, self.table, self.table_uuid, self.bucket)


@dataclass
class BackupPlan:
    snapshot: TableSnapshot
    bucket: str
    files: dict[str, SnapshotFile]  # relative path -> file
    to_copy: list[str]  # relative paths the vault lacks
    known: dict[str, tuple[int, int, str]]  # held, size, CRC32 and S3 version id from the newest point
    to_digest: list[str]  # held, not in the newest point (a killed run's): size and CRC32 read from the vault

    @property
    def prefix(self) -> str:
        return self.snapshot.prefix

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def copy_items(self) -> list[CopyItem]:
        """The executors' copies: byte for byte (kind `data`: nothing rewritten), a taken key never overwritten
        (`alt_dst` is the key itself, so an object of other content there fails the file instead of going elsewhere)."""
        out = []
        for rel in self.to_copy:
            f = self.files[rel]
            dst = self.uri(file_key(self.prefix, rel))
            out.append(CopyItem(f.path, dst, dst, f.size, "data"))
        return out

    def bytes_to_copy(self) -> int:
        return sum(max(self.files[r].size, 0) for r in self.to_copy)


def plan_backup(
    snap: TableSnapshot,
    bucket: str,
    files: Iterable[SnapshotFile],
    held: Mapping[str, int],
    newest_point: BackupPoint | None,
) -> BackupPlan:
    """The plan of one backup. `held`: relative path -> size of every object under the table's `files/`;
    `newest_point`: the latest verified point of this table, whose sizes, CRC32s and version ids are trusted for the
    objects held at the same size. A held object whose size differs from the size the metadata records is not this
    file: refused (it is never overwritten)."""
    by_rel: dict[str, SnapshotFile] = {}
    for f in files:
        try:
            rel = relative_path(snap.location, f.path)
        except LayoutError as e:
            raise BackupRefused(f"{snap.namespace}.{snap.table}: {e}") from None
        by_rel.setdefault(rel, f)
    listed = {f.relative: (f.size, f.crc32, f.version) for f in newest_point.files} if newest_point else {}
    to_copy: list[str] = []
    known: dict[str, tuple[int, int, str]] = {}
    to_digest: list[str] = []
    for rel in sorted(by_rel):
        f = by_rel[rel]
        if rel not in held:
            to_copy.append(rel)
            continue
        if f.size >= 0 and held[rel] != f.size:
            raise BackupRefused(
                f"the vault holds {file_key(snap.prefix, rel)} with {held[rel]} bytes, the metadata says {f.size}: "
                "an object that is not this file (it is never overwritten)"
            )
        if rel in listed and listed[rel][0] == held[rel]:
            known[rel] = listed[rel]
        else:
            to_digest.append(rel)
    return BackupPlan(snap, bucket, by_rel, to_copy, known, to_digest)


METADATA_SUFFIXES = (".metadata.json", ".avro")  # metadata files; manifest lists and manifests (Avro)


def restorable_uploads(
    file_list: Iterable[tuple[str, str]], staging: str, restore_uri: str, restore_key: str, deletes: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """(staged file, vault key) of every metadata file RewriteTablePath rewrote, from its file list of (source,
    target) pairs: a staged source is a rewritten file, uploaded under the restore location (`restore_uri`, whose key
    is `restore_key`); any other source is a table file the vault holds under `files/`. Rewritten position-delete
    files are left out (`deletes`: relative paths of the snapshot's delete files; any staged file that is neither
    JSON metadata nor Avro): Iceberg 1.10 stages only one of several per snapshot and keeps the original's size in
    the rewritten manifest, so a restore reads the originals under `files/` and rewrites their rows itself."""
    stage = staging.rstrip("/") + "/"
    root = restore_uri.rstrip("/") + "/"
    skip = set(deletes)
    out = []
    for src, dst in file_list:
        if not src.startswith(stage):
            continue
        if not dst.startswith(root):
            raise BackupRefused(f"RewriteTablePath staged {src} for {dst}, outside the restore location {root}")
        rel = dst[len(root) :]
        if rel in skip or not rel.endswith(METADATA_SUFFIXES):
            continue
        out.append((src, f"{restore_key.rstrip('/')}/{rel}"))
    return sorted(out, key=lambda p: p[1])


def trim_metadata(doc: Mapping[str, object], snapshot_id: int) -> dict[str, object]:
    """The table metadata document reduced to what restoring one snapshot needs: that snapshot as the only one (its
    snapshot log of one entry, the refs and statistics that name it), no previous metadata files. Schemas, partition
    specs and sort orders are all kept: the snapshot's manifests may have been written under an older spec, and each
    spec binds to a schema. A point's restorable copy is then the size of one snapshot's metadata, not the table's
    history."""
    snapshots = [s for s in _dicts(doc.get("snapshots")) if s.get("snapshot-id") == snapshot_id]
    if len(snapshots) != 1 or doc.get("current-snapshot-id") != snapshot_id:
        raise BackupRefused(f"the metadata's current snapshot is {doc.get('current-snapshot-id')}, not {snapshot_id}")
    refs = doc.get("refs")
    out = dict(doc)
    out.update(
        {
            "snapshots": snapshots,
            "snapshot-log": [{"timestamp-ms": snapshots[0].get("timestamp-ms"), "snapshot-id": snapshot_id}],
            "metadata-log": [],
            "statistics": [s for s in _dicts(doc.get("statistics")) if s.get("snapshot-id") == snapshot_id],
            "partition-statistics": [
                s for s in _dicts(doc.get("partition-statistics")) if s.get("snapshot-id") == snapshot_id
            ],
        }
    )
    if isinstance(refs, Mapping):
        out["refs"] = {k: v for k, v in refs.items() if isinstance(v, Mapping) and v.get("snapshot-id") == snapshot_id}
    return out


def _dicts(value: object) -> list[Mapping[str, object]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def restore_root(plan: BackupPlan, run_id: str) -> tuple[str, str]:
    """(key, s3 URI) of this run's restore location."""
    key = restore_location(plan.prefix, plan.snapshot.snapshot_id, run_id)
    return key, plan.uri(key)


def retain_until(backed_up_at: datetime, retention_days: int) -> datetime:
    """Every file of a point stays locked at least this long: the point's time plus the vault's retention."""
    return backed_up_at + timedelta(days=retention_days)


def needs_extension(current: datetime | None, wanted: datetime) -> bool:
    """Object Lock moves a retain-until date forwards only: extend when the object's is earlier (or unset)."""
    return current is None or current < wanted


@dataclass
class Written:
    """Size, CRC32 and S3 version id of every file of the point, as the vault holds it, and which ones this run
    wrote."""

    sizes: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # relative -> (size, crc32, version)
    written: set[str] = field(default_factory=set)  # relatives this run wrote (fresh default retention)


def record_copies(plan: BackupPlan, written: Written, results: Iterable[Mapping[str, object]]) -> tuple[int, int, int]:
    """Enter the file copy's results (`CopyResult.as_dict()` of `plan.copy_items()`) in `written`: (files this run
    wrote, their bytes, files another run wrote at the same moment and kept). Refuses a failed copy, and a file read
    at another size than its metadata's."""
    rows = list(results)
    errors = [r for r in rows if r.get("error")]
    if errors:
        raise BackupRefused(f"{len(errors)} file(s) failed to copy, e.g. {errors[0]['src']}: {errors[0]['error']}")
    key_rel = {file_key(plan.prefix, rel): rel for rel in plan.to_copy}
    copied = nbytes = adopted = 0
    for r in rows:
        rel = key_rel[str(r["dst"])[len(plan.uri("")) :]]
        want, read = plan.files[rel].size, _int(r["source_size"])
        if want >= 0 and read != want:
            raise BackupRefused(f"{r['src']}: read {read} bytes, the metadata says {want}")
        written.sizes[rel] = (_int(r["size"]), _int(r["crc32"]), str(r.get("version") or ""))
        if r.get("reused"):
            adopted += 1
        else:
            written.written.add(rel)
            copied, nbytes = copied + 1, nbytes + _int(r["size"])
    return copied, nbytes, adopted


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise BackupRefused(f"the file copy reported {value!r} where a number belongs")
    return value


def build_point(
    plan: BackupPlan,
    held: Written,
    restorable: Mapping[str, tuple[int, int, str]],
    restore_metadata: str,
    backed_up_at: datetime,
) -> BackupPoint:
    """The point manifest: every file of the snapshot (`held`) and every rewritten file (`restorable`: key relative to
    the table prefix -> size, CRC32, S3 version id). Refuses a point missing any file of the plan, or a file whose
    version id is unknown (a restore reads exactly the versions the point names)."""
    missing = sorted(set(plan.files) - set(held.sizes))
    if missing:
        raise BackupRefused(f"{len(missing)} file(s) of the snapshot are not in the vault, e.g. {missing[0]}")
    unversioned = sorted(r for r, v in [*held.sizes.items(), *restorable.items()] if not v[2])
    if unversioned:
        raise BackupRefused(f"{len(unversioned)} file(s) without an S3 version id, e.g. {unversioned[0]}")
    snap = plan.snapshot
    files = [BackupFile(rel, plan.files[rel].kind, *held.sizes[rel]) for rel in sorted(plan.files)]
    files += [BackupFile(rel, "restorable", *v) for rel, v in sorted(restorable.items())]
    return BackupPoint(
        namespace=snap.namespace,
        table=snap.table,
        table_uuid=snap.table_uuid,
        snapshot_id=snap.snapshot_id,
        snapshot_timestamp_ms=snap.snapshot_timestamp_ms,
        metadata=relative_path(snap.location, snap.metadata_path),
        restore_metadata=restore_metadata,
        table_location=snap.location,
        source=snap.source,
        bucket=snap.bucket,
        backed_up_at=backed_up_at.isoformat(timespec="seconds"),
        files=tuple(files),
    )
