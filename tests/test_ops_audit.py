"""`s3tables_kit.jobs.ops.audit` over real HTTP: a clean deployment has no drift; each kind of drift is named."""

from __future__ import annotations

import json

from bench.ops_scale import requests_between
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache
from s3tables_kit.jobs.ops import audit as au
from tests.ops_fixtures import OpsEnv, World, deploy, put_retention


def _audit(world: World) -> au.AuditReport:
    return au.audit(world.clients, world.cfg, world.outputs, show_progress=False)


def _kinds(report: au.AuditReport) -> list[tuple[str, str]]:
    return sorted((d.kind, d.resource) for d in report.drifts)


def _findings(report: au.AuditReport) -> list[tuple[str, str, str]]:
    """Every drift but for the run's own time (a future-dated snapshot is "after now (<the run's now>)")."""
    return [(d.kind, d.resource, d.detail.split(", after now")[0]) for d in report.drifts]


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
    below_source, below_configured = report.drifts  # sorted by kind: configured, then source
    assert below_source.kind == "retention-below-configured" and below_source.resource.startswith("analytics.orders ")
    assert "maxSnapshotAgeHours 48 < configured 2160" in below_source.detail
    assert below_configured.kind == "retention-below-source"
    assert "maxSnapshotAgeHours 48 < source 720" in below_configured.detail


def test_retention_below_the_configured_value_but_not_the_sources(ops_env: OpsEnv, tmp_path, capsys) -> None:
    """What the replication service may leave on a new replica: the source's window (720 h), shorter than the
    replica's configured one (2,160 h)."""
    world = deploy(ops_env, harden_now=True)
    put_retention(world.dst(), world.replica_arn, "customers", 720)
    (drift,) = _audit(world).drifts
    assert (drift.kind, drift.resource.split()[0]) == ("retention-below-configured", "analytics.customers")
    assert drift.detail == "maxSnapshotAgeHours 720 < configured 2160"
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1
    assert "retention-below-configured" in capsys.readouterr().out


def test_a_replica_without_its_table_policy(ops_env: OpsEnv, tmp_path, capsys) -> None:
    """One of a replica's two layers gone: its table policy deleted (or never put: a new replica in bucket mode
    before `harden`)."""
    world = deploy(ops_env, harden_now=True)
    world.dst().delete_table_policy(tableBucketARN=world.replica_arn, namespace="analytics", name="events")
    (drift,) = _audit(world).drifts
    assert (drift.kind, drift.resource.split()[0]) == ("table-policy-missing", "analytics.events")
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1
    assert "table-policy-missing" in capsys.readouterr().out


def test_replicas_not_hardened_yet_have_one_layer(ops_env: OpsEnv) -> None:
    """Bucket mode: the service created every replica, nobody ran `harden`."""
    kinds = {(d.kind, d.resource.split()[0]) for d in _audit(deploy(ops_env)).drifts}
    assert {("table-policy-missing", f"analytics.{t}") for t in ("orders", "customers", "events")} <= kinds


def test_a_replica_table_policy_changed(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    dst = world.dst()
    ident = {"tableBucketARN": world.replica_arn, "namespace": "analytics", "name": "orders"}
    policy = json.loads(dst.get_table_policy(**ident)["resourcePolicy"])
    policy["Statement"] = policy["Statement"][1:]
    dst.put_table_policy(resourcePolicy=json.dumps(policy), **ident)
    (drift,) = _audit(world).drifts
    assert (drift.kind, drift.resource.split()[0]) == ("table-policy-changed", "analytics.orders")


def test_source_bucket_policy_compared_by_meaning(ops_env: OpsEnv, tmp_path, capsys) -> None:
    """The source bucket policy (docs/decisions/0028-lock-after-first-deploy.md) against the reviewed document:
    statements reordered and one-element lists written as strings are the same policy; a statement dropped or
    loosened, or the policy deleted, is drift."""
    from s3tables_kit.policies.source_guard import source_bucket_policy

    world = deploy(ops_env, harden_now=True)
    src = world.src()
    reviewed = source_bucket_policy(world.cfg, world.cfg.sources[0])
    assert json.loads(src.get_table_bucket_policy(tableBucketARN=world.source_arn)["resourcePolicy"]) == reviewed
    same = {"Statement": list(reversed(reviewed["Statement"])), "Version": reviewed["Version"]}
    for stmt in same["Statement"]:
        if isinstance(stmt["Action"], list) and len(stmt["Action"]) == 1:
            stmt["Action"] = stmt["Action"][0]
    src.put_table_bucket_policy(tableBucketARN=world.source_arn, resourcePolicy=json.dumps(same))
    assert _audit(world).drifts == []
    kept = [s for s in reviewed["Statement"] if s["Sid"] != "DenySourceBucketPolicyChange"]
    dropped = {**reviewed, "Statement": kept}
    src.put_table_bucket_policy(tableBucketARN=world.source_arn, resourcePolicy=json.dumps(dropped))
    (drift,) = _audit(world).drifts
    assert (drift.kind, drift.resource) == ("bucket-policy-statement-missing", world.source_arn)
    assert "DenySourceBucketPolicyChange" in drift.detail
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1
    assert "bucket-policy-statement-missing" in capsys.readouterr().out
    src.delete_table_bucket_policy(tableBucketARN=world.source_arn)
    assert _kinds(_audit(world)) == [("bucket-policy-missing", world.source_arn)]


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


def test_a_future_dated_commit_is_a_finding_of_audit_and_status(ops_env: OpsEnv, tmp_path, capsys) -> None:
    """One replicated commit dated a day ahead: freshness would read its age as 0 for good; `audit` and `status`
    name it (the replica's snapshot times cannot be trusted)."""
    import datetime as dt

    from s3tables_kit.jobs.ops import status as st

    world = deploy(ops_env, tables=("orders",), harden_now=True, replicate=False)
    now = dt.datetime.now(dt.UTC)
    world.commit("analytics.orders", now - dt.timedelta(hours=1))
    world.commit("analytics.orders", now + dt.timedelta(days=1))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    # Through `status`'s metadata cache: the first run (nothing cached) reads each replica's location and metadata
    # with one loadTable, the second over the unchanged lake its location alone (each file read once per cache), and
    # both find the same.
    runs = []
    for _ in range(2):
        before = ops_env.control.stats()
        cache = MetadataCache.open(tmp_path / "metadata-cache")
        report = au.audit(world.clients, world.cfg, world.outputs, show_progress=False, cache=cache)
        runs.append((report, requests_between(before, ops_env.control.stats()), cache.counts()))
    (cold, cold_calls, cold_cache), (warm, warm_calls, warm_cache) = runs
    replicas = cold.checked["replica tables"]
    assert replicas >= 1 and _findings(warm) == _findings(cold)
    assert (cold_calls.get("LoadTable"), cold_calls.get("GetTableMetadataLocation")) == (replicas, None)
    assert (warm_calls.get("LoadTable"), warm_calls.get("GetTableMetadataLocation")) == (None, replicas)
    assert "GetObject" not in cold_calls and "GetObject" not in warm_calls
    assert cold_cache["writes"] == warm_cache["hits"] == replicas and warm_cache["misses"] == 0
    (drift,) = [d for d in cold.drifts if d.kind == "snapshot-time-untrusted"]  # the others: not hardened
    assert drift.resource.split()[0] == "analytics.orders"
    assert "snapshot 2 is dated" in drift.detail
    out = world.write_outputs(tmp_path)
    assert st.main(["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--quiet", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["untrusted_times"] == 1
    (row,) = [d for d in doc["destinations"] if d["table"] == "analytics.orders"]
    assert "snapshot 2 is dated" in row["window"]["time_findings"][0]
    # a pending commit dated a day ahead does not make the lag 0: it counts from the service's modifiedAt
    world.commit("analytics.orders", now + dt.timedelta(days=2))
    ops_env.control.set_status(world.tables["analytics.orders"], world.replica_arn, "pending")
    assert st.main(["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--quiet", "--json"]) == 1
    (row,) = [d for d in json.loads(capsys.readouterr().out)["destinations"] if d["table"] == "analytics.orders"]
    assert row["lag_seconds"] > 0 and "modifiedAt" in row["lag_source"]


def test_a_table_policy_is_compared_by_meaning_and_its_text_made_once() -> None:
    """`TablePolicyCheck`: the reviewed document's text is made once for every table but its ARN; a live text equal
    to it passes without building anything, any other is compared by meaning with the document of that table, so a
    reformatted policy passes and a changed one, another table's, or the stand-in's is a drift."""
    from s3tables_kit.jobs.ops.audit_scope import TablePolicyCheck, replica_table_policy_of
    from s3tables_kit.topology.config import load_config
    from s3tables_kit.topology.paths import ROOT

    cfg = load_config(ROOT / "examples" / "seed.toml")
    want = replica_table_policy_of(cfg, cfg.replicas[0])
    built: list[str] = []
    check = TablePolicyCheck(lambda arn: built.append(arn) or want(arn))
    arn, other = (f"{cfg.replicas[0].bucket_arn}/table/{u}" for u in ("uuid-1", "uuid-2"))
    assert check.matches(json.dumps(want(arn)), arn)
    assert check.matches(json.dumps(want(other)), other)
    assert built == [TablePolicyCheck.STAND_IN, arn]  # the other table's text was not built
    doc = want(arn)
    reordered = {**doc, "Statement": list(reversed(doc["Statement"]))}
    assert check.matches(json.dumps(reordered, indent=2), arn)
    assert not check.matches(json.dumps(want(other)), arn)
    assert not check.matches(json.dumps({**doc, "Statement": doc["Statement"][1:]}), arn)
    assert not check.matches(json.dumps(want(TablePolicyCheck.STAND_IN)), arn)

    # a document that is not the same text but for its ARN: every table's is built and compared by meaning
    def salted(a: str, by: str | None = None) -> dict[str, object]:
        extra = {"Sid": "Salted", "Effect": "Deny", "Principal": "*", "Action": "s3tables:*", "Resource": by or a[::-1]}
        return {**want(a), "Statement": [*want(a)["Statement"], extra]}

    check = TablePolicyCheck(salted)
    assert check.matches(json.dumps(salted(arn)), arn)
    assert check.matches(json.dumps(salted(other)), other)
    assert not check.matches(json.dumps(salted(other, by=arn[::-1])), other)
