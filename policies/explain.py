"""Why was I denied: evaluate the kit's documents that apply to one request and say which layer and Sid decide it.

    python -m s3tables_kit.policies.explain --config kit.toml --principal <role ARN> --action <service>:<Action> \\
        --resource <table bucket, table, KMS key or role ARN> [--context key=value ...] [--json]

The documents come from `s3tables_kit.policies.docset.build(cfg)`, the set that is rendered and deployed; the ones that
apply are picked for the request: the SCPs for principals of the accounts the configuration places under their targets,
the IAM guardrail for the roles the kit attaches it to (`--guardrail` for a role it was attached to by hand), the kit's
own role policies for the kit's roles, the bucket and table policy of a replica or source, the key policy of a kit
key, and for assuming a role its trust policy and the resource control policies (`s3tables_kit.policies.explain_roles`).
The IAM evaluator (`s3tables_kit.policies.simulate`, the npm simulator of the policy proofs; `make setup`) decides, and
the answer names the decision, the layer and Sid that decide it (every matching Deny, the first named: SCP, then
identity, then resource policies) or the Allow statements that grant it, and for a protected action the
break-glass path: who may, verified in the same evaluation, and the runbook section that says how.

What the kit cannot see is assumed and said so: a principal that is not one of the kit's roles is taken to hold an
identity grant of the action (its own policies are not the kit's; `--identity-policy FILE` evaluates them instead),
every SCP level holds FullAWSAccess, and AWS authorises its own service principals.

Exit codes: 0 the request is allowed; 1 it is denied (explicitly or implicitly); 2 refused input (an action outside
the kit's catalogue, a malformed ARN, an unreadable configuration, no simulator), one line saying why.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import explain_roles, simulate
from s3tables_kit.policies.break_glass_runbook import break_glass_how
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.documents import TABLE_ID_PLACEHOLDER, guardrail_attachments
from s3tables_kit.policies.estate import BUCKET_TAG_KEY_PREFIX
from s3tables_kit.policies.lint import build_within_quotas
from s3tables_kit.policies.model import Document, PolicyDoc, kms_alias
from s3tables_kit.policies.parts import part_of
from s3tables_kit.policies.simulate import ScpLevel, SimRequest, SimResult
from s3tables_kit.topology.config import ConfigError, KitConfig, load_config

EXIT_ALLOWED, EXIT_DENIED, EXIT_REFUSED = 0, 1, 2

ALLOWED, EXPLICIT, IMPLICIT = "allowed", "explicitly denied", "implicitly denied"
DECISIONS = {simulate.ALLOWED: ALLOWED, simulate.EXPLICIT_DENY: EXPLICIT, simulate.IMPLICIT_DENY: IMPLICIT}

# Stand-ins for what the kit cannot see, named so that no rendered document can share the name.
ASSUMED_GRANT = "assumed:identity-grant"
FULL_AWS_ACCESS = "assumed:FullAWSAccess"
SERVICE_GRANT = "assumed:aws-authorises-its-service"

KMS_ACTIONS = frozenset({*iam_actions.KMS_BREAK_GLASS, "Encrypt", "GenerateDataKey", "TagResource", "UntagResource"})
KMS_PROTECTED = frozenset(a.removeprefix("kms:") for a in iam_actions.KMS_KEY_DESTRUCTION)

_PARTITION = r"aws(?:-cn|-us-gov)?"
TABLE_RESOURCE_RE = re.compile(
    rf"^arn:{_PARTITION}:s3tables:[a-z0-9-]+:(\d{{12}}):bucket/([a-z0-9][a-z0-9-]{{1,61}}[a-z0-9])(/table/[\w-]+)?$"
)
KEY_RESOURCE_RE = re.compile(rf"^arn:{_PARTITION}:kms:[a-z0-9-]+:(\d{{12}}):key/[\w-]+$")
PRINCIPAL_RE = re.compile(rf"^arn:({_PARTITION}):(iam|sts)::(\d{{12}}):(role|user|assumed-role)/([\w+=,.@/-]+)$")
SERVICE_PRINCIPAL_RE = re.compile(r"^[a-z0-9.-]+\.amazonaws\.com$")
RESOURCE_FORMS: dict[str, tuple[frozenset[str], re.Pattern[str], str]] = {  # the actions of a service, its resource
    "s3tables": (frozenset(iam_actions.BUCKET_LEVEL | iam_actions.TABLE_LEVEL | iam_actions.TABLE_OR_BUCKET_LEVEL),
                 TABLE_RESOURCE_RE,
                 "arn:aws:s3tables:<region>:<account>:bucket/<name>[/table/<id>]"),
    "kms": (KMS_ACTIONS, KEY_RESOURCE_RE, "arn:aws:kms:<region>:<account>:key/<id>"),
    "sts": (explain_roles.STS_ACTIONS, explain_roles.ROLE_RESOURCE_RE, "arn:aws:iam::<account>:role/<name>"),
}  # fmt: skip


class RefusedInput(ValueError):
    """The request cannot be explained as given (exit 2, one line)."""


@dataclass(frozen=True)
class Layer:
    """One document evaluated for the request: its layer, its rendered name and what it is attached to."""

    layer: str  # SCP | IAM guardrail | identity policy | table bucket policy | table policy | KMS key policy
    document: str  # rendered name under policies/rendered/<example>/, or an `assumed:` stand-in
    attached_to: str
    policy: Document
    position: str  # where the simulator evaluates it: scp | identity | resource


@dataclass(frozen=True)
class StatementRef:
    layer: str
    document: str
    sid: str

    def to_json(self) -> dict[str, str]:
        return {"layer": self.layer, "document": self.document, "sid": self.sid}


@dataclass(frozen=True)
class ExplainRequest:
    principal: str  # role or user ARN (an assumed-role session is evaluated as its role), or a service principal
    action: str
    resource: str
    resource_account: str
    context: tuple[tuple[str, str | tuple[str, ...]], ...] = ()

    @property
    def service(self) -> bool:
        return simulate.is_service_principal(self.principal)

    @property
    def principal_account(self) -> str | None:
        return None if self.service else self.principal.split(":")[4]

    @property
    def short_action(self) -> str:
        return self.action.split(":", 1)[1]


@dataclass(frozen=True)
class Applicable:
    layers: tuple[Layer, ...]
    scp_levels: tuple[ScpLevel, ...]
    assumptions: tuple[str, ...]
    rcp_levels: tuple[ScpLevel, ...] = ()


@dataclass(frozen=True)
class BreakGlassPath:
    rules: tuple[str, ...]  # the protection rules naming the action
    principals: tuple[tuple[str, bool], ...]  # (break-glass principal, allowed by the same documents)
    how: tuple[tuple[str, str], ...]  # (runbook section, what to do)
    also_exempt: tuple[str, ...] = ()  # who else the rules exempt, and where

    def to_json(self) -> dict[str, object]:
        return {
            "rules": list(self.rules),
            "principals": [{"principal": p, "allowed": ok} for p, ok in self.principals],
            "also_exempt": list(self.also_exempt),
            "runbook": [{"section": s, "how": h} for s, h in self.how],
        }


@dataclass(frozen=True)
class Explanation:
    request: ExplainRequest
    decision: str
    deciding: StatementRef | None
    denies: tuple[StatementRef, ...]
    allows: tuple[StatementRef, ...]
    missing_allow: tuple[str, ...]  # layers that granted nothing (an implicit deny)
    layers: tuple[Layer, ...]
    assumptions: tuple[str, ...]
    break_glass: BreakGlassPath | None

    @property
    def exit_code(self) -> int:
        return EXIT_ALLOWED if self.decision == ALLOWED else EXIT_DENIED

    def to_json(self) -> dict[str, object]:
        return {
            "request": {
                "principal": self.request.principal,
                "action": self.request.action,
                "resource": self.request.resource,
                "resource_account": self.request.resource_account,
                "context": {k: list(v) if isinstance(v, tuple) else v for k, v in self.request.context},
            },
            "decision": self.decision,
            "deciding": self.deciding.to_json() if self.deciding else None,
            "denies": [d.to_json() for d in self.denies],
            "allows": [a.to_json() for a in self.allows],
            "missing_allow": list(self.missing_allow),
            "documents": [
                {"layer": x.layer, "document": x.document, "attached_to": x.attached_to} for x in self.layers
            ],
            "assumptions": list(self.assumptions),
            "break_glass": self.break_glass.to_json() if self.break_glass else None,
            "exit_code": self.exit_code,
        }


# ---------------------------------------------------------------- input ----


def parse_context(pairs: Sequence[str]) -> tuple[tuple[str, str | tuple[str, ...]], ...]:
    """`key=value` pairs; a key given twice carries a list (`kms:ResourceAliases`, `aws:TagKeys`)."""
    out: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RefusedInput(f"--context {pair!r}: expected key=value")
        out.setdefault(key, []).append(value)
    return tuple((k, v[0] if len(v) == 1 else tuple(v)) for k, v in out.items())


def parse_request(principal: str, action: str, resource: str, context: Sequence[str]) -> ExplainRequest:
    """The request, refused when the action is outside the kit's catalogue, an ARN is malformed, or the action is
    not authorised on that kind of resource."""
    service, _, name = action.partition(":")
    if service not in RESOURCE_FORMS:
        raise RefusedInput(f"--action {action!r}: expected s3tables:<Action>, kms:<Action> or sts:AssumeRole*")
    catalogue, pattern, form = RESOURCE_FORMS[service]
    if name not in catalogue:
        raise RefusedInput(f"--action {action!r} is not in the kit's action catalogue (policies/actions.py)")
    m = pattern.match(resource)
    if not m:
        raise RefusedInput(f"--resource {resource!r}: expected {form}")
    if name in iam_actions.TABLE_LEVEL and service == "s3tables" and m.group(3) is None:
        raise RefusedInput(f"{action} is authorised on a table: pass its ARN (…/bucket/<name>/table/<id>)")
    if name in iam_actions.BUCKET_LEVEL and service == "s3tables" and m.group(3) is not None:
        raise RefusedInput(f"{action} is authorised on a table bucket: pass its ARN (…/bucket/<name>)")
    return ExplainRequest(_principal(principal), action, resource, m.group(1), parse_context(context))


def _principal(arn: str) -> str:
    if SERVICE_PRINCIPAL_RE.match(arn):
        return arn
    m = PRINCIPAL_RE.match(arn)
    if not m or (m.group(2) == "sts") != (m.group(4) == "assumed-role"):
        raise RefusedInput(f"--principal {arn!r}: expected an IAM role or user ARN, or a service principal")
    if m.group(4) == "assumed-role":  # aws:PrincipalArn of a role session is its role's ARN
        return f"arn:{m.group(1)}:iam::{m.group(3)}:role/{m.group(5).split('/')[0]}"
    return arn


# ---------------------------------------------------------------- which documents apply ----


def deployed(ds: DocumentSet) -> dict[str, PolicyDoc]:
    """{the name the stacks look a document up by: the document deployed under it}; in the failover topology a
    replaced name resolves to its reviewed candidate, whose rendered name the answer shows."""
    by_name = {d.name: d for d in ds.all()}
    swap = dict(ds.deploys)
    out = {d.name: by_name[swap.get(d.name, d.name)] for d in ds.docs}
    for name, candidate in ds.deploys:
        out.setdefault(name, by_name[candidate])
    return out


def _layer(d: PolicyDoc, policy: Document | None = None) -> Layer:
    kinds = {
        "scp": ("SCP", "scp"),
        "bucket-policy": ("table bucket policy", "resource"),
        "table-policy": ("table policy", "resource"),
        "kms-key-policy": ("KMS key policy", "resource"),
        "trust": ("trust policy", "resource"),
        "rcp": ("RCP", "rcp"),
    }
    label, position = kinds.get(d.kind, ("identity policy", "identity"))
    if d.kind == "identity" and d.attached_to.startswith("IAM managed policy"):
        label = "IAM guardrail"
    return Layer(label, d.name, d.attached_to, d.document if policy is None else policy, position)


def _for_table(policy: Document, bucket_arn: str, table_arn: str) -> Document:
    placeholder = f"{bucket_arn}/table/{TABLE_ID_PLACEHOLDER}"
    text = json.dumps(policy).replace(json.dumps(placeholder)[1:-1], json.dumps(table_arn)[1:-1])
    bound: Document = json.loads(text)
    return bound


def _table_policy(cfg: KitConfig, docs: dict[str, PolicyDoc], ds: DocumentSet, bucket: str) -> PolicyDoc | None:
    promoted = cfg.kind.promoted_bucket
    by_name = {d.name: d for d in ds.all()}
    for name in (
        f"failover--{bucket}--table-policy" if promoted == bucket else "",
        f"failover--{promoted}--replica-table-policy--{bucket}" if promoted else "",
    ):
        if name in by_name:
            return by_name[name]
    return docs.get(f"replica-table-policy--{bucket}")


def resource_layers(cfg: KitConfig, ds: DocumentSet, req: ExplainRequest) -> tuple[list[Layer], list[str]]:
    """The resource policies of the request's resource, and what is assumed about it."""
    docs = deployed(ds)
    notes: list[str] = []
    if req.action.startswith("kms:"):
        return _key_layers(cfg, docs, req), notes
    if req.action.startswith("sts:"):
        trust = explain_roles.kit_trust(docs, req.resource)
        if trust is not None:
            return [_layer(trust)], notes
        stmt = explain_roles.trust_naming(req.principal, req.action)["Statement"][0]
        notes.append("not a role the kit makes: its trust policy is assumed to name the caller")
        return [_stand_in("trust (assumed)", explain_roles.ASSUMED_TRUST, f"{req.resource} (trust)", stmt)], notes
    bucket_arn, _, table = req.resource.partition("/table/")
    out: list[Layer] = []
    for r in cfg.replicas:
        if r.bucket_arn == bucket_arn and f"replica-bucket-policy--{r.bucket}" in docs:
            out.append(_layer(docs[f"replica-bucket-policy--{r.bucket}"]))
            tp = _table_policy(cfg, docs, ds, r.bucket) if table else None
            if tp is not None:
                out.append(_layer(tp, _for_table(tp.document, bucket_arn, req.resource)))
                notes.append(f"the table carries its table policy {tp.name}, as the kit puts it")
            notes += [
                f"the bucket carries the estate's protection tag {BUCKET_TAG_KEY_PREFIX}{key}={cfg.kit.name}"
                for key in cfg.scheme.protection_tags
            ]
            return out, notes
    for src in cfg.sources:
        view = ds.for_source(cfg, src)
        if src.bucket_arn == bucket_arn and view.has("source-bucket-policy"):
            return [_layer(view.entry("source-bucket-policy"))], notes
    if bucket_arn == cfg.recovery_bucket_arn:
        notes.append("the kit puts no resource policy on the recovery bucket")
    else:
        notes.append("the kit puts no resource policy on this resource (not a replica or source of the config)")
    return out, notes


def _key_layers(cfg: KitConfig, docs: dict[str, PolicyDoc], req: ExplainRequest) -> list[Layer]:
    aliases = dict(req.context).get("kms:ResourceAliases", ())
    wanted = {aliases} if isinstance(aliases, str) else set(aliases)
    for name, d in docs.items():
        bucket = name.removeprefix("kms-key-policy--")
        if d.kind == "kms-key-policy" and kms_alias(cfg, bucket) in wanted and d.account_id == req.resource_account:
            return [_layer(d)]
    kit_keys = sorted(
        kms_alias(cfg, n.removeprefix("kms-key-policy--"))
        for n in docs
        if n.startswith("kms-key-policy--") and not n.startswith("kms-key-policy--alarm-topic")
    )
    raise RefusedInput(
        "which kit key? pass --context kms:ResourceAliases=<alias> (this configuration's keys: "
        f"{', '.join(kit_keys) or 'none'})"
    )


def _scp_levels(cfg: KitConfig, account: str, scps: Sequence[str]) -> tuple[ScpLevel, ...]:
    org = cfg.protection.organization
    assert org is not None
    target = next(t for t in org.targets if t == account or account in org.ou_accounts.get(t, ()))
    if target == account:
        return (ScpLevel("r-root", (FULL_AWS_ACCESS,)), ScpLevel(account, (FULL_AWS_ACCESS, *scps)))
    if target.startswith("r-"):
        return (ScpLevel(target, (FULL_AWS_ACCESS, *scps)), ScpLevel(account, (FULL_AWS_ACCESS,)))
    return (
        ScpLevel("r-root", (FULL_AWS_ACCESS,)),
        ScpLevel(target, (FULL_AWS_ACCESS, *scps)),
        ScpLevel(account, (FULL_AWS_ACCESS,)),
    )


def _stand_in(layer: str, name: str, attached_to: str, statement: Mapping[str, object]) -> Layer:
    """A document standing in for what the kit cannot see (named `assumed:...`, shown as assumed)."""
    position = "resource" if "Principal" in statement else "identity"
    return Layer(layer, name, attached_to, {"Version": "2012-10-17", "Statement": [dict(statement)]}, position)


def applicable(
    cfg: KitConfig,
    ds: DocumentSet,
    req: ExplainRequest,
    *,
    identity_policies: Sequence[tuple[str, Document]] = (),
    carries_guardrail: bool = False,
) -> Applicable:
    """Every document that applies to the request, in the order a Deny is named: SCPs, RCPs, identity, resource."""
    docs = deployed(ds)
    layers: list[Layer] = []
    notes: list[str] = []
    scp_levels: tuple[ScpLevel, ...] = ()
    account = req.principal_account
    org = cfg.protection.organization
    if account is not None and org is not None and account in org.covered_accounts:
        scps = [_layer(d) for d in docs.values() if d.kind == "scp"]
        layers += scps
        scp_levels = _scp_levels(cfg, account, [s.document for s in scps])
        notes.append("every level of the organization also holds FullAWSAccess")
    elif account is not None and org is not None:
        notes.append(f"account {account} is not under the SCPs' targets as the configuration states them")
    rcp_levels: tuple[ScpLevel, ...] = ()
    if req.action.startswith(("sts:", "kms:")) and explain_roles.rcps_apply(cfg, req.resource_account):
        rcps = [_layer(d) for d in docs.values() if d.kind == "rcp"]
        layers += rcps
        levels = _scp_levels(cfg, req.resource_account, [x.document for x in rcps])
        rcp_levels = tuple(ScpLevel(lv.org_identifier, lv.policies[1:]) for lv in levels)  # no FullAWSAccess
    if req.service:
        notes.append(f"AWS authorises its own service {req.principal} (no identity policy, no SCP)")
    else:
        assert account is not None
        role = req.principal.rsplit("/", 1)[1] if ":role/" in req.principal else None
        own = [
            d
            for d in docs.values()
            if d.kind == "identity"
            and d.account_id == account
            and role is not None
            and d.attached_to.split(" ")[:3] == ["IAM", "role", role]
        ]
        guardrail = [d for n, d in docs.items() if part_of(n, "replica-guardrail", account)]  # every part of it
        if carries_guardrail or role in guardrail_attachments(cfg, account):
            layers += [_layer(d) for d in guardrail]
        if identity_policies:
            layers += [
                Layer("identity policy", n, "given with --identity-policy", p, "identity") for n, p in identity_policies
            ]
        elif own:
            layers += [_layer(d) for d in own]
        else:
            grant = {"Sid": "AssumedIdentityGrant", "Effect": "Allow", "Action": req.action, "Resource": "*"}
            layers.append(_stand_in("identity (assumed)", ASSUMED_GRANT, "the principal's own policies", grant))
            notes.append(
                "not one of the kit's roles: its own identity policies are assumed to grant the action "
                "(--identity-policy FILE evaluates them instead)"
            )
    resource, resource_notes = resource_layers(cfg, ds, req)
    layers += resource
    notes += resource_notes
    if req.service and not req.action.startswith("sts:"):  # for a role, its trust policy speaks for AWS
        service_grant: dict[str, object] = {
            "Sid": "AwsAuthorisesItsService",
            "Effect": "Allow",
            "Principal": {"Service": req.principal},
            "Action": req.action,
            "Resource": req.resource,
        }
        layers.append(
            _stand_in("resource (assumed)", SERVICE_GRANT, "AWS's own authorisation of its service", service_grant)
        )
    return Applicable(tuple(layers), scp_levels, tuple(notes), rcp_levels)


# ---------------------------------------------------------------- evaluation and attribution ----


def sim_request(req: ExplainRequest, app: Applicable, rid: str, cfg: KitConfig) -> SimRequest:
    """The simulator's request, its documents named `<rid>|<document>` so that many requests share one batch (a
    table policy differs per table)."""
    ctx = simulate.principal_context(req.principal, source_account=req.resource_account)
    if req.action.startswith("kms:") and any(x.layer == "KMS key policy" for x in app.layers):
        # the tag the kit puts on the keys it creates
        ctx[f"aws:ResourceTag/{iam_actions.REPLICA_KEY_TAG}"] = cfg.kit.name
    if req.resource.partition("/table/")[0] in {r.bucket_arn for r in cfg.replicas}:
        # an estate's SCPs find its protected buckets by their protection tags
        ctx.update({f"{BUCKET_TAG_KEY_PREFIX}{key}": cfg.kit.name for key in cfg.scheme.protection_tags})
    ctx.update({k: list(v) if isinstance(v, tuple) else v for k, v in req.context})

    def ns(name: str) -> str:
        return name if name == FULL_AWS_ACCESS else f"{rid}|{name}"

    return SimRequest(
        id=rid,
        principal=req.principal,
        action=req.action,
        resource=req.resource,
        resource_account=req.resource_account,
        context=ctx,
        identity_policies=tuple(ns(x.document) for x in app.layers if x.position == "identity"),
        scps=tuple(ScpLevel(lvl.org_identifier, tuple(ns(n) for n in lvl.policies)) for lvl in app.scp_levels),
        rcps=tuple(ScpLevel(lvl.org_identifier, tuple(ns(n) for n in lvl.policies)) for lvl in app.rcp_levels),
        resource_policies=tuple(ns(x.document) for x in app.layers if x.position == "resource"),
    )


def _sid_prefix(name: str) -> str:
    """The prefix the evaluator gives each statement of a merged resource policy (`evaluate.mjs`, sidSafe)."""
    return re.sub(r"[^A-Za-z0-9]", "", name) + "X"


def attribute(reasons: Sequence[str], layers: Sequence[Layer], rid: str) -> list[StatementRef]:
    """The simulator's `<type>:<policy>#<Sid>` reasons of request `rid` as (layer, document, Sid), in the order of
    `layers` and of the statements within each document; the FullAWSAccess stand-in of the SCP levels is left out."""
    found: list[tuple[int, int, StatementRef]] = []
    for reason in reasons:
        kind, _, rest = reason.partition(":")
        policy, _, sid = rest.rpartition("#")
        if kind == "resource":
            owners = [
                x for x in layers if x.position == "resource" and sid.startswith(_sid_prefix(f"{rid}|{x.document}"))
            ]
            owner = max(owners, key=lambda x: len(x.document), default=None)
            sid = sid.removeprefix(_sid_prefix(f"{rid}|{owner.document}")) if owner else sid
        else:
            owner = next((x for x in layers if f"{rid}|{x.document}" == policy), None)
        if owner is None:
            continue
        sids = [s.get("Sid", f"Stmt{i + 1}") for i, s in enumerate(owner.policy["Statement"])]
        found.append(
            (
                layers.index(owner),
                sids.index(sid) if sid in sids else len(sids),
                StatementRef(owner.layer, owner.document, sid),
            )
        )
    return [ref for _, _, ref in sorted(found, key=lambda f: (f[0], f[1]))]


def protection_rules(cfg: KitConfig, req: ExplainRequest, layers: Sequence[Layer]) -> list[iam_actions.ProtectionRule]:
    """The protection rules naming the request's action on a protected resource (a replica, its tables, a replica's
    key; a promoted bucket's rules in the failover topology). None elsewhere: the recovery bucket is writable."""
    if req.action.startswith("kms:"):
        replica_keys = {f"kms-key-policy--{r.bucket}" for r in cfg.replicas}
        if req.short_action in KMS_PROTECTED and any(x.document.endswith(tuple(replica_keys)) for x in layers):
            return [iam_actions.ProtectionRule("DenyReplicaKeyDestruction", tuple(sorted(KMS_PROTECTED)), "")]
        return []
    if req.resource.partition("/table/")[0] not in {r.bucket_arn for r in cfg.replicas}:
        return []
    promoted = cfg.kind.promoted_bucket
    on_promoted = promoted is not None and req.resource.partition("/table/")[0].endswith(f":bucket/{promoted}")
    rules = iam_actions.promoted_rules() if on_promoted else iam_actions.PROTECTION_RULES
    return [r for r in rules if req.short_action in r.actions]


def also_exempt(cfg: KitConfig, req: ExplainRequest, rules: Sequence[iam_actions.ProtectionRule]) -> tuple[str, ...]:
    """Whom the rules exempt besides break-glass at the request's bucket (`ProtectionRule.exempt_*`)."""
    replica = next((r for r in cfg.replicas if req.resource.partition("/table/")[0] == r.bucket_arn), None)
    deploy = [r.deploy_role_arn for r in cfg.replicas if r.deploy_role_arn and r.account_id == req.resource_account]
    out: list[str] = []
    for rule in rules:
        if rule.exempt_replication_role and replica is not None:
            out += [f"replication role {a}" for a in cfg.replication_role_arns_into(replica)]
        if rule.exempt_maintenance_service:
            out.append(f"service {iam_actions.MAINTENANCE_SERVICE}")
        if rule.exempt_writers and cfg.failover is not None:
            out += [f"writer {a}" for a in cfg.failover.writer_roles]
        first = " (first deploy only: the bucket and table policies deny it later)"
        out += [f"deploy role {a}{first if rule.locked_after_first_deploy else ''}"
                for a in deploy if rule.exempt_deploy_roles]  # fmt: skip
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class Question:
    """One request to explain, with what the caller says about its principal."""

    request: ExplainRequest
    identity_policies: tuple[tuple[str, Document], ...] = ()  # the principal's own policies (--identity-policy)
    carries_guardrail: bool = False


@dataclass(frozen=True)
class _Plan:
    question: Question
    rid: str
    app: Applicable
    rules: tuple[iam_actions.ProtectionRule, ...]
    glass: tuple[tuple[str, str], ...]  # (break-glass principal, its request id)


def explain_all(cfg: KitConfig, questions: Sequence[Question]) -> list[Explanation]:
    """Evaluate every request (and, for a protected action, the same request by each break-glass principal) in one
    run of the simulator, and attribute each decision."""
    ds = build_within_quotas(cfg)
    plans: list[_Plan] = []
    sims: list[SimRequest] = []
    policies: dict[str, Document] = {
        FULL_AWS_ACCESS: {
            "Version": "2012-10-17",
            "Statement": [{"Sid": "FullAWSAccess", "Effect": "Allow", "Action": "*", "Resource": "*"}],
        }
    }
    for qi, q in enumerate(questions):
        req = q.request
        app = applicable(cfg, ds, req, identity_policies=q.identity_policies, carries_guardrail=q.carries_guardrail)
        rules = protection_rules(cfg, req, app.layers)
        glass = tuple((p, f"q{qi}bg{i}") for i, p in enumerate(cfg.protection.break_glass_principals if rules else ()))
        runs = [(f"q{qi}", req, app)]
        for p, rid in glass:
            as_glass = ExplainRequest(p, req.action, req.resource, req.resource_account, req.context)
            runs.append((rid, as_glass, applicable(cfg, ds, as_glass)))
        for rid, r, a in runs:
            policies.update({f"{rid}|{x.document}": x.policy for x in a.layers})
            sims.append(sim_request(r, a, rid, cfg))
        plans.append(_Plan(q, f"q{qi}", app, tuple(rules), glass))
    results = simulate.evaluate(policies, sims)
    errors = simulate.errors_of(results)
    if errors:
        raise RefusedInput(f"the evaluator rejected a request: {errors[0]}")
    return [_explanation(cfg, plan, results) for plan in plans]


def _explanation(cfg: KitConfig, plan: _Plan, results: dict[str, SimResult]) -> Explanation:
    res = results[plan.rid]
    layers = plan.app.layers
    decision = DECISIONS[res.decision]
    denies = attribute(res.denied_by, layers, plan.rid)
    allows = attribute(res.granted_by, layers, plan.rid) if decision == ALLOWED else []
    missing = tuple(sorted({r.partition(":")[0] for r in res.implicitly_denied_in})) if decision == IMPLICIT else ()
    path = None
    if plan.rules:
        how = break_glass_how(plan.rules)
        path = BreakGlassPath(
            tuple(r.sid for r in plan.rules),
            tuple((p, results[rid].allowed) for p, rid in plan.glass),
            how,
            also_exempt(cfg, plan.question.request, plan.rules),
        )
    return Explanation(
        request=plan.question.request,
        decision=decision,
        deciding=denies[0] if denies else (allows[0] if allows else None),
        denies=tuple(denies),
        allows=tuple(allows),
        missing_allow=missing,
        layers=layers,
        assumptions=plan.app.assumptions,
        break_glass=path,
    )


# ---------------------------------------------------------------- output ----


def render(e: Explanation) -> str:
    r = e.request
    lines = [f"{r.principal} -> {r.action} on {r.resource}", f"decision: {e.decision.upper()}"]
    if e.decision == EXPLICIT and e.deciding:
        d = e.deciding
        lines.append(f"decided by: {d.layer} {d.document}, statement {d.sid}")
        others = [f"{x.layer} {x.document} {x.sid}" for x in e.denies[1:]]
        if others:
            lines.append("also denied by: " + "; ".join(others))
    elif e.decision == ALLOWED:
        lines += [f"allowed by: {a.layer} {a.document}, statement {a.sid}" for a in e.allows] or ["allowed by: -"]
    else:
        lines.append("no Allow in: " + ", ".join(e.missing_allow or ("-",)))
    lines.append("documents evaluated:")
    lines += [f"  {x.layer:<20} {x.document}  ({x.attached_to})" for x in e.layers]
    lines += [f"assumed: {a}" for a in e.assumptions]
    if e.break_glass:
        b = e.break_glass
        lines.append(f"protected action ({', '.join(b.rules)}): break-glass path")
        lines += [f"  {p}: {'allowed' if ok else 'NOT allowed'} by the same documents" for p, ok in b.principals]
        lines += [f"  also exempt: {x}" for x in b.also_exempt]
        lines += [f"  how: {h} ({s})" for s, h in b.how]
    return "\n".join(lines)


def _identity_files(paths: Sequence[Path]) -> list[tuple[str, Document]]:
    out = []
    for i, p in enumerate(paths):
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RefusedInput(f"--identity-policy {p}: {exc}") from exc
        if not isinstance(doc, dict) or "Statement" not in doc:
            raise RefusedInput(f"--identity-policy {p}: not an IAM policy document")
        out.append((f"given:{i}:{p.name}", doc))
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="s3tables-kit explain", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--config", type=Path, required=True, help="the kit's configuration (kit.toml)")
    ap.add_argument("--principal", required=True, help="role or user ARN (a role session's ARN works), or a service")
    ap.add_argument("--action", required=True, help="s3tables:<Action>, kms:<Action> or sts:AssumeRole* (catalogue)")
    ap.add_argument("--resource", required=True, help="table bucket, table, KMS key or IAM role ARN")
    ap.add_argument("--context", action="append", default=[], metavar="KEY=VALUE", help="a request context key")
    ap.add_argument("--identity-policy", action="append", default=[], type=Path, metavar="FILE",
                    help="the principal's own identity policy (JSON), instead of an assumed grant")  # fmt: skip
    ap.add_argument("--guardrail", action="store_true", help="the principal carries its account's IAM guardrail")
    ap.add_argument("--json", action="store_true", help="print the explanation as JSON")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        req = parse_request(args.principal, args.action, args.resource, args.context)
        cfg = load_config(args.config)
        question = Question(req, tuple(_identity_files(args.identity_policy)), args.guardrail)
        e = explain_all(cfg, [question])[0]
    except (RefusedInput, ConfigError, OSError, simulate.SimulatorUnavailable, simulate.SimulatorError) as exc:
        for problem in [f"{exc.source}: {i}" for i in exc.issues] if isinstance(exc, ConfigError) else [exc]:
            print(f"explain: refused: {problem or type(exc).__name__}", file=sys.stderr)  # one line per problem
        return EXIT_REFUSED
    print(json.dumps(e.to_json(), indent=2) if args.json else render(e))
    return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
