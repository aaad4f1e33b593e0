"""The writable recovery target and what recovery runs under: a table bucket + namespace in the replica's Region, the
recovery job role (read replica, write recovery target, never write a replica), an EMR Serverless Spark application
on a release with S3 Tables support, and a private, versioned S3 bucket for job scripts, logs and reports."""

from __future__ import annotations

import json

from cdktf_cdktf_provider_aws.emrserverless_application import (
    EmrserverlessApplication,
    EmrserverlessApplicationAutoStopConfiguration,
    EmrserverlessApplicationMaximumCapacity,
)
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from cdktf_cdktf_provider_aws.s3_bucket_ownership_controls import (
    S3BucketOwnershipControls,
    S3BucketOwnershipControlsRule,
)
from cdktf_cdktf_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktf_cdktf_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA,
    S3BucketServerSideEncryptionConfigurationRuleA,
    S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA,
)
from cdktf_cdktf_provider_aws.s3_bucket_versioning import (
    S3BucketVersioningA,
    S3BucketVersioningVersioningConfiguration,
)
from cdktf_cdktf_provider_aws.s3_tables_namespace import S3TablesNamespace
from constructs import Construct

from infra.config import KitConfig
from policies import documents


class RecoveryRole(Construct):
    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig) -> None:
        super().__init__(scope, id)
        self.role = IamRole(
            self,
            "role",
            name=cfg.recovery_role_name,
            description="Runs recovery jobs: reads replicas, writes only the recovery table bucket",
            assume_role_policy=json.dumps(documents.recovery_role_trust(cfg), indent=2),
        )
        IamRolePolicy(
            self,
            "permissions",
            name="s3tables-recovery",
            role=self.role.name,
            policy=json.dumps(documents.recovery_role_permissions(cfg), indent=2),
        )


class RecoveryNamespace(Construct):
    def __init__(self, scope: Construct, id: str, *, bucket_arn: str, namespace: str) -> None:
        super().__init__(scope, id)
        self.namespace = S3TablesNamespace(self, "namespace", namespace=namespace, table_bucket_arn=bucket_arn)


class ScriptsBucket(Construct):
    def __init__(self, scope: Construct, id: str, *, name: str, allow_destroy: bool) -> None:
        super().__init__(scope, id)
        self.bucket = S3Bucket(self, "bucket", bucket=name, force_destroy=allow_destroy)
        S3BucketPublicAccessBlock(
            self,
            "public-access-block",
            bucket=self.bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
        )
        S3BucketOwnershipControls(
            self,
            "ownership",
            bucket=self.bucket.id,
            rule=S3BucketOwnershipControlsRule(object_ownership="BucketOwnerEnforced"),
        )
        S3BucketVersioningA(
            self,
            "versioning",
            bucket=self.bucket.id,
            versioning_configuration=S3BucketVersioningVersioningConfiguration(status="Enabled"),
        )
        S3BucketServerSideEncryptionConfigurationA(
            self,
            "encryption",
            bucket=self.bucket.id,
            rule=[
                S3BucketServerSideEncryptionConfigurationRuleA(
                    apply_server_side_encryption_by_default=S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA(
                        sse_algorithm="AES256"
                    )
                )
            ],
        )


class RecoverySparkApplication(Construct):
    def __init__(self, scope: Construct, id: str, *, name: str, release_label: str) -> None:
        super().__init__(scope, id)
        self.application = EmrserverlessApplication(
            self,
            "application",
            name=name,
            release_label=release_label,
            type="spark",
            auto_stop_configuration=EmrserverlessApplicationAutoStopConfiguration(
                enabled=True, idle_timeout_minutes=15
            ),
            maximum_capacity=EmrserverlessApplicationMaximumCapacity(cpu="64 vCPU", memory="256 GB"),
        )
