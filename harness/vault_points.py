"""Backup points for the restore tests and the vault drill, made the way the layout describes (`jobs/vault/layout.py`)
without the backup job's copy: the table's original files byte for byte under `files/`, its metadata rewritten as the
job does (`s3tables_kit.jobs.vault.backup.rewrite_metadata`) to `restorable/<snapshot id>/<run id>/`, the point manifest
last. The vault is a local directory (or any `put`); a file already held is not written again, as the backup job
does."""

from __future__ import annotations

import shutil
import tempfile
import uuid
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.kernel.catalogs import file_uri
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource, local_path
from s3tables_kit.jobs.vault.backup import load_table, rewrite_metadata
from s3tables_kit.jobs.vault.layout import (
    BackupFile,
    BackupPoint,
    file_key,
    relative_path,
    restore_location,
    table_prefix,
)
from s3tables_kit.jobs.vault.plan import TableSnapshot


def local_put(root: Path) -> Callable[[str, bytes], None]:
    def put(key: str, data: bytes) -> None:
        p = root / key
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)

    return put


def _kind(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if name.endswith(".metadata.json"):
        return "metadata"
    if name.startswith("snap-") and name.endswith(".avro"):
        return "manifest-list"
    return "manifest" if name.endswith(".avro") else "data"


def backup_point(
    spark: Any,
    catalog: str,
    warehouse: Path,
    ident: Ident,
    vault_uri: str,
    put: Callable[[str, bytes], None],
    held: set[str],
) -> BackupPoint:
    """Back up the current snapshot of the Hadoop table `catalog`.`ident` (warehouse `warehouse`) into the vault at
    `vault_uri` (`file:/dir` or `s3://bucket`) through `put(key, bytes)`; `held` collects the keys written."""
    src = HadoopMetadataSource(file_uri(warehouse))
    meta_loc = src.metadata_location(ident)
    assert meta_loc is not None
    meta = src.read_json(meta_loc)
    sid, loc = int(meta["current-snapshot-id"]), str(meta["location"]).rstrip("/")
    prefix = table_prefix(ident.namespace, ident.name, str(meta["table-uuid"]))
    run = uuid.uuid4().hex[:8]
    restore = restore_location(prefix, sid, run)
    files: dict[str, BackupFile] = {}

    def keep(key: str, rel: str, kind: str, data: bytes) -> None:
        if key not in held:
            put(key, data)
            held.add(key)
        files[rel] = BackupFile(rel, kind, len(data), zlib.crc32(data))

    table_dir = local_path(loc)
    for p in sorted(table_dir.rglob("*")):  # the originals, byte for byte
        if p.is_file() and not p.name.endswith(".crc") and p.name != "version-hint.text":
            rel = relative_path(loc, f"{loc}/{p.relative_to(table_dir)}")
            keep(file_key(prefix, rel), rel, _kind(rel), p.read_bytes())
    snap = next(s for s in meta["snapshots"] if int(s["snapshot-id"]) == sid)
    table = TableSnapshot(ident.namespace, ident.name, str(meta["table-uuid"]), loc, sid, 0, meta_loc, loc)
    target = f"{vault_uri}/{restore}"
    staging = Path(tempfile.mkdtemp(prefix="vault-point-"))
    try:  # the backup job's own rewrite of the point's metadata
        pairs = rewrite_metadata(spark, load_table(spark, catalog, str(ident)), table, target, file_uri(staging))
        restore_metadata = ""
        for staged, dst in pairs:
            rel = f"{restore[len(prefix) :]}/{relative_path(target, dst)}"
            keep(f"{prefix}{rel}", rel, "restorable", local_path(staged).read_bytes())
            if dst == f"{target}/{relative_path(loc, meta_loc)}":
                restore_metadata = rel
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    point = BackupPoint(
        namespace=ident.namespace,
        table=ident.name,
        table_uuid=str(meta["table-uuid"]),
        snapshot_id=sid,
        snapshot_timestamp_ms=int(snap["timestamp-ms"]),
        metadata=relative_path(loc, meta_loc),
        restore_metadata=restore_metadata,
        table_location=loc,
        source=loc,
        backed_up_at=datetime.now(UTC).isoformat(timespec="seconds"),
        files=tuple(files.values()),
    )
    put(point.key, point.to_json().encode())  # last: the commit point
    held.add(point.key)
    return BackupPoint.from_json(point.to_json())
