"""infra/nag: the KIT rules at synth time. Each rule has a compliant and a non-compliant tiny stack; suppressions
need a reason; a violation fails synth naming the rule and the construct path; the kit's own app passes."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"
TABLES = BUCKET + "/table/*"
TRUST_OK = {
    "ArnLike": {"aws:SourceArn": "arn:aws:s3tables:us-east-1:111122223333:bucket/src"},
    "StringEquals": {"aws:SourceAccount": "111122223333"},
}


@pytest.fixture(scope="session")
def aws() -> SimpleNamespace:
    """The provider bindings, imported once per session (~20 s)."""
    import cdktf_cdktf_provider_aws  # noqa: F401  (loads every submodule once)
    from cdktf_cdktf_provider_aws.iam_policy import IamPolicy
    from cdktf_cdktf_provider_aws.iam_role import IamRole
    from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
    from cdktf_cdktf_provider_aws.kms_key import KmsKey
    from cdktf_cdktf_provider_aws.organizations_policy import OrganizationsPolicy
    from cdktf_cdktf_provider_aws.provider import AwsProvider
    from cdktf_cdktf_provider_aws.s3_tables_table_bucket_policy import S3TablesTableBucketPolicy
    from cdktf_cdktf_provider_aws.s3_tables_table_policy import S3TablesTablePolicy

    return SimpleNamespace(
        IamPolicy=IamPolicy,
        IamRole=IamRole,
        IamRolePolicy=IamRolePolicy,
        KmsKey=KmsKey,
        OrganizationsPolicy=OrganizationsPolicy,
        AwsProvider=AwsProvider,
        S3TablesTableBucketPolicy=S3TablesTableBucketPolicy,
        S3TablesTablePolicy=S3TablesTablePolicy,
    )


def doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def synth(aws: SimpleNamespace, build: Callable[[Any], Any]) -> str:
    """Build a tiny stack, apply the nag rules, synthesise. Returns the synthesised JSON (raises on violations)."""
    from cdktf import TerraformStack, Testing

    from infra.nag import apply_nag

    stack = TerraformStack(Testing.app(), "t")
    aws.AwsProvider(stack, "aws", region="us-west-2")
    build(stack)
    apply_nag(stack)
    return Testing.synth(stack)  # type: ignore[no-any-return]


def fails(aws: SimpleNamespace, build: Callable[[Any], Any], rule: str, path: str) -> str:
    with pytest.raises(Exception) as info:  # the jsii callback surfaces NagError as a RuntimeError
        synth(aws, build)
    message = str(info.value)
    assert rule in message, message
    assert path in message, message
    return message


# ---------------------------------------------------------------- one compliant + one non-compliant per rule ----


def test_kit_iam1_actions_exist_compliant(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.IamPolicy(
            s,
            "p",
            name="p",
            policy=doc({"Sid": "Read", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": TABLES}),
        ),
    )


def test_kit_iam1_actions_exist_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.IamPolicy(
            s,
            "p",
            name="p",
            policy=doc({"Sid": "Read", "Effect": "Allow", "Action": "s3tables:GetTables", "Resource": TABLES}),
        ),
        "KIT-IAM1 ActionsExist",
        "t/p",
    )


def test_kit_iam2_resource_levels_compliant(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.S3TablesTableBucketPolicy(
            s,
            "bp",
            table_bucket_arn=BUCKET,
            resource_policy=doc(
                {
                    "Sid": "DenyDelete",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3tables:DeleteTable",
                    "Resource": TABLES,
                }
            ),
        ),
    )


def test_kit_iam2_resource_levels_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.S3TablesTableBucketPolicy(
            s,
            "bp",
            table_bucket_arn=BUCKET,
            resource_policy=doc(
                {
                    "Sid": "DenyDelete",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3tables:DeleteTable",
                    "Resource": BUCKET,
                }
            ),
        ),
        "KIT-IAM2 ResourceLevels",
        "t/bp",
    )


def test_kit_iam3_no_wildcard_actions_compliant(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.IamRolePolicy(
            s,
            "rp",
            role="r",
            policy=doc({"Sid": "Write", "Effect": "Allow", "Action": "s3tables:PutTableData", "Resource": TABLES}),
        ),
    )


def test_kit_iam3_no_wildcard_actions_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.IamRolePolicy(
            s,
            "rp",
            role="r",
            policy=doc({"Sid": "Write", "Effect": "Allow", "Action": "s3tables:*", "Resource": TABLES}),
        ),
        "KIT-IAM3 NoWildcardActions",
        "t/rp",
    )


def test_kit_iam4_no_wildcard_resources_compliant(aws: SimpleNamespace) -> None:
    # A KMS key policy's "*" is the key itself.
    synth(
        aws,
        lambda s: aws.KmsKey(
            s,
            "key",
            policy=doc(
                {
                    "Sid": "Use",
                    "Effect": "Allow",
                    "Principal": {"AWS": "arn:aws:iam::111122223333:role/r"},
                    "Action": "kms:Decrypt",
                    "Resource": "*",
                }
            ),
        ),
    )


def test_kit_iam4_no_wildcard_resources_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.IamPolicy(
            s,
            "p",
            name="p",
            policy=doc({"Sid": "Read", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": "*"}),
        ),
        "KIT-IAM4 NoWildcardResources",
        "t/p",
    )


def _scp_content(n: int) -> str:
    resources = [f"arn:aws:s3tables:us-west-2:111122223333:bucket/replica-{i:03d}/table/*" for i in range(n)]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "DenyDelete", "Effect": "Deny", "Action": "s3tables:DeleteTable", "Resource": resources}
            ],
        },
        separators=(",", ":"),
    )


def test_kit_iam5_scp_size_compliant(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.OrganizationsPolicy(s, "scp", name="scp", type="SERVICE_CONTROL_POLICY", content=_scp_content(5)),
    )


def test_kit_iam5_scp_size_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.OrganizationsPolicy(
            s, "scp", name="scp", type="SERVICE_CONTROL_POLICY", content=_scp_content(90)
        ),
        "KIT-IAM5 ScpSize",
        "t/scp",
    )


def _identity_content(n_buckets: int) -> str:
    resources = [f"arn:aws:s3tables:us-west-2:111122223333:bucket/replica-{i:03d}/table/*" for i in range(n_buckets)]
    return doc({"Sid": "DenyDelete", "Effect": "Deny", "Action": "s3tables:DeleteTable", "Resource": resources})


def test_kit_iam8_identity_policy_size_compliant(aws: SimpleNamespace) -> None:
    synth(aws, lambda s: aws.IamPolicy(s, "guardrail", name="guardrail", policy=_identity_content(5)))


def test_kit_iam8_identity_policy_size_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.IamPolicy(s, "guardrail", name="guardrail", policy=_identity_content(100)),
        "KIT-IAM8 IdentityPolicySize",
        "t/guardrail",
    )


def test_kit_iam6_unique_sids_compliant(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.S3TablesTablePolicy(
            s,
            "tp",
            table_bucket_arn=BUCKET,
            namespace="ns",
            name="t",
            resource_policy=doc(
                {
                    "Sid": "DenyDelete",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3tables:DeleteTable",
                    "Resource": TABLES,
                },
                {
                    "Sid": "DenyRename",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3tables:RenameTable",
                    "Resource": TABLES,
                },
            ),
        ),
    )


def test_kit_iam6_unique_sids_non_compliant(aws: SimpleNamespace) -> None:
    fails(
        aws,
        lambda s: aws.S3TablesTablePolicy(
            s,
            "tp",
            table_bucket_arn=BUCKET,
            namespace="ns",
            name="t",
            resource_policy=doc(
                {
                    "Sid": "DenyDelete",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3tables:DeleteTable",
                    "Resource": TABLES,
                },
                {
                    "Sid": "DenyDelete",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3tables:RenameTable",
                    "Resource": TABLES,
                },
            ),
        ),
        "KIT-IAM6 UniqueSids",
        "t/tp",
    )


def test_kit_iam7_trust_policy_compliant(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.IamRole(
            s,
            "role",
            name="r",
            assume_role_policy=doc(
                {
                    "Sid": "Trust",
                    "Effect": "Allow",
                    "Principal": {"Service": "replication.s3tables.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                    "Condition": TRUST_OK,
                }
            ),
        ),
    )


def test_kit_iam7_trust_policy_non_compliant(aws: SimpleNamespace) -> None:
    message = fails(
        aws,
        lambda s: aws.IamRole(
            s,
            "role",
            name="r",
            assume_role_policy=doc(
                {
                    "Sid": "Trust",
                    "Effect": "Allow",
                    "Principal": {"Service": "replication.s3tables.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ),
        ),
        "KIT-IAM7 TrustPolicy",
        "t/role",
    )
    assert "aws:SourceAccount" in message and "aws:SourceArn" in message


# ---------------------------------------------------------------- aspect behaviour ----


def _bad_policy(aws: SimpleNamespace, scope: Any, cid: str = "p") -> Any:
    return aws.IamPolicy(
        scope,
        cid,
        name=cid,
        policy=doc({"Sid": "Read", "Effect": "Allow", "Action": "s3tables:GetTable", "Resource": "*"}),
    )


def test_violation_names_rule_construct_path_and_attribute(aws: SimpleNamespace) -> None:
    from constructs import Construct

    def build(s: Any) -> None:
        _bad_policy(aws, Construct(s, "guardrail"), "policy")

    message = fails(aws, build, "KIT-IAM4 NoWildcardResources", "t/guardrail/policy")
    assert "(policy)" in message and 'Allow on Resource "*"' in message


def test_suppression_with_reason_passes_and_is_recorded(aws: SimpleNamespace) -> None:
    from infra.nag import suppress, suppressions_of

    made: list[Any] = []

    def build(s: Any) -> None:
        p = _bad_policy(aws, s)
        suppress(p, "KIT-IAM4", "ListTableBuckets has no resource-level permissions")
        made.append(p)

    out = synth(aws, build)
    assert '"aws_iam_policy"' in out
    assert [(x.rule_id, x.reason) for x in suppressions_of(made[0])] == [
        ("KIT-IAM4", "ListTableBuckets has no resource-level permissions")
    ]


def test_suppression_on_a_parent_scope_applies_below_it(aws: SimpleNamespace) -> None:
    from constructs import Construct

    from infra.nag import suppress

    def build(s: Any) -> None:
        group = Construct(s, "legacy")
        suppress(group, "KIT-IAM4", "imported legacy policies, tracked in issue 12")
        _bad_policy(aws, group)

    synth(aws, build)


def test_suppression_of_one_rule_keeps_the_others(aws: SimpleNamespace) -> None:
    from infra.nag import suppress

    def build(s: Any) -> None:
        p = aws.IamPolicy(
            s, "p", name="p", policy=doc({"Sid": "Read", "Effect": "Allow", "Action": "s3tables:*", "Resource": "*"})
        )
        suppress(p, "KIT-IAM4", "reason")

    message = fails(aws, build, "KIT-IAM3 NoWildcardActions", "t/p")
    assert "KIT-IAM4" not in message


@pytest.mark.parametrize("reason", ["", "   "])
def test_suppression_without_reason_is_an_error(aws: SimpleNamespace, reason: str) -> None:
    from cdktf import TerraformStack, Testing

    from infra.nag import suppress

    stack = TerraformStack(Testing.app(), "t")
    with pytest.raises(ValueError, match="needs a written reason"):
        suppress(stack, "KIT-IAM4", reason)
    with pytest.raises(ValueError, match="unknown nag rule"):
        suppress(stack, "KIT-IAM99", "reason")


def test_non_scp_organizations_policies_are_not_iam_documents(aws: SimpleNamespace) -> None:
    synth(
        aws,
        lambda s: aws.OrganizationsPolicy(
            s, "tags", name="tags", type="TAG_POLICY", content=json.dumps({"tags": {"team": {}}})
        ),
    )


def test_unparseable_policy_fails(aws: SimpleNamespace) -> None:
    fails(aws, lambda s: aws.IamPolicy(s, "p", name="p", policy="{not json"), "KIT-IAM0 PolicyIsJson", "t/p")


def test_one_rule_per_file() -> None:
    from infra.nag import ALL_RULES

    files = sorted(p.stem for p in (ROOT / "infra" / "nag" / "rules").glob("kit_iam*.py"))
    assert len(files) == len(ALL_RULES) == 8
    assert [r.id for r in ALL_RULES] == [f"KIT-IAM{i}" for i in range(1, 9)]


@pytest.mark.parametrize("example", ["seed", "multi-account"])
def test_the_kit_app_passes_every_rule(aws: SimpleNamespace, example: str) -> None:
    from infra.app import build_app
    from infra.nag import apply_nag
    from topology.config import load_config

    with tempfile.TemporaryDirectory() as out:
        app = build_app(load_config(ROOT / "examples" / f"{example}.toml"), outdir=out)
        aspect = apply_nag(app, fail=False)
        app.synth()
    assert aspect.violations == []
    kinds = {c.rsplit(".", 1)[1] for c in aspect.checked}
    assert {"assume_role_policy", "policy", "resource_policy", "content"} <= kinds, aspect.checked
