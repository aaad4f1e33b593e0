"""The recovery and backup roles' reads of a shared vault's account buckets (`s3tables_kit.topology.vault_accounts`):
the catalogue and tables of each, and the keys the kit creates for them, in the vault's account and Region
(docs/decisions/0035-fan-in-by-account-namespaces.md). An account bucket's own documents are a replica's, fed by
one account: nothing in them names the other feeding accounts.
"""

from __future__ import annotations

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import kms_alias
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.vault_accounts import recovery_reads


def account_bucket_reads(cfg: KitConfig) -> list[iam_statements.Statement | None]:
    """Grants beside `ReadReplicaCatalog` for the account buckets, of the recovery role and of the backup role, which
    read what the vault holds (none without them: the documents stay as they were): every table bucket of the
    vault's account and Region, and the kit's keys there by their alias prefix, so the document keeps its size
    whatever the number of feeding accounts. What is read is still decided per bucket: each account bucket's key
    policy names the two roles (`policies/keys.py`), and the tools read only a bucket the outputs name
    (`KitOutputs.recovery_replica_named`, `kit_recovery.vault_account_table_bucket_arns`)."""
    extra = recovery_reads(cfg)[1:]
    if not extra:
        return []
    site = extra[0]  # validation keeps every account bucket in the vault's account and Region
    buckets = f"arn:{site.partition}:s3tables:{site.region}:{site.account_id}:bucket/*"
    out: list[iam_statements.Statement | None] = [
        iam_statements.allow_actions("ReadVaultAccountBuckets", iam_actions.CATALOG_BUCKET_READ, [buckets]),
        iam_statements.allow_actions(
            "ReadVaultAccountBucketTables", iam_actions.CATALOG_TABLE_READ, [iam_statements.table_arns(buckets)]
        ),
    ]
    if any(r.encryption.creates_key for r in extra):
        out.append(
            iam_statements.allow_kms(
                "DecryptVaultAccountBucketKeys",
                ["Decrypt"],
                [f"arn:{site.partition}:kms:{site.region}:{site.account_id}:key/*"],
                {"ForAnyValue:StringLike": {"kms:ResourceAliases": kms_alias(cfg, "*")}},
            )
        )
    own = sorted({r.encryption.kms_key for r in extra if r.encryption.kms_key and not r.encryption.creates_key})
    if own:  # keys of the adopter's own: named one by one (the kit creates the keys of the buckets it creates)
        out.append(iam_statements.allow_kms("DecryptVaultAccountBucketOwnKeys", ["Decrypt"], own))
    return out
