"""Which snapshot of a table a run takes: the latest, an instant (`--as-of`) or an explicit `--snapshot-id`, and
the options that choose the tables (`--table`, `--namespace`), as recovery and failover share them (pure).

Point in time follows Iceberg's own rule (`SnapshotUtil.snapshotIdAsOfTime`): the table's snapshot log, last entry at
or before the instant. The resolved snapshot must still be retained by the replica. One `--as-of` instant applied to
several tables gives each table's state at that moment: a consistent cut. The log's times are its writers': on a table
whose log goes backwards or holds a snapshot dated in the future (`s3tables_kit.jobs.kernel.snapshot_times`) `--as-of`
refuses to
resolve, naming the snapshots to choose from with `--snapshot-id`, instead of trusting log order.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from s3tables_kit.jobs.kernel.idents import ArgError, JobError
from s3tables_kit.jobs.kernel.snapshot_times import snapshot_time_findings
from s3tables_kit.jobs.kernel.snapshots import Snapshot, TableInfo, iso_ms
from s3tables_kit.topology.contract import AS_OF_REPLICATION_POINT


class PlanError(JobError):
    """No snapshot answers the selection for a table (none retained, in the future, expired): the message names the
    nearest snapshots and the retained window."""


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
    refuse_untrusted_times(info, ts, now_ms)
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


CHOICES_SHOWN = 20  # the most recent snapshots an `--as-of` refusal names


def refuse_untrusted_times(info: TableInfo, as_of_ms: int, now_ms: int) -> None:
    """A PlanError (one line) when the table's snapshot times cannot resolve an instant: its findings and the
    snapshots to choose from with `--snapshot-id`, newest first."""
    findings = snapshot_time_findings(info, now_ms)
    if not findings:
        return
    recent = sorted(info.snapshots, key=lambda s: s.timestamp_ms, reverse=True)
    shown = ", ".join(s.describe() for s in recent[:CHOICES_SHOWN])
    more = f" (and {len(recent) - CHOICES_SHOWN} older)" if len(recent) > CHOICES_SHOWN else ""
    why = "; ".join(f.detail for f in findings[:3]) + ("; ..." if len(findings) > 3 else "")
    raise PlanError(
        f"{info.ident}: --as-of {iso_ms(as_of_ms)} refused: the table's snapshot times are its writers' and cannot "
        f"be trusted ({why}); choose a snapshot with --snapshot-id: {shown}{more}"
    )


def selection_patterns(tables: Sequence[str] = (), namespaces: Sequence[str] = ()) -> tuple[str, ...]:
    """The group of a run's `--table ns.name` and `--namespace ns` selection (empty: the whole bucket)."""
    return (*tables, *(f"{ns}.*" for ns in namespaces))
