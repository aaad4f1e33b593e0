"""The documents of a promoted replica (`[failover]`): a protected *primary*, and the topology around it.

After `DisassociateTableReplication` a replica table is a standalone writable table, but the kit's replica documents
still deny every data write to all but break-glass, the replication role and maintenance. A promoted bucket gets:

- **writers allowed**: the configured `failover.writer_roles` of its account may write data and move the metadata
  pointer (`PutTableData`, `UpdateTableMetadataLocation`) and create namespaces and tables (a primary grows);
- **everything else break-glass only**: after a failover the promoted bucket holds the only writable
  copy of the data, so deleting, renaming, record expiration, retention (`Put*MaintenanceConfiguration`),
  encryption, replication changes, `DisassociateTableReplication`, tags and policy rewrites are denied to all but
  break-glass in every layer. The deploy role keeps only `PROMOTED_DEPLOY_ACTIONS` (creating the bucket-level
  replication from the promoted bucket, what `cdktf deploy` of the failover topology does there); the failed source's
  replication role keeps nothing;
- **break-glass kept** everywhere, with the same cross-account grants.

The same rules reach every layer: bucket policy, table policies (applied by the failover tool to each promoted
table), the account's IAM guardrail and the organization SCP (both deployed by Terraform through the replica and
organization stacks of the failover topology). One builder serves both paths: the stacks deploy and
`s3tables-kit failover` applies `compact_json`/`json.dumps(..., indent=2)` of these same dicts, so Terraform and the
tool never fight. Documents are assembled only from the statement builders; Sids say what each deny is for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from s3tables_kit.policies import estate, pipeline, protection, vault
from s3tables_kit.policies.actions import PROTECTION_RULES, ProtectionRule, promoted_rules
from s3tables_kit.policies.assurance import (
    METRIC_NAMESPACE,
    Site,
    monitors_read_bucket_policy,
    monitors_read_table_layers,
)
from s3tables_kit.policies.documents import (
    Document,
    KeySite,
    PolicyDoc,
    break_glass_grants,
    doc,
    example_table_arn,
    guardrail_policy_arn,
    kms_key_policy,
    replication_permissions,
    replication_trust,
)
from s3tables_kit.policies.documents import recovery_role_permissions as _recovery_role_permissions
from s3tables_kit.policies.parts import managed_policy_docs, part_pattern
from s3tables_kit.policies.protection import (
    Exemptions,
    by_exemptions,
    createtable_dependents_allowed,
    guardrail_guards,
    merged_rules,
    protection_statements,
    replication_grants,
    scp_guards,
)
from s3tables_kit.policies.source_guard import source_deploy_roles
from s3tables_kit.policies.statements import (
    Statement,
    deny_bucket_tag_change,
    deny_pass_other_replication_role,
    kms_allow_key_use,
    statement,
    table_arns,
)
from s3tables_kit.topology.config import KitConfig, Replica
from s3tables_kit.topology.failover import FailoverTopology, failover_topology, source_promotion

PROMOTED_SID_PREFIX = "DenyPromoted"
FAILOVER_DEST_SID_PREFIX = "DenyFailoverReplica"


def promoted_sid(rule_sid: str) -> str:
    return PROMOTED_SID_PREFIX + rule_sid.removeprefix("DenyReplica")


# ---------------------------------------------------------------- the promoted bucket ----


def promoted_exemptions(cfg: KitConfig, topo: FailoverTopology) -> Exemptions:
    """Break-glass, the writers and the promoted account's deploy role; no replication role (the failed
    source's role no longer writes the promoted bucket). Which rule exempts whom: `promoted_rules`."""
    return Exemptions(
        break_glass=tuple(cfg.protection.break_glass_principals),
        deploy_roles=protection.deploy_roles([topo.promoted]),
        writers=topo.writer_roles,
    )


def _promoted_statements(
    cfg: KitConfig, topo: FailoverTopology, kind: str, *, bucket_arns: Sequence[str], table_resources: Sequence[str]
) -> list[Statement | None]:
    return protection_statements(
        kind,
        bucket_arns=bucket_arns,
        table_resources=table_resources,
        exemptions=promoted_exemptions(cfg, topo),
        rules=promoted_rules(deploy_sets_up_replication=protection.deploy_sets_up_replication(cfg)),
        sid=promoted_sid,
    )


def promoted_bucket_policy(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """Replaces the replica-protection bucket policy of the promoted bucket: writers write and create namespaces and
    tables; everything else the replica rules deny stays break-glass only, but for the one action the deploy role
    keeps (`PROMOTED_DEPLOY_ACTIONS`). No grant or exemption for the failed source's replication role any more (it
    holds the only writable copy): it can neither write nor create anything here."""
    p = topo.promoted
    ex = promoted_exemptions(cfg, topo)
    return doc(
        *break_glass_grants(cfg, p),
        *_promoted_statements(
            cfg, topo, "bucket-policy", bucket_arns=[p.bucket_arn], table_resources=[table_arns(p.bucket_arn)]
        ),
        deny_bucket_tag_change("DenyPromotedBucketTagChange", p.bucket_arn, [*ex.break_glass, *ex.deploy_roles]),
    )


def promoted_table_policy(cfg: KitConfig, topo: FailoverTopology, table_arn: str) -> Document:
    """Replaces the replica table policy of one promoted table: the bucket policy's table-level denies, for this
    table (writers write, break-glass alone deletes it or changes its retention, encryption, replication or
    policy)."""
    return doc(*_promoted_statements(cfg, topo, "table-policy", bucket_arns=[], table_resources=[table_arn]))


@dataclass(frozen=True)
class FailoverDocuments:
    """What the failover tool applies to a promoted bucket (the interface with `s3tables_kit.jobs.failover`)."""

    replica: Replica
    topology: FailoverTopology
    bucket_policy: Document  # replaces the replica-protection bucket policy of the promoted bucket
    _cfg: KitConfig

    def table_policy(self, table_arn: str) -> Document:
        """Replaces each promoted table's replica table policy."""
        return promoted_table_policy(self._cfg, self.topology, table_arn)

    def bucket_policy_json(self) -> str:
        """The bucket policy exactly as the replica stack deploys it (`ReplicaBucketPolicy`: indent=2): what the
        tool puts, so `terraform plan` afterwards shows no change."""
        return json.dumps(self.bucket_policy, indent=2)

    def table_policy_json(self, table_arn: str) -> str:
        """The table policy in the form `make harden` applies replica table policies (`json.dumps`, no indent);
        table policies are not Terraform's (a table's ARN exists only once the table does)."""
        return json.dumps(self.table_policy(table_arn))

    @property
    def writers(self) -> tuple[str, ...]:
        return self.topology.writer_roles

    @property
    def break_glass(self) -> tuple[str, ...]:
        return tuple(self._cfg.protection.break_glass_principals)


def failover_documents(cfg: KitConfig, replica_bucket: str) -> FailoverDocuments:
    """The documents of promoting `replica_bucket` (the configured promotion when it names that bucket)."""
    topo = failover_topology(cfg, replica_bucket)
    return FailoverDocuments(
        replica=topo.promoted, topology=topo, bucket_policy=promoted_bucket_policy(cfg, topo), _cfg=cfg
    )


# ---------------------------------------------------------------- destinations of the promoted source ----


def destination_exemptions(cfg: KitConfig, topo: FailoverTopology, replica: Replica) -> Exemptions:
    return Exemptions(
        break_glass=tuple(cfg.protection.break_glass_principals),
        replication_roles=topo.replication_roles_for(replica),
        deploy_roles=protection.deploy_roles([replica]),
        createtable_dependents=createtable_dependents_allowed(cfg),
    )


def destination_bucket_policy(cfg: KitConfig, topo: FailoverTopology, dest: Replica) -> Document:
    """A destination of the promoted source (a remaining replica or a new bucket): the replica protection, with the
    failover replication role in place of the failed source's (which can no longer write here: when the failed
    Region comes back, its stale replication cannot overwrite what the promoted source replicates)."""
    arn = dest.bucket_arn
    cross_account = dest.account_id != topo.promoted.account_id
    return doc(
        *(replication_grants("Failover", topo.replication_role_arn, arn) if cross_account else []),
        *break_glass_grants(cfg, dest),
        monitors_read_bucket_policy(_promoted_monitor_roles(cfg, topo) if cross_account else [], arn),
        monitors_read_table_layers(_promoted_monitor_roles(cfg, topo) if cross_account else [], arn),
        *protection_statements(
            "bucket-policy",
            bucket_arns=[arn],
            table_resources=[table_arns(arn)],
            exemptions=destination_exemptions(cfg, topo, dest),
        ),
    )


def _promoted_monitor_roles(cfg: KitConfig, topo: FailoverTopology) -> list[str]:
    """The role of the promoted source's replication monitor (`<kit>-fo-replication-monitor`, as
    `s3tables_kit.infra.stacks.failover.failover_monitor_config` names it), which compares each destination's bucket
    policy."""
    if not cfg.assurance.monitor.enabled:
        return []
    p = topo.promoted
    return [Site(p.partition, p.account_id, p.region).role_arn(f"{topo.name_prefix}-replication-monitor")]


def destination_table_policy(cfg: KitConfig, topo: FailoverTopology, dest: Replica, table_arn: str) -> Document:
    ex = destination_exemptions(cfg, topo, dest)
    return destination_table_policy_of(
        table_arn=table_arn,
        break_glass_principals=ex.break_glass,
        replication_role_arns=ex.replication_roles,
        deploy_role_arns=ex.deploy_roles,
    )


def destination_table_policy_of(
    *,
    table_arn: str,
    break_glass_principals: Sequence[str],
    replication_role_arns: Sequence[str],
    deploy_role_arns: Sequence[str] = (),
) -> Document:
    """`destination_table_policy` from what the deployment outputs carry (`make harden` has no configuration):
    the same document for the same principals."""
    ex = Exemptions(
        break_glass=tuple(break_glass_principals),
        replication_roles=tuple(replication_role_arns),
        deploy_roles=tuple(sorted(set(deploy_role_arns))),
    )
    return doc(*protection_statements("table-policy", bucket_arns=[], table_resources=[table_arn], exemptions=ex))


# ---------------------------------------------------------------- the failover replication role ----


def replication_role_trust(topo: FailoverTopology) -> Document:
    return replication_trust(topo.promoted)


def replication_role_permissions(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """The user guide's replication permissions, from the promoted bucket to the destinations, plus KMS."""
    return replication_permissions(cfg, topo.promoted, topo.destinations)


# ---------------------------------------------------------------- KMS key policies ----


def key_policy(cfg: KitConfig, topo: FailoverTopology, site: KeySite) -> Document:
    """A kit-created key of the failover topology: the replica key policy (deletion, policy change and untagging
    stay break-glass only), plus key use for the failover replication role (read on the promoted key, write on a
    destination's) and, on the promoted key, for the writers. Changing a replica key's policy is break-glass only:
    the failover topology is deployed with break-glass credentials, like every protection change."""
    base = kms_key_policy(cfg, site)
    # Recovery reads a replica of the new source (`topo.recovery_replica`), no longer `recovery.replica`.
    reads = topo.recovery_replica
    statements = [
        s for s in base["Statement"] if s.get("Sid") != RECOVERY_KEY_SID or reads is None or site.bucket == reads.bucket
    ]
    extra: list[Statement | None] = []
    if reads is not None and site.bucket == reads.bucket and site.bucket != cfg.recovery.replica:
        extra.append(kms_allow_key_use(RECOVERY_KEY_SID, [cfg.recovery_role_arn], ["Decrypt"]))
    if site.bucket == topo.promoted.bucket:
        extra.append(
            kms_allow_key_use(
                "AllowFailoverReplicationRoleReadSource", [topo.replication_role_arn], ["Decrypt", "GenerateDataKey"]
            )
        )
        if cfg.assurance.monitor.enabled:  # the failover topology's monitor reads the new source's metadata
            extra.append(
                kms_allow_key_use("AllowFailoverMonitorReadSourceMetadata", [monitor_role_arn(topo)], ["Decrypt"])
            )
        if topo.writer_roles:
            extra.append(
                kms_allow_key_use(
                    "AllowFailoverWritersUseKey", list(topo.writer_roles), ["Decrypt", "Encrypt", "GenerateDataKey"]
                )
            )
    elif any(d.bucket == site.bucket for d in topo.destinations):
        extra.append(
            kms_allow_key_use(
                "AllowFailoverReplicationRoleWriteReplica",
                [topo.replication_role_arn],
                ["Decrypt", "Encrypt", "GenerateDataKey"],
            )
        )
    return doc(*statements, *extra)


RECOVERY_KEY_SID = "AllowRecoveryRoleReadReplica"  # s3tables_kit.policies.keys.kms_key_policy's statement


# ---------------------------------------------------------------- recovery ----


def recovery_role_permissions(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """The recovery role of the failover topology: the same role, bucket and grants, but it reads the replica of the
    new source (`topo.recovery_replica`) and is denied writes to every bucket of the topology, the promoted one
    included (recovery never writes a replica, promoted or not; writers are `failover.writer_roles`)."""
    if topo.recovery_replica is None:
        raise ValueError(f"promoting {topo.promoted.bucket}: no replica of the new source in the recovery account")
    return _recovery_role_permissions(cfg, reads=topo.recovery_replica)


def monitor_role_arn(topo: FailoverTopology) -> str:
    """The failover topology's monitor role (`s3tables_kit.policies.assurance.monitor_role_name` of the `<kit>-fo`
    configuration)."""
    return topo.promoted.role_arn(f"{topo.name_prefix}-replication-monitor")


def key_sites(cfg: KitConfig, topo: FailoverTopology) -> list[KeySite]:
    """Kit-created keys of the promoted bucket, the destinations and the retained replicas."""
    out = []
    for r in (topo.promoted, *topo.destinations, *topo.retained):
        if r.encryption.creates_key:
            out.append(KeySite("replica", r.account_id, r.region, r.bucket, r.bucket_arn))
    return out


# ---------------------------------------------------------------- guardrail and SCPs ----


def accounts(topo: FailoverTopology) -> list[str]:
    return sorted({r.account_id for r in (topo.promoted, *topo.protected)})


def privileged_roles(cfg: KitConfig, topo: FailoverTopology) -> list[str]:
    """As before the failover, with the failover replication role and the pipeline of both sources: the failed
    source's deploy and monitor roles, the promoted bucket's monitor role (its deploy role is a replica's); the
    vault's roles (the vault outlives a failover)."""
    return protection.privileged_roles(
        cfg.protection.break_glass_principals,
        (topo.promoted, *topo.protected),
        [topo.failed_replication_role_arn, topo.replication_role_arn],
        pipeline_roles=[*source_deploy_roles(cfg), *pipeline_of(cfg, topo).publishers, *vault.privileged_roles(cfg)],
    )


def pipeline_of(cfg: KitConfig, topo: FailoverTopology) -> pipeline.Pipeline:
    """The failover topology's pipeline: the failed source's (its stacks stay) and the promoted bucket's, the new
    source (the failover replication role, the `<kit>-fo` monitor and its alarm topic key; the promoted bucket's
    key is a replica key, guarded by its tag)."""
    p = topo.promoted
    site = Site(p.partition, p.account_id, p.region)
    monitor = cfg.assurance.monitor.enabled
    promoted = pipeline.Pipeline(
        deploy_roles=(p.deploy_role_arn,) if p.deploy_role_arn else (),
        replication_roles=(topo.replication_role_arn,),
        detection=pipeline.detection_resources(site, topo.name_prefix) if monitor else (),
        keys=((site.arn("kms", "key/*"), f"alias/{topo.name_prefix}-assurance-alarms"),) if monitor else (),
        publishers=(monitor_role_arn(topo),) if monitor else (),
    )
    return pipeline.by_arn(cfg) + promoted


def service_control_policy_pipeline(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """The pipeline SCP of the failover topology (`s3tables_kit.policies.pipeline`): both sources' pipelines and,
    as in the normal topology, the scheduled job runs (`pipeline.scheduled_jobs`)."""
    bg = cfg.protection.break_glass_principals
    jobs = replace(pipeline.scheduled_jobs(cfg), deploy_roles=pipeline_of(cfg, topo).deploy_roles)
    return doc(
        *pipeline.guards(
            pipeline_of(cfg, topo),
            break_glass=bg,
            namespace=METRIC_NAMESPACE,
            kit_keys=False,  # in the replicas' SCP, as in the normal topology
        ),
        *pipeline.guards(jobs, break_glass=bg, namespace=METRIC_NAMESPACE),  # the scheduled job runs
    )


def pipeline_in(cfg: KitConfig, topo: FailoverTopology, account_id: str) -> pipeline.Pipeline | None:
    """The part of the topology's pipeline that lives in one account (None: none does); IAM, Lambda, Scheduler,
    CloudWatch, Logs and KMS key administration act within the caller's account, so the rest binds nobody here."""
    g = pipeline_of(cfg, topo)

    def here(arns: Sequence[str]) -> tuple[str, ...]:
        return tuple(a for a in arns if a.split(":")[4] == account_id)

    own = pipeline.Pipeline(
        deploy_roles=here(g.deploy_roles),
        replication_roles=here(g.replication_roles),
        detection=here(g.detection),
        keys=tuple(k for k in g.keys if k[0].split(":")[4] == account_id),
        publishers=here(g.publishers),
        kit=g.kit,
        kit_deployers=here(g.kit_deployers),
        hardener=here(g.hardener),
    )
    return own if own.replication_roles or own.detection or own.keys or own.kit is not None else None


def pipeline_guardrail(cfg: KitConfig, topo: FailoverTopology, account_id: str) -> Document:
    """The pipeline's identity layer in an account of the failover topology that holds a guardrail and a part of
    the pipeline (the promoted bucket's; the failed source's where it shares the account): the pipeline SCP's
    denies for that account, in a managed policy of its own beside the guardrail and attached to the same roles,
    because the promoted account's guardrail leaves too little of its 6,144 characters. The guardrail and the
    guards SCP deny detaching or rewriting it."""
    g = pipeline_in(cfg, topo, account_id)
    if g is None:
        raise ValueError(f"account {account_id} holds no part of the pipeline of promoting {topo.promoted.bucket}")
    return doc(*pipeline.guards(g, break_glass=(), namespace=METRIC_NAMESPACE))


def guardrail_arns(cfg: KitConfig, topo: FailoverTopology, account_ids: Sequence[str]) -> list[str]:
    """The guardrails of those accounts and, where an account has one, its pipeline guardrail."""
    out = []
    for acct in account_ids:
        arn = guardrail_policy_arn(cfg, acct)
        out.append(part_pattern(arn))  # every part of it
        if pipeline_in(cfg, topo, acct) is not None:
            out.append(part_pattern(arn.rsplit("/", 1)[0] + "/" + cfg.pipeline_guardrail_policy_name))
    return out


@dataclass(frozen=True)
class _SiteGroup:
    sid_prefix: str
    exemptions: Exemptions
    rules: tuple[ProtectionRule, ...]
    replicas: tuple[Replica, ...]


def _site_groups(cfg: KitConfig, topo: FailoverTopology, replicas: Sequence[Replica]) -> list[_SiteGroup]:
    """Sites grouped by exemptions and rules: retained replicas, destinations, the promoted bucket."""
    bg = tuple(cfg.protection.break_glass_principals)
    retained = tuple(r for r in replicas if r in topo.retained)
    dests = tuple(r for r in replicas if r in topo.destinations)
    ct = createtable_dependents_allowed(cfg)
    out: list[_SiteGroup] = []
    if retained:
        ex = Exemptions(
            bg, (topo.failed_replication_role_arn,), protection.deploy_roles(retained), createtable_dependents=ct
        )
        out.append(_SiteGroup("DenyReplica", ex, PROTECTION_RULES, retained))
    if dests:
        ex = Exemptions(bg, (topo.replication_role_arn,), protection.deploy_roles(dests), createtable_dependents=ct)
        out.append(_SiteGroup(FAILOVER_DEST_SID_PREFIX, ex, PROTECTION_RULES, dests))
    if topo.promoted in replicas:
        out.append(
            _SiteGroup(
                PROMOTED_SID_PREFIX,
                promoted_exemptions(cfg, topo),
                promoted_rules(deploy_sets_up_replication=protection.deploy_sets_up_replication(cfg)),
                (topo.promoted,),
            )
        )
    return out


def _prefixed(prefix: str) -> Callable[[str], str]:
    return lambda sid: prefix + sid.removeprefix("DenyReplica")


def _layer(cfg: KitConfig, topo: FailoverTopology, replicas: Sequence[Replica], kind: str) -> list[Statement | None]:
    out: list[Statement | None] = []
    for g in _site_groups(cfg, topo, replicas):
        ex = g.exemptions.for_guardrail() if kind == "identity" else g.exemptions
        out += protection_statements(
            kind,
            bucket_arns=[r.bucket_arn for r in g.replicas],
            table_resources=[table_arns(r.bucket_arn) for r in g.replicas],
            exemptions=ex,
            rules=merged_rules(g.rules, by_exemptions(ex)),
            sid=_prefixed(g.sid_prefix),
        )
    return out


def guardrail(cfg: KitConfig, topo: FailoverTopology, account_id: str) -> Document:
    """The account's IAM guardrail in the failover topology: the replica guardrail's denies for the account's
    protected replicas, and the promoted bucket's for writers and the deploy role that carry it."""
    reps = [r for r in (topo.promoted, *topo.protected) if r.account_id == account_id]
    return doc(
        *_layer(cfg, topo, reps, "identity"),
        *guardrail_guards(
            reps,
            privileged=[a for a in privileged_roles(cfg, topo) if a.split(":")[4] == account_id],
            guardrail_arns=guardrail_arns(cfg, topo, [account_id]),
        ),
        deny_pass_other_replication_role("DenyPassOtherReplicationRole", kit_replication_roles(topo), ()),
    )


def kit_replication_roles(topo: FailoverTopology) -> list[str]:
    """The roles the kit passes to the replication service in the failover topology: the failed source's (its
    configuration may still be read or removed by break-glass) and the failover role."""
    return sorted({topo.failed_replication_role_arn, topo.replication_role_arn})


def scp_promoted_name(cfg: KitConfig) -> str:
    return f"{cfg.kit.name}-protect-s3tables-promoted"


def service_control_policy(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """The first SCP of the failover topology, on the organization's targets: the replica denies on every protected
    replica (retained and destinations), break-glass exempt; the promoted bucket closed to every other account
    (`DenyPromotedToOtherAccounts`). The SCP is the
    coarse organisation-wide layer: it exempts whichever replication role writes any of them (both after a failover
    to remaining replicas); the bucket and table policies say precisely which role writes which bucket. SCPs do not
    restrict service principals."""
    reps = list(topo.protected)
    roles = tuple(sorted({a for r in reps for a in topo.replication_roles_for(r)}))
    ex = Exemptions(
        tuple(cfg.protection.break_glass_principals),
        roles,
        protection.deploy_roles(reps),
        createtable_dependents=createtable_dependents_allowed(cfg),
    )
    return doc(
        *protection_statements(
            "scp",
            bucket_arns=[r.bucket_arn for r in reps],
            table_resources=[table_arns(r.bucket_arn) for r in reps],
            exemptions=ex,
            rules=merged_rules(PROTECTION_RULES, by_exemptions(ex)),
        ),
        deny_promoted_to_other_accounts(cfg, topo),
    )


# What a principal of another account may do on the promoted bucket: read (its bucket policy grants no other
# account anything else: the writers and the deploy role it exempts are of the promoted bucket's account).
PROMOTED_READS = ("s3tables:Get*", "s3tables:List*")


def deny_promoted_to_other_accounts(cfg: KitConfig, topo: FailoverTopology) -> Statement:
    """Every account under the organization's targets but the promoted bucket's may only read it (break-glass
    exempt): the organization's layer for them, while the promoted bucket's own SCP, attached to its account alone,
    holds that account's principals (decision 0006)."""
    p = topo.promoted
    return statement(
        "DenyPromotedToOtherAccounts", "Deny", PROMOTED_READS, [p.bucket_arn, table_arns(p.bucket_arn)],
        condition={
            "ArnNotLike": {"aws:PrincipalArn": list(cfg.protection.break_glass_principals)},
            "StringNotEquals": {"aws:PrincipalAccount": p.account_id},
        },
        not_action=True,
    )  # fmt: skip


def service_control_policy_promoted(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """The promoted bucket's SCP (its relaxed denies do not fit next to the replicas' within one SCP's 5,120
    characters), attached to the promoted bucket's account alone (`promoted_scp_targets`), so that no target holds
    more than the three kit SCPs: only that account's principals reach the bucket without a grant of its bucket
    policy, and every other account under the targets meets `DenyPromotedToOtherAccounts` instead."""
    return doc(*_layer(cfg, topo, [topo.promoted], "scp"))


def promoted_scp_targets(topo: FailoverTopology) -> list[str]:
    """Where the promoted bucket's SCP is attached: its account, directly."""
    return [topo.promoted.account_id]


def service_control_policy_guards(cfg: KitConfig, topo: FailoverTopology) -> Document:
    """The second SCP: keys (the replica keys and the kit's keys' allow-list), privileged roles (now with the
    failover replication role), assuming either replication role, and the guardrails of every account."""
    return doc(
        *scp_guards(
            [topo.promoted, *topo.protected],
            privileged=privileged_roles(cfg, topo),
            replication_roles=[
                ("DenyAssumeReplicationRole", topo.failed_replication_role_arn),
                ("DenyAssumeFailoverReplicationRole", topo.replication_role_arn),
            ],
            # every account's guardrails by name (the failed source's account keeps its pipeline guardrail: its
            # stack is left as it is), as the normal topology's guards SCP: its size does not grow with the accounts
            guardrail_arns=[estate.guardrail_pattern(cfg), estate.pipeline_guardrail_pattern(cfg)],
            break_glass=cfg.protection.break_glass_principals,
        ),
        deny_pass_other_replication_role(
            "DenyPassOtherReplicationRole", kit_replication_roles(topo), cfg.protection.break_glass_principals
        ),
        *vault.guards_scp_statements(cfg),  # the vault outlives a failover: its writer stays guarded
        *pipeline.kit_key_statements(cfg),  # the kit's keys' allow-list: the replicas' SCP has no room left
    )


# ---------------------------------------------------------------- rendering ----


def failover_policy_docs(cfg: KitConfig, replica_bucket: str) -> list[PolicyDoc]:
    """Every document of promoting `replica_bucket`, named `failover--<bucket>--<document>` for review, each with
    the name the failover topology's stacks deploy it as (`PolicyDoc.deploys_as`, resolved by
    `s3tables_kit.policies.docset`). In an estate, the promotion among the destinations of the source feeding it
    (`source_promotion`)."""
    topo = source_promotion(cfg, replica_bucket)
    p = topo.promoted
    stem = f"failover--{p.bucket}--"

    def deployed(name: str, kind: str, account_id: str, attached_to: str, document: Document) -> PolicyDoc:
        """A document the failover topology deploys as `name` (rendered as `<stem><name>`)."""
        return PolicyDoc(stem + name, kind, account_id, attached_to, document, deploys_as=name)

    out = [
        PolicyDoc(
            f"{stem}bucket-policy", "bucket-policy", p.account_id, f"table bucket {p.bucket} (promoted)",
            promoted_bucket_policy(cfg, topo), deploys_as=f"replica-bucket-policy--{p.bucket}",
        ),
        PolicyDoc(
            f"{stem}table-policy", "table-policy", p.account_id,
            f"every promoted table in {p.bucket} (applied by `s3tables-kit failover`)",
            promoted_table_policy(cfg, topo, example_table_arn(p)),
        ),
    ]  # fmt: skip
    if topo.destinations:
        out += [
            deployed("replication-role-trust", "trust", p.account_id, f"IAM role {topo.replication_role_name} (trust)",
                     replication_role_trust(topo)),
            deployed("replication-role-permissions", "identity", p.account_id,
                     f"IAM role {topo.replication_role_name}", replication_role_permissions(cfg, topo)),
        ]  # fmt: skip
    for d in topo.destinations:
        out.append(deployed(
            f"replica-bucket-policy--{d.bucket}", "bucket-policy", d.account_id,
            f"table bucket {d.bucket} (destination of {p.bucket})", destination_bucket_policy(cfg, topo, d),
        ))  # fmt: skip
        out.append(
            PolicyDoc(
                f"{stem}replica-table-policy--{d.bucket}", "table-policy", d.account_id,
                f"every replica table in {d.bucket} (applied by `make harden` on the failover outputs)",
                destination_table_policy(cfg, topo, d, example_table_arn(d)),
            )
        )  # fmt: skip
    for acct in accounts(topo):  # each managed policy in parts under its quota (`s3tables_kit.policies.parts`)
        out += managed_policy_docs(
            "replica-guardrail", acct, acct, cfg.guardrail_policy_name, guardrail(cfg, topo, acct), stem=stem
        )
        if pipeline_in(cfg, topo, acct) is not None:
            out += managed_policy_docs(
                "pipeline-guardrail", acct, acct, cfg.pipeline_guardrail_policy_name,
                pipeline_guardrail(cfg, topo, acct), stem=stem,
            )  # fmt: skip
    org = cfg.protection.organization
    if org is not None:
        out += [
            deployed("scp-protect-replicas", "scp", org.management_account_id,
                     f"SCP {cfg.scp_name} on {', '.join(org.targets)}", service_control_policy(cfg, topo)),
            deployed("scp-protect-promoted", "scp", org.management_account_id,
                     f"SCP {scp_promoted_name(cfg)} on {', '.join(promoted_scp_targets(topo))}",
                     service_control_policy_promoted(cfg, topo)),
            deployed("scp-protect-replica-guards", "scp", org.management_account_id,
                     f"SCP {cfg.scp_guards_name} on {', '.join(org.targets)}",
                     service_control_policy_guards(cfg, topo)),
            deployed("scp-protect-pipeline", "scp", org.management_account_id,
                     f"SCP {cfg.scp_pipeline_name} on {', '.join(org.targets)}",
                     service_control_policy_pipeline(cfg, topo)),
            deployed("rcp-protect-replication-roles", "rcp", org.management_account_id,
                     f"RCP {cfg.rcp_name} on {', '.join(org.targets)}",
                     pipeline.resource_control_policy(cfg, kit_replication_roles(topo))),
        ]  # fmt: skip
    if topo.recovery_replica is not None:
        rep = cfg.recovery_replica
        out.append(deployed(
            "recovery-role-permissions", "identity", rep.account_id,
            f"IAM role {cfg.recovery_role_name} (reads {topo.recovery_replica.bucket})",
            recovery_role_permissions(cfg, topo),
        ))  # fmt: skip
    for site in key_sites(cfg, topo):
        out.append(deployed(
            f"kms-key-policy--{site.bucket}", "kms-key-policy", site.account_id, f"KMS key of {site.bucket}",
            key_policy(cfg, topo, site),
        ))  # fmt: skip
    return out
