"""`make e2e`'s pure parts (harness/e2e/run.py): which configurations share an emulator and a Terraform state, and what
an applied plan may not do to the resources `prevent_destroy` guards. The runs themselves are `make e2e`/`e2e-all`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.e2e.plans import (
    chains_of,
    managed_count,
    normal_of,
    plan_actions,
    planned_summary,
    stream_actions,
    stream_errors,
    transition_problems,
)
from harness.e2e.run import ALL_CONFIGS, EXAMPLES, SEED_CONFIGS, protected_addresses
from s3tables_kit.infra.validate import find_terraform


def test_all_runs_each_failover_topology_on_top_of_its_normal_one_then_the_estate_and_the_lake() -> None:
    assert chains_of(ALL_CONFIGS) == [
        [EXAMPLES / "seed.toml", EXAMPLES / "failover" / "seed.toml"],
        [EXAMPLES / "multi-account.toml", EXAMPLES / "failover" / "multi-account.toml"],
        [EXAMPLES / "estate.toml"],  # no failover topology: an estate's promotion is refused at synth
        [EXAMPLES / "lake.toml"],  # the one-account lake: its guardrail in parts
    ]
    assert chains_of(SEED_CONFIGS) == [[EXAMPLES / "seed.toml"]]


def test_a_failover_topology_alone_brings_its_normal_one() -> None:
    assert chains_of([EXAMPLES / "failover" / "multi-account.toml"]) == [
        [EXAMPLES / "multi-account.toml", EXAMPLES / "failover" / "multi-account.toml"]
    ]


def test_a_failover_topology_without_its_normal_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "failover").mkdir()
    lone = tmp_path / "failover" / "kit.toml"
    lone.write_text((EXAMPLES / "failover" / "seed.toml").read_text())
    with pytest.raises(ValueError, match="runs on top of its normal topology"):
        normal_of(lone)


def _change(address: str, *actions: str, mode: str = "managed") -> dict[str, Any]:
    return {"address": address, "mode": mode, "change": {"actions": list(actions)}}


# The shape of `terraform show -json <plan>` (format_version 1.2): resource_changes and planned_values.
PLAN = {
    "format_version": "1.2",
    "resource_changes": [
        _change("aws_s3tables_table_bucket.bucket", "no-op"),
        _change("aws_s3tables_table_bucket_policy.policy", "update"),
        _change("aws_iam_role.failover-role", "create"),
        _change("aws_kms_key.key", "delete", "create"),
        _change("aws_iam_policy.old", "delete"),
        _change("data.aws_caller_identity.me", "read", mode="data"),
    ],
    "planned_values": {
        "root_module": {
            "resources": [
                {"address": "aws_s3tables_table_bucket.bucket", "mode": "managed"},
                {"address": "aws_s3tables_table_bucket_policy.policy", "mode": "managed"},
                {"address": "aws_iam_role.failover-role", "mode": "managed"},
                {"address": "aws_kms_key.key", "mode": "managed"},
                {"address": "data.aws_caller_identity.me", "mode": "data"},
            ]
        }
    },
}


def test_the_applied_plan_is_summarised_by_action() -> None:
    actions = plan_actions(PLAN)
    assert sorted(actions) == [
        "aws_iam_policy.old",
        "aws_iam_role.failover-role",
        "aws_kms_key.key",
        "aws_s3tables_table_bucket_policy.policy",
    ]
    assert planned_summary(actions) == "+1 ~1 -1 ±1"
    assert managed_count(PLAN) == 4


def test_a_protected_resource_destroyed_or_replaced_fails_the_transition() -> None:
    actions = plan_actions(PLAN)
    assert transition_problems(actions, {"aws_s3tables_table_bucket.bucket"}) == []  # unchanged
    assert transition_problems(actions, {"aws_s3tables_table_bucket_policy.policy"}) == []  # in place
    assert transition_problems(actions, {"aws_kms_key.key", "aws_iam_policy.old"}) == [
        "aws_iam_policy.old: destroyed",
        "aws_kms_key.key: replaced",
    ]


def test_protected_addresses_are_those_with_prevent_destroy() -> None:
    doc = {
        "resource": {
            "aws_kms_key": {"key": {"lifecycle": {"prevent_destroy": True}}},
            "aws_iam_role": {"role": {"lifecycle": {"prevent_destroy": False}}, "other": {}},
        }
    }
    assert protected_addresses(doc) == {"aws_kms_key.key"}


def test_an_estate_runs_the_writer_once_per_source_and_every_other_tool_once() -> None:
    from harness.e2e.run import LOCK_REFUSAL, SECOND_DEPLOY, TOOLS, WRITER, ran_as_expected

    expected = (SECOND_DEPLOY, LOCK_REFUSAL, WRITER, *TOOLS)
    assert ran_as_expected(list(expected), expected)
    three_sources = [SECOND_DEPLOY, LOCK_REFUSAL, WRITER, WRITER, WRITER, *TOOLS]
    assert ran_as_expected(three_sources, expected)
    assert not ran_as_expected([SECOND_DEPLOY, LOCK_REFUSAL, *TOOLS], expected)  # no writer at all
    assert not ran_as_expected([*expected, TOOLS[0]], expected)  # a tool twice
    assert not ran_as_expected([SECOND_DEPLOY, WRITER, LOCK_REFUSAL, WRITER, *TOOLS], expected)  # out of order


@pytest.mark.terraform
def test_a_new_states_apply_is_read_from_terraforms_own_json_stream(tmp_path: Path) -> None:
    """The one-command first apply reads what Terraform planned from `apply -json`: creates, then a replacement of a
    protected resource refused with Terraform's own diagnostic (built-in `terraform_data`: no provider needed)."""
    binary = find_terraform()
    if binary is None:
        pytest.skip("terraform is not installed")

    def apply(body: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "main.tf").write_text(body)
        args = [str(binary), "apply", "-auto-approve", "-json", "-input=false"]
        return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, check=False)

    protected = "lifecycle {\n prevent_destroy = true\n}"
    first = apply(
        f'resource "terraform_data" "a" {{ input = "x" }}\nresource "terraform_data" "b" {{\n{protected}\n}}\n'
    )
    assert first.returncode == 0, first.stderr
    actions = stream_actions(first.stdout.splitlines())
    assert actions == {"terraform_data.a": ["create"], "terraform_data.b": ["create"]}
    assert planned_summary(actions) == "+2 ~0 -0 ±0"
    again = apply(
        f'resource "terraform_data" "a" {{ input = "y" }}\n'
        f'resource "terraform_data" "b" {{\ntriggers_replace = "2"\n{protected}\n}}\n'
    )
    assert again.returncode == 1
    errors = stream_errors(again.stdout.splitlines())
    assert len(errors) == 1 and "terraform_data.b has lifecycle.prevent_destroy set" in errors[0]
