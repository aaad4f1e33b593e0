"""An IAM role with its inline policy, both documents built by `policies/` and synthesised as indented JSON (what
the nag rules and reviewers read). The construct ids are the caller's: they are Terraform addresses."""

from __future__ import annotations

from cdktf_cdktf_provider_aws.iam_role import IamRole
from cdktf_cdktf_provider_aws.iam_role_policy import IamRolePolicy
from constructs import Construct

from s3tables_kit.infra.policy_json import policy_json
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.policies.model import Document


def _policy_json(document: Document) -> str:
    return policy_json(document)


def role_policy(scope: Construct, id: str, *, name: str, role: str, policy: Document) -> IamRolePolicy:
    """An inline policy `name` on the role named `role`."""
    return IamRolePolicy(scope, id, name=name, role=role, policy=_policy_json(policy))


def _role_with_policy(
    scope: Construct,
    id: str,
    *,
    name: str,
    description: str,
    trust: Document,
    policy: Document,
    policy_id: str,
    policy_name: str,
) -> tuple[IamRole, IamRolePolicy]:
    """The role `name` trusted as `trust` says, with one inline policy (construct `policy_id`, name `policy_name`)."""
    role = IamRole(scope, id, name=name, description=description, assume_role_policy=_policy_json(trust))
    return role, role_policy(scope, policy_id, name=policy_name, role=role.name, policy=policy)


def documented_role(
    scope: Construct,
    id: str,
    *,
    docs: DocumentSet,
    documents: str,
    name: str,
    description: str,
    policy_id: str,
    policy_name: str,
    site: str | None = None,
    **trust_bindings: str,
) -> tuple[IamRole, IamRolePolicy]:
    """`_role_with_policy` with the role's two rendered documents (`s3tables_kit.policies.model.role_documents`):
    `<documents>-trust` (its placeholders bound by `trust_bindings`) and `<documents>-permissions`, of `site` when the
    topology has one per site (`<documents>-trust--<site>`)."""
    return _role_with_policy(
        scope,
        id,
        name=name,
        description=description,
        trust=docs.document(f"{documents}-trust", site, **trust_bindings),
        policy=docs.document(f"{documents}-permissions", site),
        policy_id=policy_id,
        policy_name=policy_name,
    )
