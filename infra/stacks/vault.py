"""The backup vault in its own account and Region (`[vault]`): the vault key and the vault bucket. The backup role
that writes it is in the recovery stack, beside the Spark runtime that assumes it."""

from __future__ import annotations

from cdktf import TerraformStack
from constructs import Construct

from s3tables_kit.infra.constructs.providers import aws_provider
from s3tables_kit.infra.constructs.vault import VaultBucket, VaultKey, VaultPointKey
from s3tables_kit.infra.stacks.exported import export_output
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.backup import VAULT_STACK_ID
from s3tables_kit.topology.config import KitConfig, Vault
from s3tables_kit.topology.outputs import OUTPUT_VAULT, vault_value


class VaultStack(TerraformStack):
    """The vault of `cfg` (`cfg.vault`): key and bucket, and the `kit_vault` output the backup job reads.

    - `scope`: the App.
    - `cfg`: the whole configuration (`[vault]`, break-glass, the backup role's name).
    - `docs`: the topology's document set: the vault bucket policy and key policy.
    - `vault`: `cfg.vault`.

    The stack id is `vault`. Attributes: `key` (`VaultKey`), `bucket` (`VaultBucket`), `point_key`
    (`VaultPointKey`).
    """

    def __init__(self, scope: Construct, cfg: KitConfig, docs: DocumentSet, vault: Vault) -> None:
        super().__init__(scope, VAULT_STACK_ID)
        aws_provider(
            self,
            kit=cfg.kit.name,
            account_id=vault.account_id,
            region=vault.region,
            deploy_role_arn=vault.deploy_role_arn,
            tags=cfg.resource_tags,
        )
        self.key = VaultKey(self, "key", cfg=cfg, vault=vault, docs=docs)
        self.bucket = VaultBucket(self, "vault", cfg=cfg, vault=vault, docs=docs, kms_key_arn=self.key.arn)
        self.point_key = VaultPointKey(self, "point-key", cfg=cfg, docs=docs)
        export_output(
            self,
            OUTPUT_VAULT,
            vault_value(
                cfg, bucket_arn=self.bucket.bucket.arn, kms_key_arn=self.key.arn, point_key_arn=self.point_key.arn
            ),
        )
