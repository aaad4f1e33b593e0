"""`s3tables_kit.jobs.ops.audit` of the backup vault over real HTTP: a vault deployed as the vault stack leaves it
audits clean; a shortened or weakened lock, another encryption, a changed bucket policy is named and exits 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.world import deploy_vault
from s3tables_kit.jobs.ops import audit as au
from s3tables_kit.jobs.ops.audit_scope import AuditReport
from s3tables_kit.jobs.ops.audit_vault import check_vault, encryption_drift, lock_drift
from s3tables_kit.topology.config import parse_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.outputs import OUTPUT_ORGANIZATION, parse_outputs
from tests.ops_fixtures import ACCOUNT, OpsEnv, World, config_dict, deploy

VAULT_REGION = "us-east-2"
VAULT = {
    "account_id": ACCOUNT,
    "region": VAULT_REGION,
    "retention_days": 365,
    "bucket": "seed-audit-vault",
    "tables": ["analytics.*"],  # the source table of the world was created now: within the budget, no finding
}


def _vault_world(env: OpsEnv) -> World:
    """The ops world (hardened: no other drift) with a `[vault]` and its bucket deployed as the vault stack."""
    world = deploy(env, tables=("orders",), harden_now=True)
    world.cfg_doc = world.cfg_doc | {"vault": VAULT}
    world.cfg = parse_config(world.cfg_doc)
    world.outputs_doc = outputs_doc(world.cfg, world.outputs_doc["organization"][OUTPUT_ORGANIZATION])
    world.outputs = parse_outputs(world.outputs_doc)
    assert world.outputs.vault is not None
    deploy_vault(world.clients.s3(VAULT_REGION), world.cfg, world.outputs.vault.kms_key_arn)
    return world


def _vault_kinds(world: World) -> list[str]:
    """The vault's findings alone (`make audit` runs the same check after the replicas'; exit codes below)."""
    report = AuditReport()
    check_vault(world.clients, world.cfg, world.outputs, report)
    return sorted(d.kind for d in report.drifts)


def _lock(days: int, mode: str = "COMPLIANCE") -> dict[str, Any]:
    return {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": mode, "Days": days}}}


def test_a_deployed_vault_audits_clean_and_each_weakened_setting_is_named(
    ops_env: OpsEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = _vault_world(ops_env)
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 0, capsys.readouterr().out
    assert "1 vault buckets" in capsys.readouterr().out
    # On AWS nobody may make these changes after the first deploy (the bucket policy and the vault SCP); the stand-in
    # does not evaluate either for bucket settings, so the test's own credentials stand for what audit must catch.
    rescue = world.clients.s3(VAULT_REGION)
    rescue.put_object_lock_configuration(Bucket=VAULT["bucket"], ObjectLockConfiguration=_lock(30))
    assert _vault_kinds(world) == ["vault-retention-below-configured"]
    rescue.put_object_lock_configuration(Bucket=VAULT["bucket"], ObjectLockConfiguration=_lock(365, "GOVERNANCE"))
    assert _vault_kinds(world) == ["vault-lock-changed"]
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1
    assert "vault-lock-changed" in capsys.readouterr().out
    rescue.put_object_lock_configuration(Bucket=VAULT["bucket"], ObjectLockConfiguration=_lock(365))
    policy = json.loads(rescue.get_bucket_policy(Bucket=VAULT["bucket"])["Policy"])
    policy["Statement"] = [s for s in policy["Statement"] if s["Sid"] != "DenyVault"]
    rescue.put_bucket_policy(Bucket=VAULT["bucket"], Policy=json.dumps(policy))
    rescue.put_bucket_encryption(
        Bucket=VAULT["bucket"],
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    assert _vault_kinds(world) == ["bucket-policy-statement-missing", "vault-encryption-mismatch"]


def test_the_lock_and_encryption_comparisons() -> None:
    cfg = parse_config({**config_dict(), "vault": VAULT})
    assert cfg.vault is not None
    assert lock_drift(cfg.vault, _lock(365)) is None
    assert (
        lock_drift(
            cfg.vault,
            {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}},
        )
        is None
    )
    assert lock_drift(cfg.vault, _lock(400)) == ("vault-lock-changed", "default retention is 400 days, configured 365")
    assert lock_drift(cfg.vault, {"ObjectLockEnabled": "Enabled"}) == (
        "vault-lock-changed",
        "default retention mode is unset, expected COMPLIANCE",
    )
    key = "arn:aws:kms:us-east-2:123456789012:key/k"
    good = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}}
    assert encryption_drift([good | {"BucketKeyEnabled": True}], key) is None
    assert encryption_drift([good], key) == "the S3 Bucket Key is off"
