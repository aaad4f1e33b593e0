"""The KMS key policies of the kit-created keys of table buckets (source, replica, recovery): who uses each key,
and the denies that keep a replica key (break-glass only) and a source key (its deploy role and break-glass) from
being disabled, deleted or re-written. `s3tables_kit.policies.documents` names them `kms-key-policy--<bucket>`."""

from __future__ import annotations

from dataclasses import dataclass

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import assurance, fan_in
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, doc
from s3tables_kit.topology.backup import backup_role_arn
from s3tables_kit.topology.config import KitConfig, partition_of_arn
from s3tables_kit.topology.vault_accounts import recovery_reads


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
    for src in cfg.sources:
        if src.encryption.creates_key:
            out.append(KeySite("source", src.account_id, src.region, src.bucket, src.bucket_arn))
    for r in cfg.replicas:
        if r.encryption.creates_key:
            out.append(KeySite("replica", r.account_id, r.region, r.bucket, r.bucket_arn))
    if cfg.recovery.encryption.creates_key:
        rep = cfg.recovery_replica
        out.append(KeySite("recovery", rep.account_id, rep.region, cfg.recovery.bucket, cfg.recovery_bucket_arn))
    return out


def replica_key_tags(cfg: KitConfig) -> dict[str, str]:
    """Tags on every replica key the kit creates: the SCP and the guardrail protect keys that carry this key."""
    return {iam_actions.REPLICA_KEY_TAG: cfg.kit.name}


def kms_key_policy(cfg: KitConfig, site: KeySite) -> Document:
    partition = partition_of_arn(site.region)
    stmts: list[iam_statements.Statement | None] = [
        iam_statements.kms_root_administration(site.account_id, partition),
        iam_statements.kms_root_service_grants(site.account_id, partition),
        iam_statements.kms_allow_maintenance(site.bucket_arn, site.account_id),
    ]
    src = next((s for s in cfg.sources if s.bucket_arn == site.bucket_arn), None) if site.role == "source" else None
    if src is not None:
        stmts.append(
            iam_statements.kms_allow_key_use(
                "AllowReplicationRoleReadSource", [cfg.replication_role_arn_of(src)], ["Decrypt", "GenerateDataKey"]
            )
        )
        # disabling the source key stops replication: the deploy role and break-glass only
        stmts.append(iam_statements.kms_deny_destruction_except(assurance.source_key_guardians(cfg, src)))
    elif site.role == "replica":
        # a failover topology's new bucket is no replica of the configuration: the (failed) source's role, as before
        replica = next((r for r in cfg.replicas if r.bucket == site.bucket), None)
        use, writers = ["Decrypt", "Encrypt", "GenerateDataKey"], "AllowReplicationRoleWriteReplica"
        if replica is not None and fan_in.is_fan_in(cfg, replica):
            stmts.append(fan_in.key_use_grant(cfg, replica, writers, use))
        else:
            roles = list(cfg.replication_role_arns_into(replica) if replica else cfg.replication_role_arns)
            stmts.append(iam_statements.kms_allow_key_use(writers, roles, use))
        if site.bucket in {r.bucket for r in recovery_reads(cfg)}:
            stmts.append(
                iam_statements.kms_allow_key_use("AllowRecoveryRoleReadReplica", [cfg.recovery_role_arn], ["Decrypt"])
            )
            if cfg.vault is not None:  # the backup role reads what the vault holds: these buckets too
                stmts.append(
                    iam_statements.kms_allow_key_use("AllowBackupRoleReadReplica", [backup_role_arn(cfg)], ["Decrypt"])
                )
        bg = cfg.protection.break_glass_principals
        # Break-glass of any account administers and reads the key: the rescue path (a cross-account principal
        # needs this Allow; the account root's statement covers only the key's own account).
        stmts.append(
            iam_statements.kms_allow_key_use(
                "AllowBreakGlassKeyAdministrationAndDecrypt", bg, iam_actions.KMS_BREAK_GLASS
            )
        )
        stmts.append(iam_statements.kms_deny_key_deletion(bg))
        # Nobody but break-glass replaces the policy, so the key is created with the lockout check bypassed.
        stmts.append(iam_statements.kms_deny_key_policy_change(bg))
        stmts.append(iam_statements.kms_deny_protection_tag_removal(iam_actions.REPLICA_KEY_TAG, bg))
    else:
        stmts.append(
            iam_statements.kms_allow_key_use(
                "AllowRecoveryRoleUseKey", [cfg.recovery_role_arn], ["Decrypt", "Encrypt", "GenerateDataKey"]
            )
        )
    # continuous assurance: the monitor reads the source's encrypted metadata
    stmts += assurance.key_policy_statements(cfg, src)
    return doc(*stmts)
