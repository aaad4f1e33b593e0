"""One stack per destination (its own account and Region): replica table bucket, its protective bucket policy and,
for the first replica of an account, the account's IAM guardrail. In an estate (`[[sources]]`) the bucket carries the
protection tag (`kit-protection = <kit>`), and a fan-in replica's output names every source feeding it."""

from __future__ import annotations

from cdktf import TerraformStack
from constructs import Construct

from s3tables_kit.infra.constructs.freshness import replica_freshness
from s3tables_kit.infra.constructs.replica_protection import (
    ReplicaBucketPolicy,
    guardrail_parts,
    pipeline_guardrail,
)
from s3tables_kit.infra.constructs.schedule import deployed_entry
from s3tables_kit.infra.constructs.table_bucket import site_table_bucket
from s3tables_kit.infra.stacks.exported import export_output
from s3tables_kit.policies import documents
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.config import KitConfig, Replica
from s3tables_kit.topology.outputs import OUTPUT_REPLICA, replica_value


class ReplicaStack(TerraformStack):
    """One replica table bucket in its own account and Region, its protective bucket policy and the account's guardrail.

    - `scope`: the App.
    - `cfg`: the whole configuration (the replica's section, the protection settings, the sources feeding it).
    - `docs`: the topology's document set (`build_documents(cfg)`): bucket policy, guardrail and key policy.
    - `replica`: the replica this stack deploys, one of `cfg.replicas`; the stack id is `replica-<bucket>`.
    - `owns_guardrail`: create the account's IAM guardrail here (default True; False for a further replica in an
      account whose guardrail another replica stack owns: IAM is global).
    - `allow_destroy`: synthesize `prevent_destroy = false` (default False: Terraform refuses any plan that destroys
      or replaces the bucket, its key or its policies).

    Attributes: `bucket` (the `TableBucket`), `bucket_policy` (the `ReplicaBucketPolicy`).
    """

    def __init__(
        self,
        scope: Construct,
        cfg: KitConfig,
        docs: DocumentSet,
        replica: Replica,
        *,
        owns_guardrail: bool = True,
        allow_destroy: bool = False,
    ) -> None:
        """The documents come from `docs` by their deployed names: in the failover topology (`[failover]`) the set
        resolves them to the configured promotion's (promoted bucket, destinations, guardrails, key policies)."""
        super().__init__(scope, replica.stack_id)
        self.bucket = site_table_bucket(self, cfg, docs, role="replica", site=replica, allow_destroy=allow_destroy)
        self.bucket_policy = ReplicaBucketPolicy(
            self,
            "bucket-policy",
            bucket_arn=self.bucket.arn,
            policy=docs.document("replica-bucket-policy", replica.bucket),
        )
        if owns_guardrail:  # every part of it, under the managed policy quota (construct id `guardrail` for part 1)
            guardrail_parts(
                self,
                "guardrail",
                name=cfg.guardrail_policy_name,
                parts=docs.parts("replica-guardrail", replica.account_id),
                attach_to_roles=documents.guardrail_attachments(cfg, replica.account_id),
            )
        if owns_guardrail and docs.has("pipeline-guardrail", replica.account_id):
            # the pipeline's and the kit's allow-lists' identity layer, beside the guardrail and attached to the same
            # roles (IAM is global: the stack owning the account's guardrail owns it)
            pipeline_guardrail(
                self,
                cfg.pipeline_guardrail_policy_name,
                docs.parts("pipeline-guardrail", replica.account_id),
                documents.guardrail_attachments(cfg, replica.account_id),
            )
        check = replica_freshness(self, cfg, docs, replica)  # the account's own check of its replicas' freshness
        # what runs the kit's jobs here, for `audit` (jobs/ops/audit_deployed.py)
        deployed = deployed_entry([check.function], [check.schedule]) if check is not None else None
        value = replica_value(
            cfg, replica, table_bucket_arn=self.bucket.arn, encryption=self.bucket.encryption_output, deployed=deployed
        )
        export_output(self, OUTPUT_REPLICA, value)
