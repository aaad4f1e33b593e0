"""The role S3 Tables replication assumes: trusted by replication.s3tables.amazonaws.com only (confused-deputy
conditions), with exactly the permissions of the S3 user guide, plus KMS where used."""

from __future__ import annotations

from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from constructs import Construct

from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.config import KitConfig, Source

__all__ = ["ReplicationRole"]


def add_replication_role(
    scope: Construct, *, name: str, description: str, docs: DocumentSet
) -> tuple[IamRole, IamRolePolicy]:
    """The role (`role`) and its inline policy (`permissions`) in `scope`, from the topology's replication role
    documents: the source's, or in the failover topology the promoted bucket's (`docs` resolves them)."""
    return documented_role(
        scope,
        "role",
        docs=docs,
        documents="replication-role",
        name=name,
        description=description,
        policy_id="permissions",
        policy_name="s3tables-replication",
    )


class ReplicationRole(Construct):
    """The role S3 Tables replication assumes for the source `src`, named `cfg.replication_role_name_of(src)`, with
    its reviewed documents.

    - `docs`: the source's document set (`replication-role-trust`, `replication-role-permissions`).

    Attributes: `role` (the IAM role), `policy` (its inline policy: make the replication depend on it).
    """

    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, src: Source, docs: DocumentSet) -> None:
        super().__init__(scope, id)
        self.role, self.policy = add_replication_role(
            self,
            name=cfg.replication_role_name_of(src),
            description="Assumed by S3 Tables replication to copy source tables to the replica buckets",
            docs=docs,
        )
