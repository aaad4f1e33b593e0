"""`jobs.ops.audit` over real HTTP: a clean deployment has no drift; each kind of drift is named."""

from __future__ import annotations

import json

from s3tables_kit.jobs.ops import audit as au
from tests.ops_fixtures import OpsEnv, World, deploy, put_retention


def _audit(world: World) -> au.AuditReport:
    return au.audit(world.clients, world.cfg, world.outputs, show_progress=False)


def _kinds(report: au.AuditReport) -> list[tuple[str, str]]:
    return sorted((d.kind, d.resource) for d in report.drifts)


def test_clean_deployment_has_no_drift(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, harden_now=True)
    report = _audit(world)
    assert report.drifts == [], report.to_json()
    assert report.checked["replica tables"] == 3 and report.exit_code == 0
    code = au.main(world.tool_args(tmp_path, "--quiet"))
    assert code == 0 and "no drift" in capsys.readouterr().out


def test_replica_deleted(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, harden_now=True)
    world.dst().delete_table(tableBucketARN=world.replica_arn, namespace="analytics", name="customers")
    report = _audit(world)
    assert [(d.kind, d.resource) for d in report.drifts] == [
        ("replica-missing", f"analytics.customers -> {world.replica_arn}")
    ]
    code = au.main(world.tool_args(tmp_path, "--quiet", "--json"))
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["drifts"][0]["kind"] == "replica-missing"


def test_bucket_policy_removed(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    world.dst().delete_table_bucket_policy(tableBucketARN=world.replica_arn)
    assert _kinds(_audit(world)) == [("bucket-policy-missing", world.replica_arn)]


def test_bucket_policy_statement_removed_or_loosened(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    dst = world.dst()
    policy = json.loads(dst.get_table_bucket_policy(tableBucketARN=world.replica_arn)["resourcePolicy"])
    removed, loosened = policy["Statement"][0], policy["Statement"][1]
    policy["Statement"] = policy["Statement"][1:]
    loosened["Effect"] = "Allow"
    dst.put_table_bucket_policy(tableBucketARN=world.replica_arn, resourcePolicy=json.dumps(policy))
    details = sorted((d.kind, d.detail) for d in _audit(world).drifts)
    assert details == sorted(
        [
            ("bucket-policy-statement-missing", f"statement {removed['Sid']!r} is missing"),
            (
                "bucket-policy-statement-changed",
                f"statement {loosened['Sid']!r} differs from the configuration",
            ),
        ]
    )


def test_retention_shortened_on_one_replica(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    put_retention(world.dst(), world.replica_arn, "orders", 48)
    report = _audit(world)
    (drift,) = report.drifts
    assert drift.kind == "retention-below-source" and drift.resource.startswith("analytics.orders ")
    assert "maxSnapshotAgeHours 48 < source 720" in drift.detail


def test_scp_detached(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    world.org().detach_policy(PolicyId=world.policy_id, TargetId=world.ou_id)
    (drift,) = _audit(world).drifts
    assert (drift.kind, drift.resource) == ("scp-detached", world.ou_id)


def test_replication_configuration_drift(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    src = world.src()
    current = src.get_table_bucket_replication(tableBucketARN=world.source_arn)
    conf = current["configuration"]
    conf["role"] = "arn:aws:iam::123456789012:role/someone-else"
    src.put_table_bucket_replication(
        tableBucketARN=world.source_arn, configuration=conf, versionToken=current["versionToken"]
    )
    assert _kinds(_audit(world)) == [("replication-role", world.source_arn)]
    token = src.get_table_bucket_replication(tableBucketARN=world.source_arn)["versionToken"]
    src.delete_table_bucket_replication(tableBucketARN=world.source_arn, versionToken=token)
    assert _kinds(_audit(world)) == [("replication-missing", world.source_arn)]


def test_tables_mode_replication_and_encryption_drift(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, mode="tables", harden_now=True)
    assert _audit(world).drifts == []
    src, dst = world.src(), world.dst()
    arn = world.tables["analytics.orders"]
    token = src.get_table_replication(tableArn=arn)["versionToken"]
    src.delete_table_replication(tableArn=arn, versionToken=token)
    dst.put_table_bucket_encryption(
        tableBucketARN=world.replica_arn,
        encryptionConfiguration={
            "sseAlgorithm": "aws:kms",
            "kmsKeyArn": "arn:aws:kms:us-west-2:123456789012:key/00000000-0000-0000-0000-000000000000",
        },
    )
    assert _kinds(_audit(world)) == sorted(
        [
            ("replication-missing", f"analytics.orders ({arn})"),
            ("encryption-mismatch", world.replica_arn),
        ]
    )


def test_every_drift_named_at_once(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, harden_now=True)
    world.dst().delete_table(tableBucketARN=world.replica_arn, namespace="analytics", name="events")
    world.dst().delete_table_bucket_policy(tableBucketARN=world.replica_arn)
    world.org().detach_policy(PolicyId=world.policy_id, TargetId=world.ou_id)
    code = au.main(world.tool_args(tmp_path, "--quiet"))
    out = capsys.readouterr().out
    assert code == 1
    for needle in (
        "replica-missing",
        "analytics.events",
        "bucket-policy-missing",
        "scp-detached",
        world.ou_id,
        "3 drift(s) found",
    ):
        assert needle in out


def test_a_replica_is_paired_by_name_only_when_one_managed_source_table_has_it() -> None:
    """`pair_by_name`: the service gives a replica its source's namespace and name, so a managed table is paired
    with the one source table of its name feeding the bucket; a table not managed (detached, foreign) or a name two
    sources feed is left to GetTable."""
    from s3tables_kit.jobs.kernel.tables import TableRef
    from s3tables_kit.jobs.ops.audit_replicas import pair_by_name

    vault = "arn:aws:s3tables:us-west-2:111122223333:bucket/vault"

    def src(bucket: str, name: str) -> TableRef:
        return TableRef(f"arn:aws:s3tables:us-east-1:111122223333:bucket/{bucket}", "ns", name, f"{bucket}-{name}")

    feeding = {"ns.a": [src("sales", "a")], "ns.b": [src("sales", "b"), src("ops", "b")]}
    replicas = [
        TableRef(vault, "ns", "a", "vault-a", managed_by_service=True),
        TableRef(vault, "ns", "b", "vault-b", managed_by_service=True),  # two sources hold ns.b
        TableRef(vault, "ns", "c", "vault-c", managed_by_service=True),  # no source feeds ns.c
    ]
    assert pair_by_name(replicas, feeding) == {"vault-a": "sales-a"}
    detached = [TableRef(vault, "ns", "a", "vault-a", managed_by_service=False)]
    assert pair_by_name(detached, feeding) == {}
