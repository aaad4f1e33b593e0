"""The role S3 Tables replication assumes: trusted by replication.s3tables.amazonaws.com only (confused-deputy
conditions), with exactly the permissions of the S3 user guide, plus KMS where used."""

from __future__ import annotations

from constructs import Construct

from infra.constructs.iam import role_with_policy
from policies.docset import DocumentSet
from topology.config import KitConfig


class ReplicationRole(Construct):
    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet) -> None:
        super().__init__(scope, id)
        self.role, self.policy = role_with_policy(
            self,
            "role",
            name=cfg.replication_role_name,
            description="Assumed by S3 Tables replication to copy source tables to the replica buckets",
            trust=docs.document("replication-role-trust"),
            policy=docs.document("replication-role-permissions"),
            policy_id="permissions",
            policy_name="s3tables-replication",
        )
