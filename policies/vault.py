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

from dataclasses import dataclass

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import allowlists, scopes, vault_accounts
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.assurance import (
    allow_pass_role_to_service,
    allow_read_kit_application,
    allow_scheduler_assume_role,
    allow_start_rehearsal_job_run,
    monitors_list_vault_grant,
    recovery_site,
    rehearsal_scheduler_role_name,
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
    vault_point_key_alias,
)
from s3tables_kit.topology.checks import hardener_role_arn
from s3tables_kit.topology.config import KitConfig, Vault

BREAK_GLASS = "break-glass"
BACKUP_ROLE = "backup-role"
NOBODY = "nobody"


@dataclass(frozen=True)
class VaultRule:
    """A Deny of the vault that binds every principal, break-glass and the backup role included, under `when` (the
    request's condition). `objects`: the actions act on `<bucket>/*` (else on the bucket); `in_scp`: the vault SCP
    carries it too (its second layer, which binds the account's root user as well)."""

    sid: str
    actions: tuple[str, ...]
    risk: str
    exempt: str
    objects: bool = False
    in_scp: bool = False
    when: dict[str, dict[str, str]] | None = None


# Retain-until dates the backup job sets are at most `retention_days` ahead (a point's time plus the retention);
# one day of slack for the service's rounding of the remaining days.
RETENTION_CEILING_SLACK_DAYS = 1
CEILING_RISK = (
    "A retain-until date years ahead keeps a forged or malformed object (and its cost) beyond anyone's reach: no "
    "date further ahead than the configured retention."
)

VAULT_RULES: tuple[VaultRule, ...] = (
    VaultRule(
        sid="DenyVaultWeakerLockMode",
        actions=("s3:PutObject", "s3:PutObjectRetention"),
        risk="An object written or re-retained in GOVERNANCE mode could be deleted early by anyone granted "
        "s3:BypassGovernanceRetention: the vault takes COMPLIANCE only.",
        exempt=NOBODY,
        objects=True,
        in_scp=True,
        # the key is absent when a write takes the bucket's default (COMPLIANCE): a present key other than it
        when={"Null": {"s3:object-lock-mode": "false"}, "StringNotEquals": {"s3:object-lock-mode": "COMPLIANCE"}},
    ),
    VaultRule(
        sid="DenyVaultWriteWithoutIfNoneMatch",
        actions=("s3:PutObject",),
        risk="A write without If-None-Match could add a second version under a backup's key, which a reader of the "
        "latest version would take instead: every object is written once (multipart parts, which take no "
        "condition header, are exempt; their CompleteMultipartUpload is not).",
        exempt=NOBODY,
        objects=True,
        in_scp=True,
        when={"Null": {"s3:if-none-match": "true"}, "Bool": {"s3:ObjectCreationOperation": "true"}},
    ),
)


def retention_ceiling_rule(cfg: KitConfig) -> VaultRule:
    """No retain-until date further than `retention_days` (and the slack) ahead: a forged object locked for a
    century could never be removed, and its cost never stopped."""
    days = _vault(cfg).retention_days + RETENTION_CEILING_SLACK_DAYS
    return VaultRule(
        sid="DenyVaultRetentionBeyondCeiling",
        actions=("s3:PutObject", "s3:PutObjectRetention"),
        risk=CEILING_RISK,
        exempt=NOBODY,
        objects=True,
        in_scp=True,
        when={"NumericGreaterThan": {"s3:object-lock-remaining-retention-days": str(days)}},
    )


def rules(cfg: KitConfig) -> tuple[VaultRule, ...]:
    return (*VAULT_RULES, retention_ceiling_rule(cfg))


# ---------------------------------------------------------------- the vault's scopes as allow-lists ----

# What the backup job does in the vault: write a file it does not hold yet (`If-None-Match: *`), extend the
# retention of a file a new backup point reuses, and read back what it holds (HeadObject is authorised as GetObject).
BACKUP_OBJECT_ACTIONS = ("s3:PutObject", "s3:PutObjectRetention", "s3:GetObject", "s3:GetObjectRetention")
BACKUP_BUCKET_ACTIONS = ("s3:ListBucket",)
S3_READS, KMS_READS = allowlists.reads("s3"), allowlists.reads("kms")
EMR_READS = tuple(
    r for r in allowlists.reads("emr-serverless") if not r.endswith("Describe*")
)  # it has no Describe action
# Break-glass may add a legal hold (it only keeps a version longer) and read; nothing that deletes, overwrites,
# re-encrypts, archives or re-configures.
BREAK_GLASS_VAULT = ("s3:PutObjectLegalHold",)
# What the first deploy of the vault stack does to the bucket before its policy exists (the SCP's exemption of the
# vault's deployer, docs/decisions/0028-lock-after-first-deploy.md); the bucket policy, applied last, then denies
# every one of them to everyone for good.
FIRST_DEPLOY_BUCKET = (
    "s3:CreateBucket",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketPolicy",
    "s3:PutBucketPublicAccessBlock",
    "s3:PutBucketTagging",
    "s3:PutBucketVersioning",
    "s3:PutEncryptionConfiguration",
    "s3:PutLifecycleConfiguration",
)
# The vault key: the backup role encrypts and decrypts, a restore decrypts, break-glass reads what it protects; the
# first deploy aliases it and turns rotation on (tags are given at creation). Nothing disables, deletes, re-writes
# the policy of, moves the alias of, or grants on the key: the policy is written once (docs/decisions/0034).
BACKUP_KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")
RECOVERY_KEY_ACTIONS = ("Decrypt",)  # a restore
BREAK_GLASS_KEY = ("Decrypt", "DescribeKey")  # it reads what it protects
FIRST_DEPLOY_KEY = ("kms:CreateAlias", "kms:EnableKeyRotation")
# The scheduled job artifacts: written by the recovery stack's deployer (`make rehearse-upload`) and break-glass;
# never rolled back (no version deleted) and never replicated into.
DEPLOY_ARTIFACTS = ("s3:PutObject", "s3:DeleteObject")
# The kit's EMR Serverless application: the schedules start job runs; its deployer and break-glass also start,
# stop, update and tag it. Nobody deletes it.
START_JOB_RUN = "emr-serverless:StartJobRun"
DEPLOY_APPLICATION = (
    START_JOB_RUN,
    "emr-serverless:StartApplication",
    "emr-serverless:StopApplication",
    "emr-serverless:TagResource",
    "emr-serverless:UntagResource",
    "emr-serverless:UpdateApplication",
)


def _row(scope: str, title: str, service: str, everyone: tuple[str, ...], risk: str) -> allowlists.AllowList:
    """A vault scope's row: it exempts nobody, break-glass included (its classes are placed per configuration by
    `policies/scopes.py`)."""
    return allowlists.AllowList(scope=scope, title=title, services=(service,), everyone=everyone, exempt=(), risk=risk)


VAULT, VAULT_KEY, VAULT_POINT_KEY, VAULT_ALIAS, SCHEDULED_ARTIFACTS, KIT_APPLICATION = (
    _row("Vault", "the vault bucket and its objects", "s3", S3_READS, "A setting changed, a version added, a backup "
         "deleted, hidden, re-encrypted, archived or replicated into would undo what the vault keeps: nobody, "
         "break-glass included, does any of it."),
    _row("VaultKey", "the vault key", "kms", KMS_READS, "Disabled, deleted, its policy re-written or a grant made, "
         "every backup is unreadable or read elsewhere."),
    _row("VaultPointKey", "the point key (KMS HMAC)", "kms", KMS_READS, "Whoever may `GenerateMac` forges a backup "
         "point every restore trusts; disabled, deleted or its policy re-written, no point verifies."),
    # everyone may create it: once, an alias name is unique
    _row("VaultAlias", "the vault keys' aliases", "kms", ("kms:CreateAlias",), "Moved, the roles' grants (by alias) "
         "follow it to another key."),
    _row("ScheduledArtifacts", "the scheduled job artifacts (`scheduled/` of the scripts bucket)", "s3", S3_READS,
         "Replaced, replicated into or rolled back, the next scheduled run executes other code as the backup or "
         "recovery role."),
    _row("KitApplication", "the kit's EMR Serverless application (its `kit` tag)", "emr-serverless", EMR_READS,
         "Updated, its image or runtime configuration runs other code as the backup and recovery roles; stopped or "
         "deleted, the backups stop."),
)  # fmt: skip


def _deployers(cfg: KitConfig, deploy_role: str | None) -> list[str]:
    """Who deploys a site: its deploy role, else break-glass credentials (the SCP binds every other principal)."""
    return [deploy_role] if deploy_role else people(cfg)


def people(cfg: KitConfig) -> list[str]:
    """Break-glass as the vault knows it: people, not automation (the scheduled hardener, which validation keeps out
    of break-glass, is everyone else here too)."""
    machines = {hardener_role_arn(cfg, src) for src in cfg.sources} if cfg.assurance.harden.enabled else set()
    return [p for p in cfg.protection.break_glass_principals if p not in machines]


def bucket_scope(cfg: KitConfig, *, kind: str) -> scopes.Placed:
    """The vault bucket and its objects. In the bucket policy (`kind` "resource-policy") nobody changes a setting,
    the first deployer included (the policy is applied last); in the SCP the deployer keeps the first deploy's
    settings, and the bucket policy binds it after (only the account's root user passes a bucket policy's Deny, for
    the policy itself, and the SCP binds root)."""
    arn = bucket_arn(cfg)
    rows: list[scopes.Row] = [
        ("backup-role", [backup_role_arn(cfg)], ("s3:PutObject", "s3:PutObjectRetention"), "It writes new objects "
         "(conditionally: `DenyVaultWriteWithoutIfNoneMatch`) and extends retentions (forwards only: Object Lock)."),
        ("break-glass", people(cfg), BREAK_GLASS_VAULT, "Break-glass reads and may add a legal hold."),
    ]  # fmt: skip
    if kind == "scp":
        deployers = _deployers(cfg, _vault(cfg).deploy_role_arn)
        rows.append(("deployer", deployers, FIRST_DEPLOY_BUCKET, "The first deploy's settings (the SCP only)."))
    return scopes.placed(VAULT, rows, (arn, f"{arn}/*"), None)


def key_scope(cfg: KitConfig, *, kind: str) -> scopes.Placed:
    """The vault key: in its key policy (Resource "*", the key itself) or, in the SCP, every key of the vault's
    account and Region that carries the vault alias (the alias cannot move: `UpdateAlias` and `DeleteAlias` need
    the key's permission, which its policy gives nobody)."""
    v = _vault(cfg)
    rows: list[scopes.Row] = [
        ("backup-role", [backup_role_arn(cfg)], BACKUP_KEY_ACTIONS, "The backup role encrypts and decrypts."),
        ("recovery-role", [cfg.recovery_role_arn], ("kms:Decrypt",), "A restore decrypts."),
        ("break-glass", people(cfg), ("kms:Decrypt",), "Break-glass reads what it protects."),
        ("deployer", _deployers(cfg, v.deploy_role_arn), FIRST_DEPLOY_KEY, "The first deploy aliases it and turns "
         "rotation on."),
    ]  # fmt: skip
    if kind == "scp":
        alias = {"ForAnyValue:StringEquals": {"kms:ResourceAliases": vault_kms_alias(cfg, v)}}
        return scopes.placed(VAULT_KEY, rows, (f"arn:{v.partition}:kms:{v.region}:{v.account_id}:key/*",), alias)
    return scopes.placed(VAULT_KEY, rows, ("*",), None)


def point_key_scope(cfg: KitConfig, *, kind: str) -> scopes.Placed:
    """The point key, as the vault key's scope: only the backup role MACs a point, it and a restore verify; break-glass
    reads it like everyone (a MAC of its own would be a forged point); nobody disables, deletes, re-writes the policy
    of, grants on or moves the alias of it (`VerifyMac` and `DescribeKey`: `POINT_KEY_*_ACTIONS`)."""
    v = _vault(cfg)
    rows: list[scopes.Row] = [
        ("backup-role", [backup_role_arn(cfg)], ("kms:GenerateMac", "kms:VerifyMac"), "It MACs each point it "
         "writes and verifies the newest point it reuses."),
        ("recovery-role", [cfg.recovery_role_arn], ("kms:VerifyMac",), "A restore verifies a point."),
        ("deployer", _deployers(cfg, v.deploy_role_arn), ("kms:CreateAlias",), "The first deploy aliases it."),
    ]  # fmt: skip
    if kind == "scp":
        alias = {"ForAnyValue:StringEquals": {"kms:ResourceAliases": vault_point_key_alias(cfg)}}
        return scopes.placed(VAULT_POINT_KEY, rows, (f"arn:{v.partition}:kms:{v.region}:{v.account_id}:key/*",), alias)
    return scopes.placed(VAULT_POINT_KEY, rows, ("*",), None)


def alias_scope(cfg: KitConfig) -> scopes.Placed:
    """The vault key's and the point key's aliases (the identity grants name the keys by them): created (once: a
    name is unique), never moved or deleted (`UpdateAlias` and `DeleteAlias` also need the key's permission, which
    its policy gives nobody)."""
    v = _vault(cfg)
    site = f"arn:{v.partition}:kms:{v.region}:{v.account_id}"
    aliases = (f"{site}:{vault_kms_alias(cfg, v)}", f"{site}:{vault_point_key_alias(cfg)}")
    return scopes.placed(VAULT_ALIAS, [], aliases, None)


def artifacts_scope(cfg: KitConfig) -> scopes.Placed:
    """The scheduled job runs' artifacts (`scheduled/` of the scripts bucket): what the backup and the rehearsal
    execute as the backup and recovery roles."""
    rep = cfg.recovery_replica
    deployers = sorted({*_deployers(cfg, rep.deploy_role_arn), *people(cfg)})
    why = "The recovery stack's deployer and break-glass upload them (`make rehearse-upload`)."
    rows: list[scopes.Row] = [("deployers", deployers, DEPLOY_ARTIFACTS, why)]
    scripts = f"arn:{rep.partition}:s3:::{cfg.recovery_scripts_bucket}/{contract.SCHEDULED_ARTIFACTS_PREFIX}*"
    return scopes.placed(SCHEDULED_ARTIFACTS, rows, (scripts,), None)


def application_scope(cfg: KitConfig) -> scopes.Placed:
    """The kit's EMR Serverless application, by the `kit` tag (its id is known only after apply): only its deployer
    and break-glass may change or tag it, so the tag that names it is guarded by the same Deny."""
    rep = cfg.recovery_replica
    site = recovery_site(cfg)
    deployers = sorted({*_deployers(cfg, rep.deploy_role_arn), *people(cfg)})
    schedules = [backup_scheduler_role_arn(cfg)] if _vault(cfg).tables else []
    if cfg.assurance.rehearsal.enabled:
        schedules.append(site.role_arn(rehearsal_scheduler_role_name(cfg)))
    rows: list[scopes.Row] = [
        ("schedules", schedules, (START_JOB_RUN,), "The schedules start job runs."),
        ("deployers", deployers, DEPLOY_APPLICATION, "Its deployer and break-glass start, stop, update and tag it."),
    ]
    tag = {"StringEquals": {"aws:ResourceTag/kit": cfg.kit.name}}
    return scopes.placed(KIT_APPLICATION, rows, (site.arn("emr-serverless", "/applications/*"),), tag)


def scp_scopes(cfg: KitConfig, scp: str) -> list[scopes.Placed]:
    """The scopes an SCP of the vault closes (as it renders them): `VAULT_SCP`, the vault's own in its account;
    `JOBS_SCP`, the scheduled job runs' in the recovery account."""
    if cfg.vault is None:
        return []
    if scp == JOBS_SCP:
        return [artifacts_scope(cfg), application_scope(cfg)]
    return [
        bucket_scope(cfg, kind="scp"),
        key_scope(cfg, kind="scp").collapsed(),  # the key policy, which nobody can change, splits it by class
        point_key_scope(cfg, kind="scp").collapsed(),
        alias_scope(cfg),
    ]


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


def _resources(cfg: KitConfig, rule: VaultRule) -> list[str]:
    arn = bucket_arn(cfg)
    return [f"{arn}/*"] if rule.objects else [arn]


def rule_statement(cfg: KitConfig, rule: VaultRule, *, kind: str) -> iam_statements.Statement:
    """`rule` as a Deny in the bucket policy (`kind` "bucket-policy": Principal "*") or the vault SCP ("scp"): it
    binds everyone, under the rule's condition."""
    return iam_statements.statement(
        rule.sid,
        "Deny",
        rule.actions,
        _resources(cfg, rule),
        principal="*" if kind == "bucket-policy" else None,
        condition={op: dict(keys) for op, keys in (rule.when or {}).items()},
    )


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
    stmts += bucket_scope(cfg, kind="resource-policy").statements(resource_policy=True)
    stmts += [rule_statement(cfg, r, kind="bucket-policy") for r in rules(cfg)]
    return doc(*stmts)


VAULT_SCP, JOBS_SCP = "scp-protect-vault", "scp-protect-scheduled-jobs"


def scp_statements(cfg: KitConfig, scp: str = VAULT_SCP) -> list[iam_statements.Statement | None]:
    """An SCP of the vault: its scopes' allow-lists and, for the vault's, the Denies that bind everyone (root
    included, whom a bucket policy does not bind for the policy itself)."""
    out: list[iam_statements.Statement | None] = [
        st for sc in scp_scopes(cfg, scp) for st in sc.statements(resource_policy=False)
    ]
    if scp == VAULT_SCP and cfg.vault is not None:
        out += [rule_statement(cfg, r, kind="scp") for r in rules(cfg) if r.in_scp]
    return out


def guards_scp_statements(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """The guards SCP's vault statements (on the organization's targets): the backup role's guards."""
    return backup_role_guards(cfg) if cfg.vault is not None else []


def scps(cfg: KitConfig) -> list[tuple[str, str, list[str]]]:
    """(document, SCP name, targets) of the vault's SCPs, each attached to an account directly (its own target: the
    organization's targets keep their room): the vault's in the vault account, the scheduled jobs' (the artifacts
    and the kit's application) in the recovery account. Two documents, as their scopes live in two accounts and one
    SCP holds 5,120 characters."""
    if cfg.vault is None:
        return []
    return [
        (VAULT_SCP, f"{cfg.kit.name}-protect-backup-vault", [_vault(cfg).account_id]),
        (JOBS_SCP, f"{cfg.kit.name}-protect-scheduled-jobs", [cfg.recovery_replica.account_id]),
    ]


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
    bg = people(cfg)
    role = backup_role_arn(cfg)
    passers = [*bg, *([backup_scheduler_role_arn(cfg)] if _vault(cfg).tables else [])]
    return [
        iam_statements.deny_except("DenyBackupRoleEdit", BACKUP_ROLE_EDITS, [role], bg),
        iam_statements.deny_except("DenyPassBackupRole", ["iam:PassRole"], [role], passers),
    ]


# ---------------------------------------------------------------- the vault key ----


def key_policy(cfg: KitConfig) -> Document:
    """The vault key's policy, written once (created with the lockout check bypassed, and `PutKeyPolicy` is no
    class's): the account administers it through IAM for what the allow-list leaves, the backup role encrypts,
    a restore and break-glass decrypt, the first deploy aliases it and turns rotation on. No principal, root and
    break-glass included, disables it, schedules its deletion, re-writes its policy, moves or deletes its alias, or
    grants on it (a KMS key policy's Deny binds the whole account)."""
    v = _vault(cfg)
    return doc(
        iam_statements.kms_root_administration(v.account_id, v.partition),
        iam_statements.kms_allow_key_use(
            "AllowBackupRoleUseKey", [backup_role_arn(cfg)], ["Decrypt", "Encrypt", "GenerateDataKey"]
        ),
        iam_statements.kms_allow_key_use("AllowRecoveryRoleDecrypt", [cfg.recovery_role_arn], RECOVERY_KEY_ACTIONS),
        iam_statements.kms_allow_key_use("AllowBreakGlassDecrypt", people(cfg), BREAK_GLASS_KEY),
        *key_scope(cfg, kind="resource-policy").statements(resource_policy=True),
    )


def point_key_policy(cfg: KitConfig) -> Document:
    """The point key's policy (KMS HMAC), written once like the vault key's: the backup role MACs and verifies, a
    restore verifies; no grant (it would hand out `GenerateMac`); nobody, break-glass included, disables it, schedules
    its deletion, re-writes its policy or moves its alias (`point_key_scope`)."""
    v = _vault(cfg)
    return doc(
        iam_statements.kms_root_administration(v.account_id, v.partition),
        iam_statements.kms_allow_key_use("AllowBackupRoleMacPoints", [backup_role_arn(cfg)], POINT_KEY_BACKUP_ACTIONS),
        iam_statements.kms_allow_key_use(
            "AllowRecoveryRoleVerifyPoints", [cfg.recovery_role_arn], POINT_KEY_RECOVERY_ACTIONS
        ),
        *point_key_scope(cfg, kind="resource-policy").statements(resource_policy=True),
    )


POINT_KEY_BACKUP_ACTIONS = ("GenerateMac", "VerifyMac", "DescribeKey")
POINT_KEY_RECOVERY_ACTIONS = ("VerifyMac", "DescribeKey")


def point_key_resource(cfg: KitConfig) -> tuple[str, dict[str, dict[str, object]]]:
    """(resource, condition) naming the point key in an identity policy: by its alias."""
    v = _vault(cfg)
    return (
        f"arn:{v.partition}:kms:{v.region}:{v.account_id}:key/*",
        {"ForAnyValue:StringEquals": {"kms:ResourceAliases": vault_point_key_alias(cfg)}},
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
    mac, mac_cond = point_key_resource(cfg)
    return [
        *_recovery_read(cfg, ("ReadVaultBackups", "ListVaultBackups"), None),
        iam_statements.allow_kms("DecryptVaultBackups", RECOVERY_KEY_ACTIONS, [res], cond),
        iam_statements.allow_kms("VerifyBackupPoints", POINT_KEY_RECOVERY_ACTIONS, [mac], mac_cond),
    ]


# ---------------------------------------------------------------- the backup role ----


def backup_role_permissions(cfg: KitConfig) -> Document:
    """Read the replicas it backs up (the recovery replica, in its own account, and the vault's account buckets
    beside it) and write new objects into the vault: nothing else. Every replica write stays denied to it, as to the
    recovery role."""
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
        allow_read_kit_application(recovery_site(cfg), cfg.kit.name),  # the run's check of its application
    ]
    if rep.encryption.type == "kms":
        res, cond = kms_resource(cfg, rep.encryption, account_id=rep.account_id, region=rep.region, bucket=rep.bucket)
        stmts.append(iam_statements.allow_kms("DecryptReplicaTableData", ["Decrypt"], [res], cond))
    stmts += vault_accounts.account_bucket_reads(cfg)  # fixed size, as the recovery role's
    res, cond = key_resource(cfg)
    stmts.append(iam_statements.allow_kms("UseVaultKey", ["Decrypt", "Encrypt", "GenerateDataKey"], [res], cond))
    mac, mac_cond = point_key_resource(cfg)
    stmts.append(iam_statements.allow_kms("MacBackupPoints", POINT_KEY_BACKUP_ACTIONS, [mac], mac_cond))
    return doc(*stmts)


def backup_scheduler_role_trust(cfg: KitConfig) -> Document:
    site = recovery_site(cfg)
    return doc(
        allow_scheduler_assume_role(
            "AllowSchedulerForTheBackupSchedule", site, name := schedule_name(cfg, BACKUP_SCHEDULE), name
        )
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
    org = cfg.protection.organization
    if org is not None:
        out += [
            PolicyDoc(
                name,
                "scp",
                org.management_account_id,
                f"SCP {scp} on {', '.join(targets)}",
                doc(*scp_statements(cfg, name)),
            )
            for name, scp, targets in scps(cfg)
        ]
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
    out.append(
        PolicyDoc(
            "kms-key-policy--vault-points",
            "kms-key-policy",
            v.account_id,
            f"KMS HMAC key {vault_point_key_alias(cfg)}",
            point_key_policy(cfg),
        )
    )
    return out
