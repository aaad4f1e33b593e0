"""The backup vault's documents (`[vault]`, docs/decisions/0034-backup-vault.md): its bucket policy, its key policy,
the backup role's trust and permissions, and the vault statements of the guards SCP.

The vault's protective denies are records (`VAULT_RULES`), as the replicas' are
(`s3tables_kit.policies.actions.PROTECTION_RULES`): a rule names its actions, whether they act on the bucket or its
objects, who it exempts (break-glass, the backup role, nobody) and whether the guards SCP carries it too. The bucket
policy and the SCP are built from the same records, so a new rule is a new record, never a branch.

What Object Lock in compliance mode enforces itself (no deletion of a locked version, no shorter retention, no mode
change, by anyone, root included) is not a policy and is not claimed here: the policies decide who may write and who
may change the settings; the lock decides what nobody may do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.assurance import (
    allow_pass_role_to_service,
    allow_scheduler_assume_role,
    allow_start_rehearsal_job_run,
    monitors_list_vault_grant,
    recovery_site,
    schedule_name,
)
from s3tables_kit.policies.model import Document, PolicyDoc, doc, kms_resource, role_documents
from s3tables_kit.topology import contract
from s3tables_kit.topology.backup import (
    BACKUP_SCHEDULE,
    VAULT_TABLES_PREFIX,
    backup_role_arn,
    backup_role_name,
    backup_scheduler_role_arn,
    backup_scheduler_role_name,
    vault_kms_alias,
)
from s3tables_kit.topology.config import KitConfig, Vault

BREAK_GLASS = "break-glass"
BACKUP_ROLE = "backup-role"
NOBODY = "nobody"


@dataclass(frozen=True)
class VaultRule:
    """One protective Deny of the vault. `exempt`: break-glass, the backup role, or nobody; `objects`: the actions
    act on `<bucket>/*` (else on the bucket); `in_scp`: the guards SCP carries it too (its second layer)."""

    sid: str
    actions: tuple[str, ...]
    risk: str
    exempt: str
    objects: bool = False
    in_scp: bool = False
    # The request's condition under which the rule denies (besides the exemption): None, always.
    when: dict[str, dict[str, str]] | None = None


VAULT_RULES: tuple[VaultRule, ...] = (
    VaultRule(
        sid="DenyVaultLockAndLifecycleChange",
        actions=("s3:PutBucketObjectLockConfiguration", "s3:PutLifecycleConfiguration"),
        risk="A shorter default retention, or a lifecycle rule that expires objects, shortens what a backup keeps.",
        exempt=BREAK_GLASS,
        in_scp=True,
    ),
    VaultRule(
        sid="DenyVaultPolicyAndEncryptionChange",
        actions=(
            "s3:PutBucketPolicy",
            "s3:DeleteBucketPolicy",
            "s3:PutBucketVersioning",
            "s3:PutEncryptionConfiguration",
            "s3:PutBucketPublicAccessBlock",
            "s3:PutBucketOwnershipControls",
            "s3:PutReplicationConfiguration",
            "s3:DeleteBucket",
        ),
        risk="A rewritten policy lets anyone write or read the vault; other encryption or a replication rule moves "
        "the backups out of the vault key's reach.",
        exempt=BREAK_GLASS,
        in_scp=True,
    ),
    VaultRule(
        sid="DenyVaultWritesExceptBackupRole",
        actions=("s3:PutObject", "s3:PutObjectRetention"),
        risk="Anyone else writing the vault could plant a backup point (or fill it): only the backup role writes, "
        "and Object Lock lets it extend a retention, never shorten one.",
        exempt=BACKUP_ROLE,
        objects=True,
    ),
    VaultRule(
        sid="DenyVaultObjectChange",
        actions=(
            "s3:DeleteObject",
            "s3:DeleteObjectVersion",
            "s3:PutObjectLegalHold",
            "s3:PutObjectAcl",
            "s3:PutObjectVersionAcl",
            "s3:PutObjectTagging",
            "s3:PutObjectVersionTagging",
            "s3:DeleteObjectTagging",
            "s3:DeleteObjectVersionTagging",
            "s3:BypassGovernanceRetention",
        ),
        risk="A delete marker hides a backup and a legal hold or tag changes what a later tool trusts: break-glass "
        "only (Object Lock still refuses the deletion of a locked version to break-glass too).",
        exempt=BREAK_GLASS,
        objects=True,
    ),
    VaultRule(
        sid="DenyVaultWeakerLockMode",
        actions=("s3:PutObject", "s3:PutObjectRetention"),
        risk="An object written or re-retained in GOVERNANCE mode could be deleted early by anyone granted "
        "s3:BypassGovernanceRetention: the vault takes COMPLIANCE only.",
        exempt=NOBODY,
        objects=True,
        # the key is absent when a write takes the bucket's default (COMPLIANCE): a present key other than it
        when={"Null": {"s3:object-lock-mode": "false"}, "StringNotEquals": {"s3:object-lock-mode": "COMPLIANCE"}},
    ),
)


def bucket_name(cfg: KitConfig) -> str:
    return _vault(cfg).bucket_name(cfg.kit.name)


def bucket_arn(cfg: KitConfig) -> str:
    return _vault(cfg).bucket_arn(cfg.kit.name)


def privileged_roles(cfg: KitConfig) -> list[str]:
    """The backup role's ARN carries the vault's write exemption and the backup schedule's role may pass it: their
    trust is guarded like the replication role's."""
    if cfg.vault is None:
        return []
    return [backup_role_arn(cfg), *([backup_scheduler_role_arn(cfg)] if cfg.vault.tables else [])]


def _vault(cfg: KitConfig) -> Vault:
    if cfg.vault is None:
        raise ValueError("the configuration has no [vault]")
    return cfg.vault


def _exempt(cfg: KitConfig, rule: VaultRule) -> list[str]:
    return {
        BREAK_GLASS: list(cfg.protection.break_glass_principals),
        BACKUP_ROLE: [backup_role_arn(cfg)],
        NOBODY: [],
    }[rule.exempt]


def _resources(cfg: KitConfig, rule: VaultRule) -> list[str]:
    arn = bucket_arn(cfg)
    return [f"{arn}/*"] if rule.objects else [arn]


def _condition(exempt: Sequence[str], when: dict[str, dict[str, str]] | None) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {"ArnNotLike": {"aws:PrincipalArn": sorted(set(exempt))}} if exempt else {}
    for op, keys in (when or {}).items():
        out[op] = dict(keys)
    return out


def rule_statement(cfg: KitConfig, rule: VaultRule, *, kind: str) -> iam_statements.Statement:
    """`rule` as a Deny in the bucket policy (`kind` "bucket-policy": Principal "*") or the guards SCP ("scp"). The
    SCP also exempts the vault's deploy role from the settings rules, which it cannot tell from the first deploy; the
    bucket policy, applied last, does not (docs/decisions/0028-lock-after-first-deploy.md)."""
    exempt = _exempt(cfg, rule)
    deploy = _vault(cfg).deploy_role_arn
    if kind == "scp" and rule.exempt == BREAK_GLASS and deploy:
        exempt.append(deploy)
    return iam_statements.statement(
        rule.sid,
        "Deny",
        rule.actions,
        _resources(cfg, rule),
        principal="*" if kind == "bucket-policy" else None,
        condition=_condition(exempt, rule.when),
    )


_WHO = {BREAK_GLASS: "break-glass", BACKUP_ROLE: "the backup role", NOBODY: "nobody"}


def summary_lines(cfg: KitConfig) -> list[str]:
    """The vault's section of the rendered SUMMARY.md: each rule, whom it exempts, and the layers that carry it."""
    if cfg.vault is None:
        return []
    v = cfg.vault
    lines = [
        "## The backup vault",
        "",
        f"S3 bucket `{bucket_name(cfg)}` ({v.account_id}, {v.region}): Object Lock in COMPLIANCE mode for "
        f"{v.retention_days} days (no version is deleted, and no retention shortened, before then by anyone, "
        f"break-glass and root included: S3 enforces it), storage class {v.storage_class}. Written only by "
        f"`{backup_role_arn(cfg)}`.",
        "",
        *(
            [
                f"Backed up every {v.interval_hours} h ({', '.join(f'`{t}`' for t in v.tables)}): the schedule's role "
                f"`{backup_scheduler_role_name(cfg)}` starts job runs on the kit's EMR Serverless application and "
                "passes them the backup role, nothing else (`backup-schedule-role-permissions`).",
                "",
            ]
            if v.tables
            else []
        ),
        "| Rule | Actions | Exempt | Layers |",
        "|---|---|---|---|",
    ]
    for r in VAULT_RULES:
        layers = "bucket policy, guards SCP" if r.in_scp else "bucket policy"
        when = " (in another lock mode than COMPLIANCE)" if r.when else ""
        lines.append(f"| `{r.sid}` | {', '.join(f'`{a}`' for a in r.actions)}{when} | {_WHO[r.exempt]} | {layers} |")
    return [*lines, ""]


def bucket_policy(cfg: KitConfig) -> Document:
    """The vault bucket's policy: TLS only; the cross-account backup role's grant to write and read back and the
    recovery role's to read (their own account's identity policies are the other half), and the cross-account
    replication monitors' grant to list it (the backup age); each rule's Deny."""
    arn = bucket_arn(cfg)
    role = backup_role_arn(cfg)
    stmts: list[iam_statements.Statement | None] = [iam_statements.deny_insecure_transport(arn)]
    if role.split(":")[4] != _vault(cfg).account_id:
        stmts.append(
            iam_statements.statement(
                "AllowBackupRoleWrite", "Allow", BACKUP_OBJECT_ACTIONS, [f"{arn}/*"], principal={"AWS": role}
            )
        )
        stmts.append(
            iam_statements.statement(
                "AllowBackupRoleList", "Allow", BACKUP_BUCKET_ACTIONS, [arn], principal={"AWS": role}
            )
        )
        stmts += recovery_read_grants(cfg)
    stmts.append(monitors_list_vault_grant(cfg, arn, _vault(cfg).account_id))
    stmts += [rule_statement(cfg, r, kind="bucket-policy") for r in VAULT_RULES]
    return doc(*stmts)


def scp_statements(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """The guards SCP's vault statements: each settings rule, break-glass exempt; the vault key by its tag where no
    replica key already brings the tag-matched key guards."""
    if cfg.vault is None:
        return []
    out: list[iam_statements.Statement | None] = [rule_statement(cfg, r, kind="scp") for r in VAULT_RULES if r.in_scp]
    out += backup_role_guards(cfg)
    if cfg.vault.creates_key and not any(r.encryption.creates_key for r in cfg.replicas):
        bg = cfg.protection.break_glass_principals
        out.append(
            iam_statements.deny_tagged_key_destruction("DenyReplicaKeyDestruction", iam_actions.REPLICA_KEY_TAG, bg)
        )
        out.append(iam_statements.deny_key_tag_removal("DenyReplicaKeyUntag", iam_actions.REPLICA_KEY_TAG, bg))
    return out


BACKUP_ROLE_EDITS = (
    "iam:AttachRolePolicy",
    "iam:DeleteRolePermissionsBoundary",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
    "iam:PutRolePermissionsBoundary",
    "iam:PutRolePolicy",
)


BACKUP_ROLE_GUARD_RISKS = {
    "DenyBackupRoleEdit": "the backup role is the only writer of the vault: a policy attached to it, or its deny of "
    "replica writes removed, changes what every scheduled backup may do. Break-glass only.",
    "DenyPassBackupRole": "its trust admits any job run of the kit's EMR Serverless application, so whoever passes "
    "it runs code as the vault's writer (a forged backup point restores the attacker's data): the backup schedule's "
    "role and break-glass only.",
}


def backup_role_guards(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """Whoever acts as the backup role writes the vault (a forged backup point restores the attacker's data). Its
    trust and deletion are `DenyPrivilegedRoleTampering`'s; its identity policies are break-glass's to change; and
    since its trust admits any job run of the kit's application, passing it is a takeover: only the backup schedule's
    role (with `tables`) and break-glass pass it."""
    bg = list(cfg.protection.break_glass_principals)
    role = backup_role_arn(cfg)
    passers = [*bg, *([backup_scheduler_role_arn(cfg)] if _vault(cfg).tables else [])]
    return [
        iam_statements.deny_except("DenyBackupRoleEdit", BACKUP_ROLE_EDITS, [role], bg),
        iam_statements.deny_except("DenyPassBackupRole", ["iam:PassRole"], [role], passers),
    ]


# ---------------------------------------------------------------- the vault key ----


def key_policy(cfg: KitConfig) -> Document:
    """The vault key, guarded like a replica key: used by the backup role, decrypting for the recovery role (a restore);
    administered and read by break-glass;
    disabled, deleted, re-written or untagged by break-glass only (created with the lockout check bypassed)."""
    v = _vault(cfg)
    bg = cfg.protection.break_glass_principals
    return doc(
        iam_statements.kms_root_administration(v.account_id, v.partition),
        iam_statements.kms_root_service_grants(v.account_id, v.partition),
        iam_statements.kms_allow_key_use(
            "AllowBackupRoleUseKey", [backup_role_arn(cfg)], ["Decrypt", "Encrypt", "GenerateDataKey"]
        ),
        iam_statements.kms_allow_key_use("AllowRecoveryRoleDecrypt", [cfg.recovery_role_arn], RECOVERY_KEY_ACTIONS),
        iam_statements.kms_allow_key_use("AllowBreakGlassKeyAdministrationAndDecrypt", bg, iam_actions.KMS_BREAK_GLASS),
        iam_statements.kms_deny_key_deletion(bg),
        iam_statements.kms_deny_key_policy_change(bg),
        iam_statements.kms_deny_protection_tag_removal(iam_actions.REPLICA_KEY_TAG, bg),
    )


def key_resource(cfg: KitConfig) -> tuple[str, dict[str, dict[str, object]] | None]:
    """(resource, condition) naming the vault key in an identity policy: a created key by its alias."""
    v = _vault(cfg)
    if not v.creates_key:
        return v.kms_key, None
    return (
        f"arn:{v.partition}:kms:{v.region}:{v.account_id}:key/*",
        {"ForAnyValue:StringEquals": {"kms:ResourceAliases": vault_kms_alias(cfg, v)}},
    )


# ---------------------------------------------------------------- the recovery role ----

# What a restore from the vault does (`recover --from-vault`, the rehearsal's vault restore): list a table's backup
# points and read their objects (HeadObject is authorised as GetObject), all under the layout's tables prefix, and
# decrypt them. It never writes: every write, delete and setting change stays denied to it by the bucket policy's rules
# (not exempt from any), and Object Lock refuses a locked version's deletion to everyone.
RECOVERY_OBJECT_ACTIONS = ("s3:GetObject",)
RECOVERY_BUCKET_ACTIONS = ("s3:ListBucket",)
RECOVERY_KEY_ACTIONS = ("Decrypt",)


def _recovery_read(
    cfg: KitConfig, sids: tuple[str, str], principal: dict[str, str] | None
) -> list[iam_statements.Statement | None]:
    arn = bucket_arn(cfg)
    listed = {"StringLike": {"s3:prefix": [f"{VAULT_TABLES_PREFIX}*"]}}
    objects = [f"{arn}/{VAULT_TABLES_PREFIX}*"]
    return [
        iam_statements.statement(sids[0], "Allow", RECOVERY_OBJECT_ACTIONS, objects, principal=principal),
        iam_statements.statement(
            sids[1], "Allow", RECOVERY_BUCKET_ACTIONS, [arn], principal=principal, condition=listed
        ),
    ]


def recovery_read_grants(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """In the vault's bucket policy (the vault in another account than the recovery role): the recovery role may read
    and list the backups."""
    return _recovery_read(
        cfg, ("AllowRecoveryRoleReadVault", "AllowRecoveryRoleListVault"), {"AWS": cfg.recovery_role_arn}
    )


def recovery_role_statements(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """In the recovery role's permissions (none without `[vault]`): read and list the vault's backups and decrypt them
    with the vault key, so `recover --from-vault` and the rehearsal restore from it as the recovery role."""
    if cfg.vault is None:
        return []
    res, cond = key_resource(cfg)
    return [
        *_recovery_read(cfg, ("ReadVaultBackups", "ListVaultBackups"), None),
        iam_statements.allow_kms("DecryptVaultBackups", RECOVERY_KEY_ACTIONS, [res], cond),
    ]


# ---------------------------------------------------------------- the backup role ----

# What the backup job does in the vault: write a file it does not hold yet (`If-None-Match: *`), extend the
# retention of a file a new backup point reuses, and read back what it holds (HeadObject is authorised as GetObject).
BACKUP_OBJECT_ACTIONS = ("s3:PutObject", "s3:PutObjectRetention", "s3:GetObject", "s3:GetObjectRetention")
BACKUP_BUCKET_ACTIONS = ("s3:ListBucket",)


def backup_role_permissions(cfg: KitConfig) -> Document:
    """Read the replica it backs up (the recovery replica, in its own account) and write new objects into the vault:
    nothing else. Every replica write stays denied to it, as to the recovery role."""
    rep = cfg.recovery_replica
    arn = bucket_arn(cfg)
    scripts = f"arn:{rep.partition}:s3:::{cfg.recovery_scripts_bucket}"
    stmts: list[iam_statements.Statement | None] = [
        iam_statements.allow_actions("ReadReplicaCatalog", iam_actions.CATALOG_BUCKET_READ, [rep.bucket_arn]),
        iam_statements.allow_actions(
            "ReadReplicaTables", iam_actions.CATALOG_TABLE_READ, [iam_statements.table_arns(rep.bucket_arn)]
        ),
        iam_statements.deny_actions(
            "DenyAllWritesToReplicas",
            iam_actions.REPLICA_WRITE_ACTIONS,
            [r.bucket_arn for r in cfg.replicas] + [iam_statements.table_arns(r.bucket_arn) for r in cfg.replicas],
        ),
        iam_statements.statement("WriteVaultObjects", "Allow", BACKUP_OBJECT_ACTIONS, [f"{arn}/*"]),
        iam_statements.statement("ListVault", "Allow", BACKUP_BUCKET_ACTIONS, [arn]),
        # its job run's entry, zip and jars from the deploy-time prefix only (on-call writes `scripts/`), and its logs
        iam_statements.allow_s3(
            "ReadScheduledJobArtifacts", ["GetObject"], [f"{scripts}/{contract.SCHEDULED_ARTIFACTS_PREFIX}*"]
        ),
        iam_statements.allow_s3("WriteJobLogs", ["PutObject"], [f"{scripts}/logs/*"]),
    ]
    if rep.encryption.type == "kms":
        res, cond = kms_resource(cfg, rep.encryption, account_id=rep.account_id, region=rep.region, bucket=rep.bucket)
        stmts.append(iam_statements.allow_kms("DecryptReplicaTableData", ["Decrypt"], [res], cond))
    res, cond = key_resource(cfg)
    stmts.append(iam_statements.allow_kms("UseVaultKey", ["Decrypt", "Encrypt", "GenerateDataKey"], [res], cond))
    return doc(*stmts)


def backup_scheduler_role_trust(cfg: KitConfig) -> Document:
    site = recovery_site(cfg)
    return doc(
        allow_scheduler_assume_role("AllowSchedulerForTheBackupSchedule", site, schedule_name(cfg, BACKUP_SCHEDULE))
    )


def backup_scheduler_role_permissions(cfg: KitConfig) -> Document:
    """Start a job run on the kit's EMR Serverless application and pass it the backup role: nothing else."""
    return doc(
        allow_start_rehearsal_job_run(recovery_site(cfg), cfg.kit.name, sid="StartBackupJobRunOnTheKitApplication"),
        allow_pass_role_to_service(
            "PassTheBackupRoleToEmrServerless", backup_role_arn(cfg), iam_actions.EMR_SERVERLESS_SERVICE
        ),
    )


def documents(cfg: KitConfig, trust: Document) -> list[PolicyDoc]:
    """The vault's documents (none without `[vault]`): bucket policy, key policy, the backup role's two, and with
    `tables` the backup schedule role's two. `trust`: the recovery role's trust (job runs of the kit's EMR Serverless
    application), which the backup role shares."""
    if cfg.vault is None:
        return []
    v = cfg.vault
    rep = cfg.recovery_replica
    out = [
        PolicyDoc(
            "vault-bucket-policy", "s3-bucket-policy", v.account_id, f"S3 bucket {bucket_name(cfg)}", bucket_policy(cfg)
        ),
        *role_documents(
            "backup-role",
            rep.account_id,
            backup_role_name(cfg),
            trust,
            backup_role_permissions(cfg),
        ),
    ]
    if v.tables:  # the scheduled backup of [vault] tables
        out += role_documents(
            "backup-schedule-role",
            rep.account_id,
            backup_scheduler_role_name(cfg),
            backup_scheduler_role_trust(cfg),
            backup_scheduler_role_permissions(cfg),
        )
    if v.creates_key:
        out.append(
            PolicyDoc(
                "kms-key-policy--vault",
                "kms-key-policy",
                v.account_id,
                f"KMS key {vault_kms_alias(cfg, v)}",
                key_policy(cfg),
            )
        )
    return out
