"""The S3 Tables Iceberg REST endpoint's `loadTable`, the one operation of that endpoint the kit calls
(`s3tables_kit.jobs.kernel.iceberg_rest`), and `getConfig`, which standard Iceberg REST clients read first.

AWS serves it at ``https://s3tables.<region>.amazonaws.com/iceberg`` (SigV4, signing name ``s3tables``; the table
bucket's ARN is the warehouse and, URL-encoded, the catalog prefix). Here it is served under ``/iceberg`` of the
emulator's s3tables endpoint: ``GET /iceberg/v1/{prefix}/namespaces/{namespace}/tables/{table}`` answers the Iceberg
REST catalog's ``LoadTableResult`` (``metadata-location``, ``metadata``, ``config``) from moto's table and its
current metadata file.

It goes through the emulator's request path like any S3 Tables operation, under the operation name ``LoadTable``:
latency, fault injection and call counts. With live authorization on (`emulator.live`) it needs what the endpoint
translates it into: ``s3tables:GetTableMetadataLocation`` and ``s3tables:GetTableData`` on the table (`ACTIONS`).
Its own errors follow the Iceberg REST ``ErrorModel`` (``{"error": {"message", "type", "code"}}``); the ones
raised before it (a fault, a denial) keep the AWS JSON shape, as AWS's front door answers them.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote, unquote

from emulator.lookup import _s3_backend, get_bucket, get_table_by_name
from emulator.routing import handles
from emulator.state import ApiError

OPERATION = "LoadTable"
CONFIG = "GetConfig"
_PATHS = {
    OPERATION: re.compile(
        r"^/iceberg/v1/(?P<tableBucketARN>[^/]+)/namespaces/(?P<namespace>[^/]+)/tables/(?P<name>[^/]+)$"
    ),
    CONFIG: re.compile(r"^/iceberg/v1/config$"),
}
# The S3 Tables actions one request needs (live authorization). loadTable: what it is translated into (the location,
# then the file). getConfig is served for standard Iceberg REST clients (pyiceberg's RestCatalog reads it first; the
# tests load tables with it); the kit never calls it, and which action AWS checks for it is not documented: the
# bucket's read is assumed here.
ACTIONS = {OPERATION: ("GetTableMetadataLocation", "GetTableData"), CONFIG: ("GetTableBucket",)}


def match(method: str, raw_path: str) -> tuple[str, dict[str, str]] | None:
    """(the operation, its path parameters, decoded) for an Iceberg REST request served here, else None."""
    if method != "GET":
        return None
    for op, pattern in _PATHS.items():
        found = pattern.match(raw_path)
        if found is not None:
            return op, {k: unquote(v) for k, v in found.groupdict().items()}
    return None


def _iceberg_error(status: int, kind: str, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "code": status}}


@handles(CONFIG)
def get_config(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    """The catalog's configuration for a warehouse (a table bucket ARN): its prefix is the ARN, URL-encoded."""
    warehouse = q.get("warehouse", "")
    try:
        get_bucket(warehouse)
    except ApiError as err:
        return _iceberg_error(err.status, "NoSuchWarehouseException" if err.status == 404 else err.code, err.message)
    return 200, {"defaults": {}, "overrides": {"prefix": quote(warehouse, safe="")}}


@handles(OPERATION)
def load_table(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    try:
        t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    except ApiError as err:
        return _iceberg_error(err.status, "NoSuchTableException" if err.status == 404 else err.code, err.message)
    if not t.metadata_location:
        return _iceberg_error(404, "NoSuchTableException", "The table has no metadata yet.")  # our wording
    bucket, _, key = t.metadata_location.removeprefix("s3://").partition("/")
    from moto.s3.exceptions import MissingBucket

    try:
        found = _s3_backend(t.account_id, t.partition).get_object(bucket, key)
    except MissingBucket:
        found = None
    if found is None:
        return _iceberg_error(404, "NotFoundException", "The table's metadata file does not exist.")  # our wording
    return 200, {"metadata-location": t.metadata_location, "metadata": json.loads(found.value), "config": {}}
