"""The backup vault (docs/decisions/0034-backup-vault.md): its KMS key, its S3 bucket with every setting explicit
(versioning, Object Lock with a COMPLIANCE default retention, SSE-KMS, no public access, no ACLs, a lifecycle rule
for the storage class and for abandoned uploads, the bucket policy applied last). The backup role that writes it
lives beside the Spark runtime (`SparkJobRole` of the recovery stack, `infra/constructs/recovery.py`)."""

from __future__ import annotations

from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from cdktf_cdktf_provider_aws.s3_bucket_lifecycle_configuration import (
    S3BucketLifecycleConfiguration,
    S3BucketLifecycleConfigurationRule,
    S3BucketLifecycleConfigurationRuleFilter,
    S3BucketLifecycleConfigurationRuleTransition,
)
from cdktf_cdktf_provider_aws.s3_bucket_object_lock_configuration import (
    S3BucketObjectLockConfigurationA,
    S3BucketObjectLockConfigurationRuleA,
    S3BucketObjectLockConfigurationRuleDefaultRetentionA,
)
from cdktf_cdktf_provider_aws.s3_bucket_policy import S3BucketPolicy
from constructs import Construct

from s3tables_kit.infra.constructs.s3_bucket import abort_incomplete_uploads, default_encryption, private_versioned
from s3tables_kit.infra.policy_json import policy_json
from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.backup import vault_kms_alias, vault_point_key_alias
from s3tables_kit.topology.config import KitConfig, Vault


class VaultKey(Construct):
    """The vault's key (`kms_key = "create"`), or the configured key's ARN. A created key carries the replica key tag,
    so the guards SCP's tag-matched key guards cover it, and is created with the lockout check bypassed: its policy
    denies `kms:PutKeyPolicy` to all but break-glass, the deploy role included (as a replica key's)."""

    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, vault: Vault, docs: DocumentSet) -> None:
        super().__init__(scope, id)
        if not vault.creates_key:
            self.arn = vault.kms_key
            return
        key = KmsKey(
            self,
            "kms-key",
            description=f"Backup vault {vault.bucket_name(cfg.kit.name)}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=policy_json(docs.document("kms-key-policy", "vault")),
            bypass_policy_lockout_safety_check=True,
            tags={iam_actions.REPLICA_KEY_TAG: cfg.kit.name},
        )
        KmsAlias(self, "kms-alias", name=vault_kms_alias(cfg, vault), target_key_id=key.key_id)
        self.arn = key.arn


class VaultPointKey(Construct):
    """The vault's point key: a KMS HMAC key (`HMAC_256`, `GENERATE_VERIFY_MAC`) whose MAC authenticates every backup
    point (decision 0034, "Points that cannot be forged"), guarded like the vault key; KMS does not rotate HMAC keys."""

    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet) -> None:
        super().__init__(scope, id)
        key = KmsKey(
            self,
            "kms-key",
            description=f"Backup points of {cfg.kit.name}",
            customer_master_key_spec="HMAC_256",
            key_usage="GENERATE_VERIFY_MAC",
            deletion_window_in_days=30,
            policy=policy_json(docs.document("kms-key-policy", "vault-points")),
            bypass_policy_lockout_safety_check=True,
            tags={iam_actions.REPLICA_KEY_TAG: cfg.kit.name},
        )
        KmsAlias(self, "kms-alias", name=vault_point_key_alias(cfg), target_key_id=key.key_id)
        self.arn = key.arn


class VaultBucket(Construct):
    """Versioned, Object Lock (COMPLIANCE default retention), SSE-KMS with the vault key, private, ACLs off; the
    bucket policy is applied last, after every setting it then guards (a later change is break-glass only)."""

    def __init__(
        self, scope: Construct, id: str, *, cfg: KitConfig, vault: Vault, docs: DocumentSet, kms_key_arn: str
    ) -> None:
        super().__init__(scope, id)
        # Object Lock is enabled at creation (S3 enables versioning with it); nothing may ever empty a vault.
        self.bucket = S3Bucket(
            self, "bucket", bucket=vault.bucket_name(cfg.kit.name), object_lock_enabled=True, force_destroy=False
        )
        settings, versioning = private_versioned(self, self.bucket.id)
        settings.append(
            S3BucketObjectLockConfigurationA(
                self,
                "object-lock",
                bucket=self.bucket.id,
                rule=S3BucketObjectLockConfigurationRuleA(
                    default_retention=S3BucketObjectLockConfigurationRuleDefaultRetentionA(
                        mode="COMPLIANCE", days=vault.retention_days
                    )
                ),
                depends_on=[versioning],
            )
        )
        settings.append(default_encryption(self, self.bucket.id, kms_key_arn=kms_key_arn))
        rules = [
            S3BucketLifecycleConfigurationRule(
                id="abort-incomplete-uploads",
                status="Enabled",
                filter=[S3BucketLifecycleConfigurationRuleFilter()],
                abort_incomplete_multipart_upload=abort_incomplete_uploads(),
            )
        ]
        if vault.transition_days is not None:
            # A backstop: the backup job writes in the storage class already; an object written otherwise moves.
            rules.append(
                S3BucketLifecycleConfigurationRule(
                    id="storage-class",
                    status="Enabled",
                    filter=[S3BucketLifecycleConfigurationRuleFilter()],
                    transition=[
                        S3BucketLifecycleConfigurationRuleTransition(
                            days=vault.transition_days, storage_class=vault.storage_class
                        )
                    ],
                )
            )
        settings.append(
            S3BucketLifecycleConfiguration(
                self, "lifecycle", bucket=self.bucket.id, rule=rules, depends_on=[versioning]
            )
        )
        self.policy = S3BucketPolicy(
            self,
            "policy",
            bucket=self.bucket.id,
            policy=policy_json(docs.document("vault-bucket-policy")),
            depends_on=settings,
        )
