"""The stand-in's event-loop front door (`emulator.loop_front`, `KIT_EMULATOR_FRONT=loop`): the same application
behind it, answers held back by the configured latency without holding the next connection up, keep-alive and
pipelined requests answered in order, a body sent after `100 Continue`, and a chunked body refused."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import boto3
import pytest

from emulator.process import Emulator
from emulator.server import FRONT_ENV


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    e = Emulator(env={FRONT_ENV: "loop"}).start()
    try:
        yield e
    finally:
        e.stop()


def _client(emu: Emulator, service: str) -> object:
    return boto3.client(service, endpoint_url=emu.url, region_name="us-east-1", aws_access_key_id="AKIDLOOPFRONT",
                        aws_secret_access_key="x")  # fmt: skip


def test_the_application_answers_through_it_and_a_latency_holds_only_its_own_answer(emu: Emulator) -> None:
    s3tables, s3 = _client(emu, "s3tables"), _client(emu, "s3")
    arn = s3tables.create_table_bucket(name="loop-front")["arn"]  # type: ignore[attr-defined]
    s3tables.create_namespace(tableBucketARN=arn, namespace=["ns"])  # type: ignore[attr-defined]
    s3.create_bucket(Bucket="loop-front-objects")  # type: ignore[attr-defined]
    body = b"x" * 200_000  # botocore sends it after the server's `100 Continue`
    s3.put_object(Bucket="loop-front-objects", Key="k", Body=body)  # type: ignore[attr-defined]
    assert s3.get_object(Bucket="loop-front-objects", Key="k")["Body"].read() == body  # type: ignore[attr-defined]
    emu.control.set_latency(operation="GetNamespace", seconds=1.0)
    try:
        slow: dict[str, float] = {}

        def get() -> None:
            t0 = time.monotonic()
            slow["ns"] = s3tables.get_namespace(tableBucketARN=arn, namespace="ns")["namespace"][0]  # type: ignore[attr-defined]
            slow["s"] = time.monotonic() - t0

        waiting = threading.Thread(target=get)
        waiting.start()
        time.sleep(0.1)
        t0 = time.monotonic()  # another connection is answered while the first answer is held back
        assert s3tables.get_table_bucket(tableBucketARN=arn)["name"] == "loop-front"  # type: ignore[attr-defined]
        assert time.monotonic() - t0 < 0.5
        waiting.join()
    finally:
        emu.control.set_latency(operation="GetNamespace", seconds=0.0)
    assert slow["ns"] == "ns" and slow["s"] >= 1.0


def _answers(sock: socket.socket, count: int) -> list[bytes]:
    data, out = b"", []
    sock.settimeout(10)
    while len(out) < count:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        while b"\r\n\r\n" in data:
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
            )
            if len(rest) < length:
                break
            out.append(head.split(b"\r\n")[0])
            data = rest[length:]
    return out


def test_pipelined_requests_are_answered_in_order_and_a_chunked_or_unframed_body_is_refused(emu: Emulator) -> None:
    host, port = emu.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        ask = b"GET /_kit_test/health HTTP/1.1\r\nHost: x\r\n\r\n"
        sock.sendall(ask + b"GET /_kit_test/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n" + ask)
        first, second, third = _answers(sock, 3)
        assert first == third and first.startswith(b"HTTP/1.1 200") and not second.startswith(b"HTTP/1.1 200")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")
        assert _answers(sock, 1) == [b"HTTP/1.1 501 Not Implemented"]
        assert sock.recv(1) == b""  # closed
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n")
        assert _answers(sock, 1) == [b"HTTP/1.1 400 Bad Request"]
