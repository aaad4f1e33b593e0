"""An estate's organization layer (policies/estate.py): constant size, names no bucket and no source, the
replication-role pattern matches every source's role and nothing else of the kit. Pure Python (no simulator): the
proofs of what the documents allow are in tests/test_policy_estate_proofs.py."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from bench.estate_scp import estate_config
from s3tables_kit.policies import estate
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.documents import compact_json
from s3tables_kit.policies.lint import lint_documents
from s3tables_kit.topology.config import KitConfig, load_config, parse_config

ROOT = Path(__file__).resolve().parent.parent
SCP_LIMIT = 5120


def _scps(cfg: KitConfig) -> dict[str, str]:
    return {d.name: compact_json(d.document) for d in build(cfg) if d.kind == "scp"}


@pytest.fixture(scope="module")
def estate_of_50() -> KitConfig:
    return parse_config(estate_config(50))


def test_the_scps_do_not_grow_from_1_to_50_source_buckets(estate_of_50: KitConfig) -> None:
    one = _scps(parse_config(estate_config(1)))
    fifty = _scps(estate_of_50)
    assert len(estate_of_50.sources) == 50 and len(estate_of_50.replicas) == 6
    assert list(one) == list(fifty) == ["scp-protect-replicas", "scp-protect-replica-guards", "scp-protect-pipeline"]
    assert {n: len(s) for n, s in one.items()} == {n: len(s) for n, s in fifty.items()}
    assert one == fifty  # not only the size: the very same documents
    assert all(len(s) <= SCP_LIMIT for s in fifty.values())


def test_the_scps_name_no_bucket_and_no_source(estate_of_50: KitConfig) -> None:
    text = "".join(_scps(estate_of_50).values())
    for src in estate_of_50.sources:
        assert src.bucket not in text and f"-{src.id}-" not in text and src.account_id not in text
    for r in estate_of_50.replicas:
        assert r.bucket not in text


def test_a_source_configuration_keeps_its_arn_based_scps() -> None:
    """`[source]` is not an estate: its SCPs still name its replica buckets and its replication role."""
    cfg = load_config(ROOT / "examples" / "multi-account.toml")
    text = "".join(_scps(cfg).values())
    assert cfg.scheme.key == "source" and estate.TAG_CONDITION_KEY not in text
    assert all(r.bucket_arn in text for r in cfg.replicas) and cfg.replication_role_arn_of(cfg.sources[0]) in text


def test_the_pattern_matches_every_replication_role_and_nothing_else_of_the_kit(estate_of_50: KitConfig) -> None:
    for cfg in (load_config(ROOT / "examples" / "estate.toml"), estate_of_50):
        pattern = estate.replication_role_pattern(cfg)
        assert all(fnmatch.fnmatchcase(arn, pattern) for arn in cfg.replication_role_arns)
        others = [
            cfg.recovery_role_arn,
            *cfg.protection.break_glass_principals,
            *(r.deploy_role_arn for r in cfg.replicas if r.deploy_role_arn),
            *(s.deploy_role_arn for s in cfg.sources if s.deploy_role_arn),
        ]
        assert not [arn for arn in others if fnmatch.fnmatchcase(arn, pattern)]


def test_every_document_of_a_large_estate_passes_the_lint(estate_of_50: KitConfig) -> None:
    assert lint_documents(build(estate_of_50)) == []


def test_the_tag_condition_is_the_topologys_protection_tag() -> None:
    from s3tables_kit.topology.rules import PROTECTION_TAG_KEY

    cfg = load_config(ROOT / "examples" / "estate.toml")
    scp = json.loads(_scps(cfg)["scp-protect-replicas"])
    tagged = [s for s in scp["Statement"] if "StringEquals" in s.get("Condition", {})]
    assert tagged and all(
        s["Condition"]["StringEquals"] == {f"s3tables:TableBucketTag/{PROTECTION_TAG_KEY}": cfg.kit.name}
        for s in tagged
    )


# ---------------------------------------------------------------- failover candidates (in an estate) ----


def _estate_with_failover() -> KitConfig:
    import tomllib

    data = tomllib.loads((ROOT / "examples" / "estate.toml").read_text())
    data["failover"] = {"writer_roles": ["arn:aws:iam::111111111111:role/sales-writer"]}
    return parse_config(data)


def test_an_estate_renders_promotions_of_single_source_replicas_only() -> None:
    """The sales replica (fed by sales alone) gets its `failover--` candidates, the promotion among sales'
    destinations; the vault (fan-in: restored from, never promoted) gets none. The guardrails the promotion deploys
    in the account sales shares with marketing keep guarding marketing's pipeline too (its stacks stay)."""
    from s3tables_kit.policies.failover import failover_policy_docs

    cfg = _estate_with_failover()
    ds = build(cfg)
    names = [d.name for d in ds.candidates]
    assert names and all(n.startswith("failover--estate-sales-replica-euc1--") for n in names)
    built = {d.name: d.document for d in failover_policy_docs(cfg, "estate-sales-replica-euc1")}
    assert all(d.document == built[d.name] for d in ds.candidates)
    marketing = next(s for s in cfg.sources if s.id == "marketing-euw1")
    assert marketing.account_id == "111111111111"
    text = json.dumps(ds.document("failover--estate-sales-replica-euc1--pipeline-guardrail--111111111111"))
    assert cfg.replication_role_arn_of(marketing) in text and "estate-sales-euw1-s3tables-replication" in text
    promoted = ds.entry("failover--estate-sales-replica-euc1--bucket-policy")
    assert promoted.deploys_as == "replica-bucket-policy--estate-sales-replica-euc1"


def test_an_estates_promotion_replaces_no_estate_wide_document() -> None:
    """Seen from one source, a promotion must not redeploy what the whole estate shares: the tag-based SCPs, the
    recovery role, the vault's documents (other sources feed it) and the guardrail of the vault's account."""
    cfg = _estate_with_failover()
    deployed_as = {d.deploys_as or d.name for d in build(cfg).candidates}
    for name in ("scp-protect-replicas", "scp-protect-replica-guards", "recovery-role-permissions"):
        assert name not in deployed_as
    assert not [n for n in deployed_as if n.endswith("--estate-vault-euc1") or n.endswith("--666666666666")]
    assert "scp-protect-promoted" in deployed_as  # the promoted bucket's own SCP (ARN-based, one bucket)
