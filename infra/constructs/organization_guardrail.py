"""Organizations SCPs (and the resource control policy) from reviewed documents, attached to the configured
roots/OUs/accounts."""

from __future__ import annotations

from collections.abc import Sequence

from cdktf_cdktf_provider_aws.organizations_policy import OrganizationsPolicy
from cdktf_cdktf_provider_aws.organizations_policy_attachment import OrganizationsPolicyAttachment
from constructs import Construct

from s3tables_kit.infra.policy_json import compact_policy_json
from s3tables_kit.policies.documents import Document

__all__ = ["ReplicaScp"]

REPLICAS_SCP_DESCRIPTION = (
    "Protects S3 Tables replicas: no deletion, retention or protection changes except break-glass"
)


class ReplicaScp(Construct):
    """A service control policy from a reviewed document, attached to organization roots, OUs or accounts.

    - `name`: the SCP's name (`cfg.scp_name`, `cfg.scp_guards_name`).
    - `policy`: the document (`docs.document("scp-protect-replicas")`, `"scp-protect-replica-guards"`).
    - `targets`: root, OU or account ids it is attached to.
    - `description`: the SCP's description (default: the replica-protection one).
    - `policy_type`: `SERVICE_CONTROL_POLICY` (default) or `RESOURCE_CONTROL_POLICY` (the organization must have
      the policy type enabled; both are limited to 5,120 characters).

    Attribute `policy`: the Organizations policy.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str,
        policy: Document,
        targets: Sequence[str],
        description: str = REPLICAS_SCP_DESCRIPTION,
        policy_type: str = "SERVICE_CONTROL_POLICY",
    ) -> None:
        super().__init__(scope, id)
        self.policy = OrganizationsPolicy(
            self,
            "policy",
            name=name,
            type=policy_type,
            description=description,
            # Compact: SCPs are limited to 5,120 characters (checked by the KIT nag rules at synth).
            content=compact_policy_json(policy),
        )
        for target in targets:
            OrganizationsPolicyAttachment(self, f"attach-{target}", policy_id=self.policy.id, target_id=target)
