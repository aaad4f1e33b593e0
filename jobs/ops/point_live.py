"""`--as-of replication-point` read live: the sources' replication status now (`s3tables_kit.jobs.ops.status`), its
replication point (`s3tables_kit.jobs.ops.point`). Apart from `s3tables_kit.jobs.ops.point` because `status` imports
that module."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from s3tables_kit.jobs.ops.point import SELECTION, group_selection, replication_points, resolve_point
from s3tables_kit.jobs.ops.status import collect_status


def with_group(
    outputs_path: str | None, name: str, tables: Sequence[str], namespaces: Sequence[str]
) -> tuple[list[str], list[str]]:
    """`--group NAME` of `s3tables_kit.jobs.recover` / `s3tables_kit.jobs.failover`: the selection (`--table`s,
    `--namespace`s) plus the tables of the configured replication point group `NAME` (`[assurance]
    replication_point_groups`, in the outputs), so `--as-of replication-point` is that group's point; ValueError naming
    the configured groups otherwise."""
    if not outputs_path:
        raise ValueError(f"--group {name} needs --outputs (the configured replication point groups are there)")
    from s3tables_kit.topology.outputs import load_outputs

    more_tables, more_namespaces = group_selection(load_outputs(outputs_path).replication_point_groups, name)
    return [*tables, *more_tables], [*namespaces, *more_namespaces]


def live_point(
    clients: Any,
    source_bucket_arns: Sequence[str],
    bucket_arn: str,
    patterns: Sequence[str] = (),
    now: datetime | None = None,
) -> datetime:
    """`resolve_point` on the sources' replication status read now (`s3tables_kit.jobs.ops.status.collect_status`, the
    source accounts' `GetTableReplicationStatus`, as `make status` reads it)."""
    now = now or datetime.now(UTC)
    report = collect_status(
        clients, list(source_bucket_arns), now=now, show_progress=False, list_destinations=False, windows=None
    )
    points = replication_points(report.rows, now, {SELECTION: tuple(patterns)} if patterns else None)
    return resolve_point(points, bucket_arn, patterns)
