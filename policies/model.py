"""The document model shared by every builder of `policies/` (documents.py, assurance.py): a policy document, a
named document as rendered and deployed (`PolicyDoc`), and the KMS helpers that name a bucket's key.

It sits below both builders so neither imports the other's module to build its documents (no import circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.topology.config import Encryption, KitConfig, partition_of_arn

Document = dict[str, Any]
VERSION = "2012-10-17"


def doc(*statements: iam_statements.Statement | None) -> Document:
    stmts = [s for s in statements if s is not None]
    sids = [s["Sid"] for s in stmts]
    dupes = {x for x in sids if sids.count(x) > 1}
    if dupes:
        raise ValueError(f"duplicate Sids in one document: {sorted(dupes)}")
    return {"Version": VERSION, "Statement": stmts}


# ---------------------------------------------------------------- KMS helpers ----


def kms_alias(cfg: KitConfig, bucket: str) -> str:
    return f"alias/{cfg.kit.name}-{bucket}"


def kms_resource(
    cfg: KitConfig, enc: Encryption, *, account_id: str, region: str, bucket: str
) -> tuple[str, dict[str, dict[str, Any]] | None]:
    """(resource, condition) that names a bucket's key in an IAM policy. A created key's ARN is unknown until apply,
    so it is matched by its alias (kms:ResourceAliases) within the account and Region."""
    if enc.kms_key and enc.kms_key != "create":
        return enc.kms_key, None
    return (
        f"arn:{partition_of_arn(region)}:kms:{region}:{account_id}:key/*",
        {"ForAnyValue:StringEquals": {"kms:ResourceAliases": kms_alias(cfg, bucket)}},
    )


# ---------------------------------------------------------------- named documents ----


@dataclass(frozen=True)
class PolicyDoc:
    name: str  # file stem under policies/rendered/<example>/
    kind: str  # trust | identity | bucket-policy | table-policy | scp | kms-key-policy
    account_id: str
    attached_to: str
    document: Document
    # A failover candidate's name in the topology that deploys it (`[failover] promoted_bucket`): the normal
    # document it replaces (`replica-bucket-policy--<promoted>`, ...) or one only that topology has
    # (`scp-protect-promoted`). None: nothing deploys it under another name (table policies: `make harden`).
    deploys_as: str | None = None


def role_documents(
    stem: str, account_id: str, role_name: str, trust: Document, permissions: Document
) -> list[PolicyDoc]:
    """An IAM role's two documents: `<stem>-trust`, its trust policy, and `<stem>-permissions`, its inline policy."""
    return [
        PolicyDoc(f"{stem}-trust", "trust", account_id, f"IAM role {role_name} (trust)", trust),
        PolicyDoc(f"{stem}-permissions", "identity", account_id, f"IAM role {role_name}", permissions),
    ]
