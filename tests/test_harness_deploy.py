"""The one deployer into the local stand-in (harness/deploy.py): a configuration deployed through the APIs leaves
what its stacks would (buckets, their policies and settings, the replication, the SCPs on their targets), and its
outputs parse as the contract with the values of what it created; the drills' failover topology parses too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.process import Emulator
from harness.deploy import DeployError, client, deploy, failover_outputs, single_account
from harness.drills.failover_planned import FAILBACK_BUCKET, failback_config
from harness.drills.seed import SEED, SEED_FAILOVER, drill_doc, write_config
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.outputs import parse_outputs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Emulator, dict[str, object]]]:
    cfg = load_config(SEED)
    out = tmp_path_factory.mktemp("deploy")
    emu = Emulator(log=out / "emulator.log", env={"MOTO_ACCOUNT_ID": single_account(cfg)}).start()
    try:
        yield emu, deploy(cfg, emu)
    finally:
        emu.stop()


def test_the_api_deploy_leaves_what_the_stacks_would_and_its_outputs_name_it(
    seeded: tuple[Emulator, dict[str, object]],
) -> None:
    emu, doc = seeded
    cfg = load_config(SEED)
    outputs = parse_outputs(json.loads(json.dumps(doc)), "deploy")
    src, rep = outputs.sources[0], outputs.replicas[0]
    source = client(emu.url, "s3tables", src.region)
    replica = client(emu.url, "s3tables", rep.region)
    assert source.get_table_bucket(tableBucketARN=src.table_bucket_arn)["name"] == cfg.sources[0].bucket
    orders = source.get_table(tableBucketARN=src.table_bucket_arn, namespace="analytics", name="orders")["tableARN"]
    conf = source.get_table_replication(tableArn=orders)["configuration"]
    assert conf["role"] == src.replication_role_arn == cfg.replication_role_arn_of(cfg.sources[0])
    assert [d["destinationTableBucketARN"] for d in conf["rules"][0]["destinations"]] == src.destinations
    policy = json.loads(replica.get_table_bucket_policy(tableBucketARN=rep.table_bucket_arn)["resourcePolicy"])
    assert any(s["Effect"] == "Deny" for s in policy["Statement"])
    assert src.replicated_tables == ["analytics.orders"] and src.replication_mode == "tables"
    org = outputs.organization
    assert org is not None and org.targets == ["ou-ab12-replicas1"]
    attached = client(emu.url, "organizations", "us-east-1").list_policies_for_target(
        TargetId="ou-ab12-replicas1", Filter="SERVICE_CONTROL_POLICY"
    )["Policies"]
    assert {p["Id"] for p in attached} >= {org.policy_id, org.guards_policy_id}
    vault, s3 = outputs.vault, client(emu.url, "s3", cfg.vault.region if cfg.vault else "")
    assert vault is not None and cfg.vault is not None
    lock = s3.get_object_lock_configuration(Bucket=vault.bucket_name)["ObjectLockConfiguration"]
    assert lock["Rule"]["DefaultRetention"] | {"Years": 0} == {"Mode": "COMPLIANCE", "Days": 365, "Years": 0}
    assert s3.get_bucket_versioning(Bucket=vault.bucket_name)["Status"] == "Enabled"
    assert json.loads(s3.get_bucket_policy(Bucket=vault.bucket_name)["Policy"])["Statement"]


def test_a_configuration_of_several_accounts_is_refused_for_the_api_deploy() -> None:
    with pytest.raises(DeployError, match=r"spans .* Terraform apply"):
        single_account(load_config(ROOT / "examples" / "multi-account.toml"))


def test_the_failback_outputs_of_the_drill_are_the_failover_topology_s(tmp_path: Path) -> None:
    seed = load_config(write_config(drill_doc(SEED), tmp_path / "kit.toml"))
    fb = load_config(failback_config(SEED_FAILOVER, tmp_path))
    outputs = parse_outputs(failover_outputs(fb, [FAILBACK_BUCKET], seed), "failback")
    [failback] = outputs.replicas
    assert failback.table_bucket_name == FAILBACK_BUCKET and failback.region == "us-east-1"
    src = outputs.sources[0]
    assert src.table_bucket_name == seed.replicas[0].bucket and src.destinations == [failback.table_bucket_arn]
    assert failback.source_table_bucket_arn == src.table_bucket_arn
    assert src.failover is not None and src.failover.failed_source_table_bucket_arn == seed.sources[0].bucket_arn
    assert src.replicated_tables == ["analytics.orders", "analytics.customers"]
    assert outputs.recovery.table_bucket_name == seed.recovery.bucket
