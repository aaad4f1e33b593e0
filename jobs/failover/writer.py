"""A writer's commit, for local runs only (`make e2e`): a few rows of real Iceberg data and metadata appended to every
table of a table bucket, through the S3 Tables API with pyiceberg
(`s3tables_kit.jobs.failover.iceberg.S3TablesCommitter`, what a writer engine does). A table without metadata yet (as
Terraform creates it) gets its first commit, which creates it with a two-column schema (`id` long, `region` string,
partitioned by `region`).

    python -m s3tables_kit.jobs.failover.writer --bucket-arn ARN --endpoint-url URL

Credentials are the environment's (the writer's account). Prints one line per table; exit 0 when every table took
its commit, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

ROWS_PER_COMMIT = (("eu", 2), ("us", 1))  # (partition, rows): three rows in two partitions


def writer_schema() -> tuple[Any, Any]:
    """The schema and partition spec a writer's first commit creates a table with."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    return schema, spec


def rows(first_id: int) -> Any:
    """One commit's rows (an Arrow table of `writer_schema`), ids from `first_id`."""
    import pyarrow as pa

    regions = [region for region, n in ROWS_PER_COMMIT for _ in range(n)]
    ids = list(range(first_id, first_id + len(regions)))
    return pa.table({"id": pa.array(ids, pa.int64()), "region": pa.array(regions, pa.string())})


def commit_to_every_table(s3tables: Any, bucket_arn: str, endpoint: str | None) -> list[str]:
    """Append `rows` to every table of the bucket (creating the table's metadata first where it has none); returns
    the tables written, as `namespace.name`."""
    from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.jobs.kernel.tables import metadata_location

    committer = S3TablesCommitter(s3tables, bucket_arn, io_props(s3tables, bucket_arn, endpoint))
    schema, spec = writer_schema()
    written: list[str] = []
    for page in s3tables.get_paginator("list_tables").paginate(tableBucketARN=bucket_arn):
        for t in page["tables"]:
            ident = Ident(t["namespace"][0], t["name"])
            got = s3tables.get_table_metadata_location(
                tableBucketARN=bucket_arn, namespace=ident.namespace, name=ident.name
            )
            table = committer.load(ident) if metadata_location(got) else committer.create(ident, schema, spec)
            table.append(rows(len(written) * 10))
            written.append(str(ident))
    return sorted(written)


def main(argv: Sequence[str] | None = None) -> int:
    import boto3

    p = argparse.ArgumentParser(prog="python -m s3tables_kit.jobs.failover.writer", description=__doc__)
    p.add_argument("--bucket-arn", required=True, help="the table bucket whose every table gets a commit")
    p.add_argument("--endpoint-url", help="the S3 Tables and S3 endpoint (the local emulator)")
    ns = p.parse_args(argv)
    region = ns.bucket_arn.split(":")[3]
    s3tables = boto3.session.Session(region_name=region).client("s3tables", endpoint_url=ns.endpoint_url)
    try:
        written = commit_to_every_table(s3tables, ns.bucket_arn, ns.endpoint_url)
    except Exception as exc:  # any writer failure (SDK, pyiceberg) is the run's verdict, with its message
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    for name in written:
        print(f"committed: {name}")
    print(f"{len(written)} table(s) of {ns.bucket_arn} committed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
