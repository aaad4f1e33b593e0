"""Serve moto + the kit's extension: `python -m emulator.server --port 4566`.

Started by `emulator.process.Emulator`.

Connections are kept alive (HTTP/1.1): a client such as botocore's connection pool sends request after request on
one TCP connection instead of opening one (and, in this threaded server, starting a thread) per request. werkzeug's
own handler closes every connection, so `_KeepAliveHandler` replaces its `run_wsgi`: the request body is read whole
before the application runs (the next request starts right after it), and the answer is sent whole, in one write,
with its Content-Length (HEAD, 1xx, 204 and 304 answers carry no body). Anything that would leave the connection's
framing in doubt (a Content-Length that does not match the body, a Transfer-Encoding set by the application, a body
the server cannot read) closes the connection after the answer, as before.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.exceptions import InternalServerError
from werkzeug.serving import WSGIRequestHandler, run_simple

_NO_BODY = {204, 304}


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
        lines += [f"Date: {self.date_time_string()}"] + [f"{k}: {v}" for k, v in headers]
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
