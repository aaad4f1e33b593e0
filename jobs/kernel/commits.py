"""A table's commit history as its metadata file tells it, and how far a replica lags it: the source's commit times
(through the metadata cache: each file is summarised once, `s3tables_kit.jobs.kernel.metadata_cache`) and the age of the
oldest commit a replica lacks. `status` reports that lag; failover reports it as the RPO of a promotion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, MetadataSummary
from s3tables_kit.jobs.kernel.sdk import BucketRef
from s3tables_kit.jobs.kernel.snapshots import CLOCK_SKEW_MS
from s3tables_kit.jobs.kernel.tables import TableRef, metadata_location, read_object, table_call

NO_CACHE = MetadataCache.disabled()
# `source_commits`' answer when some commit was dated in the future: a finding the monitor counts (`StatusReadErrors`).
FUTURE_DATED = "metadata, future-dated commits at modifiedAt"

# ----------------------------------------------------------------------------------------------------
# Metadata summaries, through the cache
# ----------------------------------------------------------------------------------------------------


def summary_at(clients: Clients, location: str, bucket_arn: str, cache: MetadataCache) -> MetadataSummary:
    """The summary of the metadata file at `location` (of a table of `bucket_arn`): from the cache, else one
    GetObject, summarised and cached. Raises ClientError (the read) or ValueError (not a JSON object)."""
    summary = cache.get(location)
    if summary is None:
        b = BucketRef(bucket_arn)
        summary = MetadataSummary.parse(read_object(clients, location, b.region, b.account))
        cache.put(location, summary)
    return summary


def utc_from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


# ----------------------------------------------------------------------------------------------------
# Source commit times
# ----------------------------------------------------------------------------------------------------


def commit_times(metadata: Mapping[str, Any] | MetadataSummary) -> list[datetime]:
    """Every commit time known to an Iceberg metadata document (or its summary), ascending."""
    s = metadata if isinstance(metadata, MetadataSummary) else MetadataSummary.of(metadata)
    return [utc_from_ms(ms) for ms in s.commit_ms]


def source_commits(clients: Clients, table: TableRef, cache: MetadataCache = NO_CACHE) -> tuple[list[datetime], str]:
    """(commit times ascending, where they came from). Empty when the table has no committed metadata. The metadata's
    times are its writers': one dated in the future (beyond Iceberg's minute of skew) would make a lag look 0, so it
    is replaced by the table's `modifiedAt` (GetTable), which the service sets (`cap_future_commits`)."""
    loc = table_call(clients, table.bucket_arn, table.namespace, table.name, "get_table_metadata_location")
    location = metadata_location(loc)
    if not location:
        return [], "metadata"
    try:
        times = commit_times(summary_at(clients, location, table.bucket_arn, cache))
    except (ClientError, ValueError):
        times = []
    now = datetime.now(UTC)
    if times and not future_commits(times, now):
        return times, "metadata"
    got = table_call(clients, table.bucket_arn, table.namespace, table.name, "get_table")
    modified = got["modifiedAt"].astimezone(UTC)
    if times:
        return cap_future_commits(times, now, modified), FUTURE_DATED
    return [modified], "modifiedAt (lower bound)"


def future_commits(times: Sequence[datetime], now: datetime) -> list[datetime]:
    """The commit times later than `now` plus Iceberg's minute of skew (pure)."""
    return [t for t in times if t > now + timedelta(milliseconds=CLOCK_SKEW_MS)]


def cap_future_commits(times: Sequence[datetime], now: datetime, modified: datetime) -> list[datetime]:
    """Writer-chosen commit times with each one dated in the future replaced by `modified`, the time the service set
    (pure, ascending)."""
    late = set(future_commits(times, now))
    return sorted(modified if t in late else t for t in times)


def compute_lag(commits: Sequence[datetime], replicated_at: datetime | None, now: datetime) -> float:
    """Age in seconds of the oldest commit after `replicated_at` (all commits if never replicated); 0 if
    none."""
    pending = [c for c in commits if replicated_at is None or c > replicated_at]
    if not pending:
        return 0.0
    return max(0.0, (now - min(pending)).total_seconds())
