"""Replication configuration: one bucket-level configuration, or one per listed table.

Exactly one rule with 1-5 destinations (the API's shape). Depends on the role's permissions so the first replication
attempt is authorised; cross-account destination bucket policies live in the replica stacks, which deploy first
because this construct references their bucket ARNs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cdktf import ITerraformDependable
from cdktf_cdktf_provider_aws.s3_tables_table import S3TablesTable
from cdktf_cdktf_provider_aws.s3_tables_table_bucket_replication import (
    S3TablesTableBucketReplication,
    S3TablesTableBucketReplicationRule,
    S3TablesTableBucketReplicationRuleDestination,
)
from cdktf_cdktf_provider_aws.s3_tables_table_replication import (
    S3TablesTableReplication,
    S3TablesTableReplicationRule,
    S3TablesTableReplicationRuleDestination,
)
from constructs import Construct

from s3tables_kit.infra.lifecycle import adopt

__all__ = ["ReplicationConfiguration"]

R = TypeVar("R")


def _one_rule(rule: Callable[..., R], destination: Callable[..., Any], arns: Sequence[str]) -> list[R]:
    """The API's shape at either level: exactly one rule, one destination entry per destination bucket."""
    return [rule(destination=[destination(destination_table_bucket_arn=d) for d in arns])]


class ReplicationConfiguration(Construct):
    """The source's replication: one bucket-level configuration, or one per listed table, to 1-5 destinations.

    - `mode`: `bucket` (every table, present and future) or `tables` (one configuration per entry of `tables`).
    - `role_arn`: the replication role (`ReplicationRole.role.arn`).
    - `source_bucket_arn`: the source table bucket.
    - `tables`: the replicated tables by "namespace.table" (`SourceCatalog.tables`; unused in `bucket` mode).
    - `destination_bucket_arns`: the replica buckets, 1 to 5.
    - `depends_on`: what must exist first, usually the role's policy (default none).
    - `import_arn`: in `bucket` mode, the source bucket whose existing configuration is imported and updated in place
      (an adopted bucket that replicates already: no moment without replication; default None: created).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        mode: str,
        role_arn: str,
        source_bucket_arn: str,
        tables: dict[str, S3TablesTable],
        destination_bucket_arns: Sequence[str],
        depends_on: Sequence[ITerraformDependable] = (),
        import_arn: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        if not 1 <= len(destination_bucket_arns) <= 5:
            raise ValueError("replication needs 1 to 5 destinations")
        if mode == "bucket":
            configuration = S3TablesTableBucketReplication(
                self,
                "bucket",
                role=role_arn,
                table_bucket_arn=source_bucket_arn,
                rule=_one_rule(
                    S3TablesTableBucketReplicationRule,
                    S3TablesTableBucketReplicationRuleDestination,
                    destination_bucket_arns,
                ),
                depends_on=list(depends_on),
            )
            if import_arn is not None:
                adopt(configuration, import_arn)  # the provider's import id is the bucket's ARN
            return
        for key, table in tables.items():
            S3TablesTableReplication(
                self,
                f"table-{key.replace('.', '-')}",
                role=role_arn,
                table_arn=table.arn,
                rule=_one_rule(
                    S3TablesTableReplicationRule, S3TablesTableReplicationRuleDestination, destination_bucket_arns
                ),
                depends_on=list(depends_on),
            )
