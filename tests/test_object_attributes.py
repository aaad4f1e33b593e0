"""Regression test: object-typed provider attributes written partially.

`aws_s3tables_table.encryption_configuration` is an object attribute: Terraform requires every key (null allowed).
The typed bindings drop unset members, so a partial object synthesizes fine and fails only at plan time. The check
derives each object's keys from the bindings (infra/objects.py) and runs over every resource the kit synthesizes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from s3tables_kit.topology.config import load_config

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("example", sorted(p.stem for p in (ROOT / "examples").glob("*.toml")))
def test_every_object_attribute_the_kit_writes_is_whole(example: str, tmp_path: Path) -> None:
    from s3tables_kit.infra.app import build_app
    from s3tables_kit.infra.objects import partial_objects

    app = build_app(load_config(ROOT / "examples" / f"{example}.toml"), outdir=str(tmp_path))
    app.synth()
    assert partial_objects(app, tmp_path) == []


def test_a_partial_object_attribute_is_reported(tmp_path: Path) -> None:
    """The check can fail: the pre-fix table (SSE-S3 without kms_key_arn) and a partial nested object."""
    from cdktf import App, TerraformStack
    from cdktf_cdktf_provider_aws.provider import AwsProvider
    from cdktf_cdktf_provider_aws.s3_tables_table import (
        S3TablesTable,
        S3TablesTableEncryptionConfiguration,
        S3TablesTableMaintenanceConfiguration,
        S3TablesTableMaintenanceConfigurationIcebergSnapshotManagement,
        S3TablesTableMaintenanceConfigurationIcebergSnapshotManagementSettings,
    )

    from s3tables_kit.infra.objects import partial_objects

    app = App(outdir=str(tmp_path))
    stack = TerraformStack(app, "t")
    AwsProvider(stack, "aws", region="us-east-1")
    S3TablesTable(
        stack,
        "table",
        name="orders",
        namespace="analytics",
        table_bucket_arn="arn:aws:s3tables:us-east-1:111122223333:bucket/b",
        format="ICEBERG",
        encryption_configuration=S3TablesTableEncryptionConfiguration(sse_algorithm="AES256"),
        maintenance_configuration=S3TablesTableMaintenanceConfiguration(
            iceberg_snapshot_management=S3TablesTableMaintenanceConfigurationIcebergSnapshotManagement(
                status="enabled",
                settings=S3TablesTableMaintenanceConfigurationIcebergSnapshotManagementSettings(
                    max_snapshot_age_hours=24
                ),
            )
        ),
    )
    app.synth()
    problems = partial_objects(app, tmp_path)
    text = "\n".join(problems)
    assert "encryption_configuration: object attribute written without ['kms_key_arn']" in text
    assert "maintenance_configuration: object attribute written without ['iceberg_compaction']" in text
    assert (
        "maintenance_configuration.iceberg_snapshot_management.settings: object attribute written without "
        "['min_snapshots_to_keep']" in text
    )
    assert len(problems) == 3, problems
