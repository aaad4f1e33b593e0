"""infra/nag: the KIT rules at synth time. Each rule has a compliant and a non-compliant tiny stack; suppressions
need a reason; a violation fails synth naming the rule and the construct path; the kit's own app passes."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
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

    classes = (
        IamPolicy,
        IamRole,
        IamRolePolicy,
        KmsKey,
        OrganizationsPolicy,
        AwsProvider,
        S3TablesTableBucketPolicy,
        S3TablesTablePolicy,
    )
    return SimpleNamespace(**{c.__name__: c for c in classes})


def doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def synth(aws: SimpleNamespace, build: Callable[[Any], Any]) -> str:
    """Build a tiny stack, apply the nag rules, synthesise. Returns the synthesised JSON (raises on violations)."""
    from cdktf import TerraformStack, Testing

    from s3tables_kit.infra.nag import apply_nag

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


def _statement(sid: str, action: str, resource: Any = TABLES, effect: str = "Allow", **extra: Any) -> dict[str, Any]:
    return {"Sid": sid, "Effect": effect, "Action": action, "Resource": resource, **extra}


def _deny_all(sid: str, action: str, resource: Any = TABLES) -> dict[str, Any]:
    return _statement(sid, action, resource, effect="Deny", Principal="*")


def _replicas(n: int) -> list[str]:
    return [f"arn:aws:s3tables:us-west-2:111122223333:bucket/replica-{i:03d}/table/*" for i in range(n)]


def _scp_content(n: int) -> str:
    statement = {"Sid": "DenyDelete", "Effect": "Deny", "Action": "s3tables:DeleteTable", "Resource": _replicas(n)}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, separators=(",", ":"))


def _trust(**condition: Any) -> str:
    principal = {"Service": "replication.s3tables.amazonaws.com"}
    return doc({"Sid": "Trust", "Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole", **condition})


# Each construct type that carries a policy: (construct id, build(aws, stack, policy JSON)).
Builder = Callable[[SimpleNamespace, Any, str], Any]
IAM_POLICY: Builder = lambda aws, s, p: aws.IamPolicy(s, "p", name="p", policy=p)  # noqa: E731
ROLE_POLICY: Builder = lambda aws, s, p: aws.IamRolePolicy(s, "p", role="r", policy=p)  # noqa: E731
BUCKET_POLICY: Builder = lambda aws, s, p: aws.S3TablesTableBucketPolicy(  # noqa: E731
    s, "p", table_bucket_arn=BUCKET, resource_policy=p
)
TABLE_POLICY: Builder = lambda aws, s, p: aws.S3TablesTablePolicy(  # noqa: E731
    s, "p", table_bucket_arn=BUCKET, namespace="ns", name="t", resource_policy=p
)
KMS_KEY: Builder = lambda aws, s, p: aws.KmsKey(s, "p", policy=p)  # noqa: E731
SCP: Builder = lambda aws, s, p: aws.OrganizationsPolicy(  # noqa: E731
    s, "p", name="scp", type="SERVICE_CONTROL_POLICY", content=p
)
ROLE: Builder = lambda aws, s, p: aws.IamRole(s, "p", name="r", assume_role_policy=p)  # noqa: E731


@dataclass(frozen=True)
class RuleCase:
    """A rule's compliant and non-compliant policy on the construct type it is typical of; `compliant_on` when the
    compliant one passes only on another construct type (KIT-IAM4: Resource "*" is the key itself in a key policy)."""

    build: Builder
    compliant: str
    non_compliant: str
    compliant_on: Builder | None = None
    message: tuple[str, ...] = ()  # what the failure message must also say


RULE_CASES: dict[str, RuleCase] = {
    "KIT-IAM1": RuleCase(
        IAM_POLICY, doc(_statement("Read", "s3tables:GetTable")), doc(_statement("Read", "s3tables:GetTables"))
    ),
    "KIT-IAM2": RuleCase(
        BUCKET_POLICY,
        doc(_deny_all("DenyDelete", "s3tables:DeleteTable")),
        doc(_deny_all("DenyDelete", "s3tables:DeleteTable", BUCKET)),
    ),
    "KIT-IAM3": RuleCase(
        ROLE_POLICY, doc(_statement("Write", "s3tables:PutTableData")), doc(_statement("Write", "s3tables:*"))
    ),
    "KIT-IAM4": RuleCase(
        IAM_POLICY,
        doc(_statement("Use", "kms:Decrypt", "*", Principal={"AWS": "arn:aws:iam::111122223333:role/r"})),
        doc(_statement("Read", "s3tables:GetTable", "*")),
        compliant_on=KMS_KEY,
    ),
    "KIT-IAM5": RuleCase(SCP, _scp_content(5), _scp_content(90)),
    "KIT-IAM6": RuleCase(
        TABLE_POLICY,
        doc(_deny_all("DenyDelete", "s3tables:DeleteTable"), _deny_all("DenyRename", "s3tables:RenameTable")),
        doc(_deny_all("DenyDelete", "s3tables:DeleteTable"), _deny_all("DenyDelete", "s3tables:RenameTable")),
    ),
    "KIT-IAM7": RuleCase(ROLE, _trust(Condition=TRUST_OK), _trust(), message=("aws:SourceAccount", "aws:SourceArn")),
    "KIT-IAM8": RuleCase(
        IAM_POLICY,
        doc(_statement("DenyDelete", "s3tables:DeleteTable", _replicas(5), effect="Deny")),
        doc(_statement("DenyDelete", "s3tables:DeleteTable", _replicas(100), effect="Deny")),
    ),
    "KIT-IAM9": RuleCase(
        BUCKET_POLICY,
        doc(_statement("DenyDelete", "s3tables:DeleteTable", _replicas(5), effect="Deny", Principal="*")),
        doc(_statement("DenyDelete", "s3tables:DeleteTable", _replicas(400), effect="Deny", Principal="*")),
    ),
}


def test_every_rule_has_a_compliant_and_a_non_compliant_case() -> None:
    from s3tables_kit.infra.nag import ALL_RULES

    assert sorted(RULE_CASES) == sorted(r.id for r in ALL_RULES)


@pytest.mark.parametrize("rule_id", sorted(RULE_CASES))
def test_rule_compliant(aws: SimpleNamespace, rule_id: str) -> None:
    case = RULE_CASES[rule_id]
    build = case.compliant_on or case.build
    out = synth(aws, lambda s: build(aws, s, case.compliant))
    assert '"p"' in out  # the construct was synthesised


@pytest.mark.parametrize("rule_id", sorted(RULE_CASES))
def test_rule_non_compliant(aws: SimpleNamespace, rule_id: str) -> None:
    from s3tables_kit.infra.nag import ALL_RULES

    case = RULE_CASES[rule_id]
    rule = next(r for r in ALL_RULES if r.id == rule_id)
    message = fails(aws, lambda s: case.build(aws, s, case.non_compliant), rule.title, "t/p")
    for text in case.message:
        assert text in message, message


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
    # What the synth entry point prints instead of jsii's traceback: one line per violation.
    from s3tables_kit.infra.nag import nag_refusals

    (line,) = nag_refusals(RuntimeError(message))
    assert line.startswith("[KIT-IAM4 NoWildcardResources] t/guardrail/policy (policy): ") and "\n" not in line
    assert nag_refusals(RuntimeError("another failure")) == []


def test_suppression_with_reason_passes_and_is_recorded(aws: SimpleNamespace) -> None:
    from s3tables_kit.infra.nag import suppress, suppressions_of

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

    from s3tables_kit.infra.nag import suppress

    def build(s: Any) -> None:
        group = Construct(s, "legacy")
        suppress(group, "KIT-IAM4", "imported legacy policies, reviewed separately")
        _bad_policy(aws, group)

    synth(aws, build)


def test_suppression_of_one_rule_keeps_the_others(aws: SimpleNamespace) -> None:
    from s3tables_kit.infra.nag import suppress

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

    from s3tables_kit.infra.nag import suppress

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


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate"])
def test_the_kit_app_passes_every_rule(aws: SimpleNamespace, example: str) -> None:
    from s3tables_kit.infra.app import build_app
    from s3tables_kit.infra.nag import apply_nag
    from s3tables_kit.topology.config import load_config

    with tempfile.TemporaryDirectory() as out:
        app = build_app(load_config(ROOT / "examples" / f"{example}.toml"), outdir=out)
        aspect = apply_nag(app, fail=False)
        app.synth()
    assert aspect.violations == []
    kinds = {c.rsplit(".", 1)[1] for c in aspect.checked}
    assert {"assume_role_policy", "policy", "resource_policy", "content"} <= kinds, aspect.checked
