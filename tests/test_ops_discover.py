"""`s3tables_kit.jobs.ops.discover` over real HTTP against the emulator: a brownfield lake of two buckets (tables with
real metadata whose snapshot summaries carry their sizes, a bucket policy granting an analytics role, a table's own
maintenance, a table-level replication configuration) is reported item by item, its proposed kit.toml loads, the
backfill's bytes per destination are the sum of the summaries; a refused permission stops it with one line, exit 2,
nothing written."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.ops import discover
from s3tables_kit.topology.config import load_config
from tests.ops_fixtures import ACCOUNT, OpsEnv, ops_env  # noqa: F401

REGION, DR_REGION = "us-east-1", "us-west-2"
ANALYTICS = f"arn:aws:iam::{ACCOUNT}:role/analytics-reader"
# (bucket, namespace, table) -> (total-files-size, total-records) of the current snapshot
SIZES = {
    ("lake-sales", "sales", "orders"): (7_340_032, 120_000),
    ("lake-sales", "sales", "customers"): (1_048_576, 5_000),
    ("lake-sales", "web", "events"): (52_428_800, 2_000_000),
    ("lake-ops", "ops", "incidents"): (65_536, 321),
    ("lake-ops", "ops", "oncall"): (4_096, 12),
}


def bucket_arn(name: str, region: str = REGION) -> str:
    return f"arn:aws:s3tables:{region}:{ACCOUNT}:bucket/{name}"


def brownfield(env: OpsEnv) -> dict[str, Any]:
    """The lake as its own jobs left it: two buckets, tables written outside Terraform, an analytics grant in a bucket
    policy, one table's own snapshot management, one table-level replication configuration."""
    s3t = env.clients().s3tables(REGION)
    for name in ("lake-sales", "lake-ops"):
        s3t.create_table_bucket(name=name)
    env.clients().s3tables(DR_REGION).create_table_bucket(name="events-dr")
    commit = int((time.time() - 3600) * 1000)
    for (bucket, ns, table), (size, records) in SIZES.items():
        env.control.seed(
            bucket_arn(bucket), {ns: [table]}, commit_ms=commit,
            summary={"total-files-size": size, "total-records": records, "total-data-files": 3},
        )  # fmt: skip
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AnalyticsRead",
                "Effect": "Allow",
                "Principal": {"AWS": ANALYTICS},
                "Action": ["s3tables:GetTable", "s3tables:GetTableData", "s3tables:GetTableMetadataLocation"],
                "Resource": f"{bucket_arn('lake-sales')}/table/*",
            }
        ],
    }
    s3t.put_table_bucket_policy(tableBucketARN=bucket_arn("lake-sales"), resourcePolicy=json.dumps(policy))
    retention = {"maxSnapshotAgeHours": 240, "minSnapshotsToKeep": 5}
    s3t.put_table_maintenance_configuration(
        tableBucketARN=bucket_arn("lake-sales"),
        namespace="sales",
        name="orders",
        type="icebergSnapshotManagement",
        value={"status": "enabled", "settings": {"icebergSnapshotManagement": retention}},
    )
    events = s3t.get_table(tableBucketARN=bucket_arn("lake-sales"), namespace="web", name="events")["tableARN"]
    s3t.put_table_replication(
        tableArn=events,
        configuration={
            "role": f"arn:aws:iam::{ACCOUNT}:role/events-replication",
            "rules": [{"destinations": [{"destinationTableBucketARN": bucket_arn("events-dr", DR_REGION)}]}],
        },
    )
    return {"events": events}


def run(env: OpsEnv, out: Path, *extra: str) -> int:
    return discover.main(["--region", REGION, "--endpoint-url", env.endpoint, "--out", str(out), "--quiet", *extra])


def test_discovery_reports_the_lake_and_proposes_a_loadable_estate(
    ops_env: OpsEnv,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = brownfield(ops_env)
    out = tmp_path / "discover-out"
    assert run(ops_env, out, "--replicate-to", DR_REGION, "--kit-name", "adopt") == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "bucket-policy-lake-sales.json",
        "discover.json",
        "kit.toml",
        "report.txt",
    ]
    doc = json.loads((out / "discover.json").read_text())
    by_name = {b["bucket"]: b for b in doc["buckets"]}
    assert set(by_name) == {"lake-sales", "lake-ops"}  # events-dr is in a Region not asked for
    sales, ops = by_name["lake-sales"], by_name["lake-ops"]
    assert (sales["namespaces"], sales["tables"], ops["namespaces"], ops["tables"]) == (["sales", "web"], 3, ["ops"], 2)
    for b in (sales, ops):
        assert b["bytes"] == sum(s for (bk, _, _), (s, _) in SIZES.items() if bk == b["bucket"])
        assert b["records"] == sum(r for (bk, _, _), (_, r) in SIZES.items() if bk == b["bucket"])
        assert b["encryption"] == {"sseAlgorithm": "AES256"} and b["storage_class"] == "STANDARD"
    # The analytics grant, the table's own maintenance and the table-level replication are each named.
    leave = "\n".join(sales["leave_alone"])
    assert "bucket policy statement AnalyticsRead: Allow" in leave and ANALYTICS in leave
    assert "table sales.orders: its own snapshot management (240 h, keep 5)" in leave
    assert f"table web.events: its table-level replication (to {bucket_arn('events-dr', DR_REGION)})" in leave
    notable = {t["table"]: t for t in sales["table_settings"]}
    assert notable["web.events"]["arn"] == world["events"]
    assert notable["web.events"]["replication"]["configuration"]["role"].endswith("role/events-replication")
    assert sales["policy"]["Statement"][0]["Sid"] == "AnalyticsRead" and ops["policy"] is None
    assert sales["replication"] is None and ops["replication"] is None
    # Bytes per destination: each source's replica in us-west-2 gets the sum of its tables' summaries.
    assert {d["destination"]: d["bytes"] for d in doc["backfill"]} == {
        bucket_arn("lake-sales-us-west-2", DR_REGION): sales["bytes"],
        bucket_arn("lake-ops-us-west-2", DR_REGION): ops["bytes"],
    }
    # The proposal adopts both buckets as an estate and loads.
    cfg = load_config(out / "kit.toml")
    assert {s.bucket: s.replicate_to for s in cfg.sources} == {
        "lake-sales": ("lake-sales-us-west-2",),
        "lake-ops": ("lake-ops-us-west-2",),
    }
    sales_cfg = next(s for s in cfg.sources if s.bucket == "lake-sales")
    assert [n.name for n in sales_cfg.namespaces] == ["sales", "web"]
    # Both adopted; the policy found is kept beside the proposal, and only lake-sales has one.
    assert all(s.adopt for s in cfg.sources)
    assert [st["Sid"] for st in sales_cfg.adopted_statement_documents()] == ["AnalyticsRead"]
    ops_cfg = next(s for s in cfg.sources if s.bucket == "lake-ops")
    # Without a policy found, the kit's is created by the first deploy: stated, so the adoption gate lets it through.
    assert (ops_cfg.bucket_policy, ops_cfg.adopt_changes, sales_cfg.adopt_changes) == (None, ("bucket_policy",), ())
    assert sales_cfg.snapshot_retention.max_snapshot_age_hours == 120  # most tables: the service's default
    assert {r.bucket for r in cfg.replicas} == {"lake-sales-us-west-2", "lake-ops-us-west-2"}
    report = (out / "report.txt").read_text()
    assert capsys.readouterr().out.startswith(report)
    assert "AnalyticsRead" in report and "web.events" in report and f"{sales['bytes']:,} bytes" in report


def test_without_destinations_the_replicas_are_a_template(ops_env: OpsEnv, tmp_path: Path) -> None:  # noqa: F811
    brownfield(ops_env)
    out = tmp_path / "out"
    assert run(ops_env, out) == 0
    text = (out / "kit.toml").read_text()
    assert "# [[replicas]]" in text and "REVIEW" in text
    assert json.loads((out / "discover.json").read_text())["backfill"] == []


@pytest.mark.parametrize(
    ("operation", "action", "resource"),
    [
        ("GetTableBucketPolicy", "s3tables:GetTableBucketPolicy", "bucket/lake-"),
        ("GetTablePolicy", "s3tables:GetTablePolicy", "/table/"),
    ],
)
def test_a_refused_permission_names_the_action_and_writes_nothing(
    ops_env: OpsEnv,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    operation: str,
    action: str,
    resource: str,
) -> None:
    brownfield(ops_env)
    ops_env.control.inject_faults(
        operation, -1, "AccessDeniedException", 403, f"User is not authorized to perform: {action}"
    )
    out = tmp_path / "discover-out"
    assert run(ops_env, out, "--replicate-to", DR_REGION) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"discover: access denied: {action} on arn:aws:s3tables:{REGION}:{ACCOUNT}:")
    assert resource in lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_bad_destination_is_refused_before_any_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = discover.main(["--region", REGION, "--replicate-to", "west:12", "--out", str(out), "--quiet"])
    assert code == 2 and not out.exists()
    assert capsys.readouterr().err.strip() == (
        "discover: --replicate-to 'west:12' must look like us-west-2 or us-west-2:123456789012"
    )


def test_one_kms_bucket_is_proposed_as_a_single_source_that_loads(tmp_path: Path) -> None:
    from s3tables_kit.jobs.ops.discover_plan import Destination, bucket_plan, propose_toml
    from s3tables_kit.jobs.ops.discover_read import BucketFound

    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    found = BucketFound(bucket_arn("lake-one"), "lake-one", REGION, ACCOUNT, namespaces=["sales"])
    found.encryption = {"sseAlgorithm": "aws:kms", "kmsKeyArn": key}
    found.storage_class = "INTELLIGENT_TIERING"
    found.maintenance = {
        "icebergUnreferencedFileRemoval": {
            "status": "enabled",
            "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 7, "nonCurrentDays": 30}},
        }
    }
    plan = bucket_plan(found, [Destination.parse(f"{DR_REGION}:210987654321")])
    assert any(
        "unreferenced file removal is enabled (7 days unreferenced, 30 days noncurrent)" in c for c in plan["change"]
    )
    (tmp_path / "kit.toml").write_text(propose_toml("one", [plan]))
    cfg = load_config(tmp_path / "kit.toml")
    assert (cfg.sources[0].bucket, cfg.sources[0].encryption.kms_key, cfg.sources[0].storage_class) == (
        "lake-one",
        key,
        "INTELLIGENT_TIERING",
    )
    assert (cfg.sources[0].unreferenced_file_removal.unreferenced_days, cfg.replication_of(cfg.sources[0]).mode) == (
        7,
        "bucket",
    )
    replica = cfg.replicas[0]
    assert (replica.bucket, replica.account_id, replica.encryption.kms_key) == (
        f"lake-one-{DR_REGION}",
        "210987654321",
        "create",
    )


def test_throttling_is_retried_and_every_table_still_read(ops_env: OpsEnv, tmp_path: Path) -> None:  # noqa: F811
    brownfield(ops_env)
    for operation in ("GetTablePolicy", "GetTableReplication", "LoadTable", "ListTables"):
        ops_env.control.inject_faults(operation, 3)  # TooManyRequestsException, HTTP 429
    out = tmp_path / "out"
    assert run(ops_env, out, "--replicate-to", DR_REGION) == 0
    doc = json.loads((out / "discover.json").read_text())
    assert doc["tables"] == len(SIZES) and doc["bytes"] == sum(s for s, _ in SIZES.values())
    sales = next(b for b in doc["buckets"] if b["bucket"] == "lake-sales")
    assert {t["table"] for t in sales["table_settings"]} == {"sales.orders", "web.events"}
    assert all(f["remaining"] == 0 for f in ops_env.control.stats()["faults"])


def test_a_replica_is_proposed_to_keep_at_least_what_every_table_it_receives_keeps() -> None:
    """A source table keeping 3 snapshots for 200 days gives a replica proposal keeping 3 for 200 days (audit's
    `retention-below-source` otherwise); without such a table, the proposal's 90 days and one snapshot."""
    from s3tables_kit.jobs.ops.discover_plan import REPLICA_RETENTION_HOURS, replica_retention

    def plan(tables: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "snapshot_retention": {"max_snapshot_age_hours": 120, "min_snapshots_to_keep": 1},
            "table_settings": tables,
        }

    keeps = {"icebergSnapshotManagement": {"status": "enabled", "settings": {
        "icebergSnapshotManagement": {"maxSnapshotAgeHours": 4800, "minSnapshotsToKeep": 3}}}}  # fmt: skip
    assert replica_retention([plan([]), plan([{"maintenance": keeps}])]) == {
        "max_snapshot_age_hours": 4800,
        "min_snapshots_to_keep": 3,
    }
    assert replica_retention([plan([{"maintenance": None}])]) == {
        "max_snapshot_age_hours": REPLICA_RETENTION_HOURS,
        "min_snapshots_to_keep": 1,
    }


def test_an_existing_replication_is_seen_as_it_is(ops_env: OpsEnv, tmp_path: Path) -> None:  # noqa: F811
    """lake-sales already replicates (bucket level) to lake-sales-copy (us-west-2), which holds its replicas, and to
    lake-sales-mirror (its own Region and account); a zero-ETL target in lake-ops is written by another service. The
    copy is proposed as an adopted replica of lake-sales (never as a source), the configuration is taken over, the
    mirror is dropped for review, and each --replicate-to adds a replica where the source has none."""
    brownfield(ops_env)
    s3t, dr = ops_env.clients().s3tables(REGION), ops_env.clients().s3tables(DR_REGION)
    copy = dr.create_table_bucket(name="lake-sales-copy")["arn"]
    mirror = s3t.create_table_bucket(name="lake-sales-mirror")["arn"]
    s3t.put_table_bucket_replication(
        tableBucketARN=bucket_arn("lake-sales"),
        configuration={"role": f"arn:aws:iam::{ACCOUNT}:role/team-replication", "rules": [
            {"destinations": [{"destinationTableBucketARN": copy}, {"destinationTableBucketARN": mirror}]}]},
    )  # fmt: skip
    ops_env.control.replicate(source_bucket_arn=bucket_arn("lake-sales"))
    incidents = s3t.get_table(tableBucketARN=bucket_arn("lake-ops"), namespace="ops", name="incidents")["tableARN"]
    ops_env.control.managed_by(incidents, "rds.amazonaws.com")
    out = tmp_path / "out"
    extra = [
        "--region",
        DR_REGION,
        "--replicate-to",
        DR_REGION,
        "--replicate-to",
        "eu-west-1",
        "--replicate-to",
        REGION,
    ]
    assert run(ops_env, out, *extra) == 0
    doc = json.loads((out / "discover.json").read_text())
    roles = {b["bucket"]: (b["role"], b["replica_of"]) for b in doc["buckets"]}
    assert roles == {
        "lake-sales": ("source", None), "lake-ops": ("source", None),
        "lake-sales-copy": ("replica", bucket_arn("lake-sales")),
        "lake-sales-mirror": ("replica", bucket_arn("lake-sales")),
        "events-dr": ("replica", bucket_arn("lake-sales")),  # web.events' own table-level destination
    }  # fmt: skip
    sales = next(b for b in doc["buckets"] if b["bucket"] == "lake-sales")
    assert (sales["existing_destinations"], sales["dropped_destinations"]) == ([copy, mirror], [mirror])
    assert next(b for b in doc["buckets"] if b["bucket"] == "lake-ops")["other_services"] == {
        "ops.incidents": "rds.amazonaws.com"
    }
    report = (out / "report.txt").read_text()
    assert f"## {copy} (replica of {bucket_arn('lake-sales')})" in report
    assert f"existing destinations: {copy} (kept as replicas)" in report
    assert f"existing destinations dropped: {mirror}" in report
    assert "table ops.incidents: written by rds.amazonaws.com, not a replica" in report
    assert "--replicate-to us-east-1 is this bucket's own Region and account: no replica proposed" in report
    assert "taken over by the first deploy" in report and "version token" not in report
    proposal = (out / "kit.toml").read_text()
    assert "REVIEW table web.events: its own replication bypasses" in proposal
    assert f"REVIEW {mirror} (this bucket's own Region and account) protects against nothing" in proposal
    assert "# REVIEW: events-dr holds replicas of" in proposal
    cfg = load_config(out / "kit.toml")
    assert {s.bucket for s in cfg.sources} == {"lake-sales", "lake-ops"}  # a replica is never a source
    sales_cfg = next(s for s in cfg.sources if s.bucket == "lake-sales")
    assert sales_cfg.existing_destinations == (copy, mirror) and sales_cfg.adopt_changes == ("replication",)
    assert set(sales_cfg.replicate_to) == {"lake-sales-copy", "lake-sales-eu-west-1"}
    ops_cfg = next(s for s in cfg.sources if s.bucket == "lake-ops")
    assert set(ops_cfg.replicate_to) == {"lake-ops-us-west-2", "lake-ops-eu-west-1"}  # several per source
    kept = next(r for r in cfg.replicas if r.bucket == "lake-sales-copy")
    assert kept.adopt and kept.adopt_changes == ("bucket_policy",) and kept.region == DR_REGION
    assert [r.bucket for r in cfg.replicas if r.adopt] == ["lake-sales-copy"]
    assert copy not in {d["destination"] for d in doc["backfill"]}  # it holds its copies already
