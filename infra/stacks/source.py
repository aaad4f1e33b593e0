"""The source account and Region: source table bucket, namespaces and tables with source retention, the replication
role and the replication configuration pointing at the replica buckets (cross-stack references). An adopted source
bucket (`adopt = true`), its namespaces and its existing policy are imported, never created.

Built from the configuration and one of its sources: `[source]`'s, or an estate's (`[[sources]]`), whose stack is
`source-<id>` and whose names (replication role, monitor) carry the prefix `<kit>-<id>`."""

from __future__ import annotations

from collections.abc import Sequence

from cdktf import TerraformStack
from constructs import Construct

from s3tables_kit.infra.constructs.catalog import SourceCatalog
from s3tables_kit.infra.constructs.dashboard import monitor_dashboard, rehearsal_site
from s3tables_kit.infra.constructs.monitor import source_assurance
from s3tables_kit.infra.constructs.providers import untagged_aws_provider
from s3tables_kit.infra.constructs.replica_hardener import source_hardener
from s3tables_kit.infra.constructs.replica_protection import ReplicaBucketPolicy, pipeline_guardrail
from s3tables_kit.infra.constructs.replication import ReplicationConfiguration
from s3tables_kit.infra.constructs.replication_role import ReplicationRole
from s3tables_kit.infra.constructs.schedule import deployed_entry
from s3tables_kit.infra.constructs.table_bucket import site_table_bucket
from s3tables_kit.infra.lifecycle import adopt
from s3tables_kit.infra.stacks.exported import export_output
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.config import KitConfig, Source
from s3tables_kit.topology.outputs import OUTPUT_SOURCE, source_value


class SourceStack(TerraformStack):
    """The source table bucket, its namespaces and tables, the replication role and configuration, and the monitor.

    - `scope`: the App.
    - `cfg`: the configuration; `src`: the source this stack deploys, one of `cfg.sources`.
    - `docs`: the document set as that source's stack reads it (`build_documents(cfg)`, or for an estate's source
      `DocumentSet.for_source`).
    - `destination_bucket_arns`: the replica buckets it replicates to, 1 to 5 (usually `ReplicaStack.bucket.arn`: a
      cross-stack reference, so the replica stacks deploy first).
    - `allow_destroy`: synthesize `prevent_destroy = false` (default False).
    - `owns_pipeline_guardrail`: deploy the account's pipeline guardrail (default True; False for a further source
      of an account whose pipeline guardrail another source stack owns).

    The stack id is the source's (`source`, or `source-<id>` in an estate).
    """

    def __init__(
        self,
        scope: Construct,
        cfg: KitConfig,
        src: Source,
        docs: DocumentSet,
        *,
        destination_bucket_arns: Sequence[str],
        allow_destroy: bool = False,
        owns_pipeline_guardrail: bool = True,
    ) -> None:
        """`src`: the source of `cfg` this stack deploys; `docs`: the set as that source's stack reads it
        (`DocumentSet.for_source`); `owns_pipeline_guardrail`: the first source stack of its account deploys the
        account's pipeline guardrail, where it has one."""
        super().__init__(scope, src.stack_id)
        bucket = site_table_bucket(self, cfg, docs, role="source", site=src, allow_destroy=allow_destroy)
        # Replicated source tables carry no AWS resource tags unless `[tags] on_replicated_source_tables = true`
        # (docs/provisioning.md#tags-and-replicated-tables): the provider's default_tags would otherwise put them on
        # every table.
        untagged = set() if cfg.tags_on_source_tables else {f"{n}.{t}" for n, t in cfg.replicated_tables_of(src)}
        catalog = SourceCatalog(
            self,
            "catalog",
            source=src,
            bucket_arn=bucket.arn,
            kms_key_arn=bucket.kms_key_arn,
            untagged=untagged,
            untagged_provider=untagged_aws_provider(
                self,
                kit=cfg.kit.name,
                account_id=src.account_id,
                region=src.region,
                deploy_role_arn=src.deploy_role_arn,
            )
            if untagged
            else None,
        )
        # The source bucket's layer against changing its replication (docs/decisions/0028): deploy role and
        # break-glass only, like the guards SCP.
        # An adopted bucket's policy is the adopter's statements and the kit's (`s3tables_kit.policies.adopted`); the
        # existing policy is imported, so the plan shows the change to it rather than a create over it.
        bucket_policy = ReplicaBucketPolicy(
            self, "source-bucket-policy", bucket_arn=bucket.arn, policy=docs.document("source-bucket-policy")
        )
        if src.adopt and src.bucket_policy is not None:
            adopt(bucket_policy.resource, src.bucket_arn)
        role = ReplicationRole(self, "replication-role", cfg=cfg, src=src, docs=docs)
        replication = cfg.replication_of(src)
        replicated = {k: v for k, v in catalog.tables.items() if k in set(replication.tables)}
        ReplicationConfiguration(
            self,
            "replication",
            mode=replication.mode,
            role_arn=role.role.arn,
            source_bucket_arn=bucket.arn,
            tables=replicated,
            destination_bucket_arns=destination_bucket_arns,
            depends_on=[role.policy],
            import_arn=src.bucket_arn if src.adopt and src.existing_destinations else None,
        )
        if owns_pipeline_guardrail and docs.has("pipeline-guardrail", src.account_id):
            # the pipeline's second layer in a source account without a replica (IAM is global: one stack owns it)
            pipeline_guardrail(
                self,
                cfg.pipeline_guardrail_policy_name,
                docs.parts("pipeline-guardrail", src.account_id),
                cfg.protection.source_guardrail_attach_roles,
            )
        monitor = source_assurance(self, cfg, src, docs)  # `[assurance]`: replication monitor, alarms, alarm topic
        topic = monitor.alarm_topic_arn if monitor else None
        hardener = source_hardener(self, cfg, src, docs, topic)  # `[assurance.harden]`: new replicas hardened
        rehearsal = rehearsal_site(cfg, cfg.destinations_of(src))  # shown where the monitor watches its replica
        monitor_dashboard(self, cfg, src, monitor, rehearsal)  # what the monitor and the rehearsal publish
        runs = [x for x in (monitor, hardener) if x is not None]
        deployed = deployed_entry([x.function for x in runs], [x.schedule for x in runs])
        export_output(
            self,
            OUTPUT_SOURCE,
            source_value(
                cfg,
                src,
                table_bucket_arn=bucket.arn,
                replication_role_arn=role.role.arn,
                destinations=destination_bucket_arns,
                encryption=bucket.encryption_output,
                deployed=deployed,  # what runs the kit's jobs here, for `audit` (jobs/ops/audit_deployed.py)
            ),
        )
