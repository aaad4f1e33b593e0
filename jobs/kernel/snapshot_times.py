"""Writer-chosen times a reader must not trust (pure): a snapshot dated in the future, and a snapshot log that goes
backwards. Iceberg's own metadata builder refuses both beyond one minute (`TableMetadata`: "Expected sorted snapshot
log entries", "Invalid update timestamp"), but a metadata file written by hand carries whatever its writer chose, and
`timestamp-ms` is what `--as-of`, freshness and the recovery window read. Either is a finding of `status` and
`audit`, fails the rehearsal, and makes `--as-of` refuse to resolve on that table
(`s3tables_kit.jobs.kernel.selectors`): in log
order, one backdated commit appended last would become "the state as of" every later instant.

`snapshot_time_findings` reads a parsed table (`TableInfo`); `summary_time_findings` reads the ops tools' cached
summary of a metadata file (`MetadataSummary`), which keeps what the findings need (`log_steps_back`,
`newest_snapshot`). The monitor and the replica-side freshness check consume the same functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

from s3tables_kit.jobs.kernel.snapshots import CLOCK_SKEW_MS, TableInfo, iso_ms

FUTURE, BACKWARDS = "snapshot-in-the-future", "snapshot-log-backwards"

Step = tuple[int, int, int, int]  # (earlier entry's timestamp ms, its snapshot id, later entry's timestamp ms, its id)


class TimesSummary(Protocol):
    """What the findings read of a metadata file's summary (`metadata_cache.MetadataSummary` is one), named here so
    that the summary's module may import this one and not the other way round."""

    @property
    def log_steps_back(self) -> tuple[Step, ...]: ...

    @property
    def newest_snapshot(self) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class TimeFinding:
    """One untrustworthy time of a table's metadata: `kind` FUTURE or BACKWARDS, the snapshot it concerns."""

    kind: str
    snapshot_id: int
    timestamp_ms: int
    detail: str

    def line(self, table: str) -> str:
        return f"{table}: {self.kind}: {self.detail}"


def log_steps_back(log: Sequence[tuple[int, int]], skew_ms: int = CLOCK_SKEW_MS) -> tuple[Step, ...]:
    """Each step of a snapshot log (`(timestamp ms, snapshot id)`, in log order) to an entry more than `skew_ms`
    earlier than the one before it (what Iceberg's builder refuses)."""
    return tuple((a[0], a[1], b[0], b[1]) for a, b in pairwise(log) if b[0] < a[0] - skew_ms)


def newest_time(entries: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """The latest `(timestamp ms, snapshot id)` among snapshot-log entries and snapshots (None: none)."""
    return max(entries, default=None)


def time_findings(
    steps_back: Iterable[Step], newest: tuple[int, int] | None, now_ms: int, skew_ms: int = CLOCK_SKEW_MS
) -> list[TimeFinding]:
    """The findings of a table's metadata: its newest snapshot time beyond `now_ms` + `skew_ms`, then each step back
    of its snapshot log."""
    out = []
    if newest is not None and newest[0] > now_ms + skew_ms:
        out.append(
            TimeFinding(
                FUTURE,
                newest[1],
                newest[0],
                f"snapshot {newest[1]} is dated {iso_ms(newest[0])}, after now ({iso_ms(now_ms)})",
            )
        )
    for t0, id0, t1, id1 in steps_back:
        out.append(
            TimeFinding(
                BACKWARDS,
                id1,
                t1,
                f"the snapshot log goes back from snapshot {id0} at {iso_ms(t0)} to snapshot {id1} at {iso_ms(t1)}",
            )
        )
    return out


def snapshot_time_findings(info: TableInfo, now_ms: int, skew_ms: int = CLOCK_SKEW_MS) -> list[TimeFinding]:
    """The time findings of a parsed table: every snapshot and snapshot-log entry against `now_ms`, and the log's
    order (empty: its times can be trusted as Iceberg would)."""
    entries = [*info.snapshot_log, *((s.timestamp_ms, s.snapshot_id) for s in info.snapshots)]
    return time_findings(log_steps_back(info.snapshot_log, skew_ms), newest_time(entries), now_ms, skew_ms)


def summary_time_findings(summary: TimesSummary, now_ms: int, skew_ms: int = CLOCK_SKEW_MS) -> list[TimeFinding]:
    """The same findings from the ops tools' summary of a metadata file (its steps back are those of one minute)."""
    return time_findings(summary.log_steps_back, summary.newest_snapshot, now_ms, skew_ms)
