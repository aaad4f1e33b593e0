"""The S3 Tables Iceberg REST endpoint's loadTable (`s3tables_kit.jobs.kernel.iceberg_rest`, served by
`emulator.iceberg_rest`).

The emulator's answer is checked with a client the kit did not write (pyiceberg's `RestCatalog`, SigV4-signed under
``s3tables``, which validates the answer against Iceberg's table model) and against the S3 Tables API's own read of
the same table (GetTableMetadataLocation, then GetObject of the file); the kit's client is then checked against
both."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import LOCAL_CREDENTIALS
from s3tables_kit.jobs.kernel.iceberg_rest import IcebergRest, error_of, load_table_path, refuses_endpoint
from s3tables_kit.jobs.kernel.sdk import split_s3_uri
from tests.ops_fixtures import ACCOUNT, DST_REGION, OpsEnv, World, deploy

ARN = "arn:aws:s3tables:us-east-1:111122223333:bucket/my-bucket"


def test_load_table_path_encodes_the_bucket_arn_as_the_prefix() -> None:
    assert load_table_path(ARN, "sales", "orders") == (
        "/v1/arn%3Aaws%3As3tables%3Aus-east-1%3A111122223333%3Abucket%2Fmy-bucket/namespaces/sales/tables/orders"
    )


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"),
    [
        (
            403,
            {"x-amzn-ErrorType": "AccessDeniedException:http://x/"},
            b'{"message": "no"}',
            ("AccessDeniedException", "no"),
        ),
        (
            404,
            {},
            b'{"error": {"message": "gone", "type": "NoSuchTableException", "code": 404}}',
            ("NoSuchTableException", "gone"),
        ),
        (429, {}, b"", ("TooManyRequestsException", "")),
        (503, {}, b"<html>", ("ServiceUnavailable", "")),
        (418, {}, b"[]", ("HTTP418", "")),
    ],
)
def test_error_of_reads_the_front_doors_and_the_iceberg_error_shapes(
    status: int, headers: dict[str, str], body: bytes, expected: tuple[str, str]
) -> None:
    assert error_of(status, headers, body) == expected


def test_a_missing_table_does_not_refuse_the_endpoint() -> None:
    assert not refuses_endpoint(404, "NoSuchTableException")
    assert refuses_endpoint(404, "HTTP404")  # no such route: an endpoint that does not serve loadTable
    assert refuses_endpoint(403, "AccessDeniedException")
    assert not refuses_endpoint(429, "TooManyRequestsException") and not refuses_endpoint(500, "InternalServerError")


@pytest.fixture
def world(ops_env: OpsEnv) -> World:
    w = deploy(ops_env, tables=("orders",))
    ops_env.control.seed(w.source_arn, {"sales": ["t1", "t2"]}, commit_ms=1_767_000_000_000)
    ops_env.control.replicate(source_bucket_arn=w.source_arn)
    return w


def _s3_read(world: World, name: str) -> tuple[str, dict[str, object]]:
    """The replica's location and metadata as the S3 Tables API reads them (two requests)."""
    got = world.dst().get_table_metadata_location(tableBucketARN=world.replica_arn, namespace="sales", name=name)
    bucket, key = split_s3_uri(got["metadataLocation"])
    raw = world.clients.s3(DST_REGION).get_object(Bucket=bucket, Key=key)["Body"].read()
    return got["metadataLocation"], json.loads(raw)


def test_pyiceberg_loads_a_replica_through_the_endpoint_as_the_s3_tables_api_reads_it(
    ops_env: OpsEnv, world: World
) -> None:
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog(
        "replica",
        **{
            "uri": f"{ops_env.endpoint}/iceberg",
            "warehouse": world.replica_arn,
            "rest.sigv4-enabled": "true",
            "rest.signing-name": "s3tables",
            "rest.signing-region": DST_REGION,
            "client.region": DST_REGION,
            "client.access-key-id": "accesskey",
            "client.secret-access-key": "secretkey",
            "client.session-token": "token",
        },
    )
    table = catalog.load_table(("sales", "t1"))
    location, metadata = _s3_read(world, "t1")
    assert table.metadata_location == location
    assert [s.snapshot_id for s in table.metadata.snapshots] == [s["snapshot-id"] for s in metadata["snapshots"]]
    assert str(table.metadata.table_uuid) == metadata["table-uuid"]
    assert ops_env.control.stats()["calls"].get("LoadTable") == 1


def test_the_kits_client_reads_what_the_s3_tables_api_reads(world: World) -> None:
    b = world.replica_arn.split(":")
    rest = world.clients.iceberg_rest(b[3], b[4])
    for name in ("t1", "t2"):
        loaded = rest.load_table(world.replica_arn, "sales", name)
        assert (loaded.metadata_location, loaded.metadata) == _s3_read(world, name)
    with pytest.raises(ClientError) as missing:
        rest.load_table(world.replica_arn, "sales", "nope")
    assert missing.value.response["Error"]["Code"] == "NoSuchTableException"
    assert missing.value.operation_name == "LoadTable"
    assert not rest.refused  # one missing table says nothing of the endpoint


def test_through_a_proxy_botocores_transport_reads_the_same(world: World, ops_env: OpsEnv) -> None:
    """A client with a proxy keeps botocore's transport (the proxy is the stand-in itself, which serves a request
    in proxy form); without one the kit's own signed GET is used; both read the same table the same way."""
    arn, (region, account) = world.replica_arn, world.replica_arn.split(":")[3:5]
    direct = world.clients.iceberg_rest(region, account)
    session = boto3.session.Session(**LOCAL_CREDENTIALS, region_name=region)
    endpoint = world.clients.s3tables(region, account).meta.endpoint_url
    via_proxy = Config(proxies={"http": ops_env.endpoint})
    proxied = IcebergRest(
        session.client("s3tables", endpoint_url=endpoint, config=via_proxy), session.get_credentials()
    )
    assert direct._lean is not None and proxied._lean is None
    for name in ("t1", "t2"):
        assert proxied.load_table(arn, "sales", name) == direct.load_table(arn, "sales", name)


def test_load_table_is_authorized_as_the_location_and_the_data_read(ops_env: OpsEnv, world: World) -> None:
    """With the stand-in authorizing by IAM (emulator/live.py), loadTable needs s3tables:GetTableMetadataLocation and
    s3tables:GetTableData on the table, and the kit's client signs with the role it assumed, not the default
    credentials."""
    iam = ops_env.clients().client("iam", "us-east-1")
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}
    ]}  # fmt: skip
    role = iam.create_role(RoleName="window-reader", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]

    def allow(*actions: str) -> None:
        doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": list(actions), "Resource": "*"}]}
        iam.put_role_policy(RoleName="window-reader", PolicyName="read", PolicyDocument=json.dumps(doc))

    allow("s3tables:GetTableMetadataLocation")
    ops_env.control.call("live/authz", {"on": True})
    try:
        rest = ops_env.clients(role_arns={ACCOUNT: role}).iceberg_rest(DST_REGION, ACCOUNT)
        with pytest.raises(ClientError) as denied:
            rest.load_table(world.replica_arn, "sales", "t1")
        assert denied.value.response["Error"]["Code"] == "AccessDeniedException"
        assert "s3tables:GetTableData" in denied.value.response["Error"]["Message"]
        assert rest.refused
        allow("s3tables:GetTableMetadataLocation", "s3tables:GetTableData")
        rest = ops_env.clients(role_arns={ACCOUNT: role}).iceberg_rest(DST_REGION, ACCOUNT)
        assert rest.load_table(world.replica_arn, "sales", "t1").metadata_location == _s3_read(world, "t1")[0]
        decisions = ops_env.control.call("live/state")["decisions"]
    finally:
        ops_env.control.call("live/authz", {"on": False})
    asked = [(d["action"], d["decision"]) for d in decisions if d["principal"] == role]
    assert asked == [
        ("s3tables:GetTableMetadataLocation", "allowed"),
        ("s3tables:GetTableData", "implicit"),
        ("s3tables:GetTableMetadataLocation", "allowed"),
        ("s3tables:GetTableData", "allowed"),
    ]
