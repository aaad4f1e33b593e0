"""A slow first answer to a non-idempotent create: the SDK gives up on the first attempt (its read timeout), retries,
and the retry meets the table the first attempt created: `409 ConflictException: A table with an identical name
already exists in the namespace.`, what AWS answers a retried CreateTable too (it takes no client token). This is the
409 a `cdktf deploy` can hit; docs/provisioning.md says what to do (import, then apply)."""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.ops_fixtures import OpsEnv


def test_a_create_retried_after_a_slow_first_answer_meets_its_own_table(ops_env: OpsEnv) -> None:
    def client(read_timeout: float) -> object:
        return boto3.client(
            "s3tables",
            region_name="us-east-1",
            endpoint_url=ops_env.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(read_timeout=read_timeout, retries={"mode": "standard", "max_attempts": 3}),
        )

    patient = client(30)
    bucket = patient.create_table_bucket(name="slow-create")["arn"]  # type: ignore[attr-defined]
    patient.create_namespace(tableBucketARN=bucket, namespace=["analytics"])  # type: ignore[attr-defined]
    ops_env.control.set_latency("CreateTable", 1.5, count=1, after=True)  # created at once, answered late
    with pytest.raises(ClientError) as err:
        client(0.5).create_table(  # type: ignore[attr-defined]
            tableBucketARN=bucket, namespace="analytics", name="orders", format="ICEBERG"
        )
    assert err.value.response["Error"]["Code"] == "ConflictException"
    assert err.value.response["ResponseMetadata"]["RetryAttempts"] >= 1
    assert "identical name already exists" in err.value.response["Error"]["Message"]
    # The first attempt did create it: importing it is the way forward, not creating it again.
    tables = patient.list_tables(tableBucketARN=bucket, namespace="analytics")["tables"]  # type: ignore[attr-defined]
    assert [t["name"] for t in tables] == ["orders"]
    assert ops_env.control.stats()["calls"]["CreateTable"] == 2
