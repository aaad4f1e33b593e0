"""The backup age the replication monitor publishes for the vault (`jobs/ops/monitor_vault.py`): each table's last
backup age and the vault's oldest point from the keys of the committed points; over real HTTP a stale point drives
the alarm's metric past the configured budget, and an unreadable vault stops the heartbeat."""

from __future__ import annotations

import datetime as dt
from datetime import timedelta

from harness.world import create_vault_bucket
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops.monitor_vault import PointSeen, backup_ages, list_points, vault_metric_data
from s3tables_kit.jobs.vault.layout import point_key, table_prefix
from s3tables_kit.topology.config import parse_config
from s3tables_kit.topology.contract import BACKUP_AGE, OLDEST_BACKUP_POINT_AGE
from tests.ops_fixtures import ACCOUNT, SRC_REGION, OpsEnv, World, config_dict, deploy

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
KIT = "seed"


def test_each_tables_newest_point_and_the_vaults_oldest() -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    points = [
        PointSeen("analytics.orders", 1, t0),
        PointSeen("analytics.orders", 2, t0 + timedelta(hours=20)),  # a re-created table (another UUID): same name
        PointSeen("analytics.events", 7, t0 + timedelta(hours=2)),
    ]
    ages = backup_ages(points, t0 + timedelta(hours=24))
    assert ages.last_backup == {"analytics.events": 22 * 3600, "analytics.orders": 4 * 3600}
    assert ages.stalest == 22 * 3600 and ages.oldest_point == 24 * 3600
    data = vault_metric_data(ages, kit=KIT, max_table_metrics=1, ts=t0)
    assert [(d["MetricName"], [x["Value"] for x in d["Dimensions"]], d["Value"]) for d in data] == [
        (BACKUP_AGE, [KIT], 22 * 3600),
        (BACKUP_AGE, [KIT, "analytics.events"], 22 * 3600),  # the cap: first tables by name
        (OLDEST_BACKUP_POINT_AGE, [KIT], 24 * 3600),
    ]
    assert vault_metric_data(backup_ages([], t0), kit=KIT, max_table_metrics=50, ts=t0) == []
    env = {mon.ENV_KIT: KIT, mon.ENV_VAULT_BUCKET: "v", mon.ENV_VAULT_REGION: "us-east-2"}
    settings = mon.MonitorSettings.from_env(env)
    assert (settings.vault_bucket, settings.vault_region) == ("v", "us-east-2")


def _max(world: World, metric: str, at: dt.datetime, **dims: str) -> float | None:
    window = world.metric_maxima(metric, at - timedelta(minutes=1), at + timedelta(minutes=1), **dims)
    return max(window, default=None)


def test_a_stale_point_breaches_the_backup_budget_and_an_unreadable_vault_stops_the_heartbeat(
    ops_env: OpsEnv,
) -> None:
    world = deploy(ops_env, tables=("orders",))
    s3 = world.clients.s3(SRC_REGION)
    bucket = create_vault_bucket(s3, days=1)
    prefix = table_prefix("analytics", "orders", "0f3c")
    # A locked bucket takes only uploads with a checksum (as the backup's store sends them), whatever botocore's
    # default checksum setting is.
    s3.put_object(Bucket=bucket, Key=f"{prefix}files/data/a.parquet", Body=b"x", ChecksumAlgorithm="CRC32")  # no point
    s3.put_object(Bucket=bucket, Key=point_key(prefix, 42), Body=b"{}", ChecksumAlgorithm="CRC32")
    assert [(p.table, p.snapshot_id) for p in list_points(s3, bucket)] == [("analytics.orders", 42)]
    vault = parse_config(
        config_dict() | {"vault": {"account_id": ACCOUNT, "region": "us-east-1", "retention_days": 90}}
    )
    assert vault.vault is not None
    budget = vault.vault.max_backup_age_hours * 3600  # the alarm's threshold (infra/constructs/monitor.py)
    settings = world.monitor_settings(vault_bucket=bucket, vault_region=SRC_REGION)

    mon.run_monitor(world.clients, settings, region=SRC_REGION, now=NOW)
    fresh = _max(world, BACKUP_AGE, NOW, Kit=KIT)
    assert fresh is not None and fresh < 600
    assert _max(world, BACKUP_AGE, NOW, Kit=KIT, Table="analytics.orders") == fresh
    assert _max(world, mon.HEARTBEAT, NOW, Kit=KIT) == 1

    stale_at = NOW + timedelta(hours=vault.vault.max_backup_age_hours, minutes=30)  # no backup since
    result = mon.run_monitor(world.clients, settings, region=SRC_REGION, now=stale_at)
    stale = _max(world, BACKUP_AGE, stale_at, Kit=KIT)
    assert stale is not None and stale > budget and result.vault == "1 backup points"
    assert _max(world, OLDEST_BACKUP_POINT_AGE, stale_at, Kit=KIT) == stale

    lost = world.monitor_settings(vault_bucket="no-such-vault", vault_region=SRC_REGION)
    result = mon.run_monitor(ops_env.clients(max_attempts=1), lost, region=SRC_REGION, now=NOW, dry_run=True)
    assert result.errors == 1 and (result.vault or "").startswith("unreadable")
    assert not result.heartbeat  # the not-reporting alarm breaches
