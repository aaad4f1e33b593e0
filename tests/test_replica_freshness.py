"""The replica-side freshness check (`jobs.ops.freshness`) over real HTTP: moto's CloudWatch + the kit's S3 Tables
extension. Replication is frozen the way an attacker in the source account would freeze it (the replication role
denied: every table's replication FAILED and held there) while the source-side monitor is silent (never run: no
metric in the source account), and the check in the replica's account still raises its alarm metric."""

from __future__ import annotations

import datetime as dt
from datetime import timedelta

import pytest

from s3tables_kit.jobs.ops import freshness as F
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.topology.contract import ENV_MODE, MODE_FRESHNESS, REPLICA_COMMIT_AGE, REPLICA_STALE_TABLES
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


def test_age_is_the_newest_commit_and_unknown_is_not_fresh() -> None:
    now = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    rep = F.ReplicaFreshness("arn:r", {"a.x": now - timedelta(hours=3), "a.y": now - timedelta(minutes=5)})
    assert rep.age_seconds(now) == 300.0 and rep.stale(now, BUDGET) == ["a.x"]
    assert F.ReplicaFreshness("arn:empty").age_seconds(now) == 0.0  # no table: nothing to be stale
    unread = F.ReplicaFreshness("arn:u", unread={"a.x": "window unknown: AccessDenied"})
    assert unread.age_seconds(now) is None
    data = F.metric_data([unread, rep], kit="k", now=now, max_lag=BUDGET)
    # the unreadable replica publishes no age (its alarm treats missing data as breaching), only its stale count
    assert [(d["MetricName"], d["Dimensions"][1]["Value"], d["Value"]) for d in data] == [
        (REPLICA_COMMIT_AGE, "arn:r", 300.0),
        (REPLICA_STALE_TABLES, "arn:r", 1.0),
        (REPLICA_STALE_TABLES, "arn:u", 0.0),
    ]
    result = F.FreshnessResult([rep, unread], data, now, BUDGET)
    assert result.breached() == ["arn:u"]


# ---------------------------------------------------------------------------------------------------- emulator ----


def test_frozen_replication_under_a_silent_source_monitor_breaches_in_the_replica_account(
    ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = deploy(ops_env, replicate=False)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    for t in world.tables:  # the source is written, and replicated, until three hours ago
        world.commit(t, now - timedelta(hours=3))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    settings = F.FreshnessSettings(world.cfg.kit.name, (world.replica_arn,), BUDGET)
    before = F.run_freshness(world.clients, settings, now=now - timedelta(hours=2, minutes=50), publish=mon.publish)
    assert before.breached() == [] and before.requests == 1

    # the attacker freezes replication (the replication role denied) and the source-side monitor never runs
    for arn in world.tables.values():
        ops_env.control.hold_replication(arn, world.replica_arn, "failed", failure_message=DENIED)
    for t in world.tables:
        world.commit(t, now - timedelta(minutes=5))  # the source keeps being written
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    assert (
        world.clients.client("cloudwatch", world.cfg.sources[0].region).list_metrics(
            Namespace=mon.METRIC_NAMESPACE, MetricName=mon.HEARTBEAT
        )["Metrics"]
        == []
    )  # silent: nothing from the source account

    # the replica account's check, through the Lambda entry point the replica stack deploys
    monkeypatch.setenv("AWS_ENDPOINT_URL", ops_env.endpoint)
    monkeypatch.setenv("AWS_REGION", DST_REGION)
    monkeypatch.setenv(ENV_MODE, MODE_FRESHNESS)
    monkeypatch.setenv(mon.ENV_KIT, world.cfg.kit.name)
    monkeypatch.setenv(mon.ENV_DESTINATIONS, world.replica_arn)
    monkeypatch.setenv(mon.ENV_MAX_LAG, str(int(BUDGET.total_seconds())))
    out = mon.handler({}, None)
    assert out["breached"] == [world.replica_arn], out
    replica = out["replicas"][world.replica_arn]
    assert replica["tables"] == len(world.tables) and replica["unread"] == {}
    assert replica["stale"] == sorted(world.tables)
    age = _max(world, REPLICA_COMMIT_AGE, dt.datetime.now(dt.UTC))
    assert age is not None and age > BUDGET.total_seconds()  # the alarm's threshold (infra/constructs/freshness.py)
    assert age == pytest.approx(3 * 3600, abs=120)
    assert _max(world, REPLICA_STALE_TABLES, dt.datetime.now(dt.UTC)) == len(world.tables)
