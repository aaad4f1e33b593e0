"""The emulator's `DisassociateTableReplication` (docs/aws-facts.md#disassociating-a-replica), called
through the kit's own clients (the stock boto3/botocore >= 1.44.7, which ships the operation) over real HTTP."""

from __future__ import annotations

import contextlib
import datetime as dt
from datetime import timedelta
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError

from emulator.app import DETACHED_FAILURE
from s3tables_kit.jobs.kernel.clients import Clients
from tests.ops_fixtures import OpsEnv, World, deploy

NOW = dt.datetime.now(dt.UTC)


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


def _summaries(world: World) -> dict[str, dict]:
    page = world.dst().list_tables(tableBucketARN=world.replica_arn)
    return {f"{t['namespace'][0]}.{t['name']}": t for t in page["tables"]}


def _write(world: World, qualified: str) -> None:
    """A writer's commit on the replica bucket's table (as an Iceberg catalog would: new metadata location)."""
    ns, name = qualified.split(".")
    dst = world.dst()
    loc = dst.get_table_metadata_location(tableBucketARN=world.replica_arn, namespace=ns, name=name)
    dst.update_table_metadata_location(
        tableBucketARN=world.replica_arn,
        namespace=ns,
        name=name,
        versionToken=loc["versionToken"],
        metadataLocation=loc["warehouseLocation"] + "/metadata/99999-writer.metadata.json",
    )


def _status(world: World, qualified: str) -> dict:
    out = world.src().get_table_replication_status(tableArn=world.tables[qualified])
    [dest] = out["destinations"]
    return dict(dest)


def test_disassociate_semantics(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    dst = world.dst()
    replica = world.replica_table("analytics.orders")
    before = _status(world, "analytics.orders")
    assert before["replicationStatus"].upper() == "COMPLETED"

    # a replica: managed, read-only
    assert (
        replica["managedByService"]
        and replica["managedTableInformation"]["replicationInformation"]["sourceTableARN"]
        == world.tables["analytics.orders"]
    )
    assert all(s.get("managedByService") for s in _summaries(world).values())
    with pytest.raises(ClientError) as exc:
        _write(world, "analytics.orders")
    assert _code(exc) == "ForbiddenException"

    # only a replica can be disassociated (the source table is not one)
    with pytest.raises(ClientError) as exc:
        world.src().disassociate_table_replication(tableArn=world.tables["analytics.orders"])
    assert _code(exc) == "BadRequestException"

    dst.disassociate_table_replication(tableArn=replica["tableARN"])

    # in place: same ARN, namespace, name, metadata; no longer managed (GetTable and ListTables)
    after = world.replica_table("analytics.orders")
    assert after["tableARN"] == replica["tableARN"] and after["metadataLocation"] == replica["metadataLocation"]
    assert "managedByService" not in after and "managedTableInformation" not in after
    summaries = _summaries(world)
    assert "managedByService" not in summaries["analytics.orders"]
    assert summaries["analytics.customers"].get("managedByService")  # the others are still replicas
    assert "managedTableInformation" in world.replica_table("analytics.customers")

    # the source does not know until replication is next attempted
    assert _status(world, "analytics.orders") == before

    # permanent: calling it again fails
    with pytest.raises(ClientError) as exc:
        dst.disassociate_table_replication(tableArn=replica["tableARN"])
    assert _code(exc) == "BadRequestException"

    # writable now; compaction (refused on replicas) is accepted too
    _write(world, "analytics.orders")
    dst.put_table_maintenance_configuration(
        tableBucketARN=world.replica_arn,
        namespace="analytics",
        name="orders",
        type="icebergCompaction",
        value={"status": "enabled"},
    )
    written = world.replica_table("analytics.orders")["metadataLocation"]

    # the next replication attempt: the detached table is not touched, the source reports FAILED for it
    world.commit("analytics.orders", NOW - timedelta(minutes=1))
    world.commit("analytics.customers", NOW - timedelta(minutes=1))
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    assert world.replica_table("analytics.orders")["metadataLocation"] == written
    failed = _status(world, "analytics.orders")
    assert failed["replicationStatus"].upper() == "FAILED"
    assert failed["failureMessage"].startswith("The destination table has been det")
    assert failed["failureMessage"] == DETACHED_FAILURE
    assert failed["destinationTableArn"] == replica["tableARN"]
    # the time replication last succeeded is kept
    assert failed["lastSuccessfulReplicatedUpdate"] == before["lastSuccessfulReplicatedUpdate"]
    # the other tables keep replicating
    assert _status(world, "analytics.customers")["replicationStatus"].upper() == "COMPLETED"
    assert "managedByService" not in world.replica_table("analytics.orders")

    # and it stays that way
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    assert _status(world, "analytics.orders")["replicationStatus"].upper() == "FAILED"


def test_disassociate_unknown_table_is_not_found(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, replicate=False)
    missing = world.replica_arn + "/table/0d9c1a7e-1111-2222-3333-444455556666"
    with pytest.raises(ClientError) as exc:
        world.dst().disassociate_table_replication(tableArn=missing)
    assert _code(exc) == "NotFoundException"


TABLE_ARN = (
    "arn:aws:s3tables:us-east-1:123456789012:bucket/demo-dest-tablebucket/table/0d9c1a7e-1111-2222-3333-444455556666"
)


def test_stock_botocore_ships_the_operation() -> None:
    """The pinned botocore's own model (no overlay, a plain session): the documented binding, table ARN required."""
    model = botocore.session.get_session().get_service_model("s3tables")
    op = model.operation_model("DisassociateTableReplication")
    assert op.http["method"] == "PUT" and op.http["requestUri"].split("?")[0] == "/table-replication/disassociate"
    assert op.input_shape is not None and op.input_shape.required_members == ["tableArn"]
    assert op.input_shape.members["tableArn"].serialization == {"location": "querystring", "name": "tableArn"}


def test_kit_clients_serialise_the_documented_request(ops_env: OpsEnv) -> None:
    """Through the ops tools' own client factory against the emulator: PUT /table-replication/disassociate with
    the table ARN as the `tableArn` query parameter and no body (AWS API reference)."""
    client = Clients(endpoint_url=ops_env.endpoint).s3tables("us-east-1")
    sent: list[Any] = []
    client.meta.events.register(
        "before-send.s3tables.DisassociateTableReplication", lambda request, **_: sent.append(request)
    )
    # no such table in the emulator (NotFoundException): the request itself is what this test is about
    with contextlib.suppress(client.exceptions.NotFoundException):
        client.disassociate_table_replication(tableArn=TABLE_ARN)
    [req] = sent
    assert req.method == "PUT"
    path, _, query = req.url.partition("?")
    assert path == f"{ops_env.endpoint}/table-replication/disassociate"
    assert query == "tableArn=" + TABLE_ARN.replace(":", "%3A").replace("/", "%2F")
    assert not req.body
