"""The organization layer of an estate (docs/decisions/0026-estate.md): two SCPs whose size does not grow
with the number of buckets or sources.

A `[source]` configuration names every replica bucket and every replication role in its SCPs
(`s3tables_kit.policies.documents`); an estate of fifty buckets would not fit 5,120 characters that way. So an estate's
SCPs name no bucket and no source:

- protected buckets are matched by their tag, `s3tables:TableBucketTag/kit-protection = <kit>` (every protected
  table bucket of an estate carries it: `s3tables_kit.topology.rules.PROTECTION_TAG_KEY`), on any S3 Tables ARN;
- `DisassociateTableReplication` is also denied by ARN pattern, on every table of the replica accounts, because
  whether AWS evaluates `s3tables:TableBucketTag` for it is unverified (docs/aws-facts.md);
- the replication roles of every source are exempt by one name pattern (`<kit>-*-s3tables-replication`), and the
  guards SCP stops anyone but break-glass and the sources' deploy roles (the `cdktf deploy` path that creates them)
  from creating a role of that name, and anyone but break-glass from rewriting, deleting or assuming one;
- changing or removing the protection tag of a protected bucket is denied to all but break-glass;
- the guardrails are matched by their one name in every account.

What the SCPs still list are principals and accounts the configuration names: break-glass, the replica accounts'
deploy roles, the sources' deploy role names, the replica accounts (the ARN-pattern layer) and bring-your-own
replica keys. None of them grows with the number of buckets or sources.
"""

from __future__ import annotations

from collections.abc import Sequence

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import protection, vault
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.parts import part_pattern
from s3tables_kit.topology import rules
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.rules import PROTECTION_TAG_KEY

BUCKET_TAG_KEY_PREFIX = "s3tables:TableBucketTag/"  # the condition key of a table bucket's tag
TAG_CONDITION_KEY = f"{BUCKET_TAG_KEY_PREFIX}{PROTECTION_TAG_KEY}"
DISASSOCIATE = "DisassociateTableReplication"


def partition(cfg: KitConfig) -> str:
    """An organization lives in one partition; the estate's protected buckets are in it."""
    return cfg.recovery_replica.partition


def replication_role_pattern(cfg: KitConfig) -> str:
    """Every source's replication role (`<kit>-<id>-s3tables-replication`, `KitConfig.replication_role_name_of` a
    source), in any account."""
    return rules.replication_role_pattern(partition(cfg), cfg.kit.name)


def guardrail_pattern(cfg: KitConfig) -> str:
    """The guardrail of every replica account, every part of it (one name: `KitConfig.guardrail_policy_name`)."""
    return part_pattern(f"arn:{partition(cfg)}:iam::*:policy/{cfg.guardrail_policy_name}")


def pipeline_guardrail_pattern(cfg: KitConfig) -> str:
    """The pipeline guardrail of every account, every part of it, by name."""
    return part_pattern(f"arn:{partition(cfg)}:iam::*:policy/{cfg.pipeline_guardrail_policy_name}")


def pipeline_guardrail_accounts(cfg: KitConfig) -> list[str]:
    """The accounts with a pipeline guardrail: every replica account (beside its guardrail and attached to the same
    roles: the kit's allow-lists do not fit the guardrail's 6,144 characters too) and every source account without a
    replica whose roles are named to carry it (`protection.source_guardrail_attach_roles`)."""
    return sorted({*cfg.pipeline_guardrail_accounts, *(r.account_id for r in cfg.replicas)})


def pipeline_guardrail_arns(cfg: KitConfig) -> list[str]:
    """The pipeline guardrails (`pipeline_guardrail_accounts`), by name in any account: the guards SCP keeps its
    size whatever the number of accounts."""
    if not pipeline_guardrail_accounts(cfg):
        return []
    return [pipeline_guardrail_pattern(cfg)]


def any_bucket(cfg: KitConfig) -> str:
    """Every table bucket ARN (in IAM `bucket/*` matches table ARNs too; the kit names those separately, for
    readers and for `s3tables_kit.policies.lint`): the tag decides which are protected."""
    return f"arn:{partition(cfg)}:s3tables:*:*:bucket/*"


def any_table(cfg: KitConfig) -> str:
    return f"arn:{partition(cfg)}:s3tables:*:*:bucket/*/table/*"


def replica_account_tables(cfg: KitConfig) -> list[str]:
    """Every table of every replica account: the ARN-pattern layer where the tag condition may not apply."""
    accounts = sorted({r.account_id for r in cfg.replicas})
    return [f"arn:{partition(cfg)}:s3tables:*:{acct}:bucket/*/table/*" for acct in accounts]


def deploy_role_name_patterns(cfg: KitConfig) -> list[str]:
    """The sources' deploy roles by name in any account (the organization's pipeline role): they create the
    replication roles in `cdktf deploy`. By name, not ARN, so the list does not grow with the source accounts."""
    names = sorted({s.deploy_role_arn.split(":role/", 1)[1] for s in cfg.sources if s.deploy_role_arn})
    return [f"arn:{partition(cfg)}:iam::*:role/{name}" for name in names]


def exemptions(cfg: KitConfig) -> protection.Exemptions:
    """Break-glass; the replication roles by pattern; the replica deploy roles by ARN (each where a rule allows)."""
    return protection.Exemptions(
        break_glass=tuple(cfg.protection.break_glass_principals),
        replication_roles=(replication_role_pattern(cfg),),
        deploy_roles=protection.deploy_roles(cfg.replicas),
        createtable_dependents=protection.createtable_dependents_allowed(cfg),
    )


def tag_condition(cfg: KitConfig) -> dict[str, dict[str, object]]:
    return {"StringEquals": {TAG_CONDITION_KEY: cfg.kit.name}}


def tagged_protection_statement(
    cfg: KitConfig, rule: iam_actions.ProtectionRule, exempt: list[str]
) -> iam_statements.Statement:
    """One protective Deny on every bucket and table that carries the kit's protection tag (bucket actions on
    `bucket/*`, table actions on `bucket/*/table/*`)."""
    bucket_names, table_names = iam_actions.level_split(rule.actions)
    resources = ([any_bucket(cfg)] if bucket_names else []) + ([any_table(cfg)] if table_names else [])
    condition: dict[str, dict[str, object]] = {**tag_condition(cfg)}
    if exempt:
        condition["ArnNotLike"] = {"aws:PrincipalArn": sorted(set(exempt))}
    return iam_statements.statement(
        rule.sid, "Deny", iam_actions.s3t(*bucket_names, *table_names), resources, condition=condition
    )


def _rules(tables_only: bool) -> list[iam_actions.ProtectionRule]:
    """The protection rules merged by exemption set, as in the `[source]` SCP
    (`s3tables_kit.policies.documents.scp_rules`)."""
    merged = protection.merged_rules(
        iam_actions.PROTECTION_RULES, lambda r: (r.exempt_replication_role, r.exempt_deploy_roles, r.tables_only)
    )
    return [r for r in merged if r.tables_only == tables_only]


def protection_statements(cfg: KitConfig, *, tables_only: bool) -> list[iam_statements.Statement | None]:
    ex = exemptions(cfg)
    rules = _rules(tables_only)
    if ex.createtable_dependents:  # `[protection] replication_role_createtable_dependents = "allow"`
        rules = protection.split_createtable_dependents(rules, "scp")
    return [tagged_protection_statement(cfg, rule, ex.for_rule(rule)) for rule in rules]


def disassociation_by_account(cfg: KitConfig) -> iam_statements.Statement:
    """The ARN-pattern layer for `DisassociateTableReplication`: break-glass only, on every table of the replica
    accounts, whatever its bucket's tags (a disassociated replica can never be re-associated)."""
    rule = iam_actions.ProtectionRule(sid="DenyReplicaDisassociationByAccount", actions=(DISASSOCIATE,), risk="")
    ex = exemptions(cfg).for_rule(rule)
    return iam_statements.statement(
        rule.sid,
        "Deny",
        iam_actions.s3t(DISASSOCIATE),
        replica_account_tables(cfg),
        condition={"ArnNotLike": {"aws:PrincipalArn": sorted(set(ex))}},
    )


def protection_tag_guard(cfg: KitConfig) -> iam_statements.Statement:
    """Tagging or untagging the protection tag key on a bucket that carries it: break-glass only (without its tag a
    bucket falls out of every tag-matched Deny). Creating a bucket with the tag stays allowed (it carries none yet)."""
    return iam_statements.statement(
        "DenyProtectionTagChange",
        "Deny",
        iam_actions.s3t("TagResource", "UntagResource"),
        [any_bucket(cfg)],
        condition={
            **tag_condition(cfg),
            "ArnNotLike": {"aws:PrincipalArn": sorted(set(cfg.protection.break_glass_principals))},
            "ForAnyValue:StringEquals": {"aws:TagKeys": [PROTECTION_TAG_KEY]},
        },
    )


def bucket_protection_tag_guard(cfg: KitConfig, bucket_arn: str) -> iam_statements.Statement:
    """The bucket policy's layer against changing the protection tag (the SCP's `DenyProtectionTagChange` is the
    other): break-glass only, so untagging takes two layers, as deleting does."""
    return iam_statements.statement(
        "DenyProtectionTagChange",
        "Deny",
        iam_actions.s3t("TagResource", "UntagResource"),
        [bucket_arn],
        principal="*",
        condition={
            "ArnNotLike": {"aws:PrincipalArn": sorted(set(cfg.protection.break_glass_principals))},
            "ForAnyValue:StringEquals": {"aws:TagKeys": [PROTECTION_TAG_KEY]},
        },
    )


def replication_role_guards(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """A role named like a replication role is exempt from the SCP's replication-path denies, so nobody but
    break-glass and the sources' deploy roles creates one, and nobody but break-glass assumes one (the replication
    service is no principal of the organisation: SCPs do not restrict it)."""
    bg = cfg.protection.break_glass_principals
    pattern = replication_role_pattern(cfg)
    # a monitor-named role is exempt from the kit's metrics guard (`s3tables_kit.policies.pipeline`): minted likewise
    monitor = [monitor_role_pattern(cfg)] if cfg.assurance.monitor.enabled else []
    return [
        iam_statements.statement(
            "DenyReplicationRoleCreation",
            "Deny",
            ["iam:CreateRole"],
            [pattern, *monitor],
            condition={"ArnNotLike": {"aws:PrincipalArn": sorted({*bg, *deploy_role_name_patterns(cfg)})}},
        ),
        iam_statements.deny_assume_service_role("DenyAssumeReplicationRole", pattern, bg),
    ]


def monitor_role_pattern(cfg: KitConfig) -> str:
    """Every source's monitor role (`<kit>-<id>-replication-monitor`), in any account."""
    return f"arn:{partition(cfg)}:iam::*:role/{cfg.kit.name}-*-replication-monitor"


def privileged_roles(cfg: KitConfig) -> list[str]:
    """Break-glass roles, the replica deploy roles, the replication roles, and by name in any account (a Deny
    broader than needed, never an exemption) the sources' deploy roles and the monitor roles."""
    monitor = [monitor_role_pattern(cfg)] if cfg.assurance.monitor.enabled else []
    if cfg.assurance.monitor.enabled:  # the replica-side freshness checks' role, by name in any account
        monitor.append(f"arn:{partition(cfg)}:iam::*:role/{cfg.kit.name}-freshness")
    return protection.privileged_roles(
        cfg.protection.break_glass_principals,
        cfg.replicas,
        [replication_role_pattern(cfg)],
        pipeline_roles=[*deploy_role_name_patterns(cfg), *monitor, *vault.privileged_roles(cfg)],
    )


def service_control_policy(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """The estate's first SCP: the replica denies (merged by exemption set) on tagged buckets, and the ARN-pattern
    layer for disassociation."""
    return [*protection_statements(cfg, tables_only=False), disassociation_by_account(cfg)]


def service_control_policy_guards(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """The estate's guards SCP: table tags and the protection tag, the replica keys, the privileged roles and the
    replication roles by pattern, the guardrails by name."""
    bg = cfg.protection.break_glass_principals
    pipeline_guardrails = pipeline_guardrail_arns(cfg)
    return [
        *protection_statements(cfg, tables_only=True),
        protection_tag_guard(cfg),
        *protection.key_guards(cfg.replicas, exempt=bg),
        protection.role_guard(privileged_roles(cfg), bg),
        *replication_role_guards(cfg),
        iam_statements.deny_guardrail_change([guardrail_pattern(cfg), *pipeline_guardrails], bg),
        iam_statements.deny_guardrail_detach([guardrail_pattern(cfg), *pipeline_guardrails], bg),
        *source_guards(cfg, exempt=bg, break_glass=bg),
    ]


def source_guards(
    cfg: KitConfig, *, exempt: Sequence[str], break_glass: Sequence[str], account_id: str | None = None
) -> list[iam_statements.Statement | None]:
    """Replication of every table bucket of the covered accounts (the SCP; a guardrail: of its account, when a
    source is there) is changed only by the sources' deploy roles (by name) and `exempt`, and only roles named like
    the kit's replication roles are passed to the replication service (their creation is guarded above). No
    source is named: the documents keep their size."""
    p = partition(cfg)
    if account_id is None:
        buckets = [any_bucket(cfg)]
    elif any(s.account_id == account_id for s in cfg.sources):
        buckets = [f"arn:{p}:s3tables:*:{account_id}:bucket/*"]
    else:
        buckets = []
    return [
        iam_statements.deny_source_replication_change(
            "DenySourceReplicationChange",
            buckets,
            [*exempt, *protection.replication_setup_roles(cfg, deploy_role_name_patterns(cfg))],
        )
        if buckets
        else None,
        iam_statements.deny_pass_other_replication_role(
            "DenyPassOtherReplicationRole", [replication_role_pattern(cfg)], break_glass
        ),
    ]
