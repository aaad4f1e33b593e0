"""Which buckets the failover tool can plan a promotion of, and from which configuration (pure: the examples'
configurations and the policy builder, no AWS, no Spark). In a failover topology the promotion of a destination of the
promoted source, a new bucket included, is planned like that of any replica; every existing case is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from s3tables_kit.jobs.failover.aws import documents_from_config, render_policy
from s3tables_kit.jobs.failover.promotion import promotion_config
from s3tables_kit.policies.failover import failover_documents
from s3tables_kit.topology.config import KitConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("seed.toml", "multi-account.toml", "failover/seed.toml", "failover/multi-account.toml")


def _cfg(name: str) -> KitConfig:
    return load_config(ROOT / "examples" / name)


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _principals(policy: str, sid_prefix: str) -> set[str]:
    """The principals the deny statements of `policy` whose Sid starts with `sid_prefix` exempt."""
    out: set[str] = set()
    for s in json.loads(policy)["Statement"]:
        if s["Sid"].startswith(sid_prefix) and s["Effect"] == "Deny":
            for cond in s.get("Condition", {}).values():
                out.update(_listed(cond.get("aws:PrincipalArn", [])))
    return out


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_replica_is_planned_from_the_configuration_itself_byte_for_byte(example: str) -> None:
    cfg = _cfg(example)
    for replica in cfg.replicas:
        assert promotion_config(cfg, replica.bucket) is cfg
        docs = failover_documents(cfg, replica.bucket)
        tool = documents_from_config(cfg, replica.bucket)
        assert tool.bucket_policy == render_policy(docs.bucket_policy)
        table = f"{replica.bucket_arn}/table/0123"
        assert tool.table_policy(table) == render_policy(docs.table_policy(table))


@pytest.mark.parametrize(
    ("example", "new_bucket", "writer"),
    [
        ("failover/seed.toml", "demo-failover-use2-tablebucket", "arn:aws:iam::111122223333:role/demo-writer"),
        ("failover/multi-account.toml", "lakehouse-failover-apse2", "arn:aws:iam::333333333333:role/lakehouse-writer"),
    ],
)
def test_a_new_bucket_of_the_failover_is_promoted_like_a_replica(example: str, new_bucket: str, writer: str) -> None:
    cfg = _cfg(example)
    assert cfg.failover is not None
    (new,) = [b for b in cfg.failover.new_buckets if b.bucket == new_bucket]
    with pytest.raises(ValueError, match="not the bucket of any entry in replicas"):
        failover_documents(cfg, new_bucket)  # the policy builder alone knows only [[replicas]]

    promoting = promotion_config(cfg, new_bucket)
    assert [r.bucket for r in promoting.replicas] == [*(r.bucket for r in cfg.replicas), new_bucket]
    assert promoting.failover == cfg.failover and promoting.protection == cfg.protection
    # the same source, replicating to every replica as `[source]` does: the new bucket is one of its destinations
    (src,) = promoting.sources
    assert src.model_copy(update={"replicate_to": cfg.sources[0].replicate_to}) == cfg.sources[0]
    assert promoting.destinations_of(src) == promoting.replicas

    tool = documents_from_config(cfg, new_bucket)
    policy = json.loads(tool.bucket_policy)
    resources = {r for s in policy["Statement"] for r in _listed(s["Resource"])}
    assert resources == {new.bucket_arn, f"{new.bucket_arn}/table/*"}  # the new bucket's, and no other bucket's
    exempt = _principals(tool.bucket_policy, "DenyPromoted")
    assert writer in exempt  # the writers of the new bucket's account may write the promoted primary
    assert set(cfg.protection.break_glass_principals) <= exempt
    glass_accounts = {p.split(":")[4] for p in cfg.protection.break_glass_principals}
    assert {a.split(":")[4] for a in exempt} <= {new.account_id, *glass_accounts}  # no other account's writer
    table = f"{new.bucket_arn}/table/0123"
    assert {r for s in json.loads(tool.table_policy(table))["Statement"] for r in _listed(s["Resource"])} == {table}


def test_an_unknown_bucket_is_still_refused_by_name() -> None:
    cfg = _cfg("failover/seed.toml")
    assert promotion_config(cfg, "no-such-bucket") is cfg
    with pytest.raises(ValueError, match="'no-such-bucket' is not the bucket of any entry in replicas"):
        documents_from_config(cfg, "no-such-bucket")
