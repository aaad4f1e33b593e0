"""The emulator server's own parsing of a usual request gives the WSGI environ werkzeug gives (the same keys and
values), and leaves unusual requests to the standard library and werkzeug."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from werkzeug.serving import WSGIRequestHandler

from emulator.server import _KeepAliveHandler

SERVER = SimpleNamespace(
    multithread=True, multiprocess=False, server_address=("127.0.0.1", 4566), ssl_context=None,
    _server_version="Werkzeug/test",
)  # fmt: skip
ARN = "arn%3Aaws%3As3tables%3Aus-east-1%3A123456789012%3Abucket%2Flake-0"
REQUESTS = [
    f"GET /tables/{ARN}/ns%C3%A9/t1/maintenance HTTP/1.1\r\nHost: 127.0.0.1:4566\r\nAccept: application/json\r\n"
    "X-Amz-Date: 20261129T001500Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=a/20261129/us-east-1/s3tables/"
    "aws4_request, SignedHeaders=accept;host;x-amz-date, Signature=00\r\nAccept-Encoding: identity\r\n\r\n",
    f"GET /table-replication?tableArn={ARN}%2Ftable%2Fx HTTP/1.1\r\nHost: h\r\nX-Dup: a\r\nx-dup: b\r\n"
    "Content-Type: application/json\r\nContent-Length: 0\r\nX_Underscore: dropped\r\nConnection: close\r\n\r\n",
    "PUT /b/k HTTP/1.0\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
]


class _Reference(WSGIRequestHandler):
    protocol_version = _KeepAliveHandler.protocol_version  # what decides keep-alive is then the parsing alone


def _handler(cls: type[WSGIRequestHandler], raw: str) -> WSGIRequestHandler:
    h = cls.__new__(cls)
    data = raw.encode("latin-1")
    line, _, rest = data.partition(b"\n")
    h.raw_requestline, h.rfile, h.wfile = line + b"\n", io.BytesIO(rest), io.BytesIO()
    h.server, h.client_address, h.connection = SERVER, ("127.0.0.1", 50000), None  # type: ignore[assignment]
    h.request_version = "HTTP/1.1"
    return h


def _environ(cls: type[WSGIRequestHandler], raw: str) -> tuple[dict[str, Any], bool, bytes, bool]:
    h = _handler(cls, raw)
    assert h.parse_request()
    env = {k: v for k, v in h.make_environ().items() if k not in ("wsgi.input", "wsgi.errors", "werkzeug.socket")}
    return env, h.close_connection, h.rfile.read(), bool(getattr(h, "_fast", False))


@pytest.mark.parametrize("raw", REQUESTS)
def test_the_usual_request_gives_werkzeugs_environ(raw: str) -> None:
    ours, theirs = _environ(_KeepAliveHandler, raw), _environ(_Reference, raw)
    assert ours[3], "the usual request takes the server's own parsing"
    assert ours[:3] == theirs[:3]


def test_an_unusual_request_goes_to_the_standard_parsing() -> None:
    raw = "GET http://lake.s3.localhost/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ours, theirs = _environ(_KeepAliveHandler, raw), _environ(_Reference, raw)
    assert {k: v for k, v in ours[0].items() if k != "wsgi.input_terminated"} == {
        k: v for k, v in theirs[0].items() if k != "wsgi.input_terminated"
    }
    assert ours[0]["HTTP_HOST"] == "lake.s3.localhost" and ours[0]["wsgi.input_terminated"] and not ours[3]
    bad = _handler(_KeepAliveHandler, "GET /x HTTP/1.1\r\nno colon here\r\n\r\n")
    assert not bad.parse_request() and bad.wfile.getvalue().startswith(b"HTTP/1.1 400")
