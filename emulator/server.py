"""Serve moto + the kit's extension: `python -m emulator.server --port 4566`.

Started by `emulator.process.Emulator`.

Connections are kept alive (HTTP/1.1): a client such as botocore's connection pool sends request after request on
one TCP connection instead of opening one (and, in this threaded server, starting a thread) per request. werkzeug's
own handler closes every connection, so `_KeepAliveHandler` replaces its `run_wsgi`: the request body is read whole
before the application runs (the next request starts right after it), and the answer is sent whole, in one write,
with its Content-Length (HEAD, 1xx, 204 and 304 answers carry no body). Anything that would leave the connection's
framing in doubt (a Content-Length that does not match the body, a Transfer-Encoding set by the application, a body
the server cannot read) closes the connection after the answer, as before.

A request of the usual form (``METHOD /path HTTP/1.x``, no Transfer-Encoding) is parsed by `_KeepAliveHandler`
itself: its header lines split at the first colon, its WSGI environ built as werkzeug builds it. The standard library
hands header lines to the `email` package and werkzeug's environ does a URL split and a TLS peer lookup per request:
together more CPU than the S3 Tables operation itself, which a many-table benchmark pays once per request on the
cores it shares with the client (BENCHMARKS.md, "Discovery of a live lake"); AWS's front door is not on those cores.
Any other request goes through the standard library's and werkzeug's parsing, as before.
"""

from __future__ import annotations

import argparse
import email.utils
import io
import logging
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

from werkzeug.exceptions import InternalServerError
from werkzeug.serving import WSGIRequestHandler, run_simple

_NO_BODY = {204, 304}
_USUAL = re.compile(r"(GET|HEAD|PUT|POST|DELETE|PATCH|OPTIONS) (/(?!/)[^\s#]*) (HTTP/1\.[01])\r?\n\Z")
_MAX_LINE, _MAX_FIELDS = 65536, 100  # the standard library's limits


class _Fields:
    """A request's header fields in order, with the lookups `http.server` and werkzeug make (names in any case)."""

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self._fields = fields
        self._first: dict[str, str] = {}
        for k, v in fields:
            self._first.setdefault(k.lower(), v)

    def get(self, name: str, default: Any = None) -> Any:
        return self._first.get(name.lower(), default)

    def get_all(self, name: str, failobj: Any = None) -> Any:
        low = name.lower()
        return [v for k, v in self._fields if k.lower() == low] or failobj

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)

    def keys(self) -> list[str]:
        return [k for k, _ in self._fields]

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Any:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._fields)


_DATE: list[tuple[int, str]] = [(-1, "")]  # (second, its HTTP date): formatting one costs more than routing


def _http_date() -> str:
    """The Date header's value now (RFC 7231, as `BaseHTTPRequestHandler.date_time_string`), formed once a second."""
    now = int(time.time())
    second, text = _DATE[-1]
    if second != now:
        text = email.utils.formatdate(now, usegmt=True)
        _DATE[-1] = (now, text)
    return text


def _dance(value: str) -> str:
    """PEP 3333's bytes-as-latin-1 form of a string, as werkzeug puts paths in the environ."""
    return value.encode("utf-8").decode("latin-1")


def _collect(app: Callable[..., Iterable[bytes]], environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """(status line, headers, whole body) of one WSGI call."""
    answer: dict[str, Any] = {}
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        answer["status"], answer["headers"] = status, headers
        return chunks.append

    result = app(environ, start_response)
    try:
        chunks.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return answer["status"], answer["headers"], b"".join(chunks)


class _KeepAliveHandler(WSGIRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the answer is one write; no small segment waits for an ACK

    def log_request(self, *args: object, **kwargs: object) -> None:  # one line per request would swamp the logs
        pass

    def parse_request(self) -> bool:
        usual = _USUAL.match(str(self.raw_requestline, "iso-8859-1"))
        if usual is None:
            self._fast = False
            return bool(super().parse_request())
        self.command, self.path, self.request_version = usual.groups()
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.close_connection = self.request_version != "HTTP/1.1"
        fields: list[tuple[str, str]] = []
        while True:
            line = self.rfile.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                self.send_error(431, "Line too long")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            text = str(line, "iso-8859-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and fields:  # an obsolete folded line continues the field before it
                fields[-1] = (fields[-1][0], fields[-1][1] + " " + text.strip())
                continue
            name, colon, value = text.partition(":")
            if not colon or len(fields) >= _MAX_FIELDS:
                self.send_error(400 if not colon else 431, "Bad header line" if not colon else "Too many headers")
                return False
            fields.append((name.strip(), value.strip()))
        self.headers = _Fields(fields)  # type: ignore[assignment]
        self._fast = self.headers.get("Transfer-Encoding") is None and self.server.ssl_context is None
        conntype = str(self.headers.get("Connection", "")).lower()
        if conntype == "close":
            self.close_connection = True
        elif conntype == "keep-alive":
            self.close_connection = False
        expect = str(self.headers.get("Expect", "")).lower()
        if expect == "100-continue" and self.request_version >= "HTTP/1.1":
            return bool(self.handle_expect_100())
        return True

    def make_environ(self) -> dict[str, Any]:
        if not getattr(self, "_fast", False):
            return dict(super().make_environ())
        path, _, query = self.path.partition("?")
        environ: dict[str, Any] = {
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": self.rfile,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": self.server.multithread,
            "wsgi.multiprocess": self.server.multiprocess,
            "wsgi.run_once": False,
            "werkzeug.socket": self.connection,
            "SERVER_SOFTWARE": self.server_version,
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": _dance(unquote(path)),
            "QUERY_STRING": _dance(query),
            "REQUEST_URI": _dance(self.path),
            "RAW_URI": _dance(self.path),
            "REMOTE_ADDR": self.address_string(),
            "REMOTE_PORT": self.port_integer(),
            "SERVER_NAME": self.server.server_address[0],
            "SERVER_PORT": str(self.server.server_address[1]),
            "SERVER_PROTOCOL": self.request_version,
        }
        for name, value in self.headers.items():
            if "_" in name:
                continue
            key = name.upper().replace("-", "_")
            if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                key = f"HTTP_{key}"
                if key in environ:
                    value = f"{environ[key]},{value}"
            environ[key] = value
        return environ

    def run_wsgi(self) -> None:
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.environ = environ = self.make_environ()
        try:
            if environ.get("wsgi.input_terminated"):  # a chunked body: werkzeug's DechunkedInput reads to its end
                body = environ["wsgi.input"].read()
            else:
                body = self.rfile.read(int(environ.get("CONTENT_LENGTH") or 0))
        except (OSError, ValueError):
            self.send_error(400, "Bad request body")  # closes the connection
            return
        environ["wsgi.input"] = io.BytesIO(body)
        try:
            status, headers, data = _collect(self.server.app, environ)
        except (ConnectionError, TimeoutError):
            raise
        except Exception:
            if self.server.passthrough_errors:
                raise
            self.server.log("error", f"Error on request:\n{traceback.format_exc()}")
            status, headers, data = _collect(InternalServerError(), environ)
        self._send(status, headers, data)

    def _send(self, status: str, headers: list[tuple[str, str]], data: bytes) -> None:
        code = int(status.split(None, 1)[0])
        bodiless = self.command == "HEAD" or 100 <= code < 200 or code in _NO_BODY
        names = {k.lower(): v for k, v in headers}
        if "transfer-encoding" in names:
            self.close_connection = True
        elif "content-length" in names:
            if not bodiless and names["content-length"].strip() != str(len(data)):
                self.close_connection = True
        elif not bodiless:
            headers = [*headers, ("Content-Length", str(len(data)))]
        if names.get("connection", "").lower() == "close":
            self.close_connection = True
        lines = [f"{self.protocol_version} {status}", f"Server: {self.version_string()}"]
        lines += [f"Date: {_http_date()}"] + [f"{k}: {v}" for k, v in headers]
        if self.close_connection and "connection" not in names:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head if bodiless else head + data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    os.environ.setdefault("MOTO_PORT", str(args.port))
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from emulator.app import build_app

    run_simple(args.host, args.port, build_app(), threaded=True, request_handler=_KeepAliveHandler)


if __name__ == "__main__":
    main()
