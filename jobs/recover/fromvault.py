"""A recovery from the vault (`recover --from-vault`): a backup point presented to the recovery job as its replica.

The point's restore metadata (its metadata rewritten to the vault's `files/`, `jobs/vault/layout.py`) is checked
against the point manifest and placed, byte for byte, as the only table of a throwaway local Hadoop warehouse whose
catalog reads the vault's objects through Iceberg's ResolvingFileIO. The recovery then plans, copies, verifies and
reports exactly as from a replica (same guards, leases, attempts and report), with two differences: the copy is the
file copy only (what it copies is what the manifest lists), and before the commit every file read is checked against
the size and CRC32 the point manifest records. The vault is never written: the catalog is the recovery's protected
replica catalog and its one "table" is the local copy of a metadata file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, file_uri
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import PlanError
from s3tables_kit.jobs.recover.fastpath import SourceBytes
from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource, _decode
from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint, file_key
from s3tables_kit.jobs.vault.points import RefusedPoint
from s3tables_kit.jobs.vault.reader import VaultError, VaultReader

VAULT_CATALOG = "vault"
RESOLVING_FILE_IO = "org.apache.iceberg.io.ResolvingFileIO"  # s3:// through S3FileIO, file: through HadoopFileIO


@dataclass(frozen=True)
class VaultRestore:
    """The backup point a recovery reads, and the local warehouse that holds its restore metadata."""

    store: VaultReader
    point: BackupPoint
    warehouse: Path
    refused: tuple[RefusedPoint, ...] = ()  # the table's point objects the restore skipped (reported as findings)

    @property
    def ident(self) -> Ident:
        return Ident(self.point.namespace, self.point.table)

    @property
    def location(self) -> str:
        """The rewritten table's location: every file its metadata names is `<location>/<relative path>`."""
        return self.store.uri(f"{self.point.prefix}{self.point.restore_location}")

    @cached_property
    def _keys(self) -> tuple[frozenset[str], dict[str, BackupFile]]:
        p = self.point
        return (
            frozenset(f.relative for f in p.files if f.kind == "restorable"),
            {self.store.uri(f.key(p.prefix)): f for f in p.files},
        )

    def read_from(self, path: str) -> SourceBytes:
        """Where the bytes of a file the rewritten metadata names are (`BackupPoint.content_key`, over a set: a point
        of many files asks once per file); an original kept under `files/` names data files as the replica did."""
        base = self.location + "/"
        if not path.startswith(base):
            return SourceBytes(path, self.location)  # not the point's: `check_copied` refuses it
        rel = path[len(base) :]
        p = self.point
        rewritten = f"{p.restore_location}/{rel}"
        if rewritten in self._keys[0]:
            uri, rows = self.store.uri(f"{p.prefix}{rewritten}"), self.location
        else:
            uri, rows = self.store.uri(file_key(p.prefix, rel)), p.table_location
        listed = self._keys[1].get(uri)
        return SourceBytes(uri, rows, listed.version if listed else "")  # the version the point recorded

    @property
    def metadata_uri(self) -> str:
        return self.store.uri(self.point.prefix + self.point.restore_metadata)

    def catalog(self) -> CatalogSpec:
        extra = {} if self.store.local is not None else {"io-impl": RESOLVING_FILE_IO}
        if self.store.region and self.store.local is None:
            extra["client.region"] = self.store.region
        return CatalogSpec(
            VAULT_CATALOG, "hadoop", file_uri(self.warehouse), self.store.region, endpoint=self.store.endpoint,
            extra=extra,
        )  # fmt: skip

    def describe(self) -> str:
        p = self.point
        return (
            f"vault {self.store.root}: backup point {p.snapshot_id} of {p.namespace}.{p.table} "
            f"(table uuid {p.table_uuid}, backed up at {p.backed_up_at}, {len(p.files)} file(s))"
        )

    def findings(self) -> list[str]:
        """What the restore refused to trust (forged, malformed or future-dated point objects), for its report."""
        return [r.line() for r in self.refused]

    def check_copied(self, results: Iterable[dict[str, Any]]) -> list[str]:
        """Every file the copy read is one of the point's and has the size (and, copied byte for byte, the CRC32)
        its manifest records; a position-delete file is rewritten on the way, so its size read is what is checked."""
        listed = self._keys[1]
        problems: list[str] = []
        for r in results:
            src = str(r["src"])
            f = listed.get(src)
            if f is None:
                problems.append(f"{src}: not a file of backup point {self.point.snapshot_id}")
            elif int(r["source_size"]) != f.size:
                problems.append(f"{src}: read {r['source_size']} bytes, the backup point records {f.size}")
            elif r["kind"] == "data" and int(r["crc32"]) != f.crc32:
                problems.append(f"{src}: CRC32 {int(r['crc32']):08x}, the backup point records {f.crc32:08x}")
            if len(problems) > 20:
                problems.append("...")
                break
        return problems


def open_point(
    store: VaultReader, point: BackupPoint, workdir: Path, refused: tuple[RefusedPoint, ...] = ()
) -> VaultRestore:
    """Check the point's restore metadata against its manifest (read at the version the point recorded) and place it
    as `v1.metadata.json` of the only table of a Hadoop warehouse under `workdir` (the catalog's `version-hint.text`
    names it). Iceberg reads the rewritten manifest list and manifests by key, not by version: each must still be the
    version the point recorded (a later one is refused; the vault's bucket policy refuses an unconditional write)."""
    entry = next(f for f in point.files if f.kind == "restorable" and f.relative == point.restore_metadata)
    data = store.read_checked(point.prefix, entry)
    if store.local is None:
        for f in point.files:
            if f.kind == "restorable" and f is not entry and store.current_version(f.key(point.prefix)) != f.version:
                raise VaultError(
                    f"{store.uri(f.key(point.prefix))}: its current version is not the one backup point "
                    f"{point.snapshot_id} recorded ({f.version}): refused"
                )
    gz = point.restore_metadata.endswith(".gz.metadata.json") or data[:2] == b"\x1f\x8b"
    meta_dir = workdir / "warehouse" / point.namespace / point.table / "metadata"
    meta_dir.mkdir(parents=True)
    (meta_dir / ("v1.gz.metadata.json" if gz else "v1.metadata.json")).write_bytes(data)
    (meta_dir / "version-hint.text").write_text("1\n")
    doc = _decode(data, point.restore_metadata)
    restore = VaultRestore(store, point, workdir / "warehouse", refused)
    found = (doc.get("current-snapshot-id"), str(doc.get("location", "")).rstrip("/"))
    if found != (point.snapshot_id, restore.location):
        raise VaultError(
            f"{store.uri(entry.key(point.prefix))}: current snapshot {found[0]} at {found[1]}, the backup point "
            f"names snapshot {point.snapshot_id} at {restore.location}"
        )
    return restore


class VaultMetadataSource(HadoopMetadataSource):
    """The recovery's plan reads the point's restore metadata (named by its vault URI, read from the local copy)."""

    def __init__(self, restore: VaultRestore) -> None:
        super().__init__(file_uri(restore.warehouse))
        self.restore = restore

    def list_tables(self, namespace: str) -> list[str]:
        return [self.restore.point.table] if namespace == self.restore.point.namespace else []

    def metadata_location(self, ident: Ident) -> str | None:
        return self.restore.metadata_uri if ident == self.restore.ident else None

    def read_json(self, location: str) -> dict[str, Any]:
        if location == self.restore.metadata_uri:
            local = HadoopMetadataSource.metadata_location(self, self.restore.ident)
            assert local is not None
            return super().read_json(local)
        store = self.restore.store
        if not location.startswith(store.root + "/"):
            raise PlanError(f"the metadata file {location} is not in the vault {store.root}")
        key = location[len(store.root) + 1 :]
        listed = self.restore._keys[1].get(location)
        try:
            return _decode(store.read(key, listed.version if listed else ""), location)
        except (VaultError, ValueError) as e:
            raise PlanError(str(e)) from None

    def source_table_arn(self, ident: Ident) -> str | None:
        src = self.restore.point.source
        return src if src.startswith("arn:") else None

    @property
    def io_props(self) -> dict[str, str]:
        store = self.restore.store
        props = {"s3.region": store.region} if store.region else {}
        return {**props, "s3.endpoint": store.endpoint} if store.endpoint else props
