"""`--as-of replication-point` read live: the sources' replication status now (`jobs.ops.status`), its replication
point (`jobs.ops.point`). Apart from `jobs.ops.point` because `status` imports that module."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from jobs.ops.point import SELECTION, replication_points, resolve_point
from jobs.ops.status import collect_status


def live_point(
    clients: Any,
    source_bucket_arns: Sequence[str],
    bucket_arn: str,
    patterns: Sequence[str] = (),
    now: datetime | None = None,
) -> datetime:
    """`resolve_point` on the sources' replication status read now (`jobs.ops.status.collect_status`, the source
    accounts' `GetTableReplicationStatus`, as `make status` reads it)."""
    now = now or datetime.now(UTC)
    report = collect_status(
        clients, list(source_bucket_arns), now=now, show_progress=False, list_destinations=False, windows=None
    )
    points = replication_points(report.rows, now, {SELECTION: tuple(patterns)} if patterns else None)
    return resolve_point(points, bucket_arn, patterns)
