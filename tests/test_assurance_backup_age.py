"""The backup age the replication monitor publishes for the vault (`jobs/ops/monitor_vault.py`): each table's last
backup age and the vault's oldest point from the keys of the committed points, a selected table without a point
counting from its creation; over real HTTP a stale point and a selected table never backed up drive the alarm's
metric past the configured budget (and `audit` names the table), and an unreadable vault stops the heartbeat."""

from __future__ import annotations

import datetime as dt
from datetime import timedelta

from harness.world import create_vault_bucket
from s3tables_kit.jobs.kernel.tables import list_tables
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops.audit_scope import AuditReport
from s3tables_kit.jobs.ops.audit_vault import check_backup_points
from s3tables_kit.jobs.ops.monitor_vault import PointSeen, backup_ages, list_points, selected_tables, vault_metric_data
from s3tables_kit.jobs.vault.layout import point_key, table_prefix
from s3tables_kit.topology.config import parse_config
from s3tables_kit.topology.contract import BACKUP_AGE, OLDEST_BACKUP_POINT_AGE, TABLES_WITHOUT_BACKUP_POINT
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


def test_a_selected_table_without_a_point_is_as_late_as_it_is_old() -> None:
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    created = {
        "analytics.orders": t0 - timedelta(days=100),
        "analytics.events": t0 - timedelta(hours=1),  # selected before its first scheduled backup
        "analytics.unknown": None,
        "sales.refunds": t0 - timedelta(days=100),  # never backed up, and selected by name
        "sales.quotes": t0 - timedelta(days=100),  # not selected
    }
    assert list(selected_tables(created, ["sales.refunds"])) == ["sales.refunds"]
    selected = selected_tables(created, ["analytics.*", "sales.refunds", "other.*"])
    assert list(selected) == ["analytics.events", "analytics.orders", "analytics.unknown", "sales.refunds"]
    ages = backup_ages([PointSeen("analytics.orders", 1, t0 - timedelta(hours=2))], t0, selected)
    assert ages.unbacked == {"analytics.events": 3600, "analytics.unknown": None, "sales.refunds": 100 * 86400}
    assert ages.stalest == 100 * 86400  # the alarm's datum: past any budget, where before it published nothing
    data = vault_metric_data(ages, kit=KIT, max_table_metrics=50, ts=t0)
    assert [(d["MetricName"], [x["Value"] for x in d["Dimensions"]], d["Value"], d["Unit"]) for d in data] == [
        (BACKUP_AGE, [KIT], 100 * 86400, "Seconds"),
        (BACKUP_AGE, [KIT, "analytics.events"], 3600, "Seconds"),  # within a budget: no page for a new table
        (BACKUP_AGE, [KIT, "analytics.orders"], 7200, "Seconds"),
        (BACKUP_AGE, [KIT, "sales.refunds"], 100 * 86400, "Seconds"),
        (OLDEST_BACKUP_POINT_AGE, [KIT], 7200, "Seconds"),
        (TABLES_WITHOUT_BACKUP_POINT, [KIT], 3, "Count"),
    ]
    nothing_selected = vault_metric_data(backup_ages([], t0, {}), kit=KIT, max_table_metrics=50, ts=t0)
    assert [(d["MetricName"], d["Value"]) for d in nothing_selected] == [(TABLES_WITHOUT_BACKUP_POINT, 0)]


def _max(world: World, metric: str, at: dt.datetime, **dims: str) -> float | None:
    window = world.metric_maxima(metric, at - timedelta(minutes=1), at + timedelta(minutes=1), **dims)
    return max(window, default=None)


def test_a_stale_point_breaches_the_backup_budget_and_an_unreadable_vault_stops_the_heartbeat(
    ops_env: OpsEnv,
) -> None:
    world = deploy(ops_env, tables=("orders", "events"))  # events: selected, never backed up
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
    settings = world.monitor_settings(vault_bucket=bucket, vault_region=SRC_REGION, vault_tables=("analytics.*",))

    mon.run_monitor(world.clients, settings, region=SRC_REGION, now=NOW)
    fresh = _max(world, BACKUP_AGE, NOW, Kit=KIT)
    assert fresh is not None and fresh < 600  # a table created minutes ago is within its budget for a first backup
    assert _max(world, BACKUP_AGE, NOW, Kit=KIT, Table="analytics.orders") is not None
    assert _max(world, BACKUP_AGE, NOW, Kit=KIT, Table="analytics.events") is not None
    assert _max(world, TABLES_WITHOUT_BACKUP_POINT, NOW, Kit=KIT) == 1
    assert _max(world, mon.HEARTBEAT, NOW, Kit=KIT) == 1

    stale_at = NOW + timedelta(hours=vault.vault.max_backup_age_hours, minutes=30)  # no backup since
    result = mon.run_monitor(world.clients, settings, region=SRC_REGION, now=stale_at)
    stale = _max(world, BACKUP_AGE, stale_at, Kit=KIT)
    assert stale is not None and stale > budget
    assert result.vault == "1 backup points; selected tables without a backup point: analytics.events"
    assert _max(world, OLDEST_BACKUP_POINT_AGE, stale_at, Kit=KIT) == _max(
        world, BACKUP_AGE, stale_at, Kit=KIT, Table="analytics.orders"
    )
    never = _max(world, BACKUP_AGE, stale_at, Kit=KIT, Table="analytics.events")
    assert never is not None and never > budget  # the table no point was ever written for breaches too

    # `audit` names it once past the budget, from the same listing; not before.
    created = {t.qualified: t.created_at for t in list_tables(world.clients, world.source_arn)}
    selected = selected_tables(created, ["analytics.*"])
    for at, want in ((NOW, []), (stale_at, ["analytics.events"])):
        report = AuditReport()
        check_backup_points(s3, bucket, f"arn:aws:s3:::{bucket}", vault.vault, selected, report, at)
        assert [(d.kind, d.detail.split()[0]) for d in report.drifts] == [
            ("vault-table-without-backup-point", t) for t in want
        ]

    lost = world.monitor_settings(vault_bucket="no-such-vault", vault_region=SRC_REGION)
    result = mon.run_monitor(ops_env.clients(max_attempts=1), lost, region=SRC_REGION, now=NOW, dry_run=True)
    assert result.errors == 1 and (result.vault or "").startswith("unreadable")
    assert not result.heartbeat  # the not-reporting alarm breaches
