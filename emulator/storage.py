"""Table storage: the S3 object operations S3 Tables supports on a table's warehouse bucket."""

from __future__ import annotations

import math
import os
import re
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
    if "retention" in query and method in ("GET", "PUT"):  # Object Lock's calls, throttled and counted by their name
        return "GetObjectRetention" if method == "GET" else "PutObjectRetention"
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


# ----------------------------------------------------------------------------------------------------
# Plain reads of table storage (GetObject, HeadObject), without moto's request stack
# ----------------------------------------------------------------------------------------------------

# Request headers that make a read more than "the current object" (moto answers those).
_PLAIN_READ_SKIPS = (
    "HTTP_IF_MATCH",
    "HTTP_IF_NONE_MATCH",
    "HTTP_IF_MODIFIED_SINCE",
    "HTTP_IF_UNMODIFIED_SINCE",
    "HTTP_ORIGIN",  # CORS: moto adds the bucket's CORS headers
    "HTTP_X_MOTO_ACCOUNT_ID",
)
_ACCESS_KEY_RE = re.compile(r"Credential=([^/,\s]+)/")
_BYTE_RANGE_RE = re.compile(r"bytes=(\d+)-(\d*)")


def plain_read(
    environ: dict[str, Any], method: str, raw_path: str, raw_query: str
) -> tuple[str, list[tuple[str, str]], bytes] | None:
    """moto's answer to a plain read of table storage, built from moto's own S3 model without its Flask request
    stack: a GetObject of the whole current object or of one byte range from an offset inside it (`bytes=a-b`,
    `bytes=a-`), or a HeadObject, for a third of moto's CPU (0.84 -> 0.27 ms per GetObject: every status run over
    the lake benchmark, bench/ops_scale.py, reads 30,000 metadata files; pyarrow reads one with a HEAD and a ranged
    GET, botocore with one GET). The
    status line, headers and body are moto's: tests/test_emulator_storage.py compares them with moto's answer to the
    same request. Anything else returns None and moto answers: another operation or bucket, a query, a conditional
    header, another kind of range, a missing key or bucket (moto's error), a versioned or archived object, one
    stored without a content type, a bucket with server access logging, moto's request recorder or IAM
    authorization turned on, an account chosen by environment or header."""
    if method not in ("GET", "HEAD") or raw_query or any(environ.get(h) for h in _PLAIN_READ_SKIPS):
        return None
    ranged = environ.get("HTTP_RANGE")
    byte_range = _BYTE_RANGE_RE.fullmatch(ranged) if ranged else None
    if ranged and (method == "HEAD" or byte_range is None):
        return None
    key = _plain_key(environ, raw_path)
    if key is None:
        return None
    checksum_mode = environ.get("HTTP_X_AMZ_CHECKSUM_MODE") == "ENABLED" and key.checksum_algorithm
    if method == "HEAD":  # moto's head_object
        headers: dict[str, str] = {**key.metadata, **key.response_dict, "Accept-Ranges": "bytes"}
        if checksum_mode:
            headers[f"x-amz-checksum-{key.checksum_algorithm.lower()}"] = str(key.checksum_value)
    else:  # moto's get_object
        headers = dict(key.response_dict)
        if checksum_mode:
            checksum = str(key.checksum_value)
            if key.checksum_type == "COMPOSITE":
                checksum = f"{key.checksum_value}-{key.checksum_parts}"
            headers[f"x-amz-checksum-{key.checksum_algorithm.lower()}"] = checksum
            if key.checksum_type:
                headers["x-amz-checksum-type"] = key.checksum_type
        headers.update({**key.metadata, "Accept-Ranges": "bytes"})
    if not any(k.lower() == "content-type" for k in headers):
        return None  # moto picks one by the body
    body: bytes = b"" if method == "HEAD" else key.value
    status = "200 OK"
    if byte_range is not None:  # moto's _handle_range_header, for `bytes=a-b` and `bytes=a-`
        last = len(body) - 1
        begin = int(byte_range.group(1))
        if begin > last:
            return None  # InvalidRange: moto's error
        end = last if not byte_range.group(2) else min(int(byte_range.group(2)), last)
        if begin <= end:
            if begin or end < last:  # a part of the object carries no checksum
                headers = {k: v for k, v in headers.items() if not k.startswith("x-amz-checksum-")}
            headers["content-range"] = f"bytes {begin}-{end}/{len(body)}"
            body = body[begin : end + 1]
            headers["content-length"] = str(len(body))
            status = "206 Partial Content"
    from moto.utilities.aws_headers import gen_amzn_requestid_long

    headers["x-amzn-requestid"] = gen_amzn_requestid_long()
    headers["Access-Control-Allow-Origin"] = "*"  # moto's server allows every origin
    with LOCK:
        STATE.plain_reads += 1
    return status, [(k, str(v)) for k, v in headers.items()], body


def _plain_key(environ: dict[str, Any], raw_path: str) -> Any:
    """moto's current object behind a table storage path, or None where moto should answer (`plain_read`)."""
    bucket_name, _, key_name = unquote(raw_path).lstrip("/").partition("/")
    if not key_name or not bucket_name.endswith(TABLE_STORAGE_SUFFIX) or os.environ.get("MOTO_ACCOUNT_ID"):
        return None
    found = _ACCESS_KEY_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if found is None:
        return None
    from moto import settings
    from moto.iam.models import get_account_id_from
    from moto.moto_api import recorder
    from moto.s3.exceptions import MissingBucket
    from moto.s3.models import ARCHIVE_STORAGE_CLASSES, FakeKey, s3_backends

    if not math.isinf(settings.INITIAL_NO_AUTH_ACTION_COUNT) or recorder._user_enabled:
        return None
    backend = s3_backends[get_account_id_from(found.group(1))]["aws"]
    try:
        if backend.get_bucket(bucket_name).logging:
            return None
        key = backend.get_object(bucket_name, key_name)
    except MissingBucket:
        return None
    if not isinstance(key, FakeKey) or key.version_id != "null" or key.storage_class in ARCHIVE_STORAGE_CLASSES:
        return None
    return key
