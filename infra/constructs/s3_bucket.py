"""The settings the kit's S3 buckets (the recovery scripts bucket, the backup vault) share: no public access, ACLs
off, versioning on, default encryption, incomplete uploads aborted. Created under the caller's scope with the same
construct ids in every bucket (they are Terraform addresses)."""

from __future__ import annotations

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.s3_bucket_lifecycle_configuration import (
    S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload,
)
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
from constructs import Construct

ABORT_INCOMPLETE_UPLOAD_DAYS = 7


def private_versioned(scope: Construct, bucket_id: str) -> tuple[list[ITerraformDependable], S3BucketVersioningA]:
    """`public-access-block`, `ownership` (bucket owner enforced: ACLs off) and `versioning` of the bucket: all three
    (for a bucket policy to depend on), and the versioning (for what needs it first: a lifecycle rule, Object Lock)."""
    access = S3BucketPublicAccessBlock(
        scope,
        "public-access-block",
        bucket=bucket_id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
    )
    ownership = S3BucketOwnershipControls(
        scope,
        "ownership",
        bucket=bucket_id,
        rule=S3BucketOwnershipControlsRule(object_ownership="BucketOwnerEnforced"),
    )
    versioning = S3BucketVersioningA(
        scope,
        "versioning",
        bucket=bucket_id,
        versioning_configuration=S3BucketVersioningVersioningConfiguration(status="Enabled"),
    )
    return [access, ownership, versioning], versioning


def default_encryption(
    scope: Construct, bucket_id: str, *, kms_key_arn: str | None = None
) -> S3BucketServerSideEncryptionConfigurationA:
    """`encryption`: SSE-KMS with `kms_key_arn` and an S3 Bucket Key (fewer KMS requests), else SSE-S3 (AES256)."""
    by_default = S3BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultA(
        sse_algorithm="aws:kms" if kms_key_arn else "AES256", kms_master_key_id=kms_key_arn
    )
    return S3BucketServerSideEncryptionConfigurationA(
        scope,
        "encryption",
        bucket=bucket_id,
        rule=[
            S3BucketServerSideEncryptionConfigurationRuleA(
                apply_server_side_encryption_by_default=by_default, bucket_key_enabled=True if kms_key_arn else None
            )
        ],
    )


def abort_incomplete_uploads() -> list[S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload]:
    """A lifecycle rule's abort of the multipart uploads still incomplete after `ABORT_INCOMPLETE_UPLOAD_DAYS`."""
    return [
        S3BucketLifecycleConfigurationRuleAbortIncompleteMultipartUpload(
            days_after_initiation=ABORT_INCOMPLETE_UPLOAD_DAYS
        )
    ]
