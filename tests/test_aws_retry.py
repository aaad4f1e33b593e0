"""The kit's one retry policy: botocore clients and pyiceberg/pyarrow S3 FileIO absorb throttling the
emulator serves (S3 `SlowDown` 503 bursts), and every client construction site uses the policy."""

from __future__ import annotations

import json

import pytest

from s3tables_kit.jobs.kernel import sdk
from tests.ops_fixtures import SRC_REGION, OpsEnv


def _metadata_object(env: OpsEnv) -> tuple[str, dict[str, str]]:
    s3t = env.clients().s3tables(SRC_REGION)
    bucket = s3t.create_table_bucket(name="retry-src")["arn"]
    env.control.seed(bucket, {"ns": ["t"]}, commit_ms=1_700_000_000_000)
    loc = s3t.get_table_metadata_location(tableBucketARN=bucket, namespace="ns", name="t")["metadataLocation"]
    props = {
        "s3.region": SRC_REGION,
        "s3.endpoint": env.endpoint,
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
    }
    return loc, props


def _read(location: str, props: dict[str, str]) -> dict[str, object]:
    from pyiceberg.io import load_file_io

    io = load_file_io(props, location)
    with io.new_input(location).open() as f:
        return dict(json.loads(f.read()))


def test_pyiceberg_fileio_retries_with_the_kit_strategy(ops_env: OpsEnv) -> None:
    loc, props = _metadata_object(ops_env)
    # pyarrow's default strategy (3 attempts) gives up on a burst of 3 SlowDown answers...
    ops_env.control.inject_faults("*", 3, "SlowDown", 503, "Please reduce your request rate.", service="s3")
    with pytest.raises(OSError):
        _read(loc, props)
    # ...the kit's (10 attempts, the same property pyiceberg documents) reads through the next one.
    ops_env.control.inject_faults("*", 4, "SlowDown", 503, "Please reduce your request rate.", service="s3")
    assert _read(loc, sdk.fileio_properties(props))["format-version"] == 2
    served = sum(f["served"] for f in ops_env.control.stats()["faults"])
    assert served == 3 + 4  # both bursts entirely served: the reads really were throttled


def test_boto3_client_absorbs_a_burst(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    loc, _ = _metadata_object(ops_env)
    bucket, key = loc.removeprefix("s3://").split("/", 1)
    ops_env.control.inject_faults("GetObject", 3, "SlowDown", 503, "Please reduce your request rate.", service="s3")
    s3 = sdk.client(
        "s3",
        SRC_REGION,
        ops_env.endpoint,
        s3={"addressing_style": "path"},
        response_checksum_validation="when_required",
    )
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    (fault,) = ops_env.control.stats()["faults"]
    assert fault["served"] == 3


def test_policy_modes_and_construction_sites() -> None:
    assert sdk.retry_config().retries == {"mode": "standard", "total_max_attempts": sdk.MAX_ATTEMPTS}
    assert sdk.retry_config(3, data_plane=True).retries == {"mode": "adaptive", "total_max_attempts": 3}
    with pytest.raises(ValueError, match="at least 1"):
        sdk.retry_config(0)
    from s3tables_kit.jobs.kernel.clients import Clients

    conf = Clients(endpoint_url="http://127.0.0.1:1")._config("s3tables")
    assert conf.retries == {"mode": "standard", "total_max_attempts": sdk.MAX_ATTEMPTS}
    from s3tables_kit.jobs.kernel.filecopy import StoreConfig, s3_client

    client = s3_client(StoreConfig(region="us-east-1", endpoint="http://127.0.0.1:1"))
    assert client.meta.config.retries["mode"] == "adaptive"  # bulk S3 object traffic
    props = sdk.fileio_properties({"s3.region": "x"})
    assert (
        props["s3.retry-strategy-impl"] == "s3tables_kit.jobs.kernel.sdk.KitS3RetryStrategy"
        and props["s3.region"] == "x"
    )
    assert type(sdk.KitS3RetryStrategy()).__name__ == "AwsStandardS3RetryStrategy"
