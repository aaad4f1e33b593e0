"""`loadTable` of the S3 Tables Iceberg REST endpoint: a table's metadata location and its metadata in one request.

The S3 Tables API needs two requests for the same answer (``GetTableMetadataLocation``, then a ``GetObject`` of the
file). `s3tables_kit.jobs.ops.status` reads every replica's metadata when it has no summary of it cached (its first run
on a machine, ``--no-cache``), so this halves its requests per replica (decision 0017).

The endpoint (AWS S3 user guide, "Accessing tables using the Amazon S3 Tables Iceberg REST endpoint"):
``https://s3tables.<region>.amazonaws.com/iceberg``, requests signed with SigV4 under the signing name ``s3tables``,
the table bucket's ARN as the warehouse. The operation is the Iceberg REST catalog's ``loadTable``:
``GET /v1/{prefix}/namespaces/{namespace}/tables/{table}``, the prefix being the table bucket's ARN, URL-encoded.
Its answer (``LoadTableResult``) carries ``metadata-location`` and ``metadata``. The endpoint translates the request
into S3 Tables operations, so it needs what the two-request path needs: ``s3tables:GetTableMetadataLocation`` and
``s3tables:GetTableData`` on the table.

The request uses the boto3 client's endpoint, credentials (refreshed as botocore refreshes them), CA bundle and
timeouts. Without a proxy or a client certificate it is signed and sent by `s3tables_kit.jobs.kernel.signed_get`
(botocore's SigV4 canonical form, a cached signing key, keep-alive connections: a fraction of botocore's CPU per
request); otherwise signed with botocore's `SigV4Auth` and sent over the client's HTTP session
(``client._endpoint.http_session`` is botocore's; its ``_proxy_config``, ``_cert_file`` and ``_verify`` are the
private attributes read here). pyiceberg's ``RestCatalog`` is not used: it builds a full table model of every
answer, which costs more CPU than the request saves.

Errors are raised as botocore ``ClientError`` (operation ``LoadTable``) so the kit's error handling applies
unchanged (`s3tables_kit.jobs.kernel.sdk.call`'s throttling backoff, `describe_error`, the tools' second pass).
Throttling, server errors and connection errors are retried here first, like botocore's standard mode: `MAX_ATTEMPTS`
attempts in all, exponential backoff with full jitter. An answer that says the endpoint itself is refused to this caller
(no permission, an unknown route, a method not allowed) sets `refused`: the callers then use the S3 Tables API for the
rest of the run, which answers the same question in two requests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import ClientError, ConnectionError, HTTPClientError, NoCredentialsError

from s3tables_kit.jobs.kernel.sdk import MAX_ATTEMPTS, THROTTLING_CODES, TRANSIENT_CODES, Backoff
from s3tables_kit.jobs.kernel.signed_get import Answer, SignedGet, Signer, escape

SIGNING_NAME = "s3tables"
OPERATION = "LoadTable"
# Iceberg REST errors (`ErrorModel.type`) that name a missing table or namespace: the table's answer, not the
# endpoint's refusal.
MISSING = frozenset({"NoSuchTableException", "NoSuchNamespaceException", "NotFoundException"})
# The pause before another attempt: full jitter, exponential from 50 ms, capped at 20 s.
PAUSE = Backoff(attempts=MAX_ATTEMPTS - 1, base=0.05, cap=20.0)
# HTTP statuses with no error type that botocore's standard mode retries.
_RETRIED_STATUS = {429: "TooManyRequestsException", 500: "InternalServerError", 502: "BadGateway",
                   503: "ServiceUnavailable", 504: "GatewayTimeout"}  # fmt: skip


@dataclass(frozen=True)
class LoadedTable:
    metadata_location: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class RestAnswer:
    """One answer of a signed GET: its status and body, and for an error its code and message (else empty)."""

    status: int
    body: bytes
    code: str
    message: str

    def client_error(self, operation: str) -> ClientError:
        """The error answer as the botocore ``ClientError`` of `operation`, so the kit's error handling applies."""
        error: Any = {
            "Error": {"Code": self.code, "Message": self.message},
            "ResponseMetadata": {"HTTPStatusCode": self.status},
        }
        return ClientError(error, operation)


def load_table_path(bucket_arn: str, namespace: str, name: str) -> str:
    """The loadTable path under the endpoint (pure): the prefix is the bucket ARN, each segment URL-encoded."""
    return "/v1/{}/namespaces/{}/tables/{}".format(*(escape(s) for s in (bucket_arn, namespace, name)))


def error_of(status: int, headers: Any, body: bytes) -> tuple[str, str]:
    """(code, message) of an error answer (pure): the AWS front door's ``x-amzn-ErrorType`` header and JSON
    ``message``, or the Iceberg REST ``ErrorModel`` (``{"error": {"type", "message", "code"}}``), or the HTTP
    status."""
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        parsed = {}
    doc: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
    found = doc.get("error")
    model: dict[str, Any] = found if isinstance(found, dict) else {}
    header = str(headers.get("x-amzn-ErrorType") or "").split(":", 1)[0]
    code = header or str(model.get("type") or doc.get("__type") or "") or _RETRIED_STATUS.get(status, f"HTTP{status}")
    message = str(model.get("message") or doc.get("message") or doc.get("Message") or "")
    return code.rsplit("#", 1)[-1], message


def refuses_endpoint(status: int, code: str) -> bool:
    """Whether an error answer refuses the endpoint to this caller, not one table (pure)."""
    if code in MISSING:
        return False
    return status in (400, 401, 403, 404, 405, 501)


class IcebergRest:
    """loadTable over one Region's (and account's) S3 Tables Iceberg REST endpoint. Thread-safe (the HTTP session
    is botocore's pooled one; `refused` only ever turns True)."""

    def __init__(self, s3tables_client: Any, credentials: Any, max_attempts: int = MAX_ATTEMPTS) -> None:
        self.endpoint = str(s3tables_client.meta.endpoint_url).rstrip("/") + "/iceberg"
        self.region = str(s3tables_client.meta.region_name)
        self._http = s3tables_client._endpoint.http_session  # the client's transport (module docstring)
        self._credentials = credentials
        self.max_attempts = max(1, max_attempts)
        self.refused = False
        self._lean: SignedGet | None = None
        proxies = getattr(self._http, "_proxy_config", None)
        proxied = proxies is not None and bool(proxies.proxy_url_for(self.endpoint))
        if not proxied and getattr(self._http, "_cert_file", None) is None:  # a client certificate: botocore's way
            conf = s3tables_client.meta.config
            self._lean = SignedGet(
                Signer(credentials, self.region, SIGNING_NAME),
                self.endpoint,
                getattr(self._http, "_verify", True),
                (float(conf.connect_timeout or 60), float(conf.read_timeout or 60)),
            )

    def _send(self, url: str) -> Answer:
        if self._credentials is None:  # as botocore answers a client without credentials
            raise NoCredentialsError()
        if self._lean is not None:
            return self._lean.get(url)
        request = AWSRequest(method="GET", url=url, headers={"Accept": "application/json"})
        SigV4Auth(self._credentials.get_frozen_credentials(), SIGNING_NAME, self.region).add_auth(request)
        response = self._http.send(request.prepare())
        return Answer(response.status_code, response.headers, response.content)

    def load_table(self, bucket_arn: str, namespace: str, name: str) -> LoadedTable:
        """The table's metadata location and metadata. Raises ClientError (``LoadTable``), botocore's connection
        errors once the attempts are spent, NoCredentialsError, or ValueError (an answer that is not a
        LoadTableResult)."""
        url = self.endpoint + load_table_path(bucket_arn, namespace, name)
        answer = self.get(url, ok=(200,))
        if answer.status == 200:
            doc = json.loads(answer.body)
            if not isinstance(doc, dict):
                raise ValueError("a loadTable answer is a JSON object")
            location, metadata = doc.get("metadata-location"), doc.get("metadata")
            if not isinstance(location, str) or not isinstance(metadata, dict):
                raise ValueError("a loadTable answer carries metadata-location and metadata")
            return LoadedTable(location, metadata)
        if refuses_endpoint(answer.status, answer.code):
            self.refused = True
        raise answer.client_error(OPERATION)

    def get(self, url: str, ok: Collection[int]) -> RestAnswer:
        """A signed GET of `url` over the client's transport, retried as the module docstring says: the answer once
        its status is in `ok` or the error is not retried (or the attempts are spent). Raises botocore's connection
        errors once the attempts are spent, NoCredentialsError."""
        for attempt in range(self.max_attempts):
            last = attempt + 1 >= self.max_attempts
            try:
                response = self._send(url)
            except (ConnectionError, HTTPClientError):
                if last:
                    raise
                time.sleep(PAUSE.delay(attempt))
                continue
            status, body = response.status, response.body
            if status in ok:
                return RestAnswer(status, body, "", "")
            code, message = error_of(status, response.headers, body)
            if (code in THROTTLING_CODES or code in TRANSIENT_CODES or status >= 500) and not last:
                time.sleep(PAUSE.delay(attempt))
                continue
            return RestAnswer(status, body, code, message)
        raise AssertionError("unreachable")
