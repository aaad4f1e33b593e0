"""SigV4-signed GETs without botocore's per-request machinery: the transport of
`s3tables_kit.jobs.kernel.iceberg_rest.IcebergRest` when the s3tables client uses no proxy.

A many-table read (discovery's four requests per table, status's loadTable per replica) is bound by the client's CPU:
botocore builds an `AWSRequest`, its header maps and a `urllib3` request per call and derives the SigV4 signing key
again each time, about a millisecond of CPU per request under one interpreter lock (BENCHMARKS.md, "Discovery of a
live lake"). Here a request is signed as botocore's `SigV4Auth` signs it (the same canonical request, byte for byte:
`tests/test_signed_get.py` compares the two), with the signing key derived once per day, and sent over a keep-alive
connection (one per request in flight, kept idle between requests) by a minimal HTTP/1.1 exchange (`http.client`
parses every answer's header with the `email` package, a third of the CPU left). HTTPS verifies the server against
the CA bundle botocore would use (the client's `verify`). A connection that the server closed while idle is opened
again once, at once; every other failure is raised as botocore's connection error, for the caller's retries.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import socket
import ssl
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from botocore.exceptions import ConnectionClosedError, EndpointConnectionError, NoCredentialsError
from botocore.utils import normalize_url_path

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_MAX_LINE = 65536
_ARN_CHARS = re.compile(r"[A-Za-z0-9_.~:/-]*\Z")  # `quote(safe="")` escapes only ":" and "/" of these
_PLAIN = re.compile(r"[A-Za-z0-9_.~/%-]*\Z")  # a path that `quote(path, safe="/~")` changes only by escaping "%"
ALGORITHM = "AWS4-HMAC-SHA256"


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: its status, headers (`.get` by name, any case) and whole body."""

    status: int
    headers: Any
    body: bytes


def canonical_query(query: str) -> str:
    """The canonical query string of a URL's query, as botocore's `SigV4Auth` forms it from a URL (pure)."""
    if not query:
        return ""
    pairs = sorted(tuple(p.partition("=")[::2]) for p in query.split("&"))
    return "&".join(f"{k}={v}" for k, v in pairs)


def canonical_request(path: str, query: str, headers: dict[str, str]) -> tuple[str, str]:
    """(canonical request, signed header names) of a GET without a body (pure). `headers` are the signed ones, names
    lower case, `host` among them."""
    names = sorted(headers)
    lines = "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in names)
    signed = ";".join(names)
    usual = path.startswith("/") and "//" not in path and "/." not in path
    normal = path if usual else normalize_url_path(path)  # nothing to normalize in the usual path
    uri = normal.replace("%", "%25") if _PLAIN.match(normal) else quote(normal, safe="/~")
    return f"GET\n{uri}\n{canonical_query(query)}\n{lines}\n{signed}\n{EMPTY_SHA256}", signed


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


class Signer:
    """SigV4 for one Region and signing name; the signing key is cached per (secret, day). Thread-safe."""

    def __init__(self, credentials: Any, region: str, service: str) -> None:
        self._credentials, self.region, self.service = credentials, region, service
        self._key: tuple[str, str, bytes] | None = None  # (secret, day, key)

    def _signing_key(self, secret: str, day: str) -> bytes:
        cached = self._key
        if cached is not None and cached[0] == secret and cached[1] == day:
            return cached[2]
        key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), self.region), self.service), "aws4_request")
        self._key = (secret, day, key)
        return key

    def headers(
        self, host: str, path: str, query: str, extra: dict[str, str], stamp: str | None = None
    ) -> dict[str, str]:
        """The headers of a signed GET: `extra`, Host, X-Amz-Date, X-Amz-Security-Token (with a session token) and
        Authorization. `stamp` (``20261129T001500Z``) defaults to now."""
        if self._credentials is None:
            raise NoCredentialsError()
        creds = self._credentials.get_frozen_credentials()  # refreshed as botocore refreshes them
        stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        out = dict(extra)
        out["X-Amz-Date"] = stamp
        if creds.token:
            out["X-Amz-Security-Token"] = creds.token
        signed_headers = {k.lower(): v for k, v in out.items()}
        signed_headers["host"] = host
        request, signed = canonical_request(path, query, signed_headers)
        scope = f"{stamp[:8]}/{self.region}/{self.service}/aws4_request"
        to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{hashlib.sha256(request.encode('utf-8')).hexdigest()}"
        signature = hmac.new(self._signing_key(creds.secret_key, stamp[:8]), to_sign.encode(), hashlib.sha256)
        out["Host"] = host
        out["Authorization"] = (
            f"{ALGORITHM} Credential={creds.access_key}/{scope}, SignedHeaders={signed}, "
            f"Signature={signature.hexdigest()}"
        )
        return out


def host_of(endpoint: str) -> str:
    """The Host header botocore signs for a URL: its host name, with the port unless it is the scheme's default
    (pure)."""
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


class Fields(dict[str, str]):
    """An answer's header fields by lower-case name (the last of a repeated one); `get` takes a name in any case."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


class Connection:
    """One keep-alive HTTP/1.1 connection (TLS for https) and its buffered reader: a request sent whole, its answer
    read by Content-Length, chunks, or to the end."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None, timeouts: tuple[float, float]) -> None:
        sock = socket.create_connection((host, port), timeout=timeouts[0])
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a request is one write; nothing to batch
            if context is not None:
                sock = context.wrap_socket(sock, server_hostname=host)
            sock.settimeout(timeouts[1])
        except BaseException:
            sock.close()
            raise
        self.sock, self.reader = sock, sock.makefile("rb")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def _line(self) -> bytes:
        line = self.reader.readline(_MAX_LINE + 1)
        if not line:
            raise ConnectionResetError("the server closed the connection")
        if len(line) > _MAX_LINE:
            raise ValueError("an answer's line is too long")
        return line

    def exchange(self, head: bytes) -> tuple[int, Fields, bytes, bool]:
        """Send `head` (a request without a body); (status, fields, body, whether the server closes)."""
        self.sock.sendall(head)
        while True:
            version, status_text = self._line().split(None, 2)[:2]
            status, fields = int(status_text), Fields()
            while (line := self._line()) not in (b"\r\n", b"\n"):
                name, _, value = line.decode("latin-1").partition(":")
                fields[name.strip().lower()] = value.strip()
            if not 100 <= status < 200:
                break  # an interim answer (100 Continue) is followed by the real one
        closes = fields.get("connection", "").lower() == "close" or version != b"HTTP/1.1"
        if status in (204, 304):
            return status, fields, b"", closes
        if "chunked" in fields.get("transfer-encoding", "").lower():
            parts = []
            while size := int(self._line().split(b";", 1)[0], 16):
                parts.append(self._exactly(size))
                self._line()
            while self._line() not in (b"\r\n", b"\n"):
                pass  # trailer fields
            return status, fields, b"".join(parts), closes
        if "content-length" in fields:
            return status, fields, self._exactly(int(fields["content-length"])), closes
        return status, fields, self.reader.read(), True

    def _exactly(self, size: int) -> bytes:
        data = self.reader.read(size)
        if len(data) != size:
            raise ConnectionResetError("the answer ended early")
        return data


def _close_all(connections: list[Connection]) -> None:
    while connections:
        connections.pop().close()


class SignedGet:
    """Signed GETs to one endpoint (scheme and authority) over keep-alive connections, each used by one thread at a
    time and kept idle between requests. Thread-safe; the idle connections are closed by `close` or when this
    object is collected."""

    def __init__(self, signer: Signer, endpoint: str, verify: Any = True, timeouts: tuple[float, float] = (10, 60)):
        parts = urlsplit(endpoint)
        self.signer, self.host = signer, host_of(endpoint)
        self._prefix = f"{parts.scheme}://{parts.netloc}/"
        self._address = (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        self._timeouts = timeouts
        self._context: ssl.SSLContext | None = None
        if parts.scheme == "https":
            from botocore.httpsession import get_cert_path

            self._context = ssl.create_default_context(cafile=get_cert_path(verify) if verify else None)
            if verify is False:
                self._context.check_hostname, self._context.verify_mode = False, ssl.CERT_NONE
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._idle)

    def _take(self) -> tuple[Connection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return Connection(*self._address, self._context, self._timeouts), False

    def close(self) -> None:
        """Close the idle connections (one in use is closed when its request ends)."""
        with self._lock:
            _close_all(self._idle)

    def get(self, url: str, accept: str = "application/json") -> Answer:
        """GET `url` (on this endpoint), signed. Raises botocore's `EndpointConnectionError` when no connection can
        be made, `ConnectionClosedError` when one fails mid-request, `NoCredentialsError`."""
        if url.startswith(self._prefix):  # this endpoint's URL: no need to split it again
            target = url[len(self._prefix) - 1 :]
            path, _, query = target.partition("?")
        else:
            parts = urlsplit(url)
            path, query = parts.path, parts.query
            target = path + ("?" + query if query else "")
        for first in (True, False):
            try:
                conn, reused = self._take()
            except OSError as exc:
                raise EndpointConnectionError(endpoint_url=url, error=exc) from exc
            try:
                headers = self.signer.headers(self.host, path, query, {"Accept": accept})
                lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                status, fields, body, closes = conn.exchange(f"GET {target} HTTP/1.1\r\n{lines}\r\n".encode())
            except (OSError, ValueError) as exc:
                conn.close()
                if reused and first:
                    continue  # the server closed the idle connection: a new one, once, at once
                raise ConnectionClosedError(endpoint_url=url) from exc
            except BaseException:
                conn.close()
                raise
            if closes:
                conn.close()
            else:
                with self._lock:
                    self._idle.append(conn)
            return Answer(status, fields, body)
        raise AssertionError("unreachable")


def escape(value: str) -> str:
    """`urllib.parse.quote(value, safe="")` (pure), without its per-character loop for the usual ARN or name."""
    if _ARN_CHARS.match(value):
        return value.replace(":", "%3A").replace("/", "%2F")
    return quote(value, safe="")
