"""Proofs with the IAM simulator that the pipeline feeding the replicas is guarded like the replicas, in every
topology (seed, multi-account, estate, both failover topologies).

Each chain of the attacker's seat stops at its first step, for an administrator of the source account (no guardrail
attached: the worst case): taking over the source deploy role, widening the replication role or giving it a Deny
boundary, silencing the monitor (alarms, schedule, function, topic, logs) or faking its heartbeat, disabling the
source key, minting a role under the replication name pattern (an estate), using a replication role anywhere but in
the replication service. The legitimate paths keep working: the deploy role of the source deploys the pipeline,
break-glass does anything, the monitor and the rehearsal publish metrics, the replication service assumes its role.
Each new guard is needed: removed from every layer, the first step goes through (the mutations below); removed from
one layer where the topology has two, it is still denied.

The world (who the principals are, which ARNs the resources have) is written by hand here from the example
configurations; only the documents come from the code under test (`s3tables_kit.policies.docset.build`).
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies.docset import build, build_monitor
from s3tables_kit.policies.parts import with_parts
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, ScpLevel, SimRequest, SimResult, principal_context
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.failover import failover_topology
from tests import policy_fixtures

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "S3TablesReplicaKit"
REPLICATION = "replication.s3tables.amazonaws.com"
OUTSIDER = "arn:aws:iam::555555555555:role/Administrator"
ADMIN_ACCESS = "world:AdministratorAccess"
FULL_AWS_ACCESS = "world:FullAWSAccess"
MINTED_TRUST = "world:MintedRoleTrust"
WORLD: dict[str, Any] = {
    ADMIN_ACCESS: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
    FULL_AWS_ACCESS: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
    # a role minted with a trust policy naming an account outside the organization
    MINTED_TRUST: {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::555555555555:root"}, "Action": "sts:AssumeRole"}
        ],
    },
}


@dataclass(frozen=True)
class Site:
    """The pipeline under attack in one topology: the source (the promoted bucket after a failover)."""

    example: str
    account: str
    region: str
    prefix: str  # the monitor's names
    bucket: str
    deploy: str | None  # the source's deploy role
    replication_role: str
    breakglass: str | None  # of the source's account (IAM and the rest act within one account only)
    trust: str  # the replication role's trust policy document
    key: tuple[str, str] | None = None  # (alias, key policy document) of a kit-created source key
    alarm_key_policy: str | None = None
    guardrail: str | None = None  # the account's guardrail, carried by `engineer` (and the deploy role)
    # the pipeline guardrail (a source account without a replica; a failover topology, beside the guardrail)
    pipeline_guardrail: str | None = None
    engineer: str | None = None
    monitor_role: str | None = None
    recovery_role: str | None = None
    vault_deploy: str | None = None  # an estate: a replica account's deploy role (the vault's)

    def arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account}:{resource}"

    @property
    def admin(self) -> str:
        return f"arn:aws:iam::{self.account}:role/Administrator"


# the promoted source's monitor keeps its alarm topic key in the promoted bucket's stack (`docset.build_monitor`)
PROMOTED_ALARM_KEY = "promoted-monitor--kms-key-policy--alarm-topic-source"

SITES: dict[str, Site] = {
    "seed": Site(
        "seed", "111122223333", "us-east-1", "seed", "demo-source-tablebucket", None,
        "arn:aws:iam::111122223333:role/seed-s3tables-replication",
        "arn:aws:iam::111122223333:role/s3tables-break-glass", "replication-role-trust",
        alarm_key_policy="kms-key-policy--alarm-topic-source", guardrail="replica-guardrail--111122223333",
        pipeline_guardrail="pipeline-guardrail--111122223333",
        monitor_role="arn:aws:iam::111122223333:role/seed-replication-monitor",
        recovery_role="arn:aws:iam::111122223333:role/seed-s3tables-recovery",
    ),
    "multi-account": Site(
        "multi-account", "111111111111", "eu-west-1", "lakehouse", "lakehouse-prod",
        "arn:aws:iam::111111111111:role/terraform-deploy",
        "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication",
        None, "replication-role-trust",
        key=("alias/lakehouse-lakehouse-prod", "kms-key-policy--lakehouse-prod"),
        alarm_key_policy="kms-key-policy--alarm-topic-source",
        # the source account holds no replica: its configured roles carry the pipeline guardrail
        pipeline_guardrail="pipeline-guardrail--111111111111", engineer="arn:aws:iam::111111111111:role/data-engineer",
        monitor_role="arn:aws:iam::111111111111:role/lakehouse-replication-monitor",
        recovery_role="arn:aws:iam::222222222222:role/lakehouse-s3tables-recovery",
    ),
    "estate": Site(
        "estate", "111111111111", "eu-west-1", "estate-sales-euw1", "estate-sales-euw1",
        "arn:aws:iam::111111111111:role/terraform-deploy",
        "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication",
        "arn:aws:iam::111111111111:role/s3tables-break-glass", "replication-role-trust--source-sales-euw1",
        key=("alias/estate-estate-sales-euw1", "kms-key-policy--estate-sales-euw1"),
        alarm_key_policy="kms-key-policy--alarm-topic-source-sales-euw1",
        guardrail="replica-guardrail--111111111111", pipeline_guardrail="pipeline-guardrail--111111111111",
        engineer="arn:aws:iam::111111111111:role/data-engineer",
        monitor_role="arn:aws:iam::111111111111:role/estate-sales-euw1-replication-monitor",
        recovery_role="arn:aws:iam::666666666666:role/estate-s3tables-recovery",
        vault_deploy="arn:aws:iam::666666666666:role/terraform-deploy",
    ),
    # an estate's source account without a replica: its pipeline guardrail names the kit's patterns in that account
    "estate/ops": Site(
        "estate", "555555555555", "us-east-1", "estate-ops-use1", "estate-ops-use1",
        "arn:aws:iam::555555555555:role/terraform-deploy",
        "arn:aws:iam::555555555555:role/estate-ops-use1-s3tables-replication",
        None, "replication-role-trust--source-ops-use1",
        alarm_key_policy="kms-key-policy--alarm-topic-source-ops-use1",
        pipeline_guardrail="pipeline-guardrail--555555555555", engineer="arn:aws:iam::555555555555:role/data-engineer",
        monitor_role="arn:aws:iam::555555555555:role/estate-ops-use1-replication-monitor",
        recovery_role="arn:aws:iam::666666666666:role/estate-s3tables-recovery",
    ),
    "failover/seed": Site(
        "failover/seed", "111122223333", "us-west-2", "seed-fo", "demo-dest-tablebucket", None,
        "arn:aws:iam::111122223333:role/seed-fo-s3tables-replication",
        "arn:aws:iam::111122223333:role/s3tables-break-glass", "replication-role-trust",
        alarm_key_policy=PROMOTED_ALARM_KEY, guardrail="replica-guardrail--111122223333",
        pipeline_guardrail="pipeline-guardrail--111122223333",
        # the seed attaches its guardrails to no role: a role that an administrator gave them
        engineer="arn:aws:iam::111122223333:role/data-engineer",
        monitor_role="arn:aws:iam::111122223333:role/seed-fo-replication-monitor",
        recovery_role="arn:aws:iam::111122223333:role/seed-s3tables-recovery",
    ),
    "failover/multi-account": Site(
        "failover/multi-account", "222222222222", "eu-central-1", "lakehouse-fo", "lakehouse-replica-euc1",
        "arn:aws:iam::222222222222:role/terraform-deploy",
        "arn:aws:iam::222222222222:role/lakehouse-fo-s3tables-replication",
        "arn:aws:iam::222222222222:role/s3tables-break-glass", "replication-role-trust",
        alarm_key_policy=PROMOTED_ALARM_KEY, guardrail="replica-guardrail--222222222222",
        pipeline_guardrail="pipeline-guardrail--222222222222", engineer="arn:aws:iam::222222222222:role/data-engineer",
        monitor_role="arn:aws:iam::222222222222:role/lakehouse-fo-replication-monitor",
        recovery_role="arn:aws:iam::222222222222:role/lakehouse-s3tables-recovery",
    ),
}  # fmt: skip

SCPS = ("scp-protect-replicas", "scp-protect-replica-guards", "scp-protect-pipeline", "scp-protect-promoted")
RCP = "rcp-protect-replication-roles"


def documents(example: str) -> dict[str, Any]:
    """The documents the topology deploys, by the names its stacks look them up (a failover topology's resolve
    to the promotion's candidates)."""
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    ds = build(cfg)
    names = {d.deploys_as or d.name for d in ds.all()} | {d.name for d in ds}
    out = {n: ds.document(n) for n in sorted(names) if ds.has(n)}
    if cfg.failover is not None and cfg.failover.promoted_bucket:
        from s3tables_kit.infra.stacks.failover import failover_monitor_config

        monitor = build_monitor(failover_monitor_config(cfg, failover_topology(cfg)))
        out[PROMOTED_ALARM_KEY] = monitor.document("kms-key-policy--alarm-topic-source")
    return out


# ---------------------------------------------------------------- the cases ----


@dataclass(frozen=True)
class Case:
    who: str  # admin | engineer | deploy | breakglass | monitor | recovery | outsider | vault | service
    action: str
    resource: str
    want: str
    context: tuple[tuple[str, str], ...] = ()
    resource_policy: str | None = None  # a document of the topology, or a world policy
    account: str | None = None  # the resource's account (default: the site's)


def cases(site: Site) -> dict[str, Case]:
    """Every first step, denied, and every legitimate path next to it, allowed: {case id: case}."""
    out: dict[str, Case] = {}
    ns = (("cloudwatch:namespace", NAMESPACE),)
    # PutMetricData is authorised on Resource "*" (its one resource type, dataset, is optional); the simulator
    # expands a "*" request into every resource type, so the metric cases name a concrete ARN that "*" covers
    metrics = site.arn("cloudwatch", "dataset/kit")
    topic = site.arn("sns", f"{site.prefix}-assurance-alarms")
    detection = {
        "cloudwatch:DisableAlarmActions": site.arn(
            "cloudwatch", f"alarm:{site.prefix}-replication-monitor-not-reporting"
        ),
        "cloudwatch:DeleteAlarms": site.arn("cloudwatch", f"alarm:{site.prefix}-replication-lag-x"),
        "cloudwatch:SetAlarmState": site.arn("cloudwatch", f"alarm:{site.prefix}-replica-bucket-policy-drift-x"),
        "scheduler:DeleteSchedule": site.arn("scheduler", f"schedule/default/{site.prefix}-replication-monitor"),
        "lambda:UpdateFunctionCode": site.arn("lambda", f"function:{site.prefix}-replication-monitor"),
        # the simulator authorises a subscription's removal on its topic (the type iam-data lists)
        "sns:Unsubscribe": topic,
        "sns:Subscribe": topic,
        "logs:DeleteLogGroup": site.arn("logs", f"log-group:{site.prefix}-replication-monitor"),
        # actions no deny-list named: the allow-list closes them (and whatever AWS adds next)
        **new_holes(site, topic),
    }
    role_edit = ("iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary", "iam:DeleteRolePolicy")
    attackers = ["admin", *(["engineer"] if site.engineer else [])]
    keepers = [*(["breakglass"] if site.breakglass else []), *(["deploy"] if site.deploy else [])]
    for who in [*attackers, *keepers]:
        want = EXPLICIT_DENY if who in attackers else ALLOWED

        def want_of(action: str, who: str = who, want: str = want) -> str:
            # the deploy role keeps its reviewed set only: no boundary, no muting, no deletion, no key destruction
            return EXPLICIT_DENY if who == "deploy" and action not in DEPLOY_MAY else want

        for action in role_edit:
            out[f"{who}:widen:{action}"] = Case(who, action, site.replication_role, want_of(action))
        for action, resource in detection.items():
            out[f"{who}:silence:{action}"] = Case(who, action.split("@")[0], resource, want_of(action.split("@")[0]))
        if site.key:
            alias, policy = site.key
            out[f"{who}:source-key:kms:DisableKey"] = Case(
                who, "kms:DisableKey", site.arn("kms", "key/5e1f2a3b-0c4d-4e5f-8a9b-0c1d2e3f4a5b"),
                want_of("kms:DisableKey"),
                (("kms:ResourceAliases", alias),), policy,
            )  # fmt: skip
        if site.alarm_key_policy:
            out[f"{who}:alarm-key:kms:DisableKey"] = Case(
                who, "kms:DisableKey", site.arn("kms", "key/7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d"),
                want_of("kms:DisableKey"),
                (("kms:ResourceAliases", f"alias/{site.prefix}-assurance-alarms"),), site.alarm_key_policy,
            )  # fmt: skip
        if who != "deploy":
            out[f"{who}:heartbeat:cloudwatch:PutMetricData"] = Case(who, "cloudwatch:PutMetricData", metrics, want, ns)
    # faking the heartbeat: only the monitor and the rehearsal publish the kit's metrics (another namespace is free)
    if site.deploy:
        out["deploy:heartbeat:cloudwatch:PutMetricData"] = Case(
            "deploy", "cloudwatch:PutMetricData", metrics, EXPLICIT_DENY, ns
        )
    out["monitor:heartbeat:cloudwatch:PutMetricData"] = Case(
        "monitor", "cloudwatch:PutMetricData", metrics, ALLOWED, ns
    )
    if site.recovery_role:  # the rehearsal publishes in the recovery account
        racct = site.recovery_role.split(":")[4]
        rmetrics = metrics.replace(site.account, racct)
        out["recovery:heartbeat:cloudwatch:PutMetricData"] = Case(
            "recovery", "cloudwatch:PutMetricData", rmetrics, ALLOWED, ns, account=racct
        )
    out["admin:other-namespace:cloudwatch:PutMetricData"] = Case(
        "admin", "cloudwatch:PutMetricData", metrics, ALLOWED, (("cloudwatch:namespace", "Team/Own"),)
    )
    # the deploy-role takeover: its trust rewritten, or the role deleted and re-created
    if site.deploy:
        for action in ("iam:UpdateAssumeRolePolicy", "iam:DeleteRole"):
            out[f"admin:takeover:{action}"] = Case("admin", action, site.deploy, EXPLICIT_DENY)
            if site.breakglass:
                out[f"breakglass:takeover:{action}"] = Case("breakglass", action, site.deploy, ALLOWED)
    # a replication role is passed to the replication service only, and assumed by it only
    passed = (("iam:PassedToService", "lambda.amazonaws.com"),)
    to_replication = (("iam:PassedToService", REPLICATION),)
    for who in ("admin", *(["deploy"] if site.deploy else [])):
        out[f"{who}:pass-elsewhere:iam:PassRole"] = Case(
            who, "iam:PassRole", site.replication_role, EXPLICIT_DENY, passed
        )
    if site.breakglass:
        out["breakglass:pass-elsewhere:iam:PassRole"] = Case(
            "breakglass", "iam:PassRole", site.replication_role, ALLOWED, passed
        )
    if site.deploy:
        out["deploy:pass-to-replication:iam:PassRole"] = Case(
            "deploy", "iam:PassRole", site.replication_role, ALLOWED, to_replication
        )
    out["outsider:assume-minted:sts:AssumeRole"] = Case(
        "outsider", "sts:AssumeRole", site.replication_role, EXPLICIT_DENY, (), MINTED_TRUST
    )
    source_arn = f"arn:aws:s3tables:{site.region}:{site.account}:bucket/{site.bucket}"
    out["service:assume:sts:AssumeRole"] = Case(
        "service", "sts:AssumeRole", site.replication_role, ALLOWED, (("aws:SourceArn", source_arn),), site.trust
    )
    # detaching the pipeline guardrail (a failover topology) removes its identity layer
    if site.pipeline_guardrail and site.engineer:
        detach = (("iam:PolicyARN", pipeline_guardrail_arn(site)),)
        for who in _attackers(site):
            out[f"{who}:detach-pipeline-guardrail:iam:DetachRolePolicy"] = Case(
                who, "iam:DetachRolePolicy", site.engineer, EXPLICIT_DENY, detach
            )
        if site.breakglass:
            out["breakglass:detach-pipeline-guardrail:iam:DetachRolePolicy"] = Case(
                "breakglass", "iam:DetachRolePolicy", site.engineer, ALLOWED, detach
            )
    # minting a role under the replication name pattern in the vault's account (an estate)
    if site.vault_deploy:
        minted = "arn:aws:iam::666666666666:role/estate-x-s3tables-replication"
        out["vault:mint:iam:CreateRole"] = Case(
            "vault", "iam:CreateRole", minted, EXPLICIT_DENY, account="666666666666"
        )
        own = "arn:aws:iam::111111111111:role/estate-new-euw1-s3tables-replication"
        out["deploy:mint:iam:CreateRole"] = Case("deploy", "iam:CreateRole", own, ALLOWED)
        out["admin:mint:iam:CreateRole"] = Case("admin", "iam:CreateRole", own, EXPLICIT_DENY)
    return out


def pipeline_guardrail_arn(site: Site) -> str:
    kit = {"estate": "estate", "seed": "seed"}.get(site.example.removeprefix("failover/"), "lakehouse")
    return f"arn:aws:iam::{site.account}:policy/{kit}-s3tables-pipeline-guardrail"


# ---------------------------------------------------------------- evaluation ----


def _principal(site: Site, who: str) -> tuple[str, tuple[str, ...], bool]:
    """(ARN, identity policies, bound by the SCPs)."""
    guard = tuple(g for g in (site.guardrail, site.pipeline_guardrail) if g)
    return {
        "admin": (site.admin, (ADMIN_ACCESS,), True),
        "engineer": (site.engineer or "", (ADMIN_ACCESS, *guard), True),
        # the deploy role carries the guardrails of a replica account (a source-only account's are the engineers')
        "deploy": (site.deploy or "", (ADMIN_ACCESS, *(guard if site.guardrail else ())), True),
        "breakglass": (site.breakglass or "", (ADMIN_ACCESS,), True),
        "monitor": (site.monitor_role or "", (ADMIN_ACCESS,), True),
        "recovery": (site.recovery_role or "", (ADMIN_ACCESS,), True),
        "outsider": (OUTSIDER, (ADMIN_ACCESS,), False),
        "vault": (
            site.vault_deploy or "",
            (ADMIN_ACCESS, "replica-guardrail--666666666666", "pipeline-guardrail--666666666666"),
            True,
        ),
        "service": (REPLICATION, (), False),
    }[who]


def request(site: Site, cid: str, case: Case, variant: str, docs: dict[str, Any]) -> SimRequest:
    who, identity, scp = _principal(site, case.who)
    account = case.account or site.account

    def ns(name: str) -> str:
        return name if name.startswith("world:") else f"{variant}|{name}"

    ctx: dict[str, str | list[str]] = principal_context(who, source_account=site.account)
    for key, value in case.context:
        ctx[key] = [value] if key == "kms:ResourceAliases" else value
    kit_scps = tuple(ns(n) for n in SCPS if n in docs)
    return SimRequest(
        id=f"{variant}|{cid}",
        principal=who,
        action=case.action,
        resource=case.resource,
        resource_account=account,
        context=ctx,
        identity_policies=tuple(ns(p) for n in identity for p in with_parts(n, docs)),  # every part of a guardrail
        scps=(
            (
                ScpLevel("r-root", (FULL_AWS_ACCESS,)),
                ScpLevel("ou-kit", (FULL_AWS_ACCESS, *kit_scps)),
                ScpLevel(who.split(":")[4], (FULL_AWS_ACCESS,)),
            )
            if scp
            else ()
        ),
        resource_policies=(ns(case.resource_policy),) if case.resource_policy else (),
        rcps=(ScpLevel("r-root", ()), ScpLevel("ou-kit", (ns(RCP),)), ScpLevel(account, ())) if RCP in docs else (),
    )


def run(site: Site, variants: dict[str, dict[str, Any]]) -> dict[str, dict[str, SimResult]]:
    """Every case of `site` against each variant of the documents (labelled, never ""), in one batch."""
    reqs = [
        request(site, cid, case, label, docs) for label, docs in variants.items() for cid, case in cases(site).items()
    ]
    return policy_fixtures.evaluate_variants(variants, reqs, world=WORLD)


# ---------------------------------------------------------------- mutations ----

Mutation = Callable[[dict[str, Any]], None]


def drop_everywhere(sid: str) -> Mutation:
    """The statement `sid` removed from every document that carries it (every layer)."""

    def mutate(docs: dict[str, Any]) -> None:
        found = False
        for d in docs.values():
            kept = [s for s in d["Statement"] if s.get("Sid") != sid]
            found |= len(kept) != len(d["Statement"])
            d["Statement"] = kept
        assert found, f"no statement {sid} in any document"

    return mutate


def drop_from(name: str, sid: str) -> Mutation:
    def mutate(docs: dict[str, Any]) -> None:
        before = len(docs[name]["Statement"])
        docs[name]["Statement"] = [s for s in docs[name]["Statement"] if s.get("Sid") != sid]
        assert len(docs[name]["Statement"]) == before - 1, f"no statement {sid} in {name}"

    return mutate


def drop_resource(name: str, sid: str, resource: str) -> Mutation:
    """One role no longer among those a statement protects (the deploy role out of the privileged roles)."""

    def mutate(docs: dict[str, Any]) -> None:
        stmt = next(s for s in docs[name]["Statement"] if s.get("Sid") == sid)
        res = [stmt["Resource"]] if isinstance(stmt["Resource"], str) else list(stmt["Resource"])
        matching = [r for r in res if r == resource or (r.endswith("/terraform-deploy") and "*" in r)]
        assert matching, f"{resource} is not protected by {sid}"
        stmt["Resource"] = [r for r in res if r not in matching]

    return mutate


def drop_detach_guard_of(policy_arn: str) -> Mutation:
    """A guardrail no longer among those `DenyGuardrailDetach` keeps attached (by ARN or pattern), in every layer."""

    def mutate(docs: dict[str, Any]) -> None:
        found = False
        for d in docs.values():
            for stmt in d["Statement"]:
                cond = stmt.get("Condition", {}).get("ArnEquals", {})
                arns = cond.get("iam:PolicyARN", [])
                arns = [arns] if isinstance(arns, str) else arns
                kept = [a for a in arns if not fnmatch.fnmatchcase(policy_arn, a)]  # an estate's: by name pattern
                if stmt.get("Sid") == "DenyGuardrailDetach" and kept != arns:
                    cond["iam:PolicyARN"] = kept
                    found = True
        assert found, f"no DenyGuardrailDetach keeps {policy_arn} attached"

    return mutate


EDIT = (
    "DenyKitResources"  # the kit's resources' allow-list for everyone (s3tables_kit.policies.allowlists.KIT_RESOURCES)
)
KEYS = "DenyKitKeys"  # the kit's keys' (KIT_KEYS)
# What the deploy role may do of the cases (written from the intent: create, update in place, tag, never remove
# a protection or a detector; s3tables_kit.policies.allowlists.KIT_DEPLOY is what the code grants).
DEPLOY_MAY = frozenset({
        "iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:DeleteRolePolicy", "lambda:UpdateFunctionCode",
    "sns:Subscribe",
})  # fmt: skip


def new_holes(site: Site, topic: str) -> dict[str, str]:
    """{action[@tag]: resource} of the first steps the issue names that no deny-list held."""
    alarm = site.arn("cloudwatch", f"alarm:{site.prefix}-replication-monitor-not-reporting")
    function = site.arn("lambda", f"function:{site.prefix}-replication-monitor")
    logs = site.arn("logs", f"log-group:{site.prefix}-replication-monitor")
    kit = site.prefix.split("-")[0]
    racct = (site.recovery_role or site.admin).split(":")[4]
    out = {
        "cloudwatch:PutAlarmMuteRule": alarm,
        "cloudwatch:PutCompositeAlarm": alarm,
        "cloudwatch:PutLogAlarm": alarm,
        "sns:SetSubscriptionAttributes": topic,
        "sns:PutDataProtectionPolicy": topic,
        "lambda:PutFunctionEventInvokeConfig": function,
        "lambda:DeleteFunctionConcurrency": function,
        "lambda:PutResourcePolicy": function,
        "logs:PutSubscriptionFilter": logs,
        "logs:AssociateKmsKey": logs,
        "logs:DeleteRetentionPolicy": logs,
        # the monitor's own role: a Deny boundary blinds it
        "iam:PutRolePermissionsBoundary@monitor": site.monitor_role or site.replication_role,
    }
    if racct == site.account:  # alarms outside the old name pattern (the recovery stack's), in this account
        out["cloudwatch:DisableAlarmActions@backup-age"] = site.arn("cloudwatch", f"alarm:{kit}-backup-age")
        out["cloudwatch:DeleteAlarms@rehearsal"] = site.arn("cloudwatch", f"alarm:{kit}-recovery-rehearsal-failed")
    return out


def mutations(site: Site) -> dict[str, tuple[Mutation, dict[str, str]]]:
    """{name: (mutation, {case: decision after it})}: each new guard removed, and the first step it held goes
    through (the administrator of the source account carries no guardrail and holds AdministratorAccess)."""
    out: dict[str, tuple[Mutation, dict[str, str]]] = {
        "role edit and detection denies removed everywhere": (
            drop_everywhere(EDIT),
            {
                **{
                    f"{w}:widen:{a}": ALLOWED
                    for w in _attackers(site)
                    for a in (
                        "iam:PutRolePolicy",
                        "iam:AttachRolePolicy",
                        "iam:PutRolePermissionsBoundary",
                        "iam:DeleteRolePolicy",
                    )
                },
                **{f"{w}:silence:{a}": ALLOWED for w in _attackers(site) for a in silence(site)},
            },
        ),
        "kit metrics guard removed everywhere": (
            drop_everywhere("DenyKitMetricsFromOthers"),
            {
                **{f"{w}:heartbeat:cloudwatch:PutMetricData": ALLOWED for w in _attackers(site)},
                **({"deploy:heartbeat:cloudwatch:PutMetricData": ALLOWED} if site.deploy else {}),
            },
        ),
        "pass-role-elsewhere guard removed everywhere": (
            drop_everywhere("DenyPassReplicationRoleElsewhere"),
            # an administrator passes no kit role at all (the allow-list): the deploy role passes it elsewhere
            {"deploy:pass-elsewhere:iam:PassRole": ALLOWED} if site.deploy else {},
        ),
        "resource control policy removed": (
            drop_everywhere("DenyAssumeReplicationRoleButTheService"),
            {"outsider:assume-minted:sts:AssumeRole": ALLOWED},
        ),
    }
    # one layer removed where there are two: the other still holds (the guardrail's bearer, the key policy)
    out["role edit and detection denies removed from the pipeline SCP only"] = (
        drop_from("scp-protect-pipeline", EDIT),
        {f"admin:{chain}:{a}": ALLOWED for chain, acts in (("widen", WIDEN), ("silence", silence(site))) for a in acts},
    )
    if site.key:
        out["source key guard removed from the SCPs only"] = (
            drop_from_scps(KEYS),
            {},  # the key policy still denies every attacker
        )
    if site.deploy:
        out["source deploy role out of the privileged roles"] = (
            drop_resource("scp-protect-replica-guards", "DenyPrivilegedRoleTampering", site.deploy),
            {"admin:takeover:iam:UpdateAssumeRolePolicy": ALLOWED, "admin:takeover:iam:DeleteRole": ALLOWED},
        )
    if site.key:
        out["source key guard removed from the SCP and the key policy"] = (
            _both(drop_everywhere(KEYS), drop_from(site.key[1], KEY_POLICY_SID)),
            {
                f"{w}:source-key:kms:DisableKey": ALLOWED
                for w in (*_attackers(site), *(["deploy"] if site.deploy else []))
            },
        )
    if site.alarm_key_policy:
        out["alarm key guard removed from the SCP and the key policy"] = (
            _both(drop_everywhere(KEYS), drop_from(site.alarm_key_policy, KEY_POLICY_SID)),
            {
                **{
                    f"{w}:alarm-key:kms:DisableKey": ALLOWED
                    for w in (*_attackers(site), *(["deploy"] if site.deploy else []))
                },
                # the source key's SCP guard is the same statement: its key policy still holds it
            },
        )
    if site.pipeline_guardrail and site.engineer:
        out["pipeline guardrail out of the detach guards"] = (
            drop_detach_guard_of(pipeline_guardrail_arn(site)),
            {f"{w}:detach-pipeline-guardrail:iam:DetachRolePolicy": ALLOWED for w in _attackers(site)},
        )
    if site.vault_deploy:
        out["replica-account creation guards removed"] = (
            _both(
                drop_everywhere("DenyReplicationRoleCreationInReplicaAccounts"),
                drop_everywhere("DenyReplicationRoleCreationHere"),
            ),
            {"vault:mint:iam:CreateRole": ALLOWED},
        )
    return out


KEY_POLICY_SID = "DenyKeyDestructionExceptBreakGlass"
WIDEN = ("iam:PutRolePolicy", "iam:AttachRolePolicy", "iam:PutRolePermissionsBoundary", "iam:DeleteRolePolicy")
SILENCE = (
    "cloudwatch:DisableAlarmActions", "cloudwatch:DeleteAlarms", "cloudwatch:SetAlarmState",
    "scheduler:DeleteSchedule", "lambda:UpdateFunctionCode", "sns:Unsubscribe", "sns:Subscribe",
    "logs:DeleteLogGroup",
)  # fmt: skip


def silence(site: Site) -> tuple[str, ...]:
    return (*SILENCE, *new_holes(site, ""))


def drop_from_scps(sid: str) -> Mutation:
    """The statement `sid` removed from whichever SCP carries it (the organization's layer only)."""

    def mutate(docs: dict[str, Any]) -> None:
        found = False
        for name in SCPS:
            if name in docs:
                kept = [s for s in docs[name]["Statement"] if s.get("Sid") != sid]
                found |= len(kept) != len(docs[name]["Statement"])
                docs[name]["Statement"] = kept
        assert found, f"no SCP carries {sid}"

    return mutate


def _attackers(site: Site) -> list[str]:
    return ["admin", *(["engineer"] if site.engineer else [])]


def _both(*ms: Mutation) -> Mutation:
    def mutate(docs: dict[str, Any]) -> None:
        for m in ms:
            m(docs)

    return mutate


# ---------------------------------------------------------------- tests ----


@pytest.fixture(scope="module", params=list(SITES))
def proven(request: pytest.FixtureRequest) -> tuple[Site, dict[str, dict[str, SimResult]]]:
    """Each topology's cases against its documents and against each mutation's copy, in one batch."""
    site = SITES[request.param]
    docs = documents(site.example)
    variants = {"base": docs}
    for i, (_name, (mutate, _flips)) in enumerate(mutations(site).items()):
        mutated = copy.deepcopy(docs)
        mutate(mutated)
        variants[f"m{i}"] = mutated
    return site, run(site, variants)


def test_every_first_step_is_denied_and_every_legitimate_path_allowed(
    proven: tuple[Site, dict[str, dict[str, SimResult]]],
) -> None:
    site, results = proven
    want = cases(site)
    bad = {
        cid: (c.want, results["base"][cid].decision, results["base"][cid].denied_by)
        for cid, c in want.items()
        if results["base"][cid].decision != c.want
    }
    assert not bad, f"{site.example}: {bad}"


def test_the_first_steps_meet_two_layers_where_the_topology_has_two(
    proven: tuple[Site, dict[str, dict[str, SimResult]]],
) -> None:
    """The keys: their own key policy and the kit's SCP. The bearer of the account's guardrail or pipeline
    guardrail (an engineer, a replica account's deploy role): that guardrail and the pipeline SCP. An administrator
    who carries neither meets the SCP alone (the guardrails bind only the roles they are attached to)."""
    site, results = proven
    base = results["base"]
    for cid, case in cases(site).items():
        if case.want != EXPLICIT_DENY:
            continue
        layers = {d.split(":", 1)[0] for d in base[cid].denied_by}
        if ":source-key:" in cid or ":alarm-key:" in cid:  # the guardrail's bearer meets it as well
            assert layers >= {"resource", "scp"}, (cid, base[cid].denied_by)
            bearer = case.who == "engineer" or (case.who == "deploy" and site.guardrail is not None)
            assert ("identity" in layers) == bearer, cid
        elif case.who in ("engineer", "vault"):
            assert layers == {"identity", "scp"}, (cid, base[cid].denied_by)
        elif case.who == "outsider":
            assert layers == {"rcp"}, (cid, base[cid].denied_by)  # no SCP binds an outsider: the RCP is for them
        else:
            assert "scp" in layers, (cid, base[cid].denied_by)


def test_each_new_guard_is_needed(proven: tuple[Site, dict[str, dict[str, SimResult]]]) -> None:
    site, results = proven
    want = cases(site)
    for i, (name, (_mutate, flips)) in enumerate(mutations(site).items()):
        got = {cid: r.decision for cid, r in results[f"m{i}"].items() if r.decision != want[cid].want}
        expected = {cid: d for cid, d in flips.items() if d != want[cid].want}
        assert got == expected, f"{site.example}: {name}: got {got}, expected {expected}"
