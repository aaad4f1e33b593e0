"""Namespaces and tables of the source bucket: Iceberg schema and table-level snapshot management (source retention).

The Iceberg schema is applied at creation only (`ignore_changes = [metadata]`); schema changes after that are made
by writers through Iceberg (docs/provisioning.md#changing-a-table-safely).

In an adopted bucket the namespaces (unless one says `adopt = false`) and the tables declared in them are imported,
never created: such a table keeps its encryption (fixed at creation: a different one would replace it) and its
maintenance unless the table states its own `snapshot_retention` (docs/decisions/0033-adopting-an-existing-lake.md).

The aws provider (6.25) takes the Iceberg schema only; the partition spec in the configuration is carried in the
outputs and applied by the first writer (and by recovery, which reads it from the replica's metadata)."""

from __future__ import annotations

from collections.abc import Collection

from cdktf import TerraformProvider, TerraformResourceLifecycle, Token
from cdktf_cdktf_provider_aws.s3_tables_namespace import S3TablesNamespace
from cdktf_cdktf_provider_aws.s3_tables_table import (
    S3TablesTable,
    S3TablesTableEncryptionConfiguration,
    S3TablesTableMaintenanceConfiguration,
    S3TablesTableMaintenanceConfigurationIcebergCompaction,
    S3TablesTableMaintenanceConfigurationIcebergCompactionSettings,
    S3TablesTableMaintenanceConfigurationIcebergSnapshotManagement,
    S3TablesTableMaintenanceConfigurationIcebergSnapshotManagementSettings,
    S3TablesTableMetadata,
    S3TablesTableMetadataIceberg,
    S3TablesTableMetadataIcebergSchema,
    S3TablesTableMetadataIcebergSchemaField,
)
from constructs import Construct

from s3tables_kit.infra.lifecycle import adopt
from s3tables_kit.topology.adoption import import_id, namespace_adopted
from s3tables_kit.topology.config import Source

__all__ = ["SourceCatalog"]

COMPACTION_TARGET_MB = 512


class SourceCatalog(Construct):
    """The source's namespaces and Iceberg tables (creation schema, compaction, source snapshot retention).

    - `source`: the source whose `namespaces` it creates.
    - `bucket_arn`: the source table bucket (`TableBucket.arn`).
    - `kms_key_arn`: the tables' KMS key (None: SSE-S3).
    - `untagged`: "namespace.table" names to create without AWS resource tags (default empty).
    - `untagged_provider`: an aws provider without default tags (default None; required when `untagged` is not empty).

    Attribute `tables`: the tables by "namespace.table".
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        source: Source,
        bucket_arn: str,
        kms_key_arn: str | None,
        untagged: Collection[str] = (),
        untagged_provider: TerraformProvider | None = None,
    ) -> None:
        """`untagged`: "namespace.table" names created through `untagged_provider` (an aws provider without default
        tags), so they carry no AWS resource tags (replicated source tables unless `[tags]` opts them in)."""
        super().__init__(scope, id)
        if untagged and untagged_provider is None:
            raise ValueError("untagged tables need the untagged provider")
        self.tables: dict[str, S3TablesTable] = {}
        for ns in source.namespaces:
            namespace = S3TablesNamespace(self, f"namespace-{ns.name}", namespace=ns.name, table_bucket_arn=bucket_arn)
            adopted = namespace_adopted(source, ns)
            if adopted:
                adopt(namespace, import_id(source.bucket_arn, ns.name))
            for t in ns.tables:
                retention = source.retention_for(t)
                table = self.tables[f"{ns.name}.{t.name}"] = S3TablesTable(
                    self,
                    f"table-{ns.name}-{t.name}",
                    name=t.name,
                    namespace=namespace.namespace,
                    table_bucket_arn=bucket_arn,
                    format="ICEBERG",
                    provider=untagged_provider if f"{ns.name}.{t.name}" in untagged else None,
                    # The schema is the CREATION schema. Every level of `metadata` forces replacement (DeleteTable +
                    # CreateTable), and the provider never reads the live schema back (GetTable has none), so after
                    # creation the table's schema belongs to its writers (Iceberg schema evolution, e.g. Spark ALTER
                    # TABLE) and a kit.toml column edit, an import (metadata null in state) or a future provider that
                    # reads the schema back must not plan a replacement. prevent_destroy (infra/lifecycle.py) backs it.
                    lifecycle=TerraformResourceLifecycle(ignore_changes=["metadata"]),
                    metadata=[
                        S3TablesTableMetadata(
                            iceberg=[
                                S3TablesTableMetadataIceberg(
                                    schema=[
                                        S3TablesTableMetadataIcebergSchema(
                                            field=[
                                                S3TablesTableMetadataIcebergSchemaField(
                                                    name=c.name, type=c.type, required=c.required
                                                )
                                                for c in t.columns
                                            ]
                                        )
                                    ]
                                )
                            ]
                        )
                    ],
                    maintenance_configuration=S3TablesTableMaintenanceConfiguration(
                        iceberg_compaction=S3TablesTableMaintenanceConfigurationIcebergCompaction(
                            status="enabled",
                            settings=S3TablesTableMaintenanceConfigurationIcebergCompactionSettings(
                                target_file_size_mb=COMPACTION_TARGET_MB
                            ),
                        ),
                        iceberg_snapshot_management=S3TablesTableMaintenanceConfigurationIcebergSnapshotManagement(
                            status="enabled",
                            settings=S3TablesTableMaintenanceConfigurationIcebergSnapshotManagementSettings(
                                max_snapshot_age_hours=retention.max_snapshot_age_hours,
                                min_snapshots_to_keep=retention.min_snapshots_to_keep,
                            ),
                        ),
                    ),
                    # An object attribute: every key must be present, `kms_key_arn = null` for SSE-S3, else Terraform
                    # rejects the plan ("attribute "kms_key_arn" is required", hashicorp/terraform-provider-aws#48160).
                    encryption_configuration=S3TablesTableEncryptionConfiguration(
                        sse_algorithm=source.encryption.sse_algorithm,
                        kms_key_arn=kms_key_arn if kms_key_arn else Token.as_string(Token.null_value()),
                    ),
                )
                if adopted:
                    adopt(table, import_id(source.bucket_arn, ns.name, t.name))
                    table.reset_encryption_configuration()
                    if t.snapshot_retention is None:
                        table.reset_maintenance_configuration()
