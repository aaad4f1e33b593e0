"""Writer-chosen snapshot times (`jobs/kernel/snapshot_times.py`, pure): a snapshot dated in the future and a
snapshot log that goes backwards are findings, from a parsed table and from the ops tools' cached summary alike, and
`--as-of` refuses to resolve on such a table (naming the snapshots to choose from) instead of trusting log order."""

from __future__ import annotations

from typing import Any

import pytest

from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.metadata_cache import MetadataSummary
from s3tables_kit.jobs.kernel.selectors import PlanError, Selector, resolve_snapshot
from s3tables_kit.jobs.kernel.snapshot_times import (
    BACKWARDS,
    FUTURE,
    snapshot_time_findings,
    summary_time_findings,
)
from s3tables_kit.jobs.kernel.snapshots import table_info_from_metadata

T0 = 1_764_770_000_000
MIN = 60_000
NOW = T0 + 60 * MIN


def _doc(*log: tuple[int, int]) -> dict[str, Any]:
    """A v2 metadata document whose snapshots are `log` ((snapshot id, timestamp ms), in log order)."""
    return {
        "format-version": 2,
        "location": "s3://b/t",
        "current-snapshot-id": log[-1][0],
        "last-updated-ms": max(ts for _, ts in log),
        "schemas": [{"schema-id": 0, "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}],
        "current-schema-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "default-spec-id": 0,
        "snapshots": [{"snapshot-id": sid, "timestamp-ms": ts, "summary": {}} for sid, ts in log],
        "snapshot-log": [{"snapshot-id": sid, "timestamp-ms": ts} for sid, ts in log],
    }


def _both(doc: dict[str, Any], now: int = NOW) -> list[tuple[str, int]]:
    """The findings from the parsed table, asserted equal to the summary's (the summary through its cache form)."""
    info = table_info_from_metadata(Ident("s", "t"), doc)
    parsed = [(f.kind, f.snapshot_id) for f in snapshot_time_findings(info, now)]
    summary = MetadataSummary.from_json(MetadataSummary.of(doc).to_json())
    assert [(f.kind, f.snapshot_id) for f in summary_time_findings(summary, now)] == parsed
    return parsed


def test_an_ordered_log_in_the_past_has_no_finding_and_a_minute_of_skew_is_tolerated() -> None:
    assert _both(_doc((1, T0), (2, T0 + MIN), (3, T0 + 2 * MIN))) == []
    assert _both(_doc((1, T0), (2, T0 + MIN), (3, T0 + MIN - 59_000))) == []  # 59 s back: as Iceberg allows
    assert _both(_doc((1, T0), (2, NOW + 59_000))) == []  # a writer's clock 59 s ahead


def test_a_future_snapshot_and_a_log_going_back_are_findings() -> None:
    assert _both(_doc((1, T0), (2, NOW + 61_000))) == [(FUTURE, 2)]
    backdated = _doc((1, T0), (2, T0 + 30 * MIN), (3, T0 + 10 * MIN))  # commit 3 appended last, dated before 2
    assert _both(backdated) == [(BACKWARDS, 3)]
    info = table_info_from_metadata(Ident("s", "t"), backdated)
    (finding,) = snapshot_time_findings(info, NOW)
    assert finding.line("s.t").startswith("s.t: snapshot-log-backwards: the snapshot log goes back from snapshot 2")
    # a year ahead, then back to the present: both
    assert _both(_doc((1, T0), (2, NOW + 365 * 24 * 60 * MIN), (3, T0 + MIN))) == [(FUTURE, 2), (BACKWARDS, 3)]


def test_as_of_refuses_a_table_whose_times_cannot_be_trusted_and_names_the_snapshots() -> None:
    backdated = table_info_from_metadata(Ident("s", "t"), _doc((1, T0), (2, T0 + 30 * MIN), (3, T0 + 10 * MIN)))
    # in log order, snapshot 3 would be "the state as of" every instant after T0 + 10 min
    with pytest.raises(PlanError) as e:
        resolve_snapshot(backdated, Selector(as_of_ms=T0 + 40 * MIN), NOW)
    msg = str(e.value)
    assert "\n" not in msg and "--as-of" in msg and "refused" in msg and "--snapshot-id" in msg
    assert all(f"{sid} at" in msg for sid in (1, 2, 3)) and "goes back from snapshot 2" in msg
    # latest and an explicit snapshot id do not read the log's times
    assert resolve_snapshot(backdated, Selector(), NOW).snapshot_id == 3
    assert resolve_snapshot(backdated, Selector(snapshot_id=2), NOW).snapshot_id == 2
    future = table_info_from_metadata(Ident("s", "t"), _doc((1, T0), (2, NOW + 10 * MIN)))
    with pytest.raises(PlanError, match="is dated"):
        resolve_snapshot(future, Selector(as_of_ms=T0 + MIN), NOW)
    # a trustworthy table keeps Iceberg's semantics
    good = table_info_from_metadata(Ident("s", "t"), _doc((1, T0), (2, T0 + 30 * MIN)))
    assert resolve_snapshot(good, Selector(as_of_ms=T0 + 29 * MIN), NOW).snapshot_id == 1


def test_a_cache_entry_of_an_older_shape_is_a_miss_not_trusted() -> None:
    old = {"commit_ms": [T0], "snapshot_ms": [T0], "current_bytes": 0, "log_steps_back": [[1, 2]]}
    with pytest.raises(ValueError, match="integers"):
        MetadataSummary.from_json(old)


def test_a_commit_dated_in_the_future_counts_from_the_service_s_modified_at() -> None:
    from datetime import UTC, datetime, timedelta

    from s3tables_kit.jobs.kernel.commits import cap_future_commits, compute_lag, future_commits

    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    modified = now - timedelta(hours=2)  # the service saw the table change 2 h ago
    genuine = [now - timedelta(hours=5), modified, now + timedelta(seconds=59)]  # a minute of skew is tolerated
    assert future_commits(genuine, now) == [] and cap_future_commits(genuine, now, modified) == genuine
    forged = [now - timedelta(hours=5), now + timedelta(days=1)]  # the pending commit dated a day ahead
    capped = cap_future_commits(forged, now, modified)
    assert capped == [now - timedelta(hours=5), modified]
    replicated = now - timedelta(hours=4)
    assert compute_lag(forged, replicated, now) == 0.0  # what the writer's time alone would say
    assert compute_lag(capped, replicated, now) == 2 * 3600  # the service's time


def test_the_live_probe_commits_what_the_findings_catch() -> None:
    from s3tables_kit.infra.live.probes import untrusted_times

    doc = _doc((1, T0), (2, T0 + MIN))
    assert [kind for kind, _ in _both(untrusted_times(doc), now=T0 + 2 * MIN)] == [FUTURE, BACKWARDS]
    assert _both(doc, now=T0 + 2 * MIN) == []  # the input is left as it was
