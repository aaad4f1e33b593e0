"""Smithy RPCv2 CBOR, the protocol the AWS SDK for Go v2 (and so hashicorp/aws 6.x) speaks to CloudWatch, mapped
onto moto's JSON protocol for the same service.

A request is `POST /service/<service>/operation/<Operation>` with header `smithy-protocol: rpc-v2-cbor` and a CBOR
body. moto 5.2.5 has no CBOR support, but it serves CloudWatch over the AWS JSON 1.0 protocol
(`X-Amz-Target: GraniteServiceVersion20100801.<Operation>`), whose documents carry the same members: the request is
decoded, re-sent to moto as JSON, and moto's answer is encoded back to CBOR the way the SDK reads it (checked in
`smithy-go`'s decoder):

* every answer, error or not, carries `smithy-protocol: rpc-v2-cbor` (without it the SDK fails with "unexpected
  smithy-protocol response header");
* timestamps are CBOR tag 1 (epoch seconds), integers are CBOR integers (the SDK refuses a float for an int32),
  blobs are byte strings: the output shape of the botocore model says which member is which;
* errors are `{"__type": <code>, "message": ...}` with the HTTP status, plus `x-amzn-query-error: <code>;Sender`
  (CloudWatch is `awsQueryCompatible`: the SDK takes the error code from that header).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import re
from functools import cache
from typing import Any

import botocore.session
import cbor2
from botocore.model import ServiceModel, Shape

PATH_RE = re.compile(r"^/service/([A-Za-z0-9_.]+)/operation/([A-Za-z0-9]+)$")
PROTOCOL_HEADER = "rpc-v2-cbor"
# Smithy service name (the path's <service>) -> botocore service; each serves JSON 1.0 in moto under that target.
SERVICES = {"GraniteServiceVersion20100801": "cloudwatch"}


def match(environ: dict[str, Any], raw_path: str) -> tuple[str, str] | None:
    """(botocore service, operation) of an RPCv2 CBOR request this module serves, else None."""
    m = PATH_RE.match(raw_path)
    if m is None or environ.get("REQUEST_METHOD") != "POST" or m.group(1) not in SERVICES:
        return None
    if environ.get("HTTP_SMITHY_PROTOCOL", PROTOCOL_HEADER) != PROTOCOL_HEADER:
        return None
    return SERVICES[m.group(1)], m.group(2)


@cache
def _model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


# ---------------------------------------------------------------- CBOR <-> JSON documents ----


def _to_json(value: Any) -> Any:
    """A decoded CBOR request document as the JSON protocol carries it."""
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, cbor2.CBORTag) and value.tag == 1:
        return float(value.value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    return value


def _epoch(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def to_cbor_value(value: Any, shape: Shape | None) -> Any:
    """A JSON protocol output document with the CBOR types its shape calls for."""
    if value is None or shape is None:
        return value
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        members = shape.members  # type: ignore[attr-defined]
        return {k: to_cbor_value(v, members.get(k)) for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [to_cbor_value(v, shape.member) for v in value]  # type: ignore[attr-defined]
    if kind == "map" and isinstance(value, dict):
        return {k: to_cbor_value(v, shape.value) for k, v in value.items()}  # type: ignore[attr-defined]
    if kind == "timestamp":
        return cbor2.CBORTag(1, _epoch(value))
    if kind in ("integer", "long", "short", "byte"):
        return int(value)
    if kind in ("double", "float"):
        return float(value)
    if kind == "blob" and isinstance(value, str):
        return base64.b64decode(value)
    return value


def decode_request(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    doc = cbor2.loads(body)
    return _to_json(doc) if isinstance(doc, dict) else {}


def encode_response(service: str, op: str, doc: dict[str, Any]) -> bytes:
    output = _model(service).operation_model(op).output_shape
    return cbor2.dumps(to_cbor_value(doc, output))


def error_body(code: str, message: str) -> bytes:
    return cbor2.dumps({"__type": code, "message": message})


# ---------------------------------------------------------------- the WSGI hop to moto ----


def _reason(status: int) -> str:
    return {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict", 429: "Too Many Requests"}.get(
        status, "Error"
    )


def respond(start_response: Any, status: int, body: bytes, code: str | None = None) -> list[bytes]:
    headers = [
        ("Content-Type", "application/cbor"),
        ("Content-Length", str(len(body))),
        ("smithy-protocol", PROTOCOL_HEADER),
    ]
    if code:
        headers.append(("x-amzn-query-error", f"{code};Sender"))
    start_response(f"{status} {_reason(status)}", headers)
    return [body]


def _error_code(doc: dict[str, Any], headers: dict[str, str]) -> tuple[str, str]:
    code = str(doc.get("__type") or headers.get("x-amzn-errortype") or "InternalFailure")
    code = code.split("#")[-1].split(":")[0]
    message = str(doc.get("message") or doc.get("Message") or code)
    return code, message


def serve(moto_app: Any, environ: dict[str, Any], start_response: Any, body: bytes, service: str, op: str) -> Any:
    """Answer one RPCv2 CBOR request through moto's JSON protocol for the same service."""
    try:
        request = decode_request(body)
    except (cbor2.CBORDecodeError, ValueError) as err:
        return respond(start_response, 400, error_body("SerializationException", str(err)), "SerializationException")
    payload = json.dumps(request).encode()
    prefix = _model(service).metadata["targetPrefix"]
    hop = dict(environ)
    hop.update(
        {
            "PATH_INFO": "/",
            "RAW_URI": "/",
            "REQUEST_URI": "/",
            "QUERY_STRING": "",
            "CONTENT_TYPE": "application/x-amz-json-1.0",
            "CONTENT_LENGTH": str(len(payload)),
            "HTTP_X_AMZ_TARGET": f"{prefix}.{op}",
            "wsgi.input": io.BytesIO(payload),
        }
    )
    hop.pop("HTTP_SMITHY_PROTOCOL", None)
    answer: dict[str, Any] = {}

    def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer["status"] = int(status.split()[0])
        answer["headers"] = {k.lower(): v for k, v in headers}
        return lambda _data: None

    raw = b"".join(moto_app(hop, capture))
    status = int(answer.get("status", 500))
    try:
        doc = json.loads(raw) if raw.strip() else {}
    except ValueError:
        doc = {"message": raw.decode("utf-8", "replace")[:500]}
    if not isinstance(doc, dict):
        doc = {}
    if status >= 300:
        code, message = _error_code(doc, answer.get("headers", {}))
        return respond(start_response, status, error_body(code, message), code)
    return respond(start_response, 200, encode_response(service, op, doc))
