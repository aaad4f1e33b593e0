"""policies/lint.py: each rule with a compliant and a non-compliant document, plus the kit's own documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import lint
from s3tables_kit.policies.documents import build_documents
from s3tables_kit.topology.config import load_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))

BUCKET = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"
TABLES = BUCKET + "/table/*"
BG = "arn:aws:iam::111122223333:role/s3tables-break-glass"


def doc(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def ids(doc_: dict[str, Any], kind: str, rule_id: str) -> list[str]:
    return [f.message for f in lint.lint_document(doc_, kind, "t", [lint.RULES_BY_ID[rule_id]])]


# ---------------------------------------------------------------- KIT-IAM1 ActionsExist ----


def test_iam1_compliant() -> None:
    d = doc(
        {
            "Sid": "A",
            "Effect": "Allow",
            "Action": ["s3tables:GetTable", "s3tables:PutTableReplication"],
            "Resource": TABLES,
        },
        {"Sid": "B", "Effect": "Allow", "Action": ["kms:Describe*"], "Principal": {"AWS": BG}, "Resource": "*"},
    )
    assert ids(d, "kms-key-policy", "KIT-IAM1") == []


def test_iam1_non_compliant() -> None:
    d = doc(
        {
            "Sid": "A",
            "Effect": "Deny",
            "Action": ["s3tables:DeleteTables", "s3tables:Nope*", "nosuchservice:Get", "GetTable"],
            "Resource": TABLES,
        },
    )
    problems = ids(d, "identity", "KIT-IAM1")
    assert len(problems) == 4
    assert "'s3tables:DeleteTables' does not exist" in problems[0]
    assert "matches no action" in problems[1]


# ---------------------------------------------------------------- KIT-IAM2 ResourceLevels ----


def test_iam2_compliant() -> None:
    d = doc(
        {
            "Sid": "A",
            "Effect": "Deny",
            "Action": ["s3tables:DeleteTable", "s3tables:DeleteTableBucket"],
            "Resource": [BUCKET, TABLES],
        },
        {"Sid": "B", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/scripts/*"},
        {"Sid": "C", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": BUCKET + "/*"},
    )
    assert ids(d, "identity", "KIT-IAM2") == []


def test_iam2_non_compliant_table_action_on_bucket_arn() -> None:
    # The classic silent bug: a Deny of DeleteTable on the bucket ARN alone never matches a DeleteTable request.
    d = doc({"Sid": "A", "Effect": "Deny", "Principal": "*", "Action": ["s3tables:DeleteTable"], "Resource": BUCKET})
    problems = ids(d, "bucket-policy", "KIT-IAM2")
    assert len(problems) == 1 and "s3tables:DeleteTable is authorised on Table" in problems[0]


def test_iam2_non_compliant_bucket_action_on_table_arn() -> None:
    d = doc({"Sid": "A", "Effect": "Allow", "Action": ["s3tables:CreateTable"], "Resource": TABLES})
    assert len(ids(d, "identity", "KIT-IAM2")) == 1


def test_iam2_kit_action_tables_agree_with_iam_data() -> None:
    assert lint.check_kit_action_levels() == []


def test_iam2_kit_action_tables_disagreement_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(iam_actions, "BUCKET_LEVEL", iam_actions.BUCKET_LEVEL | {"DeleteTable"})
    problems = lint.check_kit_action_levels()
    assert any("DeleteTable is listed as TableBucket-level" in p for p in problems)


# ---------------------------------------------------------------- KIT-IAM3 NoWildcardActions ----


def test_iam3_compliant() -> None:
    d = doc(
        {"Sid": "A", "Effect": "Allow", "Action": ["s3tables:GetTable"], "Resource": TABLES},
        {"Sid": "B", "Effect": "Deny", "Action": "s3tables:*", "Resource": TABLES},  # a Deny may be broad
    )
    assert ids(d, "identity", "KIT-IAM3") == []


@pytest.mark.parametrize("action", ["*", "s3tables:*", ["s3tables:GetTable", "kms:*"]])
def test_iam3_non_compliant(action: Any) -> None:
    d = doc({"Sid": "A", "Effect": "Allow", "Action": action, "Resource": TABLES})
    assert len(ids(d, "identity", "KIT-IAM3")) == 1


def test_iam3_non_compliant_not_action() -> None:
    d = doc({"Sid": "A", "Effect": "Allow", "NotAction": "s3tables:DeleteTable", "Resource": TABLES})
    assert "NotAction" in ids(d, "identity", "KIT-IAM3")[0]


# ---------------------------------------------------------------- KIT-IAM4 NoWildcardResources ----


def test_iam4_compliant() -> None:
    d = doc({"Sid": "A", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": TABLES})
    assert ids(d, "identity", "KIT-IAM4") == []
    # In a KMS key policy "*" means "this key".
    key = doc({"Sid": "K", "Effect": "Allow", "Principal": {"AWS": BG}, "Action": "kms:Decrypt", "Resource": "*"})
    assert ids(key, "kms-key-policy", "KIT-IAM4") == []
    # A Deny on "*" narrows, it never grants.
    deny = doc({"Sid": "D", "Effect": "Deny", "Action": "s3tables:DeleteTable", "Resource": "*"})
    assert ids(deny, "identity", "KIT-IAM4") == []


def test_iam4_non_compliant() -> None:
    d = doc(
        {"Sid": "A", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": "*"},
        {"Sid": "B", "Effect": "Allow", "Action": "s3tables:GetTable", "NotResource": TABLES},
    )
    assert len(ids(d, "identity", "KIT-IAM4")) == 2
    key = doc({"Sid": "K", "Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"})
    assert len(ids(key, "identity", "KIT-IAM4")) == 1  # "*" outside a key policy is every key


# ---------------------------------------------------------------- KIT-IAM5 ScpSize ----


def _scp(n_resources: int) -> dict[str, Any]:
    resources = [f"arn:aws:s3tables:us-west-2:111122223333:bucket/replica-{i:03d}/table/*" for i in range(n_resources)]
    return doc({"Sid": "DenyDelete", "Effect": "Deny", "Action": "s3tables:DeleteTable", "Resource": resources})


def test_iam5_compliant() -> None:
    d = _scp(5)
    assert len(json.dumps(d, separators=(",", ":"))) <= 5120
    assert ids(d, "scp", "KIT-IAM5") == []


def test_iam5_non_compliant() -> None:
    d = _scp(90)
    assert "limit is 5120" in ids(d, "scp", "KIT-IAM5")[0]
    assert ids(d, "identity", "KIT-IAM5") == []  # only SCPs have that limit


def test_iam5_every_example_scp_fits_even_with_five_destinations() -> None:
    for path in EXAMPLES:
        for d in build_documents(load_config(path)):
            if d.kind == "scp":
                assert len(json.dumps(d.document, separators=(",", ":"))) <= 5120


def test_size_limits_hold_with_five_destinations_in_one_account() -> None:
    """The worst case for both limits: five replicas (KMS everywhere) share one account, so one guardrail and both
    SCPs name all five (the account's pipeline guardrail, with the kit's allow-lists, is attached beside it);
    every document passes KIT-IAM5 and KIT-IAM8."""
    from bench.synthscale import scale_config
    from s3tables_kit.topology.config import parse_config

    raw = scale_config(destinations=5, tables=10)
    regions = ["eu-central-1", "us-east-1", "eu-west-3", "eu-west-2", "eu-north-1"]
    for replica, region in zip(raw["replicas"], regions, strict=True):
        replica.update(
            account_id="222222222222",
            region=region,
            bucket=f"scale-replica-{region}",
            deploy_role_arn="arn:aws:iam::222222222222:role/terraform-deploy",
        )
    raw["protection"]["break_glass_principals"] = [
        "arn:aws:iam::222222222222:role/s3tables-break-glass",
        "arn:aws:iam::444444444444:role/replica-guardian-automation",
    ]
    raw["protection"]["organization"]["targets"] = ["111111111111", "222222222222"]
    docs = build_documents(parse_config(raw))
    guardrails = [d.name for d in docs if d.kind == "identity" and "guardrail" in d.name]
    assert guardrails == ["replica-guardrail--222222222222", "pipeline-guardrail--222222222222"]
    for d in docs:
        sizes = [lint.RULES_BY_ID["KIT-IAM5"], lint.RULES_BY_ID["KIT-IAM8"]]
        assert lint.lint_document(d.document, d.kind, d.name, sizes) == [], d.name


# ---------------------------------------------------------------- KIT-IAM6 UniqueSids ----


def test_iam6_compliant() -> None:
    d = doc(
        {"Sid": "ReadTables", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": TABLES},
        {"Sid": "WriteTables", "Effect": "Allow", "Action": "s3tables:PutTableData", "Resource": TABLES},
    )
    assert ids(d, "identity", "KIT-IAM6") == []


def test_iam6_non_compliant() -> None:
    d = doc(
        {"Sid": "ReadTables", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": TABLES},
        {"Sid": "ReadTables", "Effect": "Allow", "Action": "s3tables:GetTableData", "Resource": TABLES},
        {"Effect": "Allow", "Action": "s3tables:GetTableMetadataLocation", "Resource": TABLES},
        {"Sid": "read-tables", "Effect": "Allow", "Action": "s3tables:ListTables", "Resource": BUCKET},
    )
    problems = ids(d, "identity", "KIT-IAM6")
    assert len(problems) == 3
    assert any("used twice" in p for p in problems)
    assert any("no Sid" in p for p in problems)
    assert any("not alphanumeric" in p for p in problems)


# ---------------------------------------------------------------- KIT-IAM8 IdentityPolicySize ----


def _guardrail_like(n_buckets: int) -> dict[str, Any]:
    resources = [f"arn:aws:s3tables:us-west-2:111122223333:bucket/replica-{i:03d}/table/*" for i in range(n_buckets)]
    return doc({"Sid": "DenyDelete", "Effect": "Deny", "Action": "s3tables:DeleteTable", "Resource": resources})


def test_iam8_compliant() -> None:
    assert ids(_guardrail_like(60), "identity", "KIT-IAM8") == []


def test_iam8_non_compliant() -> None:
    d = _guardrail_like(100)
    assert "limit is 6144" in ids(d, "identity", "KIT-IAM8")[0]
    assert ids(d, "scp", "KIT-IAM8") == []  # SCPs have their own limit (KIT-IAM5)


# ---------------------------------------------------------------- KIT-IAM9 TablesResourcePolicySize ----


def _fan_in_grant(n_sources: int) -> dict[str, Any]:
    roles = [
        f"arn:aws:iam::{100000000000 + i:012d}:role/estate-s{i:03d}-s3tables-replication" for i in range(n_sources)
    ]
    grant = {"Sid": "AllowSourceReplicationRolesWriteReplicas", "Effect": "Allow", "Principal": {"AWS": roles},
             "Action": "s3tables:PutTableData", "Resource": TABLES}  # fmt: skip
    return doc(grant)


def test_iam9_compliant() -> None:
    d = _fan_in_grant(250)
    assert 15_000 < len(json.dumps(d, separators=(",", ":"))) <= 20480
    assert ids(d, "bucket-policy", "KIT-IAM9") == []


def test_iam9_non_compliant() -> None:
    d = _fan_in_grant(320)
    assert "limit is 20480" in ids(d, "bucket-policy", "KIT-IAM9")[0]
    assert "limit is 20480" in ids(d, "table-policy", "KIT-IAM9")[0]
    assert ids(d, "identity", "KIT-IAM9") == []  # identity policies have their own limit (KIT-IAM8)


# ---------------------------------------------------------------- KIT-IAM7 TrustPolicy ----


def _trust(principal: Any, condition: dict[str, Any] | None) -> dict[str, Any]:
    stmt: dict[str, Any] = {"Sid": "Trust", "Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}
    if condition is not None:
        stmt["Condition"] = condition
    return doc(stmt)


GOOD_CONDITION = {
    "ArnLike": {"aws:SourceArn": "arn:aws:s3tables:us-east-1:111122223333:bucket/src"},
    "StringEquals": {"aws:SourceAccount": "111122223333"},
}


def test_iam7_compliant() -> None:
    d = _trust({"Service": iam_actions.REPLICATION_SERVICE}, GOOD_CONDITION)
    assert ids(d, "trust", "KIT-IAM7") == []


@pytest.mark.parametrize(
    ("principal", "condition", "expect"),
    [
        ({"Service": "ec2.amazonaws.com"}, GOOD_CONDITION, "not one of"),
        ({"AWS": "arn:aws:iam::555555555555:root"}, GOOD_CONDITION, "only service principals"),
        ("*", GOOD_CONDITION, "must name service principals"),
        ({"Service": iam_actions.REPLICATION_SERVICE}, None, "no aws:SourceAccount"),
        (
            {"Service": iam_actions.REPLICATION_SERVICE},
            {"StringEquals": {"aws:SourceAccount": "111122223333"}},
            "no aws:SourceArn",
        ),
        (
            {"Service": iam_actions.REPLICATION_SERVICE},
            {"ArnLikeIfExists": {"aws:SourceArn": "arn:aws:s3tables:*"}, "StringEquals": {"aws:SourceAccount": "1"}},
            "passes when the key is absent",
        ),
    ],
)
def test_iam7_non_compliant(principal: Any, condition: dict[str, Any] | None, expect: str) -> None:
    problems = ids(_trust(principal, condition), "trust", "KIT-IAM7")
    assert any(expect in p for p in problems), problems


def test_iam7_only_applies_to_trust_policies() -> None:
    assert ids(_trust({"Service": "ec2.amazonaws.com"}, None), "identity", "KIT-IAM7") == []


# ---------------------------------------------------------------- the kit's documents ----


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_built_document_passes_every_rule(example: Path) -> None:
    findings = lint.lint_documents(build_documents(load_config(example)))
    assert findings == [], "\n".join(map(str, findings))


def test_every_rendered_document_passes_every_rule() -> None:
    from s3tables_kit.policies.render import RENDERED_DIR

    kinds = {}
    for path in EXAMPLES:
        for d in build_documents(load_config(path)):
            kinds[f"{path.stem}/{d.name}.json"] = d.kind
    for rel, kind in kinds.items():
        rendered = RENDERED_DIR / rel
        if rendered.is_file():
            assert lint.lint_document(json.loads(rendered.read_text()), kind, rel) == []


def test_unknown_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown document kind"):
        lint.lint_document(doc(), "bucket")


def test_cli_exit_code() -> None:
    assert lint.main([]) == 0


def test_every_rule_has_a_compliant_and_a_non_compliant_test() -> None:
    tests = {name for name, value in globals().items() if name.startswith("test_iam") and callable(value)}
    for rule in lint.RULES:
        n = rule.id.removeprefix("KIT-IAM")
        assert f"test_iam{n}_compliant" in tests, rule.title
        assert any(t.startswith(f"test_iam{n}_non_compliant") for t in tests), rule.title
