"""`s3tables_kit.jobs.kernel.signed_get`: a GET signed as botocore's `SigV4Auth` signs it (the same Authorization, byte
for byte, so AWS accepts it wherever it accepts botocore's), and sent over a keep-alive connection that survives the
server closing it while idle."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from urllib.parse import urlsplit

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from s3tables_kit.jobs.kernel.signed_get import SignedGet, Signer, host_of

STAMP = "20261129T001500Z"
ARN = "arn%3Aaws%3As3tables%3Aus-east-1%3A111122223333%3Abucket%2Flake"
URLS = [
    f"https://s3tables.us-east-1.amazonaws.com/iceberg/v1/{ARN}/namespaces/sales/tables/orders",
    f"https://s3tables.eu-west-1.amazonaws.com:443/tables/{ARN}/sal%C3%A9s/t%20x/maintenance",
    f"http://127.0.0.1:4566/table-replication?tableArn={ARN}%2Ftable%2Fab&b=2&a=1&a=0",
    "https://s3tables.us-east-1.amazonaws.com/a/./b/../c//d/",
]


@pytest.mark.parametrize("token", [None, "FwoGZX  token/+="])
@pytest.mark.parametrize("url", URLS)
def test_the_authorization_is_botocores(url: str, token: str | None) -> None:
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    request = AWSRequest(method="GET", url=url, headers={"Accept": "application/json", "X-Amz-Date": STAMP})
    if token:
        request.headers["X-Amz-Security-Token"] = token
    request.context["timestamp"] = STAMP
    auth = SigV4Auth(creds, "s3tables", "us-east-1")
    auth._inject_signature_to_request(
        request, auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    )
    parts = urlsplit(url)
    ours = Signer(creds, "us-east-1", "s3tables").headers(
        host_of(url), parts.path, parts.query, {"Accept": "application/json"}, STAMP
    )
    assert ours["Authorization"] == request.headers["Authorization"]
    assert ours.get("X-Amz-Security-Token") == token and ours["X-Amz-Date"] == STAMP


def test_the_host_is_the_one_botocore_signs() -> None:
    assert host_of("https://S3Tables.us-east-1.amazonaws.com:443/x") == "s3tables.us-east-1.amazonaws.com"
    assert host_of("http://127.0.0.1:4566/x") == "127.0.0.1:4566"
    assert host_of("http://[::1]:80/x") == "[::1]"


def test_a_connection_closed_while_idle_is_opened_again(moto_endpoint: str) -> None:
    creds = Credentials("accesskey", "secretkey", "token")
    lean = SignedGet(Signer(creds, "us-east-1", "s3tables"), moto_endpoint)
    url = moto_endpoint.rstrip("/") + "/buckets"  # ListTableBuckets
    try:
        first = lean.get(url)
        assert first.status == 200 and "tableBuckets" in json.loads(first.body)
        [conn] = lean._idle
        assert lean.get(url).status == 200 and lean._idle == [conn]  # kept alive
        assert conn.sock is not None
        conn.sock.shutdown(socket.SHUT_RDWR)  # as a server closes an idle connection
        again = lean.get(url)
        assert again.status == 200 and again.body == first.body and lean._idle != [conn]
    finally:
        lean.close()
    assert lean._idle == []


CANNED = {
    "/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Amzn-ErrorType: none\r\n\r\n"
    b'4;ext=1\r\n{"a"\r\n5\r\n: 1}\n\r\n0\r\nTrailer: x\r\n\r\n',
    "/continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}",
    "/close": b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc",
    "/to-the-end": b"HTTP/1.0 200 OK\r\n\r\nuntil closed",
}


class _Canned(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while line := self.rfile.readline():
            path = line.split()[1].decode()
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
            self.wfile.write(CANNED[path])
            if path in ("/close", "/to-the-end"):
                return


def test_answers_framed_every_way_are_read_whole() -> None:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Canned) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        lean = SignedGet(Signer(Credentials("a", "b"), "us-east-1", "s3tables"), base)
        try:
            got = lean.get(base + "/chunked")
            assert (got.status, got.body, got.headers.get("x-amzn-errortype")) == (200, b'{"a": 1}\n', "none")
            assert len(lean._idle) == 1
            assert (lean.get(base + "/continue").status, lean.get(base + "/continue").body) == (404, b"{}")
            assert lean.get(base + "/close").body == b"abc" and lean._idle == []
            assert lean.get(base + "/to-the-end").body == b"until closed" and lean._idle == []
        finally:
            lean.close()
            server.shutdown()
