"""A CDKTF Aspect in cdk-nag's shape: visits every construct that carries policy JSON, runs the KIT rules on it,
and fails synth with the rule and the construct path. Suppressions need a written reason.

    from s3tables_kit.infra.nag import apply_nag, suppress
    apply_nag(app)                                   # before app.synth()
    suppress(construct, "KIT-IAM4", "why this is acceptable")

Constructs are recognised by their Terraform resource type, so this module never imports the provider bindings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import jsii
from cdktf import Annotations, Aspects, IAspect, TerraformResource, TerraformStack, Token
from constructs import IConstruct

from s3tables_kit.infra.policy_json import policy_from_json
from s3tables_kit.policies.lint import RULES, Finding, Rule

NagRule = Rule  # the one rule shape (policies/lint.py); the aspect runs the very same rule objects
ALL_RULES: tuple[NagRule, ...] = RULES

SUPPRESSIONS_METADATA = "kit-nag/suppressions"

# Terraform resource type -> [(Python attribute, document kind)]
POLICY_ATTRIBUTES: dict[str, list[tuple[str, str]]] = {
    "aws_iam_role": [("assume_role_policy", "trust")],
    "aws_iam_policy": [("policy", "identity")],
    "aws_iam_role_policy": [("policy", "identity")],
    "aws_s3tables_table_bucket_policy": [("resource_policy", "bucket-policy")],
    "aws_s3tables_table_policy": [("resource_policy", "table-policy")],
    "aws_organizations_policy": [("content", "scp")],
    "aws_kms_key": [("policy", "kms-key-policy")],
    "aws_s3_bucket_policy": [("policy", "s3-bucket-policy")],
}
SCP_TYPE = "SERVICE_CONTROL_POLICY"
RCP_TYPE = "RESOURCE_CONTROL_POLICY"


NAG_FAILED = "KIT nag rules failed:"


class NagError(Exception):
    """A KIT rule failed at synth time."""


def nag_refusals(err: BaseException) -> list[str]:
    """The violations a failed synth reports, one line each, when `err` is a `NagError` (raised by the aspect, it
    reaches the caller through jsii as a RuntimeError holding its message); empty for any other error."""
    text = str(err)
    if NAG_FAILED not in text:
        return []
    lines = text.split(NAG_FAILED, 1)[1].splitlines()[1:]
    out = []
    for line in lines:
        if not line.startswith("  [KIT-"):
            break
        out.append(line.strip())
    return out


# A finding of a rule on a construct: its document is "<construct path> (<attribute>)".
Violation = Finding


def _violation(rule: NagRule, path: str, attribute: str, message: str) -> Violation:
    return Violation(rule.id, rule.name, f"{path} ({attribute})", message)


@dataclass(frozen=True)
class Suppression:
    rule_id: str
    reason: str


def suppress(construct: IConstruct, rule_id: str, reason: str) -> None:
    """Suppress one rule on a construct and everything below it. The reason is stored in the construct's metadata
    (it shows in the synthesised manifest) and must say why the finding is acceptable."""
    known = {r.id for r in ALL_RULES}
    if rule_id not in known:
        raise ValueError(f"unknown nag rule {rule_id!r}; expected one of {sorted(known)}")
    if not reason or not reason.strip():
        raise ValueError(f"suppressing {rule_id} on {construct.node.path} needs a written reason")
    construct.node.add_metadata(SUPPRESSIONS_METADATA, {"id": rule_id, "reason": reason.strip()})


def suppressions_of(construct: IConstruct) -> list[Suppression]:
    """Suppressions on the construct and on every scope above it."""
    out = []
    for scope in construct.node.scopes:
        for entry in scope.node.metadata:
            if entry.type == SUPPRESSIONS_METADATA:
                data = entry.data
                out.append(Suppression(str(data["id"]), str(data["reason"])))
    return out


def policy_documents(node: IConstruct) -> list[tuple[str, str, Any]]:
    """[(attribute, kind, value)] for a construct that carries policy JSON; empty for anything else."""
    if not isinstance(node, TerraformResource):
        return []
    specs = POLICY_ATTRIBUTES.get(node.terraform_resource_type, [])
    out = []
    for attribute, kind in specs:
        if node.terraform_resource_type == "aws_organizations_policy":
            ptype = getattr(node, "type_input", None)
            if ptype == RCP_TYPE:
                kind = "rcp"
            elif ptype not in (None, SCP_TYPE):
                continue  # tag/backup/AI policies are not IAM documents
        # `<attr>_input` is what the construct was given; `<attr>` itself is a reference token to the attribute.
        value = getattr(node, f"{attribute}_input", None)
        if value is not None:
            out.append((attribute, kind, value))
    return out


def check_construct(node: IConstruct, rules: Sequence[NagRule] = ALL_RULES) -> list[Violation]:
    violations = []
    path = node.node.path
    suppressed = {s.rule_id for s in suppressions_of(node)}
    for attribute, kind, value in policy_documents(node):
        if not isinstance(value, str) or (Token.is_unresolved(value) and not value.lstrip().startswith("{")):
            violations.append(
                _violation(_PARSE_RULE, path, attribute, "policy is not literal JSON (build it with policies/)")
            )
            continue
        try:
            document = policy_from_json(value)
        except json.JSONDecodeError as exc:
            violations.append(_violation(_PARSE_RULE, path, attribute, f"policy is not valid JSON: {exc}"))
            continue
        for rule in rules:
            if rule.id in suppressed:
                continue
            for message in rule.check(document, kind):
                violations.append(_violation(rule, path, attribute, message))
    return [v for v in violations if v.rule_id not in suppressed]


_PARSE_RULE = NagRule(  # synth-only: a construct attribute that is not literal JSON (no document to give RULES)
    id="KIT-IAM0",
    name="PolicyIsJson",
    explanation="Policy attributes hold literal JSON built by policies/ so the rules (and reviewers) can read them.",
    check=lambda document, kind: [],
)


@jsii.implements(IAspect)
class KitNagAspect:
    """Runs every KIT rule on every policy-carrying construct; the first construct with violations fails synth
    with all of its violations (rule id, rule name, construct path, attribute)."""

    def __init__(self, rules: Iterable[NagRule] = ALL_RULES, *, fail: bool = True) -> None:
        self.rules = tuple(rules)
        self.fail = fail
        self.violations: list[Violation] = []
        self.checked: list[str] = []  # "<construct path>.<attribute>" of every policy document checked

    def visit(self, node: IConstruct) -> None:
        self.checked += [f"{node.node.path}.{attribute}" for attribute, _kind, _value in policy_documents(node)]
        found = check_construct(node, self.rules)
        if not found:
            return
        self.violations += found
        for v in found:
            Annotations.of(node).add_error(str(v))
        if self.fail:
            raise NagError(f"{NAG_FAILED}\n" + "\n".join(f"  {v}" for v in found))


def apply_nag(scope: IConstruct, *, rules: Iterable[NagRule] = ALL_RULES, fail: bool = True) -> KitNagAspect:
    """Register the KIT rules on a Stack, or on every stack of an App; they run during synth.

    CDKTF invokes aspects per stack and does not inherit aspects added to the App, so for an App the aspect is
    added to each stack it holds now: call this after the stacks are built, before `app.synth()`."""
    aspect = KitNagAspect(rules, fail=fail)
    if isinstance(scope, TerraformStack):
        targets: list[IConstruct] = [scope]
    else:
        targets = [c for c in scope.node.find_all() if isinstance(c, TerraformStack)]
        if not targets:
            raise ValueError(
                f"apply_nag: {scope.node.path or 'the app'} holds no TerraformStack yet; build the stacks first"
            )
    for target in targets:
        Aspects.of(target).add(aspect)
    return aspect
