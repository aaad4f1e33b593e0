"""The role S3 Tables replication assumes: trusted by replication.s3tables.amazonaws.com only (confused-deputy
conditions), with exactly the permissions of the S3 user guide, plus KMS where used."""

from __future__ import annotations

import json

from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from constructs import Construct

from policies.docset import DocumentSet
from topology.config import KitConfig


class ReplicationRole(Construct):
    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet) -> None:
        super().__init__(scope, id)
        self.role = IamRole(
            self,
            "role",
            name=cfg.replication_role_name,
            description="Assumed by S3 Tables replication to copy source tables to the replica buckets",
            assume_role_policy=json.dumps(docs.document("replication-role-trust"), indent=2),
        )
        self.policy = IamRolePolicy(
            self,
            "permissions",
            name="s3tables-replication",
            role=self.role.name,
            policy=json.dumps(docs.document("replication-role-permissions"), indent=2),
        )
