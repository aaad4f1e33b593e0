"""The pipeline that feeds the replicas, guarded like the replicas: the replication roles (their permissions, their
boundary, whom they are passed to, who assumes them), the detection path (the monitor's function, schedule,
alarms, topic and log group, the metrics in the kit's namespace), the source keys (the source bucket's and the
alarm topic's) and the recovery account's scheduled job runs (their schedules, artifacts and schedule roles: whoever
changes what they run runs code as the backup or recovery role).

A ransomware operator's first step is to freeze the backups quietly: widen or break the replication role, silence
the monitor, disable the source key. Each of those changes is denied to all but break-glass and the deploy roles of
the sources (`s3tables_kit.policies.actions.PIPELINE_RULES`) in the pipeline SCP (`scp-protect-pipeline`, every covered
account) and, where a source shares an account with a replica, in that account's guardrail; the source and alarm topic
key policies hold their keys' destruction themselves. A resource control policy (`rcp-protect-replication-roles`) denies
assuming a replication role to anything but the replication service, so a role minted under the replication name
pattern is useless to an outsider (SCPs never bind principals outside the organization; RCPs bind every caller).

A `[source]` names every resource by ARN. An estate names no source (its organization policies keep their size):
resources by the kit's name patterns in any account, the deploy roles by name. Every action guarded here acts only
on a resource of the caller's own account (IAM, Lambda, Scheduler, CloudWatch, Logs, KMS key administration; an
SNS topic's policy is itself guarded), so a deploy role matched by name is exempt only in its own account. Role
*creation* is the exception: a role minted under the pattern is exempt everywhere, so the estate's guards deny it
by account where a replica lives (`replica_account_role_creation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import allowlists as AL
from s3tables_kit.policies import assurance, estate, freshness, hardener, parts
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, doc, kms_resource
from s3tables_kit.policies.sites import schedule_arn, schedule_group_arn
from s3tables_kit.topology import contract
from s3tables_kit.topology.backup import BACKUP_SCHEDULE, backup_scheduler_role_name
from s3tables_kit.topology.config import KitConfig, Source

KeyRef = tuple[str, str | None]  # (key resource, the alias that names it, or None: the resource is the key's ARN)

METRICS_SID = "DenyKitMetricsFromOthers"
PASS_ELSEWHERE_SID = "DenyPassReplicationRoleElsewhere"
RCP_SID = "DenyAssumeReplicationRoleButTheService"


@dataclass(frozen=True)
class Pipeline:
    """What one document guards of the pipeline (ARNs, or ARN patterns in an estate) and who may change it."""

    deploy_roles: tuple[str, ...] = ()
    replication_roles: tuple[str, ...] = ()
    detection: tuple[str, ...] = ()
    keys: tuple[KeyRef, ...] = ()
    # The scheduled job runs of the recovery account: their schedules, artifacts and schedules' roles, and who deploys
    # them besides the deploy roles (the recovery stack's, exempt from this guard alone).
    scheduled: tuple[str, ...] = ()
    scheduled_deployers: tuple[str, ...] = ()
    # Who publishes to the kit's metric namespace: the monitors, the replica-side checks and the recovery role.
    publishers: tuple[str, ...] = ()
    # (partition, kit name) of the kit's resources this layer closes by allow-list (`s3tables_kit.policies.allowlists`),
    # and the deploy roles whose reviewed set applies there (every stack's: source, replica, recovery).
    kit: tuple[str, str] | None = None
    kit_deployers: tuple[str, ...] = ()
    # The scheduled hardener's function, schedule, log group and role: break-glass only (`AL.KIT_HARDENER`).
    hardener: tuple[str, ...] = ()

    def __add__(self, other: Pipeline) -> Pipeline:
        def both(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(dict.fromkeys((*a, *b)))

        return Pipeline(
            deploy_roles=both(self.deploy_roles, other.deploy_roles),
            replication_roles=both(self.replication_roles, other.replication_roles),
            detection=both(self.detection, other.detection),
            keys=tuple(dict.fromkeys((*self.keys, *other.keys))),
            scheduled=both(self.scheduled, other.scheduled),
            scheduled_deployers=both(self.scheduled_deployers, other.scheduled_deployers),
            publishers=both(self.publishers, other.publishers),
            kit=self.kit or other.kit,
            kit_deployers=both(self.kit_deployers, other.kit_deployers),
            hardener=both(self.hardener, other.hardener),
        )


def detection_resources(site: assurance.Site, prefix: str) -> tuple[str, ...]:
    """The monitor's function, schedule, alarms (`<prefix>-replication-...`, `<prefix>-replica-bucket-policy-...`),
    alarm topic (and its subscriptions, `<topic>:<id>`) and log group (names: `s3tables_kit.policies.assurance`)."""
    topic = site.arn("sns", f"{prefix}-assurance-alarms")
    monitor = f"{prefix}-replication-monitor"
    return (
        site.arn("lambda", f"function:{monitor}"),
        site.arn("scheduler", f"schedule/default/{monitor}"),
        site.arn("cloudwatch", f"alarm:{prefix}-replica*"),
        topic,
        f"{topic}:*",
        site.arn("logs", f"log-group:{monitor}"),
    )


def hardener_resources(site: assurance.Site, cfg: KitConfig, src: Source) -> tuple[str, ...]:
    """The scheduled hardener's function, schedule, log group and roles (`[assurance.harden]`): it writes replica
    table policies and retention, so whoever could change its code, schedule or role would write them."""
    if not cfg.assurance.harden.enabled:
        return ()
    name = hardener.hardener_name(cfg, src)
    return (
        site.arn("lambda", f"function:{name}"),
        site.arn("scheduler", f"schedule/default/{name}"),
        site.arn("logs", f"log-group:{name}"),
        site.role_arn(name),
        site.role_arn(hardener.hardener_schedule_role_name(cfg, src)),
    )


def scheduled_jobs(cfg: KitConfig, account_id: str | None = None) -> Pipeline:
    """The recovery account's scheduled job runs (the vault backup, the rehearsal): their schedules, the artifacts
    they run (`SCHEDULED_ARTIFACTS_PREFIX` of the scripts bucket) and their schedules' roles, changed by the recovery
    stack's deploy role (or break-glass) only; `account_id`: nothing unless it is the recovery account."""
    rep = cfg.recovery_replica
    if account_id not in (None, rep.account_id):
        return Pipeline()
    site = assurance.recovery_site(cfg)
    runs = [(assurance.schedule_name(cfg, assurance.REHEARSAL_SCHEDULE), assurance.rehearsal_scheduler_role_name(cfg))]
    runs = runs if cfg.assurance.rehearsal.enabled else []
    if cfg.vault is not None and cfg.vault.tables:
        runs.append((assurance.schedule_name(cfg, BACKUP_SCHEDULE), backup_scheduler_role_name(cfg)))
    if not runs:
        return Pipeline()
    artifacts = f"arn:{rep.partition}:s3:::{cfg.recovery_scripts_bucket}/{contract.SCHEDULED_ARTIFACTS_PREFIX}*"
    return Pipeline(
        scheduled_deployers=(rep.deploy_role_arn,) if rep.deploy_role_arn else (),
        scheduled=(  # each schedule in a group of its own, of its name: deleting the group deletes the schedule
            *(schedule_arn(site, name, group=name) for name, _ in runs),
            *(schedule_group_arn(site, name) for name, _ in runs),
            artifacts,
            *(site.role_arn(role) for _, role in runs),
        ),
    )


def source_pipeline(cfg: KitConfig, src: Source) -> Pipeline:
    """One source's pipeline, by ARN: its replication role, its monitor and alarm topic key, its source key."""
    site = assurance.site_of(src)
    keys: list[KeyRef] = []
    if src.encryption.type == "kms":
        res, cond = kms_resource(cfg, src.encryption, account_id=src.account_id, region=src.region, bucket=src.bucket)
        keys.append((res, _alias(cond)))
    monitor = cfg.assurance.monitor.enabled
    if monitor:
        keys.append((site.arn("kms", "key/*"), assurance.alarm_key_alias(cfg, "source", src)))
    detection = detection_resources(site, cfg.name_prefix_of(src)) if monitor else ()
    return Pipeline(
        deploy_roles=(src.deploy_role_arn,) if src.deploy_role_arn else (),
        replication_roles=(cfg.replication_role_arn_of(src),),
        detection=detection,
        hardener=hardener_resources(site, cfg, src),
        keys=tuple(keys),
        publishers=(site.role_arn(assurance.monitor_role_name(cfg, src)),) if monitor else (),
    )


def _alias(cond: dict[str, dict[str, object]] | None) -> str | None:
    if cond is None:
        return None
    alias = cond["ForAnyValue:StringEquals"]["kms:ResourceAliases"]
    return str(alias)


def monitor_roles(cfg: KitConfig) -> list[str]:
    """The sources' monitor roles by ARN (none when the monitor is off)."""
    if not cfg.assurance.monitor.enabled:
        return []
    return [assurance.site_of(s).role_arn(assurance.monitor_role_name(cfg, s)) for s in cfg.sources]


def recovery_publishers(cfg: KitConfig) -> Pipeline:
    return Pipeline(publishers=(cfg.recovery_role_arn,) if cfg.assurance.rehearsal.enabled else ())


def replica_checks(cfg: KitConfig, account_id: str | None = None) -> Pipeline:
    """The replica-side freshness checks (`s3tables_kit.policies.freshness`): in one account by ARN (a guardrail), or
    every one (an SCP) by their names in any account and Region, so the document does not grow with the replica accounts
    (a Deny broader than needed). The replica stacks' deploy roles deploy them: they join the deploy roles, whose
    exemption binds only in their own account (every guarded action acts there), where the pipeline holds nothing
    else unless a source shares the account."""
    accounts = freshness.accounts(cfg)
    if account_id is not None:
        accounts = [a for a in accounts if a == account_id]
    if not accounts:
        return Pipeline()
    site = assurance.Site(estate.partition(cfg), "*", "*") if account_id is None else freshness.site(cfg, account_id)
    return kit_scope(cfg, account_id=account_id) + Pipeline(
        deploy_roles=tuple(d for a in accounts for d in freshness.deploy_roles(cfg, a)),
        detection=detection_resources(site, freshness.prefix(cfg)),
        publishers=tuple(freshness.role_arn(cfg, a) for a in accounts),
    )


def kit_scope(cfg: KitConfig, *, by_name: bool = False, account_id: str | None = None) -> Pipeline:
    """The kit's resources (closed by allow-list) and every deploy role of the topology (the sources', the
    replicas', the recovery stack's) by ARN, or the sources' by name in any account (an estate's SCP); `account_id`:
    those of one account (a guardrail: the actions act in the caller's own account)."""
    sources = estate.deploy_role_name_patterns(cfg) if by_name else [s.deploy_role_arn for s in cfg.sources]
    deployers = [*sources, *(r.deploy_role_arn for r in cfg.replicas)]
    if account_id is not None:
        deployers = [d for d in deployers if d and d.split(":")[4] == account_id]
    return Pipeline(kit=(estate.partition(cfg), cfg.kit.name), kit_deployers=tuple(sorted({d for d in deployers if d})))


def sources_by_arn(cfg: KitConfig) -> Pipeline:
    """Every source's pipeline, by ARN, and the recovery role's publishing."""
    out = recovery_publishers(cfg) + kit_scope(cfg)
    for src in cfg.sources:
        out += source_pipeline(cfg, src)
    return out


def by_arn(cfg: KitConfig) -> Pipeline:
    """Every source's pipeline and the replica-side checks (a `[source]`'s SCP)."""
    return sources_by_arn(cfg) + replica_checks(cfg)


def by_pattern(cfg: KitConfig, account_id: str = "*") -> Pipeline:
    """An estate's pipeline by the kit's name patterns, in any account (the SCP: constant in size) or in one (a
    guardrail; the deploy roles of that account's sources by ARN)."""
    p = estate.partition(cfg)
    site = assurance.Site(p, account_id, "*")
    kit = cfg.kit.name
    monitor = cfg.assurance.monitor.enabled
    if account_id == "*":
        deploy = tuple(estate.deploy_role_name_patterns(cfg))
    else:
        deploy = tuple(
            sorted({s.deploy_role_arn for s in cfg.sources if s.account_id == account_id and s.deploy_role_arn})
        )
    return (
        recovery_publishers(cfg)
        + kit_scope(cfg, by_name=account_id == "*", account_id=None if account_id == "*" else account_id)
        + Pipeline(
            deploy_roles=deploy,
            replication_roles=(f"arn:{p}:iam::{account_id}:role/{kit}-*-s3tables-replication",),
            detection=detection_resources(site, f"{kit}-*") if monitor else (),
            # every key of the kit's aliases (source, alarm topic; replica keys are guarded harder by their tag)
            keys=((site.arn("kms", "key/*"), f"alias/{kit}-*"),) if _any_kms(cfg) or monitor else (),
            publishers=(f"arn:{p}:iam::{account_id}:role/{kit}-*-replication-monitor",) if monitor else (),
        )
        + _checks_by_pattern(cfg, site, account_id)
    )


def _checks_by_pattern(cfg: KitConfig, site: assurance.Site, account_id: str) -> Pipeline:
    """An estate's replica-side checks: their function, schedule, alarms, topic and log group carry the monitors' name
    forms, so the detection patterns above guard them (and their deployers' names are the estate's deploy role
    names); what is added is their role among the publishers (by name in any account, by ARN in one)."""
    if not cfg.assurance.monitor.enabled:
        return Pipeline()
    if account_id != "*":
        return Pipeline(publishers=replica_checks(cfg, account_id).publishers)
    return Pipeline(publishers=(site.role_arn(freshness.role_name(cfg)),))


def _any_kms(cfg: KitConfig) -> bool:
    return any(s.encryption.type == "kms" for s in cfg.sources)


# ---------------------------------------------------------------- statements ----


def guards(
    g: Pipeline, *, break_glass: Sequence[str], namespace: str, kit_keys: bool = True
) -> list[iam_statements.Statement | None]:
    """The pipeline's denies in one layer (SCP: `break_glass` exempt; a guardrail: none, it binds neither them nor
    the kit's roles). The kit's roles, functions, schedules, alarms, topics, log groups and keys are closed by their
    allow-lists (`s3tables_kit.policies.allowlists.KIT_SCOPES`; `kit_keys` False: the keys' are in another SCP of the
    same targets, `kit_key_statements`); the scheduled job runs and bring-your-own keys by their rules."""
    exempt = [*break_glass, *g.deploy_roles]
    targets = {"replication-roles": g.replication_roles, "detection": g.detection, "scheduled": g.scheduled}
    out: list[iam_statements.Statement | None] = []
    if g.kit is not None:
        out += kit_allowlists(g.kit, g.kit_deployers, break_glass=break_glass, keys=kit_keys)
    if g.hardener and g.kit is not None:
        roles = {AL.KIT_ROLES: list(AL.kit_roles(*g.kit))} if break_glass else {}
        out += AL.KIT_HARDENER.statements(g.hardener, {AL.BREAK_GLASS: list(break_glass), **roles})
    for rule in iam_actions.PIPELINE_RULES:
        if rule.target == "keys":
            out += _key_guards(rule, g.keys if g.kit is None else [k for k in g.keys if k[1] is None], exempt)
        elif rule.alone and targets[rule.target]:
            deployers = g.scheduled_deployers if rule.target == "scheduled" else ()
            out.append(iam_statements.deny_except(rule.sid, rule.actions, targets[rule.target], [*exempt, *deployers]))
    if g.publishers:
        out.append(iam_statements.deny_foreign_metrics(METRICS_SID, namespace, [*break_glass, *g.publishers]))
    if g.replication_roles:
        out.append(iam_statements.deny_pass_role_elsewhere(PASS_ELSEWHERE_SID, g.replication_roles, break_glass))
    return out


def kit_allowlists(
    kit: tuple[str, str], deployers: Sequence[str], *, break_glass: Sequence[str], keys: bool = True
) -> list[iam_statements.Statement | None]:
    """The kit's resources (and keys) closed by allow-list in one layer: break-glass exempt (an SCP), the kit's roles
    held by their own policies (an SCP: a guardrail is attached to none of them), the deploy roles to their
    reviewed set."""
    partition, name = kit
    principals = {AL.BREAK_GLASS: list(break_glass), AL.DEPLOY: sorted(set(deployers))}
    roles = {AL.KIT_ROLES: list(AL.kit_roles(partition, name))} if break_glass else {}
    out: list[iam_statements.Statement | None] = [
        *AL.KIT_RESOURCES.statements(AL.kit_resources(partition, name), {**principals, **roles})
    ]
    if keys:
        out += AL.KIT_KEYS.statements(AL.kit_key_resources(partition), principals, condition=AL.kit_key_condition(name))
    return out


def kit_key_statements(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """The kit's keys' allow-list in the organization's layer, in the SCP that holds the replicas' denies (a failover
    topology's: the guards SCP), as the pipeline SCP has no room for it (5,120 characters)."""
    scope = kit_scope(cfg, by_name=cfg.scheme.key == "sources")
    assert scope.kit is not None
    partition, name = scope.kit
    principals = {AL.BREAK_GLASS: list(cfg.protection.break_glass_principals), AL.DEPLOY: list(scope.kit_deployers)}
    return list(
        AL.KIT_KEYS.statements(AL.kit_key_resources(partition), principals, condition=AL.kit_key_condition(name))
    )


def _key_guards(
    rule: iam_actions.PipelineRule, keys: Sequence[KeyRef], exempt: Sequence[str]
) -> list[iam_statements.Statement | None]:
    """Kit-created keys by alias (their ARN is unknown until apply), bring-your-own keys by ARN."""
    by_alias = sorted({a for _r, a in keys if a is not None})
    alias_resources = sorted({r for r, a in keys if a is not None})
    own = sorted({r for r, a in keys if a is None})
    cond_key = "ForAnyValue:StringLike" if any("*" in a for a in by_alias) else "ForAnyValue:StringEquals"
    return [
        iam_statements.deny_except(
            rule.sid, rule.actions, alias_resources, exempt, {cond_key: {"kms:ResourceAliases": by_alias}}
        )
        if by_alias
        else None,
        iam_statements.deny_except(rule.sid.replace("Source", "SourceOwn"), rule.actions, own, exempt) if own else None,
    ]


def service_control_policy(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """The pipeline SCP of a topology: by ARN for a `[source]`, by pattern for an estate."""
    bg = cfg.protection.break_glass_principals
    if cfg.scheme.key != "sources":
        return guards(
            by_arn(cfg) + scheduled_jobs(cfg), break_glass=bg, namespace=assurance.METRIC_NAMESPACE, kit_keys=False
        )
    accounts = sorted({r.account_id for r in cfg.replicas})
    return [
        *guards(
            by_pattern(cfg) + scheduled_jobs(cfg), break_glass=bg, namespace=assurance.METRIC_NAMESPACE, kit_keys=False
        ),
        replica_account_role_creation(cfg, accounts, "DenyReplicationRoleCreationInReplicaAccounts", bg),
    ]


def guardrail_statements(cfg: KitConfig, account_id: str) -> list[iam_statements.Statement | None]:
    """The pipeline's second layer in an account's pipeline guardrail: the kit's allow-lists, the pipeline of the
    sources of that account (by ARN) or its replica-side check, and in an estate the guard against minting a role
    under the replication name pattern there."""
    estate_scheme = cfg.scheme.key == "sources"
    here = replica_checks(cfg, account_id)  # the account's own replica-side check (a replica account)
    if any(s.account_id == account_id for s in cfg.sources):
        # in an estate the check is among the detection patterns
        g = by_pattern(cfg, account_id) if estate_scheme else sources_by_arn(cfg) + here
    else:
        g = here
    g += kit_scope(cfg, account_id=account_id)
    out = guards(g, break_glass=(), namespace=assurance.METRIC_NAMESPACE)
    if estate_scheme:
        out.append(replica_account_role_creation(cfg, [account_id], "DenyReplicationRoleCreationHere", ()))
    return out


def guardrail_policy_arn(cfg: KitConfig, account_id: str) -> str:
    return f"arn:{estate.partition(cfg)}:iam::{account_id}:policy/{cfg.pipeline_guardrail_policy_name}"


def source_account_guardrail(cfg: KitConfig, account_id: str) -> Document:
    """The pipeline's second layer in a source account without a replica: the guardrail's pipeline denies for the
    sources of that account, attached to its configured roles, which cannot detach or rewrite it (nor can anyone but
    break-glass: the guards SCP)."""
    own = [parts.part_pattern(guardrail_policy_arn(cfg, account_id))]  # every part of it
    if any(r.account_id == account_id for r in cfg.replicas):  # carried beside the guardrail: it guards both
        own.append(
            parts.part_pattern(f"arn:{estate.partition(cfg)}:iam::{account_id}:policy/{cfg.guardrail_policy_name}")
        )
    return doc(
        *guardrail_statements(cfg, account_id),
        iam_statements.deny_guardrail_change(own, ()),
        iam_statements.deny_guardrail_detach(own, ()),
    )


def replica_account_role_creation(
    cfg: KitConfig, accounts: Sequence[str], sid: str, break_glass: Sequence[str]
) -> iam_statements.Statement | None:
    """An estate: creating a role under the replication (or monitor) name pattern in a replica account, to all but
    break-glass and the deploy roles of the sources of that account (exact ARNs). The SCP's creation guard exempts
    the deploy roles by name, which a replica account's deploy role (the vault's) also carries."""
    if not accounts:
        return None
    p = estate.partition(cfg)
    kit = cfg.kit.name
    names = (f"{kit}-*-s3tables-replication", f"{kit}-*-replication-monitor")
    resources = [f"arn:{p}:iam::{acct}:role/{n}" for acct in accounts for n in names]
    deploy = [s.deploy_role_arn for s in cfg.sources if s.account_id in accounts and s.deploy_role_arn]
    return iam_statements.deny_except(sid, [iam_actions.ROLE_CREATION], resources, [*break_glass, *deploy])


# ---------------------------------------------------------------- resource control policy ----


def resource_control_policy(cfg: KitConfig, role_arns: Sequence[str] | None = None) -> Document:
    """Nobody but the replication service (and break-glass) assumes a replication role: by ARN for a `[source]`
    (`role_arns` for a failover topology), by the name pattern in an estate."""
    if role_arns is None:
        role_arns = (
            [estate.replication_role_pattern(cfg)] if cfg.scheme.key == "sources" else list(cfg.replication_role_arns)
        )
    return doc(
        iam_statements.rcp_deny_assume_but_service(
            RCP_SID, role_arns, iam_actions.REPLICATION_SERVICE, cfg.protection.break_glass_principals
        )
    )
