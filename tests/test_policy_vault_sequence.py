"""Attacks in sequence on the backup vault, with the IAM simulator (the vault's part of the attack closure of
tests/test_policy_attacks.py, whose world holds the replicas only).

The world: the seed with its vault beside the recovery replica, `[vault] tables` scheduled and the scheduled hardener
on (`[assurance.harden]`, its role a class of its own, no break-glass); the kit's SCPs on the account's OU and
the vault SCP on the account itself (the seed's vault and recovery account are one: its administrator is both). The
actors are every principal that can act there: an administrator (AdministratorAccess, the worst case), the vault's
deploy role and the hardener (AdministratorAccess each), the kit's roles with their own documents (recovery,
replication monitor, backup schedule, backup), and break-glass itself (AdministratorAccess). What they aim at:

* the vault bucket's settings (bucket policy, Object Lock configuration, lifecycle, encryption, versioning, the
  bucket itself), a locked version's deletion or a shorter retention, any write (the backup role's alone);
* the vault key's policy, its disabling and deletion;
* the backup role itself: whoever acts as it writes the vault (a forged backup point, a restore of the attacker's
  data). Its trust, its identity policies, and passing it to EMR Serverless (its trust admits job runs of the kit's
  application, so a job run started with it is code running as it) are break-glass's, passing it the schedule's too.
  So are the paths through the schedule's legitimate pass: rewriting (or deleting and re-creating) the schedule
  `seed-vault-backup`, a schedule of one's own with the schedule's role (its trust admits every schedule of the
  default group), and overwriting what the scheduled run executes (the scripts bucket's `scheduled/` prefix); the
  same for the recovery rehearsal's schedule, its role and its artifacts, which run as the recovery role. Those are
  also the recovery stack's deploy role's (it deploys the schedules and uploads the artifacts), which the seed has not.

Each actor tries, in rounds until nothing changes, every escalation it may: replace the vault bucket policy or the
key policy with one granting itself everything, untag the key (out of the SCP's tag-matched key guard), replace the
backup role's identity policy, take over the backup role, the backup schedule role or break-glass (rewrite its
trust or delete and re-create it, then assume it; for the backup role also: pass it to a job run, rewrite its
schedule, pass the schedule's role to a schedule of its own, overwrite its scheduled artifacts). Each success is
applied and the next round starts from there, so every order of those steps is covered. Then every protected action
is evaluated for every identity the actor holds. The SCPs themselves live in the management account, out of reach.
Break-glass may take over the backup and schedule roles (the rescue path) but, with every identity it gathers, it
gets nothing that outlives it: no backup deleted, hidden, replaced, shadowed by a second version, re-encrypted,
archived, replicated into or locked beyond the ceiling, no vault setting or key state changed, no alias moved, no
scheduled artifact replicated into or rolled back, the application never deleted (`DURABLE`). Every other actor also
gets none of the guarded paths (`guarded`: a job run, the backup role, the schedules, an application update).
Object Lock's own refusal (a locked version's deletion) is the stand-in's proof (tests/test_vault_standin.py).
Mutations: the backup role's guards removed one at a time, the closure finds its takeover, and so with each guard of
the schedules and the scheduled artifacts removed; each of the vault's allow-lists removed (`LEAKS`), the closure
finds the action it kept from its attacker. All actors of all variants are evaluated in one simulator batch a round.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from s3tables_kit.policies.docset import build
from s3tables_kit.policies.simulate import SimRequest, SimResult, errors_of, evaluate
from s3tables_kit.topology.config import parse_config
from tests.test_policy_vault_proofs import (
    ACCOUNT,
    ACCOUNT_SCPS,
    ADMIN_ACCESS,
    BUCKET,
    JOBS_SCP,
    KEY,
    OBJECT,
    ONCE,
    SCPS,
    SETTINGS,
    TLS,
    VAULT_SCP,
    WORLD,
    drop,
    vault_request,
)
from tests.test_vault_config import VAULT, with_vault

pytestmark = pytest.mark.node


def role(name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{name}"


BACKUP = role("seed-s3tables-backup")
HARDENER = role("seed-replica-hardener")
ALIAS = f"arn:aws:kms:us-west-2:{ACCOUNT}:alias/seed-seed-backup-vault-111122223333-us-west-2"
POINT_KEY = KEY.replace("5e1f2a3b", "9a8b7c6d")  # the point key (KMS HMAC): a MAC of one's own is a forged point
POINT_ALIAS = f"arn:aws:kms:us-west-2:{ACCOUNT}:alias/seed-vault-points"
SCHEDULE = role("seed-vault-backup-schedule")
BREAK_GLASS = role("s3tables-break-glass")
REHEARSAL_SCHEDULE = role("seed-recovery-rehearsal-schedule")
SCHEDULER_ARN = "arn:aws:scheduler:us-west-2:111122223333"


def schedule(name: str) -> str:
    """A scheduled job run's schedule, in the schedule group of its name."""
    return f"{SCHEDULER_ARN}:schedule/{name}/{name}"


SCRIPTS = "arn:aws:s3:::seed-recovery-111122223333-us-west-2"
ARTIFACTS = f"{SCRIPTS}/scheduled/*"  # what the pipeline SCP guards: every scheduled run's entry, zip and jars
SCHEDULER = "scheduler.amazonaws.com"
APPLICATION = f"arn:aws:emr-serverless:us-west-2:{ACCOUNT}:/applications/00fkitapp"
EMR = "emr-serverless.amazonaws.com"
BUCKET_POLICY, KEY_POLICY, BACKUP_POLICY = "vault-bucket-policy", "kms-key-policy--vault", "backup-role-permissions"
POINT_KEY_POLICY = "kms-key-policy--vault-points"
SCRIPTS_POLICY, PIPELINE_SCP, SCHEDULED_SID = "scripts-bucket-policy", "scp-protect-pipeline", "DenyScheduledJobChange"
# {actor: (ARN, identity policies)}
PRINCIPALS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": (role("Administrator"), (ADMIN_ACCESS,)),
    "deploy": (role("vault-deploy"), (ADMIN_ACCESS,)),
    "hardener": (HARDENER, (ADMIN_ACCESS,)),  # its code or its policy taken over: an exempt ARN, not a person
    "recovery": (role("seed-s3tables-recovery"), ("recovery-role-permissions",)),
    "monitor": (role("seed-replication-monitor"), ("monitor-role-permissions",)),
    "schedule": (SCHEDULE, ("backup-schedule-role-permissions",)),
    "backup": (BACKUP, (BACKUP_POLICY,)),
    "breakglass": (BREAK_GLASS, (ADMIN_ACCESS,)),
}
ACTORS = tuple(PRINCIPALS)
TAKEN_OVER = ("backup", "schedule", "breakglass")  # roles an attacker would become
# What each actor holds from the start: the schedule's role starts job runs as the backup role by design.
INITIAL = {a: {a, "backup"} if a == "schedule" else {a} for a in ACTORS}
ROLE_EDITS = (
    "iam:PutRolePolicy",
    "iam:AttachRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
    "iam:PutRolePermissionsBoundary",
    "iam:DeleteRolePermissionsBoundary",
)
OBJECT_ACTIONS = (
    "s3:DeleteObjectVersion",
    "s3:DeleteObject",
    "s3:BypassGovernanceRetention",
    "s3:PutObjectLegalHold",
    "s3:PutObjectRetention",
    "s3:PutObject",
)
KEY_ACTIONS = ("kms:PutKeyPolicy", "kms:DisableKey", "kms:ScheduleKeyDeletion")


@dataclass(frozen=True)
class Try:
    """One request of the world: (action, resource, its kind, extra context)."""

    action: str
    resource: str
    kind: str  # vault | key | points | alias | iam | assume | app | schedule | scripts
    context: tuple[tuple[str, Any], ...] = ()


PASS_BACKUP = Try("iam:PassRole", BACKUP, "iam", (("iam:PassedToService", EMR),))
START_JOB_RUN = Try("emr-serverless:StartJobRun", APPLICATION, "app", (("aws:ResourceTag/kit", "seed"),))
REPLACE_KEY_POLICY = Try("kms:PutKeyPolicy", KEY, "key")
FORGE_POINT = Try("kms:GenerateMac", POINT_KEY, "points")
REWRITE_BACKUP_SCHEDULE = Try("scheduler:UpdateSchedule", schedule("seed-vault-backup"), "schedule")
OVERWRITE_BACKUP_ENTRY = Try("s3:PutObject", f"{SCRIPTS}/scheduled/backup_entry.py", "scripts")


def pass_schedule_role(arn: str) -> Try:
    return Try("iam:PassRole", arn, "iam", (("iam:PassedToService", SCHEDULER),))


# The rehearsal's schedule runs as the recovery role (which reads the vault): not a way to the backup role, but
# guarded alike, so every holder must be denied its rewriting, its role and its artifacts.
REHEARSAL_PATHS = (
    Try("scheduler:UpdateSchedule", schedule("seed-recovery-rehearsal"), "schedule"),
    Try("scheduler:DeleteSchedule", schedule("seed-recovery-rehearsal"), "schedule"),
    Try("scheduler:DeleteSchedule", schedule("seed-vault-backup"), "schedule"),
    Try("scheduler:DeleteScheduleGroup", f"{SCHEDULER_ARN}:schedule-group/seed-recovery-rehearsal", "schedule"),
    Try("scheduler:DeleteScheduleGroup", f"{SCHEDULER_ARN}:schedule-group/seed-vault-backup", "schedule"),
    Try("s3:PutObject", f"{SCRIPTS}/scheduled/rehearse_entry.py", "scripts"),
    Try("s3:PutObject", f"{SCRIPTS}/scheduled/jobs.zip", "scripts"),
    pass_schedule_role(REHEARSAL_SCHEDULE),
)


SHADOW: tuple[tuple[str, Any], ...] = (("s3:ObjectCreationOperation", "true"),)  # a write without If-None-Match
COMPLIANCE = (("s3:object-lock-mode", "COMPLIANCE"),)
APP = (("aws:ResourceTag/kit", "seed"),)
SCHEDULED = f"{SCRIPTS}/scheduled/backup_entry.py"
# What nobody may do, break-glass and every identity it gathers included: the vault outlives every principal.
DURABLE = (
    *(Try(a, BUCKET, "vault") for a in SETTINGS),
    *(
        Try(a, BUCKET, "vault")
        for a in (
            "s3:PutIntelligentTieringConfiguration",
            "s3:PutBucketRequestPayment",
            "s3:PutReplicationConfiguration",
        )
    ),
    *(
        Try(a, OBJECT, "vault")
        for a in (
            "s3:DeleteObject",
            "s3:DeleteObjectVersion",
            "s3:BypassGovernanceRetention",
            "s3:UpdateObjectEncryption",
            "s3:ReplicateObject",
            "s3:ReplicateDelete",
            "s3:ReplicateTags",
            "s3:PutObjectAcl",
            "s3:PutObjectTagging",
        )
    ),
    Try("s3:PutObject", OBJECT, "vault", SHADOW),  # a second version under a backup's key
    Try(  # a retain-until date far beyond the configured retention
        "s3:PutObjectRetention", OBJECT, "vault", (*COMPLIANCE, ("s3:object-lock-remaining-retention-days", "3650"))
    ),
    *(Try(a, KEY, "key") for a in (*KEY_ACTIONS, "kms:CreateGrant", "kms:UpdateAlias", "kms:DeleteAlias")),
    Try("kms:UpdateAlias", ALIAS, "alias"),  # the alias moved, the roles' grants (by alias) follow it
    *(Try(a, POINT_KEY, "points") for a in (*KEY_ACTIONS, "kms:CreateGrant", "kms:UpdateAlias", "kms:DeleteAlias")),
    Try("kms:UpdateAlias", POINT_ALIAS, "alias"),
    Try("s3:ReplicateObject", SCHEDULED, "scripts"),
    Try("s3:DeleteObjectVersion", SCHEDULED, "scripts"),  # an artifact rolled back
    Try("emr-serverless:DeleteApplication", APPLICATION, "app", APP),
)


def guarded(holder: str) -> list[Try]:
    """What only the reviewed classes may do (break-glass, the deployers, the schedules), so every other actor must
    never get, with the holder's own legitimate actions left out (the backup role writes once, the schedule passes
    the backup role and starts job runs)."""
    out = [
        Try(a, OBJECT, "vault", COMPLIANCE if a == "s3:PutObjectRetention" else ())
        for a in ("s3:PutObjectLegalHold", "s3:PutObjectRetention", "s3:PutObject")
        if not (holder == "backup" and a in ("s3:PutObject", "s3:PutObjectRetention"))
    ]
    out += [Try(a, BACKUP, "iam") for a in ("iam:UpdateAssumeRolePolicy", "iam:DeleteRole", *ROLE_EDITS)]
    out += [Try(f"emr-serverless:{a}", APPLICATION, "app", APP) for a in ("UpdateApplication", "StopApplication")]
    if holder != "schedule":
        out += [PASS_BACKUP, START_JOB_RUN]
    return out + list(REHEARSAL_PATHS)


# Break-glass ARNs: break-glass, and the hardener as long as its role is one by configuration (it then takes over
# break-glass through the privileged roles' break-glass exemption, which is not the vault's to narrow): for them the
# vault holds what outlives every principal.
BREAK_GLASS_ARNS = ("breakglass", "hardener")


def protected(actor: str, holder: str) -> list[Try]:
    """`DURABLE`; a point's MAC for every identity but the backup role's (break-glass's own included: it writes a
    point only as the backup role, its rescue path); the guarded paths for all but break-glass ARNs."""
    forge = [] if holder == "backup" else [FORGE_POINT]
    return list(DURABLE) + forge + ([] if actor in BREAK_GLASS_ARNS else guarded(holder))


@dataclass
class State:
    docs: dict[str, Any]
    held: set[str]
    untagged: bool = False
    steps: list[str] = field(default_factory=list)


def request(rid: str, label: str, state: State, holder: str, t: Try) -> SimRequest:
    arn, identity = PRINCIPALS[holder]
    ctx: dict[str, Any] = {**dict(TLS), **dict(t.context)}
    resource_policies: tuple[str, ...] = ()
    if t.kind == "vault":
        resource_policies = (BUCKET_POLICY,)
    elif t.kind in ("key", "points"):
        resource_policies = (KEY_POLICY if t.kind == "key" else POINT_KEY_POLICY,)
        alias = ALIAS if t.kind == "key" else POINT_ALIAS
        ctx["kms:ResourceAliases"] = [alias.split(":", 5)[5]]
        if not state.untagged:
            ctx["aws:ResourceTag/s3tables-kit-replica-key"] = "seed"
    elif t.kind == "assume":
        resource_policies = (f"trust-for-{holder}",)
    elif t.kind == "scripts":
        resource_policies = (SCRIPTS_POLICY,)
    elif t.kind == "alias":
        ctx["kms:ResourceAliases"] = [t.resource.split(":", 5)[5]]
    return vault_request(rid, label, arn, identity, t.action, t.resource, ctx, resource_policies)


def _allow_all(arns: Iterable[str], actions: str, resources: list[str], principal: bool = True) -> dict[str, Any]:
    s: dict[str, Any] = {"Sid": "AttackerAllowsItself", "Effect": "Allow", "Action": actions, "Resource": resources}
    if principal:
        s["Principal"] = {"AWS": sorted(arns)}
    return {"Version": "2012-10-17", "Statement": [s]}


# (escalation, its requests: all allowed for it to succeed)
ESCALATIONS: dict[str, tuple[Try, ...]] = {
    "replace the vault bucket policy": (Try("s3:PutBucketPolicy", BUCKET, "vault"),),
    "replace the vault key policy": (REPLACE_KEY_POLICY,),
    "replace the point key policy": (Try("kms:PutKeyPolicy", POINT_KEY, "points"),),
    "untag the vault key": (Try("kms:UntagResource", KEY, "key", (("aws:TagKeys", ["s3tables-kit-replica-key"]),)),),
    "replace the backup role's identity policy": (Try("iam:PutRolePolicy", BACKUP, "iam"),),
    **{
        f"take over {target} by {how}": (
            Try(action, PRINCIPALS[target][0], "iam"),
            Try("sts:AssumeRole", PRINCIPALS[target][0], "assume"),
        )
        for target in TAKEN_OVER
        for how, action in (("rewriting its trust", "iam:UpdateAssumeRolePolicy"), ("re-creating it", "iam:DeleteRole"))
    },
    "take over backup by a job run": (PASS_BACKUP, START_JOB_RUN),
    # the schedule's legitimate pass, with another program: its schedule rewritten, or one of the attacker's own
    # passed the schedule's role (a job run with any entry point), or the artifacts the next run executes
    "take over backup by rewriting its schedule": (REWRITE_BACKUP_SCHEDULE,),
    "take over backup by a schedule of its own": (
        Try("scheduler:CreateSchedule", f"{SCHEDULER_ARN}:schedule/default/attacker", "schedule"),
        pass_schedule_role(SCHEDULE),
    ),
    "take over backup by overwriting its artifacts": (OVERWRITE_BACKUP_ENTRY,),
}


def _apply(state: State, escalation: str) -> bool:
    """The world after `escalation` succeeded; False when it changes nothing."""
    arns = [PRINCIPALS[k][0] for k in state.held]
    if escalation.startswith("take over "):
        target = escalation.split()[2]
        if target in state.held:
            return False
        state.held.add(target)
    elif escalation == "untag the vault key":
        if state.untagged:
            return False
        state.untagged = True
    else:
        name, doc = {
            "replace the vault bucket policy": (BUCKET_POLICY, _allow_all(arns, "s3:*", [BUCKET, f"{BUCKET}/*"])),
            "replace the vault key policy": (KEY_POLICY, _allow_all(arns, "kms:*", ["*"])),
            "replace the point key policy": (POINT_KEY_POLICY, _allow_all(arns, "kms:*", ["*"])),
            "replace the backup role's identity policy": (BACKUP_POLICY, _allow_all(arns, "*", ["*"], False)),
        }[escalation]
        if state.docs[name] == doc:
            return False
        state.docs[name] = doc
    state.steps.append(escalation)
    return True


def _done(state: State, escalation: str) -> bool:
    """Whether `escalation` is already applied in `state` (its target held, the key untagged, or the document
    replaced by a step): trying it again cannot change the world."""
    if escalation.startswith("take over "):
        return escalation.split()[2] in state.held
    return escalation in state.steps


def _trust(arn: str) -> dict[str, Any]:
    """A trust policy the attacker wrote for itself."""
    s = {"Sid": "AttackerTrust", "Effect": "Allow", "Principal": {"AWS": arn}, "Action": "sts:AssumeRole"}
    return {"Version": "2012-10-17", "Statement": [s]}


def run(policies: dict[str, Any], reqs: list[SimRequest]) -> dict[str, SimResult]:
    results = evaluate(policies, reqs, processes=min(2, os.cpu_count() or 1))
    errors = errors_of(results)
    assert not errors, "simulator rejected requests:\n" + "\n".join(errors[:10])
    return results


def close(
    variants: dict[str, tuple[dict[str, Any], tuple[str, ...]]], max_rounds: int = 6
) -> dict[tuple[str, str], State]:
    """The attack of each actor named for each variant of the documents, in lockstep: one simulator batch a round."""
    states = {(v, a): State(copy.deepcopy(docs), set(INITIAL[a])) for v, (docs, who) in variants.items() for a in who}
    moving = set(states)
    for rnd in range(max_rounds):
        policies: dict[str, Any] = dict(WORLD)
        reqs: list[SimRequest] = []
        tried: list[tuple[tuple[str, str], str, list[str]]] = []
        for key in sorted(moving):
            state, label = states[key], f"{key[0]}/{key[1]}/r{rnd}"
            policies |= {f"{label}|{n}": d for n, d in state.docs.items()}
            for holder in sorted(state.held):
                policies[f"{label}|trust-for-{holder}"] = _trust(PRINCIPALS[holder][0])
                for name, steps in ESCALATIONS.items():
                    if _done(state, name):  # already applied: asking again changes nothing
                        continue
                    ids = [f"{label}|{holder}|{name}|{i}" for i in range(len(steps))]
                    reqs += [request(rid, label, state, holder, t) for rid, t in zip(ids, steps, strict=True)]
                    tried.append((key, name, ids))
        results = run(policies, reqs)
        changed = set()
        for key, name, ids in tried:
            if all(results[i].allowed for i in ids) and _apply(states[key], name):
                changed.add(key)
        moving = changed
        if not moving:
            return states
    raise AssertionError(f"the attacks did not settle in {max_rounds} rounds")


def through(
    states: dict[tuple[str, str], State], only: dict[str, str] | None = None
) -> dict[tuple[str, str, str, str], list[str]]:
    """{(variant, actor, identity held, action): the actor's steps} of every protected action allowed at the end (for
    break-glass the durable ones only); `only`: {variant: the one action evaluated for it}."""
    policies: dict[str, Any] = dict(WORLD)
    reqs: list[SimRequest] = []
    meta: dict[str, tuple[str, str, str, str]] = {}
    for (variant, actor), state in states.items():
        label = f"{variant}/{actor}/end"
        policies |= {f"{label}|{n}": d for n, d in state.docs.items()}
        for holder in sorted(state.held):
            for t in protected(actor, holder):
                if only is not None and only.get(variant, t.action) != t.action:
                    continue
                rid = f"{label}|{holder}|{t.action}|{t.resource}|{t.context}"
                reqs.append(request(rid, label, state, holder, t))
                meta[rid] = (variant, actor, holder, t.action)
    results = run(policies, reqs)
    return {meta[rid]: states[meta[rid][:2]].steps for rid, r in results.items() if r.allowed}


def documents(doc: dict[str, Any]) -> dict[str, Any]:
    ds = build(parse_config(doc))
    names = {n for _, identity in PRINCIPALS.values() for n in identity if not n.startswith("world:")}
    return {
        n: ds.document(n)
        for n in (BUCKET_POLICY, KEY_POLICY, POINT_KEY_POLICY, SCRIPTS_POLICY, *sorted(names), *SCPS, *ACCOUNT_SCPS)
    }


def _without(sid: str, arn: str, scp: str = "scp-protect-replica-guards") -> Any:
    """`arn` removed from the resources of statement `sid` in `scp`."""

    def mutate(docs: dict[str, Any]) -> None:
        (s,) = [s for s in docs[scp]["Statement"] if s["Sid"] == sid]
        assert arn in s["Resource"]
        s["Resource"] = [r for r in s["Resource"] if r != arn]

    return mutate


def _all(*mutations: Any) -> Any:
    def mutate(docs: dict[str, Any]) -> None:
        for m in mutations:
            m(docs)

    return mutate


def _and_kit_allowlist(mutate: Any) -> Any:
    """`mutate`, and the kit's resources' allow-list out of the pipeline SCP: the kit's roles and schedules are
    also closed by it (`s3tables_kit.policies.allowlists.KIT_RESOURCES`), so a guard of its own is shown needed with
    it gone."""

    def both(docs: dict[str, Any]) -> None:
        mutate(docs)
        docs[PIPELINE_SCP]["Statement"] = [s for s in docs[PIPELINE_SCP]["Statement"] if s["Sid"] != KIT_SID]

    return both


KIT_SID = "DenyKitResources"

# {mutation: (how, the steps the closure must then find for the administrator)}
MUTATIONS: dict[str, tuple[Any, list[str]]] = {
    # a job run needs the pass and a StartJobRun on the kit's application: every layer removed
    "passing the backup role unguarded": (
        _and_kit_allowlist(_all(drop("DenyPassBackupRole"), drop("DenyKitApplication", JOBS_SCP))),
        ["take over backup by a job run"],
    ),
    "the backup role's trust unguarded": (
        _and_kit_allowlist(_without("DenyPrivilegedRoleTampering", BACKUP)),
        ["take over backup by rewriting its trust"],
    ),
    "the schedule role's trust unguarded": (  # the schedule may pass the backup role: its trust is guarded too
        _and_kit_allowlist(_without("DenyPrivilegedRoleTampering", SCHEDULE)),
        ["take over schedule by rewriting its trust", "take over backup by a job run"],
    ),
    # the pipeline SCP's guard of the scheduled job runs, one resource at a time
    "the backup schedule unguarded": (
        _and_kit_allowlist(_without(SCHEDULED_SID, REWRITE_BACKUP_SCHEDULE.resource, PIPELINE_SCP)),
        ["take over backup by rewriting its schedule"],
    ),
    "passing the schedule role unguarded": (
        _and_kit_allowlist(_without(SCHEDULED_SID, SCHEDULE, PIPELINE_SCP)),
        ["take over backup by a schedule of its own"],
    ),
    # the pipeline SCP's statement, the vault SCP's allow-list and the scripts bucket policy's: each alone holds
    "the scheduled artifacts unguarded": (
        _all(
            _without(SCHEDULED_SID, ARTIFACTS, PIPELINE_SCP),  # S3 objects: not the kit's resources' scope
            drop("DenyScheduledArtifacts", JOBS_SCP, SCRIPTS_POLICY),
        ),
        ["take over backup by overwriting its artifacts"],
    ),
}


# {mutation: (how, the actor, the protected action the closure must then find it holding)}: the vault's allow-lists,
# each shown needed in the layer(s) that hold it
LEAKS: dict[str, tuple[Any, str, str]] = {
    "break-glass's vault allow-list removed": (
        drop("DenyVaultBreakGlass"),
        "breakglass",
        "s3:DeleteObjectVersion",
    ),
    "everyone's vault allow-list removed": (drop("DenyVault"), "admin", "s3:ReplicateObject"),
    # the schedule's job runs as the backup role, the vault's one writer
    "conditional writes unguarded": (drop("DenyVaultWriteWithoutIfNoneMatch"), "schedule", "s3:PutObject"),
    "the retention ceiling removed": (drop("DenyVaultRetentionBeyondCeiling"), "schedule", "s3:PutObjectRetention"),
    "break-glass's key allow-list removed": (
        _all(drop("DenyVaultKeyBreakGlass", KEY_POLICY), drop("DenyVaultKey", VAULT_SCP)),
        "breakglass",
        "kms:DisableKey",
    ),
    "the alias unguarded": (_and_kit_allowlist(drop("DenyVaultAlias", VAULT_SCP)), "admin", "kms:UpdateAlias"),
    "the application's allow-list removed": (
        drop("DenyKitApplication", JOBS_SCP),
        "admin",
        "emr-serverless:UpdateApplication",
    ),
    "the scheduled artifacts' allow-list removed": (
        drop("DenyScheduledArtifacts", JOBS_SCP, SCRIPTS_POLICY),
        "admin",
        "s3:ReplicateObject",
    ),
}


def world() -> dict[str, Any]:
    """The seed with the vault's deploy role, `[vault] tables` and the scheduled hardener on (its own class)."""
    doc = with_vault(VAULT | {"tables": ["analytics.orders"], "deploy_role_arn": PRINCIPALS["deploy"][0]})
    doc["assurance"]["harden"] = {"enabled": True}
    doc["protection"]["break_glass_principals"] = [BREAK_GLASS]
    return doc


# The point key's allow-list out of its three layers (its key policy, the vault SCP, the kit's keys in the replicas'
# SCP): the administrator re-writes the key's policy (the account's IAM-delegated administration) and MACs a point.
POINTS_UNGUARDED = "the point key's allow-list removed"
UNGUARD_POINTS = _all(
    drop("DenyVaultPointKey", POINT_KEY_POLICY, VAULT_SCP), drop("DenyKitKeys", "scp-protect-replicas")
)


@pytest.fixture(scope="module")
def attacked() -> dict[tuple[str, str], State]:
    base = documents(world())
    variants = {"baseline": (base, ACTORS)}
    for name, mutate in [*((n, m) for n, (m, _) in MUTATIONS.items()), (POINTS_UNGUARDED, UNGUARD_POINTS)]:
        docs = copy.deepcopy(base)
        mutate(docs)
        variants[name] = (docs, ("admin",))  # the administrator finds every takeover: one actor keeps it cheap
    return close(variants)


@pytest.fixture(scope="module")
def leaked(attacked: dict[tuple[str, str], State]) -> dict[tuple[str, str, str, str], list[str]]:
    """The protected actions allowed at the end of each attack, and those of each `LEAKS` variant's attacker as it
    starts (its own identity holds the action the allow-list kept from it: no escalation needed), in one batch."""
    states = {key: s for key, s in attacked.items() if key[0] in ("baseline", POINTS_UNGUARDED)}
    base = documents(world())  # as deployed: no attacker's step in it
    for name, (mutate, actor, _) in LEAKS.items():
        docs = copy.deepcopy(base)
        mutate(docs)
        states[(name, actor)] = State(docs, set(INITIAL[actor]))
    only = {name: action for name, (_, _, action) in LEAKS.items()} | {POINTS_UNGUARDED: FORGE_POINT.action}
    return through(states, only=only)


def test_no_actor_reaches_the_vault_its_key_or_the_backup_role_in_any_order(
    attacked: dict[tuple[str, str], State], leaked: dict[tuple[str, str, str, str], list[str]]
) -> None:
    base = {actor: s for (variant, actor), s in attacked.items() if variant == "baseline"}
    people = {a: s for a, s in base.items() if a not in BREAK_GLASS_ARNS}
    assert {a: s.steps for a, s in people.items() if s.steps} == {}  # no escalation succeeds, the first included
    assert {a: s.held for a, s in people.items()} == {a: INITIAL[a] for a in people}  # no role taken over
    allowed = {k: steps for k, steps in leaked.items() if k[0] == "baseline"}
    assert not allowed, f"protected actions allowed after the attackers' steps: {allowed}"


def test_break_glass_gathers_the_rescue_roles_and_still_cannot_destroy_a_backup(
    attacked: dict[tuple[str, str], State],
) -> None:
    """Break-glass takes over the backup and schedule roles (the rescue path),
    never rewrites the vault's policies: what it holds at the end gets nothing of `DURABLE` (the baseline test's
    sweep covers it)."""
    bg = attacked[("baseline", "breakglass")]
    assert {"backup", "schedule"} <= bg.held
    never = {"replace the vault bucket policy", "replace the vault key policy", "replace the point key policy"}
    assert not (never | {"untag the vault key"}) & set(bg.steps)


@pytest.mark.parametrize("mutation", sorted(LEAKS))
def test_each_vault_allow_list_is_needed(leaked: dict[tuple[str, str, str, str], list[str]], mutation: str) -> None:
    _, actor, action = LEAKS[mutation]
    found = {k[3] for k in leaked if k[:2] == (mutation, actor)}
    assert action in found, f"{mutation}: {actor} got {sorted(found)}"


def test_the_legitimate_paths_stay_open() -> None:
    """The guards do not simply deny everyone: break-glass edits and passes the backup role, the schedule passes it
    and starts the job run, the backup role writes; the recovery stack's deploy role (and break-glass) rewrites the
    schedules, passes their roles and uploads the scheduled artifacts."""
    doc = with_vault(VAULT | {"tables": ["analytics.orders"]})
    doc["replicas"][0]["deploy_role_arn"] = PRINCIPALS["deploy"][0]  # here the vault's is the recovery stack's too
    doc["assurance"]["harden"] = {"enabled": True}
    doc["protection"]["break_glass_principals"] = [BREAK_GLASS]
    docs = documents(doc)
    state = State(docs, set())
    deployers = {
        (who, t)
        for who in ("deploy", "breakglass")
        for t in (
            REWRITE_BACKUP_SCHEDULE,
            OVERWRITE_BACKUP_ENTRY,
            pass_schedule_role(SCHEDULE),
            *REHEARSAL_PATHS,
        )
        # deleting a schedule is a break-glass deploy (the kit's resources' allow-list, policies/allowlists.py)
        if who == "breakglass" or t.action not in ("scheduler:DeleteSchedule", "scheduler:DeleteScheduleGroup")
    }
    cases = deployers | {
        ("breakglass", PASS_BACKUP),
        ("breakglass", Try("iam:PutRolePolicy", BACKUP, "iam")),
        ("breakglass", Try("iam:UpdateAssumeRolePolicy", BACKUP, "iam")),
        ("schedule", PASS_BACKUP),
        ("schedule", START_JOB_RUN),
        ("backup", Try("s3:PutObject", OBJECT, "vault", ONCE)),
        ("backup", Try("s3:PutObjectRetention", OBJECT, "vault", COMPLIANCE)),
        ("breakglass", Try("s3:PutObjectLegalHold", OBJECT, "vault")),
        ("breakglass", Try("kms:Decrypt", KEY, "key")),
        ("backup", FORGE_POINT),  # its own MAC on each point it writes, through every layer
        ("backup", Try("kms:VerifyMac", POINT_KEY, "points")),
        ("recovery", Try("kms:VerifyMac", POINT_KEY, "points")),
        ("breakglass", Try("emr-serverless:UpdateApplication", APPLICATION, "app", APP)),
        ("deploy", Try("emr-serverless:UpdateApplication", APPLICATION, "app", APP)),
    }
    reqs = [request(f"ok|{who}|{t.action}|{t.resource}", "ok", state, who, t) for who, t in cases]
    results = run(dict(WORLD) | {f"ok|{n}": d for n, d in docs.items()}, reqs)
    assert {rid: r.decision for rid, r in results.items() if not r.allowed} == {}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_guard_on_the_backup_role_is_needed(attacked: dict[tuple[str, str], State], mutation: str) -> None:
    admin = attacked[(mutation, "admin")]
    assert "backup" in admin.held, f"{mutation}: the administrator did not take over the backup role: {admin.steps}"
    assert admin.steps[: len(MUTATIONS[mutation][1])] == MUTATIONS[mutation][1]


def test_a_forged_point_needs_the_point_keys_allow_list(
    attacked: dict[tuple[str, str], State], leaked: dict[tuple[str, str, str, str], list[str]]
) -> None:
    """With it, no actor but the backup role MACs a point (the baseline test); without it, the administrator
    re-writes the key's policy and MACs one."""
    assert attacked[(POINTS_UNGUARDED, "admin")].steps[:1] == ["replace the point key policy"]
    assert (POINTS_UNGUARDED, "admin", "admin", FORGE_POINT.action) in leaked
