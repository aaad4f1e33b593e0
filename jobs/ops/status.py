"""Replication status and lag of every source table, per destination.

    python -m s3tables_kit.jobs.ops.status --outputs outputs.json [--max-lag 30m] [--json] [--problems-only]
    python -m s3tables_kit.jobs.ops.status --outputs outputs.json --backfill [--watch 60]   # the backfill
    (jobs/ops/backfill.py)

Exit codes: 0 healthy; 1 a destination is FAILED, DETACHED or (with ``--max-lag``) lags beyond it; 2 the status of
some table could not be read (permissions, persistent throttling, ...), so health is unknown.

Detached replicas
-----------------
``DisassociateTableReplication`` turns a replica into a standalone table for good
(docs/aws-facts.md#disassociating-a-replica). Such a destination is shown as ``DETACHED`` (not FAILED: it is a permanent
loss of replication for that table on that destination, not a transient failure) with the table and the time replication
last succeeded. It is recognised by either sign (`is_detached`): the source's status for the destination is a failure
whose message begins with AWS's documented prefix "The destination table has been det…" (from the next replication
attempt on), or, before that, the destination bucket's ``ListTables`` (one call per 1,000 tables and destination) lists
the table without ``managedByService``. A destination bucket that cannot be listed leaves only the first sign, with a
warning.

On an estate (several `kit_source` outputs) every source bucket is read; a table is named
``bucket/namespace.name`` where two source buckets hold that name, and the report counts each source bucket.

How lag is computed
-------------------
``GetTableReplicationStatus`` gives, per destination, the status and
``lastSuccessfulReplicatedUpdate.timestamp``.
COMPLETED means the replica's last replicated metadata equals the source's *current* metadata
(docs/aws-facts.md#replication), so its lag is 0 and no further call is made; this keeps a healthy run at one call
per table.

For any other status the lag is **the age of the oldest source commit the replica does not have yet**:
``now - min(commit times after the last replicated update)`` (0 if there is none). It grows while
replication is
stuck, even when the source is idle afterwards, and it does not flag an idle, fully replicated table (``now -
last replicated`` would). The commit times come from the source table's current Iceberg metadata JSON
(``GetTableMetadataLocation``, then the object in the table's warehouse): ``last-updated-ms`` (the latest
commit,
including schema/property changes), each ``metadata-log`` entry (earlier commits) and the snapshot timestamps.
That is the only place with per-commit times; ``GetTable.modifiedAt`` is a fallback when the metadata object
cannot be read (e.g. the caller lacks ``s3tables:GetTableData``): it gives the latest commit only, so the
lag is
then a lower bound and the row says so. A table never replicated counts from its first commit.
Known imprecision: a commit made while a replication run was in flight may be counted as replicated.

Recovery windows
----------------
Per replica table, the point-in-time window that can actually be recovered: from the **oldest snapshot the replica
still retains** to the **last commit it has** (both read from the replica's own Iceberg metadata, one
``GetTableMetadataLocation`` and one object read per replica table; its creation time comes from the ListTables of
its bucket, which also tells whether the service still manages it), shown next to the promised retention (the replica's
``max_snapshot_age_hours`` from the outputs). A window is flagged SHORT when it reaches back less far than promised
(or, for a replica younger than the promise, than the replica's age) by more than `WINDOW_GRACE` — e.g. the
replica's retention was shortened, snapshots were expired by hand, or commits are rarer than the retention (Iceberg
expires the snapshot that was current at the window's start, so the time before the next commit is not
recoverable). ``--no-windows`` skips the reads.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Unpack

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.commits import NO_CACHE, compute_lag, source_commits
from s3tables_kit.jobs.kernel.concurrency import Progress, chunks, processes_for, run_concurrently, worker_pool
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, resolve_cache_dir
from s3tables_kit.jobs.kernel.options import (
    CONCURRENCY,
    RunOptions,
    add_common_args,
    clients_from_args,
    pause_before_second_pass,
    refuse,
    run_options,
    tool_parser,
)
from s3tables_kit.jobs.kernel.render import emit, format_duration, parse_duration, render_table
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error, error_code, is_transient
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables
from s3tables_kit.jobs.ops import backfill
from s3tables_kit.jobs.ops.cli import ambiguous_tables, table_label
from s3tables_kit.jobs.ops.point import ReplicationPoint, parse_group, render_points, replication_points
from s3tables_kit.jobs.ops.status_metadata import (
    RecoveryWindow,
    replica_window,
)
from s3tables_kit.jobs.ops.status_rows import (  # the vocabulary of a status row, used by every reader of a report
    COMPLETED,
    DETACHED,
    DETACHED_MESSAGE_PREFIX,
    DETACHED_NOTE,
    ERROR,
    FAILED,
    PENDING,  # noqa: F401 - re-exported: readers of a report take the vocabulary from here
    UNCONFIGURED,
    DestinationStatus,
)


@dataclass
class StatusReport:
    generated_at: str
    max_lag_seconds: float | None
    tables: int
    rows: list[DestinationStatus] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    second_pass: int = 0  # tables read again after a pause (a transient error survived the retries)
    second_pass_unresolved: int = 0  # of those, still unreadable after the second pass
    tables_by_source: dict[str, int] = field(default_factory=dict)  # source bucket ARN -> its tables, in order
    # replication point groups (`s3tables_kit.jobs.ops.point`)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    created: dict[str, datetime | None] = field(default_factory=dict)  # namespace.name -> ListTables' createdAt

    @property
    def points(self) -> list[ReplicationPoint]:
        """The replication point of every destination bucket and group (`s3tables_kit.jobs.ops.point`)."""
        amb = ambiguous_tables((r.source_bucket_arn, r.table) for r in self.rows)
        label = lambda r: table_label(r.source_bucket_arn, r.table, amb)  # noqa: E731
        return replication_points(self.rows, datetime.fromisoformat(self.generated_at), self.groups, label)

    @property
    def estate(self) -> bool:
        """Several source buckets (an estate): the report then names each and its counts."""
        return len(self.tables_by_source) > 1

    @property
    def failed(self) -> list[DestinationStatus]:
        return [r for r in self.rows if r.status == FAILED]

    @property
    def detached(self) -> list[DestinationStatus]:
        return [r for r in self.rows if r.status == DETACHED]

    @property
    def lagging(self) -> list[DestinationStatus]:
        return [r for r in self.rows if r.lagging]

    @property
    def errors(self) -> list[DestinationStatus]:
        return [r for r in self.rows if r.status == ERROR]

    @property
    def short_windows(self) -> list[DestinationStatus]:
        return [r for r in self.rows if r.window is not None and r.window.short]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    @property
    def untrusted_times(self) -> list[DestinationStatus]:
        """Replicas whose snapshot times are in the future or go backwards
        (`s3tables_kit.jobs.kernel.snapshot_times`)."""
        return [r for r in self.rows if r.window is not None and r.window.time_findings]

    @property
    def exit_code(self) -> int:
        if self.failed or self.detached or self.lagging or self.untrusted_times:
            return 1
        return 2 if self.errors else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at,
            "max_lag_seconds": self.max_lag_seconds,
            "tables": self.tables,
            "counts": self.counts(),
            "failed": len(self.failed),
            "detached": len(self.detached),
            "lagging": len(self.lagging),
            "errors": len(self.errors),
            "short_windows": len(self.short_windows),
            "untrusted_times": len(self.untrusted_times),
            "buffered_rows": sum({r.source_table_arn: r.buffered_rows or 0 for r in self.rows}.values()),
            "second_pass": self.second_pass,
            "second_pass_unresolved": self.second_pass_unresolved,
            "exit_code": self.exit_code,
            "destinations": [asdict(r) for r in self.rows],
            "replication_points": [p.to_json() for p in self.points],
            "warnings": list(self.warnings),
        } | ({"sources": self.by_source()} if self.estate else {})

    def by_source(self) -> list[dict[str, Any]]:
        """Per source bucket: its tables and the counts of its destination rows (an estate's report)."""
        out = []
        for arn, tables in self.tables_by_source.items():
            counts: dict[str, int] = {}
            for r in self.rows:
                if r.source_bucket_arn == arn:
                    counts[r.status] = counts.get(r.status, 0) + 1
            out.append({"source_bucket_arn": arn, "tables": tables, "counts": dict(sorted(counts.items()))})
        return out


SECOND_PASS_PAUSE = 5.0  # seconds between the first pass and the second pass over tables unread after retries
SECOND_PASSES = 3  # at most this many passes after the first, while each still recovers tables


# ----------------------------------------------------------------------------------------------------
# Detached replicas
# ----------------------------------------------------------------------------------------------------


def is_detached(failure_message: str | None, managed: bool | None) -> bool:
    """A destination whose table was disassociated from replication: the source reports AWS's documented failure
    message for it, or the destination table exists but is not managed by the service (`managed` False; None when
    unknown or absent)."""
    return bool(failure_message and failure_message.startswith(DETACHED_MESSAGE_PREFIX)) or managed is False


def tables_by_name(clients: Clients, bucket_arn: str, page_size: int | None = None) -> dict[str, TableRef]:
    """{namespace.name: the table as ListTables tells it} of one bucket."""
    return {t.qualified: t for t in list_tables(clients, bucket_arn, page_size)}


def list_replica_buckets(
    clients: Clients, bucket_arns: Sequence[str], page_size: int | None = None
) -> dict[str, dict[str, TableRef]]:
    """{bucket ARN: {namespace.name: its table as ListTables tells it (managed by the service, created at)}} of each
    bucket, the buckets side by side; a bucket that cannot be listed is left out (`mark_detached` lists it again and
    warns; its replicas' windows take a GetTable each)."""

    def one(arn: str) -> dict[str, TableRef] | None:
        try:
            return tables_by_name(clients, arn, page_size)
        except ClientError:
            return None

    found = run_concurrently(one, list(bucket_arns), max(1, len(bucket_arns)))
    return {arn: tables for arn, tables in zip(bucket_arns, found, strict=True) if tables is not None}


def mark_detached(
    clients: Clients,
    report: StatusReport,
    *,
    list_destinations: bool = True,
    page_size: int | None = None,
    listed: dict[str, dict[str, TableRef]] | None = None,
) -> None:
    """Re-classify the report's rows of disassociated destinations as DETACHED (in place). With
    `list_destinations`, each destination bucket is listed once (unless `listed` already holds its listing) so a
    detachment is seen before the source's next replication attempt; a bucket that cannot be listed is a warning,
    not an error."""
    replicas = dict(listed or {})
    if list_destinations:
        dests = sorted({r.destination_bucket_arn for r in report.rows if r.destination_bucket_arn} - set(replicas))
        for dest in dests:
            try:
                replicas[dest] = tables_by_name(clients, dest, page_size)
            except ClientError as exc:
                report.warnings.append(
                    f"{dest}: cannot list its tables ({describe_error(exc)}); detached replicas are seen only once "
                    "the source reports them"
                )
    for r in report.rows:
        if r.status in (UNCONFIGURED, ERROR) or not r.destination_bucket_arn:
            continue
        found = replicas.get(r.destination_bucket_arn, {}).get(r.table)
        if is_detached(r.failure_message, found.managed_by is not None if found else None):
            r.status = DETACHED
            r.lagging = False  # permanent, not a delay: its own status and alarm
            r.failure_message = r.failure_message or DETACHED_NOTE


# ----------------------------------------------------------------------------------------------------
# Collection
# ----------------------------------------------------------------------------------------------------


def table_status(
    clients: Clients,
    table: TableRef,
    now: datetime,
    max_lag: timedelta | None,
    windows: dict[str, timedelta | None] | None = None,
    cache: MetadataCache = NO_CACHE,
    created: dict[str, datetime | None] | None = None,
    rest: bool = False,
) -> list[DestinationStatus]:
    """Status and lag per destination; with `windows` ({destination bucket ARN: promised retention or None}), also
    each replica's recovery window (`None` skips the window reads). Metadata files are read through `cache`.
    `created`: {destination bucket ARN: the replica's creation time} where its bucket's ListTables told it.
    `rest`: read a listed replica's location and metadata with one loadTable (`replica_window`)."""
    b = BucketRef(table.bucket_arn)

    def row(**kw: Any) -> DestinationStatus:
        return DestinationStatus(
            source_bucket_arn=table.bucket_arn, table=table.qualified, source_table_arn=table.arn, **kw
        )

    try:
        resp = call(clients.s3tables(b.region, b.account).get_table_replication_status, tableArn=table.arn)
    except (ClientError, BotoCoreError) as exc:
        if error_code(exc) == "NotFoundException":
            return [
                row(
                    destination_bucket_arn=None,
                    status=UNCONFIGURED,
                    failure_message="no replication configuration",
                )
            ]
        return [row(destination_bucket_arn=None, status=ERROR, failure_message=describe_error(exc))]

    commits: list[datetime] | None = None
    lag_source: str | None = None
    out = []
    for d in resp.get("destinations", []):
        status = str(d.get("replicationStatus", "")).lower()
        lsu = d.get("lastSuccessfulReplicatedUpdate") or {}
        replicated_at: datetime | None = lsu.get("timestamp")
        r = row(
            destination_bucket_arn=d.get("destinationTableBucketArn"),
            status=status,
            destination_table_arn=d.get("destinationTableArn"),
            last_replicated_at=replicated_at.astimezone(UTC).isoformat() if replicated_at else None,
            failure_message=d.get("failureMessage"),
        )
        if status == COMPLETED:
            r.lag_seconds = 0.0
        else:
            if commits is None:
                try:
                    commits, lag_source = source_commits(clients, table, cache)
                except (ClientError, BotoCoreError) as exc:
                    r.failure_message = "; ".join(
                        x for x in (r.failure_message, f"lag unknown: {describe_error(exc)}") if x
                    )
                    commits = []
                    lag_source = None
            if lag_source is not None:
                r.lag_seconds = compute_lag(commits, replicated_at, now)
                r.lag_source = lag_source
                r.source_latest_commit_at = commits[-1].isoformat() if commits else None
        r.lagging = bool(max_lag is not None and r.lag_seconds is not None and r.lag_seconds > max_lag.total_seconds())
        dest = r.destination_bucket_arn
        if windows is not None and dest and r.destination_table_arn:
            r.window = replica_window(
                clients, dest, table, now, windows.get(dest), cache, (created or {}).get(dest), rest
            )
        out.append(r)
    return out


def collect_status(
    clients: Clients,
    source_bucket_arns: Sequence[str],
    *,
    now: datetime | None = None,
    max_lag: timedelta | None = None,
    concurrency: int = CONCURRENCY,
    page_size: int | None = None,
    show_progress: bool = True,
    windows: dict[str, timedelta | None] | None = None,
    list_destinations: bool = True,
    second_pass_pause: float = SECOND_PASS_PAUSE,
    processes: int | None = 1,
    cache: MetadataCache | None = None,
) -> StatusReport:
    """`windows`: {destination bucket ARN: promised retention (or None)} to also read every replica's recovery
    window (destinations not in the mapping get a window without a promise); None skips them.
    `list_destinations`: list every destination bucket to see detached replicas early (`mark_detached`).
    `processes`: worker processes for the first pass (None: `processes_for` decides by the table count).
    `cache`: summaries of metadata files by location (`s3tables_kit.jobs.kernel.metadata_cache`; None: every file is
    read). A cache with nothing to reuse (a first run, or none) has each listed replica read with one loadTable of the
    Iceberg REST endpoint, its location and metadata together; else its location, then its metadata unless cached."""
    now = now or datetime.now(UTC)
    meta = cache or NO_CACHE
    rest = meta.empty
    tables: list[TableRef] = []
    by_source: dict[str, int] = {}
    for arn in source_bucket_arns:
        listed = list_tables(clients, arn, page_size)
        by_source[arn] = len(listed)
        tables.extend(listed)
    progress = Progress("status", len(tables), enabled=show_progress and len(tables) > 50)
    procs = processes_for(processes, len(tables))
    with worker_pool(clients, procs) as pool:
        if pool is not None:
            pool.warm()  # the workers start (imports, clients) while the destinations are listed
        # The configured destinations are listed first when windows are read: ListTables tells each replica's
        # creation time (a window is not expected to reach back before it), so its location takes a
        # GetTableMetadataLocation, not a GetTable; the same listing tells `mark_detached` which replicas the service
        # still manages.
        replicas = list_replica_buckets(clients, sorted(windows or {}) if list_destinations else [], page_size)

        def created(t: TableRef) -> dict[str, datetime | None]:
            return {d: found[t.qualified].created_at for d, found in replicas.items() if t.qualified in found}

        if pool is not None:
            threads = max(1, concurrency // procs)
            jobs = [
                functools.partial(
                    _status_chunk, part, [created(t) for t in part], now, max_lag, windows, meta, threads, rest
                )
                for part in chunks(tables, CHUNK)
            ]
            per_table = [rows for out in pool.map(jobs, progress) for rows in out]
        else:
            per_table = run_concurrently(
                lambda t: table_status(clients, t, now, max_lag, windows, meta, created(t), rest),
                tables,
                concurrency,
                progress,
            )
    report = StatusReport(
        generated_at=now.isoformat(),
        max_lag_seconds=max_lag.total_seconds() if max_lag else None,
        tables=len(tables),
        tables_by_source=by_source,
        created={t.qualified: t.created_at for t in tables},
    )
    # The second pass: a burst of throttling (or a server error) can outlast every retry of some calls; read those
    # tables again once the burst had `second_pass_pause` seconds to pass, before reporting them as unknown. While a
    # pass still recovers tables, up to `SECOND_PASSES` passes run, each after a pause twice the previous one.
    again = [i for i, rows in enumerate(per_table) if needs_second_pass(rows)]
    report.second_pass = len(again)
    pause = second_pass_pause
    for _ in range(SECOND_PASSES):
        if not again:
            break
        pause_before_second_pass("status", len(again), pause, show_progress)
        redone = run_concurrently(
            lambda i: table_status(clients, tables[i], now, max_lag, windows, meta, created(tables[i]), rest),
            again,
            concurrency,
        )
        for i, rows in zip(again, redone, strict=True):
            per_table[i] = rows
        still = [i for i, rows in zip(again, redone, strict=True) if needs_second_pass(rows)]
        if len(still) == len(again):
            break  # no progress: what is left is not a passing burst
        again, pause = still, pause * 2
    report.second_pass_unresolved = len(again)
    for rows in per_table:
        report.rows.extend(rows)
    mark_detached(clients, report, list_destinations=list_destinations, page_size=page_size, listed=replicas)
    return report


def collect_backfill(
    clients: Clients,
    source_bucket_arns: Sequence[str],
    *,
    cache: MetadataCache | None = None,
    second_pass_pause: float = SECOND_PASS_PAUSE,
    expected: Mapping[str, backfill.KitDestinations] | None = None,
    **run: Unpack[RunOptions],
) -> backfill.BackfillReport:
    """One observation of `status --backfill`: the status of every source table (no windows), then the sizes
    (`s3tables_kit.jobs.ops.backfill.backfill_of`), with one loadTable a table when `cache` held nothing to reuse before
    it. `run`: as `collect_status` takes them; the sizes are read with the same concurrency. `expected`: the kit's
    destinations per source (the outputs), which every replicated table must reach."""
    rest = (cache or NO_CACHE).empty
    report = collect_status(clients, source_bucket_arns, cache=cache, second_pass_pause=second_pass_pause, **run)
    return backfill.backfill_of(
        clients,
        report.rows,
        generated_at=report.generated_at,
        tables=report.tables,
        warnings=report.warnings,
        cache=cache,
        concurrency=run.get("concurrency", CONCURRENCY),
        rest=rest,
        expected=expected,
    )


CHUNK = 250  # tables per worker-process job


def _status_chunk(
    tables: list[TableRef],
    created: list[dict[str, datetime | None]],
    now: datetime,
    max_lag: timedelta | None,
    windows: dict[str, timedelta | None] | None,
    cache: MetadataCache,
    concurrency: int,
    rest: bool,
    clients: Clients,
) -> list[list[DestinationStatus]]:
    """One worker-process job of the first pass: `table_status` of each table, in order (`created`: each table's
    replicas' creation times, as listed)."""
    return run_concurrently(
        lambda tc: table_status(clients, tc[0], now, max_lag, windows, cache, tc[1], rest),
        list(zip(tables, created, strict=True)),
        concurrency,
    )


def needs_second_pass(rows: Sequence[DestinationStatus]) -> bool:
    """Whether a table's status, lag or window could not be read for a transient reason (throttling, 5xx,
    connection)."""

    def unread(r: DestinationStatus) -> bool:
        msg = r.failure_message or ""
        if r.status == ERROR and is_transient(msg):
            return True
        if "lag unknown: " in msg and is_transient(msg.split("lag unknown: ", 1)[1]):
            return True
        note = r.window.note if r.window else None
        return bool(note and note.startswith("window unknown: ") and is_transient(note))

    return any(unread(r) for r in rows)


def _render_window(w: RecoveryWindow | None) -> str:
    if w is None:
        return "-"
    if w.reaches_back_seconds is None:
        return "none" + (" SHORT" if w.short else "")
    text = f"{format_duration(w.reaches_back_seconds)} back"
    if w.promised_seconds is not None:
        text += f" / {format_duration(w.promised_seconds)}"
    return text + (" SHORT" if w.short else "")


def _times(w: RecoveryWindow | None) -> list[str]:
    return [f"UNTRUSTED TIME: {f}" for f in w.time_findings] if w else []


def render(report: StatusReport, problems_only: bool = False) -> str:
    rows = [r for r in report.rows if r.problem] if problems_only else report.rows
    ambiguous = ambiguous_tables((r.source_bucket_arn, r.table) for r in report.rows)
    body = render_table(
        ["TABLE", "DESTINATION", "STATUS", "LAST REPLICATED", "LAG", "RECOVERABLE (RETAINED)", "MESSAGE"],
        [
            (
                table_label(r.source_bucket_arn, r.table, ambiguous),
                BucketRef(r.destination_bucket_arn).name + "@" + BucketRef(r.destination_bucket_arn).region
                if r.destination_bucket_arn
                else "-",
                r.status.upper() + (" (LAGGING)" if r.lagging else ""),
                (r.last_replicated_at or "-")[:19],
                format_duration(r.lag_seconds) + ("+" if r.lag_source and "lower" in r.lag_source else ""),
                _render_window(r.window),
                "; ".join(x for x in (r.failure_message, r.window.note if r.window else None, *_times(r.window)) if x),
            )
            for r in rows
        ],
    )
    counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items()))
    limit = (
        f"; max lag {format_duration(report.max_lag_seconds)}: {len(report.lagging)} lagging"
        if report.max_lag_seconds
        else ""
    )
    short = f"; {len(report.short_windows)} recovery window(s) shorter than promised" if report.short_windows else ""
    if report.untrusted_times:
        short += f"; {len(report.untrusted_times)} replica(s) with snapshot times in the future or going backwards"
    detached = (
        f"\n{len(report.detached)} DETACHED replica(s): replication to them has stopped for good (README: 'Detached "
        "replicas')"
        if report.detached
        else ""
    )
    warnings = "".join(f"\nwarning: {w}" for w in report.warnings)
    second = (
        f"; {report.second_pass} table(s) read in a second pass ({report.second_pass_unresolved} still unreadable)"
        if report.second_pass
        else ""
    )
    summary = f"{report.tables} tables, {len(report.rows)} destination rows: {counts}{limit}{short}{second}"
    points = render_points(report.points)
    streaming = buffered_summary(report.rows)
    return f"{body}\n\n{summary}{streaming}{_render_sources(report)}{points}{detached}{warnings}"


def buffered_summary(rows: Sequence[DestinationStatus]) -> str:
    """The streaming line (`s3tables_kit.jobs.ops.status_channels`), empty when no source table holds buffered rows."""
    held = {r.source_table_arn: r.buffered_rows for r in rows if r.buffered_rows}
    if not held:
        return ""
    return (
        f"\nstreaming: ~{sum(n for n in held.values() if n)} row(s) accepted on {len(held)} table(s) not yet "
        "committed: outside every replica's recovery point until committed and replicated"
    )


def _render_sources(report: StatusReport) -> str:
    """An estate's report names every source bucket and its counts (nothing for one source bucket)."""
    if not report.estate:
        return ""
    lines = []
    for s in report.by_source():
        counts = ", ".join(f"{n} {k}" for k, n in s["counts"].items()) or "no destination rows"
        lines.append(f"\n  source {BucketRef(s['source_bucket_arn']).name}: {s['tables']} tables: {counts}")
    return "".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = tool_parser("status", __doc__)
    add_common_args(p)
    p.add_argument("--max-lag", type=parse_duration, help="exit 1 when a destination lags beyond this (30m, 2h, ...)")
    p.add_argument(
        "--source-bucket-arn",
        action="append",
        help="source table bucket (default: every source of the outputs; repeatable)",
    )
    p.add_argument(
        "--problems-only", action="store_true", help="only failed, lagging, unreadable and short-window rows"
    )
    p.add_argument(
        "--no-windows", action="store_true", help="skip the recovery windows (a read or two per replica table fewer)"
    )
    p.add_argument(
        "--cache-dir",
        help="summaries of metadata files, by location (immutable: reused across runs); default $KIT_CACHE_DIR, "
        "else ~/.cache/s3tables-kit/metadata",
    )
    p.add_argument("--no-cache", action="store_true", help="read every metadata file; neither read nor write the cache")
    p.add_argument(
        "--second-pass-pause",
        type=float,
        default=SECOND_PASS_PAUSE,
        help=f"seconds before tables unread after retries are read again (default {SECOND_PASS_PAUSE:g})",
    )
    p.add_argument(
        "--group", action="append", default=[], type=parse_group, metavar="NAME=NS.T,NS.*", help="a point group"
    )
    p.add_argument(
        "--backfill",
        action="store_true",
        help="the backfill per destination: tables completed, pending and failed, bytes done and remaining, rate and "
        "ETA; exit 0 only when every replicated table is COMPLETED (jobs/ops/backfill.py)",
    )
    p.add_argument("--watch", type=float, metavar="SECONDS", help="with --backfill: refresh every SECONDS (rate, ETA)")
    p.add_argument("--refreshes", type=int, help="with --watch: stop after this many observations")
    p.add_argument("--no-channels", action="store_true", help="skip the PutRows channels (a GetChannel per table)")
    args = p.parse_args(argv)
    if (args.watch is not None or args.refreshes is not None) and not args.backfill:
        return refuse(ValueError("--watch and --refreshes go with --backfill"))

    buckets = args.source_bucket_arn
    promised: dict[str, timedelta | None] = {}
    groups: dict[str, tuple[str, ...]] = {}
    expected: dict[str, backfill.KitDestinations] | None = None
    if not buckets or Path(args.outputs).is_file():
        from s3tables_kit.topology.outputs import OutputsError, load_outputs

        try:
            outputs = load_outputs(args.outputs)
        except OutputsError as err:
            if not buckets:
                return refuse(err)
            outputs = None  # explicit buckets: the outputs only add the promised retention (windows not flagged)
        if outputs is not None:
            buckets = buckets or [s.table_bucket_arn for s in outputs.sources]  # every source of an estate
            promised = {
                r.table_bucket_arn: timedelta(hours=r.snapshot_retention.max_snapshot_age_hours)
                for r in outputs.replicas
            }
            groups = dict(outputs.replication_point_groups)  # configured; a `--group` of the same name overrides
            expected = {
                s.table_bucket_arn: backfill.KitDestinations(
                    frozenset(s.destinations),
                    None if s.replication_mode == "bucket" else frozenset(s.replicated_tables),
                )
                for s in outputs.sources
                if s.destinations
            }
    clients = clients_from_args(args)
    cache = None if args.no_cache else MetadataCache.open(resolve_cache_dir(args.cache_dir))
    if args.backfill:
        return backfill.run(
            args,
            lambda: collect_backfill(
                clients,
                buckets,
                cache=cache,
                second_pass_pause=args.second_pass_pause,
                expected=expected,
                **run_options(args),
            ),
        )
    report = collect_status(
        clients,
        buckets,
        max_lag=args.max_lag,
        windows=None if args.no_windows else promised,
        second_pass_pause=args.second_pass_pause,
        cache=cache,
        **run_options(args),
    )
    report.groups = groups | {k: v for g in args.group for k, v in g.items()}
    if not args.no_channels:
        from s3tables_kit.jobs.ops.status_channels import mark_buffered

        report.warnings += mark_buffered(clients, report.rows, args.concurrency)
    return emit(report, as_json=args.json, render=lambda: render(report, args.problems_only))


if __name__ == "__main__":
    sys.exit(main())
