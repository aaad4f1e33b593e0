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
import io
import logging
import os
import re
import traceback
from typing import Any

from werkzeug.exceptions import InternalServerError
from werkzeug.serving import WSGIRequestHandler, run_simple

from emulator.http_wire import RequestFields, answer, collect, wsgi_environ

_USUAL = re.compile(r"(GET|HEAD|PUT|POST|DELETE|PATCH|OPTIONS) (/(?!/)[^\s#]*) (HTTP/1\.[01])\r?\n\Z")
_MAX_LINE, _MAX_FIELDS = 65536, 100  # the standard library's limits
FRONT_ENV = "KIT_EMULATOR_FRONT"  # "loop": `emulator.loop_front`; else this threaded server


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
        self.headers = RequestFields(fields)  # type: ignore[assignment]
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
        environ = wsgi_environ(
            self.command, self.path, self.request_version, self.headers,  # type: ignore[arg-type]
            (self.address_string(), self.port_integer()), self.server.server_address[:2], self.server_version,
        )  # fmt: skip
        environ.update({"wsgi.input": self.rfile, "wsgi.multithread": self.server.multithread,
                        "wsgi.multiprocess": self.server.multiprocess, "werkzeug.socket": self.connection})  # fmt: skip
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
            status, headers, data = collect(self.server.app, environ)
        except (ConnectionError, TimeoutError):
            raise
        except Exception:
            if self.server.passthrough_errors:
                raise
            self.server.log("error", f"Error on request:\n{traceback.format_exc()}")
            status, headers, data = collect(InternalServerError(), environ)
        self._send(status, headers, data)

    def _send(self, status: str, headers: list[tuple[str, str]], data: bytes) -> None:
        out, self.close_connection = answer(
            self.protocol_version, self.command, status, headers, data, self.close_connection, self.version_string()
        )
        self.wfile.write(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    os.environ.setdefault("MOTO_PORT", str(args.port))
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from emulator.app import build_app

    if os.environ.get(FRONT_ENV) == "loop":  # one event loop instead of a thread per connection (a benchmark's)
        from emulator.loop_front import serve

        serve(args.host, args.port, build_app())
        return
    run_simple(args.host, args.port, build_app(), threaded=True, request_handler=_KeepAliveHandler)


if __name__ == "__main__":
    main()
