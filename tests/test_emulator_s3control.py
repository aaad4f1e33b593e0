"""S3 Control tag operations on a general purpose bucket, as hashicorp/aws 6.x calls them (it reads and writes an
`aws_s3_bucket`'s tags through S3 Control): the SDKs send them to the account-prefixed host (`<account>.<endpoint
host>`, the account also in `x-amz-account-id`), which reaches the emulator as a proxy request, as `make e2e` runs
Terraform. The tags are the bucket's own (S3's GetBucketTagging reads the same)."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from tests.ops_fixtures import ACCOUNT, OpsEnv

BUCKET = "kit-scripts-bucket"
ARN = f"arn:aws:s3:::{BUCKET}"


def _client(env: OpsEnv, service: str, config: Config | None = None) -> Any:
    return boto3.client(
        service,
        region_name="us-east-1",
        endpoint_url=env.endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def test_bucket_tags_through_s3control_at_the_account_prefixed_host(ops_env: OpsEnv) -> None:
    _client(ops_env, "s3").create_bucket(Bucket=BUCKET)
    # Host prefix injected (`123456789012.127.0.0.1:<port>`), sent through the emulator as the HTTP proxy.
    by_host = _client(ops_env, "s3control", Config(proxies={"http": ops_env.endpoint}))

    by_host.tag_resource(AccountId=ACCOUNT, ResourceArn=ARN, Tags=[{"Key": "kit", "Value": "scripts"}])
    by_host.tag_resource(AccountId=ACCOUNT, ResourceArn=ARN, Tags=[{"Key": "owner", "Value": "platform"}])
    want = [{"Key": "kit", "Value": "scripts"}, {"Key": "owner", "Value": "platform"}]
    got = by_host.list_tags_for_resource(AccountId=ACCOUNT, ResourceArn=ARN)["Tags"]
    assert sorted(got, key=lambda t: t["Key"]) == want
    assert sorted(_client(ops_env, "s3").get_bucket_tagging(Bucket=BUCKET)["TagSet"], key=lambda t: t["Key"]) == want

    by_host.untag_resource(AccountId=ACCOUNT, ResourceArn=ARN, TagKeys=["owner"])
    assert by_host.list_tags_for_resource(AccountId=ACCOUNT, ResourceArn=ARN)["Tags"] == want[:1]


def test_tags_given_at_create_bucket_are_the_buckets(ops_env: OpsEnv) -> None:
    """hashicorp/aws 6.x creates a bucket with its tags in CreateBucket and reads them through S3 Control."""
    s3 = _client(ops_env, "s3")
    s3.create_bucket(Bucket="kit-tagged-at-create", CreateBucketConfiguration={"Tags": [
        {"Key": "kit", "Value": "seed"}, {"Key": "managed-by", "Value": "s3tables-replica-kit"},
    ]})  # fmt: skip
    by_host = _client(ops_env, "s3control", Config(proxies={"http": ops_env.endpoint}))
    got = by_host.list_tags_for_resource(AccountId=ACCOUNT, ResourceArn="arn:aws:s3:::kit-tagged-at-create")["Tags"]
    assert sorted(got, key=lambda t: t["Key"]) == [
        {"Key": "kit", "Value": "seed"}, {"Key": "managed-by", "Value": "s3tables-replica-kit"},
    ]  # fmt: skip
    s3.create_bucket(Bucket="kit-untagged")
    assert by_host.list_tags_for_resource(AccountId=ACCOUNT, ResourceArn="arn:aws:s3:::kit-untagged")["Tags"] == []
