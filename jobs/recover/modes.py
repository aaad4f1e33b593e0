"""Which copy each table gets: byte-for-byte file copy or Spark CTAS, and why (pure, no I/O).

A file copy re-uses the replica's data files unchanged, so the new table must read them exactly as the replica does:

- the same field ids: a new Iceberg table assigns fresh ids (`TypeUtil.assignFreshIds`: a struct's own fields first,
  then each field's nested type, depth first). A copied Parquet file carries the replica's ids, so the snapshot's
  schema must be the one a new table would get (`fresh_ids_reproduce`); dropped columns or nested fields added later
  break that, and the table goes to CTAS;
- the same partition specs, with the same spec ids, for every file (specs 0..M are added in order; Iceberg reuses a
  spec id only for a compatible spec, exactly as it did when the replica's specs were created);
- deletes that keep their meaning when every file is re-added in one commit (one sequence number): position deletes
  do (they apply to data of a lower OR EQUAL sequence number) once their file paths are rewritten; equality deletes
  do not (strictly lower), nor do v3 deletion vectors and row lineage, which the kit does not rewrite.

Anything else the kit cannot prove correct goes to CTAS: partition statistics files, a catalog without staged create
(no atomic commit), a manifest list that could not be read. The JVM side re-checks every condition on the real
manifests before it copies a byte (`fastpath.FastPathUnavailable`), and `auto` then falls back to CTAS.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from s3tables_kit.jobs.kernel.snapshots import IcebergColumn, IcebergPartitionField, Snapshot, TableInfo


class CopyMode(Enum):
    AUTO = "auto"
    FILES = "files"
    CTAS = "ctas"


COPY_MODES = tuple(m.value for m in CopyMode)


@dataclass(frozen=True)
class Layout:
    """What the snapshot's manifest list says: spec ids of manifests that hold live data / delete files."""

    data_spec_ids: frozenset[int]
    delete_spec_ids: frozenset[int]
    data_manifests: int = 0
    delete_manifests: int = 0


@dataclass(frozen=True)
class ModeDecision:
    mode: CopyMode  # FILES or CTAS
    reason: str
    spec_ids: tuple[int, ...] = ()  # files: the replica specs to create in the target, in id order
    default_spec_id: int | None = None  # files: the target's default spec (a replica spec id)
    ctas_distribution_none: bool = False  # ctas: skip Iceberg's hash distribution (files already in the target spec)
    ctas_distribution_reason: str = ""

    def describe(self) -> str:
        if self.mode is CopyMode.FILES:
            return f"files: {self.reason}"
        dist = "none" if self.ctas_distribution_none else "hash (Iceberg default)"
        return f"ctas: {self.reason}; write distribution {dist}: {self.ctas_distribution_reason}"


# --- field ids --------------------------------------------------------------------------------------------------


def _type_ids(t: Any) -> list[tuple[int, Any]]:
    """(id, type) pairs a type introduces directly (struct fields, list element, map key + value)."""
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "struct":
            return [(int(f["id"]), f["type"]) for f in t["fields"]]
        if kind == "list":
            return [(int(t["element-id"]), t["element"])]
        if kind == "map":
            return [(int(t["key-id"]), t["key"]), (int(t["value-id"]), t["value"])]
    return []


def fresh_id_order(schema: tuple[IcebergColumn, ...]) -> list[int]:
    """The schema's field ids in the order `TypeUtil.assignFreshIds` visits them (it numbers them 1, 2, 3, ...)."""
    out: list[int] = []

    def visit(pairs: list[tuple[int, Any]]) -> None:
        out.extend(i for i, _ in pairs)  # a struct's (list's, map's) own ids first
        for _, t in pairs:  # then each nested type, depth first, in field order
            visit(_type_ids(t))

    visit([(c.field_id, c.type) for c in schema])
    return out


def fresh_ids_reproduce(schema: tuple[IcebergColumn, ...]) -> bool:
    """True when a new table created with this schema gets exactly these field ids."""
    order = fresh_id_order(schema)
    return order == list(range(1, len(order) + 1))


# --- specs ------------------------------------------------------------------------------------------------------


def all_field_ids(schema: tuple[IcebergColumn, ...]) -> set[int]:
    ids: set[int] = set()

    def visit(pairs: list[tuple[int, Any]]) -> None:
        for i, t in pairs:
            ids.add(i)
            visit(_type_ids(t))

    visit([(c.field_id, c.type) for c in schema])
    return ids


def _bindable(spec: tuple[IcebergPartitionField, ...], ids: set[int]) -> bool:
    return all(f.source_id in ids for f in spec)


def same_layout(a: tuple[IcebergPartitionField, ...], b: tuple[IcebergPartitionField, ...]) -> bool:
    """Same partitioning (source column + transform, void fields ignored)."""

    def key(spec: tuple[IcebergPartitionField, ...]) -> list[tuple[int, str]]:
        return [(f.source_id, f.transform) for f in spec if f.transform != "void"]

    return key(a) == key(b)


def ctas_distribution(
    info: TableInfo, target_spec: tuple[IcebergPartitionField, ...], layout: Layout | None
) -> tuple[bool, str]:
    """`distribution-mode=none` only when every data file of the snapshot was written with the target's spec: then
    each file holds one target partition and the fan-out writer needs no shuffle. Otherwise (partition evolution),
    files mix target partitions and the default hash distribution keeps one file per partition per task."""
    if layout is None:
        if len(info.specs) <= 1:
            spec_ids: frozenset[int] = frozenset(info.specs) or frozenset({0})
        else:
            return False, "the table has several partition specs and its manifest list was not read"
    else:
        spec_ids = layout.data_spec_ids
    if not spec_ids:
        return True, "no data files"
    other = sorted(i for i in spec_ids if not same_layout(info.specs.get(i, ()), target_spec))
    if other:
        return False, f"data files written with spec(s) {other}, not the target's spec (partition evolution)"
    return True, "every data file was written with the target's spec"


# --- the decision -------------------------------------------------------------------------------------------------


def _files_blocker(
    info: TableInfo,
    snap: Snapshot,
    schema: tuple[IcebergColumn, ...],
    layout: Layout | None,
    staged_create: bool,
    layout_error: str | None,
) -> tuple[str | None, tuple[int, ...], int | None]:
    """(reason the byte copy cannot be proven correct | None, spec ids to create, default spec id)."""
    if not staged_create:
        return (
            "the target catalog has no staged create (S3 Tables REST endpoint): no atomic commit of copied files",
            (),
            None,
        )
    if info.format_version >= 3:
        return "format v3 (deletion vectors, row lineage) is not handled by the byte copy", (), None
    eq = snap.summary.get("total-equality-deletes")
    if eq is not None and eq.isdigit() and int(eq) > 0:
        return (
            f"{eq} equality-deleted record(s): equality deletes apply only to data with a strictly lower sequence "
            "number, and every re-added file shares one commit",
            (),
            None,
        )
    if snap.snapshot_id in info.partition_statistics_snapshots:
        return "the snapshot has a partition statistics file", (), None
    if not fresh_ids_reproduce(schema):
        return (
            "the snapshot's field ids are not those a new table assigns (columns dropped, or nested fields added "
            "later): the copied files' field ids would not match",
            (),
            None,
        )
    if layout_error:
        return f"the manifest list could not be read ({layout_error})", (), None
    if layout is None:
        if len(info.specs) > 1:
            return "the table has several partition specs and its manifest list was not read", (), None
        used: set[int] = set(info.specs) or {0}
    else:
        used = set(layout.data_spec_ids | layout.delete_spec_ids)
    ids = all_field_ids(schema)
    missing_used = sorted(i for i in used if i not in info.specs)
    if missing_used:
        return f"files use partition spec(s) {missing_used} missing from the metadata", (), None
    default = info.default_spec_id if info.default_spec_id in info.specs else max(used, default=0)
    if not _bindable(info.specs[default], ids):
        default = max(used, default=0)
    top = max([*used, default])
    unbound = [i for i in range(top + 1) if i not in info.specs or not _bindable(info.specs[i], ids)]
    if unbound:
        return (
            f"partition spec(s) {unbound} name columns that are not in the snapshot's schema: the target cannot "
            "hold the specs the files were written with under the same ids",
            (),
            None,
        )
    return None, tuple(range(top + 1)), default


def decide(
    requested: CopyMode,
    info: TableInfo,
    snap: Snapshot,
    schema: tuple[IcebergColumn, ...],
    target_spec: tuple[IcebergPartitionField, ...],
    layout: Layout | None,
    staged_create: bool = True,
    layout_error: str | None = None,
) -> ModeDecision:
    """The mode for one table. FILES when requested and provable; CTAS when requested or not provable (auto).
    A `files` request that cannot be honoured is a plan error (raised by the planner from `reason`)."""
    none, dist_reason = ctas_distribution(info, target_spec, layout)
    if requested is CopyMode.CTAS:
        return ModeDecision(CopyMode.CTAS, "requested (--copy-mode ctas)", (), None, none, dist_reason)
    blocker, spec_ids, default = _files_blocker(info, snap, schema, layout, staged_create, layout_error)
    if blocker is None:
        deletes = snap.delete_files
        why = "copy the snapshot's files byte for byte" + (
            f" ({deletes} position-delete file(s) rewritten for the new paths)" if deletes else ""
        )
        if len(spec_ids) > 1:
            why += f"; partition specs {list(spec_ids)} kept"
        return ModeDecision(CopyMode.FILES, why, spec_ids, default)
    return ModeDecision(CopyMode.CTAS, blocker, (), None, none, dist_reason)


def parse_layout(manifests: list[dict[str, Any]]) -> Layout:
    """From manifest-list entries (`content` 0 data / 1 deletes, `partition_spec_id`, file counts)."""
    data, deletes = set(), set()
    n_data = n_del = 0
    for m in manifests:
        counts = (m.get("added_files_count"), m.get("existing_files_count"))
        live = any(c is None for c in counts) or sum(int(c) for c in counts if c is not None) > 0
        if int(m.get("content") or 0) == 0:
            n_data += 1
            if live:
                data.add(int(m["partition_spec_id"]))
        else:
            n_del += 1
            if live:
                deletes.add(int(m["partition_spec_id"]))
    return Layout(frozenset(data), frozenset(deletes), n_data, n_del)
