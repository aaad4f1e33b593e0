"""The emulator answers a plain read of table storage (a GetObject of the whole object or of one byte range, a
HeadObject) without moto's request stack (`emulator.storage.plain_read`): the answer must be moto's own, and
anything but the plain case must still be moto's. moto's answer to the same request is had through moto's
documented `x-moto-account-id` header (the same account), which the plain path leaves to moto."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.ops_fixtures import OpsEnv

ACCOUNT = "123456789012"  # moto's default account: the access key "testing" maps to it
VARYING = {"date", "x-amzn-requestid", "server"}  # differ between any two answers


@pytest.fixture
def client(ops_env: OpsEnv) -> Iterator[Callable[..., Any]]:
    """`client(service, **config)`: a boto3 client of the emulator, closed after the test."""
    made: list[Any] = []

    def make(service: Any, **config: Any) -> Any:
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        if service == "s3":
            config["s3"] = {"addressing_style": "path"}
        made.append(session.client(service, endpoint_url=ops_env.endpoint, config=Config(**config)))
        return made[-1]

    yield make
    for c in made:
        c.close()


def _warehouse(s3tables: Any) -> str:
    arn = s3tables.create_table_bucket(name="plain-get")["arn"]
    s3tables.create_namespace(tableBucketARN=arn, namespace=["nsp"])
    s3tables.create_table(tableBucketARN=arn, namespace="nsp", name="tbl", format="ICEBERG")
    location = s3tables.get_table(tableBucketARN=arn, namespace="nsp", name="tbl")["warehouseLocation"]
    return str(location).removeprefix("s3://").split("/")[0]


def _as_moto(params: dict[str, Any], **_: Any) -> None:
    params["headers"]["x-moto-account-id"] = ACCOUNT


def _answer(s3: Any, bucket: str, key: str, **kw: Any) -> tuple[int, dict[str, str], bytes]:
    got = s3.get_object(Bucket=bucket, Key=key, **kw)
    meta = got["ResponseMetadata"]
    headers = {k: v for k, v in meta["HTTPHeaders"].items() if k not in VARYING}
    return meta["HTTPStatusCode"], headers, got["Body"].read()


def _head(s3: Any, bucket: str, key: str) -> tuple[int, dict[str, str], bytes]:
    meta = s3.head_object(Bucket=bucket, Key=key)["ResponseMetadata"]
    return meta["HTTPStatusCode"], {k: v for k, v in meta["HTTPHeaders"].items() if k not in VARYING}, b""


# (what is read, how): the whole object, byte ranges from an offset (pyarrow reads a file with a HEAD, then
# `bytes=0-<size - 1>`), one past the end (clamped), an inverted one (the whole object, as S3 answers it).
READS: list[tuple[str, dict[str, Any]]] = [
    ("whole", {}),
    ("all of it as a range", {"Range": "bytes=0-37"}),
    ("a middle range", {"Range": "bytes=2-9"}),
    ("from an offset to the end", {"Range": "bytes=10-"}),
    ("past the end", {"Range": "bytes=30-999"}),
    ("inverted", {"Range": "bytes=9-2"}),
]


def _reads(s3: Any, bucket: str, keys: list[str]) -> list[tuple[int, dict[str, str], bytes]]:
    out = [_answer(s3, bucket, keys[0], **kw) for _, kw in READS] + [_answer(s3, bucket, keys[1])]
    return out + [_head(s3, bucket, k) for k in keys]


def test_a_plain_read_of_table_storage_is_answered_as_moto_answers_it(ops_env: OpsEnv, client: Any) -> None:
    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    body = b'{"format-version": 2, "snapshots": []}'
    assert len(body) == 38
    s3.put_object(Bucket=bucket, Key="metadata/00001.metadata.json", Body=body, ContentType="application/json")
    s3.put_object(Bucket=bucket, Key="metadata/00002.metadata.json", Body=b"{}")  # no content type given
    keys = ["metadata/00001.metadata.json", "metadata/00002.metadata.json"]
    moto_s3 = client("s3")
    moto_s3.meta.events.register("before-call.s3.*", _as_moto)

    before = ops_env.control.stats()["plain_reads"]
    plain = _reads(s3, bucket, keys)
    assert ops_env.control.stats()["plain_reads"] == before + len(plain)  # each took the plain path
    answered = _reads(moto_s3, bucket, keys)
    assert ops_env.control.stats()["plain_reads"] == before + len(plain)  # moto answered these
    names = [w for w, _ in READS] + ["no content type given", "head", "head, no content type given"]
    for what, mine, motos in zip(names, plain, answered, strict=True):
        assert mine == motos, what
    got = dict(zip(names, plain, strict=True))
    assert got["whole"][0] == 200 and got["whole"][2] == body
    assert got["whole"][1]["content-type"] == "application/json"
    assert {"etag", "last-modified", "content-length", "accept-ranges"} <= set(got["whole"][1])
    assert got["a middle range"][0] == 206 and got["a middle range"][2] == body[2:10]
    assert got["a middle range"][1]["content-range"] == "bytes 2-9/38"
    assert got["past the end"][2] == body[30:] and got["inverted"][:3:2] == (200, body)
    assert got["head"][1]["content-length"] == "38"


def test_pyarrow_reads_table_storage_through_the_plain_path(ops_env: OpsEnv, client: Any) -> None:
    from pyarrow.fs import S3FileSystem

    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    body = b'{"format-version": 2}' * 100
    s3.put_object(Bucket=bucket, Key="metadata/m.json", Body=body, ContentType="application/json")
    fs = S3FileSystem(
        access_key="testing", secret_key="testing", region="us-east-1", endpoint_override=ops_env.endpoint
    )
    before = ops_env.control.stats()["plain_reads"]
    with fs.open_input_stream(f"{bucket}/metadata/m.json") as f:
        assert f.read() == body
    assert ops_env.control.stats()["plain_reads"] == before + 2  # its HEAD and its ranged GET


def test_anything_but_a_plain_read_is_left_to_moto(ops_env: OpsEnv, client: Any) -> None:
    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    s3.put_object(Bucket=bucket, Key="metadata/m.json", Body=b"0123456789", ContentType="application/json")
    before = ops_env.control.stats()["plain_reads"]

    suffix = s3.get_object(Bucket=bucket, Key="metadata/m.json", Range="bytes=-3")  # the last 3 bytes
    assert suffix["ResponseMetadata"]["HTTPStatusCode"] == 206 and suffix["Body"].read() == b"789"
    with pytest.raises(ClientError, match="InvalidRange"):
        s3.get_object(Bucket=bucket, Key="metadata/m.json", Range="bytes=10-")
    with pytest.raises(ClientError) as unmodified:
        s3.get_object(
            Bucket=bucket,
            Key="metadata/m.json",
            IfNoneMatch=s3.head_object(Bucket=bucket, Key="metadata/m.json")["ETag"],
        )
    assert unmodified.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    with pytest.raises(ClientError, match="NoSuchKey"):
        s3.get_object(Bucket=bucket, Key="metadata/missing.json")
    with pytest.raises(ClientError, match="NoSuchBucket"):
        s3.get_object(Bucket="0000-missing--table-s3", Key="metadata/m.json")
    overridden = s3.get_object(Bucket=bucket, Key="metadata/m.json", ResponseContentType="text/plain")
    assert overridden["ContentType"] == "text/plain"  # a query parameter: moto's answer
    assert overridden["Body"].read() == b"0123456789"

    assert ops_env.control.stats()["plain_reads"] == before + 1  # only the HEAD of the conditional GET


def test_a_fault_set_for_getobject_still_applies(ops_env: OpsEnv, client: Any) -> None:
    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    s3.put_object(Bucket=bucket, Key="metadata/m.json", Body=b"{}", ContentType="application/json")
    ops_env.control.inject_faults("GetObject", 1, code="SlowDown", status=503, message="Please reduce your rate.")
    no_retry = client("s3", retries={"total_max_attempts": 1})
    with pytest.raises(ClientError, match="SlowDown"):
        no_retry.get_object(Bucket=bucket, Key="metadata/m.json")
    assert no_retry.get_object(Bucket=bucket, Key="metadata/m.json")["Body"].read() == b"{}"
