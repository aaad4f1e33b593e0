"""One row of `status`: a source table toward one destination, and the words its status is said in. Apart from
`s3tables_kit.jobs.ops.status` so that a view over its rows (`s3tables_kit.jobs.ops.backfill`) needs nothing of how they
are collected."""

from __future__ import annotations

from dataclasses import dataclass

from s3tables_kit.jobs.ops.status_metadata import RecoveryWindow

COMPLETED, PENDING, FAILED = "completed", "pending", "failed"
UNCONFIGURED, ERROR = "unconfigured", "error"
DETACHED = "detached"  # ours, not an AWS status: the destination table was disassociated from replication
# Documented (AWS user guide, "Disassociating a replica table"): the source's GetTableReplicationStatus reports FAILED
# for a disassociated destination with a failure message that begins so.
DETACHED_MESSAGE_PREFIX = "The destination table has been det"
DETACHED_NOTE = (
    "the destination table is no longer managed by S3 Tables replication (disassociated): replication of this "
    "table to this destination has stopped for good"
)


@dataclass
class DestinationStatus:
    source_bucket_arn: str
    table: str  # namespace.name
    source_table_arn: str
    destination_bucket_arn: str | None
    status: str  # completed | pending | failed (lower case), unconfigured, error
    destination_table_arn: str | None = None
    last_replicated_at: str | None = None
    source_latest_commit_at: str | None = None
    lag_seconds: float | None = None
    lag_source: str | None = None  # "metadata" | "modifiedAt (lower bound)" | None
    failure_message: str | None = None
    lagging: bool = False
    window: RecoveryWindow | None = None
    # rows a PutRows channel accepted on the source table, not yet committed: outside this replica's recovery point
    buffered_rows: int | None = None

    @property
    def problem(self) -> bool:
        w = self.window
        return self.status in (FAILED, DETACHED, ERROR) or self.lagging or bool(w and (w.short or w.time_findings))


__all__ = [
    "COMPLETED",
    "DETACHED",
    "DETACHED_MESSAGE_PREFIX",
    "DETACHED_NOTE",
    "ERROR",
    "FAILED",
    "PENDING",
    "UNCONFIGURED",
    "DestinationStatus",
    "is_detached",
]


def is_detached(failure_message: str | None, managed: bool | None) -> bool:
    """A destination whose table was disassociated from replication: the source reports AWS's documented failure
    message for it, or the destination table exists but is not managed by the service (`managed` False; None when
    unknown or absent)."""
    return bool(failure_message and failure_message.startswith(DETACHED_MESSAGE_PREFIX)) or managed is False
