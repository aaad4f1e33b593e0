"""The stand-in's front door on one event loop: `KIT_EMULATOR_FRONT=loop` (`emulator.server.FRONT_ENV`) in the
server's environment (`emulator.process.Emulator(env=...)`), the estate benchmark's choice (`bench.ops_estate`).

The threaded server (`emulator.server`) gives each connection a thread, and each of its requests takes the
interpreter lock back three times after waiting (the request's read, the configured latency's sleep, the answer's
write): with 128 connections that is about half of the stand-in's CPU per request (BENCHMARKS.md, "An estate"),
spent on the same cores as the tool it serves, where AWS's front door is not. Here one thread reads every
connection, runs the same WSGI application (`emulator.app`) on each whole request, and holds the answer back by the
configured latency on the loop's timer instead of a sleeping thread.

The differences, and why they do not matter where it is used: every configured delay comes after the request's work
(`emulator.app.DEFER_DELAY`; the threaded server delays before the work unless told `after`), which a benchmark of
reads cannot tell apart; a request body must come with a Content-Length (a chunked one gets 501 and the connection
closes), as the SDKs' reads and writes of the benchmarks send them; one request is served at a time, which the
interpreter lock did anyway.
"""

from __future__ import annotations

import asyncio
import io
import sys
import traceback
from collections.abc import Callable, Iterable

from emulator.app import DEFER_DELAY, DELAY_AFTER
from emulator.http_wire import RequestFields, answer, collect, wsgi_environ

_MAX_HEAD, _MAX_FIELDS = 65536 * 4, 100
SOFTWARE = "kit-emulator-loop"
_ERROR = ("500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain")], b"Internal Server Error")


class _Connection(asyncio.Protocol):
    """One client connection: its requests in order, each answered whole before the next is read."""

    def __init__(self, app: Callable[..., Iterable[bytes]], server: tuple[str, int]) -> None:
        self.app, self.server = app, server
        self.buf = bytearray()
        self.busy = False  # an answer is held back by its latency: the next request waits
        self.continued = False  # a `100 Continue` was sent for the request being read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("", 0)
        self.peer = (str(peer[0]), int(peer[1]))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._serve()

    def _fail(self, status: str) -> None:
        out, _ = answer("HTTP/1.1", "GET", status, [("Content-Type", "text/plain")], b"", True, SOFTWARE)
        self.transport.write(out)
        self.transport.close()
        self.buf.clear()
        self.busy = True

    def _serve(self) -> None:
        """Answer every whole request in the buffer, until one waits on its latency or the buffer ends mid-request."""
        while not self.busy:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEAD:
                    self._fail("431 Request Header Fields Too Large")
                return
            lines = self.buf[:end].decode("latin-1").split("\r\n")
            request = lines[0].split(" ")
            if len(request) != 3 or not request[2].startswith("HTTP/1."):
                return self._fail("400 Bad Request")
            fields: list[tuple[str, str]] = []
            for line in lines[1:]:
                name, colon, value = line.partition(":")
                if not colon or len(fields) >= _MAX_FIELDS:
                    return self._fail("400 Bad Request")
                fields.append((name.strip(), value.strip()))
            head = RequestFields(fields)
            if head.get("Transfer-Encoding") is not None:
                return self._fail("501 Not Implemented")
            declared = str(head.get("Content-Length") or "0")
            if not declared.isdigit():
                return self._fail("400 Bad Request")
            length = int(declared)
            if len(self.buf) < end + 4 + length:
                if head.get("Expect", "").lower() == "100-continue" and not self.continued:
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    self.continued = True
                return
            body = bytes(self.buf[end + 4 : end + 4 + length])
            del self.buf[: end + 4 + length]
            self.continued = False
            self._answer(request[0], request[1], request[2], head, body)

    def _answer(self, method: str, target: str, version: str, head: RequestFields, body: bytes) -> None:
        environ = wsgi_environ(method, target, version, head, self.peer, self.server, SOFTWARE)
        environ.update({"wsgi.input": io.BytesIO(body), "wsgi.multithread": False, "wsgi.multiprocess": False})
        environ[DEFER_DELAY] = True
        try:
            status, headers, data = collect(self.app, environ)
        except Exception:
            print(f"Error on request:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            status, headers, data = _ERROR
        closing = version != "HTTP/1.1" or head.get("Connection", "").lower() == "close"
        out, closing = answer("HTTP/1.1", method, status, headers, data, closing, SOFTWARE)
        delay = float(environ.get(DELAY_AFTER) or 0)
        if delay:
            self.busy = True
            asyncio.get_running_loop().call_later(delay, self._write, out, closing)
        else:
            self._write(out, closing)

    def _write(self, out: bytes, closing: bool) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(out)
        self.busy = False
        if closing:
            self.transport.close()
        elif self.buf:
            self._serve()


def serve(host: str, port: int, app: Callable[..., Iterable[bytes]]) -> None:
    """Serve `app` on (host, port) until the process ends."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Connection(app, (host, port)), host, port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())
