"""What `s3tables_kit.jobs.ops.status` reads from Iceberg metadata files: each replica's recovery window (the source's
commit times, for the lag, are `s3tables_kit.jobs.kernel.commits`). Each metadata file is summarised once
(`s3tables_kit.jobs.kernel.metadata_cache.MetadataSummary`) and the summary is cached on local disk by the file's
location (immutable: `MetadataCache`), so a run over an unchanged table reads its metadata location (one call) but not
the file. A first run (nothing cached to reuse)
reads each replica's location and metadata in one request of the Iceberg REST endpoint instead
(`replica_window`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.commits import NO_CACHE, summary_at, utc_from_ms
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, MetadataSummary
from s3tables_kit.jobs.kernel.render import format_duration
from s3tables_kit.jobs.kernel.sdk import TRANSIENT_CODES, BucketRef, call, describe_error, error_code
from s3tables_kit.jobs.kernel.snapshot_times import summary_time_findings
from s3tables_kit.jobs.kernel.tables import TableRef, metadata_location

# ----------------------------------------------------------------------------------------------------
# Recovery windows
# ----------------------------------------------------------------------------------------------------

WINDOW_GRACE = timedelta(hours=1)


@dataclass
class RecoveryWindow:
    """What a replica table can recover: any instant from `start` (its oldest retained snapshot) to `end` (its
    last replicated commit), and its latest state. `promised_seconds` is the configured replica retention."""

    start: str | None = None
    end: str | None = None
    seconds: float | None = None  # end - start
    reaches_back_seconds: float | None = None  # now - start: how far back a point in time can be recovered
    promised_seconds: float | None = None
    expected_seconds: float | None = None  # min(promised, age of the replica table)
    snapshots: int = 0
    short: bool = False
    note: str | None = None
    # Snapshot times the replica's writers chose and a reader cannot trust
    # (`s3tables_kit.jobs.kernel.snapshot_times`): a finding.
    time_findings: list[str] = field(default_factory=list)


def snapshot_times(metadata: Mapping[str, Any] | MetadataSummary) -> list[datetime]:
    """Commit times of the snapshots a metadata document (or its summary) still retains, ascending."""
    s = metadata if isinstance(metadata, MetadataSummary) else MetadataSummary.of(metadata)
    return [utc_from_ms(ms) for ms in s.snapshot_ms]


def recovery_window(
    metadata: Mapping[str, Any] | MetadataSummary,
    now: datetime,
    *,
    promised: timedelta | None,
    created_at: datetime | None,
    grace: timedelta = WINDOW_GRACE,
) -> RecoveryWindow:
    """The recoverable window of one replica table from its metadata or its summary (pure), and the findings of its
    snapshot times: a snapshot dated in the future (the window's end then says nothing) or a log going backwards."""
    times = snapshot_times(metadata)
    w = RecoveryWindow(snapshots=len(times), promised_seconds=promised.total_seconds() if promised else None)
    summary = metadata if isinstance(metadata, MetadataSummary) else MetadataSummary.of(metadata)
    w.time_findings = [f.detail for f in summary_time_findings(summary, int(now.timestamp() * 1000))]
    if not times:
        w.note = "no snapshot yet: nothing to recover"  # an empty table promises nothing
        return w
    start, end = times[0], times[-1]
    w.start, w.end = start.isoformat(), end.isoformat()
    w.seconds = (end - start).total_seconds()
    w.reaches_back_seconds = max(0.0, (now - start).total_seconds())
    if promised is not None:
        expected = promised
        if created_at is not None:
            expected = min(expected, max(timedelta(0), now - created_at))
        w.expected_seconds = expected.total_seconds()
        w.short = w.reaches_back_seconds + grace.total_seconds() < w.expected_seconds
        if w.short:
            w.note = (
                f"recoverable back to {format_duration(w.reaches_back_seconds)} ago, "
                f"{format_duration(w.expected_seconds)} promised"
            )
    return w


def loaded_summary(clients: Clients, bucket_arn: str, table: TableRef, cache: MetadataCache) -> MetadataSummary | None:
    """The summary of a table's current metadata from one loadTable of the Iceberg REST endpoint
    (`s3tables_kit.jobs.kernel.iceberg_rest`), cached by its location; None when the endpoint does not answer it for a
    reason that is not transient (refused to this caller, a missing table, no metadata): the S3 Tables API then answers,
    and says why. Transient errors are raised (the tools' second pass reads the table again)."""
    b = BucketRef(bucket_arn)
    rest = clients.iceberg_rest(b.region, b.account)
    if rest.refused:
        return None
    try:
        loaded = call(rest.load_table, bucket_arn, table.namespace, table.name)
    except ClientError as exc:
        if error_code(exc) in TRANSIENT_CODES:
            raise
        return None
    except ValueError:  # an answer that is not a LoadTableResult
        return None
    summary = MetadataSummary.of(loaded.metadata)
    cache.put(loaded.metadata_location, summary)
    return summary


def replica_window(
    clients: Clients,
    bucket_arn: str,
    table: TableRef,
    now: datetime,
    promised: timedelta | None,
    cache: MetadataCache = NO_CACHE,
    created: datetime | None = None,
    rest: bool = False,
) -> RecoveryWindow:
    """Read one replica table's metadata and compute its window. `created`: the table's creation time, from
    ListTables of its bucket (None: GetTable tells it, with the location).

    * `rest` (and `created` known): one loadTable of the Iceberg REST endpoint answers the location and the
      metadata together; the caller asks for it when `cache` holds nothing to reuse. Where the endpoint does not
      answer, the S3 Tables API does (below).
    * Else the metadata location (GetTableMetadataLocation, or GetTable without `created`), then the metadata object
      unless `cache` holds its summary.

    Errors are reported in the window's note, never raised."""
    nothing = RecoveryWindow(promised_seconds=promised.total_seconds() if promised else None)
    try:
        if rest and created is not None:
            loaded = loaded_summary(clients, bucket_arn, table, cache)
            if loaded is not None:
                return recovery_window(loaded, now, promised=promised, created_at=created.astimezone(UTC))
        b = BucketRef(bucket_arn)
        s3t = clients.s3tables(b.region, b.account)
        ident: dict[str, Any] = {"tableBucketARN": bucket_arn, "namespace": table.namespace, "name": table.name}
        if created is not None:
            got = call(s3t.get_table_metadata_location, **ident)
            created_at: datetime | None = created.astimezone(UTC)
        else:
            got = call(s3t.get_table, **ident)
            found = got.get("createdAt")
            created_at = found.astimezone(UTC) if isinstance(found, datetime) else None
        location = metadata_location(got)
        if location is None:
            nothing.note = "replica has no metadata yet"
            return nothing
        summary = summary_at(clients, location, bucket_arn, cache)
        return recovery_window(summary, now, promised=promised, created_at=created_at)
    except (ClientError, BotoCoreError, ValueError) as exc:
        nothing.note = f"window unknown: {describe_error(exc)}"
        return nothing


__all__ = ["WINDOW_GRACE", "RecoveryWindow", "loaded_summary", "recovery_window", "replica_window", "snapshot_times"]
