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
  `/_kit_test/replication-status` or simulate the service with `/_kit_test/replicate` (a backfill held PENDING or
  FAILED with `/_kit_test/replication-hold` stays so through it: a slow or a failing table);
* unset maintenance reads back AWS's defaults; unset bucket encryption reads back SSE-S3 (AES256);
* replicas are read-only (`UpdateTableMetadataLocation` refused) until `DisassociateTableReplication`
  (docs/aws-facts.md#disassociating-a-replica, botocore >= 1.44.7) turns one into a standalone writable table for
  good: `GetTable`/`ListTables` stop reporting it as managed, the replication simulation stops updating it and
  reports the destination FAILED the next time it runs;
* errors are rest-json errors: HTTP status + `x-amzn-ErrorType` + `{"__type", "message"}`.

Where the exact AWS wording of an error message is not documented the message is ours and says so in a
comment.

The pieces live by concern: `state` (errors, wording, state), `lookup` (buckets and tables by ARN), `moto_patches`,
`routing` (operation matching, handler registry), `tables`, `replication` and `streaming` (the handlers; `streaming`:
`PutRows` buffering, the service's deferred commit and `GetChannel`), `iceberg_rest` (the
Iceberg REST endpoint's loadTable), `storage` (table storage's S3 operations), `hooks` (the `/_kit_test/` control
endpoint); this module is the WSGI middleware.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, unquote

from emulator import (
    bucket_policy,
    cbor_rpc,
    hooks,
    hosts,
    iceberg_rest,
    lambda_policy,
    live,
    lookup,
    replication,
    resource_policy,
    served,
    state,
    streaming,
    tables,
)
from emulator.hooks import _control
from emulator.lookup import get_table_by_name
from emulator.moto_patches import patch_moto
from emulator.routing import GUARDS, HANDLERS, RAW_BODY, RAW_BODY_OPS, RAW_QUERY, match_route
from emulator.state import DETACHED_FAILURE, LOCK, STATE, ApiError, Fault
from emulator.storage import _s3_error, _table_storage, plain_read, s3_operation

# The handler modules register their operations on import; DETACHED_FAILURE is read by tests from here.
__all__ = ["DETACHED_FAILURE", "KitMotoApp", "build_app", "iceberg_rest", "replication", "streaming", "tables"]

# ----------------------------------------------------------------------------------------------------
# The middleware
# ----------------------------------------------------------------------------------------------------


def _serve_record(
    environ: dict[str, Any], service: str | None, method: str, raw_path: str, raw_query: str, body: bytes
) -> None:
    """The request's action under its principal (`emulator.served`); S3's as IAM names it, S3 Tables' by its route."""
    path = unquote(raw_path)
    op: str | None = None
    if service == "s3":
        key = path.lstrip("/").partition("/")[2]
        query = parse_qs(raw_query, keep_blank_values=True)
        op = bucket_policy.action_of(s3_operation(environ, method, key, query), method, key, query)
    elif service == "s3tables":
        found = match_route(method, raw_path) or iceberg_rest.match(method, raw_path)
        op = found[0] if found else None
    with LOCK:
        served.record(environ, service, op, path, body)


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


DELAY_AFTER = "kit.delay_after"
DEFER_DELAY = "kit.defer_delay"  # set by a front door that waits itself (emulator.loop_front): every delay comes after


def _first_values(raw_query: str, keep_blank: bool) -> dict[str, str]:
    """The first value of each query parameter (most S3 Tables requests have no query: nothing to parse)."""
    if not raw_query:
        return {}
    return {k: v[0] for k, v in parse_qs(raw_query, keep_blank_values=keep_blank).items()}


def _delay(service: str | None, op: str, environ: dict[str, Any]) -> None:
    """The configured latency of one request: per operation if set, else per service (a Region round trip). An
    operation set to be slow `after` its work has the delay recorded in the environ, for `KitMotoApp` to wait once
    the answer is ready."""
    with LOCK:
        after = op in STATE.latency_after
        seconds = STATE.latency.get(op) or STATE.service_latency.get(service or "", 0.0)
        left = STATE.latency_left.get(op)
        if left is not None and op in STATE.latency:
            if left <= 1:
                STATE.latency.pop(op, None)
                STATE.latency_left.pop(op, None)
            else:
                STATE.latency_left[op] = left - 1
    if seconds and (after or environ.get(DEFER_DELAY)):
        environ[DELAY_AFTER] = seconds
    elif seconds:
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
            answer = self._handle(environ, start_response)
            if environ.get(DELAY_AFTER) and not environ.get(DEFER_DELAY):  # the work is done; the answer is late
                answer = list(answer)
                time.sleep(float(environ[DELAY_AFTER]))
            return answer
        finally:
            with LOCK:
                STATE.in_flight -= 1

    def _handle(self, environ: dict[str, Any], start_response: Any) -> Any:
        raw_uri = hosts.origin_form(environ)  # a request sent to the emulator as a proxy: its path and query
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
        if served.enabled():
            _serve_record(environ, service, method, raw_path, raw_query, body_bytes)
        if service == "lambda":  # a function read from another account: its resource policy decides
            with LOCK:
                other = lambda_policy.cross_account_read(environ, method, raw_path)
            if other is not None and other[0] != 200:
                return _error(start_response, ApiError(other[1]["__type"], other[1]["Message"], other[0]))
            if other is not None:
                return _json_response(start_response, *other)
        s3control = hosts.s3control_host(environ, raw_path) if service == "s3" else None
        if s3control is not None:  # signed for `s3`, but S3 Control: moto routes it by AWS's host
            environ["HTTP_HOST"] = s3control
            service = "s3control"
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
            _delay(service, s3_op, environ)
            with LOCK:
                s3_fault = _fault(service, s3_op, lambda: f"{method} {unquote(raw_uri)}")
            if s3_fault is not None:  # S3's throttling error is an XML `SlowDown` with HTTP 503
                return _s3_error(start_response, s3_fault.status, s3_fault.code, s3_fault.message)
            with LOCK:
                policy_refusal = bucket_policy.refusal(
                    environ, s3_op, method, unquote(raw_path), parse_qs(raw_query, keep_blank_values=True), body_bytes
                )
            if policy_refusal is not None:
                return _s3_error(start_response, *policy_refusal)
            plain = plain_read(environ, method, raw_path, raw_query) if s3_op in ("GetObject", "HeadObject") else None
            if plain is not None:  # moto's answer without moto's request stack (emulator.storage)
                start_response(plain[0], plain[1])
                return [plain[2]]
        op: str | None = None
        params: dict[str, str] = {}
        if service == "s3tables":
            found = match_route(method, raw_path) or iceberg_rest.match(method, raw_path)
            if found:
                op, params = found
        cbor = cbor_rpc.match(environ, raw_path)  # the AWS SDK for Go v2's CloudWatch (hashicorp/aws 6.x)
        if cbor is not None:
            op = cbor[1]
        elif environ.get("HTTP_X_AMZ_TARGET"):
            op = environ["HTTP_X_AMZ_TARGET"].rsplit(".", 1)[-1]

        if op:
            _delay(service, op, environ)
            with LOCK:
                STATE.calls[op] = STATE.calls.get(op, 0) + 1
                fault = _fault(service, op, lambda: unquote(raw_uri) + body_bytes.decode("utf-8", "replace"))
            if fault is not None and cbor is not None:
                return cbor_rpc.respond(
                    start_response, fault.status, cbor_rpc.error_body(fault.code, fault.message), fault.code
                )
            if fault is not None:
                return _error(start_response, ApiError(fault.code, fault.message, fault.status))
        if cbor is not None:
            return cbor_rpc.serve(self.moto_app, environ, start_response, body_bytes, *cbor)

        if service == "s3tables" and op:
            query = _first_values(raw_query, keep_blank=False)
            for action in iceberg_rest.ACTIONS.get(op, (op,)):  # an Iceberg REST request needs each of its actions
                with LOCK:
                    denied = live.authorize(environ, action, params, query)
                if denied is not None:
                    return _error(start_response, denied)
            with LOCK:
                denied = live.authorize_setup(environ, op, body_bytes)
            if denied is not None:
                return _error(start_response, denied)

        if service == "s3tables" and op in GUARDS:
            query = _first_values(raw_query, keep_blank=True)
            try:
                with LOCK:
                    GUARDS[op](params, query)
            except ApiError as err:
                return _error(start_response, live.rewrite_error(op, err))

        if service == "s3tables" and op in resource_policy.CHECKED | resource_policy.READS:
            with LOCK:
                denied = resource_policy.refusal(
                    op,
                    params,
                    environ,
                    STATE.bucket_policies,
                    STATE.table_policies,
                    lambda *a: str(get_table_by_name(*a).arn),
                    lambda arn: str(lookup.get_table_by_arn(arn).table_bucket_arn),
                    _first_values(raw_query, keep_blank=False),
                )
            if denied is not None:
                return _error(start_response, ApiError(*denied))

        if service == "s3tables" and op in HANDLERS:
            query = _first_values(raw_query, keep_blank=True)
            query[RAW_QUERY] = raw_query  # a repeated parameter (UntagResource's tagKeys) needs every value
            try:
                if op in RAW_BODY_OPS:
                    request: dict[str, Any] = {RAW_BODY: body_bytes}
                else:
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
        """moto creates the bucket but drops its `encryptionConfiguration`, `storageClassConfiguration` and `tags`; AWS
        keeps them (GetTableBucketEncryption / GetTableBucketStorageClass / ListTagsForResource read them back), so
        they are recorded here once moto has answered with the new bucket's ARN."""
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
                if request.get("tags"):  # hashicorp/aws 6.x creates a tagged bucket so, and reads the tags back
                    STATE.tags.setdefault(arn, {}).update(request["tags"])
        return chunks


def build_app() -> KitMotoApp:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    patch_moto()
    return KitMotoApp(DomainDispatcherApplication(create_backend_app))


# emulator.live reads the extension's state and helpers through what it is handed here (an import of these modules
# there would make a circle through emulator.lookup, which resets live's state).
live.bind(
    SimpleNamespace(
        ApiError=ApiError,
        NOT_A_REPLICA=state.NOT_A_REPLICA,
        REPLICA_READ_ONLY=state.REPLICA_READ_ONLY,
        STATE=STATE,
        _replicate=hooks._replicate,
        effective_destinations=replication.effective_destinations,
        replication_role=replication.replication_role,
        get_table_by_arn=lookup.get_table_by_arn,
        get_table_by_name=lookup.get_table_by_name,
    )
)
