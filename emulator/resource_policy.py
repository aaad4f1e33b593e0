"""The explicit Denies of a table bucket's and a table's resource policies, evaluated on the write path of the
buckets a test names (`/_kit_test/enforce-policies`), so a frozen writer's commit is refused as AWS refuses it, and
on the read path of every bucket for a known principal, so a monitor named by a Deny table policy is refused its
reads of that table as AWS refuses them.

Scope, kept small and stated:
- writes: only buckets named through the control endpoint (the rest of the local worlds run as before: their
  writers use the emulator's default credentials, not the roles the kit's documents name), and only the operations
  of `CHECKED` (the Iceberg commit `UpdateTableMetadataLocation` and the operations that change the set of tables).
  `PutTableData` is a permission of the data plane (the table's S3 storage), not an operation: it is not evaluated
  here, and a refused commit is what makes a write fail;
- reads: the operations of `READS` (a table's reads against its table policy and its bucket's, a bucket's against
  the bucket policy), for a request signed by a known principal (an assumed-role session or an IAM user) on any
  bucket; the table storage's object reads (`GetTableData`) are not evaluated;
- only explicit Deny statements (no Allow is needed: same account, and the kit's documents only deny), evaluated by
  `emulator.authz` (the stand-in's one evaluator, also `make live-verify`'s): a condition operator it does not
  evaluate is reported as an error (HTTP 500) rather than silently skipped.

The caller's `aws:PrincipalArn` is the role of an assumed-role session (moto's STS) or the IAM user of the request's
access key; a key moto does not know has none (the key is absent, as for a service principal).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from emulator import authz

CHECKED = frozenset(
    {"UpdateTableMetadataLocation", "CreateTable", "CreateNamespace", "DeleteTable", "DeleteNamespace", "RenameTable"}
)
ENFORCED: set[str] = set()  # table bucket ARNs (cleared by the emulator's reset)


def control(body: dict[str, Any]) -> dict[str, Any]:
    """`enforce-policies`: {"bucketArns": [...], "enabled": true|false}."""
    for arn in body.get("bucketArns", []):
        if body.get("enabled", True):
            ENFORCED.add(arn)
        else:
            ENFORCED.discard(arn)
    return {"enforced": sorted(ENFORCED)}


TABLE_OPS = frozenset({"UpdateTableMetadataLocation", "DeleteTable", "RenameTable"})
# Reads, checked for a known principal's request on every bucket (a monitor blinded by a Deny table policy fails as
# on AWS); the table's reads against its table policy too, the bucket's against the bucket policy.
TABLE_READS = frozenset(
    {
        "GetTable",
        "GetTableMetadataLocation",
        "GetTableReplicationStatus",
        "GetTableReplication",
        "GetTableMaintenanceConfiguration",
        "GetTableMaintenanceJobStatus",
        "GetTableEncryption",
        "GetTableStorageClass",
        "GetTablePolicy",
    }
)
BUCKET_READS = frozenset({"ListTables", "ListNamespaces", "GetNamespace", "GetTableBucket"})
READS = TABLE_READS | BUCKET_READS


def refusal(
    op: str,
    params: dict[str, str],
    environ: dict[str, Any],
    bucket_policies: dict[str, str],
    table_policies: dict[str, str],
    table_arn: Callable[[str, str, str], str],
    table_of_arn: Callable[[str], str] | None = None,
    query: dict[str, str] | None = None,
) -> tuple[str, str, int] | None:
    """(error code, message, HTTP status) refusing `op` (AccessDeniedException, as AWS answers an explicit deny), or
    None. `table_arn(bucket ARN, namespace, name)` raises for a table that does not exist (moto then answers);
    `table_of_arn(table ARN)`: the table's bucket ARN (raises likewise), for a read that names the table by its ARN
    (`query`'s `tableArn`). Called under the emulator's lock, before the request reaches moto."""
    arn_named = (query or {}).get("tableArn") or params.get("tableArn") or ""
    bucket_arn = params.get("tableBucketARN", "") or arn_named.split("/table/")[0]
    read = op in READS and authz.caller(environ) is not None
    if op not in CHECKED and not read:
        return None
    if op in CHECKED and bucket_arn not in ENFORCED:
        return None
    texts = [bucket_policies.get(bucket_arn)]
    resource = bucket_arn
    if op in TABLE_OPS or op in TABLE_READS:
        try:
            if arn_named and table_of_arn is not None:
                table_of_arn(arn_named)
                resource = arn_named
            else:
                resource = table_arn(bucket_arn, params["namespace"], params["name"])
        except Exception:  # no such table: moto answers
            return None
        texts.append(table_policies.get(resource))
    try:
        why = check(op, resource, bucket_arn, [t for t in texts if t], environ, always=read)
    except ValueError as exc:
        return "InternalServerErrorException", str(exc), 500
    return None if why is None else ("AccessDeniedException", why, 403)


def check(
    op: str, resource: str, bucket_arn: str, policies: list[str], environ: dict[str, Any], *, always: bool = False
) -> str | None:
    """Why `op` on `resource` (a table or the bucket) is refused by the `policies` texts in force there, None when it
    is not (or the bucket is not enforced and not `always`: the stand-in's own service, `emulator.streaming`)."""
    if op not in CHECKED | READS or (bucket_arn not in ENFORCED and not always):
        return None
    who = authz.caller(environ)
    return denied_to(who.arn if who is not None else "", f"s3tables:{op}", resource, policies)


def denied_to(principal: str, action: str, resource: str, policies: list[str]) -> str | None:
    """Why `principal` (an ARN, "" for an unknown one) may not do `action` on `resource` under the `policies` texts'
    explicit Denies (AWS's message), None when none applies. Also the stand-in's replication service's check of
    the replication role's reads of a source table (`emulator.hooks`)."""
    context: dict[str, str] = {}
    if principal:
        context = {"aws:PrincipalArn": principal, "aws:PrincipalAccount": principal.split(":")[4]}
    for text in policies:
        try:
            sid = authz.explicit_deny(
                json.loads(text), action, resource, context, principal=principal, resource_policy=True
            )
        except ValueError as exc:
            raise ValueError(f"the emulator cannot evaluate this policy: {exc}") from None
        if sid:
            who_text = principal or "an unknown principal"
            return (
                f"User: {who_text} is not authorized to perform: {action} on resource: {resource} with an explicit "
                f"deny in a resource-based policy ({sid})"
            )
    return None
