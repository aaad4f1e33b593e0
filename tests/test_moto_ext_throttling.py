"""The emulator's latency and throttling: per-service latency, a seeded share of throttled calls, a burst,
and S3's own throttling error. Real HTTP through botocore; clients with one attempt so every injected error shows."""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from tests.ops_fixtures import SRC_REGION, OpsEnv


def _bucket_with_tables(env: OpsEnv, n: int) -> tuple[str, list[str]]:
    s3t = env.clients().s3tables(SRC_REGION)
    arn = s3t.create_table_bucket(name="throttle-src")["arn"]
    env.control.seed(arn, {"ns": [f"t{i:03d}" for i in range(n)]}, commit_ms=1_700_000_000_000)
    return arn, [f"t{i:03d}" for i in range(n)]


def _throttled(env: OpsEnv, bucket: str, names: list[str]) -> list[str]:
    """The names whose GetTable was throttled (one attempt each)."""
    s3t = env.clients(max_attempts=1).s3tables(SRC_REGION)
    out = []
    for name in names:
        try:
            s3t.get_table(tableBucketARN=bucket, namespace="ns", name=name)
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "TooManyRequestsException"
            assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 429
            out.append(name)
    return out


def test_share_is_seeded_and_reproducible(ops_env: OpsEnv) -> None:
    bucket, names = _bucket_with_tables(ops_env, 200)
    ops_env.control.throttle("GetTable", 0.2, seed=7)
    first = _throttled(ops_env, bucket, names)
    assert 20 <= len(first) <= 60  # 20% of 200 (binomial; seeded, so the same every run)
    again = _throttled(ops_env, bucket, first)  # a retry of a throttled call gets a fresh draw
    assert len(again) < len(first)
    (fault,) = ops_env.control.stats()["faults"]
    assert fault["served"] == len(first) + len(again) and fault["seen"] == 200 + len(first)
    # Same seed, same requests, fresh emulator: the same calls are throttled (in any order, on any thread).
    ops_env.control.reset()
    bucket, _ = _bucket_with_tables(ops_env, 200)
    ops_env.control.throttle("GetTable", 0.2, seed=7)
    assert _throttled(ops_env, bucket, names[::-1]) == first[::-1]
    # another seed, another set
    ops_env.control.reset()
    bucket, _ = _bucket_with_tables(ops_env, 200)
    ops_env.control.throttle("GetTable", 0.2, seed=8)
    assert _throttled(ops_env, bucket, names) != first


def test_burst_then_normal_service(ops_env: OpsEnv) -> None:
    bucket, names = _bucket_with_tables(ops_env, 30)
    ops_env.control.inject_faults("GetTable", 10)
    assert _throttled(ops_env, bucket, names) == names[:10]
    assert _throttled(ops_env, bucket, names) == []


def test_wildcard_operation_of_one_service(ops_env: OpsEnv) -> None:
    bucket, _ = _bucket_with_tables(ops_env, 5)
    ops_env.control.throttle("*", 1.0, service="s3tables")
    s3t = ops_env.clients(max_attempts=1).s3tables(SRC_REGION)
    with pytest.raises(ClientError, match="TooManyRequestsException"):
        s3t.list_tables(tableBucketARN=bucket)
    with pytest.raises(ClientError, match="TooManyRequestsException"):
        s3t.get_table_metadata_location(tableBucketARN=bucket, namespace="ns", name="t000")
    loc = ops_env.clients(max_attempts=3).s3tables(SRC_REGION)
    with pytest.raises(ClientError, match="TooManyRequestsException"):  # retries give up too: every call is throttled
        loc.get_table(tableBucketARN=bucket, namespace="ns", name="t000")


def test_s3_throttling_is_slowdown_503(ops_env: OpsEnv) -> None:
    bucket, _ = _bucket_with_tables(ops_env, 1)
    loc = (
        ops_env.clients()
        .s3tables(SRC_REGION)
        .get_table_metadata_location(tableBucketARN=bucket, namespace="ns", name="t000")["metadataLocation"]
    )
    b, key = loc.removeprefix("s3://").split("/", 1)
    ops_env.control.inject_faults("GetObject", 1, "SlowDown", 503, "Please reduce your request rate.", service="s3")
    s3 = ops_env.clients(max_attempts=1).s3(SRC_REGION)
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=b, Key=key)
    assert err.value.response["Error"]["Code"] == "SlowDown"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert s3.get_object(Bucket=b, Key=key)["Body"].read()  # the burst of one is over


def test_latency_per_service(ops_env: OpsEnv) -> None:
    bucket, _ = _bucket_with_tables(ops_env, 1)
    s3t = ops_env.clients().s3tables(SRC_REGION)
    ops_env.control.set_latency(service="s3tables", seconds=0.2)
    started = time.monotonic()
    s3t.get_table(tableBucketARN=bucket, namespace="ns", name="t000")
    assert time.monotonic() - started >= 0.2  # a lower bound only: the sleep is in the server
    ops_env.control.set_latency("GetTable", 0.4)  # an operation's own latency wins over its service's
    started = time.monotonic()
    s3t.get_table(tableBucketARN=bucket, namespace="ns", name="t000")
    assert time.monotonic() - started >= 0.4
