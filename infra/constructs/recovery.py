"""The writable recovery target and what recovery runs under: a table bucket + namespace in the replica's Region, the
recovery job role (read replica, write recovery target, never write a replica; trusted by the kit's own EMR
Serverless application only) and, with `[vault]`, the backup job role beside it, an EMR Serverless Spark application
on a release with S3 Tables support, and a private, versioned, TLS-only S3 bucket for job scripts, logs and
reports, whose logs and reports expire."""

from __future__ import annotations

import json
from typing import Literal

from cdktf_cdktf_provider_aws.emrserverless_application import (
    EmrserverlessApplication,
    EmrserverlessApplicationAutoStopConfiguration,
    EmrserverlessApplicationMaximumCapacity,
)
from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.s3_bucket import S3Bucket
from cdktf_cdktf_provider_aws.s3_bucket_lifecycle_configuration import (
    S3BucketLifecycleConfiguration,
    S3BucketLifecycleConfigurationRule,
    S3BucketLifecycleConfigurationRuleExpiration,
    S3BucketLifecycleConfigurationRuleFilter,
    S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration,
)
from cdktf_cdktf_provider_aws.s3_bucket_policy import S3BucketPolicy
from cdktf_cdktf_provider_aws.s3_tables_namespace import S3TablesNamespace
from constructs import Construct

from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.infra.constructs.s3_bucket import abort_incomplete_uploads, default_encryption, private_versioned
from s3tables_kit.infra.policy_json import policy_json
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.assurance import job_metric_dimensions
from s3tables_kit.topology.config import KitConfig

NONCURRENT_VERSION_DAYS = 30

SparkJob = Literal["recovery", "backup"]


class SparkJobRole(Construct):
    """The role of one kit job that runs in the kit's EMR Serverless application (`application_arn`, the only one whose
    job runs may assume it): `recovery` (reads replicas, writes only the recovery table bucket) or `backup` (with
    `[vault]`: reads the replica, writes only new objects into the vault). Its trust and permissions are the
    `<job>-role` documents of `docs`."""

    _DESCRIPTIONS = {
        "recovery": "Runs recovery jobs: reads replicas, writes only the recovery table bucket",
        "backup": "Runs backup jobs: reads the replica, writes only new objects into the backup vault",
    }

    def __init__(
        self, scope: Construct, id: str, *, job: SparkJob, name: str, docs: DocumentSet, application_arn: str
    ) -> None:
        super().__init__(scope, id)
        self.role: IamRole
        self.role, _ = documented_role(
            self,
            "role",
            docs=docs,
            documents=f"{job}-role",
            name=name,
            description=self._DESCRIPTIONS[job],
            policy_id="permissions",
            policy_name=f"s3tables-{job}",
            emr_application_arn=application_arn,
        )


class RecoveryNamespace(Construct):
    def __init__(self, scope: Construct, id: str, *, bucket_arn: str, namespace: str) -> None:
        super().__init__(scope, id)
        self.namespace = S3TablesNamespace(self, "namespace", namespace=namespace, table_bucket_arn=bucket_arn)


class ScriptsBucket(Construct):
    """Private, versioned, encrypted, TLS-only; logs and reports expire, old versions and incomplete uploads go."""

    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet, allow_destroy: bool) -> None:
        super().__init__(scope, id)
        name = cfg.recovery_scripts_bucket
        self.bucket = S3Bucket(self, "bucket", bucket=name, force_destroy=allow_destroy)
        _, self.versioning = private_versioned(self, self.bucket.id)
        default_encryption(self, self.bucket.id)
        S3BucketPolicy(
            self, "policy", bucket=self.bucket.id, policy=policy_json(docs.document("scripts-bucket-policy"))
        )
        rec = cfg.recovery

        def expire(rule_id: str, prefix: str, days: int) -> S3BucketLifecycleConfigurationRule:
            return S3BucketLifecycleConfigurationRule(
                id=rule_id,
                status="Enabled",
                filter=[S3BucketLifecycleConfigurationRuleFilter(prefix=prefix)],
                expiration=[S3BucketLifecycleConfigurationRuleExpiration(days=days)],
            )

        S3BucketLifecycleConfiguration(
            self,
            "lifecycle",
            bucket=self.bucket.id,
            rule=[
                expire("expire-logs", "logs/", rec.logs_retention_days),
                expire("expire-reports", "reports/", rec.reports_retention_days),
                S3BucketLifecycleConfigurationRule(
                    id="noncurrent-versions-and-incomplete-uploads",
                    status="Enabled",
                    filter=[S3BucketLifecycleConfigurationRuleFilter()],  # the whole bucket, scripts included
                    noncurrent_version_expiration=[
                        S3BucketLifecycleConfigurationRuleNoncurrentVersionExpiration(
                            noncurrent_days=NONCURRENT_VERSION_DAYS
                        )
                    ],
                    abort_incomplete_multipart_upload=abort_incomplete_uploads(),
                    expiration=[S3BucketLifecycleConfigurationRuleExpiration(expired_object_delete_marker=True)],
                ),
            ],
            depends_on=[self.versioning],
        )


class RecoverySparkApplication(Construct):
    def __init__(self, scope: Construct, id: str, *, name: str, release_label: str) -> None:
        super().__init__(scope, id)
        # what `audit` compares with the live application (`ApplicationOut`): the release's own image, no runtime
        # configuration, no network configuration
        self.deployed = {"release_label": release_label}
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
        self.job_metrics = job_metric_dimensions(self.application.id, name, release_label)

    def preflight_args(self) -> list[str]:
        """What a scheduled job run passes to check, before it works, that it runs in this application as deployed
        (`s3tables_kit.jobs.kernel.preflight`)."""
        record = json.dumps(self.deployed, sort_keys=True, separators=(",", ":"))
        return ["--application-id", self.application.id, "--deployed-application", record]
