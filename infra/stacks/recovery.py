"""Recovery in the replica's account and Region: writable table bucket + namespace, recovery role, EMR Serverless
Spark application and the scripts/logs bucket."""

from __future__ import annotations

from cdktf import TerraformStack
from constructs import Construct

from s3tables_kit.infra.constructs.backup_schedule import scheduled_backup
from s3tables_kit.infra.constructs.providers import site_providers
from s3tables_kit.infra.constructs.recovery import (
    RecoveryNamespace,
    RecoverySparkApplication,
    ScriptsBucket,
    SparkJobRole,
)
from s3tables_kit.infra.constructs.rehearsal import recovery_alarm_topic, recovery_assurance
from s3tables_kit.infra.constructs.schedule import deployed_entry
from s3tables_kit.infra.constructs.table_bucket import kit_table_bucket
from s3tables_kit.infra.stacks.exported import export_output
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.backup import backup_role_name
from s3tables_kit.topology.config import KitConfig, Replica
from s3tables_kit.topology.outputs import OUTPUT_RECOVERY, recovery_value

STACK_ID = "recovery"


class RecoveryStack(TerraformStack):
    """Where recovery runs, in `recovery.replica`'s account and Region: bucket, namespace, role, EMR, scripts.

    - `scope`: the App.
    - `cfg`: the whole configuration (`[recovery]` and the replica it names).
    - `docs`: the topology's document set (`build_documents(cfg)`): recovery role, scripts bucket and key policies.
    - `replica_bucket_arn`: the replica recovery reads (usually the `ReplicaStack.bucket.arn` of `recovery.replica`).
    - `allow_destroy`: synthesize `prevent_destroy = false` (default False).
    - `reads`: the failover topology's replica of the new source (default None: `recovery.replica`).

    The stack id is `recovery`; with `[assurance.rehearsal]` it also schedules the recovery rehearsal, with `[vault]`
    it holds the backup role.
    """

    def __init__(
        self,
        scope: Construct,
        cfg: KitConfig,
        docs: DocumentSet,
        *,
        replica_bucket_arn: str,
        allow_destroy: bool = False,
        reads: Replica | None = None,
    ) -> None:
        """`reads`: the failover topology's replica of the new source (`[failover]`; the recovery role's permissions to
        read it come from `docs`); the stack itself stays in `recovery.replica`'s account and Region."""
        super().__init__(scope, STACK_ID)
        rep = cfg.recovery_replica
        rec = cfg.recovery
        awscc = site_providers(self, cfg, rep)
        bucket = kit_table_bucket(
            self,
            cfg,
            docs,
            role="recovery",
            name=rec.bucket,
            encryption=rec.encryption,
            storage_class="STANDARD",
            unreferenced_file_removal=rep.unreferenced_file_removal,
            awscc=awscc,
            allow_destroy=allow_destroy,
        )
        RecoveryNamespace(self, "namespace", bucket_arn=bucket.arn, namespace=rec.namespace)
        app = RecoverySparkApplication(self, "spark", name=f"{cfg.kit.name}-recovery", release_label=rec.emr_release)
        arn = app.application.arn
        role = SparkJobRole(
            self, "recovery-role", job="recovery", name=cfg.recovery_role_name, docs=docs, application_arn=arn
        )
        ScriptsBucket(self, "scripts", cfg=cfg, docs=docs, allow_destroy=allow_destroy)
        backup = None
        topic = recovery_alarm_topic(self, cfg, docs)  # the scheduled jobs' alarms notify it
        topic_arn = topic.arn if topic is not None else None
        if cfg.vault is not None:  # the backup job runs in the same Spark application as recovery
            SparkJobRole(self, "backup-role", job="backup", name=backup_role_name(cfg), docs=docs, application_arn=arn)
            backup = scheduled_backup(self, cfg, docs, app=app, topic_arn=topic_arn)  # `[vault] tables`
        rehearsal = recovery_assurance(  # continuous assurance: scheduled recovery rehearsal and its alarms
            self,
            cfg,
            docs,
            recovery_bucket_arn=bucket.arn,
            app=app,
            recovery_role_name=role.role.name,
            topic_arn=topic_arn,
            replica=reads,
        )
        export_output(
            self,
            OUTPUT_RECOVERY,
            recovery_value(
                cfg,
                table_bucket_arn=bucket.arn,
                role_arn=role.role.arn,
                emr_application_id=app.application.id,
                replica_table_bucket_arn=replica_bucket_arn,
                deployed=deployed_entry([], [backup, rehearsal], app.deployed),  # for `audit`
            ),
        )
