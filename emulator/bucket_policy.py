"""S3 bucket policies evaluated with the caller's identity, in front of moto.

moto reads a bucket policy on object requests only, with no principal and no request context: a statement whose
condition names `aws:PrincipalArn` or `s3:if-none-match` cannot hold, so a vault's policy refuses every write, the
backup role's too. Here a request signed by a known principal (an assumed-role session of moto's STS, or an IAM
user) is decided instead by the explicit Denies of its bucket's policy, evaluated by `emulator.authz` (the stand-in's
one evaluator) with what AWS puts in the request context:

* `aws:PrincipalArn`, `aws:PrincipalAccount`, `aws:SecureTransport` (true: loopback stands in for TLS);
* `s3:if-none-match` (the `If-None-Match` header), `s3:ObjectCreationOperation` (true for a write that creates an
  object, false for a multipart upload's creation and parts), `s3:object-lock-mode`,
  `s3:object-lock-retain-until-date` and `s3:object-lock-remaining-retention-days` (whole days, rounded up) of a
  write's headers or a `PutObjectRetention` body.

Scope, kept small and stated: explicit Deny statements only (no Allow is needed: the callers of the worlds are
granted by their identity policies, which moto does not evaluate either); a `DeleteObjects` request is refused whole
when one of its keys is denied (AWS answers per key); a request signed with an account's own access key (Terraform,
the tools, the tests) keeps moto's reading, as before. An operator `emulator.authz` does not evaluate is an error
(HTTP 500), never a silent allow.
"""

from __future__ import annotations

import json
import math
import re
import threading
from datetime import UTC, datetime
from typing import Any

from emulator import authz

# A request this module decided: moto's own reading of the policy is skipped for it (`emulator.moto_patches`).
DECIDED = threading.local()


# Bucket subresources -> the IAM action of (GET, PUT, DELETE); DELETE of a configuration is authorised as its Put.
def _get_put(get: str, put: str, delete: str = "") -> tuple[str, str, str]:
    return get, put, delete or put


_BUCKET_SUB = {
    "policy": _get_put("GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy"),
    "versioning": _get_put("GetBucketVersioning", "PutBucketVersioning"),
    "object-lock": _get_put("GetBucketObjectLockConfiguration", "PutBucketObjectLockConfiguration"),
    "encryption": _get_put("GetEncryptionConfiguration", "PutEncryptionConfiguration"),
    "lifecycle": _get_put("GetLifecycleConfiguration", "PutLifecycleConfiguration"),
    "tagging": _get_put("GetBucketTagging", "PutBucketTagging"),
    "publicAccessBlock": _get_put("GetBucketPublicAccessBlock", "PutBucketPublicAccessBlock"),
    "ownershipControls": _get_put("GetBucketOwnershipControls", "PutBucketOwnershipControls"),
    "intelligent-tiering": _get_put("GetIntelligentTieringConfiguration", "PutIntelligentTieringConfiguration"),
    "requestPayment": _get_put("GetBucketRequestPayment", "PutBucketRequestPayment"),
    "replication": _get_put("GetReplicationConfiguration", "PutReplicationConfiguration"),
    "notification": _get_put("GetBucketNotification", "PutBucketNotification"),
    "inventory": _get_put("GetInventoryConfiguration", "PutInventoryConfiguration"),
    "acl": _get_put("GetBucketAcl", "PutBucketAcl"),
    "cors": _get_put("GetBucketCORS", "PutBucketCORS"),
    "location": _get_put("GetBucketLocation", "GetBucketLocation"),
    "versions": _get_put("ListBucketVersions", "ListBucketVersions"),
    "uploads": _get_put("ListBucketMultipartUploads", "ListBucketMultipartUploads"),
}
_OBJECT_SUB = {
    "retention": _get_put("GetObjectRetention", "PutObjectRetention"),
    "legal-hold": _get_put("GetObjectLegalHold", "PutObjectLegalHold"),
    "tagging": _get_put("GetObjectTagging", "PutObjectTagging", "DeleteObjectTagging"),
    "acl": _get_put("GetObjectAcl", "PutObjectAcl"),
}
_VERB = {"GET": 0, "HEAD": 0, "PUT": 1, "POST": 1, "DELETE": 2}
# Writes that create an object (`s3:ObjectCreationOperation` true) and a multipart upload's other steps (false).
_CREATING, _PARTS = (
    ("PutObject", "CopyObject", "CompleteMultipartUpload", "PostObject"),
    (
        "CreateMultipartUpload",
        "UploadPart",
        "UploadPartCopy",
    ),
)
_DELETE_KEY_RE = re.compile(rb"<Key>(.*?)</Key>(?:\s*<VersionId>(.*?)</VersionId>)?", re.S)


def action_of(op: str, method: str, key: str, query: dict[str, list[str]]) -> str:
    """The IAM action AWS authorises a path-style request as (`op`: `emulator.storage.s3_operation`'s name)."""
    verb = _VERB.get(method, 1)
    subs = _OBJECT_SUB if key else _BUCKET_SUB
    sub = next((s for s in subs if s in query), None)
    if sub is not None:
        return "s3:" + subs[sub][verb]
    versioned = "versionId" in query
    if key:
        if op in _CREATING or op in _PARTS:
            return "s3:PutObject"
        if op in ("GetObject", "HeadObject"):
            return "s3:GetObjectVersion" if versioned else "s3:GetObject"
        if op == "DeleteObject":
            return "s3:DeleteObjectVersion" if versioned else "s3:DeleteObject"
        return {"AbortMultipartUpload": "s3:AbortMultipartUpload", "ListParts": "s3:ListMultipartUploadParts"}.get(
            op, f"s3:{op}"
        )
    return {"ListObjects": "s3:ListBucket", "ListObjectsV2": "s3:ListBucket", "HeadBucket": "s3:ListBucket"}.get(
        op, f"s3:{op}"
    )


def _days_until(stamp: str, now: datetime) -> int | None:
    try:
        until = datetime.fromisoformat(stamp.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return math.ceil((until.astimezone(UTC) - now).total_seconds() / 86_400)


def context(environ: dict[str, Any], op: str, body: bytes, who: authz.RequestPrincipal) -> dict[str, Any]:
    """The request context S3 evaluates a policy's conditions in (module docstring)."""
    ctx: dict[str, Any] = {
        "aws:PrincipalArn": who.arn,
        "aws:PrincipalAccount": who.account,
        "aws:SecureTransport": "true",
    }
    if op in _CREATING or op in _PARTS:
        ctx["s3:ObjectCreationOperation"] = "true" if op in _CREATING else "false"
    if environ.get("HTTP_IF_NONE_MATCH"):
        ctx["s3:if-none-match"] = environ["HTTP_IF_NONE_MATCH"]
    mode, until = environ.get("HTTP_X_AMZ_OBJECT_LOCK_MODE"), environ.get("HTTP_X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE")
    if op == "PutObjectRetention":
        found_mode = re.search(rb"<Mode>(.*?)</Mode>", body)
        found_until = re.search(rb"<RetainUntilDate>(.*?)</RetainUntilDate>", body)
        mode = found_mode.group(1).decode() if found_mode else None
        until = found_until.group(1).decode() if found_until else None
    if mode:
        ctx["s3:object-lock-mode"] = mode
    if until:
        ctx["s3:object-lock-retain-until-date"] = until
        days = _days_until(until, datetime.now(UTC))
        if days is not None:
            ctx["s3:object-lock-remaining-retention-days"] = str(days)
    return ctx


def _policy_of(bucket: str) -> str | None:
    from moto.s3.models import s3_backends

    found = s3_backends.bucket_accounts.get(bucket)
    if found is None:
        return None
    partition, account = found
    try:
        policy = s3_backends[account][partition].get_bucket(bucket).policy
    except Exception:  # gone meanwhile: moto answers
        return None
    return policy.decode() if isinstance(policy, bytes) else policy


def refusal(
    environ: dict[str, Any], op: str, method: str, path: str, query: dict[str, list[str]], body: bytes
) -> tuple[int, str, str] | None:
    """(HTTP status, S3 error code, message) refusing the request, or None (moto answers). Marks the request as
    decided (moto's reading skipped) when its caller is known."""
    DECIDED.flag = False
    bucket, _, key = path.lstrip("/").partition("/")
    text = _policy_of(bucket) if bucket else None
    if not text:  # no policy to read (most buckets: the tables' storage): the caller is not looked up
        return None
    who = authz.caller(environ)
    if who is None:
        return None
    DECIDED.flag = True
    ctx = context(environ, op, body, who)
    targets = [(action_of(op, method, key, query), f"arn:aws:s3:::{bucket}" + (f"/{key}" if key else ""))]
    if op == "DeleteObjects":
        targets = [
            ("s3:DeleteObjectVersion" if v else "s3:DeleteObject", f"arn:aws:s3:::{bucket}/{k.decode()}")
            for k, v in _DELETE_KEY_RE.findall(body)
        ]
    doc = json.loads(text)
    for action, resource in targets:
        try:
            sid = authz.explicit_deny(doc, action, resource, ctx, principal=who.arn, resource_policy=True)
        except ValueError as exc:
            return 500, "InternalError", f"the emulator cannot evaluate this bucket policy: {exc}"
        if sid:
            return (
                403,
                "AccessDenied",
                (
                    f"User: {who.session_arn or who.arn} is not authorized to perform: {action} on resource: "
                    f'"{resource}" with an explicit deny in a resource-based policy ({sid})'
                ),
            )
    return None


def moto_reads_policy() -> bool:
    """Whether moto's own reading of a bucket policy applies to the request being served (not decided here)."""
    return not getattr(DECIDED, "flag", False)
