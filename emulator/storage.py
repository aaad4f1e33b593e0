"""Table storage: the S3 object operations S3 Tables supports on a table's warehouse bucket."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote

from emulator.state import LOCK, STATE

# ----------------------------------------------------------------------------------------------------
# Table storage: the S3 object operations S3 Tables supports (docs/aws-facts.md#table-storage-object-operations)
# ----------------------------------------------------------------------------------------------------

TABLE_STORAGE_SUFFIX = "--table-s3"  # moto's table warehouses: s3://<uuid>--table-s3 (as on AWS)


def s3_operation(environ: dict[str, Any], method: str, key: str, query: dict[str, list[str]]) -> str:
    """The S3 REST operation of a path-style request."""
    copy = bool(environ.get("HTTP_X_AMZ_COPY_SOURCE"))
    if not key:
        if method == "GET":
            if "uploads" in query:
                return "ListMultipartUploads"
            if "versions" in query:
                return "ListObjectVersions"
            if "location" in query:
                return "GetBucketLocation"
            return "ListObjectsV2" if query.get("list-type") == ["2"] else "ListObjects"
        if method == "POST" and "delete" in query:
            return "DeleteObjects"
        return {"HEAD": "HeadBucket", "PUT": "CreateBucket", "DELETE": "DeleteBucket"}.get(method, method + "Bucket")
    if method == "PUT":
        if "partNumber" in query:
            return "UploadPartCopy" if copy else "UploadPart"
        return "CopyObject" if copy else "PutObject"
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
        return "PostObject"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in query else "DeleteObject"
    if method == "GET":
        return "ListParts" if "uploadId" in query else "GetObject"
    return {"HEAD": "HeadObject"}.get(method, method + "Object")


TABLE_STORAGE_OPERATIONS = frozenset(
    {
        "GetObject",
        "HeadObject",
        "PutObject",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
        "AbortMultipartUpload",
        "ListParts",
        "HeadBucket",  # the SDKs' bucket probe; carries no data
    }
)


def _table_storage(environ: dict[str, Any], method: str, raw_path: str, raw_query: str) -> str | None:
    """Count S3 calls on table storage; refuse (message) the operations S3 Tables table storage does not support:
    CopyObject, UploadPartCopy, ListObjects(V2), DeleteObject(s), ... Other buckets are plain moto."""
    bucket, _, key = unquote(raw_path).lstrip("/").partition("/")
    if not bucket.endswith(TABLE_STORAGE_SUFFIX):
        return None
    query = parse_qs(raw_query, keep_blank_values=True)
    op = s3_operation(environ, method, key, query)
    with LOCK:
        STATE.s3_calls[f"{bucket} {op}"] = STATE.s3_calls.get(f"{bucket} {op}", 0) + 1
        if op in TABLE_STORAGE_OPERATIONS:
            return None
        STATE.s3_refused.append(f"{bucket} {op} {key}")
    return f"{op} is not supported on table storage."  # our wording; AWS lists only the supported operations


def _s3_error(start_response: Any, status: int, code: str, message: str) -> list[bytes]:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
    ).encode()
    reason = {405: "Method Not Allowed", 503: "Slow Down", 500: "Internal Server Error"}.get(status, "Error")
    start_response(f"{status} {reason}", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]
