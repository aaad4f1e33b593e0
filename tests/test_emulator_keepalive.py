"""The emulator keeps HTTP/1.1 connections alive: requests of every kind (the control endpoint, moto, a HEAD, an
error) are answered one after another on one TCP connection, each with a body framed by its Content-Length."""

from __future__ import annotations

import http.client
from urllib.parse import urlparse


def test_requests_of_every_kind_are_answered_on_one_connection(moto_endpoint: str) -> None:
    url = urlparse(moto_endpoint)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    conn.auto_open = 0  # a closed connection is an error here, not silently reopened
    try:
        answers = []
        for method, path, body in (
            ("POST", "/_kit_test/health", b"{}"),  # the kit's control endpoint
            ("GET", "/", None),  # moto (S3 ListBuckets, XML)
            ("HEAD", "/no-such-bucket-keepalive", None),  # a HEAD: headers only, no body may follow
            ("POST", "/_kit_test/no-such-path", b"{}"),  # an error of the kit's own
            ("POST", "/_kit_test/health", b"{}"),
        ):
            if not answers:
                conn.connect()
            sock = conn.sock
            conn.request(method, path, body=body)
            resp = conn.getresponse()
            data = resp.read()
            assert not resp.will_close, (method, path, resp.getheaders())
            assert conn.sock is sock
            if method != "HEAD":
                assert resp.getheader("Content-Length") == str(len(data))
            answers.append((resp.status, data))
    finally:
        conn.close()
    assert [status for status, _ in answers] == [200, 200, 404, 404, 200]
    assert answers[0][1] == answers[-1][1] and b'"ok": true' in answers[0][1]
    assert b"ListAllMyBucketsResult" in answers[1][1]
    assert answers[2][1] == b""
    assert b"NotFoundException" in answers[3][1]
