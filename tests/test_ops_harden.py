"""`s3tables_kit.jobs.ops.harden` over real HTTP: replicas get the table policy and retention; a second run changes
nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from botocore.exceptions import ClientError

from s3tables_kit.jobs.ops import harden as hd
from s3tables_kit.jobs.ops.cli import canonical_policy
from s3tables_kit.policies.documents import replica_table_policy_for
from tests.ops_fixtures import DEPLOY_ROLE, OpsEnv, deploy, put_retention

PUTS = ("PutTablePolicy", "PutTableMaintenanceConfiguration")


def _puts(env: OpsEnv) -> dict[str, int]:
    calls = env.control.stats()["calls"]
    return {op: calls.get(op, 0) for op in PUTS}


def test_harden_applies_policy_and_retention_then_is_idempotent(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env)
    report = hd.harden(world.clients, world.outputs, show_progress=False)
    assert report.exit_code == 0
    assert sorted(r.table for r in report.by("hardened")) == [
        "analytics.customers",
        "analytics.events",
        "analytics.orders",
    ]
    dst = world.dst()
    for name in ("orders", "customers", "events"):
        got = world.replica_table(f"analytics.{name}")
        policy = json.loads(
            dst.get_table_policy(tableBucketARN=world.replica_arn, namespace="analytics", name=name)["resourcePolicy"]
        )
        # exactly the reviewed document (policies/rendered/*/replica-table-policy--*.json); the deploy role is
        # exempt from nothing there (locked after the first deploy: docs/decisions/0028-lock-after-first-deploy.md)
        want = replica_table_policy_for(world.cfg, world.cfg.replicas[0], got["tableARN"])
        assert DEPLOY_ROLE not in json.dumps(want)
        assert canonical_policy(policy) == canonical_policy(want)
        assert got["tableARN"] in json.dumps(policy)  # UUID-scoped ARN
        conf = dst.get_table_maintenance_configuration(
            tableBucketARN=world.replica_arn, namespace="analytics", name=name
        )
        assert conf["configuration"]["icebergSnapshotManagement"]["settings"]["icebergSnapshotManagement"] == {
            "minSnapshotsToKeep": 1,
            "maxSnapshotAgeHours": 2160,
        }
    before = _puts(ops_env)
    assert before == {
        "PutTablePolicy": 3,
        "PutTableMaintenanceConfiguration": 3 + 3,
    }  # + the source retention at deploy

    # Second run, through the CLI: nothing to change, nothing written.
    out = world.write_outputs(tmp_path)
    code = hd.main(["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--json", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["counts"]["unchanged"] == 3 and doc["counts"]["hardened"] == 0
    assert _puts(ops_env) == before


def test_dry_run_shows_diff_and_writes_nothing(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env)
    out = world.write_outputs(tmp_path)
    code = hd.main(["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--dry-run", "--quiet"])
    text = capsys.readouterr().out
    assert code == 0
    assert (
        "table-policy (desired)" in text
        and '"maxSnapshotAgeHours": 2160' in text
        and '-      "maxSnapshotAgeHours": 120,' in text
    )
    assert "3 would-change" in text and "dry run" in text
    assert _puts(ops_env) == {"PutTablePolicy": 0, "PutTableMaintenanceConfiguration": 3}


def test_repairs_shortened_retention_only(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    put_retention(world.dst(), world.replica_arn, "events", 24)
    # The default run trusts the table policy that locks the retention (one read per replica): nothing to do.
    assert hd.harden(world.clients, world.outputs, show_progress=False).count("unchanged") == 3
    report = hd.harden(world.clients, world.outputs, show_progress=False, check_retention=True)
    (fixed,) = report.by("hardened")
    assert fixed.table == "analytics.events" and [c.kind for c in fixed.changes] == ["snapshot-retention"]
    assert report.count("unchanged") == 2
    assert hd.harden(world.clients, world.outputs, show_progress=False, check_retention=True).by("hardened") == []


def test_skips_non_replicas_and_reports_failures(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    dst = world.dst()
    dst.create_namespace(tableBucketARN=world.replica_arn, namespace=["scratch"])
    dst.create_table(tableBucketARN=world.replica_arn, namespace="scratch", name="notes", format="ICEBERG")
    # A table another service writes (a zero-ETL target): managed, but not by the replication service.
    feed = dst.create_table(tableBucketARN=world.replica_arn, namespace="scratch", name="feed", format="ICEBERG")
    ops_env.control.managed_by(feed["tableARN"], "glue.amazonaws.com")
    orders = world.replica_table("analytics.orders")["tableARN"]
    ops_env.control.inject_faults(
        "PutTablePolicy",
        1,
        code="ForbiddenException",
        status=403,
        message="User is not authorized to perform s3tables:PutTablePolicy",
        match="/orders/",
    )
    report = hd.harden(world.clients, world.outputs, show_progress=False)
    assert report.exit_code == 1
    (failed,) = report.by("failed")
    assert failed.table == "analytics.orders" and failed.table_arn == orders
    assert "PutTablePolicy" in (failed.reason or "") and "ForbiddenException" in (failed.reason or "")
    assert sorted(r.table for r in report.by("skipped")) == ["scratch.feed", "scratch.notes"]
    assert len(report.by("hardened")) == 2
    with pytest.raises(ClientError, match="NotFound"):  # left alone: no table policy put on it
        dst.get_table_policy(tableBucketARN=world.replica_arn, namespace="scratch", name="feed")
    assert "analytics.orders" in hd.render(report) and "ForbiddenException" in hd.render(report)
    # The retry hardens the remaining policy; then nothing is left to do.
    again = hd.harden(world.clients, world.outputs, show_progress=False)
    assert [r.table for r in again.by("hardened")] == ["analytics.orders"] and again.exit_code == 0


def _harden_process(outputs: str, endpoint: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "s3tables_kit.jobs.ops.harden", "--outputs", outputs, "--endpoint-url", endpoint]
    return subprocess.Popen([*cmd, "--json", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_harden_runs_at_once_converge_to_the_hardened_state(ops_env: OpsEnv, tmp_path) -> None:
    """Two `harden` processes started together against the same replicas: both exit 0, every table is
    hardened by one of them or found hardened, and the end state is exactly the hardened state: each replica table
    carries the one wanted policy document (byte for byte what harden writes) and the wanted retention."""
    tables = tuple(f"t{i:02d}" for i in range(24))
    world = deploy(ops_env, tables=tables)
    outputs = str(world.write_outputs(tmp_path))
    runs = [_harden_process(outputs, world.env.endpoint) for _ in range(2)]
    done = [p.communicate(timeout=300) for p in runs]

    assert [p.returncode for p in runs] == [0, 0], [err[-2000:] for _, err in done]
    reports = [json.loads(out) for out, _ in done]
    hardened: list[str] = []
    for rep in reports:  # each run saw every table: hardened it or found it hardened (listed: only the changed)
        assert rep["exit_code"] == 0 and rep["counts"]["hardened"] + rep["counts"]["unchanged"] == len(tables), rep
        assert {r["outcome"] for r in rep["tables"]} <= {"hardened"}
        hardened += [r["table"] for r in rep["tables"]]
    assert sorted(set(hardened)) == [f"analytics.{t}" for t in tables]  # none left out
    # every write was a whole document (PUT replaces): at most one per run and table, none lost
    puts = _puts(ops_env)
    assert len(tables) <= puts["PutTablePolicy"] <= 2 * len(tables)
    dst = world.dst()
    want_retention = {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 2160}
    for t in tables:
        ident = {"tableBucketARN": world.replica_arn, "namespace": "analytics", "name": t}
        arn = world.replica_table(f"analytics.{t}")["tableARN"]
        live = dst.get_table_policy(**ident)["resourcePolicy"]
        assert live == json.dumps(replica_table_policy_for(world.cfg, world.cfg.replicas[0], arn))
        conf = dst.get_table_maintenance_configuration(**ident)["configuration"]["icebergSnapshotManagement"]
        assert conf["status"] == "enabled" and conf["settings"]["icebergSnapshotManagement"] == want_retention
    # and a third run finds nothing to do
    again = hd.harden(world.clients, world.outputs, show_progress=False)
    assert again.count("unchanged") == len(tables) and again.count("hardened") == 0
