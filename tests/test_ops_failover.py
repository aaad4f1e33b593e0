"""The operations tools on the failover topology, on the S3 Tables emulator: after the failover
tool promoted the replica bucket and `cdktf deploy` of the failover topology made it the source (replication to a
new bucket), the outputs of that topology (no source stack: the promoted stack exports `kit_source`) parse,
`harden` puts the failover destination table policy on the new replicas (the failover replication role exempt, not
the failed source's) and leaves the promoted tables alone, and `audit` with the failover configuration checks the
promoted bucket as the source and the new bucket's tables as its replicas."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.failover import aws
from s3tables_kit.jobs.ops import audit as au
from s3tables_kit.jobs.ops import harden as hd
from s3tables_kit.jobs.ops import status as st
from s3tables_kit.policies import failover as failover_policies
from s3tables_kit.policies.documents import replica_table_policy_for
from s3tables_kit.topology.config import KitConfig, parse_config
from s3tables_kit.topology.failover import FailoverTopology, failover_topology
from s3tables_kit.topology.outputs import KitOutputs, failover_source_value, parse_outputs
from tests.failover_world import FailoverWorld, build
from tests.ops_fixtures import ACCOUNT, BREAK_GLASS, DST_BUCKET, DST_REGION, OpsEnv, _toml, replica_site

NEW_BUCKET = "demo-failover-euw1-tablebucket"
NEW_REGION = "eu-west-1"
WRITER = f"arn:aws:iam::{ACCOUNT}:role/demo-writer"
TABLES = ("analytics.customers", "analytics.orders")


def failover_config(fw: FailoverWorld) -> KitConfig:
    return parse_config(failover_config_doc(fw))


def failover_config_doc(fw: FailoverWorld) -> dict[str, Any]:
    """The world's `kit.toml` with the `[failover]` section of an incident: the replica promoted, a new bucket."""
    doc = copy.deepcopy(fw.world.cfg_doc)
    doc["failover"] = {
        "writer_roles": [WRITER],
        "promoted_bucket": DST_BUCKET,
        "replicate_to": [NEW_BUCKET],
        "new_buckets": [replica_site(NEW_BUCKET, NEW_REGION)],
    }
    return doc


def deploy_failover_topology(fw: FailoverWorld, cfg: KitConfig, topo: FailoverTopology) -> str:
    """What `cdktf deploy` of the failover topology leaves on the emulator (break-glass credentials): the new
    bucket with its destination bucket policy, and bucket-level replication from the promoted bucket to it."""
    clients = fw.clients()
    new = topo.new_buckets[0]
    s3t_new = clients.s3tables(NEW_REGION, ACCOUNT)
    arn = s3t_new.create_table_bucket(name=NEW_BUCKET)["arn"]
    assert arn == new.bucket_arn
    s3t_new.put_table_bucket_encryption(tableBucketARN=arn, encryptionConfiguration={"sseAlgorithm": "AES256"})
    s3t_new.put_table_bucket_storage_class(
        tableBucketARN=arn, storageClassConfiguration={"storageClass": new.storage_class}
    )
    s3t_new.put_table_bucket_policy(
        tableBucketARN=arn,
        resourcePolicy=json.dumps(failover_policies.destination_bucket_policy(cfg, topo, new), indent=2),
    )
    fw.world.dst().put_table_bucket_replication(
        tableBucketARN=fw.world.replica_arn,
        configuration={
            "role": topo.replication_role_arn,
            "rules": [{"destinations": [{"destinationTableBucketARN": arn}]}],
        },
    )
    return arn


def failover_outputs_doc(fw: FailoverWorld, cfg: KitConfig, topo: FailoverTopology) -> dict[str, Any]:
    """`outputs.json` of the failover topology: no `source` stack; the promoted stack's `kit_source` is the value
    `s3tables_kit.topology.outputs.failover_source_value` builds, as `s3tables_kit.infra.stacks.failover_outputs`
    exports it (`tests/test_failover_outputs.py` parses the synthesized one)."""
    doc = copy.deepcopy(fw.world.outputs_doc)
    del doc["source"]
    doc[f"replica-{DST_BUCKET}"]["kit_source"] = failover_source_value(
        cfg, topo, encryption={"sse_algorithm": "AES256"}
    )
    new = topo.new_buckets[0]
    doc[new.stack_id] = {
        "kit_replica": {
            **doc[f"replica-{DST_BUCKET}"]["kit_replica"],
            "region": NEW_REGION,
            "table_bucket_arn": new.bucket_arn,
            "table_bucket_name": NEW_BUCKET,
        }
    }
    return doc


@pytest.fixture
def promoted(
    ops_env: OpsEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[FailoverWorld, KitConfig, FailoverTopology, KitOutputs]:
    fw = build(ops_env, monkeypatch)
    normal = hd.harden(fw.clients(), fw.world.outputs, show_progress=False)  # the replicas as protected before
    assert normal.exit_code == 0 and normal.count("hardened") == len(TABLES)
    cfg = failover_config(fw)  # the writers were configured before the incident: the tool's documents name them
    req = aws.Request(replica_bucket=DST_BUCKET, confirm=DST_BUCKET, report_dir=tmp_path, show_progress=False)
    result = aws.run(fw.clients(), req, fw.world.outputs, aws.documents_from_config(cfg, DST_BUCKET))
    assert result.exit_code == 0 and {o.verdict for o in result.outcomes} == {"promoted"}
    topo = failover_topology(cfg)
    deploy_failover_topology(fw, cfg, topo)
    replicated = ops_env.control.replicate(source_bucket_arn=fw.world.replica_arn)  # the service, from the new source
    assert len(replicated) == len(TABLES)
    return fw, cfg, topo, parse_outputs(failover_outputs_doc(fw, cfg, topo), "failover outputs.json")


def _table_policy(fw: FailoverWorld, region: str, bucket_arn: str, qualified: str) -> str:
    ns, name = qualified.split(".")
    s3t = fw.clients().s3tables(region, ACCOUNT)
    return str(s3t.get_table_policy(tableBucketARN=bucket_arn, namespace=ns, name=name)["resourcePolicy"])


def test_harden_on_the_failover_topology(promoted: Any) -> None:
    fw, cfg, topo, outputs = promoted
    new = topo.new_buckets[0]
    assert outputs.sources[0].table_bucket_arn == fw.world.replica_arn and outputs.sources[0].failover is not None
    promoted_before = {q: _table_policy(fw, DST_REGION, fw.world.replica_arn, q) for q in TABLES}

    report = hd.harden(fw.clients(), outputs, show_progress=False)

    assert report.exit_code == 0, report.to_json()
    by = {(r.bucket_arn, r.table): r for r in report.results}
    for q in TABLES:
        # the destination's replicas: the failover document, byte for byte as harden serialises every table policy
        assert by[(new.bucket_arn, q)].outcome == "hardened"
        new_table = by[(new.bucket_arn, q)].table_arn
        live = _table_policy(fw, NEW_REGION, new.bucket_arn, q)
        assert live == json.dumps(failover_policies.destination_table_policy(cfg, topo, new, new_table))
        assert topo.replication_role_arn in live and cfg.replication_role_arn_of(cfg.sources[0]) not in live
        assert json.loads(live) != replica_table_policy_for(cfg, new, new_table)  # what harden did before
        # the promoted tables: detached, never given a replica table policy; the tool's primary policy stays
        assert by[(fw.world.replica_arn, q)].outcome == "detached"
        assert _table_policy(fw, DST_REGION, fw.world.replica_arn, q) == promoted_before[q]
    assert report.count("detached") == len(TABLES) and report.count("hardened") == len(TABLES)

    again = hd.harden(fw.clients(), outputs, show_progress=False)  # converges
    assert again.count("unchanged") == len(TABLES) and again.count("hardened") == 0
    assert again.count("detached") == len(TABLES)


def test_status_and_harden_cli_read_the_failover_outputs(promoted: Any, tmp_path: Path, capsys: Any) -> None:
    fw, _cfg, topo, outputs = promoted
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(failover_outputs_doc(fw, _cfg, topo)), encoding="utf-8")
    common = ["--outputs", str(path), "--endpoint-url", fw.env.endpoint, "--json", "--quiet"]
    assert hd.main([*common, "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["counts"]["would-change"] == len(TABLES) and dry["counts"]["detached"] == len(TABLES)
    code = st.main(common)  # the promoted bucket is the source: its tables replicate to the new bucket
    status = json.loads(capsys.readouterr().out)
    assert code == 0 and status["exit_code"] == 0
    rows = status["destinations"]
    assert {(r["table"], r["destination_bucket_arn"], r["status"]) for r in rows} == {
        (q, topo.new_buckets[0].bucket_arn, st.COMPLETED) for q in TABLES
    }
    assert BREAK_GLASS in outputs.replicas[0].break_glass_principals


def _audit(fw: FailoverWorld, cfg: KitConfig, outputs: KitOutputs) -> au.AuditReport:
    return au.audit(fw.clients(), cfg, outputs, show_progress=False)


def test_audit_on_a_clean_failover_topology(promoted: Any, tmp_path: Path, capsys: Any) -> None:
    """The promoted bucket is the source (its replication, its promoted bucket and table policies, opened to the
    writers), the new bucket's tables are its replicas (failover table policy, retention): no drift once hardened."""
    fw, cfg, topo, outputs = promoted
    assert hd.harden(fw.clients(), outputs, show_progress=False).exit_code == 0

    report = _audit(fw, cfg, outputs)

    assert report.drifts == [], json.dumps(report.to_json(), indent=1)
    assert report.checked["promoted tables"] == len(TABLES) and report.checked["replica tables"] == len(TABLES)
    assert report.checked["source tables"] == len(TABLES)
    assert report.checked["bucket policies"] == 2  # the promoted bucket and the new destination
    # the same through the command line, on the files an operator has
    (tmp_path / "kit.toml").write_text(_toml(failover_config_doc(fw)), encoding="utf-8")
    (tmp_path / "outputs.json").write_text(json.dumps(failover_outputs_doc(fw, cfg, topo)), encoding="utf-8")
    args = ["--config", str(tmp_path / "kit.toml"), "--outputs", str(tmp_path / "outputs.json")]
    code = au.main([*args, "--endpoint-url", fw.env.endpoint, "--quiet", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["drifts"] == [] and doc["checked"]["promoted tables"] == len(TABLES)


def test_audit_names_the_drifts_of_a_failover_topology(promoted: Any) -> None:
    """A new replica without its table policy, a promoted table whose policy was replaced by the replica one
    (read-only again for the writers), the new bucket's policy without a statement: each is named, nothing else."""
    fw, cfg, topo, outputs = promoted
    assert hd.harden(fw.clients(), outputs, show_progress=False).exit_code == 0
    new = topo.new_buckets[0]
    s3t_new = fw.clients().s3tables(NEW_REGION, ACCOUNT)
    s3t_new.delete_table_policy(tableBucketARN=new.bucket_arn, namespace="analytics", name="orders")
    s3t_dst = fw.clients().s3tables(DST_REGION, ACCOUNT)
    customers = s3t_dst.get_table(tableBucketARN=fw.world.replica_arn, namespace="analytics", name="customers")
    s3t_dst.put_table_policy(
        tableBucketARN=fw.world.replica_arn,
        namespace="analytics",
        name="customers",
        resourcePolicy=json.dumps(replica_table_policy_for(cfg, topo.promoted, customers["tableARN"])),
    )
    policy = json.loads(s3t_new.get_table_bucket_policy(tableBucketARN=new.bucket_arn)["resourcePolicy"])
    dropped = policy["Statement"].pop(0)
    s3t_new.put_table_bucket_policy(tableBucketARN=new.bucket_arn, resourcePolicy=json.dumps(policy))

    report = _audit(fw, cfg, outputs)

    orders = s3t_new.get_table(tableBucketARN=new.bucket_arn, namespace="analytics", name="orders")["tableARN"]
    assert sorted((d.kind, d.resource) for d in report.drifts) == [
        ("bucket-policy-statement-missing", new.bucket_arn),
        ("table-policy-changed", f"analytics.customers ({customers['tableARN']})"),
        ("table-policy-missing", f"analytics.orders ({orders})"),
    ], report.to_json()
    assert dropped["Sid"] in next(d.detail for d in report.drifts if d.kind.startswith("bucket-policy"))
    assert report.exit_code == 1


def test_audit_flags_a_promoted_bucket_table_that_is_still_a_replica(promoted: Any) -> None:
    """A table the failover tool did not promote (still managed by replication, read-only) in the promoted bucket."""
    fw, cfg, _topo, outputs = promoted
    assert hd.harden(fw.clients(), outputs, show_progress=False).exit_code == 0
    s3t_src = fw.world.src()
    arn = s3t_src.create_table(
        tableBucketARN=fw.world.source_arn, namespace="analytics", name="late", format="ICEBERG"
    )["tableARN"]
    s3t_src.put_table_replication(
        tableArn=arn,
        configuration={
            "role": cfg.replication_role_arn_of(cfg.sources[0]),
            "rules": [{"destinations": [{"destinationTableBucketARN": fw.world.replica_arn}]}],
        },
    )
    fw.env.control.replicate(source_bucket_arn=fw.world.source_arn)  # the failed source's last replication

    kinds = {d.kind: d for d in _audit(fw, cfg, outputs).drifts}

    assert "analytics.late" in kinds["promoted-table-still-replica"].resource
