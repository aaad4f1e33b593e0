"""Exactly the resources that hold data or protection carry prevent_destroy, the explicit destroy
flag alone lifts it, and a source table ignores changes to its creation schema (never replaced by an edit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import load_config
from tests.synth_fixtures import EXAMPLES

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]
Stacks = dict[str, dict[str, Any]]

SCRIPTS_BUCKET = [
    "aws_s3_bucket",
    "aws_s3_bucket_ownership_controls",
    "aws_s3_bucket_policy",
    "aws_s3_bucket_public_access_block",
    "aws_s3_bucket_server_side_encryption_configuration",
    "aws_s3_bucket_versioning",
]
# (stack, resource type) -> number of protected resources of that type in the stack
EXPECTED: dict[str, dict[tuple[str, str], int]] = {
    "seed": {
        ("source", "awscc_s3tables_table_bucket"): 1,
        ("source", "aws_s3tables_namespace"): 1,
        ("source", "aws_s3tables_table"): 1,
        ("source", "aws_s3tables_table_replication"): 1,
        ("source", "aws_s3tables_table_bucket_policy"): 1,  # the source's replication guard (decision 0028)
        ("replica-demo-dest-tablebucket", "awscc_s3tables_table_bucket"): 1,
        ("replica-demo-dest-tablebucket", "aws_s3tables_table_bucket_policy"): 1,
        # the account's guardrail and its pipeline guardrail (the seed attaches them to no role)
        ("replica-demo-dest-tablebucket", "aws_iam_policy"): 2,
        ("replica-demo-dest-tablebucket", "aws_kms_key"): 1,  # the account's freshness check's alarm topic key
        ("source", "aws_kms_key"): 1,  # the alarm topic's key (`[assurance]`)
        ("recovery", "awscc_s3tables_table_bucket"): 1,
        ("recovery", "aws_s3tables_namespace"): 2,  # recovery target + rehearsal namespace
        ("recovery", "aws_kms_key"): 1,  # the rehearsal alarm topic's key
        **{("recovery", t): 1 for t in SCRIPTS_BUCKET},
        # three SCPs and the RCP on the one OU; the vault's two SCPs on its account (the recovery account too)
        ("organization", "aws_organizations_policy"): 6,
        ("organization", "aws_organizations_policy_attachment"): 6,  # four policies x one target, two x one account
        # the backup vault: its bucket with every setting, its Object Lock configuration, its key
        **{("vault", t): 1 for t in SCRIPTS_BUCKET},
        ("vault", "aws_s3_bucket_object_lock_configuration"): 1,
        ("vault", "aws_kms_key"): 2,  # the vault key + the point key (an HMAC key authenticating backup points)
    },
    "multi-account": {
        ("source", "awscc_s3tables_table_bucket"): 1,
        ("source", "aws_kms_key"): 2,  # source bucket key + alarm topic key
        ("source", "aws_s3tables_namespace"): 2,
        ("source", "aws_s3tables_table"): 3,
        ("source", "aws_s3tables_table_bucket_replication"): 1,
        ("source", "aws_s3tables_table_bucket_policy"): 1,
        # the source account holds no replica: its pipeline guardrail, attached to the two configured roles
        ("source", "aws_iam_policy"): 1,
        ("source", "aws_iam_role_policy_attachment"): 2,
        **{
            (f"replica-lakehouse-replica-{r}", t): 1
            for r in ("euc1", "use1", "apse2")
            for t in ("awscc_s3tables_table_bucket", "aws_kms_key", "aws_s3tables_table_bucket_policy")
        },
        # one guardrail and one pipeline guardrail per replica account (euc1 owns 222222222222's, apse2
        # 333333333333's), each attached to two configured roles plus the account's deploy role
        ("replica-lakehouse-replica-euc1", "aws_iam_policy"): 2,
        ("replica-lakehouse-replica-euc1", "aws_iam_role_policy_attachment"): 6,
        ("replica-lakehouse-replica-apse2", "aws_iam_policy"): 2,
        ("replica-lakehouse-replica-apse2", "aws_iam_role_policy_attachment"): 6,
        # the replica bucket key + the alarm topic key of the account's freshness check (euc1, apse2 own one)
        ("replica-lakehouse-replica-euc1", "aws_kms_key"): 2,
        ("replica-lakehouse-replica-apse2", "aws_kms_key"): 2,
        ("recovery", "awscc_s3tables_table_bucket"): 1,
        ("recovery", "aws_kms_key"): 2,  # recovery bucket key + rehearsal alarm topic key
        ("recovery", "aws_s3tables_namespace"): 2,  # recovery target + rehearsal namespace
        **{("recovery", t): 1 for t in SCRIPTS_BUCKET},
        # two SCPs, each attached to the three targets
        ("organization", "aws_organizations_policy"): 4,  # three SCPs and the RCP
        ("organization", "aws_organizations_policy_attachment"): 12,  # four policies x three targets
    },
    # an adopted source bucket: its bucket, two adopted namespaces and its policy are imported and protected like
    # created ones (tests/test_adopt.py: even with the destroy flag); no table declared
    "adopt": {
        ("source", "awscc_s3tables_table_bucket"): 1,
        ("source", "aws_s3tables_namespace"): 2,
        ("source", "aws_s3tables_table_bucket_policy"): 1,
        ("source", "aws_s3tables_table_bucket_replication"): 1,
        ("source", "aws_kms_key"): 1,  # the alarm topic's key
        ("replica-sales-lake-us-west-2", "awscc_s3tables_table_bucket"): 1,
        ("replica-sales-lake-us-west-2", "aws_s3tables_table_bucket_policy"): 1,
        ("replica-sales-lake-us-west-2", "aws_iam_policy"): 2,  # the guardrail and the pipeline guardrail
        ("replica-sales-lake-us-west-2", "aws_kms_key"): 1,  # the account's freshness check's alarm topic key
        ("recovery", "awscc_s3tables_table_bucket"): 1,
        ("recovery", "aws_s3tables_namespace"): 2,
        ("recovery", "aws_kms_key"): 1,
        **{("recovery", t): 1 for t in SCRIPTS_BUCKET},
        # the replica protection, guards and pipeline SCPs and the resource control policy, each attached to the OU
        ("organization", "aws_organizations_policy"): 4,
        ("organization", "aws_organizations_policy_attachment"): 4,
    },
    # an estate: one source stack per source (each its bucket, namespace, table, replication and alarm topic key;
    # sales-euw1 also its bucket key), a replica stack per replica (the vault with its key), one guardrail and one
    # pipeline guardrail per replica account (each attached to data-engineer and the account's deploy role), one
    # recovery, one pair of SCPs.
    "estate": {
        **{
            (f"source-{s}", t): 1
            for s in ("sales-euw1", "marketing-euw1", "ops-use1")
            for t in (
                "awscc_s3tables_table_bucket",
                "aws_s3tables_namespace",
                "aws_s3tables_table",
                "aws_kms_key",
                "aws_s3tables_table_bucket_policy",
            )
        },
        ("source-sales-euw1", "aws_kms_key"): 2,  # source bucket key + alarm topic key
        ("source-sales-euw1", "aws_s3tables_table_bucket_replication"): 1,
        ("source-marketing-euw1", "aws_s3tables_table_replication"): 1,  # replication mode "tables", one table
        ("source-ops-use1", "aws_s3tables_table_bucket_replication"): 1,
        # 555555555555 holds no replica: its pipeline guardrail, attached to data-engineer
        ("source-ops-use1", "aws_iam_policy"): 1,
        ("source-ops-use1", "aws_iam_role_policy_attachment"): 1,
        **{
            (f"replica-estate-{r}", t): 1
            for r in ("vault-euc1", "sales-replica-euc1")
            for t in ("awscc_s3tables_table_bucket", "aws_s3tables_table_bucket_policy")
        },
        # each replica account's guardrail and pipeline guardrail, each attached to data-engineer and the deploy role
        ("replica-estate-vault-euc1", "aws_iam_policy"): 2,
        ("replica-estate-sales-replica-euc1", "aws_iam_policy"): 2,
        ("replica-estate-vault-euc1", "aws_kms_key"): 2,  # the vault's key + its freshness check's topic key
        ("replica-estate-sales-replica-euc1", "aws_kms_key"): 1,  # the freshness check's topic key
        ("replica-estate-vault-euc1", "aws_iam_role_policy_attachment"): 4,
        ("replica-estate-sales-replica-euc1", "aws_iam_role_policy_attachment"): 4,
        ("recovery", "awscc_s3tables_table_bucket"): 1,
        ("recovery", "aws_kms_key"): 2,  # recovery bucket key + rehearsal alarm topic key
        ("recovery", "aws_s3tables_namespace"): 2,
        **{("recovery", t): 1 for t in SCRIPTS_BUCKET},
        ("organization", "aws_organizations_policy"): 4,  # three SCPs and the RCP
        ("organization", "aws_organizations_policy_attachment"): 8,  # four policies x two targets
    },
}


def prevent_destroy_flags(stacks: Stacks) -> dict[tuple[str, str], list[Any]]:
    """(stack, type) -> the prevent_destroy value of each resource of that type (None: no such lifecycle)."""
    out: dict[tuple[str, str], list[Any]] = {}
    for stack, doc in stacks.items():
        for rtype, instances in doc.get("resource", {}).items():
            for body in instances.values():
                out.setdefault((stack, rtype), []).append(body.get("lifecycle", {}).get("prevent_destroy"))
    return out


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_exactly_what_holds_data_or_protection_has_prevent_destroy(
    synthesized: dict[str, Stacks], example: str
) -> None:
    flags = prevent_destroy_flags(synthesized[example])
    protected = {k: v.count(True) for k, v in flags.items() if True in v}
    assert protected == EXPECTED[example]
    for key, values in flags.items():
        assert set(values) <= {True, None} and (key not in protected or values.count(True) == len(values)), key


def test_only_the_destroy_flag_lifts_it(tmp_path: Path) -> None:
    from s3tables_kit.infra.app import build_app
    from s3tables_kit.infra.golden import synth_example

    build_app(load_config(ROOT / "examples/seed.toml"), outdir=str(tmp_path), allow_destroy=True).synth()
    stacks = {p.name: json.loads((p / "cdk.tf.json").read_text()) for p in (tmp_path / "stacks").iterdir()}
    flags = prevent_destroy_flags(stacks)
    lifted = {k: v.count(False) for k, v in flags.items() if False in v}
    assert lifted == EXPECTED["seed"]
    assert all(True not in v for v in flags.values())
    assert synth_example  # the default (no flag) is what the other test checks on the session synth


def test_a_spark_schema_change_or_a_column_edit_never_replaces_a_source_table(synthesized: dict[str, Stacks]) -> None:
    sources = [st for stacks in synthesized.values() for name, st in stacks.items() if name.startswith("source")]
    assert len(sources) == 15  # seed, multi-account, adopt, the estate's three and the lake's nine
    for stack in sources:
        for table in stack["resource"].get("aws_s3tables_table", {}).values():  # adopt declares no table
            assert table["lifecycle"] == {"ignore_changes": ["metadata"], "prevent_destroy": True}
            assert table["metadata"][0]["iceberg"][0]["schema"][0]["field"]  # still created with the schema


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_no_target_holds_more_than_three_kit_scps(synthesized: dict[str, Stacks], example: str) -> None:
    """What Terraform attaches per root, OU or account: at most three kit SCPs (room for FullAWSAccess and one of the
    organization's own), and what validation counts (`s3tables_kit.topology.scp_targets`). The failover topologies:
    tests/test_failover_synth.py."""
    from s3tables_kit.topology.scp_targets import MAX_KIT_SCPS, kit_scps_per_target
    from tests.synth_fixtures import attached_scps_per_target

    got = attached_scps_per_target(synthesized[example])
    assert got and max(got.values()) <= MAX_KIT_SCPS, got
    assert got == dict(kit_scps_per_target(load_config(ROOT / "examples" / f"{example}.toml")))
