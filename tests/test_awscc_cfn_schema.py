"""Every awscc resource the kit synthesizes, checked against the CloudFormation resource schema of its type as bundled
in cfn-lint (the schemas awscc is generated from): property names (snake_case of the CloudFormation names), nesting,
types, enums, required, read-only and create-only. No awscc binary exists here, so `make validate` lists awscc as not
checked by terraform and this test covers it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3tables_kit.infra.cfn_check import cfn_type, check_awscc_resource, snake

Stacks = dict[str, dict[str, Any]]


def awscc_resources(synthesized: dict[str, Stacks]) -> list[tuple[str, str, str, dict[str, Any], str]]:
    out = []
    for example, stacks in synthesized.items():
        for stack, doc in stacks.items():
            region = doc["provider"]["awscc"][0]["region"] if "awscc" in doc.get("provider", {}) else ""
            for rtype, instances in doc.get("resource", {}).items():
                if rtype.startswith("awscc_"):
                    for name, body in instances.items():
                        out.append((f"{example}/{stack}", rtype, name, body, region))
    return out


def test_snake_case_mapping_of_cloudformation_names() -> None:
    assert [snake(n) for n in ("KMSKeyArn", "SSEAlgorithm", "TableBucketARN", "UnreferencedDays", "Tags")] == [
        "kms_key_arn", "sse_algorithm", "table_bucket_arn", "unreferenced_days", "tags",
    ]  # fmt: skip
    assert cfn_type("awscc_s3tables_table_bucket", "us-east-1") == "AWS::S3Tables::TableBucket"


def test_every_awscc_resource_matches_its_cloudformation_schema(synthesized: dict[str, Stacks]) -> None:
    found = awscc_resources(synthesized)
    # a table bucket in every source, replica and recovery stack: adopt 3, seed 3, multi-account 5, estate 6, lake 19
    assert len(found) == 36
    for where, rtype, name, body, region in found:
        assert region, f"{where}: no awscc provider Region"
        result = check_awscc_resource(rtype, body, region)
        assert result.problems == [], f"{where} {rtype}.{name}"
        # A create-only property forces replacement when it changes: only the bucket name, behind prevent_destroy.
        assert result.create_only_set == ["table_bucket_name"], where
        assert body["lifecycle"]["prevent_destroy"] is True
        # every setting the kit relies on reached the CloudFormation document; an adopted bucket (imported) gets its
        # name and stated encryption only, and keeps its own storage class, file removal and tags
        doc = result.document
        if where == "adopt/source":
            assert set(doc) == {"TableBucketName", "EncryptionConfiguration"}, where
            continue
        assert {"TableBucketName", "EncryptionConfiguration", "StorageClassConfiguration",
                "UnreferencedFileRemoval", "Tags"} <= set(doc), where  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda b: b.update(storage_class="STANDARD"), "table_bucket.storage_class: no such property"),
        (lambda b: b["storage_class_configuration"].update(storage_class="GLACIER"), "'GLACIER' is not one of"),
        (lambda b: b["encryption_configuration"].update(kms_key="x"), "encryption_configuration.kms_key: no such"),
        (lambda b: b["unreferenced_file_removal"].update(unreferenced_days="3"), "'3' is not of type 'integer'"),
        (lambda b: b["unreferenced_file_removal"].update(noncurrent_days=0), "0 is less than the minimum of 1"),
        (lambda b: b.update(table_bucket_arn="arn:aws:s3tables:us-east-1:111122223333:bucket/x"), "read-only"),
        (lambda b: b.pop("table_bucket_name"), "'TableBucketName' is a required property"),
        (lambda b: b.update(tags=[{"key": "team"}]), "'Value' is a required property"),
        (lambda b: b.update(tags={"team": "data"}), "is not of type 'array'"),
    ],
)
def test_a_resource_that_breaks_the_schema_is_reported(
    synthesized: dict[str, Stacks], mutate: Any, expected: str
) -> None:
    (_where, rtype, _name, body, region) = awscc_resources(synthesized)[0]
    broken = copy.deepcopy(body)
    mutate(broken)
    problems = check_awscc_resource(rtype, broken, region).problems
    assert any(expected in p for p in problems), problems


def test_table_buckets_carry_the_kit_and_configured_tags(synthesized: dict[str, Stacks]) -> None:
    """awscc has no provider default tags: each bucket lists them, the same as the aws provider's default tags."""
    want = {
        "seed": {"kit": "seed", "managed-by": "s3tables-replica-kit"},
        "multi-account": {
            "cost-center": "data-platform", "kit": "lakehouse", "managed-by": "s3tables-replica-kit",
            "owner": "lakehouse-team",
        },
        "estate": {"cost-center": "data-platform", "kit": "estate", "managed-by": "s3tables-replica-kit"},
        "adopt": {"kit": "sales", "managed-by": "s3tables-replica-kit"},
        "lake": {"kit": "lake", "managed-by": "s3tables-replica-kit"},
    }  # fmt: skip
    for where, _rtype, _name, body, _region in awscc_resources(synthesized):
        example, stack = where.split("/")
        if where == "adopt/source":  # awscc's tags are the whole set: the kit's would remove the adopter's
            assert "tags" not in body
            continue
        tags = {t["key"]: t["value"] for t in body["tags"]}
        # an estate's protected (replica) buckets also carry the protection tag, on the bucket only
        protected = example in ("estate", "lake") and stack.startswith("replica-")
        assert tags == (want[example] | {"kit-protection": example} if protected else want[example]), where
        assert synthesized[example][stack]["provider"]["aws"][0]["default_tags"] == [{"tags": want[example]}]
