"""The Organizations management account: the kit's organization policies and their attachments, one set for the
whole configuration (an estate's included): the SCPs `scp-protect-replicas`, `scp-protect-replica-guards` and
`scp-protect-pipeline`, and the resource control policy `rcp-protect-replication-roles`."""

from __future__ import annotations

from cdktf import TerraformStack
from constructs import Construct

from s3tables_kit.infra.constructs.organization_guardrail import REPLICAS_SCP_DESCRIPTION, ReplicaScp
from s3tables_kit.infra.constructs.providers import aws_provider
from s3tables_kit.infra.stacks.exported import export_output
from s3tables_kit.policies import vault
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.config import KitConfig, Organization
from s3tables_kit.topology.outputs import OUTPUT_ORGANIZATION, organization_value

STACK_ID = "organization"
GUARDS_SCP_DESCRIPTION = "Guards what S3 Tables replica protection rests on: replica keys, privileged roles, guardrail"
PIPELINE_SCP_DESCRIPTION = (
    "Guards the S3 Tables replication pipeline: replication roles, monitor and alarms, source keys"
)
VAULT_SCP_DESCRIPTIONS = {
    vault.VAULT_SCP: "Closes the S3 Tables kit's backup vault and its key: nobody destroys a backup before its date",
    vault.JOBS_SCP: "Closes what the S3 Tables kit's scheduled jobs run: their artifacts and the EMR application",
}
RCP_DESCRIPTION = "Only the S3 Tables replication service assumes the kit's replication roles"


class OrganizationStack(TerraformStack):
    """The replica-protection SCPs in the Organizations management account, attached to the configured targets.

    - `scope`: the App.
    - `cfg`: the whole configuration (the SCP names, the first source's partition).
    - `docs`: the topology's document set (`build_documents(cfg)`): `scp-protect-replicas` and its guards.
    - `org`: `cfg.protection.organization` (management account, deploy role, targets).

    The stack id is `organization`.
    """

    def __init__(
        self,
        scope: Construct,
        cfg: KitConfig,
        docs: DocumentSet,
        org: Organization,
    ) -> None:
        """The SCPs come from `docs` (in the failover topology the set resolves them to the promotion's: same
        resources, other content)."""
        super().__init__(scope, STACK_ID)
        # Organizations is a global service served from us-east-1 (aws) / the partition's home Region (the first
        # source's partition: an organization does not span partitions).
        home = {"aws": "us-east-1", "aws-cn": "cn-northwest-1", "aws-us-gov": "us-gov-west-1"}[cfg.sources[0].partition]
        aws_provider(
            self,
            kit=cfg.kit.name,
            account_id=org.management_account_id,
            region=home,
            deploy_role_arn=org.deploy_role_arn,
            tags=cfg.resource_tags,
        )
        scp, guards = (
            ReplicaScp(
                self, construct_id, name=name, policy=docs.document(document), targets=org.targets, description=about
            )
            for construct_id, name, document, about in (
                ("replica-scp", cfg.scp_name, "scp-protect-replicas", REPLICAS_SCP_DESCRIPTION),
                ("replica-guards-scp", cfg.scp_guards_name, "scp-protect-replica-guards", GUARDS_SCP_DESCRIPTION),
            )
        )
        # The pipeline SCP and the resource control policy (outputs unchanged: the contract names the first two).
        for construct_id, name, document, about, policy_type in (
            (
                "pipeline-scp",
                cfg.scp_pipeline_name,
                "scp-protect-pipeline",
                PIPELINE_SCP_DESCRIPTION,
                "SERVICE_CONTROL_POLICY",
            ),
            (
                "replication-roles-rcp",
                cfg.rcp_name,
                "rcp-protect-replication-roles",
                RCP_DESCRIPTION,
                "RESOURCE_CONTROL_POLICY",
            ),
        ):
            if docs.has(document):
                ReplicaScp(
                    self,
                    construct_id,
                    name=name,
                    policy=docs.document(document),
                    targets=org.targets,
                    description=about,
                    policy_type=policy_type,
                )
        # the vault's SCPs, each attached to its account directly (its own target)
        for document, name, targets in vault.scps(cfg):
            ReplicaScp(
                self,
                document.removeprefix("scp-protect-"),
                name=name,
                policy=docs.document(document),
                targets=targets,
                description=VAULT_SCP_DESCRIPTIONS[document],
            )
        export_output(
            self,
            OUTPUT_ORGANIZATION,
            organization_value(cfg, org.targets, policy_id=scp.policy.id, guards_policy_id=guards.policy.id),
        )
