"""The table bucket entries of the configurations the benchmarks generate (`[source]`, `[[sources]]`,
`[[replicas]]`), each deployed by its account's `terraform-deploy` role."""

from __future__ import annotations

from typing import Any

SSE_S3: dict[str, Any] = {"type": "sse-s3"}
KMS_CREATED: dict[str, Any] = {"type": "kms", "kms_key": "create"}


def site(
    account: str,
    region: str,
    bucket: str,
    *,
    encryption: dict[str, Any],
    retention: tuple[int, int],
    deployed_by_role: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A table bucket entry in `account` and `region`: its deploy role (unless not `deployed_by_role`), `encryption`,
    snapshot retention (`retention`: the maximum age in hours, the snapshots always kept) and the entry's own keys
    (`extra`: a source's id, namespaces and replication, a replica's storage class)."""
    doc: dict[str, Any] = {"account_id": account, "region": region, "bucket": bucket}
    if deployed_by_role:
        doc["deploy_role_arn"] = deploy_role(account)
    max_age, min_snapshots = retention
    return doc | {
        "encryption": dict(encryption),
        "snapshot_retention": {"max_snapshot_age_hours": max_age, "min_snapshots_to_keep": min_snapshots},
        **extra,
    }


def deploy_role(account: str) -> str:
    """The role that deploys the kit's stacks in `account`."""
    return f"arn:aws:iam::{account}:role/terraform-deploy"
