"""The backfill, watched: when the replicas of an adopted lake are real copies (`status --backfill`).

    s3tables-kit status --backfill --outputs outputs.json [--watch 60 [--refreshes N]] [--json]

Turning replication on for a bucket that already holds tables starts a backfill: the service copies each table's
current state into every destination, then keeps it up to date. Until a table's status for a destination is
COMPLETED its replica is not a copy (docs/recovery.md, "A replica still backfilling"). Per destination bucket this view
shows the tables completed, pending and failed (DETACHED counts as failed: it never completes), the bytes done and
remaining, the rate and an ETA.

Bytes come from the snapshot summaries, never from listing files: ``total-files-size`` of the source table's current
snapshot is what the replica must hold; of the replica's current snapshot, what it holds. A COMPLETED destination holds
the source's current metadata (docs/aws-facts.md#replication), so it is counted done without reading the replica; a
pending or failed one is read (a replica the service has not created yet holds 0 bytes). Each table is read the way
`status` reads a replica window: one Iceberg REST ``loadTable`` on a run with nothing cached to reuse, else its
metadata location and the cached summary of the file (`s3tables_kit.jobs.kernel.metadata_cache`; decision 0031). A table
whose summary has no ``total-files-size`` is counted but not sized (the report says how many).

Rate and ETA need two observations: with ``--watch <seconds>`` the view refreshes and the rate of each destination is
its bytes done since the watch's first observation over the time since then; the ETA is the bytes remaining at that
rate. ``GetTableReplicationStatus`` gives no start time of a backfill, so a single observation says the rate is unknown.
The watch ends when every table is COMPLETED, after ``--refreshes`` observations, or on Ctrl-C.

A table whose own table-level replication overrides the bucket's (docs/aws-facts.md#replication) may replicate
elsewhere and never reach a destination of the kit: with the outputs, each replicated source table must report every
one of its source's destinations; one it does not report is a row BYPASSED (not a copy, it never completes on its own),
and its replication toward other buckets is not the kit's backfill (a warning names it).

Exit codes: 0 when every replicated table's status is COMPLETED for every destination; 1 while one is pending, failed,
detached or bypassed; 2 when some table's status could not be read (health unknown) or on bad input. Tables without any
replication configuration are not part of a backfill: they are counted apart and do not hold the exit code.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.commits import NO_CACHE, summary_at
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache
from s3tables_kit.jobs.kernel.options import refuse
from s3tables_kit.jobs.kernel.render import emit, format_duration, render_table
from s3tables_kit.jobs.kernel.sdk import BucketRef, describe_error, error_code
from s3tables_kit.jobs.kernel.tables import TableRef, metadata_location, table_call
from s3tables_kit.jobs.ops.cli import ambiguous_tables, table_label
from s3tables_kit.jobs.ops.status_metadata import loaded_summary
from s3tables_kit.jobs.ops.status_rows import (
    COMPLETED,
    DETACHED,
    ERROR,
    FAILED,
    PENDING,
    UNCONFIGURED,
    DestinationStatus,
)

BYPASSED = "bypassed"  # the table's own replication leaves out a destination of the kit: its replica is no copy
RATE_UNKNOWN = "rate unknown: one observation (refresh with --watch <seconds> for a rate and an ETA)"


@dataclass
class TableBackfill:
    """One source table toward one destination: its status and sizes (bytes of the current snapshot's summary)."""

    source_bucket_arn: str
    table: str  # namespace.name
    destination_bucket_arn: str
    status: str  # completed | pending | failed | detached | bypassed
    source_bytes: int | None = None
    replica_bytes: int | None = None
    failure_message: str | None = None

    @property
    def done_bytes(self) -> int | None:
        if self.status == COMPLETED:
            return self.source_bytes
        if self.replica_bytes is None or self.source_bytes is None:
            return self.replica_bytes
        return min(self.replica_bytes, self.source_bytes)

    @property
    def remaining_bytes(self) -> int | None:
        if self.status == COMPLETED:
            return 0
        if self.source_bytes is None or self.replica_bytes is None:
            return None
        return max(0, self.source_bytes - self.replica_bytes)


@dataclass
class DestinationBackfill:
    """The backfill into one destination bucket. `rate_bytes_per_second` and `eta_seconds`: None until two
    observations (`with_rate`)."""

    destination_bucket_arn: str
    completed: int = 0
    pending: int = 0
    failed: int = 0  # failed, detached and bypassed: none completes on its own
    bytes_done: int = 0
    bytes_remaining: int = 0
    bytes_pending: int = 0  # of `bytes_remaining`, what pending tables lack (failed ones wait for a fix, not time)
    unsized: int = 0  # tables whose bytes (done or remaining) are unknown
    rate_bytes_per_second: float | None = None
    eta_seconds: float | None = None

    @property
    def tables(self) -> int:
        return self.completed + self.pending + self.failed


@dataclass
class BackfillReport:
    generated_at: str
    tables: int  # source tables
    rows: list[TableBackfill] = field(default_factory=list)
    destinations: list[DestinationBackfill] = field(default_factory=list)
    unconfigured: int = 0  # source tables without any replication configuration
    errors: list[str] = field(default_factory=list)  # tables whose status could not be read, with why
    warnings: list[str] = field(default_factory=list)
    rate_note: str | None = RATE_UNKNOWN
    observations: int = 1

    @property
    def complete(self) -> bool:
        return all(r.status == COMPLETED for r in self.rows)

    @property
    def exit_code(self) -> int:
        if not self.complete:
            return 1
        return 2 if self.errors else 0

    def with_rate(self, first: BackfillReport) -> BackfillReport:
        """Each destination's rate since `first` (an earlier observation of the same lake) and its ETA (in place)."""
        seconds = (
            datetime.fromisoformat(self.generated_at) - datetime.fromisoformat(first.generated_at)
        ).total_seconds()
        before = {d.destination_bucket_arn: d.bytes_done for d in first.destinations}
        if seconds <= 0:
            return self
        self.rate_note = None
        for d in self.destinations:
            d.rate_bytes_per_second = max(0.0, (d.bytes_done - before.get(d.destination_bucket_arn, 0)) / seconds)
            if d.pending + d.failed == 0:
                d.eta_seconds = 0.0
            elif d.pending and d.rate_bytes_per_second > 0:
                d.eta_seconds = d.bytes_pending / d.rate_bytes_per_second
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at,
            "tables": self.tables,
            "unconfigured": self.unconfigured,
            "complete": self.complete,
            "exit_code": self.exit_code,
            "observations": self.observations,
            "rate_note": self.rate_note,
            "destinations": [asdict(d) | {"tables": d.tables} for d in self.destinations],
            "tables_backfilling": [
                asdict(r) | {"done_bytes": r.done_bytes, "remaining_bytes": r.remaining_bytes}
                for r in self.rows
                if r.status != COMPLETED
            ],
            "errors": list(self.errors),
            "warnings": list(self.warnings),
        }


# ----------------------------------------------------------------------------------------------------
# Collection
# ----------------------------------------------------------------------------------------------------


def current_bytes(
    clients: Clients, bucket_arn: str, table: TableRef, cache: MetadataCache = NO_CACHE, rest: bool = False
) -> int | None:
    """``total-files-size`` of the current snapshot of the table named like `table` in `bucket_arn` (0 when it does not
    exist or has no metadata yet, None when its summary does not say). `rest`: one loadTable first (`status`'s
    first-run read); else, or where the endpoint does not answer, its metadata location and the cached summary.
    Raises ClientError/BotoCoreError/ValueError for what cannot be read."""
    if rest:
        loaded = loaded_summary(clients, bucket_arn, table, cache)
        if loaded is not None:
            return loaded.current_bytes
    try:
        got = table_call(clients, bucket_arn, table.namespace, table.name, "get_table_metadata_location")
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            return 0  # a replica the service has not created yet
        raise
    location = metadata_location(got)
    if location is None:
        return 0
    return summary_at(clients, location, bucket_arn, cache).current_bytes


def backfill_of(
    clients: Clients,
    rows: Sequence[DestinationStatus],
    *,
    generated_at: str,
    tables: int,
    warnings: Sequence[str] = (),
    cache: MetadataCache | None = None,
    concurrency: int = 16,
    rest: bool | None = None,
    expected: Mapping[str, KitDestinations] | None = None,
) -> BackfillReport:
    """The backfill the rows of one `status` run (read without windows) tell, sized from the snapshot summaries of
    each replicated source table and of each replica not yet COMPLETED. `rest`: read each table with one loadTable
    (default: when `cache` holds nothing to reuse). `expected`: per source bucket, the kit's destinations (the
    outputs): a replicated table missing one is BYPASSED, its rows toward other buckets are left out."""
    meta = cache or NO_CACHE
    rest = meta.empty if rest is None else rest
    report = BackfillReport(generated_at=generated_at, tables=tables, warnings=list(warnings))
    by_key: dict[tuple[str, str], TableRef] = {}
    replicated: list[DestinationStatus] = []
    for r in rows:
        namespace, _, name = r.table.partition(".")
        by_key[(r.source_bucket_arn, r.table)] = TableRef(r.source_bucket_arn, namespace, name, r.source_table_arn)
        if r.status == UNCONFIGURED:
            report.unconfigured += 1
        elif r.status == ERROR or not r.destination_bucket_arn:
            report.errors.append(f"{r.table}: {r.failure_message or 'status unreadable'}")
        else:
            replicated.append(r)
    if expected is not None:
        replicated = _kit_rows(replicated, expected, report.warnings)

    def size(key: tuple[str, str, str]) -> int | None:
        bucket_arn, source_bucket_arn, qualified = key
        try:
            return current_bytes(clients, bucket_arn, by_key[(source_bucket_arn, qualified)], meta, rest)
        except (ClientError, BotoCoreError, ValueError) as exc:
            report.warnings.append(f"{qualified} in {BucketRef(bucket_arn).name}: size unknown: {describe_error(exc)}")
            return None

    wanted = sorted(
        {(r.source_bucket_arn, r.source_bucket_arn, r.table) for r in replicated}
        | {(str(r.destination_bucket_arn), r.source_bucket_arn, r.table) for r in replicated if r.status != COMPLETED}
    )
    sizes = dict(zip(wanted, run_concurrently(size, wanted, concurrency), strict=True))
    per_dest: dict[str, DestinationBackfill] = {}
    for r in replicated:
        dest = str(r.destination_bucket_arn)
        row = TableBackfill(
            r.source_bucket_arn,
            r.table,
            dest,
            r.status,
            source_bytes=sizes.get((r.source_bucket_arn, r.source_bucket_arn, r.table)),
            replica_bytes=None if r.status == COMPLETED else sizes.get((dest, r.source_bucket_arn, r.table)),
            failure_message=r.failure_message,
        )
        report.rows.append(row)
        d = per_dest.setdefault(dest, DestinationBackfill(dest))
        if row.status == COMPLETED:
            d.completed += 1
        elif row.status in (FAILED, DETACHED, BYPASSED):
            d.failed += 1
        else:
            d.pending += 1  # PENDING, and any status AWS may add: not a copy until COMPLETED
        done, remaining = row.done_bytes, row.remaining_bytes
        d.bytes_done += done or 0
        d.bytes_remaining += remaining or 0
        d.bytes_pending += (remaining or 0) if row.status not in (COMPLETED, FAILED, DETACHED, BYPASSED) else 0
        d.unsized += int(done is None or remaining is None)
    report.destinations = [per_dest[k] for k in sorted(per_dest)]
    return report


@dataclass(frozen=True)
class KitDestinations:
    """What the outputs say one source replicates: to `destinations`, every table (`tables` None: bucket mode) or the
    listed `namespace.table` names."""

    destinations: frozenset[str]
    tables: frozenset[str] | None = None

    def covers(self, table: str) -> bool:
        return self.tables is None or table in self.tables


def _kit_rows(
    rows: Sequence[DestinationStatus], expected: Mapping[str, KitDestinations], warnings: list[str]
) -> list[DestinationStatus]:
    """The rows toward the kit's destinations, plus a BYPASSED row for each kit destination a replicated table does
    not report (its own table-level replication goes elsewhere); rows toward other buckets become a warning."""
    out: list[DestinationStatus] = []
    reported: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        kit = expected.get(r.source_bucket_arn)
        if kit is None or not kit.covers(r.table):
            out.append(r)
            continue
        seen = reported.setdefault((r.source_bucket_arn, r.table), set())
        seen.add(str(r.destination_bucket_arn))
        if r.destination_bucket_arn in kit.destinations:
            out.append(r)
        else:
            warnings.append(
                f"{r.table}: replicates to {BucketRef(str(r.destination_bucket_arn)).name} (its own table-level "
                "replication), not a destination of the kit"
            )
    for (bucket, table), seen in sorted(reported.items()):
        sample = next(r for r in rows if (r.source_bucket_arn, r.table) == (bucket, table))
        for dest in sorted(expected[bucket].destinations - seen):
            names = ", ".join(sorted(BucketRef(d).name for d in seen)) or "nowhere"
            why = f"own table-level replication to {names}: not a copy"
            out.append(
                replace(
                    sample,
                    destination_bucket_arn=dest,
                    status=BYPASSED,
                    failure_message=why,
                    destination_table_arn=None,
                    last_replicated_at=None,
                    lag_seconds=None,
                    lag_source=None,
                )
            )
    return out


def watch(
    observe: Callable[[], BackfillReport],
    show: Callable[[BackfillReport], None],
    *,
    interval: float,
    refreshes: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> BackfillReport:
    """Observe, show, and again every `interval` seconds, each observation with its rate since the first; until every
    table is COMPLETED, `refreshes` observations were made, or Ctrl-C (the last observation is returned)."""
    first = last = observe()
    show(last)
    try:
        while last.exit_code != 0 and (refreshes is None or last.observations < refreshes):
            sleep(interval)
            seen = last.observations + 1
            last = observe().with_rate(first)
            last.observations = seen
            show(last)
    except KeyboardInterrupt:
        pass
    return last


# ----------------------------------------------------------------------------------------------------
# Rendering and the command line (`status --backfill`)
# ----------------------------------------------------------------------------------------------------


def format_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover - the loop returns at TiB


def render(report: BackfillReport) -> str:
    def where(arn: str) -> str:
        b = BucketRef(arn)
        return f"{b.name}@{b.region}"

    def eta(d: DestinationBackfill) -> str:
        if d.pending + d.failed == 0:
            return "done"
        if d.rate_bytes_per_second is None:
            return "unknown"
        if d.eta_seconds is None:
            return "no progress" if d.pending else "failed tables only"
        return format_duration(d.eta_seconds)

    body = render_table(
        ["DESTINATION", "COMPLETED", "PENDING", "FAILED", "BYTES DONE", "REMAINING", "RATE", "ETA"],
        [
            (
                where(d.destination_bucket_arn),
                d.completed,
                d.pending,
                d.failed,
                format_bytes(d.bytes_done),
                format_bytes(d.bytes_remaining) + (f" (+{d.unsized} unsized)" if d.unsized else ""),
                "unknown" if d.rate_bytes_per_second is None else format_bytes(d.rate_bytes_per_second) + "/s",
                eta(d),
            )
            for d in report.destinations
        ],
    )
    behind = [r for r in report.rows if r.status != COMPLETED]
    ambiguous = ambiguous_tables((r.source_bucket_arn, r.table) for r in report.rows)
    detail = ""
    if behind:
        detail = "\n\n" + render_table(
            ["TABLE", "DESTINATION", "STATUS", "SOURCE", "REPLICA HOLDS", "MESSAGE"],
            [
                (
                    table_label(r.source_bucket_arn, r.table, ambiguous),
                    where(r.destination_bucket_arn),
                    r.status.upper(),
                    format_bytes(r.source_bytes),
                    format_bytes(r.replica_bytes),
                    r.failure_message or "",
                )
                for r in behind
            ],
        )
    counts = {k: sum(1 for r in report.rows if r.status == k) for k in (COMPLETED, PENDING, FAILED, DETACHED, BYPASSED)}
    state = "backfill complete: every replica is a copy" if report.complete else "backfill not complete"
    summary = (
        f"{report.tables} tables ({report.unconfigured} without replication); destination rows: "
        + ", ".join(f"{n} {k}" for k, n in counts.items() if n or k not in (DETACHED, BYPASSED))
        + f"; {state}"
    )
    notes = "".join(f"\n{x}" for x in ([report.rate_note] if report.rate_note else []))
    errors = "".join(f"\nerror: {e}" for e in report.errors)
    warnings = "".join(f"\nwarning: {w}" for w in report.warnings)
    return f"{body}{detail}\n\n{summary}{notes}{errors}{warnings}"


def run(args: argparse.Namespace, observe: Callable[[], BackfillReport]) -> int:
    """`status --backfill` with the options `status` parsed (`--watch`, `--refreshes`, `--json`); `observe` makes one
    observation (`s3tables_kit.jobs.ops.status.collect_backfill`)."""
    if args.watch is not None and args.watch <= 0:
        return refuse(ValueError("--watch takes a positive number of seconds"))
    if args.refreshes is not None and args.refreshes < 1:
        return refuse(ValueError("--refreshes takes a positive number"))

    def show(report: BackfillReport) -> None:
        emit(report, as_json=args.json, render=lambda: render(report) + "\n")

    if args.watch is None:
        report = observe()
        show(report)
        return report.exit_code
    return watch(observe, show, interval=args.watch, refreshes=args.refreshes).exit_code


__all__ = [
    "BackfillReport",
    "DestinationBackfill",
    "KitDestinations",
    "TableBackfill",
    "backfill_of",
    "current_bytes",
    "render",
    "run",
    "watch",
]
