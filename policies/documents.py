"""Every policy document of a topology, built from `policies.statements`.

The stacks in `infra/` deploy exactly these documents (tests compare the synthesized JSON with them), and
`python -m policies.render` writes them to `policies/rendered/<example>/` for review. All ARNs are derived from the
configuration, never from Terraform attributes, so what reviewers read is what gets deployed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from infra.config import Encryption, KitConfig, Replica, partition_of_arn
from policies import actions as A
from policies import statements as S

Document = dict[str, Any]
VERSION = "2012-10-17"
TABLE_ID_PLACEHOLDER = "<table-uuid>"


def doc(*statements: S.Statement | None) -> Document:
    stmts = [s for s in statements if s is not None]
    sids = [s["Sid"] for s in stmts]
    dupes = {x for x in sids if sids.count(x) > 1}
    if dupes:
        raise ValueError(f"duplicate Sids in one document: {sorted(dupes)}")
    return {"Version": VERSION, "Statement": stmts}


# ---------------------------------------------------------------- KMS helpers ----


def kms_alias(cfg: KitConfig, bucket: str) -> str:
    return f"alias/{cfg.kit.name}-{bucket}"


def kms_resource(
    cfg: KitConfig, enc: Encryption, *, account_id: str, region: str, bucket: str
) -> tuple[str, dict[str, dict[str, Any]] | None]:
    """(resource, condition) that names a bucket's key in an IAM policy. A created key's ARN is unknown until apply,
    so it is matched by its alias (kms:ResourceAliases) within the account and Region."""
    if enc.kms_key and enc.kms_key != "create":
        return enc.kms_key, None
    return (
        f"arn:{partition_of_arn(region)}:kms:{region}:{account_id}:key/*",
        {"ForAnyValue:StringEquals": {"kms:ResourceAliases": kms_alias(cfg, bucket)}},
    )


# ---------------------------------------------------------------- replication role ----


def replication_role_trust(cfg: KitConfig) -> Document:
    src = cfg.source
    return doc(
        S.allow_service_assume_role(
            "AllowS3TablesReplicationService",
            A.REPLICATION_SERVICE,
            source_account=src.account_id,
            source_arns=[src.bucket_arn, S.table_arns(src.bucket_arn)],
        )
    )


def replication_role_permissions(cfg: KitConfig) -> Document:
    src = cfg.source
    dests = [r.bucket_arn for r in cfg.replicas]
    stmts: list[S.Statement | None] = [
        S.allow_actions("ReadSourceTables", A.REPLICATION_SOURCE_TABLE_READ, [S.table_arns(src.bucket_arn)]),
        S.allow_actions("ListSourceTables", A.REPLICATION_SOURCE_BUCKET_LIST, [src.bucket_arn]),
        S.allow_actions("CreateReplicaNamespacesAndTables", A.REPLICATION_DEST_BUCKET_CREATE, dests),
        S.allow_actions("WriteReplicaTables", A.REPLICATION_DEST_TABLE_WRITE, [S.table_arns(d) for d in dests]),
    ]
    if src.encryption.type == "kms":
        res, cond = kms_resource(cfg, src.encryption, account_id=src.account_id, region=src.region, bucket=src.bucket)
        stmts.append(S.allow_kms("DecryptSourceTableData", ["Decrypt", "GenerateDataKey"], [res], cond))
    for i, rep in enumerate(r for r in cfg.replicas if r.encryption.type == "kms"):
        res, cond = kms_resource(cfg, rep.encryption, account_id=rep.account_id, region=rep.region, bucket=rep.bucket)
        stmts.append(
            S.allow_kms(f"EncryptReplicaTableData{i + 1}", ["Decrypt", "Encrypt", "GenerateDataKey"], [res], cond)
        )
    return doc(*stmts)


# ---------------------------------------------------------------- replica protection ----


def _exempt(
    rule: A.ProtectionRule, *, break_glass: Sequence[str], replication_role_arn: str, deploy_roles: Sequence[str]
) -> list[str]:
    out = list(break_glass)
    if rule.exempt_replication_role:
        out.append(replication_role_arn)
    if rule.exempt_deploy_roles:
        out += list(deploy_roles)
    return out


def _protection(
    kind: str,
    *,
    bucket_arns: Sequence[str],
    table_resources: Sequence[str],
    break_glass: Sequence[str],
    replication_role_arn: str,
    deploy_roles: Sequence[str],
) -> list[S.Statement | None]:
    return [
        S.protection_statement(
            rule,
            bucket_arns=bucket_arns,
            table_resources=table_resources,
            exempt_arns=_exempt(
                rule, break_glass=break_glass, replication_role_arn=replication_role_arn, deploy_roles=deploy_roles
            ),
            kind=kind,
        )
        for rule in A.PROTECTION_RULES
    ]


def _deploy_roles(replicas: Sequence[Replica]) -> list[str]:
    return sorted({r.deploy_role_arn for r in replicas if r.deploy_role_arn})


def replica_bucket_policy(cfg: KitConfig, replica: Replica) -> Document:
    """Destination table bucket policy: the cross-account grant for the source's replication role (only when the
    accounts differ) plus the protective denies."""
    arn = replica.bucket_arn
    grant: list[S.Statement | None] = []
    if cfg.is_cross_account(replica):
        grant = [
            S.allow_principal_actions(
                "AllowSourceReplicationRoleCreateReplicas",
                cfg.replication_role_arn,
                A.REPLICATION_DEST_BUCKET_CREATE,
                [arn],
            ),
            S.allow_principal_actions(
                "AllowSourceReplicationRoleWriteReplicas",
                cfg.replication_role_arn,
                A.REPLICATION_DEST_TABLE_WRITE,
                [S.table_arns(arn)],
            ),
        ]
    return doc(
        *grant,
        *_protection(
            "bucket-policy",
            bucket_arns=[arn],
            table_resources=[S.table_arns(arn)],
            break_glass=cfg.protection.break_glass_principals,
            replication_role_arn=cfg.replication_role_arn,
            deploy_roles=_deploy_roles([replica]),
        ),
    )


def replica_table_policy(
    *,
    table_arn: str,
    break_glass_principals: Sequence[str],
    replication_role_arn: str,
    deploy_role_arns: Sequence[str] = (),
) -> Document:
    """Table policy for one service-created replica table. Its ARN carries the table's UUID, so it is applied after
    the replica exists (`make harden`). A table-policy Deny holds even if the bucket policy is later loosened."""
    return doc(
        *_protection(
            "table-policy",
            bucket_arns=[],
            table_resources=[table_arn],
            break_glass=break_glass_principals,
            replication_role_arn=replication_role_arn,
            deploy_roles=deploy_role_arns,
        )
    )


def replica_table_policy_for(cfg: KitConfig, replica: Replica, table_arn: str) -> Document:
    return replica_table_policy(
        table_arn=table_arn,
        break_glass_principals=cfg.protection.break_glass_principals,
        replication_role_arn=cfg.replication_role_arn,
        deploy_role_arns=_deploy_roles([replica]),
    )


def replica_accounts(cfg: KitConfig) -> list[str]:
    return sorted({r.account_id for r in cfg.replicas})


def replica_guardrail(cfg: KitConfig, account_id: str) -> Document:
    """IAM guardrail for a replica account: attach to the account's human and workload roles (config
    `protection.guardrail_attach_roles`). Same denies as the bucket policy, for identity-side defence in depth."""
    reps = [r for r in cfg.replicas if r.account_id == account_id]
    return doc(
        *_protection(
            "identity",
            bucket_arns=[r.bucket_arn for r in reps],
            table_resources=[S.table_arns(r.bucket_arn) for r in reps],
            break_glass=cfg.protection.break_glass_principals,
            replication_role_arn=cfg.replication_role_arn,
            deploy_roles=_deploy_roles(reps),
        )
    )


def scp_rules() -> list[A.ProtectionRule]:
    """The protection rules merged by exemption set, so the SCP stays under the 5,120-character limit with five
    destinations. Sids concatenate the merged rules' names (DenyReplicaDeletionAndReplicationChange, ...)."""
    groups: dict[tuple[bool, bool], list[A.ProtectionRule]] = {}
    for rule in A.PROTECTION_RULES:
        groups.setdefault((rule.exempt_replication_role, rule.exempt_deploy_roles), []).append(rule)
    merged = []
    for (repl, deploy), rules in groups.items():
        sid = "DenyReplica" + "And".join(r.sid.removeprefix("DenyReplica") for r in rules)
        actions = tuple(a for r in rules for a in r.actions)
        merged.append(
            A.ProtectionRule(
                sid=sid,
                actions=actions,
                risk=" ".join(r.risk for r in rules),
                exempt_replication_role=repl,
                exempt_deploy_roles=deploy,
            )
        )
    return merged


def service_control_policy(cfg: KitConfig) -> Document:
    """Organizations SCP: the same denies for every principal in the target OUs/accounts, break-glass exempt.
    SCPs do not restrict service principals, and Resource Control Policies do not cover S3 Tables."""
    bucket_arns = [r.bucket_arn for r in cfg.replicas]
    table_resources = [S.table_arns(r.bucket_arn) for r in cfg.replicas]
    deploy = _deploy_roles(cfg.replicas)
    bg = cfg.protection.break_glass_principals
    return doc(
        *(
            S.protection_statement(
                rule,
                bucket_arns=bucket_arns,
                table_resources=table_resources,
                exempt_arns=_exempt(
                    rule, break_glass=bg, replication_role_arn=cfg.replication_role_arn, deploy_roles=deploy
                ),
                kind="scp",
            )
            for rule in scp_rules()
        )
    )


def compact_json(document: Document) -> str:
    """The form deployed where size limits apply (SCP: 5,120 characters)."""
    return json.dumps(document, separators=(",", ":"))


# ---------------------------------------------------------------- recovery role ----


def recovery_role_trust(cfg: KitConfig) -> Document:
    rep = cfg.recovery_replica
    return doc(
        S.allow_service_assume_role(
            "AllowEmrServerlessJobRuns",
            A.EMR_SERVERLESS_SERVICE,
            source_account=rep.account_id,
            source_arns=[f"arn:{rep.partition}:emr-serverless:{rep.region}:{rep.account_id}:/applications/*"],
        )
    )


def recovery_role_permissions(cfg: KitConfig) -> Document:
    rep = cfg.recovery_replica
    rec = cfg.recovery_bucket_arn
    scripts = f"arn:{rep.partition}:s3:::{cfg.recovery_scripts_bucket}"
    stmts: list[S.Statement | None] = [
        S.allow_actions("ReadReplicaCatalog", A.CATALOG_BUCKET_READ, [rep.bucket_arn]),
        S.allow_actions("ReadReplicaTables", A.CATALOG_TABLE_READ, [S.table_arns(rep.bucket_arn)]),
        S.allow_actions("ManageRecoveryCatalog", A.CATALOG_BUCKET_READ + A.RECOVERY_BUCKET_WRITE, [rec]),
        S.allow_actions("WriteRecoveryTables", A.CATALOG_TABLE_READ + A.RECOVERY_TABLE_WRITE, [S.table_arns(rec)]),
        S.deny_actions(
            "DenyAllWritesToReplicas",
            A.REPLICA_WRITE_ACTIONS,
            [r.bucket_arn for r in cfg.replicas] + [S.table_arns(r.bucket_arn) for r in cfg.replicas],
        ),
        S.allow_s3("ReadRecoveryScripts", ["GetObject"], [f"{scripts}/scripts/*"]),
        S.allow_s3("ListRecoveryScriptsBucket", ["ListBucket"], [scripts]),
        S.allow_s3("WriteRecoveryLogsAndReports", ["PutObject"], [f"{scripts}/logs/*", f"{scripts}/reports/*"]),
    ]
    if rep.encryption.type == "kms":
        res, cond = kms_resource(cfg, rep.encryption, account_id=rep.account_id, region=rep.region, bucket=rep.bucket)
        stmts.append(S.allow_kms("DecryptReplicaTableData", ["Decrypt"], [res], cond))
    if cfg.recovery.encryption.type == "kms":
        res, cond = kms_resource(
            cfg, cfg.recovery.encryption, account_id=rep.account_id, region=rep.region, bucket=cfg.recovery.bucket
        )
        stmts.append(S.allow_kms("EncryptRecoveryTableData", ["Decrypt", "Encrypt", "GenerateDataKey"], [res], cond))
    return doc(*stmts)


# ---------------------------------------------------------------- KMS key policies ----


@dataclass(frozen=True)
class KeySite:
    role: str  # "source" | "replica" | "recovery"
    account_id: str
    region: str
    bucket: str
    bucket_arn: str


def key_sites(cfg: KitConfig) -> list[KeySite]:
    """Buckets whose KMS key the kit creates (`kms_key = "create"`)."""
    out = []
    src = cfg.source
    if src.encryption.creates_key:
        out.append(KeySite("source", src.account_id, src.region, src.bucket, src.bucket_arn))
    for r in cfg.replicas:
        if r.encryption.creates_key:
            out.append(KeySite("replica", r.account_id, r.region, r.bucket, r.bucket_arn))
    if cfg.recovery.encryption.creates_key:
        rep = cfg.recovery_replica
        out.append(KeySite("recovery", rep.account_id, rep.region, cfg.recovery.bucket, cfg.recovery_bucket_arn))
    return out


def kms_key_policy(cfg: KitConfig, site: KeySite) -> Document:
    stmts: list[S.Statement | None] = [
        S.kms_root_administration(site.account_id, partition_of_arn(site.region)),
        S.kms_allow_maintenance(site.bucket_arn, site.account_id),
    ]
    if site.role == "source":
        stmts.append(
            S.kms_allow_key_use(
                "AllowReplicationRoleReadSource", [cfg.replication_role_arn], ["Decrypt", "GenerateDataKey"]
            )
        )
    elif site.role == "replica":
        stmts.append(
            S.kms_allow_key_use(
                "AllowReplicationRoleWriteReplica",
                [cfg.replication_role_arn],
                ["Decrypt", "Encrypt", "GenerateDataKey"],
            )
        )
        if site.bucket == cfg.recovery.replica:
            stmts.append(S.kms_allow_key_use("AllowRecoveryRoleReadReplica", [cfg.recovery_role_arn], ["Decrypt"]))
        stmts.append(S.kms_deny_key_deletion(cfg.protection.break_glass_principals))
        replica = next(r for r in cfg.replicas if r.bucket == site.bucket)
        # The configuration requires a deploy role on replicas with a created key (KMS's policy-lockout safety check
        # rejects a key policy that denies the principal creating it kms:PutKeyPolicy).
        bg_and_deploy = [*cfg.protection.break_glass_principals, *_deploy_roles([replica])]
        stmts.append(S.kms_deny_key_policy_change(bg_and_deploy))
    else:
        stmts.append(
            S.kms_allow_key_use(
                "AllowRecoveryRoleUseKey", [cfg.recovery_role_arn], ["Decrypt", "Encrypt", "GenerateDataKey"]
            )
        )
    from policies import assurance  # issue 11: the monitor reads the source's encrypted metadata

    stmts += assurance.key_policy_statements(cfg, site.role)
    return doc(*stmts)


# ---------------------------------------------------------------- all documents ----


@dataclass(frozen=True)
class PolicyDoc:
    name: str  # file stem under policies/rendered/<example>/
    kind: str  # trust | identity | bucket-policy | table-policy | scp | kms-key-policy
    account_id: str
    attached_to: str
    document: Document


def example_table_arn(replica: Replica) -> str:
    return f"{replica.bucket_arn}/table/{TABLE_ID_PLACEHOLDER}"


def build_documents(cfg: KitConfig) -> list[PolicyDoc]:
    src = cfg.source
    rep = cfg.recovery_replica
    docs = [
        PolicyDoc(
            "replication-role-trust",
            "trust",
            src.account_id,
            f"IAM role {cfg.replication_role_name} (trust)",
            replication_role_trust(cfg),
        ),
        PolicyDoc(
            "replication-role-permissions",
            "identity",
            src.account_id,
            f"IAM role {cfg.replication_role_name}",
            replication_role_permissions(cfg),
        ),
    ]
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
    for acct in replica_accounts(cfg):
        docs.append(
            PolicyDoc(
                f"replica-guardrail--{acct}",
                "identity",
                acct,
                f"IAM managed policy {cfg.guardrail_policy_name}",
                replica_guardrail(cfg, acct),
            )
        )
    if cfg.protection.organization:
        org = cfg.protection.organization
        docs.append(
            PolicyDoc(
                "scp-protect-replicas",
                "scp",
                org.management_account_id,
                f"SCP {cfg.scp_name} on {', '.join(org.targets)}",
                service_control_policy(cfg),
            )
        )
    docs += [
        PolicyDoc(
            "recovery-role-trust",
            "trust",
            rep.account_id,
            f"IAM role {cfg.recovery_role_name} (trust)",
            recovery_role_trust(cfg),
        ),
        PolicyDoc(
            "recovery-role-permissions",
            "identity",
            rep.account_id,
            f"IAM role {cfg.recovery_role_name}",
            recovery_role_permissions(cfg),
        ),
    ]
    for site in key_sites(cfg):
        docs.append(
            PolicyDoc(
                f"kms-key-policy--{site.bucket}",
                "kms-key-policy",
                site.account_id,
                f"KMS key {kms_alias(cfg, site.bucket)}",
                kms_key_policy(cfg, site),
            )
        )
    from policies import assurance  # issue 11: monitor, schedules, rehearsal metrics, alarm topic keys

    docs += assurance.documents(cfg)
    return docs
