"""Replica protection in the replica account: the destination table bucket policy (cross-account grant for the
source's replication role + protective denies) and the IAM guardrail managed policy with its attachments.

Table policies for individual replica tables need the tables' UUIDs, which exist only after the service creates the
replicas: `make harden` applies them (s3tables_kit.policies.documents.replica_table_policy)."""

from __future__ import annotations

from collections.abc import Sequence

from cdktf_cdktf_provider_aws.iam_policy import IamPolicy
from cdktf_cdktf_provider_aws.iam_role_policy_attachment import IamRolePolicyAttachment
from cdktf_cdktf_provider_aws.s3_tables_table_bucket_policy import S3TablesTableBucketPolicy
from constructs import Construct

from s3tables_kit.infra.policy_json import policy_json
from s3tables_kit.policies.documents import Document
from s3tables_kit.policies.parts import part_name

__all__ = ["ReplicaBucketPolicy", "ReplicaGuardrail", "guardrail_parts", "pipeline_guardrail"]


class ReplicaBucketPolicy(Construct):
    """A table bucket policy from a reviewed document: a replica's protective denies, or a source's replication guard.

    - `bucket_arn`: the table bucket (`TableBucket.arn`).
    - `policy`: the document (`docs.document("replica-bucket-policy", bucket)` or `"source-bucket-policy"`).

    Attribute `resource`: the bucket policy resource.
    """

    def __init__(self, scope: Construct, id: str, *, bucket_arn: str, policy: Document) -> None:
        super().__init__(scope, id)
        self.resource = S3TablesTableBucketPolicy(
            self, "policy", table_bucket_arn=bucket_arn, resource_policy=policy_json(policy)
        )


GUARDRAIL_DESCRIPTION = "Denies deleting, rewriting or loosening S3 Tables replicas except to break-glass principals"
PIPELINE_GUARDRAIL_DESCRIPTION = (
    "Denies changing the S3 Tables replication roles, the replication monitor, its alarms and the source keys "
    "except to the deploy role"
)


class ReplicaGuardrail(Construct):
    """The replica account's IAM guardrail policy, attached to its roles; one per account (IAM is global).

    - `name`: the managed policy's name (`cfg.guardrail_policy_name`).
    - `policy`: the document (`docs.document("replica-guardrail", account_id)`).
    - `attach_to_roles`: role names it is attached to (`s3tables_kit.policies.documents.guardrail_attachments`).
    - `description`: the managed policy's description (a companion guardrail says what it guards).

    Attribute `policy`: the IAM policy.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        policy: Document,
        attach_to_roles: Sequence[str],
        description: str = GUARDRAIL_DESCRIPTION,
    ) -> None:
        super().__init__(scope, id)
        self.policy = IamPolicy(
            self,
            "policy",
            name=name,
            description=description,
            policy=policy_json(policy),
        )
        for role in attach_to_roles:
            IamRolePolicyAttachment(self, f"attach-{role.lower()}", role=role, policy_arn=self.policy.arn)


def guardrail_parts(
    scope: Construct,
    id: str,
    *,
    name: str,
    parts: Sequence[Document],
    attach_to_roles: Sequence[str],
    description: str = GUARDRAIL_DESCRIPTION,
) -> list[ReplicaGuardrail]:
    """Every part of a managed policy split under its quota (`DocumentSet.parts`), each attached to the same roles:
    part 1 under construct id `id` and the policy name `name` (as before any split: construct ids are the Terraform
    state contract), part k under `<id>-part<k>` and `<name>-part<k>`."""
    return [
        ReplicaGuardrail(
            scope,
            part_name(id, k),
            name=part_name(name, k),
            policy=policy,
            attach_to_roles=attach_to_roles,
            description=description,
        )
        for k, policy in enumerate(parts, 1)
    ]


def pipeline_guardrail(scope: Construct, name: str, parts: Sequence[Document], attach_to_roles: Sequence[str]) -> None:
    """The account's pipeline guardrail (the kit's allow-lists, the pipeline's guards) beside its guardrail, in
    parts: one stack of the account deploys it (IAM is global), construct id `pipeline-guardrail`."""
    guardrail_parts(
        scope,
        "pipeline-guardrail",
        name=name,
        parts=parts,
        attach_to_roles=attach_to_roles,
        description=PIPELINE_GUARDRAIL_DESCRIPTION,
    )
