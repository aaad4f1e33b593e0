"""Every policy document of a topology, built from `s3tables_kit.policies.statements`.

The stacks in `infra/` deploy exactly these documents (tests compare the synthesized JSON with them), and
`python -m s3tables_kit.policies.render` writes them to `policies/rendered/<example>/` for review. All ARNs are derived
from the configuration, never from Terraform attributes, so what reviewers read is what gets deployed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import (
    adopted,
    assurance,
    estate,
    fan_in,
    freshness,
    hardener,
    parts,
    pipeline,
    protection,
    vault,
)
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies import vault_accounts as vault_accounts_policies
from s3tables_kit.policies.keys import KeySite, key_sites, kms_key_policy
from s3tables_kit.policies.keys import replica_key_tags as replica_key_tags
from s3tables_kit.policies.model import Document, PolicyDoc, doc, kms_alias, kms_resource, role_documents
from s3tables_kit.policies.source_guard import source_bucket_policy, source_deploy_roles, source_guards
from s3tables_kit.topology import contract
from s3tables_kit.topology.checks import hardener_principals
from s3tables_kit.topology.config import KitConfig, Replica, Source

TABLE_ID_PLACEHOLDER = "<table-uuid>"


# ---------------------------------------------------------------- replication role ----


def replication_role_trust(cfg: KitConfig, src: Source) -> Document:
    return replication_trust(src)


def replication_trust(src: Source | Replica) -> Document:
    """The replication service assumes the role for replication from `src` only (also the failover topology's,
    whose source is a promoted replica)."""
    return doc(
        iam_statements.allow_service_assume_role(
            "AllowS3TablesReplicationService",
            iam_actions.REPLICATION_SERVICE,
            source_account=src.account_id,
            source_arns=[src.bucket_arn, iam_statements.table_arns(src.bucket_arn)],
        )
    )


def replication_role_permissions(cfg: KitConfig, src: Source) -> Document:
    return replication_permissions(cfg, src, cfg.destinations_of(src))


def replication_permissions(cfg: KitConfig, src: Source | Replica, destinations: Sequence[Replica]) -> Document:
    """The user guide's replication permissions from `src` to `destinations`, plus KMS (also the failover
    topology's, whose source is a promoted replica: `s3tables_kit.policies.failover.replication_role_permissions`)."""
    dests = [r.bucket_arn for r in destinations]
    stmts: list[iam_statements.Statement | None] = [
        iam_statements.allow_actions(
            "ReadSourceTables", iam_actions.REPLICATION_SOURCE_TABLE_READ, [iam_statements.table_arns(src.bucket_arn)]
        ),
        iam_statements.allow_actions("ListSourceTables", iam_actions.REPLICATION_SOURCE_BUCKET_LIST, [src.bucket_arn]),
        iam_statements.allow_actions(
            "CreateReplicaNamespacesAndTables", iam_actions.REPLICATION_DEST_BUCKET_CREATE, dests
        ),
        iam_statements.allow_actions(
            "WriteReplicaTables",
            iam_actions.REPLICATION_DEST_TABLE_WRITE,
            [iam_statements.table_arns(d) for d in dests],
        ),
    ]
    if src.encryption.type == "kms":
        res, cond = kms_resource(cfg, src.encryption, account_id=src.account_id, region=src.region, bucket=src.bucket)
        stmts.append(iam_statements.allow_kms("DecryptSourceTableData", ["Decrypt", "GenerateDataKey"], [res], cond))
    for i, rep in enumerate(r for r in destinations if r.encryption.type == "kms"):
        res, cond = kms_resource(cfg, rep.encryption, account_id=rep.account_id, region=rep.region, bucket=rep.bucket)
        stmts.append(
            iam_statements.allow_kms(
                f"EncryptReplicaTableData{i + 1}", ["Decrypt", "Encrypt", "GenerateDataKey"], [res], cond
            )
        )
    return doc(*stmts)


# ---------------------------------------------------------------- replica protection ----


def replica_exemptions(cfg: KitConfig, replicas: Sequence[Replica]) -> protection.Exemptions:
    """Break-glass, the replication roles writing these replicas (one per source feeding them: fan-in) and the
    replicas' deploy roles (each where a rule allows it)."""
    return protection.Exemptions(
        break_glass=tuple(cfg.protection.break_glass_principals),
        replication_roles=replication_roles_into(cfg, replicas),
        deploy_roles=protection.deploy_roles(replicas),
        hardeners=hardener_principals(cfg),
        createtable_dependents=protection.createtable_dependents_allowed(cfg),
    )


def replication_roles_into(cfg: KitConfig, replicas: Sequence[Replica]) -> tuple[str, ...]:
    """The replication roles of the sources feeding any of `replicas`, in source order, each once (the name pattern
    where several sources of an estate feed one: `s3tables_kit.policies.fan_in`)."""
    return tuple(dict.fromkeys(arn for r in replicas for arn in fan_in.replication_roles_into(cfg, r)))


def replica_bucket_policy(cfg: KitConfig, replica: Replica) -> Document:
    """Destination table bucket policy: the cross-account grant for each source's replication role (only where the
    accounts differ; one per source of another account in a fan-in) plus the protective denies."""
    arn = replica.bucket_arn
    by_pattern = fan_in.is_fan_in(cfg, replica)
    monitor_grants = [
        assurance.monitor_policy_read_grant(cfg, replica),
        assurance.monitor_layers_read_grant(cfg, replica),
    ]
    return doc(
        *(fan_in.replication_grants(cfg, replica) if by_pattern else source_grants(cfg, replica)),
        *break_glass_grants(cfg, replica),
        *hardener.cross_account_grants(cfg, replica),
        *(fan_in.monitor_grants(cfg, replica) if by_pattern else monitor_grants),
        *protection.protection_statements(
            "bucket-policy",
            bucket_arns=[arn],
            table_resources=[iam_statements.table_arns(arn)],
            exemptions=replica_exemptions(cfg, [replica]),
        ),
        scheme_of(cfg).bucket_tag_guard(cfg, arn),
        fan_in.confinement(cfg, replica),
    )


def source_grants(cfg: KitConfig, replica: Replica) -> list[iam_statements.Statement | None]:
    """The grants of the replication roles of other accounts than the replica's: Sids `Source...` for `[source]`;
    in an estate one pair of statements naming every such role of the sources feeding it
    (`AllowSourceReplicationRoles...`): a table bucket policy holds at most 20,480 characters, and a pair per source
    (about 900 characters) would stop a vault at about fourteen sources of other accounts."""
    others = [cfg.replication_role_arn_of(s) for s in cfg.sources_into(replica) if s.account_id != replica.account_id]
    return scheme_of(cfg).source_grants(others, replica.bucket_arn)


def cross_account_break_glass(cfg: KitConfig, account_id: str) -> list[str]:
    """Break-glass principals of other accounts than `account_id`: exempt from every Deny, but a cross-account request
    also needs an Allow in the resource policy, so the replica's policies must grant them explicitly."""
    return sorted({p for p in cfg.protection.break_glass_principals if p.split(":")[4] != account_id})


def break_glass_grants(cfg: KitConfig, replica: Replica) -> list[iam_statements.Statement | None]:
    """What `make harden`/`make audit` and a rescue need, for break-glass principals of other accounts."""
    principals = cross_account_break_glass(cfg, replica.account_id)
    if not principals:
        return []
    bucket_names, table_names = iam_actions.level_split(iam_actions.PROTECTED_ACTIONS)
    bucket_names += scheme_of(cfg).retag_actions
    arn = replica.bucket_arn
    return [
        iam_statements.allow_principals_actions(
            "AllowCrossAccountBreakGlassOnBucket",
            principals,
            tuple(sorted(set(bucket_names) | set(iam_actions.REPLICA_ADMIN_READ_BUCKET))),
            [arn],
        ),
        iam_statements.allow_principals_actions(
            "AllowCrossAccountBreakGlassOnTables",
            principals,
            tuple(sorted(set(table_names) | set(iam_actions.REPLICA_ADMIN_READ_TABLE))),
            [iam_statements.table_arns(arn)],
        ),
    ]


def replica_table_policy(
    *,
    table_arn: str,
    break_glass_principals: Sequence[str],
    replication_role_arn: str | Sequence[str],
    deploy_role_arns: Sequence[str] = (),
    hardener_principals: Sequence[str] = (),
) -> Document:
    """Table policy for one service-created replica table. Its ARN carries the table's UUID, so it is applied after
    the replica exists (`make harden`). A table-policy Deny holds even if the bucket policy is later loosened.
    `replication_role_arn`: the role writing the replica, or the roles of every source feeding it (fan-in);
    `hardener_principals`: the scheduled hardener, exempt from its own writes only."""
    roles = (replication_role_arn,) if isinstance(replication_role_arn, str) else tuple(replication_role_arn)
    ex = protection.Exemptions(
        tuple(break_glass_principals), roles, tuple(deploy_role_arns), hardeners=tuple(hardener_principals)
    )
    return doc(
        *protection.protection_statements("table-policy", bucket_arns=[], table_resources=[table_arn], exemptions=ex)
    )


def replica_table_policy_for(cfg: KitConfig, replica: Replica, table_arn: str) -> Document:
    return replica_table_policy(
        table_arn=table_arn,
        break_glass_principals=cfg.protection.break_glass_principals,
        replication_role_arn=fan_in.replication_roles_into(cfg, replica),
        deploy_role_arns=protection.deploy_roles([replica]),
        hardener_principals=hardener_principals(cfg),
    )


def replica_accounts(cfg: KitConfig) -> list[str]:
    return sorted({r.account_id for r in cfg.replicas})


def guardrail_policy_arn(cfg: KitConfig, account_id: str) -> str:
    """The guardrail of a replica account (or of a failover topology's new bucket's account)."""
    sites = (*cfg.replicas, *(cfg.failover.new_buckets if cfg.failover else ()))
    rep = next(r for r in sites if r.account_id == account_id)
    return f"arn:{rep.partition}:iam::{account_id}:policy/{cfg.guardrail_policy_name}"


def guardrail_attachments(cfg: KitConfig, account_id: str) -> list[str]:
    """Role names the guardrail is attached to in a replica account: the configured ones plus the account's deploy
    role, which may rewrite the replica's resource policies and so must meet the identity layer it cannot remove
    (the SCP denies detaching or rewriting the guardrail)."""
    names = list(cfg.protection.guardrail_attach_roles)
    for arn in protection.deploy_roles(r for r in cfg.replicas if r.account_id == account_id):
        name = arn.rsplit("/", 1)[1]
        if name not in names:
            names.append(name)
    return names


def replica_guardrail(cfg: KitConfig, account_id: str) -> Document:
    """IAM guardrail for a replica account: attached to the account's human and workload roles (config
    `protection.guardrail_attach_roles`) and to its deploy role, never to break-glass or the replication role (the
    configuration refuses that), so its only exemption is the deploy role's for policy and settings changes. Same
    denies as the bucket policy plus the replica keys, and it protects itself: a role that carries it cannot detach
    or rewrite it, nor take over the account's privileged roles (the SCP denies the same to everyone)."""
    reps = [r for r in cfg.replicas if r.account_id == account_id]
    return doc(
        *protection.protection_statements(
            "identity",
            bucket_arns=[r.bucket_arn for r in reps],
            table_resources=[iam_statements.table_arns(r.bucket_arn) for r in reps],
            exemptions=replica_exemptions(cfg, reps).for_guardrail(),
            rules=guardrail_rules(),
        ),
        *protection.guardrail_guards(
            reps,
            privileged=[a for a in privileged_roles(cfg) if a.split(":")[4] == account_id],
            guardrail_arns=[
                parts.part_pattern(guardrail_policy_arn(cfg, account_id)),
                parts.part_pattern(pipeline.guardrail_policy_arn(cfg, account_id)),
            ],
        ),
        # the sources' deploy roles carry the guardrail where they share the account (an estate's: by name)
        *source_guards(
            cfg,
            exempt=protection.replication_setup_roles(cfg, scheme_of(cfg).guardrail_source_exempt(cfg)),
            account_id=account_id,
        ),
        # the pipeline and the kit's allow-lists in this account: the pipeline guardrail beside it
    )


def scp_rules() -> list[iam_actions.ProtectionRule]:
    """The protection rules merged by exemption set, so the SCP stays under the 5,120-character limit with five
    destinations. Sids concatenate the merged rules' names (DenyReplicaDeletionAndReplicationChange, ...)."""
    return merged_rules(lambda r: (r.exempt_replication_role, r.exempt_deploy_roles, r.tables_only))


def guardrail_rules() -> list[iam_actions.ProtectionRule]:
    """In the guardrail only the deploy-role exemption exists (it is never attached to break-glass or the
    replication role), so the rules merge into two statements: a managed policy holds at most 6,144 characters,
    and five replicas in one account must fit."""
    return merged_rules(lambda r: (False, r.exempt_deploy_roles, r.tables_only))


def merged_rules(
    key: Callable[[iam_actions.ProtectionRule], tuple[bool, bool, bool]],
) -> list[iam_actions.ProtectionRule]:
    """PROTECTION_RULES merged by (replication-role exemption, deploy-role exemption, tables only): the key of a
    group (`s3tables_kit.policies.protection.merged_rules`)."""
    return protection.merged_rules(iam_actions.PROTECTION_RULES, key)


def _scp_protection_statements(cfg: KitConfig, tables_only: bool) -> list[iam_statements.Statement | None]:
    """The protective denies of the SCP rules whose `tables_only` is as given (the SCP holds the others, the guards
    SCP the table-only ones: one SCP has 5,120 characters and five destinations in three accounts overflowed it)."""
    return protection.protection_statements(
        "scp",
        bucket_arns=[r.bucket_arn for r in cfg.replicas],
        table_resources=[iam_statements.table_arns(r.bucket_arn) for r in cfg.replicas],
        exemptions=replica_exemptions(cfg, cfg.replicas),
        rules=[r for r in scp_rules() if r.tables_only == tables_only],
    )


def service_control_policy(cfg: KitConfig) -> Document:
    """Organizations SCP: the same denies for every principal in the target OUs/accounts, break-glass exempt.
    SCPs do not restrict service principals, and Resource Control Policies do not cover S3 Tables. The table-only
    denies (`DenyReplicaTagChange`) are in the guards SCP, attached to the same targets. An estate's match its
    protected buckets by tag (`s3tables_kit.policies.estate`)."""
    return doc(*scheme_of(cfg).scp(cfg), *pipeline.kit_key_statements(cfg))


def _scp_by_arn(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    return _scp_protection_statements(cfg, tables_only=False)


def service_control_policy_guards(cfg: KitConfig) -> Document:
    """The second SCP: it guards what the other layers rest on, so that no role in a covered account can remove
    them. Replica keys (by tag or ARN), the roles whose ARN carries an exemption (trust changes and delete +
    re-create would hand them over), assuming the replication role, and the guardrail (rewrite, delete, detach);
    and the replica denies that apply to tables only (tag changes). A separate document because one SCP is limited
    to 5,120 characters (an account or OU takes up to five). An estate's names no bucket and no source
    (`s3tables_kit.policies.estate`)."""
    return doc(*scheme_of(cfg).scp_guards(cfg), *vault.guards_scp_statements(cfg))


def service_control_policy_pipeline(cfg: KitConfig) -> Document:
    """The third SCP: the pipeline that feeds the replicas (`s3tables_kit.policies.pipeline`): the replication roles'
    permissions and whom they are passed to, the detection path, the source keys, the kit's metrics."""
    return doc(*pipeline.service_control_policy(cfg))


def _scp_guards_by_arn(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    return [
        *_scp_protection_statements(cfg, tables_only=True),
        *protection.scp_guards(
            cfg.replicas,
            privileged=privileged_roles(cfg),
            replication_roles=[
                (f"DenyAssumeReplicationRole{i or ''}", arn) for i, arn in enumerate(cfg.replication_role_arns)
            ],
            guardrail_arns=[estate.guardrail_pattern(cfg), *estate.pipeline_guardrail_arns(cfg)],
            break_glass=cfg.protection.break_glass_principals,
        ),
        *source_guards(
            cfg,
            exempt=[
                *cfg.protection.break_glass_principals,
                *protection.replication_setup_roles(cfg, source_deploy_roles(cfg)),
            ],
            break_glass=cfg.protection.break_glass_principals,
        ),
    ]


def privileged_roles(cfg: KitConfig) -> list[str]:
    """Roles whose ARN carries an exemption: break-glass roles, the replica and source deploy roles, the replication
    role, the monitor roles (the only publishers of the kit's metrics besides recovery)."""
    return protection.privileged_roles(
        cfg.protection.break_glass_principals,
        cfg.replicas,
        cfg.replication_role_arns,
        pipeline_roles=[
            *source_deploy_roles(cfg),
            *pipeline.monitor_roles(cfg),
            *freshness.role_arns(cfg),
            *vault.privileged_roles(cfg),
        ],
    )


def compact_json(document: Document) -> str:
    """The form deployed where size limits apply (SCP: 5,120 characters)."""
    return json.dumps(document, separators=(",", ":"))


# ---------------------------------------------------------------- recovery role ----


EMR_APPLICATION_ID_PLACEHOLDER = "<emr-application-id>"


def emr_application_arn(cfg: KitConfig, application_id: str = EMR_APPLICATION_ID_PLACEHOLDER) -> str:
    """The provisioned EMR Serverless application's ARN. Its id exists only after apply: the rendered document shows
    the placeholder, the stack passes the application's `arn` attribute (tests compare the two)."""
    rep = cfg.recovery_replica
    return f"arn:{rep.partition}:emr-serverless:{rep.region}:{rep.account_id}:/applications/{application_id}"


def recovery_role_trust(cfg: KitConfig, application_arn: str | None = None) -> Document:
    """Only job runs of the kit's own EMR Serverless application may assume the recovery role (not any application
    in the account)."""
    rep = cfg.recovery_replica
    return doc(
        iam_statements.allow_service_assume_role(
            "AllowEmrServerlessJobRuns",
            iam_actions.EMR_SERVERLESS_SERVICE,
            source_account=rep.account_id,
            source_arns=[application_arn or emr_application_arn(cfg)],
        )
    )


def scripts_bucket_policy(cfg: KitConfig) -> Document:
    """The recovery scripts/logs/reports bucket: TLS only; its `scheduled/` artifacts (what scheduled job runs
    execute) closed as an allow-list: read by all, written by the recovery stack's deployer and break-glass only."""
    rep = cfg.recovery_replica
    return doc(
        iam_statements.deny_insecure_transport(f"arn:{rep.partition}:s3:::{cfg.recovery_scripts_bucket}"),
        *vault.artifacts_scope(cfg).statements(resource_policy=True),
    )


def recovery_role_permissions(cfg: KitConfig, *, reads: Replica | None = None) -> Document:
    """`reads`: the replica recovery reads (default `recovery.replica`; the failover topology passes a replica of the
    new source, in the recovery account). Of constant size in the number of replicas: it writes the recovery bucket
    and denies itself every protected write anywhere else."""
    rep = reads or cfg.recovery_replica
    site = cfg.recovery_replica  # the recovery bucket, scripts bucket and its key never move
    rec = cfg.recovery_bucket_arn
    scripts = f"arn:{site.partition}:s3:::{cfg.recovery_scripts_bucket}"
    stmts: list[iam_statements.Statement | None] = [
        iam_statements.allow_actions("ReadReplicaCatalog", iam_actions.CATALOG_BUCKET_READ, [rep.bucket_arn]),
        iam_statements.allow_actions(
            "ReadReplicaTables", iam_actions.CATALOG_TABLE_READ, [iam_statements.table_arns(rep.bucket_arn)]
        ),
        iam_statements.allow_actions(
            "ManageRecoveryCatalog", iam_actions.CATALOG_BUCKET_READ + iam_actions.RECOVERY_BUCKET_WRITE, [rec]
        ),
        iam_statements.allow_actions(
            "WriteRecoveryTables",
            iam_actions.CATALOG_TABLE_READ + iam_actions.RECOVERY_TABLE_WRITE,
            [iam_statements.table_arns(rec)],
        ),
        # every bucket but the recovery bucket, so the document does not grow with the replicas (and holds an
        # untagged or new one as well)
        iam_statements.deny_actions_outside(
            "DenyAllWritesToReplicas", iam_actions.REPLICA_WRITE_ACTIONS, [rec, iam_statements.table_arns(rec)]
        ),
        iam_statements.allow_s3(
            "ReadRecoveryScripts",
            ["GetObject"],
            [f"{scripts}/scripts/*", f"{scripts}/{contract.SCHEDULED_ARTIFACTS_PREFIX}*"],
        ),
        iam_statements.allow_s3("ListRecoveryScriptsBucket", ["ListBucket"], [scripts]),
        iam_statements.allow_s3(
            "WriteRecoveryLogsAndReports", ["PutObject"], [f"{scripts}/logs/*", f"{scripts}/reports/*"]
        ),
        assurance.allow_read_kit_application(assurance.recovery_site(cfg), cfg.kit.name),  # the rehearsal's check
    ]
    if rep.encryption.type == "kms":
        res, cond = kms_resource(cfg, rep.encryption, account_id=rep.account_id, region=rep.region, bucket=rep.bucket)
        stmts.append(iam_statements.allow_kms("DecryptReplicaTableData", ["Decrypt"], [res], cond))
    if cfg.recovery.encryption.type == "kms":
        res, cond = kms_resource(
            cfg, cfg.recovery.encryption, account_id=site.account_id, region=site.region, bucket=cfg.recovery.bucket
        )
        stmts.append(
            iam_statements.allow_kms("EncryptRecoveryTableData", ["Decrypt", "Encrypt", "GenerateDataKey"], [res], cond)
        )
    stmts += vault_accounts_policies.account_bucket_reads(cfg) if reads is None else []  # the vault's account buckets
    stmts += vault.recovery_role_statements(cfg)  # a restore from the backup vault
    return doc(*stmts)


# ---------------------------------------------------------------- all documents ----


def example_table_arn(replica: Replica) -> str:
    return f"{replica.bucket_arn}/table/{TABLE_ID_PLACEHOLDER}"


def source_documents(cfg: KitConfig, src: Source) -> list[PolicyDoc]:
    """The documents of the stack of the source `src`: its bucket policy, its replication role, its kit-created key,
    its replication monitor."""
    docs = [
        PolicyDoc(
            "source-bucket-policy",
            "bucket-policy",
            src.account_id,
            f"table bucket {src.bucket} (source{_kept(cfg, src)})",
            source_bucket_policy(cfg, src),
        ),
        *role_documents(
            "replication-role",
            src.account_id,
            cfg.replication_role_name_of(src),
            replication_role_trust(cfg, src),
            replication_role_permissions(cfg, src),
        ),
    ]
    if src.encryption.creates_key:
        site = KeySite("source", src.account_id, src.region, src.bucket, src.bucket_arn)
        docs.append(_key_doc(cfg, site))
    return docs + assurance.source_documents(cfg, src)


def _kept(cfg: KitConfig, src: Source) -> str:
    """What an adopted bucket's policy keeps of its own (`s3tables_kit.policies.adopted`), and the lint's warnings on
    it (each with its Sid), for the reviewer's table."""
    stmts = src.adopted_statement_documents()
    sids = [str(s.get("Sid")) for s in stmts]
    warned = adopted.warnings(stmts, adopted.kit_principals(cfg, src)) if stmts else []
    return (f"; adopted, its own statements kept: {', '.join(sids)}" if sids else "") + "".join(
        f"; warning: {w}" for w in warned
    )


# Per-source documents of an estate are named `<purpose>--<stack id>` (`replication-role-trust--source-sales-euw1`);
# a source's key policy keeps its bucket name. `s3tables_kit.policies.docset.DocumentSet.for_source` maps the purposes
# back, so a source stack looks its documents up by the names `[source]` uses.
def estate_source_name(name: str, stack_id: str) -> str:
    if name.startswith("kms-key-policy--alarm-topic-"):
        return f"kms-key-policy--alarm-topic-{stack_id}"
    if "--" in name:
        return name
    return f"{name}--{stack_id}"


def _key_doc(cfg: KitConfig, site: KeySite) -> PolicyDoc:
    return PolicyDoc(
        f"kms-key-policy--{site.bucket}",
        "kms-key-policy",
        site.account_id,
        f"KMS key {kms_alias(cfg, site.bucket)}",
        kms_key_policy(cfg, site),
    )


def build_documents(cfg: KitConfig) -> list[PolicyDoc]:
    return scheme_of(cfg).documents(cfg) + vault.documents(cfg, recovery_role_trust(cfg)) + freshness.documents(cfg)


def single_source_documents(cfg: KitConfig) -> list[PolicyDoc]:
    """A `[source]`'s documents: its replication role's and bucket policy, the protected sites', recovery's, every
    key the kit creates, assurance's."""
    (src,) = cfg.sources  # the scheme of a `[source]`: one source
    docs = [d for d in source_documents(cfg, src) if d.name.startswith(("replication-role-", "source-bucket-policy"))]
    docs += protected_site_documents(cfg)
    docs += recovery_documents(cfg)
    docs += [_key_doc(cfg, site) for site in key_sites(cfg)]
    # continuous assurance: monitor, schedules, rehearsal metrics, alarm topic keys
    docs += assurance.documents(cfg, src)
    return docs


def protected_site_documents(cfg: KitConfig) -> list[PolicyDoc]:
    """Each replica's bucket and table policy, each replica account's guardrail, the organization's SCPs."""
    docs: list[PolicyDoc] = []
    for r in cfg.replicas:
        docs.append(
            PolicyDoc(
                f"replica-bucket-policy--{r.bucket}",
                "bucket-policy",
                r.account_id,
                f"table bucket {r.bucket}",
                replica_bucket_policy(cfg, r),
            )
        )
        docs.append(
            PolicyDoc(
                f"replica-table-policy--{r.bucket}", "table-policy", r.account_id,
                f"every replica table in {r.bucket} "
                f"(applied by `make harden`; {TABLE_ID_PLACEHOLDER} is the table's id)",
                replica_table_policy_for(cfg, r, example_table_arn(r)),
            )
        )  # fmt: skip
    for acct in replica_accounts(cfg):  # each managed policy in parts under its quota (`s3tables_kit.policies.parts`)
        docs += parts.managed_policy_docs(
            "replica-guardrail", acct, acct, cfg.guardrail_policy_name, replica_guardrail(cfg, acct)
        )
    for acct in estate.pipeline_guardrail_accounts(cfg):
        docs += parts.managed_policy_docs(
            "pipeline-guardrail",
            acct,
            acct,
            cfg.pipeline_guardrail_policy_name,
            pipeline.source_account_guardrail(cfg, acct),
        )
    if cfg.protection.organization:
        org = cfg.protection.organization
        docs += [
            PolicyDoc(name, "scp", org.management_account_id, f"SCP {scp} on {', '.join(org.targets)}", build(cfg))
            for name, scp, build in (
                ("scp-protect-replicas", cfg.scp_name, service_control_policy),
                ("scp-protect-replica-guards", cfg.scp_guards_name, service_control_policy_guards),
                ("scp-protect-pipeline", cfg.scp_pipeline_name, service_control_policy_pipeline),
            )
        ]
        docs.append(
            PolicyDoc(
                "rcp-protect-replication-roles",
                "rcp",
                org.management_account_id,
                f"RCP {cfg.rcp_name} on {', '.join(org.targets)}",
                pipeline.resource_control_policy(cfg),
            )
        )
    return docs


def recovery_documents(cfg: KitConfig) -> list[PolicyDoc]:
    rep = cfg.recovery_replica
    return [
        *role_documents(
            "recovery-role",
            rep.account_id,
            cfg.recovery_role_name,
            recovery_role_trust(cfg),
            recovery_role_permissions(cfg),
        ),
        PolicyDoc(
            "scripts-bucket-policy",
            "s3-bucket-policy",
            rep.account_id,
            f"S3 bucket {cfg.recovery_scripts_bucket}",
            scripts_bucket_policy(cfg),
        ),
    ]


def estate_documents(cfg: KitConfig) -> list[PolicyDoc]:
    """An estate's documents: each source's (renamed `<purpose>--<stack id>`), then the protected sites' (fan-in
    replicas grant and exempt every source feeding them), the organization's, recovery's and assurance's."""
    docs: list[PolicyDoc] = []
    for src in cfg.sources:
        docs += [replace(d, name=estate_source_name(d.name, src.stack_id)) for d in source_documents(cfg, src)]
    docs += protected_site_documents(cfg)
    docs += recovery_documents(cfg)
    docs += [_key_doc(cfg, site) for site in key_sites(cfg) if site.role != "source"]
    docs += assurance.estate_documents(cfg)
    return docs


@dataclass(frozen=True)
class SchemeDocuments:
    """What a protection scheme (`s3tables_kit.topology.model.Scheme`, chosen at load) builds its own way: a `[source]`
    names each protected bucket and role by ARN; an estate tags its protected buckets and matches them by tag and name
    pattern (`s3tables_kit.policies.estate`), so its SCPs and policies keep their size whatever the number of
    sources."""

    documents: Callable[[KitConfig], list[PolicyDoc]]
    scp: Callable[[KitConfig], list[iam_statements.Statement | None]]
    scp_guards: Callable[[KitConfig], list[iam_statements.Statement | None]]
    # A replica's grants to the replication roles of other accounts: a pair per role, or one pair naming them all.
    source_grants: Callable[[Sequence[str], str], list[iam_statements.Statement | None]]
    bucket_tag_guard: Callable[
        [KitConfig, str], iam_statements.Statement | None
    ]  # a replica bucket policy's guard of its tag
    retag_actions: tuple[str, ...]  # bucket actions break-glass is granted besides the protected ones
    # Who the guardrail's source guards exempt: the sources' deploy roles by ARN, or none (matched by name pattern).
    guardrail_source_exempt: Callable[[KitConfig], Sequence[str]]
    # The name of one source's document (purpose, stack id): as is, or `<purpose>--<stack id>` (`estate_source_name`).
    source_document_name: Callable[[str, str], str]
    # Names of the documents that serve every source, which a promotion of one source's replica must not replace.
    kept_by_promotion: frozenset[str]


SCHEME_DOCUMENTS: dict[str, SchemeDocuments] = {
    "source": SchemeDocuments(
        documents=single_source_documents,
        scp=_scp_by_arn,
        scp_guards=_scp_guards_by_arn,
        source_grants=protection.per_source_grants,
        bucket_tag_guard=lambda cfg, arn: None,
        retag_actions=(),
        guardrail_source_exempt=source_deploy_roles,
        source_document_name=lambda name, stack_id: name,
        kept_by_promotion=frozenset(),
    ),
    "sources": SchemeDocuments(
        documents=estate_documents,
        scp=estate.service_control_policy,
        scp_guards=estate.service_control_policy_guards,
        source_grants=protection.estate_source_grants,
        bucket_tag_guard=estate.bucket_protection_tag_guard,
        retag_actions=("TagResource", "UntagResource"),  # break-glass re-tags a bucket that lost its tag (rescue)
        guardrail_source_exempt=lambda cfg: (),
        source_document_name=estate_source_name,
        # The tag-based SCPs (the failover replication role `<kit>-failover-s3tables-replication` matches their
        # replication-role pattern) and the recovery role, which serves the whole estate.
        kept_by_promotion=frozenset(
            {
                "scp-protect-replicas",
                "scp-protect-replica-guards",
                "scp-protect-pipeline",
                "rcp-protect-replication-roles",
                "recovery-role-permissions",
            }
        ),
    ),
}


def scheme_of(cfg: KitConfig) -> SchemeDocuments:
    return SCHEME_DOCUMENTS[cfg.scheme.key]
