"""The replication point (`s3tables_kit.jobs.ops.point`): pure, on hand-made status rows (no AWS, no Spark); the
emulator-level behaviour (status over HTTP, the monitor's metric, `recover --as-of replication-point`) is in
tests/test_ops_status.py and tests/test_assurance_monitor.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from s3tables_kit.jobs.ops import status as st
from s3tables_kit.jobs.ops.point import WHOLE_BUCKET, parse_group, render_points, replication_points, table_instant

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
SRC = "arn:aws:s3tables:eu-west-1:111111111111:bucket/src"
OTHER_SRC = "arn:aws:s3tables:eu-west-1:111111111111:bucket/other"
D1 = "arn:aws:s3tables:eu-central-1:222222222222:bucket/replica-a"
D2 = "arn:aws:s3tables:us-east-1:222222222222:bucket/replica-b"


def row(table: str, status: str, dest: str | None = D1, *, ago: float | None = None, lag: float | None = None,
        src: str = SRC, exact: bool = False) -> st.DestinationStatus:  # fmt: skip
    return st.DestinationStatus(
        source_bucket_arn=src,
        table=table,
        source_table_arn=f"{src}/table/{table}",
        destination_bucket_arn=dest,
        status=status,
        last_replicated_at=(NOW - timedelta(minutes=ago)).isoformat() if ago is not None else None,
        lag_seconds=0.0 if status == st.COMPLETED else lag,
        lag_source="metadata" if exact else "modifiedAt (lower bound)" if lag else None,
    )


def test_the_point_is_the_oldest_instant_a_replica_holds_completely_and_names_the_table_holding_it() -> None:
    rows = [
        row("sales.orders", st.COMPLETED, ago=600),  # idle and complete: never holds the point back
        row("sales.refunds", st.PENDING, ago=20, lag=900),  # lag a lower bound only: its last replicated update
        row("ops.incidents", st.FAILED, ago=45, lag=3000),
    ]
    [p] = replication_points(rows, NOW)
    assert (p.destination_bucket_arn, p.group, p.tables) == (D1, WHOLE_BUCKET, 3)
    assert p.point == "2026-11-24T11:15:00.000Z" and p.age_seconds == 45 * 60
    assert p.held_back_by == "ops.incidents" and p.reason == "FAILED: last replicated commit"
    # with the source's commit times (metadata), the point is the millisecond before the oldest lacking commit:
    # until then the source's state is the replica's, however long ago the last replicated update was
    rows[2] = row("ops.incidents", st.FAILED, ago=300, lag=1800, exact=True)
    [p] = replication_points(rows, NOW)
    assert p.point == "2026-11-24T11:29:59.999Z" and p.held_back_by == "ops.incidents"
    assert p.reason == "FAILED: lacks commits since"
    assert "held back by ops.incidents (FAILED: lacks commits since then)" in render_points([p])


def test_every_table_up_to_date_puts_the_point_at_the_read_and_each_destination_has_its_own() -> None:
    rows = [
        row("sales.orders", st.COMPLETED, D1, ago=600),
        row("sales.orders", st.PENDING, D2, ago=5, lag=120),
        row("sales.refunds", st.PENDING, D1, ago=30, lag=0.0),  # pending, but no source commit lacking
        row("sales.refunds", st.COMPLETED, D2, ago=30),
    ]
    a, b = replication_points(rows, NOW)
    assert (a.destination_bucket_arn, a.point, a.age_seconds, a.held_back_by) == (
        D1,
        "2026-11-24T12:00:00.000Z",
        0.0,
        None,
    )
    assert (b.destination_bucket_arn, b.held_back_by, b.age_seconds) == (D2, "sales.orders", 300.0)


def test_a_table_without_an_instant_leaves_the_group_without_a_point() -> None:
    never = [row("sales.orders", st.COMPLETED), row("sales.refunds", st.PENDING, lag=60, exact=True)]
    [p] = replication_points(never, NOW)
    assert p.point is None and p.age_seconds == 60  # no point; the age of its first commit for the alarm
    assert (p.held_back_by, p.reason) == ("sales.refunds", "PENDING: never replicated")
    # a table whose status is unreadable (no destination row) counts in every destination of its source bucket,
    # not in another source's; a table without replication is in no point
    rows = [
        row("sales.orders", st.COMPLETED, D1),
        row("sales.orders", st.COMPLETED, D2),
        row("sales.refunds", st.ERROR, None),
        row("tmp.scratch", st.UNCONFIGURED, None),
        row("ops.incidents", st.COMPLETED, D2, src=OTHER_SRC),
    ]
    points = {p.destination_bucket_arn: p for p in replication_points(rows, NOW)}
    assert points[D1].held_back_by == "sales.refunds" and points[D1].tables == 2
    assert points[D2].point is None and points[D2].tables == 3
    assert table_instant(rows[2], NOW) == (None, "replication status unreadable")


def test_groups_select_tables_by_pattern_and_are_reported_next_to_the_whole_bucket() -> None:
    rows = [
        row("sales.orders", st.PENDING, ago=10, lag=60),
        row("sales.refunds", st.COMPLETED),
        row("ops.incidents", st.PENDING, ago=90, lag=60),
    ]
    groups = parse_group("sales=sales.*") | parse_group("billing=billing.invoices")
    whole, sales = replication_points(rows, NOW, groups)  # a group with no table of the bucket is not reported
    assert (whole.group, whole.held_back_by, whole.age_seconds) == (WHOLE_BUCKET, "ops.incidents", 5400.0)
    assert (sales.group, sales.tables, sales.held_back_by, sales.age_seconds) == ("sales", 2, "sales.orders", 600.0)
    text = render_points([whole, sales])
    assert "replica-a@eu-central-1 [whole bucket, 3 tables]: 2026-11-24T10:30:00.000Z (age 1h30m), held back " in text
    assert "[group sales, 2 tables]" in text
    for bad in ("sales", "=sales.*", "*=sales.*", "sales="):
        with pytest.raises(ValueError, match="expected NAME=PATTERN"):
            parse_group(bad)


def test_the_status_report_carries_the_points_in_its_json() -> None:
    report = st.StatusReport(generated_at=NOW.isoformat(), max_lag_seconds=None, tables=2)
    report.rows = [row("sales.orders", st.COMPLETED), row("sales.refunds", st.FAILED, ago=15, lag=900)]
    [p] = report.to_json()["replication_points"]
    assert p["point"] == "2026-11-24T11:45:00.000Z" and p["held_back_by"] == "sales.refunds"
    assert "held back by sales.refunds (FAILED: last replicated commit)" in st.render(report)


def test_as_of_replication_point_resolves_to_the_point_of_the_selection_or_says_why_not() -> None:
    from s3tables_kit.jobs.kernel.selectors import selection_patterns
    from s3tables_kit.jobs.ops.point import resolve_point

    rows = [
        row("sales.orders", st.PENDING, ago=10, lag=60),  # last replicated 10 min ago
        row("sales.refunds", st.COMPLETED),
        row("ops.incidents", st.PENDING, lag=60, exact=True),  # never replicated
    ]
    sales = selection_patterns(namespaces=["sales"])
    assert sales == ("sales.*",) and selection_patterns(["ops.incidents"], ["sales"]) == ("ops.incidents", "sales.*")
    points = replication_points(rows, NOW, {"selection": sales})
    assert resolve_point(points, D1, sales) == NOW - timedelta(minutes=10)
    with pytest.raises(ValueError, match=r"replica-a has no replication point: ops\.incidents holds it back"):
        resolve_point(points, D1)  # the whole bucket: a table never replicated has no instant to restore to
    with pytest.raises(ValueError, match=r"no replicated table of replica-b"):
        resolve_point(points, D2, sales)
