"""The emulator answers a plain GetObject on table storage without moto's request stack
(`emulator.storage.plain_get_object`): the answer must be moto's own, and anything but the plain case must still be
moto's. moto's answer to the same request is had through moto's documented `x-moto-account-id` header (the same
account), which the plain path leaves to moto."""

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


def test_a_plain_get_on_table_storage_is_answered_as_moto_answers_it(ops_env: OpsEnv, client: Any) -> None:
    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    body = b'{"format-version": 2, "snapshots": []}'
    s3.put_object(Bucket=bucket, Key="metadata/00001.metadata.json", Body=body, ContentType="application/json")
    s3.put_object(Bucket=bucket, Key="metadata/00002.metadata.json", Body=b"{}")  # no content type given

    before = ops_env.control.stats()["plain_gets"]
    plain = [_answer(s3, bucket, f"metadata/0000{i}.metadata.json") for i in (1, 2)]
    assert ops_env.control.stats()["plain_gets"] == before + 2  # both took the plain path

    moto_s3 = client("s3")
    moto_s3.meta.events.register("before-call.s3.GetObject", _as_moto)
    answered = [_answer(moto_s3, bucket, f"metadata/0000{i}.metadata.json") for i in (1, 2)]
    assert ops_env.control.stats()["plain_gets"] == before + 2  # moto answered these
    assert plain == answered
    assert plain[0][0] == 200 and plain[0][2] == body
    assert plain[0][1]["content-type"] == "application/json"
    assert {"etag", "last-modified", "content-length", "accept-ranges"} <= set(plain[0][1])


def test_anything_but_a_plain_get_is_left_to_moto(ops_env: OpsEnv, client: Any) -> None:
    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    s3.put_object(Bucket=bucket, Key="metadata/m.json", Body=b"0123456789", ContentType="application/json")
    before = ops_env.control.stats()["plain_gets"]

    ranged = s3.get_object(Bucket=bucket, Key="metadata/m.json", Range="bytes=2-4")
    assert ranged["ResponseMetadata"]["HTTPStatusCode"] == 206 and ranged["Body"].read() == b"234"
    etag = s3.head_object(Bucket=bucket, Key="metadata/m.json")["ETag"]
    with pytest.raises(ClientError) as unmodified:
        s3.get_object(Bucket=bucket, Key="metadata/m.json", IfNoneMatch=etag)
    assert unmodified.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    with pytest.raises(ClientError, match="NoSuchKey"):
        s3.get_object(Bucket=bucket, Key="metadata/missing.json")
    with pytest.raises(ClientError, match="NoSuchBucket"):
        s3.get_object(Bucket="0000-missing--table-s3", Key="metadata/m.json")
    overridden = s3.get_object(Bucket=bucket, Key="metadata/m.json", ResponseContentType="text/plain")
    assert overridden["ContentType"] == "text/plain"  # a query parameter: moto's answer
    assert overridden["Body"].read() == b"0123456789"

    assert ops_env.control.stats()["plain_gets"] == before


def test_a_fault_set_for_getobject_still_applies(ops_env: OpsEnv, client: Any) -> None:
    s3tables, s3 = client("s3tables"), client("s3")
    bucket = _warehouse(s3tables)
    s3.put_object(Bucket=bucket, Key="metadata/m.json", Body=b"{}", ContentType="application/json")
    ops_env.control.inject_faults("GetObject", 1, code="SlowDown", status=503, message="Please reduce your rate.")
    no_retry = client("s3", retries={"total_max_attempts": 1})
    with pytest.raises(ClientError, match="SlowDown"):
        no_retry.get_object(Bucket=bucket, Key="metadata/m.json")
    assert no_retry.get_object(Bucket=bucket, Key="metadata/m.json")["Body"].read() == b"{}"
