"""The kit's one extension of botocore's models (`s3tables_kit.topology.sdk_models.MODELS_DIR`): what it adds is
what AWS documents, it is merged by botocore's own loader into every session the kit builds, and it goes once the
pinned botocore ships the operations (this test fails then and names them)."""

from __future__ import annotations

import json

import botocore.session

from s3tables_kit.jobs.kernel.sdk import boto3_session
from s3tables_kit.topology.sdk_models import MODELS_DIR

EXTRAS = MODELS_DIR / "s3tables" / "2018-05-10" / "service-2.sdk-extras.json"


def test_the_extension_adds_only_what_the_pinned_botocore_lacks() -> None:
    added = set(json.loads(EXTRAS.read_text())["merge"]["operations"])
    stock = set(botocore.session.get_session().get_service_model("s3tables").operation_names)
    assert added == {"GetChannel", "PutRows"}
    assert not added & stock, f"botocore now ships {sorted(added & stock)}: remove them from {EXTRAS}"


def test_every_kit_session_knows_get_channel_as_documented() -> None:
    """GetChannel: `GET /tables/channel?channelId=&tableArn=` (API reference), answer `state`,
    `approximateNumberOfBufferedRows`, `errorCode`, `errorMessage`."""
    client = boto3_session(region_name="us-east-1").client("s3tables")
    op = client.meta.service_model.operation_model("GetChannel")
    assert (op.http["method"], op.http["requestUri"]) == ("GET", "/tables/channel")
    where = {n: (m.serialization["location"], m.serialization["name"]) for n, m in op.input_shape.members.items()}
    assert where == {"channelId": ("querystring", "channelId"), "tableArn": ("querystring", "tableArn")}
    assert set(op.output_shape.members) == {"state", "approximateNumberOfBufferedRows", "errorCode", "errorMessage"}
    assert callable(client.get_channel) and callable(client.put_rows)


def test_the_stand_in_reads_the_same_extension() -> None:
    """The stand-in imports nothing of the kit and names the extension's folder by path: the same folder."""
    from emulator.process import SERVICE_MODELS

    assert SERVICE_MODELS.resolve() == MODELS_DIR.resolve() and (SERVICE_MODELS / "s3tables").is_dir()
