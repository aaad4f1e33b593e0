"""GET operations of the S3 Tables API sent as signed GETs by the Iceberg REST endpoint's client
(`s3tables_kit.jobs.kernel.iceberg_rest.IcebergRest`, whose SigV4 signing name is the same, and its transport
`s3tables_kit.jobs.kernel.signed_get`), their paths taken from botocore's model of the operation.

A tool that reads a few things of every table of a lake (discovery, the audit) is bound by its client's CPU:
botocore's request serialisation and response parsing cost about a millisecond per request, a quarter of that here
(BENCHMARKS.md, "Discovery at scale"). The answer is the operation's JSON document as the service sends it; an error
is raised as botocore's ``ClientError`` of the operation (its code, message and HTTP status), so the callers' error
handling is the one they apply to the SDK's.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import quote

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.sdk import BucketRef, error_code
from s3tables_kit.jobs.kernel.signed_get import escape

# The error codes of an answer that says the thing asked for does not exist (a table, a policy, a configuration).
MISSING_CODES = frozenset({"NotFoundException", "NoSuchTableException", "NoSuchNamespaceException", "NoSuchKey"})


def is_missing(exc: BaseException) -> bool:
    """Whether an error says that what was asked for does not exist (a missing code, or HTTP 404)."""
    return isinstance(exc, ClientError) and (
        error_code(exc) in MISSING_CODES or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404
    )


@functools.lru_cache(maxsize=256)
def _operation_form(model: Any, operation: str) -> tuple[str, tuple[tuple[str, str | None, str], ...]]:
    """(path template, (member, location, name) of each input member) of an operation: read from the model once."""
    op = model.operation_model(operation)
    members = tuple(
        (member, shape.serialization.get("location"), shape.serialization.get("name", member))
        for member, shape in op.input_shape.members.items()
    )
    return str(op.http["requestUri"]).split("?", 1)[0], members


def operation_url(model: Any, endpoint: str, operation: str, params: dict[str, str]) -> str:
    """The URL of a GET operation of the s3tables model with `params` (its input members) in its path and query
    (pure given the model)."""
    path, members = _operation_form(model, operation)
    query: dict[str, str] = {}
    for member, where, name in members:
        if member not in params:
            continue
        if where == "uri":
            path = path.replace("{" + name + "}", escape(params[member]))
            if "{" + name + "+}" in path:
                path = path.replace("{" + name + "+}", quote(params[member], safe="/"))
        elif where == "querystring":
            query[name] = params[member]
    return endpoint + path + ("?" + "&".join(f"{escape(k)}={escape(v)}" for k, v in query.items()) if query else "")


def signed_call(clients: Clients, bucket_arn: str, operation: str, **params: str) -> dict[str, Any]:
    """One GET operation of S3 Tables in the bucket's Region and account: its JSON answer. Raises ClientError (with
    `operation` as its operation name) once the endpoint client's attempts are spent, or at once for an error that is
    not transient; botocore's connection errors likewise."""
    b = BucketRef(bucket_arn)
    client = clients.s3tables(b.region, b.account)
    rest = clients.iceberg_rest(b.region, b.account)
    url = operation_url(client.meta.service_model, str(client.meta.endpoint_url).rstrip("/"), operation, params)
    answer = rest.get(url, ok=(200, 204))  # the endpoint's signer, pooled session and retries
    if answer.status in (200, 204):
        doc = json.loads(answer.body) if answer.body else {}
        return doc if isinstance(doc, dict) else {}
    raise answer.client_error(operation)


def signed_get(clients: Clients, bucket_arn: str, operation: str, **params: str) -> dict[str, Any] | None:
    """`signed_call`, None when the answer says that the thing asked for does not exist (no policy, no replication
    configuration: `is_missing`)."""
    try:
        return signed_call(clients, bucket_arn, operation, **params)
    except ClientError as exc:
        if is_missing(exc):
            return None
        raise
