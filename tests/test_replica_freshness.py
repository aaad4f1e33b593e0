"""The replica-side freshness check (`s3tables_kit.jobs.ops.freshness`) over real HTTP: moto's CloudWatch + the kit's S3
Tables extension. Replication of one table among several is frozen the way an attacker in the source account would
freeze it (the replication role denied for that table: its replication FAILED and held there) while the source-side
monitor is silent (never run: no metric in the source account), and the check in the replica's account still counts that
table stale, by the times S3 Tables sets (`modifiedAt`), while the tables that flow keep nothing fresh but
themselves. A replica it cannot read fails the run."""

from __future__ import annotations

import datetime as dt
import json
import time
from datetime import timedelta

import pytest

from s3tables_kit.jobs.ops import freshness
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.topology.contract import (
    ENV_MODE,
    ENV_REPLICA_SOURCES,
    MODE_FRESHNESS,
    REPLICA_COMMIT_AGE,
    REPLICA_STALE_TABLES,
)
from tests.ops_fixtures import DST_REGION, OpsEnv, World, deploy

BUDGET = timedelta(minutes=60)
DENIED = "Access denied: the replication role is not authorized to perform s3tables:PutObject (permissions boundary)"


def _max(world: World, metric: str, now: dt.datetime) -> float | None:
    got = world.clients.client("cloudwatch", DST_REGION).get_metric_statistics(
        Namespace=mon.METRIC_NAMESPACE,
        MetricName=metric,
        Dimensions=[{"Name": "Kit", "Value": world.cfg.kit.name}, {"Name": "Destination", "Value": world.replica_arn}],
        StartTime=now - timedelta(minutes=5),
        EndTime=now + timedelta(minutes=5),
        Period=60,
        Statistics=["Maximum"],
    )["Datapoints"]
    return max((p["Maximum"] for p in got), default=None)


# ---------------------------------------------------------------------------------------------------- pure ----


def test_a_table_is_stale_against_its_source_where_readable_else_against_the_budget() -> None:
    now = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    changed = {"a.idle": now - timedelta(hours=5), "a.frozen": now - timedelta(hours=3), "a.flow": now}
    sources = {  # the idle table's source has not changed since: not stale, however old
        "a.idle": now - timedelta(hours=6),
        "a.frozen": now - timedelta(hours=2),  # changed after the replica's last change, longer ago than the budget
        "a.flow": now - timedelta(minutes=1),
    }
    rep = freshness.ReplicaFreshness("arn:r", dict(changed), sources)
    assert rep.stale(now, BUDGET) == ["a.frozen"]  # one flowing table does not keep the frozen one fresh
    assert rep.age_seconds(now) == 0.0  # the newest change of any table: shown, not alarmed on
    budget = freshness.ReplicaFreshness("arn:b", dict(changed), None, "source: AccessDenied")
    assert budget.stale(now, BUDGET) == ["a.frozen", "a.idle"]  # without the source: an idle table looks frozen
    assert budget.to_json(now, BUDGET)["compared_with"] == "budget (source: AccessDenied)"
    unread = freshness.ReplicaFreshness("arn:u", unread="AccessDenied")
    data = freshness.metric_data([unread, rep], kit="k", now=now, max_lag=BUDGET)
    # the unreadable replica publishes nothing: its alarm treats missing data as breaching, and the run fails
    assert [(d["MetricName"], d["Dimensions"][1]["Value"], d["Value"]) for d in data] == [
        (REPLICA_COMMIT_AGE, "arn:r", 0.0),
        (REPLICA_STALE_TABLES, "arn:r", 1.0),
    ]
    result = freshness.FreshnessResult([rep, unread], data, now, BUDGET)
    assert result.breached() == ["arn:r", "arn:u"] and result.unread() == {"arn:u": "AccessDenied"}


# ---------------------------------------------------------------------------------------------------- emulator ----


def test_one_frozen_table_among_flowing_ones_is_stale_in_the_replica_account(
    ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = deploy(ops_env, replicate=False)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    for t in world.tables:
        world.commit(t, now - timedelta(hours=3))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    sources = {world.replica_arn: (world.source_arn,)}
    settings = freshness.FreshnessSettings(world.cfg.kit.name, (world.replica_arn,), BUDGET, sources=sources)
    before = freshness.run_freshness(world.clients, settings, now=now + timedelta(hours=2), publish=mon.publish)
    assert before.breached() == [] and before.requests == 1  # an idle source, told apart: nothing to follow

    # the attacker freezes one table's replication (the replication role denied on it); the source monitor is silent
    frozen = sorted(world.tables)[0]
    time.sleep(0.01)  # the source's change comes after the replica's last one
    ops_env.control.hold_replication(world.tables[frozen], world.replica_arn, "failed", failure_message=DENIED)
    for t in world.tables:
        world.commit(t, now - timedelta(minutes=5))  # the source keeps being written
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    later = now + timedelta(hours=2)
    after = freshness.run_freshness(world.clients, settings, now=later)
    assert after.replicas[0].stale(later, BUDGET) == [frozen]  # the flowing tables do not hide it
    assert freshness.run_freshness(world.clients, settings, now=now).breached() == []  # within the budget: not yet
    blind = freshness.run_freshness(
        world.clients, freshness.FreshnessSettings(world.cfg.kit.name, (world.replica_arn,), BUDGET), now=later
    )
    assert blind.replicas[0].stale(later, BUDGET) == sorted(world.tables)  # no source to compare: the budget
    assert (
        world.clients.client("cloudwatch", world.cfg.sources[0].region).list_metrics(
            Namespace=mon.METRIC_NAMESPACE, MetricName=mon.HEARTBEAT
        )["Metrics"]
        == []
    )  # silent: nothing from the source account

    # the replica account's check, through the Lambda entry point the replica stack deploys (a 1 s budget: now)
    monkeypatch.setenv("AWS_ENDPOINT_URL", ops_env.endpoint)
    monkeypatch.setenv("AWS_REGION", DST_REGION)
    monkeypatch.setenv(ENV_MODE, MODE_FRESHNESS)
    monkeypatch.setenv(mon.ENV_KIT, world.cfg.kit.name)
    monkeypatch.setenv(mon.ENV_DESTINATIONS, world.replica_arn)
    monkeypatch.setenv(ENV_REPLICA_SOURCES, json.dumps({world.replica_arn: [world.source_arn]}))
    monkeypatch.setenv(mon.ENV_MAX_LAG, "1")
    time.sleep(1.1)
    out = mon.handler({}, None)
    assert out["breached"] == [world.replica_arn], out
    replica = out["replicas"][world.replica_arn]
    assert replica["tables"] == len(world.tables) and replica["unread"] is None and replica["compared_with"] == "source"
    assert replica["stale"] == [frozen]
    assert _max(world, REPLICA_STALE_TABLES, dt.datetime.now(dt.UTC)) == 1  # the alarm's metric (> 0, two runs)

    # a replica the check cannot read: the others are published, then the run fails (AWS/Lambda Errors)
    missing = world.replica_arn.rsplit("/", 1)[0] + "/no-such-bucket"
    monkeypatch.setenv(mon.ENV_DESTINATIONS, f"{world.replica_arn},{missing}")
    with pytest.raises(freshness.FreshnessRunFailed, match="no-such-bucket"):
        mon.handler({}, None)


def test_a_replicated_commit_dated_in_the_future_keeps_nothing_fresh(ops_env: OpsEnv) -> None:
    """The writer dates one commit a day ahead: the check reads the times S3 Tables set (`modifiedAt`), so two hours
    later the replica's age is two hours (not 0, what `now - timestamp-ms` clamped would say) and, against the budget,
    that table is as stale as the others."""
    world = deploy(ops_env, replicate=False)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    forged = sorted(world.tables)[0]
    world.commit(forged, now + timedelta(days=1))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    settings = freshness.FreshnessSettings(world.cfg.kit.name, (world.replica_arn,), BUDGET)
    later = now + timedelta(hours=2)
    result = freshness.run_freshness(world.clients, settings, now=later)
    assert result.replicas[0].age_seconds(later) == pytest.approx(7200, abs=60)
    assert forged in result.replicas[0].stale(later, BUDGET) and result.breached() == [world.replica_arn]
