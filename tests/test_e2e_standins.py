"""`make e2e`'s localized copy (harness/e2e/standins.py), on the reviewed synth snapshots of the examples: every change
is listed, nothing is dropped silently, and the production synth carries no endpoint, credential or skip flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.e2e.standins import AWS_SERVICES, Credentials, Target, localize, native_rows

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
ACCOUNT = "111122223333"
TARGET = Target("http://127.0.0.1:4599", {ACCOUNT: Credentials("AKIAE2E", "secret")}, "/usr/bin/python3", str(ROOT))
# The machine's provider mirror: aws 5.100.0, no awscc. Its resource types as far as these tests need them.
LOCAL = {"registry.terraform.io/hashicorp/aws": ["5.100.0"]}
LOCAL_TYPES = {
    "aws_s3tables_table_bucket",
    "aws_s3tables_table",
    "aws_s3tables_namespace",
    "aws_s3tables_table_bucket_policy",
    "aws_iam_policy",
}


def _schemas() -> dict[str, Any]:
    """A provider schema as `terraform providers schema -json` prints it, for the resource types of the seed's source
    stack: aws_s3tables_table without `metadata` (aws 5.100.0), everything else as synthesized."""
    doc = _golden("seed", "source")

    def block(body: dict[str, Any]) -> dict[str, Any]:
        return {"attributes": {k: {"type": "string"} for k in body if k not in ("lifecycle", "//", "provider")}}

    resources: dict[str, Any] = {}
    for rtype, instances in doc["resource"].items():
        for body in instances.values():
            resources[rtype] = {"block": block(body)}
    resources["aws_s3tables_table"]["block"]["attributes"].pop("metadata")
    resources["aws_s3tables_table_bucket"] = {
        "block": {"attributes": {"name": {}, "encryption_configuration": {}, "maintenance_configuration": {}}}
    }
    for gone in (
        "aws_s3tables_table_replication",
        "aws_s3tables_table_bucket_replication",
        "awscc_s3tables_table_bucket",
    ):
        resources.pop(gone, None)
    return {"provider_schemas": {"registry.terraform.io/hashicorp/aws": {"resource_schemas": resources}}}


def _golden(example: str, stack: str) -> dict[str, Any]:
    return dict(json.loads((GOLDEN / example / f"{stack}.json").read_text()))


def _localized_source() -> Any:
    return localize(_golden("seed", "source"), TARGET, LOCAL, _schemas(), LOCAL_TYPES)


def test_awscc_bucket_is_mapped_to_the_aws_bucket_and_its_settings_to_an_api_standin() -> None:
    loc = _localized_source()
    res = loc.document["resource"]
    assert "awscc_s3tables_table_bucket" not in res
    (name, bucket), = res["aws_s3tables_table_bucket"].items()  # fmt: skip
    assert bucket["name"] == "demo-source-tablebucket"
    assert bucket["encryption_configuration"] == {"sse_algorithm": "AES256", "kms_key_arn": None}
    assert bucket["maintenance_configuration"]["iceberg_unreferenced_file_removal"]["settings"] == {
        "non_current_days": 10,
        "unreferenced_days": 3,
    }
    assert bucket["lifecycle"]["prevent_destroy"] is True  # the protection travels with the mapping
    settings = res["terraform_data"][f"kit_e2e__{name}__settings"]
    ops = {c["operation"]: c["arguments"] for c in settings["input"]}
    assert ops["put_table_bucket_storage_class"]["storageClassConfiguration"] == {"storageClass": "STANDARD"}
    assert ops["tag_resource"]["tags"] == {"kit": "seed", "managed-by": "s3tables-replica-kit"}
    assert settings["lifecycle"]["prevent_destroy"] is True
    # every reference to the awscc bucket now points at the aws bucket's ARN
    text = json.dumps(loc.document)
    assert "awscc_s3tables_table_bucket." not in text
    assert f"aws_s3tables_table_bucket.{name}.arn" in text


def test_replication_becomes_the_put_table_replication_call_with_the_synthesized_arguments() -> None:
    loc = _localized_source()
    standins = {k: v for k, v in loc.document["resource"]["terraform_data"].items() if "table_replication" in k}
    (body,) = standins.values()
    (call,) = body["input"]
    assert call["operation"] == "put_table_replication"
    assert call["account"] == ACCOUNT and call["region"] == "us-east-1"
    conf = call["arguments"]["configuration"]
    assert conf["role"].startswith("${aws_iam_role.replication-role")
    (rule,) = conf["rules"]
    (dest,) = rule["destinations"]
    assert "cross-stack-output" in dest["destinationTableBucketARN"]  # still read through the remote state
    assert body["lifecycle"]["prevent_destroy"] is True and body["depends_on"]
    assert "python3 -m harness.e2e.apicall" in body["provisioner"][0]["local-exec"]["command"]


def test_every_change_is_listed_and_nothing_is_dropped_silently() -> None:
    golden = _golden("seed", "source")
    loc = _localized_source()
    listed = {c.address for c in loc.changes}
    native = {c.address for c in native_rows(golden, loc)}
    for rtype, instances in golden["resource"].items():
        for name in instances:
            assert f"{rtype}.{name}" in listed | native, f"{rtype}.{name} neither native nor listed"
    assert any(c.address == "aws_s3tables_table.metadata" and c.how == "not applied" for c in loc.changes)
    assert all(c.how in ("native", "mapped", "api stand-in", "not applied", "endpoint") for c in loc.changes)


def test_providers_point_at_the_emulator_as_the_stacks_own_account() -> None:
    loc = _localized_source()
    blocks = loc.document["provider"]["aws"]
    assert {b.get("alias") for b in blocks} == {None, "untagged"}
    for b in blocks:
        assert b["allowed_account_ids"] == [ACCOUNT]  # still checked, through STS on the emulator
        assert b["access_key"] == "AKIAE2E" and b["skip_credentials_validation"] is True
        assert b["endpoints"] == [{svc: TARGET.endpoint for svc in AWS_SERVICES}]
    assert "awscc" not in loc.document["provider"]
    assert loc.document["terraform"]["required_providers"]["aws"].get("version") is None  # 6.25.0 relaxed to local


def test_an_unknown_awscc_argument_is_refused_not_dropped() -> None:
    doc = _golden("seed", "source")
    (body,) = doc["resource"]["awscc_s3tables_table_bucket"].values()
    body["metrics_configuration"] = {"status": "Enabled"}
    with pytest.raises(ValueError, match="no stand-in for argument"):
        localize(doc, TARGET, LOCAL, _schemas(), LOCAL_TYPES)


E2E_ONLY = (
    "127.0.0.1",
    "localhost",
    "access_key",
    "secret_key",
    "skip_credentials_validation",
    "skip_requesting_account_id",
    "skip_metadata_api_check",
    '"endpoints"',
    "kit_e2e__",
)


@pytest.mark.parametrize("example", ["seed", "multi-account"])
def test_the_production_synth_carries_no_endpoint_credential_or_skip_flag(example: str) -> None:
    """The e2e settings exist only in the localized copy: the reviewed synth snapshots and the rendered policies
    never name an endpoint, a key or a skip flag."""
    texts = [p.read_text() for p in sorted((GOLDEN / example).glob("*.json"))]
    texts += [p.read_text() for p in sorted((ROOT / "policies" / "rendered").rglob("*.json"))]
    for text in texts:
        for needle in E2E_ONLY:
            assert needle not in text


def test_with_a_provider_whose_table_bucket_takes_tags_the_tags_go_on_the_bucket() -> None:
    """hashicorp/aws 6.x reads a table bucket's tags back: tags applied beside the resource (a stand-in) would show as
    a change in every plan, so they go where the provider reads them."""
    schemas = _schemas()
    aws = schemas["provider_schemas"]["registry.terraform.io/hashicorp/aws"]["resource_schemas"]
    aws["aws_s3tables_table_bucket"]["block"]["attributes"]["tags"] = {}
    loc = localize(_golden("seed", "source"), TARGET, LOCAL, schemas, LOCAL_TYPES)
    res = loc.document["resource"]
    (name, bucket), = res["aws_s3tables_table_bucket"].items()  # fmt: skip
    assert bucket["tags"] == {"kit": "seed", "managed-by": "s3tables-replica-kit"}
    ops = {c["operation"] for c in res["terraform_data"][f"kit_e2e__{name}__settings"]["input"]}
    assert ops == {"put_table_bucket_storage_class"}  # no TagResource beside it
