"""`[protection] replication_setup` (docs/aws-facts.md, U27): who sets up and changes a source's replication. Both
values on the built documents of every topology it touches (a source's bucket policy, the guards SCP, an estate's
SCP by name pattern, a promoted bucket's policy), and the difference proved with the IAM evaluator: under
"break-glass" the source deploy role can no longer change or delete the source's replication, break-glass still can."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies.docset import build
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, ScpLevel, SimRequest, evaluate, principal_context
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.loader import ConfigError, parse_config

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DEPLOY = "arn:aws:iam::111111111111:role/terraform-deploy"
PROMOTED_DEPLOY = "arn:aws:iam::222222222222:role/terraform-deploy"


def _cfg(example: str, value: str) -> KitConfig:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    return cfg.model_copy(update={"protection": cfg.protection.model_copy(update={"replication_setup": value})})


def _docs(cfg: KitConfig) -> dict[str, Any]:
    return {d.name: d.document for d in build(cfg).all()}


def _exempt(doc: dict[str, Any], sid: str) -> list[str]:
    stmt = next(s for s in doc["Statement"] if s["Sid"] == sid)
    arns = stmt.get("Condition", {}).get("ArnNotLike", {}).get("aws:PrincipalArn", [])
    return [arns] if isinstance(arns, str) else list(arns)


def test_the_flag_defaults_to_the_deploy_role_and_takes_nothing_else() -> None:
    assert load_config(ROOT / "examples" / "multi-account.toml").protection.replication_setup == "deploy-role"
    data = tomllib.loads((ROOT / "examples" / "multi-account.toml").read_text())
    data["protection"]["replication_setup"] = "deploy"
    with pytest.raises(ConfigError, match="replication_setup"):
        parse_config(data)
    data["protection"]["replication_setup"] = "break-glass"
    assert parse_config(data).protection.replication_setup == "break-glass"


def test_break_glass_drops_the_deploy_roles_from_every_replication_guard_and_nothing_else() -> None:
    deploy, bg = _docs(_cfg("multi-account", "deploy-role")), _docs(_cfg("multi-account", "break-glass"))
    for name in ("source-bucket-policy", "scp-protect-replica-guards"):
        assert SOURCE_DEPLOY in _exempt(deploy[name], "DenySourceReplicationChange"), name
        assert SOURCE_DEPLOY not in _exempt(bg[name], "DenySourceReplicationChange"), name
        assert set(_exempt(bg[name], "DenySourceReplicationChange")) == set(
            _exempt(deploy[name], "DenySourceReplicationChange")
        ) - {SOURCE_DEPLOY}
    # the deploy role still deploys the source bucket policy itself
    assert SOURCE_DEPLOY in _exempt(bg["source-bucket-policy"], "DenySourceBucketPolicyChange")
    # a promoted bucket's replication is set up by break-glass only: the deploy role's own rule exempts no deploy role
    promoted = "failover--lakehouse-replica-euc1--bucket-policy"
    assert PROMOTED_DEPLOY in _exempt(deploy[promoted], "DenyPromotedReplicationSetup")
    assert PROMOTED_DEPLOY not in _exempt(bg[promoted], "DenyPromotedReplicationSetup")
    # outside a failover only the source's replication guards move (a planned failover's freeze holds the source
    # bucket policy)
    changed = {n for n in deploy if deploy[n] != bg[n] and not n.startswith("failover--")}
    assert {n for n in changed if not n.startswith("planned-failover-freeze--")} == {
        "source-bucket-policy",
        "scp-protect-replica-guards",
    }


def test_an_estate_drops_the_deploy_role_name_pattern() -> None:
    deploy, bg = _docs(_cfg("estate", "deploy-role")), _docs(_cfg("estate", "break-glass"))
    guard = "DenySourceReplicationChange"
    patterns = [a for a in _exempt(deploy["scp-protect-replica-guards"], guard) if "*" in a]
    assert patterns and not set(patterns) & set(_exempt(bg["scp-protect-replica-guards"], guard))


def test_the_evaluator_denies_the_source_deploy_role_replication_changes_only_under_break_glass() -> None:
    allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    policies: dict[str, Any] = {"allow-all": allow_all}
    requests = []
    for value in ("deploy-role", "break-glass"):
        cfg = _cfg("multi-account", value)
        docs = _docs(cfg)
        policies[f"{value}:bucket"], policies[f"{value}:guards"] = (
            docs["source-bucket-policy"],
            docs["scp-protect-replica-guards"],
        )
        bucket = cfg.sources[0].bucket_arn
        for who, arn in (("deploy", SOURCE_DEPLOY), ("break-glass", cfg.protection.break_glass_principals[0])):
            for action in ("PutTableBucketReplication", "DeleteTableBucketReplication"):
                requests.append(
                    SimRequest(
                        id=f"{value}|{who}|{action}",
                        principal=arn,
                        action=f"s3tables:{action}",
                        resource=bucket,
                        resource_account=cfg.sources[0].account_id,
                        context=principal_context(arn),
                        identity_policies=("allow-all",),
                        scps=(ScpLevel("root", ("allow-all",)), ScpLevel("ou", ("allow-all", f"{value}:guards"))),
                        resource_policies=(f"{value}:bucket",),
                    )
                )
    got = {k: r.decision for k, r in evaluate(policies, requests).items()}
    for action in ("PutTableBucketReplication", "DeleteTableBucketReplication"):
        assert got[f"deploy-role|deploy|{action}"] == ALLOWED
        assert got[f"break-glass|deploy|{action}"] == EXPLICIT_DENY
        assert got[f"deploy-role|break-glass|{action}"] == got[f"break-glass|break-glass|{action}"] == ALLOWED
