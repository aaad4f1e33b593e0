"""What to do with each table's target, and the recovery plan (pure). Which snapshot each table is taken at is the
selector's (`s3tables_kit.jobs.kernel.selectors`, shared with failover)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import Selector, resolve_snapshot
from s3tables_kit.jobs.kernel.snapshots import (
    IcebergColumn,
    IcebergPartitionField,
    Snapshot,
    SortField,
    TableInfo,
    iso_ms,
)
from s3tables_kit.jobs.recover.model import LINEAGE, PROP_REPLICA_TABLE, PROP_VERIFIED
from s3tables_kit.jobs.recover.modes import CopyMode, ModeDecision

# --- target naming and state --------------------------------------------------------------------------------


def target_ident(src: Ident, target_namespace: str | None, suffix: str) -> Ident:
    return Ident(target_namespace or src.namespace, f"{src.name}{suffix}")


class TargetState(Enum):
    ABSENT = "absent"
    VERIFIED_SAME = "recovered and verified from the same snapshot"
    OWN_UNVERIFIED = "left over by an unfinished recovery of this kit"
    UNVERIFIED_SAME = "committed by an earlier attempt from the same snapshot, not verified yet"
    OWN_OTHER = "recovered earlier from another snapshot"
    FOREIGN = "exists and was not created by the recovery"


class Action(Enum):
    CREATE = "create"
    REPLACE = "replace"  # --replace over an existing table
    REDO = "drop the unfinished attempt, then create"
    VERIFY = "verify the committed earlier attempt (nothing copied, nothing deleted)"
    SKIP = "skip (already recovered and verified)"
    REFUSE = "refuse (target exists; pass --replace to overwrite)"


def target_state(props: dict[str, str] | None, replica: Ident, snap: Snapshot) -> TargetState:
    if props is None:
        return TargetState.ABSENT
    if LINEAGE.snapshot_id not in props:
        return TargetState.FOREIGN
    same = props.get(LINEAGE.snapshot_id) == str(snap.snapshot_id) and props.get(PROP_REPLICA_TABLE) in (
        None,
        str(replica),
    )
    if PROP_VERIFIED not in props:
        return TargetState.UNVERIFIED_SAME if same else TargetState.OWN_UNVERIFIED
    return TargetState.VERIFIED_SAME if same else TargetState.OWN_OTHER


def choose_action(state: TargetState, replace: bool) -> Action:
    if state is TargetState.ABSENT:
        return Action.CREATE
    if state is TargetState.VERIFIED_SAME:
        return Action.SKIP
    if state is TargetState.OWN_UNVERIFIED:
        return Action.REDO
    if state is TargetState.UNVERIFIED_SAME:  # e.g. killed between the commit and the verified-at property
        return Action.REDO if replace else Action.VERIFY
    return Action.REPLACE if replace else Action.REFUSE


# --- the plan -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TablePlan:
    replica: Ident
    target: Ident
    info: TableInfo
    snapshot: Snapshot
    schema: tuple[IcebergColumn, ...]
    partition_spec: tuple[IcebergPartitionField, ...]
    sort_order: tuple[SortField, ...]
    state: TargetState
    action: Action
    warnings: tuple[str, ...] = ()
    mode: ModeDecision | None = None  # None: CTAS, decided before copy modes existed (tests of the SQL layer)
    properties: dict[str, str] | None = field(default=None, hash=False)  # as of the recovery point; None: current
    properties_note: str = "current properties"

    @property
    def copy_mode(self) -> CopyMode:
        return self.mode.mode if self.mode else CopyMode.CTAS

    @property
    def source_properties(self) -> dict[str, str]:
        return self.info.properties if self.properties is None else self.properties

    @property
    def rows(self) -> int | None:
        r = self.snapshot.total_records
        return None if r is None else max(0, r - self.snapshot.deleted_records)  # deletes without data: 0 rows

    def as_dict(self) -> dict[str, object]:
        s = self.snapshot
        return {
            "replica_table": str(self.replica),
            "target_table": str(self.target),
            "snapshot_id": s.snapshot_id,
            "snapshot_committed_at": s.committed_at,
            "rows": self.rows,
            "data_files": s.data_files,
            "delete_files": s.delete_files,
            "bytes": s.total_bytes,
            "schema_id": s.schema_id,
            "columns": [c.name for c in self.schema],
            "target_state": self.state.value,
            "action": self.action.value,
            "copy_mode": self.copy_mode.value,
            "copy_mode_reason": self.mode.describe() if self.mode else "ctas",
            "properties_as_of": self.properties_note,
            "warnings": list(self.warnings),
        }


def _names_by_id(cols: tuple[IcebergColumn, ...]) -> dict[int, str]:
    """field id -> dotted path, over nested structs (partition and sort sources may be nested)."""
    out: dict[int, str] = {}

    def walk(fields: list[dict[str, object]] | tuple[IcebergColumn, ...], prefix: str) -> None:
        for f in fields:
            if isinstance(f, IcebergColumn):
                fid, name, typ = f.field_id, f.name, f.type
            else:
                fid, name, typ = int(str(f["id"])), str(f["name"]), f["type"]
            path = f"{prefix}{name}"
            out[fid] = path
            if isinstance(typ, dict) and typ.get("type") == "struct":
                walk(typ["fields"], path + ".")

    walk(cols, "")
    return out


def source_names(cols: tuple[IcebergColumn, ...]) -> dict[int, str]:
    return _names_by_id(cols)


def plan_table(
    info: TableInfo,
    sel: Selector,
    now_ms: int,
    target: Ident,
    target_props: dict[str, str] | None,
    replace: bool,
    decide_mode: Callable[[Snapshot, tuple[IcebergColumn, ...], tuple[IcebergPartitionField, ...]], ModeDecision]
    | None = None,
    properties_at: Callable[[Snapshot], tuple[dict[str, str] | None, str, list[str]]] | None = None,
) -> TablePlan:
    """`decide_mode` and `properties_at` are the I/O-backed steps (manifest list, earlier metadata files); without
    them the plan is a CTAS with the current properties."""
    snap = resolve_snapshot(info, sel, now_ms)
    schema = info.schema_at(snap)
    names = _names_by_id(schema)
    warnings: list[str] = []
    spec = []
    for pf in info.partition_spec:
        if pf.source_id in names:
            spec.append(pf)
        else:
            warnings.append(
                f"partition field {pf.name} ({pf.transform}) is on a column that did not exist at snapshot "
                f"{snap.snapshot_id}; left out of the target's spec"
            )
    order = []
    for sf in info.sort_order:
        if sf.source_id in names:
            order.append(sf)
        else:
            warnings.append(f"sort field on column id {sf.source_id} did not exist at the snapshot; left out")
    state = target_state(target_props, info.ident, snap)
    props: dict[str, str] | None = None
    props_note = "current properties"
    if properties_at is not None:
        props, props_note, prop_warnings = properties_at(snap)
        warnings.extend(prop_warnings)
    mode = decide_mode(snap, schema, tuple(spec)) if decide_mode is not None else None
    return TablePlan(
        replica=info.ident,
        target=target,
        info=info,
        snapshot=snap,
        schema=schema,
        partition_spec=tuple(spec),
        sort_order=tuple(order),
        state=state,
        action=choose_action(state, replace),
        warnings=tuple(warnings),
        mode=mode,
        properties=props,
        properties_note=props_note,
    )


# --- properties as of the recovery point ----------------------------------------------------------------------


def properties_point(info: TableInfo, snap: Snapshot, sel: Selector) -> tuple[str | None, str]:
    """Which metadata file holds the table properties in effect at the recovery point (pure).

    Iceberg keeps properties only in metadata files, not per snapshot; the metadata log lists the earlier files.
    - latest: the current metadata file;
    - `--as-of T`: the newest metadata file written at or before T (what a reader saw at T, including property
      changes made after the snapshot's commit and before T);
    - `--snapshot-id S`: the newest metadata file written before the next snapshot after S was committed (the
      table's properties while S was its current state); the current file when S is current.
    Returns (metadata file location or None for the current file, description).
    """
    log = list(info.metadata_log)
    current_ts = info.last_updated_ms
    if sel.as_of_ms is not None:
        point = sel.as_of_ms
        how = f"as of {iso_ms(point)}"
    elif sel.snapshot_id is not None and snap.snapshot_id != info.current_snapshot_id:
        later = [ts for ts, _ in (info.snapshot_log or ()) if ts > snap.timestamp_ms]
        if not later:
            later = [s.timestamp_ms for s in info.snapshots if s.timestamp_ms > snap.timestamp_ms]
        if not later:
            return None, "current properties (no later snapshot)"
        point = min(later) - 1
        how = f"while snapshot {snap.snapshot_id} was current"
    else:
        return None, "current properties (latest state)"
    if current_ts is None or current_ts <= point:
        return None, f"current properties ({how}: no later metadata change)"
    earlier = [(ts, loc) for ts, loc in log if ts <= point]
    if not earlier:
        return None, f"current properties ({how}: the metadata log has no earlier file)"
    ts, loc = earlier[-1]
    return loc, f"{how}: metadata file {loc.rsplit('/', 1)[-1]} written {iso_ms(ts)}"


def property_changes(at: dict[str, str], current: dict[str, str]) -> list[str]:
    """User-visible keys whose value differs between the recovery point and now (kit lineage keys ignored)."""
    keys = sorted(k for k in set(at) | set(current) if not k.startswith(LINEAGE.prefix) and at.get(k) != current.get(k))
    return keys


@dataclass
class Plan:
    selector: Selector
    tables: list[TablePlan] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "selector": self.selector.describe(),
            "consistent_cut": self.selector.as_of_ms is not None and len(self.tables) > 1,
            "tables": [t.as_dict() for t in self.tables],
            "errors": list(self.errors),
        }

    def render(self) -> str:
        lines = [f"Recovery plan ({self.selector.describe()}, {len(self.tables)} table(s))"]
        if self.selector.as_of_ms is not None and len(self.tables) > 1:
            lines.append(f"  consistent cut: every table as of {iso_ms(self.selector.as_of_ms)}")
        hdr = f"  {'replica table':<28} {'snapshot':<20} {'committed at':<25} {'rows':>10} {'files':>6} "
        hdr += f"{'bytes':>12}  {'target':<30} {'mode':<5} action"
        lines.append(hdr)
        for t in self.tables:
            s = t.snapshot
            lines.append(
                f"  {t.replica!s:<28} {s.snapshot_id:<20} {s.committed_at:<25} {_n(t.rows):>10} "
                f"{_n(s.data_files):>6} {_n(s.total_bytes):>12}  {t.target!s:<30} {t.copy_mode.value:<5} "
                f"{t.action.value}"
            )
            lines.append(f"      mode: {t.mode.describe() if t.mode else 'ctas'}")
            lines.append(f"      properties: {t.properties_note}")
            lines.extend(f"      warning: {w}" for w in t.warnings)
        lines.extend(f"  ERROR: {e}" for e in self.errors)
        return "\n".join(lines)


def _n(v: int | None) -> str:
    return "?" if v is None else str(v)


def check_distinct_targets(plans: list[TablePlan], same_catalog: bool) -> list[str]:
    errors = []
    seen: dict[Ident, Ident] = {}
    for p in plans:
        if p.target in seen:
            errors.append(f"{p.replica} and {seen[p.target]} would both be recovered into {p.target}")
        seen[p.target] = p.replica
        if same_catalog and p.target == p.replica:
            errors.append(f"{p.replica}: the target is the replica itself; choose --target-namespace or --suffix")
    return errors
