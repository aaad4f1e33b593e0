"""The explicit Denies of a table bucket's and a table's resource policies, evaluated on the write path of the
buckets a test names (`/_kit_test/enforce-policies`), so a frozen writer's commit is refused as AWS refuses it.

Scope, kept small and stated:
- only buckets named through the control endpoint: the rest of the local worlds run as before (their writers use
  the emulator's default credentials, not the roles the kit's documents name);
- only the operations of `CHECKED` (the Iceberg commit `UpdateTableMetadataLocation` and the operations that change
  the set of tables). `PutTableData` is a permission of the data plane (the table's S3 storage), not an operation:
  it is not evaluated here, and a refused commit is what makes a write fail;
- only explicit Deny statements (no Allow is needed: same account, and the kit's documents only deny), with
  `Principal` "*", Action and Resource wildcards, and these condition operators on `aws:PrincipalArn`,
  `aws:PrincipalAccount` and `aws:PrincipalServiceName`: Arn/String Equals, NotEquals, Like, NotLike, each with
  `IfExists`. A statement with any other operator or key is not understood: it is reported as an error (HTTP 500)
  rather than silently skipped. The IAM evaluator of the policy proofs (`policies/simulator`) is the reference.

The caller's `aws:PrincipalArn` is the role of an assumed-role session (moto's STS) or the IAM user of the request's
access key; a key moto does not know has none (the key is absent, as for a service principal).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from typing import Any

CHECKED = frozenset(
    {"UpdateTableMetadataLocation", "CreateTable", "CreateNamespace", "DeleteTable", "DeleteNamespace", "RenameTable"}
)
ENFORCED: set[str] = set()  # table bucket ARNs (cleared by the emulator's reset)
_KEY = re.compile(r"Credential=([A-Z0-9]+)/")
_OPS = ("Equals", "NotEquals", "Like", "NotLike")
_KEYS = frozenset({"aws:principalarn", "aws:principalaccount", "aws:principalservicename"})


class NotUnderstood(Exception):
    """A statement this module cannot evaluate."""


def control(body: dict[str, Any]) -> dict[str, Any]:
    """`enforce-policies`: {"bucketArns": [...], "enabled": true|false}."""
    for arn in body.get("bucketArns", []):
        if body.get("enabled", True):
            ENFORCED.add(arn)
        else:
            ENFORCED.discard(arn)
    return {"enforced": sorted(ENFORCED)}


def caller_arn(environ: dict[str, Any]) -> str | None:
    m = _KEY.search(environ.get("HTTP_AUTHORIZATION", ""))
    if not m:
        return None
    key = m.group(1)
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends

    for _, partitions in sts_backends.items():
        for _, backend in partitions.items():
            role = backend.get_assumed_role_from_access_key(key)
            if role is not None:
                return str(role.role_arn)
    for _, iam_partitions in iam_backends.items():
        for _, iam in iam_partitions.items():
            user = iam.get_user_from_access_key_id(key)
            if user is not None:
                return str(user.arn)
    return None


def _list(v: Any) -> list[str]:
    return [v] if isinstance(v, str) else list(v)


def _condition_holds(op: str, key: str, values: list[str], context: dict[str, str]) -> bool:
    base, if_exists = (op[: -len("IfExists")], True) if op.endswith("IfExists") else (op, False)
    kind = next((k for k in ("Arn", "String") if base.startswith(k)), None)
    test = base[len(kind) :] if kind else ""
    if kind is None or test not in _OPS or key.lower() not in _KEYS:
        raise NotUnderstood(f"condition {op} on {key}")
    present = context.get(key.lower())
    if present is None:  # an absent key: negated operators hold, IfExists holds, the others do not
        return if_exists or test.startswith("Not")
    like = test in ("Like", "NotLike")
    hit = any(fnmatch.fnmatchcase(present, v) for v in values) if like else present in values
    return not hit if test.startswith("Not") else hit


def denied_by(policy: dict[str, Any], action: str, resource: str, context: dict[str, str]) -> str | None:
    """The Sid of the first explicit Deny of `policy` that applies (None: none does)."""
    for stmt in policy.get("Statement", []):
        if stmt.get("Effect") != "Deny":
            continue
        principal = stmt.get("Principal")
        if principal not in ("*", {"AWS": "*"}) or "NotAction" in stmt or "NotResource" in stmt:
            raise NotUnderstood(f"statement {stmt.get('Sid')}: only Principal '*', Action and Resource")
        if not any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in _list(stmt.get("Action", []))):
            continue
        if not any(fnmatch.fnmatchcase(resource, r) for r in _list(stmt.get("Resource", []))):
            continue
        conds = stmt.get("Condition", {})
        if all(_condition_holds(op, k, _list(v), context) for op, kv in conds.items() for k, v in kv.items()):
            return str(stmt.get("Sid", ""))
    return None


TABLE_OPS = frozenset({"UpdateTableMetadataLocation", "DeleteTable", "RenameTable"})


def refusal(
    op: str,
    params: dict[str, str],
    environ: dict[str, Any],
    bucket_policies: dict[str, str],
    table_policies: dict[str, str],
    table_arn: Callable[[str, str, str], str],
) -> tuple[str, str, int] | None:
    """(error code, message, HTTP status) refusing `op` (AccessDeniedException, as AWS answers an explicit deny), or
    None. `table_arn(bucket ARN, namespace, name)` raises for a table that does not exist (moto then answers).
    Called under the emulator's lock, before the request reaches moto."""
    bucket_arn = params.get("tableBucketARN", "")
    if op not in CHECKED or bucket_arn not in ENFORCED:
        return None
    texts = [bucket_policies.get(bucket_arn)]
    resource = bucket_arn
    if op in TABLE_OPS:
        try:
            resource = table_arn(bucket_arn, params["namespace"], params["name"])
        except Exception:  # no such table: moto answers
            return None
        texts.append(table_policies.get(resource))
    try:
        why = check(op, resource, bucket_arn, [t for t in texts if t], environ)
    except ValueError as exc:
        return "InternalServerErrorException", str(exc), 500
    return None if why is None else ("AccessDeniedException", why, 403)


def check(op: str, resource: str, bucket_arn: str, policies: list[str], environ: dict[str, Any]) -> str | None:
    """Why `op` on `resource` (a table or the bucket) is refused by the `policies` texts in force there, None when it
    is not (or the bucket is not enforced)."""
    if op not in CHECKED or bucket_arn not in ENFORCED:
        return None
    principal = caller_arn(environ)
    context: dict[str, str] = {}
    if principal is not None:
        context = {"aws:principalarn": principal, "aws:principalaccount": principal.split(":")[4]}
    action = f"s3tables:{op}"
    for text in policies:
        try:
            sid = denied_by(json.loads(text), action, resource, context)
        except NotUnderstood as exc:
            raise ValueError(f"the emulator cannot evaluate this policy: {exc}") from None
        if sid is not None:
            who = principal or "an unknown principal"
            return (
                f"User: {who} is not authorized to perform: {action} on resource: {resource} with an explicit "
                f"deny in a resource-based policy ({sid})"
            )
    return None
