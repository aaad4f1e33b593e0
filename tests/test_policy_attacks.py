"""Multi-step attack proofs with a real IAM evaluator (@cloud-copilot/iam-simulate, AGPL-3.0, test-only).

The invariant: every protected action on a replica is denied to every principal but break-glass (and the
legitimate service and deployment paths, tests/attack_world.py) by at least two independent layers, and no principal
but break-glass can remove enough of them, in any order of requests, to get one through.

How it is proven, for both examples:

1. Baseline: every (principal, replica, protected action) is evaluated; non-exempt ones must be denied, by at least
   two layers (named from the deciding statements: table policy, bucket policy, guardrail, SCP, key policy, the
   principal's own policy, or the account boundary for a principal of another account). Legitimate paths must be
   allowed: replication (cross-account), maintenance, recovery reads, deploys, break-glass of every account, and the
   cross-account automation that runs `make harden` / `make audit`.
2. Attack closure: for each actor, in rounds until nothing changes, every escalation it might try is evaluated —
   replace a replica bucket policy, table policy or key policy with an attacker document granting itself
   everything, untag a replica key, rewrite or detach the guardrail, take over a break-glass, deploy or replication
   role (rewrite its trust or delete and re-create it, then assume it). Each success is applied to the world and the
   next round starts from there, so sequences of requests are covered. Then every protected action is evaluated
   again for every identity the actor holds: none may be allowed, and no role may have been taken over.
3. One layer removed (drift, a mistake): every protected action is still denied to everyone non-exempt; the cases
   now resting on a single layer are named (printed; `make proofs` shows them).

Expectations come from the intent in tests/attack_world.py, never from the documents.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from s3tables_kit.policies.simulate import SimRequest, SimResult, errors_of, evaluate, principal_context
from tests import attack_world

pytestmark = pytest.mark.node

MAINT_BASELINE = "world:MaintenanceServiceBaseline"


# ---------------------------------------------------------------- requests ----


@dataclass(frozen=True)
class Target:
    kind: str  # bucket | table | key | iam | assume
    arn: str
    account: str
    site: attack_world.ReplicaSite | None = None
    trust: str | None = None  # assume: document name of the trust policy


def targets_of(site: attack_world.ReplicaSite) -> dict[str, Target]:
    out = {
        "bucket": Target("bucket", site.bucket_arn, site.account, site),
        "table": Target("table", site.table_arn, site.account, site),
    }
    if site.key_arn:
        out["key"] = Target("key", site.key_arn, site.account, site)
    return out


@dataclass
class State:
    """The world as an attacker left it: replaced documents, detached guardrails, untagged keys, identities held."""

    docs: dict[str, Any]
    detached: set[tuple[str, str]] = field(default_factory=set)  # (principal key, guardrail document)
    untagged: set[str] = field(default_factory=set)  # key ARNs
    held: set[str] = field(default_factory=set)
    steps: list[str] = field(default_factory=list)

    def copy(self) -> State:
        return State(copy.deepcopy(self.docs), set(self.detached), set(self.untagged), set(self.held), list(self.steps))


def request(
    world: attack_world.World,
    label: str,
    state: State,
    who: attack_world.Principal,
    action: str,
    target: Target,
    *,
    rid: str,
    context: dict[str, Any] | None = None,
) -> SimRequest:
    def ns(name: str) -> str:
        return name if name.startswith("world:") else f"{label}|{name}"

    ctx = principal_context(who.arn, source_account=target.account)
    identity = [n for n in who.identity if (who.key, n) not in state.detached]
    resource_policies: list[str] = []
    if target.kind in ("bucket", "table"):
        assert target.site is not None
        resource_policies = [target.site.bucket_policy]
        if target.kind == "table":
            resource_policies.append(target.site.table_policy)
        resource_policies.append(MAINT_BASELINE)
    elif target.kind == "key":
        assert target.site is not None and target.site.key_policy and target.site.key_alias
        resource_policies = [target.site.key_policy]
        ctx["kms:ResourceAliases"] = [target.site.key_alias]
        if target.arn not in state.untagged:
            ctx[f"aws:ResourceTag/{attack_world.KEY_TAG}"] = "lakehouse"
    elif target.kind == "assume":
        assert target.trust is not None
        resource_policies = [target.trust]
    ctx.update(context or {})
    full_action = action if ":" in action else f"s3tables:{action}"
    return SimRequest(
        id=rid,
        principal=who.arn,
        action=full_action,
        resource=target.arn,
        resource_account=target.account,
        context=ctx,
        identity_policies=tuple(ns(n) for n in identity),
        scps=tuple(
            type(lvl)(lvl.org_identifier, tuple(ns(n) for n in lvl.policies))
            for lvl in world.scp_levels.get(who.account, ())
        )
        if who.scp
        else (),
        resource_policies=tuple(ns(n) for n in resource_policies),
    )


def run(world: attack_world.World, states: dict[str, State], reqs: list[SimRequest]) -> dict[str, SimResult]:
    policies: dict[str, Any] = dict(world.world_policies())
    for label, state in states.items():
        for name, doc in state.docs.items():
            policies[f"{label}|{name}"] = doc
    results = evaluate(policies, reqs, processes=min(2, os.cpu_count() or 1))
    errors = errors_of(results)
    assert not errors, "simulator rejected requests:\n" + "\n".join(errors[:10])
    return results


# ---------------------------------------------------------------- layers ----


def layers(result: SimResult, who: attack_world.Principal, target: Target) -> set[str]:
    """The independent layers that deny a request, named from the deciding statements."""
    out: set[str] = set()
    for entry in result.denied_by:
        kind, _, rest = entry.partition(":")
        flat = rest.replace("-", "").replace("|", "")
        if kind == "scp":
            out.add("scp")
        elif kind == "identity":
            out.add("guardrail" if "replica-guardrail--" in rest else "own policy")
        elif "replicabucketpolicy" in flat:
            out.add("bucket policy")
        elif "replicatablepolicy" in flat:
            out.add("table policy")
        elif "kmskeypolicy" in flat:
            out.add("key policy")
        else:
            out.add(entry)
    cross_account = bool(who.account) and who.account != target.account
    if cross_account and not result.allowed and target.kind in ("bucket", "table", "key"):
        out.add("account boundary")  # a cross-account request also needs a grant in the resource (or key) policy
    return out


# ---------------------------------------------------------------- protected actions and legitimate paths ----


def protected_cases(world: attack_world.World) -> Iterable[tuple[attack_world.ReplicaSite, str, Target]]:
    for site in world.replicas:
        t = targets_of(site)
        for a in attack_world.PROTECTED_BUCKET:
            yield site, a, t["bucket"]
        for a in attack_world.PROTECTED_TABLE:
            yield site, a, t["table"]
        if "key" in t:
            for a in attack_world.KEY_DESTRUCTIVE:
                yield site, a, t["key"]


def is_legit(
    world: attack_world.World, who: attack_world.Principal, action: str, site: attack_world.ReplicaSite
) -> bool:
    if who.kind == "breakglass":
        return True
    if who.kind == "deploy" and who.account != site.account:
        return False  # a deploy role manages its own account only
    return action in world.legit(who)


def legit_paths(world: attack_world.World) -> list[tuple[attack_world.Principal, str, Target]]:
    """Requests that must be ALLOWED, from the intent."""
    out: list[tuple[attack_world.Principal, str, Target]] = []
    p = world.principals
    for site in world.replicas:
        t = targets_of(site)
        repl = p[world.replication_role]
        out += [
            (repl, a, t["table"]) for a in attack_world.TABLE_WRITE + attack_world.TABLE_RETENTION + ("GetTableData",)
        ]
        out += [(repl, a, t["bucket"]) for a in attack_world.BUCKET_NAMES]
        out += [(p["maint"], a, t["table"]) for a in attack_world.TABLE_WRITE]
        for who in p.values():
            if who.kind == "breakglass":
                out += [(who, a, t["bucket"]) for a in attack_world.PROTECTED_BUCKET + attack_world.HARDEN_AUDIT_BUCKET]
                out += [(who, a, t["table"]) for a in attack_world.PROTECTED_TABLE + attack_world.HARDEN_AUDIT_TABLE]
                if "key" in t:
                    out += [(who, a, t["key"]) for a in (*attack_world.KEY_DESTRUCTIVE, "kms:Decrypt")]
            if who.kind == "deploy" and who.account == site.account:
                # a later deploy refreshes what it deployed (locked after the first deploy: it changes none of it)
                out += [
                    (who, a, t["bucket"])
                    for a in ("GetTableBucket", "GetTableBucketPolicy", "GetTableBucketEncryption")
                ]
        if "key" in t:
            out += [(repl, a, t["key"]) for a in ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")]
    recovery = p["recovery"]
    rec_site = world.replicas[0]
    rt = targets_of(rec_site)
    out += [(recovery, a, rt["table"]) for a in ("GetTable", "GetTableMetadataLocation", "GetTableData")]
    out += [(recovery, a, rt["bucket"]) for a in ("GetTableBucket", "ListNamespaces", "ListTables")]
    if "key" in rt:
        out.append((recovery, "kms:Decrypt", rt["key"]))
    unique: dict[tuple[str, str, str], tuple[attack_world.Principal, str, Target]] = {}
    for who, action, target in out:
        unique.setdefault((who.key, action, target.arn), (who, action, target))
    return list(unique.values())


# ---------------------------------------------------------------- the attack closure ----

ATTACKER_DOC = "attacker"


def _allow_all(principals: list[str], actions: str, resources: list[str]) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "AttackerAllowsItself", "Effect": "Allow", "Principal": {"AWS": principals}, "Action": actions,
             "Resource": resources}
        ],
    }  # fmt: skip


def _harmless() -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": "Rewritten", "Effect": "Allow", "Action": "s3tables:ListTableBuckets", "Resource": "*"}],
    }


def privileged(world: attack_world.World) -> list[attack_world.Principal]:
    return [x for x in world.principals.values() if x.kind in ("breakglass", "deploy", "replication")]


def escalations(world: attack_world.World, state: State, label: str) -> list[tuple[SimRequest, str, Any]]:
    """(request, effect, argument) for every escalation each held identity may try."""
    out: list[tuple[SimRequest, str, Any]] = []
    n = 0

    def add(who: attack_world.Principal, action: str, target: Target, effect: str, arg: Any, **ctx: Any) -> None:
        nonlocal n
        n += 1
        out.append((request(world, label, state, who, action, target, rid=f"{label}#{n}", context=ctx), effect, arg))

    for key in sorted(state.held):
        who = world.principals[key]
        for site in world.replicas:
            t = targets_of(site)
            add(who, "PutTableBucketPolicy", t["bucket"], "replace", (site.bucket_policy, "bucket", site))
            add(who, "PutTablePolicy", t["table"], "replace", (site.table_policy, "table", site))
            if "key" in t:
                add(who, "kms:PutKeyPolicy", t["key"], "replace", (site.key_policy, "key", site))
                add(
                    who, "kms:UntagResource", t["key"], "untag", site.key_arn, **{"aws:TagKeys": [attack_world.KEY_TAG]}
                )
        for doc, arn in world.guardrail_arns.items():
            account = arn.split(":")[4]
            if account == who.account:
                add(who, "iam:CreatePolicyVersion", Target("iam", arn, account), "rewrite-guardrail", doc)
        if who.guardrail:
            own = Target("iam", who.arn, who.account)
            add(who, "iam:DetachRolePolicy", own, "detach", (who.key, who.guardrail),
                **{"iam:PolicyARN": world.guardrail_arns[who.guardrail]})  # fmt: skip
        for role in privileged(world):
            if role.key in state.held or role.account != who.account:
                continue  # IAM is account-local
            for action in ("iam:UpdateAssumeRolePolicy", "iam:DeleteRole"):
                add(who, action, Target("iam", role.arn, role.account), "takeover-step", (who.key, role.key))
            # Assuming it once its trust names the attacker (the trust document is then the attacker's).
            trust = f"trust-of-{role.key}-for-{who.key}"
            state.docs[trust] = {
                "Version": "2012-10-17",
                "Statement": [{"Sid": "AttackerTrust", "Effect": "Allow", "Principal": {"AWS": who.arn},
                               "Action": "sts:AssumeRole"}],
            }  # fmt: skip
            add(
                who,
                "sts:AssumeRole",
                Target("assume", role.arn, role.account, trust=trust),
                "assume",
                (who.key, role.key),
            )
    return out


def _apply(world: attack_world.World, state: State, req: SimRequest, effect: str, arg: Any) -> str | None:
    """Apply one allowed state-changing escalation to `state`; the step it records, or None when it changes nothing
    (the document already the attacker's, the tag already off, the guardrail already harmless, the policy detached)."""
    if effect == "replace":
        name, kind, site = arg
        if state.docs.get(name, {}).get("Statement", [{}])[0].get("Sid") == "AttackerAllowsItself":
            return None
        held_arns = sorted(world.principals[k].arn for k in state.held)
        if kind == "key":
            state.docs[name] = _allow_all(held_arns, "kms:*", ["*"])
        else:
            arn = site.bucket_arn if kind == "bucket" else site.table_arn
            state.docs[name] = _allow_all(held_arns, "s3tables:*", [arn, arn + "/*"])
    elif effect == "untag" and arg not in state.untagged:
        state.untagged.add(arg)
    elif effect == "rewrite-guardrail" and state.docs[arg] != _harmless():
        state.docs[arg] = _harmless()
    elif effect == "detach" and arg not in state.detached:
        state.detached.add(arg)
        return f"{req.principal} {req.action} {arg[1]}"
    else:
        return None
    return f"{req.principal} {req.action} {req.resource}"


def attack(world: attack_world.World, actor: str, base: State, max_rounds: int = 6) -> State:
    state = base.copy()
    state.held = {actor}
    for rnd in range(max_rounds):
        label = f"{actor}-r{rnd}"
        tries = escalations(world, state, label)
        results = run(world, {label: state}, [r for r, _, _ in tries])
        changed = False
        taken: set[tuple[str, str]] = set()  # (holder, role): the holder may rewrite or re-create the role
        assumable: set[tuple[str, str]] = set()  # (holder, role): ... and then assume it
        for req, effect, arg in tries:
            if not results[req.id].allowed:
                continue
            if effect == "takeover-step":
                taken.add(arg)
            elif effect == "assume":
                assumable.add(arg)
            elif (step := _apply(world, state, req, effect, arg)) is not None:
                state.steps.append(step)
                changed = True
        for _holder, role in sorted(taken & assumable):
            state.held.add(role)
            state.steps.append(f"took over {world.principals[role].arn}")
            changed = True
        if not changed:
            return state
    raise AssertionError(f"{actor}: the attack did not settle in {max_rounds} rounds: {state.steps}")


# ---------------------------------------------------------------- fixtures ----


@pytest.fixture(scope="module", params=sorted(attack_world.WORLDS))
def world(request: pytest.FixtureRequest) -> attack_world.World:
    return attack_world.WORLDS[request.param]


@pytest.fixture(scope="module")
def base(world: attack_world.World) -> State:
    return State(world.kit_documents())


Case = tuple[str, str, str, str, str]  # (state label, principal, replica site, action, target kind)
Outcomes = dict[Case, tuple[attack_world.Principal, Target, SimResult]]


def evaluate_protected(
    world: attack_world.World, states: dict[str, State], principals: dict[str, Iterable[str]]
) -> Outcomes:
    """Every protected case for the named principals under each state: {(label, principal, site, action, kind)}."""
    reqs: list[SimRequest] = []
    meta: dict[str, tuple[Case, attack_world.Principal, Target]] = {}
    for label, state in states.items():
        for key in principals[label]:
            who = world.principals[key]
            for site, action, target in protected_cases(world):
                if is_legit(world, who, action, site):
                    continue
                rid = f"{label}|{key}|{site.key}|{action}|{target.kind}"
                reqs.append(request(world, label, state, who, action, target, rid=rid))
                meta[rid] = ((label, key, site.key, action, target.kind), who, target)
    results = run(world, states, reqs)
    return {k: (who, target, results[rid]) for rid, (k, who, target) in meta.items()}


NON_BREAK_GLASS = lambda world: [k for k, p in world.principals.items() if p.kind != "breakglass"]  # noqa: E731


@pytest.fixture(scope="module")
def baseline(world: attack_world.World, base: State) -> Outcomes:
    return evaluate_protected(world, {"base": base}, {"base": NON_BREAK_GLASS(world)})


# ---------------------------------------------------------------- 1. baseline ----


def test_every_protected_action_is_denied_by_two_layers(world: attack_world.World, baseline: dict[Any, Any]) -> None:
    allowed = [k for k, (_w, _t, r) in baseline.items() if r.allowed]
    assert not allowed, f"{world.example}: protected actions ALLOWED: {allowed[:20]}"
    thin = {
        k: sorted(layers(r, who, t))
        for k, (who, t, r) in baseline.items()
        if not who.is_service and len(layers(r, who, t)) < 2
    }
    # The deploy role's locked bucket-level changes: the self-protecting bucket policy alone (decision 0028).
    locked = {
        k: v for k, v in thin.items() if k[3] in attack_world.LOCKED_BY_BUCKET_POLICY and k[1].startswith("deploy")
    }
    assert all("bucket policy" in v for v in locked.values()), locked
    thin = {k: v for k, v in thin.items() if k not in locked}
    assert not thin, f"{world.example}: protected actions resting on fewer than two layers: {thin}"
    # A service principal acts only on AWS's own schedule, not at anyone's request: one layer, still denied.
    services = [k for k, (who, _t, r) in baseline.items() if who.is_service and r.allowed]
    assert not services


def expected_layers(who: attack_world.Principal, target: Target, action: str = "") -> set[str]:
    """The layers the design puts in front of a non-exempt principal for a protected bucket or table action (from
    the intent: every layer carries every protected action): both resource policies (the table policy only for a
    table), the SCP if its account is under it, the guardrail if attached (a guardrail names the replicas of its
    own account only). In another account than the replica, the account boundary replaces the guardrail, and a
    deploy role (exempt from the deploy-managed settings in every account's SCP) is held there by the resource
    policies and the boundary."""
    out = {"bucket policy"} | ({"table policy"} if target.kind == "table" else set())
    same_account = who.account == target.account
    if attack_world.locked_by_resource_policies_only(who, action):  # decision 0028: the resource policies are the lock
        return out | (set() if same_account else {"account boundary"})
    if who.scp and (same_account or who.kind != "deploy"):
        out.add("scp")
    if who.guardrail and same_account:
        out.add("guardrail")
    if not same_account:
        out.add("account boundary")
    return out


def missing_layers(outcomes: Outcomes, actions: Iterable[str] | None = None) -> dict[Case, list[str]]:
    """{case: layers the design promises that did not deny it}, for bucket and table cases of non-service
    principals (optionally only the named actions)."""
    wanted = set(actions) if actions is not None else None
    out: dict[Case, list[str]] = {}
    for k, (who, t, r) in outcomes.items():
        if who.is_service or t.kind not in ("bucket", "table") or (wanted is not None and k[3] not in wanted):
            continue
        gap = expected_layers(who, t, k[3]) - layers(r, who, t)
        if gap:
            out[k] = sorted(gap)
    return out


def test_every_layer_denies_every_protected_action(world: attack_world.World, baseline: Outcomes) -> None:
    """Stronger than two layers: each layer that applies to a principal carries every protected action, so no
    layer's copy of a rule can silently go missing (DisassociateTableReplication, bucket logging, tags)."""
    gaps = missing_layers(baseline)
    assert not gaps, f"{world.example}: layers that do not deny a protected action: {dict(list(gaps.items())[:20])}"


NEW_ACTION_SIDS = {  # layer -> (document name prefix, Sid carrying DisassociateTableReplication in that layer)
    "bucket policy": ("replica-bucket-policy--", "DenyReplicaReplicationChange"),
    "table policy": ("replica-table-policy--", "DenyReplicaReplicationChange"),
    "guardrail": (
        "replica-guardrail--",
        "DenyReplicaDeletionAndRetentionChangeAndDataWriteAndReplicationChangeAndNameSquatting",
    ),
    "scp": ("scp-protect-replicas", "DenyReplicaDeletionAndReplicationChange"),
}


def test_disassociation_is_denied_to_everyone_but_break_glass_by_two_layers(
    world: attack_world.World, base: State
) -> None:
    """Every non-exempt principal gets an explicit deny for DisassociateTableReplication on
    every replica from at least two layers (every layer that applies to it), and break-glass is allowed."""
    action = "DisassociateTableReplication"
    outcomes = evaluate_protected(world, {"base": base}, {"base": NON_BREAK_GLASS(world)})
    mine = {k: v for k, v in outcomes.items() if k[3] == action}
    assert len(mine) == len(world.replicas) * len(NON_BREAK_GLASS(world))
    for k, (who, t, r) in mine.items():
        assert r.decision == "ExplicitlyDenied", (k, r.decision)
        if not who.is_service:
            assert len(layers(r, who, t) - {"account boundary", "own policy"}) >= 2, (k, r.denied_by)
    assert missing_layers(mine) == {}
    reqs = [
        request(world, "base", base, who, action, targets_of(site)["table"], rid=f"{who.key}|{site.key}")
        for who in world.principals.values()
        if who.kind == "breakglass"
        for site in world.replicas
    ]
    results = run(world, {"base": base}, reqs)
    assert reqs and all(r.allowed for r in results.values()), {r.id: r.decision for r in results.values()}


@pytest.mark.parametrize("layer", sorted(NEW_ACTION_SIDS))
def test_removing_the_disassociation_deny_from_one_layer_fails_the_proof(
    world: attack_world.World, base: State, layer: str
) -> None:
    """The proof above is not vacuous: drop DisassociateTableReplication from ONE layer's statement and the
    every-layer proof names exactly that layer as missing for the principals it binds."""
    prefix, sid = NEW_ACTION_SIDS[layer]
    state = base.copy()
    touched = 0
    for name, doc in state.docs.items():
        if name.startswith(prefix):
            for stmt in doc["Statement"]:
                # an allow-list (`NotAction`) statement names what it leaves alone: it carries no action to drop
                acts = stmt.get("Action", [])
                acts = acts if isinstance(acts, list) else [acts]
                if stmt.get("Sid") == sid and "s3tables:DisassociateTableReplication" in acts:
                    stmt["Action"] = [a for a in acts if a != "s3tables:DisassociateTableReplication"]
                    touched += 1
    assert touched, f"{layer}: no statement {sid} carries the action (renamed?)"
    outcomes = evaluate_protected(world, {"cut": state}, {"cut": NON_BREAK_GLASS(world)})
    gaps = missing_layers(outcomes, ["DisassociateTableReplication"])
    if layer == "guardrail" and not any(p.guardrail for p in world.principals.values()):
        # the seed world models no principal carrying the guardrail (Terraform runs as an administrator): the
        # guardrail binds nobody there, so its removal cannot show; the multi-account world proves it
        assert world.example == "seed" and gaps == {}
        return
    assert gaps, f"{world.example}: removing the deny from the {layer} went unnoticed"
    assert {g for gap in gaps.values() for g in gap} == {layer}
    # ... and only for that action: every other protected action still meets every layer.
    assert missing_layers({k: v for k, v in outcomes.items() if k[3] != "DisassociateTableReplication"}) == {}


def test_migration_cannot_create_or_fill_a_table_in_a_replica_bucket() -> None:
    """Table migration (StartTableMigration ... CompleteTableMigration) writes its target through the migration
    role's CreateTable / UpdateTableMetadataLocation / PutTableData: in a replica bucket they are denied to that role
    by every layer (name squatting, data writes), so migration cannot take a name replication will need."""
    world = attack_world.WORLDS["multi-account"]
    state = State(world.kit_documents())
    who = world.principals["migration222"]
    reqs, meta = [], {}
    for site in world.replicas:
        t = targets_of(site)
        for a in ("CreateTable", "UpdateTableMetadataLocation", "PutTableData"):
            target = t["bucket"] if a == "CreateTable" else t["table"]
            rid = f"{site.key}|{a}"
            reqs.append(request(world, "base", state, who, a, target, rid=rid))
            meta[rid] = target
    results = run(world, {"base": state}, reqs)
    for rid, target in meta.items():
        r = results[rid]
        assert r.decision == "ExplicitlyDenied", (rid, r.decision)
        assert expected_layers(who, target) <= layers(r, who, target), (rid, r.denied_by)


def test_legitimate_paths_work(world: attack_world.World, base: State) -> None:
    paths = legit_paths(world)
    reqs = [
        request(world, "base", base, who, action, target, rid=f"{who.key}|{action}|{target.arn}")
        for who, action, target in paths
    ]
    results = run(world, {"base": base}, reqs)
    broken = {r.id: (r.decision, r.denied_by) for r in results.values() if not r.allowed}
    assert not broken, f"{world.example}: legitimate paths broken: {broken}"
    assert len(reqs) >= 40


def test_cross_account_automation_runs_harden_and_audit() -> None:
    """The multi-account example's automation principal (in the management account) reaches every replica, in
    both replica accounts, for what `make harden` and `make audit` call."""
    world = attack_world.WORLDS["multi-account"]
    state = State(world.kit_documents())
    auto = world.principals["automation444"]
    reqs = []
    for site in world.replicas:
        t = targets_of(site)
        reqs += [
            request(world, "base", state, auto, a, t["bucket"], rid=f"{site.key}|{a}")
            for a in attack_world.HARDEN_AUDIT_BUCKET
        ]
        reqs += [
            request(world, "base", state, auto, a, t["table"], rid=f"{site.key}|{a}")
            for a in attack_world.HARDEN_AUDIT_TABLE
        ]
    results = run(world, {"base": state}, reqs)
    assert {r.id: r.decision for r in results.values() if not r.allowed} == {}
    assert {s.account for s in world.replicas} == {"222222222222", "333333333333"}


# ---------------------------------------------------------------- 2. attacks in sequence ----


def attackers(world: attack_world.World) -> list[str]:
    return [k for k, p in world.principals.items() if p.kind not in ("breakglass", "maintenance")]


def test_no_actor_gets_a_protected_action_through_in_any_order(world: attack_world.World, base: State) -> None:
    outcomes = {actor: attack(world, actor, base) for actor in attackers(world)}
    takeovers = {a: sorted(s.held - {a}) for a, s in outcomes.items() if s.held != {a}}
    assert not takeovers, f"{world.example}: roles taken over: {takeovers}"
    final = evaluate_protected(world, {a: s for a, s in outcomes.items()}, {a: s.held for a, s in outcomes.items()})
    through = {k: outcomes[k[0]].steps for k, (_w, _t, r) in final.items() if r.allowed}
    assert not through, f"{world.example}: protected actions allowed after the attacker's steps: {through}"
    # Locked after the first deploy (decision 0028): a deploy role replaces nothing, its chain stops at step 1.
    for actor, state in outcomes.items():
        if world.principals[actor].kind == "deploy":
            assert not state.steps, f"{actor} replaced a document of a deployed replica: {state.steps}"
    standing = {
        k: sorted(layers(r, who, t)) for k, (who, t, r) in final.items() if not who.is_service and not layers(r, who, t)
    }
    assert not standing, f"denied without a named layer: {standing}"


# ---------------------------------------------------------------- 3. one layer removed ----

LAYER_DOCS = {
    "bucket policy": lambda name: name.startswith("replica-bucket-policy--"),
    "table policy": lambda name: name.startswith("replica-table-policy--"),
    "guardrail": lambda name: name.startswith("replica-guardrail--"),
    "scp": lambda name: name.startswith("scp-"),
    "key policy": lambda name: name.startswith("kms-key-policy--lakehouse-replica"),
}


def without(base: State, layer: str) -> State:
    state = base.copy()
    for name in list(state.docs):
        if LAYER_DOCS[layer](name):
            state.docs[name] = {
                "Version": "2012-10-17",
                "Statement": [{"Sid": "LayerRemoved", "Effect": "Allow", "Action": "*", "Resource": "*"}]
                if layer in ("guardrail", "scp")
                else [
                    {"Sid": "LayerRemoved", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::999999999999:root"},
                     "Action": "s3tables:GetTableBucket", "Resource": "*"}
                ],
            }  # fmt: skip
    return state


def test_removing_any_one_layer_keeps_every_protected_action_denied(world: attack_world.World, base: State) -> None:
    present = [layer for layer, match in LAYER_DOCS.items() if any(match(n) for n in base.docs)]
    states = {layer.replace(" ", "-"): without(base, layer) for layer in present}
    results = evaluate_protected(world, states, {label: NON_BREAK_GLASS(world) for label in states})
    # The maintenance service is held by the replica's resource policies alone (SCPs and identity policies never
    # bind a service principal; the harness grants it s3tables:* as a pessimistic stand-in for AWS's own
    # authorisation), so it is outside this count: it acts on AWS's schedule, not at anyone's request.
    allowed = sorted(k for k, (who, _t, r) in results.items() if r.allowed and not who.is_service)
    # Decision 0028: with the bucket policy gone (drift), the deploy role's locked bucket-level changes are its
    # first-deploy permissions again; nothing destructive (deleting a policy or the encryption is a deletion).
    unlocked = [k for k in allowed if k[0] == "bucket-policy" and k[3] in attack_world.LOCKED_BY_BUCKET_POLICY]
    assert all(k[1].startswith("deploy") for k in unlocked), unlocked
    allowed = [k for k in allowed if k not in unlocked]
    assert not allowed, f"{world.example}: one layer removed lets through: {allowed[:20]}"
    single = sorted(
        f"{k[0]} removed: {k[1]} {k[3]} on {k[2]} rests on {sorted(layers(r, who, t))}"
        for k, (who, t, r) in results.items()
        if not who.is_service and len(layers(r, who, t)) == 1
    )
    print(f"\n{world.example}: {len(single)} cases rest on one layer once a layer is removed")
    for line in single:
        print("  " + line)
    # Every removal leaves some cases on one layer (two is the design, not more everywhere), and every layer
    # removed is load-bearing for at least one case.
    assert {line.split(" removed")[0] for line in single} <= set(states)


def test_at_least_a_thousand_requests_across_both_examples() -> None:
    n = 0
    for world in attack_world.WORLDS.values():
        cases = list(protected_cases(world))
        n += len(cases) * len(NON_BREAK_GLASS(world)) * (1 + len(LAYER_DOCS))  # baseline + one per removed layer
        n += len(legit_paths(world))
    assert n >= 1000, n
