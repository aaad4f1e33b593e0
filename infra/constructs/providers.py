"""Providers: one AWS provider (and, for table buckets, one AWSCC provider) per stack, i.e. per account and Region.

`allowed_account_ids` makes Terraform refuse to touch any account other than the one the configuration names, and
`assume_role` reaches the target account when a deploy role is configured.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdktf import TerraformProvider, TerraformProviderGeneratorMetadata
from cdktf_cdktf_provider_aws.provider import AwsProvider, AwsProviderAssumeRole, AwsProviderDefaultTags
from constructs import Construct

from s3tables_kit.topology.config import KitConfig, Replica, Source

# awscc models `storage_class_configuration` on table buckets (the aws provider 6.25 does not). No prebuilt cdktf
# bindings for awscc exist on PyPI, so the provider and its resource are declared through cdktf's generic constructs.
# `storage_class_configuration` first appears in awscc v1.67.0 (2025-12-17): an older awscc rejects the stacks.
AWSCC_SOURCE = "hashicorp/awscc"
AWSCC_VERSION = ">= 1.67.0, < 2.0.0"


def _session_name(kit: str) -> str:
    return f"{kit}-cdktf"


def _assume_role(kit: str, deploy_role_arn: str | None) -> list[AwsProviderAssumeRole] | None:
    """The deploy role the aws providers assume (none: the caller's own credentials)."""
    if not deploy_role_arn:
        return None
    return [AwsProviderAssumeRole(role_arn=deploy_role_arn, session_name=_session_name(kit))]


def aws_provider(
    scope: Construct,
    *,
    kit: str,
    account_id: str,
    region: str,
    deploy_role_arn: str | None,
    tags: Mapping[str, str] | None = None,
) -> AwsProvider:
    """`tags`: default tags of every aws resource (the configuration's `tags` plus the kit's own)."""
    return AwsProvider(
        scope,
        "aws",
        region=region,
        allowed_account_ids=[account_id],
        assume_role=_assume_role(kit, deploy_role_arn),
        default_tags=[
            AwsProviderDefaultTags(tags=dict(tags) if tags else {"kit": kit, "managed-by": "s3tables-replica-kit"})
        ],
    )


UNTAGGED_ALIAS = "untagged"


def untagged_aws_provider(
    scope: Construct, *, account_id: str, region: str, deploy_role_arn: str | None, kit: str
) -> AwsProvider:
    """A second aws provider of the stack (alias `untagged`) WITHOUT default tags, for resources that must carry no
    AWS resource tags: replicated source tables (the replication limits say "Tables with tags or branches are not
    supported"; whether AWS resource tags count is undocumented, docs/provisioning.md#tags-and-replicated-tables).
    Same account guard and role."""
    return AwsProvider(
        scope,
        "aws-untagged",
        alias=UNTAGGED_ALIAS,
        region=region,
        allowed_account_ids=[account_id],
        assume_role=_assume_role(kit, deploy_role_arn),
    )


def _awscc_provider(scope: Construct, *, kit: str, region: str, deploy_role_arn: str | None) -> TerraformProvider:
    provider = TerraformProvider(
        scope,
        "awscc",
        terraform_resource_type="awscc",
        terraform_generator_metadata=TerraformProviderGeneratorMetadata(
            provider_name="awscc", provider_version_constraint=AWSCC_VERSION
        ),
        terraform_provider_source=AWSCC_SOURCE,
    )
    provider.add_override("region", region)
    if deploy_role_arn:
        provider.add_override("assume_role", {"role_arn": deploy_role_arn, "session_name": _session_name(kit)})
    return provider


def site_providers(scope: Construct, cfg: KitConfig, site: Source | Replica) -> TerraformProvider:
    """The aws and awscc providers of a stack at one site of the configuration (the source, a replica, the recovery
    replica's account and Region): the site's account guard and deploy role, the configuration's tags. Returns the
    awscc provider. awscc has no default tags: table buckets carry `tags` themselves (infra/constructs/table_bucket.py).
    """
    kit, role = cfg.kit.name, site.deploy_role_arn
    aws_provider(
        scope, kit=kit, account_id=site.account_id, region=site.region, deploy_role_arn=role, tags=cfg.resource_tags
    )
    return _awscc_provider(scope, kit=kit, region=site.region, deploy_role_arn=role)
