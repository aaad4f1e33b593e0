"""The planned failover, pure: is a table caught up, which tables are the slowest, the freeze's journal, the proof
of RPO 0 and the report. No I/O but the journal file's text; tested with hand-made facts.

A table is caught up when its replica's current snapshot is the source's current snapshot and the replica's
`last-updated-ms` (the replication service copies the source's value with each commit it replicates) is not older
than the source's: the replica's last replicated update is the source's current metadata. A table promoted by an
earlier, killed run is compared by snapshot only (its lineage commit moved `last-updated-ms`), with the snapshot the
promotion recorded (`kit.failover.replica-snapshot-id`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.kernel.snapshots import TableInfo, iso_ms

SLOWEST_SHOWN = 3
SHOWN_ROWS = 50  # table rows printed at the end of a run (the report has every table)
DEFAULT_TIMEOUT_S = 900.0
DEFAULT_POLL_S = 5.0
# Seconds between putting the freeze and the first catch-up check: a bucket policy takes effect within seconds on
# AWS (how fast is UNVERIFIED); a commit that lands after the check is caught by the proof after the promotion.
DEFAULT_SETTLE_S = 5.0
# How long the writers stay frozen while streaming channels still hold accepted rows before the run refuses: a few
# of the service's commit intervals ("usually within a minute").
DEFAULT_DRAIN_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Head:
    """A table's current state as one side reports it."""

    snapshot_id: int | None
    updated_ms: int | None

    @classmethod
    def of(cls, metadata: dict[str, Any] | None) -> Head:
        if not metadata:
            return cls(None, None)
        sid = metadata.get("current-snapshot-id")
        return cls(None if sid in (None, -1) else int(sid), metadata.get("last-updated-ms"))

    @classmethod
    def of_info(cls, info: TableInfo | None, recorded: str | None = None) -> Head:
        if info is None:
            return cls(None, None)
        sid = int(recorded) if recorded and recorded.lstrip("-").isdigit() else info.current_snapshot_id
        return cls(sid, info.last_updated_ms)


@dataclass(frozen=True)
class CatchUp:
    table: str
    source: Head
    replica: Head
    detached: bool = False  # promoted by an earlier run: compared by snapshot only
    error: str | None = None

    @property
    def caught_up(self) -> bool:
        if self.error is not None or self.source.snapshot_id != self.replica.snapshot_id:
            return False
        return self.detached or (self.replica.updated_ms or 0) >= (self.source.updated_ms or 0)

    @property
    def lag_seconds(self) -> float | None:
        """How far the replica's last replicated update is behind the source's current metadata (None: unknown)."""
        if self.caught_up:
            return 0.0
        if self.source.updated_ms is None or self.replica.updated_ms is None:
            return None
        return max(0.0, (self.source.updated_ms - self.replica.updated_ms) / 1000)

    def describe(self) -> str:
        if self.error:
            return f"unreadable: {self.error}"
        if self.caught_up:
            return f"caught up at snapshot {self.source.snapshot_id}"
        lag = self.lag_seconds
        return (
            f"behind: replica at snapshot {self.replica.snapshot_id} "
            f"({iso_ms(self.replica.updated_ms) if self.replica.updated_ms else 'no metadata'}), source at "
            f"{self.source.snapshot_id} ({iso_ms(self.source.updated_ms) if self.source.updated_ms else '-'})"
            + (f", {lag:.1f}s of commits lacking" if lag is not None else "")
        )


def slowest(states: Sequence[CatchUp], n: int = SLOWEST_SHOWN) -> list[CatchUp]:
    """The tables not caught up, the furthest behind first (unknown lag counts as furthest)."""
    behind = [s for s in states if not s.caught_up]
    return sorted(behind, key=lambda s: (-(s.lag_seconds if s.lag_seconds is not None else float("inf")), s.table))[:n]


def progress_line(states: Sequence[CatchUp], waited: float) -> str:
    done = sum(s.caught_up for s in states)
    line = f"caught up {done}/{len(states)} after {waited:.1f}s"
    worst = slowest(states)
    if worst:
        line += "; slowest: " + "; ".join(f"{s.table} ({s.describe()})" for s in worst)
    return line


# ----------------------------------------------------------------------------------------------------
# The freeze's journal: what to put back, and since when writers are frozen
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Journal:
    source_bucket_arn: str
    original_policy: str | None  # the bucket policy's text before the freeze (None: it had none)
    frozen_at: str  # ISO 8601 UTC
    run_id: str

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)  # atomic: a kill leaves the old journal or the new one

    @classmethod
    def read(cls, path: Path, source_bucket_arn: str) -> Journal | None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if doc.get("source_bucket_arn") != source_bucket_arn:
            return None
        return cls(doc["source_bucket_arn"], doc.get("original_policy"), doc["frozen_at"], doc["run_id"])


def journal_path(report_dir: Path, source_bucket_name: str) -> Path:
    return report_dir / f".planned-freeze-{source_bucket_name}.json"


# ----------------------------------------------------------------------------------------------------
# Proof and report
# ----------------------------------------------------------------------------------------------------


@dataclass
class TableProof:
    table: str
    verdict: str  # the promotion's verdict (promoted | converged | failed | not promoted)
    source_snapshot_id: int | None = None
    promoted_snapshot_id: int | None = None
    caught_up_after_seconds: float | None = None
    message: str = ""

    @property
    def rpo_zero(self) -> bool:
        return (
            self.verdict in ("promoted", "converged")
            and self.source_snapshot_id is not None
            and self.source_snapshot_id == self.promoted_snapshot_id
        )


@dataclass
class PlannedReport:
    run_id: str
    source_bucket_arn: str
    promoted_bucket_arn: str
    outcome: str  # promoted | timed out | failed before promotion | promotion failed | refused
    started_at: str
    frozen_at: str | None = None
    lifted_at: str | None = None
    write_outage_seconds: float | None = None
    catch_up_seconds: float | None = None
    writable_after_caught_up_seconds: float | None = None
    rto_seconds: float | None = None
    continued_from: str | None = None  # the run id of a killed run this one continued
    tables: list[TableProof] = field(default_factory=list)
    behind: list[str] = field(default_factory=list)  # tables not caught up (timeout)
    messages: list[str] = field(default_factory=list)

    @property
    def rpo_zero(self) -> bool:
        return bool(self.tables) and all(t.rpo_zero for t in self.tables)

    def as_dict(self) -> dict[str, Any]:
        tables = [asdict(t) | {"rpo_zero": t.rpo_zero} for t in self.tables]
        return {**asdict(self), "rpo_zero": self.rpo_zero, "tables": tables}

    def render(self, max_rows: int | None = None) -> str:
        """The report as text; `max_rows`: at most that many table rows (the rest are in the written report)."""
        from s3tables_kit.jobs.kernel.render import render_table

        body = render_table(
            ["TABLE", "VERDICT", "SOURCE SNAPSHOT", "PROMOTED SNAPSHOT", "RPO 0", "CAUGHT UP AFTER", "MESSAGE"],
            [
                (
                    t.table,
                    t.verdict,
                    t.source_snapshot_id or "-",
                    t.promoted_snapshot_id or "-",
                    "yes" if t.rpo_zero else "NO",
                    "-" if t.caught_up_after_seconds is None else f"{t.caught_up_after_seconds:.1f}s",
                    t.message,
                )
                for t in self.tables[:max_rows]
            ],
            max_width=60,
        )
        lines = [body]
        if max_rows is not None and len(self.tables) > max_rows:
            lines.append(f"({len(self.tables) - max_rows} more table(s) in the report)")
        lines += ["", f"Planned failover: {self.outcome}."]
        if self.outcome == "promoted":
            lines.append(
                "RPO: 0, proven (every table's promoted snapshot is the source's current snapshot)"
                if self.rpo_zero
                else "RPO: NOT proven zero for the tables marked NO"
            )
        if self.write_outage_seconds is not None:
            lines.append(f"Write outage (writers frozen): {self.write_outage_seconds:.1f}s")
        if self.catch_up_seconds is not None:
            lines.append(f"Catch-up wait: {self.catch_up_seconds:.1f}s")
        if self.writable_after_caught_up_seconds is not None:
            lines.append(f"Writable after the caught-up check: {self.writable_after_caught_up_seconds:.1f}s")
        if self.rto_seconds is not None:
            lines.append(f"RTO: {self.rto_seconds:.1f}s")
        if self.behind:
            lines.append("Behind (nothing was promoted): " + ", ".join(self.behind))
        lines += [f"note: {m}" for m in self.messages]
        return "\n".join(lines)

    def write(self, report_dir: Path) -> Path:
        d = report_dir / f"{self.started_at[:19].replace('-', '').replace(':', '')}Z-{self.run_id}-planned"
        d.mkdir(parents=True, exist_ok=True)
        (d / "report.json").write_text(json.dumps(self.as_dict(), indent=2, default=str) + "\n", encoding="utf-8")
        (d / "report.md").write_text("# Planned failover report\n\n```\n" + self.render() + "\n```\n", encoding="utf-8")
        return d / "report.md"
