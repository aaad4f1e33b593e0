"""Pure checks of the lock after the first deploy and the CreateTable flag (docs/decisions/0028): which layer exempts
the deploy role and the replication role, read from the built documents. The IAM evaluator proves the decisions in
tests/test_policy_proofs.py, test_policy_attacks.py, test_policy_estate_proofs.py and test_policy_failover_proofs.py."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies.docset import build
from s3tables_kit.policies.documents import compact_json
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.loader import ConfigError, parse_config

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = "arn:aws:iam::222222222222:role/terraform-deploy"
REPLICATION = "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication"


def _cfg(example: str, flag: str | None = None) -> KitConfig:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    if flag is None:
        return cfg
    prot = cfg.protection.model_copy(update={"replication_role_createtable_dependents": flag})
    return cfg.model_copy(update={"protection": prot})


def _exempt(doc: dict[str, Any], sid: str) -> list[str]:
    stmt = next(s for s in doc["Statement"] if s["Sid"] == sid)
    arns = stmt.get("Condition", {}).get("ArnNotLike", {}).get("aws:PrincipalArn", [])
    return [arns] if isinstance(arns, str) else list(arns)


def _docs(cfg: KitConfig) -> dict[str, Any]:
    return {d.name: d.document for d in build(cfg).all()}


def test_the_deploy_role_is_exempt_in_the_scp_and_guardrail_only() -> None:
    docs = _docs(_cfg("multi-account"))
    bucket = docs["replica-bucket-policy--lakehouse-replica-euc1"]
    assert DEPLOY not in _exempt(bucket, "DenyReplicaProtectionChange")
    assert DEPLOY not in _exempt(bucket, "DenyReplicaBucketSettingsChange")
    assert DEPLOY in _exempt(docs["scp-protect-replicas"], "DenyReplicaProtectionChangeAndBucketSettingsChange")
    guardrail = docs["replica-guardrail--222222222222"]
    assert DEPLOY in _exempt(guardrail, "DenyReplicaProtectionChangeAndBucketSettingsChange")
    # removing a protective setting is a deletion: break-glass only, in every layer
    deletion = next(s for s in bucket["Statement"] if s["Sid"] == "DenyReplicaDeletion")
    assert {"s3tables:DeleteTableBucketPolicy", "s3tables:DeleteTableBucketEncryption"} <= set(deletion["Action"])


def test_the_flag_defaults_to_deny_and_takes_nothing_else() -> None:
    assert _cfg("seed").protection.replication_role_createtable_dependents == "deny"
    data = tomllib.loads((ROOT / "examples" / "seed.toml").read_text())
    data["protection"]["replication_role_createtable_dependents"] = "maybe"
    with pytest.raises(ConfigError, match="replication_role_createtable_dependents"):
        parse_config(data)


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate"])
def test_allow_exempts_the_replication_role_from_createtable_dependents_only(example: str) -> None:
    deny, allow = _docs(_cfg(example, "deny")), _docs(_cfg(example, "allow"))
    for name, doc in allow.items():
        sids = {s.get("Sid", "") for s in doc["Statement"]}
        if name.startswith("replica-table-policy") or "table-policy" in name:
            assert doc == deny[name], name  # a table policy exists only once its table does
        if name.startswith("replica-bucket-policy--") and not name.startswith("failover--"):
            assert "DenyReplicaBucketSettingsChangeOnReplicaCreation" in sids, name
            stmt = next(s for s in doc["Statement"] if s["Sid"] == "DenyReplicaBucketSettingsChangeOnReplicaCreation")
            assert sorted(stmt["Action"]) == ["s3tables:PutTableEncryption", "s3tables:PutTableStorageClass"]
        if name.endswith(("scp-protect-replicas", "scp-protect-replica-guards", "scp-protect-promoted")):
            assert len(compact_json(doc)) <= 5120, name
    assert allow != deny


def test_allow_is_in_the_scp_where_the_replication_role_is_bound() -> None:
    scp = _docs(_cfg("multi-account", "allow"))["scp-protect-replicas"]
    assert REPLICATION in _exempt(scp, "DenyReplicaProtectionChangeAndBucketSettingsChangeOnReplicaCreation")
    assert REPLICATION not in _exempt(scp, "DenyReplicaProtectionChangeAndBucketSettingsChange")
