"""`make validate` (infra/validate.py): what the local provider binary cannot check is computed from its schema,
printed and left out of the validated copy, nothing else; and terraform with the real provider rejects what it should.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra import validate
from s3tables_kit.infra.tfvalidate import root_only, validate_together
from tests.synth_fixtures import terraform_toolchain

SCHEMA: dict[str, Any] = {
    "provider_schemas": {
        "registry.terraform.io/hashicorp/aws": {
            "resource_schemas": {
                "aws_s3tables_table": {
                    "block": {
                        "attributes": {
                            "name": {"type": "string", "required": True},
                            "table_bucket_arn": {"type": "string", "required": True},
                            "encryption_configuration": {"type": ["object", {"kms_key_arn": "string"}]},
                        },
                        "block_types": {"timeouts": {"block": {"attributes": {"create": {"type": "string"}}}}},
                    }
                },
                "aws_iam_role": {"block": {"attributes": {"name": {"type": "string"}}}},
            },
            "data_source_schemas": {},
        }
    }
}
LOCAL = {"registry.terraform.io/hashicorp/aws": ["5.100.0"]}


def stack() -> dict[str, Any]:
    return {
        "terraform": {
            "required_providers": {
                "aws": {"source": "aws", "version": "6.25.0"},
                "awscc": {"source": "hashicorp/awscc", "version": ">= 1.67.0, < 2.0.0"},
            },
            "backend": {"local": {"path": "../../../terraform.source.tfstate"}},
        },
        "provider": {"aws": [{"region": "us-east-1"}], "awscc": [{"region": "us-east-1"}]},
        "resource": {
            "awscc_s3tables_table_bucket": {"b": {"table_bucket_name": "x", "provider": "awscc"}},
            "aws_s3tables_table": {
                "t": {
                    "name": "orders",
                    "table_bucket_arn": "${awscc_s3tables_table_bucket.b.table_bucket_arn}",
                    "encryption_configuration": {"kms_key_arn": None},
                    "metadata": [{"iceberg": []}],
                    "timeouts": {"create": "1m", "future_knob": 1},
                    "lifecycle": {"prevent_destroy": True, "ignore_changes": ["metadata"]},
                    "depends_on": ["awscc_s3tables_table_bucket.b"],
                }
            },
            "aws_s3tables_table_replication": {"r": {"role": "${aws_iam_role.x.arn}"}},
        },
    }


def test_version_constraints() -> None:
    v = validate.parse_version
    assert validate.satisfies(v("6.25.0"), "6.25.0") and not validate.satisfies(v("5.100.0"), "6.25.0")
    assert validate.satisfies(v("1.67.0"), ">= 1.67.0, < 2.0.0") and not validate.satisfies(
        v("1.66.9"), ">= 1.67.0, < 2.0.0"
    )
    assert validate.satisfies(v("6.30.1"), "~> 6.25") and not validate.satisfies(v("7.0.0"), "~> 6.25")
    assert validate.satisfies(v("1.11.4"), ">= 1.10.0") and validate.satisfies(v("1.2.3"), None)


def test_exactly_what_the_local_provider_does_not_know_is_left_out_and_listed() -> None:
    original = stack()
    prepared = validate.prepare_stack(original, SCHEMA, LOCAL)
    assert original == stack(), "the synthesized document itself is never modified"
    got = {(g.provider.rsplit("/", 1)[-1], g.what, g.item) for g in prepared.gaps}
    assert got == {
        ("awscc", "provider configuration", "provider awscc"),
        ("awscc", "resource type", "awscc_s3tables_table_bucket"),
        ("awscc", "argument", "awscc_s3tables_table_bucket.table_bucket_name"),
        ("aws", "argument", "aws_s3tables_table.metadata"),
        ("aws", "argument", "aws_s3tables_table.timeouts.future_knob"),
        ("aws", "resource type", "aws_s3tables_table_replication"),
    }
    d = prepared.document
    table = d["resource"]["aws_s3tables_table"]["t"]
    # everything the local provider knows stays, including the partial object it must reject
    assert table["encryption_configuration"] == {"kms_key_arn": None} and table["timeouts"] == {"create": "1m"}
    assert table["lifecycle"] == {"prevent_destroy": True, "ignore_changes": []}
    stub = "terraform_data.kit_unchecked__awscc_s3tables_table_bucket__b"
    assert table["table_bucket_arn"] == f"${{{stub}.output.table_bucket_arn}}"
    assert table["depends_on"] == [stub]
    assert d["terraform"]["required_providers"] == {"aws": {"source": "aws"}}
    assert "awscc" not in d["provider"]
    assert d["data"]["terraform_remote_state"]["kit_validate_backend_local"] == {
        "backend": "local",
        "config": {"path": "../../../terraform.source.tfstate"},
    }
    assert any("requires '6.25.0'" in n and "5.100.0" in n for n in prepared.notes)


def test_an_import_block_goes_with_the_resource_left_out_and_is_listed() -> None:
    """An adopted bucket (awscc, no binary here) is imported: its import block is left out with it and listed; the
    import block of a resource the local provider knows stays, so terraform validates it."""
    doc = stack()
    doc["import"] = [
        {"to": "awscc_s3tables_table_bucket.b", "id": "arn:aws:s3tables:us-east-1:111122223333:bucket/x"},
        {"to": "aws_s3tables_table.t", "id": "arn:aws:s3tables:us-east-1:111122223333:bucket/x;ns;orders"},
    ]
    prepared = validate.prepare_stack(doc, SCHEMA, LOCAL)
    assert prepared.document["import"] == [doc["import"][1]]
    assert ("import block", "import to awscc_s3tables_table_bucket") in {(g.what, g.item) for g in prepared.gaps}


def test_nothing_is_left_out_when_the_pinned_provider_is_local() -> None:
    doc = stack()
    del doc["terraform"]["required_providers"]["awscc"], doc["provider"]["awscc"]
    del doc["resource"]["awscc_s3tables_table_bucket"]
    prepared = validate.prepare_stack(doc, {}, {"registry.terraform.io/hashicorp/aws": ["6.25.0", "5.100.0"]})
    assert prepared.gaps == [] and prepared.notes == []
    assert prepared.document["resource"] == doc["resource"]


@pytest.mark.synth
@pytest.mark.terraform
def test_real_provider_rejects_a_partial_encryption_configuration(
    synthesized: dict[str, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    """Acceptance: reverting fix 1 fails `terraform validate` with the provider's message. Validated as `make
    validate` does, as modules of one root beside a sound stack: the failure is placed on its own stack only."""
    terraform, mirror = terraform_toolchain()
    doc = copy.deepcopy(synthesized["seed"]["source"])
    (table,) = doc["resource"]["aws_s3tables_table"].values()
    del table["encryption_configuration"]["kms_key_arn"]  # the pre-fix synthesized table
    sound = synthesized["seed"]["replica-demo-dest-tablebucket"]
    (tmp_path / "terraform.rc").write_text(validate.cli_config(mirror))
    env = validate.tf_env(tmp_path / "terraform.rc")
    local = validate.mirror_providers(mirror)
    needed = {
        st.address: st.local_version for st in validate.provider_statuses(doc, local).values() if st.local_version
    }
    schemas = validate.provider_schemas(terraform, env, mirror, needed, validate.BUILD)  # type: ignore[arg-type]
    root = tmp_path / "stacks"
    for name, body in (("source", doc), ("replica", sound)):
        validate.write_stack(root / "seed" / name, validate.prepare_stack(body, schemas, local).document)
    verdicts = validate_together(terraform, env, root, {n: root / "seed" / n for n in ("source", "replica")})
    (ok, diags), (replica_ok, replica_diags) = verdicts["source"], verdicts["replica"]
    assert not ok
    assert any('Inappropriate value for attribute "encryption_configuration": attribute "kms_key_arn" is required' in d
               and "seed/source/main.tf.json" in d for d in diags), json.dumps(diags, indent=1)  # fmt: skip
    assert replica_ok and not any(d.startswith("error") for d in replica_diags), replica_diags


@pytest.mark.synth
def test_a_stack_with_root_only_blocks_is_validated_on_its_own(
    synthesized: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """Terraform allows `import` blocks only in a root module: the adopting stack is never made a module."""
    assert root_only(synthesized["adopt"]["source"])
    assert not any(root_only(doc) for doc in synthesized["seed"].values())


def test_make_validate_covers_every_example_the_estate_included() -> None:
    """`make validate` with no arguments validates every example and each failover topology (the estate's included)."""
    names = [validate.example_name(c) for c in validate.default_configs()]
    assert {"seed", "multi-account", "estate", "failover-seed", "failover-multi-account"} <= set(names)
    assert len(names) == len(set(names))  # one work directory each
