"""The one protection engine of both topologies: who each protection rule exempts at a site, the
protective denies of a site in one layer (merged where a size limit applies), the grant a replication role of
another account needs in a destination's bucket policy, and the denies that guard the guards (replica keys,
privileged roles, the guardrail).

`s3tables_kit.policies.documents` (the normal topology) and `s3tables_kit.policies.failover` (a promoted replica and its
destinations) build their protection from these functions only; the rules themselves
(`s3tables_kit.policies.actions.PROTECTION_RULES`, and `promoted_rules()` for a promoted bucket) say which exemption
each rule allows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import allowlists as AL
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.topology.config import KitConfig, Replica


@dataclass(frozen=True)
class Exemptions:
    """Who a rule exempts at one site: break-glass always; the others where the rule says so (its `exempt_*`)."""

    break_glass: tuple[str, ...] = ()
    replication_roles: tuple[str, ...] = ()
    deploy_roles: tuple[str, ...] = ()
    writers: tuple[str, ...] = ()
    # `[assurance.harden]`: the scheduled hardener's role, exempt from its own writes only (`AL.REPLICA_HARDENER`).
    hardeners: tuple[str, ...] = ()
    # `[protection] replication_role_createtable_dependents = "allow"`: the replication role is exempt from the
    # denies of `CreateTable`'s dependent actions (`A.CREATE_TABLE_DEPENDENTS`) outside table policies.
    createtable_dependents: bool = False

    def for_rule(self, rule: iam_actions.ProtectionRule) -> list[str]:
        out = list(self.break_glass)
        if rule.exempt_replication_role:
            out += self.replication_roles
        if rule.exempt_deploy_roles:
            out += self.deploy_roles
        if rule.exempt_writers:
            out += self.writers
        if rule.exempt_hardener:
            out += self.hardeners
        return sorted(set(out))

    def for_guardrail(self) -> Exemptions:
        """The guardrail is attached to neither break-glass, a replication role nor the hardener: their exemptions are
        moot."""
        return replace(self, break_glass=(), replication_roles=(), hardeners=())


def deploy_roles(replicas: Iterable[Replica]) -> tuple[str, ...]:
    return tuple(sorted({r.deploy_role_arn for r in replicas if r.deploy_role_arn}))


# ---------------------------------------------------------------- protective denies ----

RuleKey = Callable[[iam_actions.ProtectionRule], Hashable]


def merged_rules(rules: Sequence[iam_actions.ProtectionRule], key: RuleKey) -> list[iam_actions.ProtectionRule]:
    """Rules merged by `key` (rules of one key become one statement: the SCP has 5,120 characters, a managed policy
    6,144). A merged rule keeps its first member's exemptions, so a key must tell apart rules whose exemptions differ
    at the site; its Sid concatenates the members' names (DenyReplicaDeletionAndReplicationChange, ...)."""
    groups: dict[Hashable, list[iam_actions.ProtectionRule]] = {}
    for rule in rules:
        groups.setdefault(key(rule), []).append(rule)
    return [_merge(members) for members in groups.values()]


def _merge(members: Sequence[iam_actions.ProtectionRule]) -> iam_actions.ProtectionRule:
    return replace(
        members[0],
        sid="DenyReplica" + "And".join(r.sid.removeprefix("DenyReplica") for r in members),
        actions=tuple(a for r in members for a in r.actions),
        risk=" ".join(r.risk for r in members),
        exempt_maintenance_service=all(r.exempt_maintenance_service for r in members),
        locked_after_first_deploy=all(r.locked_after_first_deploy for r in members),
    )


def by_exemptions(ex: Exemptions) -> RuleKey:
    """Merge key: the rule's exemption list at the site, never a table-only rule with another (its statement must
    not name the buckets, where tagging stays allowed)."""
    return lambda rule: (rule.tables_only, tuple(ex.for_rule(rule)))


def _same(sid: str) -> str:
    return sid


RESOURCE_POLICY_KINDS = ("bucket-policy", "table-policy")


def exemptions_at(kind: str, rule: iam_actions.ProtectionRule, exemptions: Exemptions) -> list[str]:
    """Who `rule` exempts in a layer of `kind`. A rule locked after the first deploy exempts the deploy roles in the
    SCP and the guardrail only (which cannot tell the first deploy from a later one); the bucket and table policies
    deny them, and the bucket policy, applied last by the first deploy, is itself such a rule's resource: from then
    on only break-glass changes it (docs/decisions/0028-lock-after-first-deploy.md)."""
    if kind in RESOURCE_POLICY_KINDS and rule.locked_after_first_deploy:
        exemptions = replace(exemptions, deploy_roles=())
    return exemptions.for_rule(rule)


def createtable_dependents_allowed(cfg: KitConfig) -> bool:
    return cfg.protection.replication_role_createtable_dependents == "allow"


def deploy_sets_up_replication(cfg: KitConfig) -> bool:
    """`[protection] replication_setup`: whether the deploy roles set up and change a source's replication."""
    return cfg.protection.replication_setup == "deploy-role"


def replication_setup_roles(cfg: KitConfig, deploy_roles: Sequence[str]) -> list[str]:
    """The deploy roles exempt from a source's replication guard: all of `deploy_roles`, or none when replication
    setup is a break-glass step (AWS then also requires destination permissions that the kit denies to them)."""
    return list(deploy_roles) if deploy_sets_up_replication(cfg) else []


def split_createtable_dependents(
    rules: Sequence[iam_actions.ProtectionRule], kind: str = ""
) -> list[iam_actions.ProtectionRule]:
    """Each rule that denies a dependent action of `CreateTable` to the replication role, split in two: the rule
    without them, and `<Sid>OnReplicaCreation` with them, exempting the replication role (the service's
    `CreateTable` of a replica may carry encryption, storage class or tags). Table policies never need it: a table
    policy exists only once its table does."""
    out: list[iam_actions.ProtectionRule] = []
    for rule in rules:
        dependents = tuple(a for a in rule.actions if a in iam_actions.CREATE_TABLE_DEPENDENTS)
        if not dependents or rule.exempt_replication_role:
            out.append(rule)
            continue
        if kind == "scp" and rule.tables_only:
            # one SCP holds 5,120 characters: the table-tag rule exempts the replication role whole there (the
            # bucket and table policies still deny it `UntagResource`)
            out.append(replace(rule, exempt_replication_role=True))
            continue
        kept = tuple(a for a in rule.actions if a not in dependents)
        if kept:
            out.append(replace(rule, actions=kept))
        out.append(
            replace(
                rule,
                sid=rule.sid + iam_actions.CREATE_TABLE_DEPENDENTS_SID_SUFFIX,
                actions=dependents,
                exempt_replication_role=True,
            )
        )
    return out


HARDENER_SID_SUFFIX = "ExceptTheHardener"


def split_hardener(rules: Sequence[iam_actions.ProtectionRule]) -> list[iam_actions.ProtectionRule]:
    """Each rule holding a write of the hardener's (`AL.REPLICA_HARDENER`), split in two: the rule without them, and
    `<Sid>ExceptTheHardener` with them, exempting the hardener besides the rule's own exemptions."""
    writes = {a.split(":", 1)[1] for a in AL.REPLICA_HARDENER.actions}
    out: list[iam_actions.ProtectionRule] = []
    for rule in rules:
        mine = tuple(a for a in rule.actions if a in writes)
        kept = tuple(a for a in rule.actions if a not in writes)
        if kept:
            out.append(replace(rule, actions=kept))
        if mine:
            sid = rule.sid if not kept else rule.sid + HARDENER_SID_SUFFIX
            out.append(replace(rule, sid=sid, actions=mine, exempt_hardener=True))
    return out


def protection_statements(
    kind: str,
    *,
    bucket_arns: Sequence[str],
    table_resources: Sequence[str],
    exemptions: Exemptions,
    rules: Sequence[iam_actions.ProtectionRule] = iam_actions.PROTECTION_RULES,
    sid: Callable[[str], str] = _same,
) -> list[iam_statements.Statement | None]:
    """The protective Deny of each rule at one site (kind: bucket-policy, table-policy, identity, scp), each
    exempting whom `exemptions` and the rule say; `sid` renames (DenyReplicaX -> DenyPromotedX, ...)."""
    if exemptions.createtable_dependents and kind != "table-policy":
        rules = split_createtable_dependents(rules, kind)
    if exemptions.hardeners:
        rules = split_hardener(rules)
    return [
        iam_statements.protection_statement(
            replace(rule, sid=sid(rule.sid)),
            bucket_arns=bucket_arns,
            table_resources=table_resources,
            exempt_arns=exemptions_at(kind, rule, exemptions),
            kind=kind,
        )
        for rule in rules
    ]


# ---------------------------------------------------------------- grants ----


def replication_grants(role: str, role_arn: str, bucket_arn: str) -> list[iam_statements.Statement | None]:
    """What a replication role of another account needs in a destination's bucket policy (a cross-account request
    needs an Allow on both sides). `role` names it in the Sids (Source, Failover)."""
    return [
        iam_statements.allow_principal_actions(
            f"Allow{role}ReplicationRoleCreateReplicas",
            role_arn,
            iam_actions.REPLICATION_DEST_BUCKET_CREATE,
            [bucket_arn],
        ),
        iam_statements.allow_principal_actions(
            f"Allow{role}ReplicationRoleWriteReplicas",
            role_arn,
            iam_actions.REPLICATION_DEST_TABLE_WRITE,
            [iam_statements.table_arns(bucket_arn)],
        ),
    ]


def per_source_grants(role_arns: Sequence[str], bucket_arn: str) -> list[iam_statements.Statement | None]:
    return [g for arn in role_arns for g in replication_grants("Source", arn, bucket_arn)]


def estate_source_grants(role_arns: Sequence[str], bucket_arn: str) -> list[iam_statements.Statement | None]:
    if not role_arns:
        return []
    return [
        iam_statements.allow_principals_actions(
            "AllowSourceReplicationRolesCreateReplicas",
            role_arns,
            iam_actions.REPLICATION_DEST_BUCKET_CREATE,
            [bucket_arn],
        ),
        iam_statements.allow_principals_actions(
            "AllowSourceReplicationRolesWriteReplicas",
            role_arns,
            iam_actions.REPLICATION_DEST_TABLE_WRITE,
            [iam_statements.table_arns(bucket_arn)],
        ),
    ]


# ---------------------------------------------------------------- guarding the guards ----


def key_guards(replicas: Sequence[Replica], *, exempt: Sequence[str]) -> list[iam_statements.Statement | None]:
    """Identity-side/SCP denies on replica keys: kit-created keys by tag, bring-your-own keys by ARN."""
    out: list[iam_statements.Statement | None] = []
    if any(r.encryption.creates_key for r in replicas):
        out.append(
            iam_statements.deny_tagged_key_destruction("DenyReplicaKeyDestruction", iam_actions.REPLICA_KEY_TAG, exempt)
        )
        out.append(iam_statements.deny_key_tag_removal("DenyReplicaKeyUntag", iam_actions.REPLICA_KEY_TAG, exempt))
    byo = sorted(
        r.encryption.kms_key
        for r in replicas
        if r.encryption.type == "kms" and r.encryption.kms_key and not r.encryption.creates_key
    )
    if byo:
        out.append(iam_statements.deny_key_destruction("DenyReplicaOwnKeyDestruction", byo, exempt))
    return out


def role_guard(role_arns: Sequence[str], exempt: Sequence[str]) -> iam_statements.Statement | None:
    return iam_statements.deny_privileged_role_tampering(role_arns, exempt) if role_arns else None


def guardrail_guards(
    replicas: Sequence[Replica], *, privileged: Sequence[str], guardrail_arns: Sequence[str]
) -> list[iam_statements.Statement | None]:
    """The guardrail's own denies after its protection statements: the account's replica keys, its privileged roles,
    and itself with any companion policy attached to the same roles (a role that carries them cannot detach or
    rewrite them). No exemption: it is attached to neither break-glass nor a replication role."""
    return [
        *key_guards(replicas, exempt=()),
        role_guard(privileged, ()),
        iam_statements.deny_guardrail_change(guardrail_arns, ()),
        iam_statements.deny_guardrail_detach(guardrail_arns, ()),
    ]


def scp_guards(
    replicas: Sequence[Replica],
    *,
    privileged: Sequence[str],
    replication_roles: Sequence[tuple[str, str]],
    guardrail_arns: Sequence[str],
    break_glass: Sequence[str],
) -> list[iam_statements.Statement | None]:
    """The guards SCP's denies for every principal of the covered accounts, break-glass exempt: replica keys, the
    privileged roles, assuming a replication role (`(Sid, role ARN)`; SCPs never restrict the service principal),
    and the guardrails (rewrite, delete, detach)."""
    return [
        *key_guards(replicas, exempt=break_glass),
        role_guard(privileged, break_glass),
        *(iam_statements.deny_assume_service_role(sid, arn, break_glass) for sid, arn in replication_roles),
        iam_statements.deny_guardrail_change(guardrail_arns, break_glass),
        iam_statements.deny_guardrail_detach(guardrail_arns, break_glass),
    ]


def privileged_roles(
    break_glass: Sequence[str],
    replicas: Sequence[Replica],
    replication_roles: Sequence[str],
    *,
    pipeline_roles: Sequence[str] = (),
) -> list[str]:
    """Roles whose ARN carries an exemption: break-glass roles, the replicas' deploy roles, the replication roles,
    and the pipeline's (the sources' deploy roles, whose exemptions include changing a source's replication; the
    monitor roles, the only publishers of the kit's metrics)."""
    roles = [p for p in break_glass if ":role/" in p]
    roles += deploy_roles(replicas)
    roles += list(replication_roles)
    roles += list(pipeline_roles)
    return sorted(set(roles))
