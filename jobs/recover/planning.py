"""Which snapshot to copy for each table, and what to do with the target (pure).

Point in time follows Iceberg's own rule (`SnapshotUtil.snapshotIdAsOfTime`): the table's snapshot log, last entry at
or before the instant. The resolved snapshot must still be retained by the replica. One `--as-of` instant applied to
several tables gives each table's state at that moment: a consistent cut.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from s3tables_kit.jobs.recover.model import (
    PROP_PREFIX,
    PROP_REPLICA_TABLE,
    PROP_SNAPSHOT_ID,
    PROP_VERIFIED,
    ArgError,
    Column,
    Ident,
    PartitionField,
    PlanError,
    Snapshot,
    SortField,
    TableInfo,
    iso_ms,
)
from s3tables_kit.jobs.recover.modes import CopyMode, ModeDecision
from s3tables_kit.topology.contract import AS_OF_REPLICATION_POINT


def parse_as_of(text: str) -> datetime:
    """An ISO-8601 instant that MUST carry a zone (`Z` or `+02:00`); a naive time is ambiguous during recovery."""
    try:
        ts = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ArgError(
            f"--as-of {text!r}: not an ISO-8601 timestamp (example: 2025-12-03T14:05:00Z or 2025-12-03T15:05:00+01:00)"
        ) from None
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise ArgError(
            f"--as-of {text!r}: the timestamp has no zone; add one, e.g. {ts.isoformat()}Z for UTC "
            f"or {ts.isoformat()}+01:00"
        )
    return ts


def to_ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


@dataclass(frozen=True)
class Selector:
    """latest (both None), an instant (`as_of_ms`) or an explicit `snapshot_id`."""

    as_of_ms: int | None = None
    snapshot_id: int | None = None

    def __post_init__(self) -> None:
        if self.as_of_ms is not None and self.snapshot_id is not None:
            raise ArgError("--as-of and --snapshot-id are mutually exclusive")

    def describe(self) -> str:
        if self.snapshot_id is not None:
            return f"snapshot {self.snapshot_id}"
        if self.as_of_ms is not None:
            return f"as of {iso_ms(self.as_of_ms)}"
        return "latest"


def add_selection_args(
    group: argparse._ActionsContainer, *, table_help: str, namespace_help: str, as_of_help: str, snapshot_help: str
) -> None:
    """The options that choose the tables and the point to take them at, as recovery and failover share them:
    repeatable --table and --namespace, and one of --as-of or --snapshot-id."""
    group.add_argument("--table", action="append", default=[], metavar="NS.NAME", help=table_help)
    group.add_argument("--namespace", action="append", default=[], metavar="NS", help=namespace_help)
    when = group.add_mutually_exclusive_group()
    when.add_argument("--as-of", metavar="ISO8601", help=as_of_help)
    when.add_argument("--snapshot-id", type=int, metavar="ID", help=snapshot_help)


def selector_from_args(as_of: str | None, snapshot_id: int | None) -> tuple[Selector, bool]:
    """The selector --as-of/--snapshot-id ask for, and whether --as-of is the replication point: that one is read
    later from the sources' replication status, so the selector returned for it is still `latest`."""
    live = as_of == AS_OF_REPLICATION_POINT
    as_of_ms = to_ms(parse_as_of(as_of)) if as_of and not live else None
    return Selector(as_of_ms=as_of_ms, snapshot_id=snapshot_id), live


def retained_window(info: TableInfo) -> str:
    if not info.snapshots:
        return "no snapshots retained"
    first, last = info.snapshots[0], info.snapshots[-1]
    return (
        f"{len(info.snapshots)} snapshot(s) retained, from {first.describe()} to {last.describe()}"
        if len(info.snapshots) > 1
        else f"1 snapshot retained: {first.describe()}"
    )


def nearest_snapshots(info: TableInfo, ts_ms: int, k: int = 2) -> list[Snapshot]:
    before = [s for s in info.snapshots if s.timestamp_ms <= ts_ms][-k:]
    after = [s for s in info.snapshots if s.timestamp_ms > ts_ms][:k]
    return before + after


def _nearest_text(info: TableInfo, ts_ms: int) -> str:
    near = nearest_snapshots(info, ts_ms)
    if not near:
        return "none"
    return "; ".join(s.describe() for s in near)


def resolve_snapshot(info: TableInfo, sel: Selector, now_ms: int) -> Snapshot:
    """The replica snapshot for `sel`, or a PlanError naming the nearest snapshots and the retained window."""
    t = info.ident
    if not info.snapshots:
        raise PlanError(f"{t}: the replica has no snapshot (empty table); nothing to recover")
    if sel.snapshot_id is not None:
        snap = info.snapshot(sel.snapshot_id)
        if snap is None:
            ids = ", ".join(s.describe() for s in info.snapshots[-5:])
            raise PlanError(
                f"{t}: snapshot {sel.snapshot_id} does not exist in the replica (expired or never replicated). "
                f"Most recent snapshots: {ids}. Retained window: {retained_window(info)}"
            )
        return snap
    if sel.as_of_ms is None:
        if info.current_snapshot_id is None:
            raise PlanError(f"{t}: the replica has no current snapshot")
        snap = info.snapshot(info.current_snapshot_id)
        if snap is None:
            raise PlanError(f"{t}: current snapshot {info.current_snapshot_id} missing from the metadata")
        return snap
    ts = sel.as_of_ms
    if ts > now_ms:
        raise PlanError(
            f"{t}: --as-of {iso_ms(ts)} is in the future (now is {iso_ms(now_ms)}); use the latest state "
            f"(omit --as-of) or a past instant. Nearest snapshots: {_nearest_text(info, ts)}. "
            f"Retained window: {retained_window(info)}"
        )
    log = list(info.snapshot_log) or [(s.timestamp_ms, s.snapshot_id) for s in info.snapshots]
    candidates = [sid for (when, sid) in log if when <= ts]
    if not candidates:
        raise PlanError(
            f"{t}: no snapshot at or before {iso_ms(ts)}: the replica's history starts later. "
            f"Nearest snapshots: {_nearest_text(info, ts)}. Retained window: {retained_window(info)}"
        )
    snap = info.snapshot(candidates[-1])
    if snap is None:
        raise PlanError(
            f"{t}: the table's state at {iso_ms(ts)} was snapshot {candidates[-1]}, which the replica no longer "
            f"retains (expired). Nearest snapshots: {_nearest_text(info, ts)}. "
            f"Retained window: {retained_window(info)}"
        )
    return snap


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
    if PROP_SNAPSHOT_ID not in props:
        return TargetState.FOREIGN
    same = props.get(PROP_SNAPSHOT_ID) == str(snap.snapshot_id) and props.get(PROP_REPLICA_TABLE) in (
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
    schema: tuple[Column, ...]
    partition_spec: tuple[PartitionField, ...]
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


def _names_by_id(cols: tuple[Column, ...]) -> dict[int, str]:
    """field id -> dotted path, over nested structs (partition and sort sources may be nested)."""
    out: dict[int, str] = {}

    def walk(fields: list[dict[str, object]] | tuple[Column, ...], prefix: str) -> None:
        for f in fields:
            if isinstance(f, Column):
                fid, name, typ = f.field_id, f.name, f.type
            else:
                fid, name, typ = int(str(f["id"])), str(f["name"]), f["type"]
            path = f"{prefix}{name}"
            out[fid] = path
            if isinstance(typ, dict) and typ.get("type") == "struct":
                walk(typ["fields"], path + ".")

    walk(cols, "")
    return out


def source_names(cols: tuple[Column, ...]) -> dict[int, str]:
    return _names_by_id(cols)


def plan_table(
    info: TableInfo,
    sel: Selector,
    now_ms: int,
    target: Ident,
    target_props: dict[str, str] | None,
    replace: bool,
    decide_mode: Callable[[Snapshot, tuple[Column, ...], tuple[PartitionField, ...]], ModeDecision] | None = None,
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
    keys = sorted(k for k in set(at) | set(current) if not k.startswith(PROP_PREFIX) and at.get(k) != current.get(k))
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
