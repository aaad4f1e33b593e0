"""The HTTP/1.1 wire form both of the stand-in's front doors share (`emulator.server`'s threads,
`emulator.loop_front`'s event loop): a request's header fields, its WSGI environ as werkzeug builds it, one WSGI call
collected whole, and one whole answer's bytes."""

from __future__ import annotations

import email.utils
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

_NO_BODY = {204, 304}


class RequestFields:
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


def collect(app: Callable[..., Iterable[bytes]], environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
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


def wsgi_environ(
    method: str,
    target: str,
    version: str,
    fields: RequestFields,
    remote: tuple[str, int],
    server: tuple[Any, Any],
    software: str,
) -> dict[str, Any]:
    """The WSGI environ of a request of the usual form, as werkzeug builds it (without the input stream and the
    server's threading flags, which the caller adds)."""
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.run_once": False,
        "SERVER_SOFTWARE": software,
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _dance(unquote(path)),
        "QUERY_STRING": _dance(query),
        "REQUEST_URI": _dance(target),
        "RAW_URI": _dance(target),
        "REMOTE_ADDR": remote[0],
        "REMOTE_PORT": remote[1],
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": version,
    }
    for name, value in fields.items():
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = f"HTTP_{key}"
            if key in environ:
                value = f"{environ[key]},{value}"
        environ[key] = value
    return environ


def answer(
    version: str, method: str, status: str, headers: list[tuple[str, str]], data: bytes, closing: bool, software: str
) -> tuple[bytes, bool]:
    """(the bytes of one whole answer, whether the connection closes after it): its Content-Length set, its body left
    out where HTTP has none, and the connection closed where its framing would be in doubt."""
    code = int(status.split(None, 1)[0])
    bodiless = method == "HEAD" or 100 <= code < 200 or code in _NO_BODY
    names = {k.lower(): v for k, v in headers}
    if "transfer-encoding" in names:
        closing = True
    elif "content-length" in names:
        if not bodiless and names["content-length"].strip() != str(len(data)):
            closing = True
    elif not bodiless:
        headers = [*headers, ("Content-Length", str(len(data)))]
    if names.get("connection", "").lower() == "close":
        closing = True
    lines = [f"{version} {status}", f"Server: {software}", f"Date: {_http_date()}"] + [f"{k}: {v}" for k, v in headers]
    if closing and "connection" not in names:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return (head if bodiless else head + data), closing
