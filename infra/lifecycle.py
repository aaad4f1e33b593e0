"""What an accidental edit must never destroy: Terraform `prevent_destroy` on every resource that holds data or
protection, set in one place for the whole app.

`prevent_destroy` makes `terraform plan` fail on any plan that would destroy (or replace) such a resource. Only the
explicit destroy flag (`KIT_ALLOW_DESTROY=1`, read by infra/env.py) synthesizes `prevent_destroy = false`; even then
the replica policies deny deletion to anyone but break-glass. `tests/test_lifecycle.py` asserts the exact set.
"""

from __future__ import annotations

from cdktf import TerraformResource
from constructs import IConstruct

# The context key that marks a resource the kit imports (an adopted bucket or namespace): it is never the kit's to
# destroy, so `allow_destroy` leaves its `prevent_destroy` set.
ADOPTED = "s3tables-kit:adopted"

# Terraform type -> why destroying or replacing it by an edit is never acceptable.
PROTECTED_TYPES: dict[str, str] = {
    "awscc_s3tables_table_bucket": "holds every table of the bucket",
    "aws_s3tables_namespace": "holds tables (source catalog, recovery target)",
    "aws_s3tables_table": "holds the data (a replacement is DeleteTable + CreateTable)",
    "aws_kms_key": "encrypts a bucket's data: a deleted key makes every file unreadable",
    "aws_s3tables_table_replication": "the replication that makes the replicas",
    "aws_s3tables_table_bucket_replication": "the replication that makes the replicas",
    "aws_s3tables_table_bucket_policy": "replica protection (deny deletion, retention and protection changes); "
    "a source's replication guard",
    "aws_iam_policy": "the replica guardrail and the pipeline guardrail (the identity layer of the allow-lists)",
    "aws_iam_role_policy_attachment": "attaches a guardrail",
    "aws_organizations_policy": "the replica-protection SCP",
    "aws_organizations_policy_attachment": "attaches the SCP",
    "aws_s3_bucket": "recovery scripts, logs and reports; the backup vault",
    "aws_s3_bucket_policy": "TLS-only access to the scripts bucket",
    "aws_s3_bucket_public_access_block": "keeps the scripts bucket private",
    "aws_s3_bucket_ownership_controls": "no ACLs on the scripts bucket",
    "aws_s3_bucket_versioning": "keeps overwritten scripts and reports recoverable",
    "aws_s3_bucket_server_side_encryption_configuration": "encrypts the scripts bucket",
    "aws_s3_bucket_object_lock_configuration": "the backup vault's compliance-mode default retention",
}


def protect_from_destroy(scope: IConstruct, *, allow_destroy: bool = False) -> list[TerraformResource]:
    """Set `lifecycle.prevent_destroy` (true unless `allow_destroy`) on every protected resource in `scope` (an App
    or one stack); returns them."""
    protected = []
    for construct in scope.node.find_all():
        if isinstance(construct, TerraformResource) and construct.terraform_resource_type in PROTECTED_TYPES:
            adopted = construct.node.try_get_context(ADOPTED) is True
            construct.add_override("lifecycle.prevent_destroy", adopted or not allow_destroy)
            protected.append(construct)
    return protected


def adopt(resource: TerraformResource, import_id: str) -> None:
    """Import `resource` from the existing object `import_id` (a Terraform `import` block in the stack, so
    `cdktf deploy` imports it in its plan) and keep it from ever being destroyed by the kit."""
    resource.import_from(import_id)
    resource.node.set_context(ADOPTED, True)
    resource.add_override("lifecycle.prevent_destroy", True)
