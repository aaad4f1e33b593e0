"""WSGI middleware in front of moto's server application: the S3 Tables operations moto lacks, plus test
hooks.

Semantics follow the botocore model `s3tables/2018-05-10` and the S3 user guide (docs/aws-facts.md#replication,
docs/aws-facts.md#iam-for-s3-tables, docs/aws-facts.md#names-and-quotas):

* table ARNs end in the table's UUID (`bucket/<name>/table/<uuid>`), not its name (moto uses the name);
* replication configurations carry a `versionToken`; replacing one needs the current token
  (`BadRequestException: A version token is not specified.`), a stale token is a `ConflictException`;
  exactly one rule, 1-5 distinct destinations, never the source bucket itself;
* `GetTableReplicationStatus` reports the destinations of the table's effective configuration (table level
  overrides bucket level); the per-destination status is computed by AWS, so tests set it through
  `/_kit_test/replication-status` or simulate the service with `/_kit_test/replicate`;
* unset maintenance reads back AWS's defaults; unset bucket encryption reads back SSE-S3 (AES256);
* replicas are read-only (`UpdateTableMetadataLocation` refused) until `DisassociateTableReplication`
  (docs/aws-facts.md#disassociating-a-replica, botocore >= 1.44.7) turns one into a standalone writable table for
  good: `GetTable`/`ListTables` stop reporting it as managed, the replication simulation stops updating it and
  reports the destination FAILED the next time it runs;
* errors are rest-json errors: HTTP status + `x-amzn-ErrorType` + `{"__type", "message"}`.

Where the exact AWS wording of an error message is not documented the message is ours and says so in a
comment.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

import botocore.session

from emulator import live, resource_policy

# ----------------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def not_found(msg: str) -> ApiError:
    return ApiError("NotFoundException", msg, 404)


def bad_request(msg: str) -> ApiError:
    return ApiError("BadRequestException", msg, 400)


def conflict(msg: str) -> ApiError:
    return ApiError("ConflictException", msg, 409)


TABLE_NOT_FOUND = "The specified table does not exist."
BUCKET_NOT_FOUND = "The specified bucket does not exist."
NO_VERSION_TOKEN = "A version token is not specified."  # docs/aws-facts.md#replication (measured on AWS)
TOKEN_MISMATCH = "Provided version token does not match the table version token."  # moto's wording, same op family
# Not documented by AWS; our wording:
NO_REPLICATION = "The specified replication configuration does not exist."
NO_POLICY = "The specified resource policy does not exist."
# Documented: DisassociateTableReplication fails on a table that is not a replica (including one already
# disassociated); the error code and message are not shown on the pages we could read: our choice and wording.
NOT_A_REPLICA = "The specified table is not a replica table."
# Documented: replicas are read-only; the error a write gets is not documented: our choice and wording.
REPLICA_READ_ONLY = "The specified table is a replica table managed by S3 Tables replication and is read-only."
# Documented (docs/aws-facts.md#disassociating-a-replica): after a disassociation the source reports FAILED for
# that destination "with a message that begins 'The destination table has been det'". The rest of the sentence is
# OURS (only the prefix is AWS's).
DETACHED_FAILURE = "The destination table has been detached from replication and no longer receives updates."
# GetTable/ListTables report `managedByService` for replicas; the value is not documented: ours (UNVERIFIED).
MANAGED_BY_REPLICATION = "replication.s3tables.amazonaws.com"

_BUCKET_ARN_RE = re.compile(r"^arn:(aws[-a-z0-9]*):s3tables:([-a-z0-9]*):([0-9]{12}):bucket/([a-z0-9_-]{3,63})$")
_TABLE_ARN_RE = re.compile(
    r"^arn:(aws[-a-z0-9]*):s3tables:([-a-z0-9]*):([0-9]{12}):bucket/([a-z0-9_-]{3,63})/table/([a-zA-Z0-9-_]{1,255})$"
)
_ROLE_RE = re.compile(r"^arn:.+:iam::[0-9]{12}:role/.+$")

DEFAULT_MAINTENANCE: dict[str, Any] = {
    "icebergCompaction": {
        "status": "enabled",
        "settings": {"icebergCompaction": {"targetFileSizeMB": 512, "strategy": "auto"}},
    },
    "icebergSnapshotManagement": {
        "status": "enabled",
        "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 120}},
    },
}


def _iso(ts: dt.datetime) -> str:
    return ts.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _parse_ts(v: Any) -> dt.datetime:
    if isinstance(v, int | float):
        return dt.datetime.fromtimestamp(v, tz=dt.UTC)
    return dt.datetime.fromisoformat(str(v).replace("Z", "+00:00"))


# ----------------------------------------------------------------------------------------------------
# moto patches: UUID table ARNs
# ----------------------------------------------------------------------------------------------------

_PATCHED = False


def patch_moto() -> None:
    """Table ARNs end in a UUID as on AWS (docs/aws-facts.md#iam-for-s3-tables), so name-based shortcuts in the kit
    would fail here."""
    global _PATCHED
    if _PATCHED:
        return
    from moto.s3tables import models

    orig_init = models.Table.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self.table_id = str(uuid.uuid4())
        orig_init(self, *args, **kwargs)

    models.Table.__init__ = __init__  # type: ignore[method-assign]
    models.Table.arn = property(lambda self: f"{self.table_bucket_arn}/table/{self.table_id}")  # type: ignore[method-assign,assignment]

    # moto answers UpdateTableMetadataLocation with `"namespace": "<name>"`; the API has a list of strings, and the
    # AWS SDK v2 in the S3 Tables catalog jar fails to parse the string (its commits then fail;
    # docs/aws-facts.md#local-stand-ins).
    from moto.s3tables import responses

    original = responses.S3TablesResponse.update_table_metadata_location

    def update_table_metadata_location(self: Any) -> Any:
        status, headers, body = original(self)
        doc = json.loads(body)
        if isinstance(doc.get("namespace"), str):
            doc["namespace"] = [doc["namespace"]]
        return status, headers, json.dumps(doc)

    responses.S3TablesResponse.update_table_metadata_location = update_table_metadata_location  # type: ignore[method-assign]

    # moto's server lists its own package directory (one stat per service, ~180) on EVERY request to route it
    # (`werkzeug_app.get_backend_for_host`); the package does not change while the server runs, so list it once.
    # Pure speed (half of moto's CPU per request on a simple operation): the same answer, computed once.
    from moto import backends

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules

    # EMR Serverless takes the application type in any case (the provider's examples and the kit write "spark"; AWS
    # answers "Spark"); moto 5.2.5 refuses anything but upper case ("Unsupported engine spark"). It stores the
    # type capitalized, as AWS reports it, so only the check's input is normalised. A new application is CREATED on
    # AWS (it starts with its first job when auto-start is on); moto makes it STARTED, and the provider waits for
    # CREATED until it fails.
    from moto.emrserverless import models as emr

    create_application = emr.EMRServerlessBackend.create_application

    def create_application_any_case(self: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(kwargs.get("application_type"), str):
            kwargs["application_type"] = kwargs["application_type"].upper()
        application = create_application(self, *args, **kwargs)
        application.state = "CREATED"
        # AWS reports the architecture (default X86_64; the provider reads it back); moto keeps none. The kit never
        # sets it, so the emulator reports AWS's default (an explicit ARM64 is not kept).
        application.architecture = "X86_64"  # type: ignore[attr-defined]
        return application

    emr.EMRServerlessBackend.create_application = create_application_any_case  # type: ignore[method-assign]

    # Lambda: moto 5.2.5 drops a function's LoggingConfig (CreateFunction, UpdateFunctionConfiguration) and never
    # reports it in GetFunction; AWS keeps it and reports it, with the defaults (Text, /aws/lambda/<name>) when unset.
    # The provider reads it back after apply: without it every plan wants to set it again.
    from moto.awslambda import models as awslambda

    fn_init = awslambda.LambdaFunction.__init__
    fn_config = awslambda.LambdaFunction.get_configuration
    fn_update = awslambda.LambdaFunction.update_configuration

    def _logging(name: str, given: dict[str, Any] | None) -> dict[str, Any]:
        return {"LogFormat": "Text", "LogGroup": f"/aws/lambda/{name}", **(given or {})}

    def init_with_logging(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        fn_init(self, account_id, spec, *args, **kwargs)
        self.kit_logging_config = _logging(self.function_name, spec.get("LoggingConfig"))

    def config_with_logging(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = fn_config(self, *args, **kwargs)
        out["LoggingConfig"] = getattr(self, "kit_logging_config", _logging(self.function_name, None))
        return out

    def update_with_logging(self: Any, config_updates: dict[str, Any]) -> dict[str, Any]:
        if "LoggingConfig" in config_updates:
            self.kit_logging_config = _logging(self.function_name, config_updates["LoggingConfig"])
        return fn_update(self, config_updates)

    awslambda.LambdaFunction.__init__ = init_with_logging  # type: ignore[method-assign]
    awslambda.LambdaFunction.get_configuration = config_with_logging  # type: ignore[method-assign]
    awslambda.LambdaFunction.update_configuration = update_with_logging  # type: ignore[method-assign]
    _PATCHED = True


def _backend(account: str, region: str) -> Any:
    from moto.s3tables.models import s3tables_backends

    return s3tables_backends[account][region]


def _s3_backend(account: str, partition: str = "aws") -> Any:
    from moto.s3.models import s3_backends

    return s3_backends[account][partition]


def get_bucket(bucket_arn: str) -> Any:
    m = _BUCKET_ARN_RE.match(bucket_arn or "")
    if not m:
        raise bad_request(f"The specified table bucket ARN is not valid: {bucket_arn}")
    bucket = _backend(m.group(3), m.group(2)).table_buckets.get(bucket_arn)
    if bucket is None:
        raise not_found(BUCKET_NOT_FOUND)
    return bucket


def get_table_by_name(bucket_arn: str, namespace: str, name: str) -> Any:
    bucket = get_bucket(bucket_arn)
    ns = bucket.namespaces.get(namespace)
    if ns is None or name not in ns.tables:
        raise not_found(TABLE_NOT_FOUND)
    return ns.tables[name]


_ARN_INDEX: dict[str, Any] = {}  # table ARN -> table; a cache, checked against the bucket on every hit


def get_table_by_arn(table_arn: str) -> Any:
    m = _TABLE_ARN_RE.match(table_arn or "")
    if not m:
        raise bad_request(f"The specified table ARN is not valid: {table_arn}")
    bucket_arn = table_arn.split("/table/")[0]
    try:
        bucket = get_bucket(bucket_arn)
    except ApiError:
        raise not_found(TABLE_NOT_FOUND) from None
    hit = _ARN_INDEX.get(table_arn)
    if hit is not None:
        ns = bucket.namespaces.get(hit.namespace)
        if ns is not None and ns.tables.get(hit.name) is hit and hit.arn == table_arn:
            return hit  # still the same table in the same bucket (not deleted, renamed or reset since)
    found = None
    for ns in bucket.namespaces.values():  # a miss re-indexes the whole bucket: O(1) per lookup at 10,000 tables
        for t in ns.tables.values():
            _ARN_INDEX[t.arn] = t
            if t.arn == table_arn:
                found = t
    if found is None:
        raise not_found(TABLE_NOT_FOUND)
    return found


# ----------------------------------------------------------------------------------------------------
# Extension state
# ----------------------------------------------------------------------------------------------------


@dataclass
class Fault:
    """Fail matching requests with an error: the first `remaining` of them (a burst), or, with `share` < 1, a
    deterministic share of them (throttling). Each request is decided by a hash of (`seed`, the request, how many
    times this same request was seen before), so the outcome does not depend on thread interleaving and a retry of
    a throttled request gets a fresh, equally deterministic draw."""

    operation: str  # botocore/S3 operation name (GetTableReplicationStatus, GetObject, ...) or "*" (any)
    remaining: int  # requests still to fail; -1: no limit (use with `share`)
    code: str = "TooManyRequestsException"  # the s3tables/organizations model's throttling error
    status: int = 429
    message: str = "Rate exceeded"
    match: str | None = None  # substring of the decoded request URI/body that must occur
    share: float = 1.0  # fraction of matching requests that fail
    seed: int = 0
    service: str | None = None  # SigV4 signing name (s3tables, s3, monitoring, ...); None: any service
    served: int = 0
    seen: int = 0  # matching requests considered (failed or not)
    repeats: dict[str, int] = field(default_factory=dict, repr=False)  # request digest -> times seen

    def applies(self, service: str | None, op: str, haystack: str) -> bool:
        if self.operation not in ("*", op) or self.remaining == 0:
            return False
        if self.service is not None and self.service != service:
            return False
        if self.match is not None and self.match not in haystack:
            return False
        self.seen += 1
        if self.share < 1.0:
            digest = hashlib.sha256(f"{op}\n{haystack}".encode()).hexdigest()
            n = self.repeats.get(digest, 0)
            self.repeats[digest] = n + 1
            draw = int(hashlib.sha256(f"{self.seed}:{digest}:{n}".encode()).hexdigest()[:15], 16) / 16**15
            if draw >= self.share:
                return False
        if self.remaining > 0:
            self.remaining -= 1
        self.served += 1
        return True

    def view(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "repeats"}


@dataclass
class State:
    bucket_policies: dict[str, str] = field(default_factory=dict)
    table_policies: dict[str, str] = field(default_factory=dict)
    table_maintenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    bucket_maintenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    bucket_encryption: dict[str, dict[str, Any]] = field(default_factory=dict)
    storage_class: dict[str, str] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # table bucket or table ARN -> AWS resource tags
    table_replication: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # table ARN -> {configuration, versionToken}
    bucket_replication: dict[str, dict[str, Any]] = field(default_factory=dict)
    repl_status: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (source table, dest bucket)
    replica_source: dict[str, str] = field(default_factory=dict)  # replica table ARN -> source table ARN
    detached: dict[str, str] = field(default_factory=dict)  # disassociated replica ARN -> its former source ARN
    latency: dict[str, float] = field(default_factory=dict)  # operation -> seconds added to every call
    service_latency: dict[str, float] = field(default_factory=dict)  # signing name -> seconds (unless per op)
    faults: list[Fault] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    s3_calls: dict[str, int] = field(default_factory=dict)  # "<bucket> <S3 operation>" -> count (table storage)
    s3_refused: list[str] = field(default_factory=list)  # "<bucket> <operation> <key>" refused as S3 Tables does
    in_flight: int = 0
    max_in_flight: int = 0


STATE = State()
LOCK = threading.RLock()


def reset_state() -> None:
    global STATE
    with LOCK:
        STATE = State()
        _ARN_INDEX.clear()
        resource_policy.ENFORCED.clear()
        live.reset()


# ----------------------------------------------------------------------------------------------------
# Operation matching from the botocore model
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    op: str
    method: str
    regex: re.Pattern[str]
    literal_len: int


def _routes() -> list[Route]:
    model = botocore.session.get_session().get_service_model("s3tables")
    routes = []
    for op in model.operation_names:
        http = model.operation_model(op).http
        path = http["requestUri"].split("?")[0]
        pattern = re.sub(r"\{(\w+)\+?\}", lambda m: f"(?P<{m.group(1)}>[^/]+)", path)
        literal = len(re.sub(r"\{[^}]+\}", "", path))
        routes.append(Route(op, http["method"], re.compile(f"^{pattern}$"), literal))
    routes.sort(key=lambda r: -r.literal_len)
    return routes


ROUTES = _routes()


def match_route(method: str, raw_path: str) -> tuple[str, dict[str, str]] | None:
    for r in ROUTES:
        if r.method != method:
            continue
        m = r.regex.match(raw_path)
        if m:
            return r.op, {k: unquote(v) for k, v in m.groupdict().items()}
    return None


# ----------------------------------------------------------------------------------------------------
# Handlers (operation -> function(params, query, body) -> (status, body dict | None))
# ----------------------------------------------------------------------------------------------------

RAW_QUERY = "__raw_query__"  # the whole query string, beside the first value of each parameter
Handler = Callable[[dict[str, str], dict[str, str], dict[str, Any]], tuple[int, dict[str, Any] | None]]
HANDLERS: dict[str, Handler] = {}


def handles(op: str) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        HANDLERS[op] = fn
        return fn

    return deco


def _new_token() -> str:
    return uuid.uuid4().hex


def _table_view(t: Any) -> dict[str, Any]:
    out = {
        "name": t.name,
        "type": t.type,
        "tableARN": t.arn,
        "namespace": [t.namespace],
        "versionToken": t.version_token,
        "warehouseLocation": t.warehouse_location,
        "createdAt": _iso(t.creation_date),
        "createdBy": t.account_id,
        "modifiedAt": _iso(t.last_modified),
        "modifiedBy": t.modified_by or t.account_id,
        "ownerAccountId": t.account_id,
        "format": t.format,
        "tableBucketId": t.table_bucket_arn.rsplit("/", 1)[1],
    }
    if t.metadata_location:
        out["metadataLocation"] = t.metadata_location
    src = STATE.replica_source.get(t.arn)
    if src:
        out["managedByService"] = MANAGED_BY_REPLICATION
        out["managedTableInformation"] = {"replicationInformation": {"sourceTableARN": src}}
    return out


def _summary_view(t: Any) -> dict[str, Any]:
    out = {
        "namespace": [t.namespace],
        "name": t.name,
        "type": t.type,
        "tableARN": t.arn,
        "createdAt": _iso(t.creation_date),
        "modifiedAt": _iso(t.last_modified),
    }
    if t.arn in STATE.replica_source:
        out["managedByService"] = MANAGED_BY_REPLICATION
    return out


@handles("GetTable")
def get_table(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    if q.get("tableArn"):
        if any(q.get(k) for k in ("tableBucketARN", "namespace", "name")):
            raise bad_request("Specify either tableArn or tableBucketARN, namespace and name, not both.")  # our wording
        return 200, _table_view(get_table_by_arn(q["tableArn"]))
    if not all(q.get(k) for k in ("tableBucketARN", "namespace", "name")):
        raise bad_request("Either tableArn or tableBucketARN, namespace and name must be specified.")  # our wording
    return 200, _table_view(get_table_by_name(q["tableBucketARN"], q["namespace"], q["name"]))


@handles("ListTables")
def list_tables(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    m = _BUCKET_ARN_RE.match(bucket.arn)
    assert m
    max_tables = int(q["maxTables"]) if q.get("maxTables") else None
    if max_tables is not None and not 1 <= max_tables <= 1000:
        raise bad_request("maxTables must be between 1 and 1000.")
    if q.get("namespace") and q["namespace"] not in bucket.namespaces:  # moto answers 500
        raise not_found("The specified namespace does not exist.")
    backend = _backend(m.group(3), m.group(2))
    tables, token = backend.list_tables(
        table_bucket_arn=bucket.arn,
        namespace=q.get("namespace"),
        prefix=q.get("prefix"),
        continuation_token=q.get("continuationToken"),
        max_tables=max_tables,
    )
    out: dict[str, Any] = {"tables": [_summary_view(t) for t in tables]}
    if token:
        out["continuationToken"] = token
    return 200, out


# ---- policies ----


def _check_policy(doc: str) -> None:
    try:
        parsed = json.loads(doc)
    except ValueError:
        raise bad_request("The policy document is not valid JSON.") from None  # our wording
    if not isinstance(parsed, dict) or "Statement" not in parsed:
        raise bad_request("The policy document must be a JSON object with a Statement.")  # our wording


@handles("PutTableBucketPolicy")
def put_bucket_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    _check_policy(b["resourcePolicy"])
    STATE.bucket_policies[bucket.arn] = b["resourcePolicy"]
    return 200, {}


@handles("GetTableBucketPolicy")
def get_bucket_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    if bucket.arn not in STATE.bucket_policies:
        raise not_found(NO_POLICY)
    return 200, {"resourcePolicy": STATE.bucket_policies[bucket.arn]}


@handles("DeleteTableBucketPolicy")
def delete_bucket_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    STATE.bucket_policies.pop(bucket.arn, None)
    return 204, None


@handles("PutTablePolicy")
def put_table_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    _check_policy(b["resourcePolicy"])
    STATE.table_policies[t.arn] = b["resourcePolicy"]
    return 200, {}


@handles("GetTablePolicy")
def get_table_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    if t.arn not in STATE.table_policies:
        raise not_found(NO_POLICY)
    return 200, {"resourcePolicy": STATE.table_policies[t.arn]}


@handles("DeleteTablePolicy")
def delete_table_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    STATE.table_policies.pop(t.arn, None)
    return 204, None


# ---- maintenance ----


def _check_maintenance(kind: str, value: dict[str, Any], allowed: tuple[str, ...]) -> None:
    if kind not in allowed:
        raise bad_request(f"The maintenance type {kind} is not valid.")  # our wording
    settings = value.get("settings") or {}
    if settings and set(settings) != {kind}:
        raise bad_request(f"The settings do not match the maintenance type {kind}.")  # our wording
    for k, v in (settings.get(kind) or {}).items():
        if isinstance(v, int) and v < 1:
            raise bad_request(f"{k} must be at least 1.")


@handles("PutTableMaintenanceConfiguration")
def put_table_maintenance(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    kind = p["type"]
    _check_maintenance(kind, b["value"], ("icebergCompaction", "icebergSnapshotManagement"))
    if kind == "icebergCompaction" and t.arn in STATE.replica_source:
        # docs/aws-facts.md#replication; our wording
        raise bad_request("Compaction is not supported on replica tables.")
    current = STATE.table_maintenance.setdefault(t.arn, {})
    merged = json.loads(json.dumps(DEFAULT_MAINTENANCE[kind]))
    merged["status"] = b["value"].get("status", merged["status"])
    if b["value"].get("settings"):
        merged["settings"][kind].update(b["value"]["settings"][kind])
    current[kind] = merged
    return 204, None


@handles("GetTableMaintenanceConfiguration")
def get_table_maintenance(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    conf = json.loads(json.dumps(DEFAULT_MAINTENANCE))
    conf.update(STATE.table_maintenance.get(t.arn, {}))
    return 200, {"tableARN": t.arn, "configuration": conf}


@handles("PutTableBucketMaintenanceConfiguration")
def put_bucket_maintenance(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    _check_maintenance(p["type"], b["value"], ("icebergUnreferencedFileRemoval",))
    STATE.bucket_maintenance.setdefault(bucket.arn, {})[p["type"]] = b["value"]
    return 204, None


@handles("GetTableBucketMaintenanceConfiguration")
def get_bucket_maintenance(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    conf = {
        "icebergUnreferencedFileRemoval": {
            "status": "enabled",
            "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 3, "nonCurrentDays": 10}},
        }
    }
    conf.update(STATE.bucket_maintenance.get(bucket.arn, {}))
    return 200, {"tableBucketARN": bucket.arn, "configuration": conf}


# ---- encryption and storage class ----


@handles("PutTableBucketEncryption")
def put_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    enc = b["encryptionConfiguration"]
    if enc.get("sseAlgorithm") == "aws:kms" and not enc.get("kmsKeyArn"):
        raise bad_request("A KMS key ARN is required with aws:kms.")  # our wording
    if enc.get("sseAlgorithm") == "AES256" and enc.get("kmsKeyArn"):
        raise bad_request("A KMS key ARN is only valid with aws:kms.")  # our wording
    STATE.bucket_encryption[bucket.arn] = enc
    return 200, {}


@handles("GetTableBucketEncryption")
def get_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"encryptionConfiguration": STATE.bucket_encryption.get(bucket.arn, {"sseAlgorithm": "AES256"})}


@handles("DeleteTableBucketEncryption")
def delete_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    STATE.bucket_encryption.pop(bucket.arn, None)
    return 204, None


@handles("GetTableBucketStorageClass")
def get_storage_class(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"storageClassConfiguration": {"storageClass": STATE.storage_class.get(bucket.arn, "STANDARD")}}


@handles("PutTableBucketStorageClass")
def put_storage_class(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    STATE.storage_class[bucket.arn] = b["storageClassConfiguration"]["storageClass"]
    return 200, {}


@handles("GetTableEncryption")
def get_table_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    """A table's encryption: the bucket's (what a table created without its own encryption gets; the emulator does not
    keep a per-table setting)."""
    get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"encryptionConfiguration": STATE.bucket_encryption.get(bucket.arn, {"sseAlgorithm": "AES256"})}


@handles("GetTableStorageClass")
def get_table_storage_class(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    """A table's storage class: the bucket's (a table takes the bucket's class when it is created)."""
    get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"storageClassConfiguration": {"storageClass": STATE.storage_class.get(bucket.arn, "STANDARD")}}


def _tagged_resource(arn: str) -> str:
    """The ARN of an existing table bucket or table (NotFound otherwise)."""
    if _TABLE_ARN_RE.match(arn):
        return str(get_table_by_arn(arn).arn)
    return str(get_bucket(arn).arn)


@handles("TagResource")
def tag_resource(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    arn = _tagged_resource(p["resourceArn"])
    STATE.tags.setdefault(arn, {}).update(b.get("tags") or {})
    return 200, {}


@handles("UntagResource")
def untag_resource(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    arn = _tagged_resource(p["resourceArn"])
    for key in parse_qs(q.get(RAW_QUERY, "")).get("tagKeys", []):
        STATE.tags.get(arn, {}).pop(key, None)
    return 204, None


@handles("ListTagsForResource")
def list_tags(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    return 200, {"tags": dict(STATE.tags.get(_tagged_resource(p["resourceArn"]), {}))}


# ---- replication configuration ----


def _check_replication(conf: dict[str, Any], source_bucket_arn: str) -> None:
    if not _ROLE_RE.match(conf.get("role") or ""):
        raise bad_request("The role must be an IAM role ARN.")  # our wording
    rules = conf.get("rules") or []
    if len(rules) != 1:
        raise bad_request("Exactly one replication rule must be specified.")  # our wording (model: min 1, max 1)
    dests = [d.get("destinationTableBucketARN") for d in rules[0].get("destinations") or []]
    if not 1 <= len(dests) <= 5:
        raise bad_request("A replication rule must have between 1 and 5 destinations.")  # our wording
    if len(set(dests)) != len(dests):
        raise bad_request("Duplicate destination table buckets are not allowed.")  # our wording
    for d in dests:
        if not _BUCKET_ARN_RE.match(d or ""):
            raise bad_request(f"The destination table bucket ARN is not valid: {d}")
        if d == source_bucket_arn:
            raise bad_request("The destination table bucket must not be the source table bucket.")  # our wording


def _put_versioned(store: dict[str, dict[str, Any]], key: str, conf: dict[str, Any], token: str | None) -> str:
    existing = store.get(key)
    if existing is not None:
        if not token:
            raise bad_request(NO_VERSION_TOKEN)
        if token != existing["versionToken"]:
            raise conflict(TOKEN_MISMATCH)
    new_token = _new_token()
    store[key] = {"configuration": conf, "versionToken": new_token}
    return new_token


def _delete_versioned(store: dict[str, dict[str, Any]], key: str, token: str | None) -> None:
    existing = store.get(key)
    if existing is None:
        raise not_found(NO_REPLICATION)
    if not token:
        raise bad_request(NO_VERSION_TOKEN)
    if token != existing["versionToken"]:
        raise conflict(TOKEN_MISMATCH)
    del store[key]  # existing replicas stay (docs/aws-facts.md#replication)


@handles("PutTableReplication")
def put_table_replication(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_arn(q.get("tableArn", ""))
    _check_replication(b["configuration"], t.table_bucket_arn)
    token = _put_versioned(STATE.table_replication, t.arn, b["configuration"], q.get("versionToken"))
    return 200, {"versionToken": token, "status": "ENABLED"}  # status value undocumented


@handles("GetTableReplication")
def get_table_replication(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_arn(q.get("tableArn", ""))
    if t.arn not in STATE.table_replication:
        raise not_found(NO_REPLICATION)
    return 200, STATE.table_replication[t.arn]


@handles("DeleteTableReplication")
def delete_table_replication(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_arn(q.get("tableArn", ""))
    _delete_versioned(STATE.table_replication, t.arn, q.get("versionToken"))
    return 204, None


@handles("PutTableBucketReplication")
def put_bucket_replication(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(q.get("tableBucketARN", ""))
    _check_replication(b["configuration"], bucket.arn)
    token = _put_versioned(STATE.bucket_replication, bucket.arn, b["configuration"], q.get("versionToken"))
    return 200, {"versionToken": token, "status": "ENABLED"}


@handles("GetTableBucketReplication")
def get_bucket_replication(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(q.get("tableBucketARN", ""))
    if bucket.arn not in STATE.bucket_replication:
        raise not_found(NO_REPLICATION)
    return 200, STATE.bucket_replication[bucket.arn]


@handles("DeleteTableBucketReplication")
def delete_bucket_replication(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(q.get("tableBucketARN", ""))
    _delete_versioned(STATE.bucket_replication, bucket.arn, q.get("versionToken"))
    return 204, None


@handles("DisassociateTableReplication")
def disassociate_table_replication(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    """Turn a replica into a standalone writable table in place, for good (docs/aws-facts.md#disassociating-a-replica).
    Maintenance settings are unchanged; the source's replication configuration is untouched (it still names the
    destination bucket)."""
    t = get_table_by_arn(q.get("tableArn", ""))
    source = STATE.replica_source.pop(t.arn, None)
    if source is None:
        raise bad_request(NOT_A_REPLICA)
    STATE.detached[t.arn] = source
    return 200, {}


def effective_destinations(table: Any) -> list[str] | None:
    """Table-level configuration overrides bucket-level for that table (docs/aws-facts.md#replication)."""
    conf = STATE.table_replication.get(table.arn) or STATE.bucket_replication.get(table.table_bucket_arn)
    if conf is None:
        return None
    return [d["destinationTableBucketARN"] for d in conf["configuration"]["rules"][0]["destinations"]]


@handles("GetTableReplicationStatus")
def get_replication_status(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_arn(q.get("tableArn", ""))
    dests = effective_destinations(t)
    if not dests:
        raise not_found(NO_REPLICATION)
    out = []
    for d in dests:
        st = STATE.repl_status.get((t.arn, d), {"replicationStatus": "pending"})
        item: dict[str, Any] = {"destinationTableBucketArn": d, "replicationStatus": st["replicationStatus"]}
        for k in ("destinationTableArn", "failureMessage"):
            if st.get(k):
                item[k] = st[k]
        if st.get("lastSuccessfulReplicatedUpdate"):
            lsu = st["lastSuccessfulReplicatedUpdate"]
            item["lastSuccessfulReplicatedUpdate"] = {
                "metadataLocation": lsu["metadataLocation"],
                "timestamp": _iso(_parse_ts(lsu["timestamp"])),
            }
        out.append(item)
    return 200, {"sourceTableArn": t.arn, "destinations": out}


# ---- writes refused on replicas (checked before the request reaches moto) ----

Guard = Callable[[dict[str, str], dict[str, str]], None]
GUARDS: dict[str, Guard] = {}


def _replica_read_only(p: dict[str, str], q: dict[str, str]) -> None:
    try:
        t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    except ApiError:
        return  # moto answers for a table that does not exist
    if t.arn in STATE.replica_source:
        raise ApiError("ForbiddenException", REPLICA_READ_ONLY, 403)


GUARDS["UpdateTableMetadataLocation"] = _replica_read_only


# ----------------------------------------------------------------------------------------------------
# Test control endpoint (/_kit_test/...)
# ----------------------------------------------------------------------------------------------------


def write_metadata(table: Any, doc: dict[str, Any], version: int) -> str:
    """Write an Iceberg metadata JSON into the table's warehouse (its moto S3 bucket) and return its
    location."""
    bucket_name = table.warehouse_location.removeprefix("s3://")
    key = f"metadata/{version:05d}-{uuid.uuid4()}.metadata.json"
    _s3_backend(table.account_id, table.partition).put_object(
        bucket_name=bucket_name, key_name=key, value=json.dumps(doc).encode()
    )
    return f"{table.warehouse_location}/{key}"


def metadata_doc(table: Any, commit_ms: Iterable[int]) -> dict[str, Any]:
    """A minimal Iceberg v2 metadata document with one snapshot per commit time."""
    commits = sorted(commit_ms)
    snaps = [
        {"snapshot-id": i + 1, "timestamp-ms": ms, "summary": {"operation": "append"}} for i, ms in enumerate(commits)
    ]
    return {
        "format-version": 2,
        "table-uuid": getattr(table, "table_id", str(uuid.uuid4())),
        "location": table.warehouse_location,
        "last-updated-ms": commits[-1] if commits else 0,
        "current-snapshot-id": len(commits) if commits else -1,
        "snapshots": snaps,
        "snapshot-log": [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in snaps],
        "metadata-log": [],
        # a one-column schema, unpartitioned: enough for readers that parse the table (the recovery planner)
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
        ],
        "current-schema-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "default-spec-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "properties": {},
    }


def _control(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if path == "health":  # the pid tells a starting Emulator that the server answering is its own child
        return {"ok": True, "pid": os.getpid()}
    if path == "reset":
        from moto.moto_api._internal.models import moto_api_backend

        moto_api_backend.reset()
        reset_state()
        return {"ok": True}
    if path.startswith("live/"):  # make live-verify's authorization, replication service and switches
        return live.control(path.removeprefix("live/"), body)
    if path == "faults":
        for f in body.get("faults", []):
            STATE.faults.append(Fault(**f))
        return {"ok": True}
    if path == "latency":
        if body.get("operation"):
            STATE.latency[body["operation"]] = float(body["seconds"])
        if body.get("service"):
            STATE.service_latency[body["service"]] = float(body["seconds"])
        return {"ok": True}
    if path == "stats":
        return {
            "calls": dict(STATE.calls),
            "s3_calls": dict(STATE.s3_calls),
            "s3_refused": list(STATE.s3_refused),
            "max_in_flight": STATE.max_in_flight,
            "faults": [f.view() for f in STATE.faults],
        }
    if path == "replication-status":
        for item in body.get("items", [body]):
            key = (item["sourceTableArn"], item["destinationTableBucketArn"])
            st = {k: v for k, v in item.items() if k not in ("sourceTableArn", "destinationTableBucketArn")}
            st["replicationStatus"] = st["replicationStatus"].lower()
            if st.get("merge"):
                merged = dict(STATE.repl_status.get(key, {}))
                merged.update({k: v for k, v in st.items() if k != "merge"})
                st = merged
            STATE.repl_status[key] = st
        return {"ok": True}
    if path == "replicate":
        return {"replicated": _replicate(body)}
    if path == "enforce-policies":
        return resource_policy.control(body)
    if path == "seed":
        return {"tables": _seed(body)}
    if path == "accounts":
        return {"accounts": _seed_accounts(body["accounts"])}
    if path == "organization":
        return _seed_organization(body)
    raise not_found(f"unknown control path {path}")


E2E_USER = "kit-e2e"


def _seed_accounts(accounts: list[str]) -> dict[str, dict[str, str]]:
    """One IAM user with an access key in each account (idempotent). moto serves a request as the account that holds
    its access key, so a client with the key of account A creates and reads A's resources: the configuration's own
    account ids, not moto's default account."""
    from moto.iam.models import iam_backends

    out = {}
    for account in accounts:
        iam = iam_backends[account]["aws"]
        if E2E_USER not in iam.users:
            iam.create_user(region_name="us-east-1", user_name=E2E_USER)
        keys = iam.list_access_keys(E2E_USER) or [iam.create_access_key(E2E_USER)]
        out[account] = {"accessKeyId": keys[0].access_key_id, "secretAccessKey": keys[0].secret_access_key}
    return out


def _seed_organization(body: dict[str, Any]) -> dict[str, Any]:
    """An organization whose management account is `managementAccountId`, with the organizational units of the
    configuration under their own ids (`ous`: {ou id: [member account ids]}) and `accounts` (direct members).
    Idempotent. moto creates OUs and accounts only with random ids, so they are placed in its backend here."""
    from moto.organizations.models import FakeAccount, FakeOrganizationalUnit, organizations_backends

    management = body["managementAccountId"]
    org_backend = organizations_backends[management]["aws"]
    if org_backend.org is None:
        org_backend.create_organization(region="us-east-1", FeatureSet="ALL")
    org = org_backend.org
    assert org is not None
    known_accounts = {a.id for a in org_backend.accounts}

    def member(account: str, parent: str) -> None:
        if account in known_accounts or account == management:
            return
        acct = FakeAccount(org, AccountName=f"kit-{account}", Email=f"{account}@example.invalid")
        acct.id = account
        acct.parent_id = parent
        org_backend.accounts.append(acct)
        organizations_backends.master_accounts[account] = (management, "aws")
        known_accounts.add(account)

    for ou_id, accounts in sorted(body.get("ous", {}).items()):
        if not any(o.id == ou_id for o in org_backend.ou):
            ou = FakeOrganizationalUnit(org, Name=ou_id, ParentId=org.root_id)
            ou.id = ou_id
            org_backend.ou.append(ou)
        for account in accounts:
            member(account, ou_id)
    for account in body.get("accounts", []):
        member(account, org.root_id)
    return {"organizationId": org.id, "rootId": org.root_id}


def _replicate(body: dict[str, Any]) -> list[dict[str, str]]:
    """Simulate the replication service: for each source table (one ARN or every table in a bucket) and each
    destination of its effective configuration, create or update the replica (same namespace and name,
    metadata
    copied into the replica's warehouse) and mark the destination COMPLETED at `timestamp` (default now)."""
    if body.get("sourceTableArn"):
        tables = [get_table_by_arn(body["sourceTableArn"])]
    else:
        bucket = get_bucket(body["sourceBucketArn"])
        tables = [t for ns in bucket.namespaces.values() for t in ns.tables.values()]
    when = _parse_ts(body["timestamp"]) if body.get("timestamp") else dt.datetime.now(dt.UTC)
    only = body.get("destinations")
    done = []
    for t in tables:
        for d in effective_destinations(t) or []:
            if only and d not in only:
                continue
            dbucket = get_bucket(d)
            m = _BUCKET_ARN_RE.match(d)
            assert m
            backend = _backend(m.group(3), m.group(2))
            if t.namespace not in dbucket.namespaces:
                backend.create_namespace(table_bucket_arn=d, namespace=t.namespace)
            ns = dbucket.namespaces[t.namespace]
            replica = ns.tables.get(t.name)
            if replica is not None and replica.arn in STATE.detached:
                # Disassociated: never updated again; the source reports the destination FAILED from now on.
                previous = STATE.repl_status.get((t.arn, d), {})
                STATE.repl_status[(t.arn, d)] = {
                    **previous,
                    "replicationStatus": "failed",
                    "destinationTableArn": replica.arn,
                    "failureMessage": DETACHED_FAILURE,
                }
                continue
            if replica is None:
                replica = backend.create_table(table_bucket_arn=d, namespace=t.namespace, name=t.name, format="ICEBERG")
            STATE.replica_source[replica.arn] = t.arn
            doc: dict[str, Any] = {}
            if t.metadata_location:
                src_bucket = t.warehouse_location.removeprefix("s3://")
                key = t.metadata_location.removeprefix(t.warehouse_location + "/")
                obj = _s3_backend(t.account_id, t.partition).get_object(src_bucket, key)
                doc = json.loads(obj.value)
                doc["location"] = replica.warehouse_location  # paths rewritten for the destination
            else:
                doc = metadata_doc(replica, [])
            replica.metadata_location = write_metadata(replica, doc, len(doc.get("metadata-log", [])) + 1)
            replica.version_token = replica._generate_version_token()
            replica.was_modified(by=replica.account_id)
            STATE.repl_status[(t.arn, d)] = {
                "replicationStatus": "completed",
                "destinationTableArn": replica.arn,
                "lastSuccessfulReplicatedUpdate": {
                    "metadataLocation": replica.metadata_location,
                    "timestamp": _iso(when),
                },
            }
            done.append({"source": t.arn, "replica": replica.arn})
    return done


def _seed(body: dict[str, Any]) -> list[str]:
    """Bulk-create tables (each with a metadata document committed at `commitMs`) in one bucket; a table that exists
    already gets that commit (what a writer's first commit to a table Terraform created does)."""
    bucket = get_bucket(body["bucketArn"])
    m = _BUCKET_ARN_RE.match(bucket.arn)
    assert m
    backend = _backend(m.group(3), m.group(2))
    arns = []
    for ns_name, names in body["namespaces"].items():
        if ns_name not in bucket.namespaces:
            backend.create_namespace(table_bucket_arn=bucket.arn, namespace=ns_name)
        for name in names:
            t = bucket.namespaces[ns_name].tables.get(name) or backend.create_table(
                table_bucket_arn=bucket.arn, namespace=ns_name, name=name, format="ICEBERG"
            )  # an existing table (e.g. one Terraform created) gets the commit as its next metadata
            if body.get("commitMs"):
                t.metadata_location = write_metadata(t, metadata_doc(t, [int(body["commitMs"])]), 1)
                t.version_token = t._generate_version_token()
            arns.append(t.arn)
    return arns


# ----------------------------------------------------------------------------------------------------
# The middleware
# ----------------------------------------------------------------------------------------------------


def _service_of(environ: dict[str, Any]) -> str | None:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    m = re.search(r"Credential=[^/]+/\d+/[^/]+/([^/]+)/aws4_request", auth)
    return m.group(1) if m else None


def _json_response(
    start_response: Any,
    status: int,
    body: dict[str, Any] | None,
    headers: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    reasons = {
        200: "OK",
        204: "No Content",
        400: "Bad Request",
        403: "Forbidden",
        404: "Not Found",
        409: "Conflict",
        429: "Too Many Requests",
        500: "Internal Server Error",
    }
    data = b"" if body is None or status == 204 else json.dumps(body).encode()
    hdrs = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))] + (headers or [])
    start_response(f"{status} {reasons.get(status, 'Error')}", hdrs)
    return [data]


def _error(start_response: Any, err: ApiError) -> list[bytes]:
    return _json_response(
        start_response,
        err.status,
        {"__type": err.code, "message": err.message},
        [("x-amzn-ErrorType", err.code)],
    )


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


def _delay(service: str | None, op: str) -> None:
    """The configured latency of one request: per operation if set, else per service (a Region round trip)."""
    seconds = STATE.latency.get(op) or STATE.service_latency.get(service or "", 0.0)
    if seconds:
        time.sleep(seconds)


def _fault(service: str | None, op: str, haystack: Callable[[], str]) -> Fault | None:
    """The fault that fails this request, if any (call with LOCK held)."""
    candidates = [f for f in STATE.faults if f.operation in ("*", op) and f.remaining != 0]
    if not candidates:
        return None
    text = haystack()
    return next((f for f in candidates if f.applies(service, op, text)), None)


class KitMotoApp:
    """WSGI application: control endpoint, fault injection, extended S3 Tables operations, then moto."""

    def __init__(self, moto_app: Any) -> None:
        self.moto_app = moto_app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        with LOCK:
            STATE.in_flight += 1
            STATE.max_in_flight = max(STATE.max_in_flight, STATE.in_flight)
        try:
            return self._handle(environ, start_response)
        finally:
            with LOCK:
                STATE.in_flight -= 1

    def _handle(self, environ: dict[str, Any], start_response: Any) -> Any:
        raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")
        raw_path, _, raw_query = raw_uri.partition("?")
        if not raw_query:
            raw_query = environ.get("QUERY_STRING", "")
        method = environ["REQUEST_METHOD"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body_bytes = environ["wsgi.input"].read(length) if length else b""

        if raw_path.startswith("/_kit_test/"):
            try:
                with LOCK:
                    out = _control(raw_path.removeprefix("/_kit_test/"), json.loads(body_bytes or b"{}"))
                return _json_response(start_response, 200, out)
            except ApiError as err:
                return _error(start_response, err)

        service = _service_of(environ)
        if service == "s3":
            refused = _table_storage(environ, method, raw_path, raw_query)
            if refused is not None:
                return _s3_error(start_response, 405, "MethodNotAllowed", refused)
            s3_op = s3_operation(
                environ,
                method,
                unquote(raw_path).lstrip("/").partition("/")[2],
                parse_qs(raw_query, keep_blank_values=True),
            )
            _delay(service, s3_op)
            with LOCK:
                s3_fault = _fault(service, s3_op, lambda: f"{method} {unquote(raw_uri)}")
            if s3_fault is not None:  # S3's throttling error is an XML `SlowDown` with HTTP 503
                return _s3_error(start_response, s3_fault.status, s3_fault.code, s3_fault.message)
        op: str | None = None
        params: dict[str, str] = {}
        if service == "s3tables":
            found = match_route(method, raw_path)
            if found:
                op, params = found
        elif environ.get("HTTP_X_AMZ_TARGET"):
            op = environ["HTTP_X_AMZ_TARGET"].rsplit(".", 1)[-1]

        if op:
            _delay(service, op)
            with LOCK:
                STATE.calls[op] = STATE.calls.get(op, 0) + 1
                fault = _fault(service, op, lambda: unquote(raw_uri) + body_bytes.decode("utf-8", "replace"))
            if fault is not None:
                return _error(start_response, ApiError(fault.code, fault.message, fault.status))

        if service == "s3tables" and op:
            with LOCK:
                denied = live.authorize(environ, op, params, {k: v[0] for k, v in parse_qs(raw_query).items()})
            if denied is not None:
                return _error(start_response, denied)

        if service == "s3tables" and op in GUARDS:
            query = {k: v[0] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
            try:
                with LOCK:
                    GUARDS[op](params, query)
            except ApiError as err:
                return _error(start_response, live.rewrite_error(op, err))

        if service == "s3tables" and op in resource_policy.CHECKED:
            with LOCK:
                denied = resource_policy.refusal(
                    op,
                    params,
                    environ,
                    STATE.bucket_policies,
                    STATE.table_policies,
                    lambda *a: str(get_table_by_name(*a).arn),
                )
            if denied is not None:
                return _error(start_response, ApiError(*denied))

        if service == "s3tables" and op in HANDLERS:
            query = {k: v[0] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
            query[RAW_QUERY] = raw_query  # a repeated parameter (UntagResource's tagKeys) needs every value
            try:
                request = json.loads(body_bytes) if body_bytes else {}
                with LOCK:
                    status, answer = live.rewrite_answer(op, *HANDLERS[op](params, query, request))
                return _json_response(start_response, status, answer)
            except ApiError as err:
                return _error(start_response, live.rewrite_error(op, err))

        # Hand the (already consumed) body back to moto.
        import io

        environ["wsgi.input"] = io.BytesIO(body_bytes)
        environ["CONTENT_LENGTH"] = str(len(body_bytes))
        if service == "s3tables" and op == "CreateTableBucket":
            return self._create_table_bucket(environ, start_response, body_bytes)
        return self.moto_app(environ, start_response)

    def _create_table_bucket(self, environ: dict[str, Any], start_response: Any, body_bytes: bytes) -> list[bytes]:
        """moto creates the bucket but drops its `encryptionConfiguration` and `storageClassConfiguration`; AWS keeps
        them (GetTableBucketEncryption / GetTableBucketStorageClass read them back), so they are recorded here once
        moto has answered with the new bucket's ARN."""
        answer: dict[str, str] = {}

        def capture(status: str, headers: Any, exc_info: Any = None) -> Any:
            answer["status"] = status
            return start_response(status, headers, exc_info)

        chunks = list(self.moto_app(environ, capture))
        request = json.loads(body_bytes or b"{}")
        if answer.get("status", "").startswith("200"):
            arn = json.loads(b"".join(chunks))["arn"]
            with LOCK:
                if request.get("encryptionConfiguration"):
                    STATE.bucket_encryption[arn] = request["encryptionConfiguration"]
                if request.get("storageClassConfiguration"):
                    STATE.storage_class[arn] = request["storageClassConfiguration"]["storageClass"]
        return chunks


def build_app() -> KitMotoApp:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    patch_moto()
    return KitMotoApp(DomainDispatcherApplication(create_backend_app))


live.bind(sys.modules[__name__])
