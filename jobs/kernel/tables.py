"""S3 Tables tables as the jobs read them: `TableRef` from ListTables, and "GetTable, then read its current
metadata file" once (`read_table_metadata`) for every tool that needs both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, paginate, split_s3_uri

# The `managedByService` of a table the replication service maintains (a replica). AWS documents only that "a
# replicated table is managed by the S3 Tables replication service" (docs/aws-facts.md#replication, U9): the value is
# taken to be the service's principal. Other services (zero-ETL, system tables, catalog export) set values of their own.
REPLICATION_MANAGED_BY = "replication.s3tables.amazonaws.com"


def replication_managed(managed_by_service: object) -> bool:
    """Whether a table's `managedByService` (ListTables or GetTable) says the replication service maintains it: the
    one test every tool applies before treating a table as a replica (a table another service writes is not one)."""
    return managed_by_service == REPLICATION_MANAGED_BY


@dataclass(frozen=True)
class TableRef:
    bucket_arn: str
    namespace: str
    name: str
    arn: str
    managed_by_service: bool = False  # ListTables' `managedByService` names the replication service (a replica)
    created_at: datetime | None = field(default=None, compare=False)  # ListTables' `createdAt` (UTC)
    modified_at: datetime | None = field(default=None, compare=False)  # ListTables' `modifiedAt` (UTC): service-set
    # ListTables' `managedByService` as given: a disassociated replica has none at all (docs/aws-facts.md), whatever
    # value the replication service uses (U9), so detachment is read from its absence, not from the predicate.
    managed_by: str | None = field(default=None, compare=False)

    @property
    def qualified(self) -> str:
        return f"{self.namespace}.{self.name}"


def list_tables(clients: Clients, bucket_arn: str, page_size: int | None = None) -> list[TableRef]:
    b = BucketRef(bucket_arn)
    client = clients.s3tables(b.region, b.account)
    return [
        TableRef(
            bucket_arn,
            t["namespace"][0],
            t["name"],
            t["tableARN"],
            replication_managed(t.get("managedByService")),
            t["createdAt"].astimezone(UTC) if isinstance(t.get("createdAt"), datetime) else None,
            t["modifiedAt"].astimezone(UTC) if isinstance(t.get("modifiedAt"), datetime) else None,
            str(t["managedByService"]) if t.get("managedByService") else None,
        )
        for t in paginate(client, "list_tables", "tables", page_size, tableBucketARN=bucket_arn)
    ]


def table_call(clients: Clients, bucket_arn: str, namespace: str, name: str, operation: str) -> dict[str, Any]:
    """One S3 Tables operation on one table (`get_table`, `get_table_policy`, ...) in the bucket's Region and account,
    with the throttling backoff."""
    b = BucketRef(bucket_arn)
    got: dict[str, Any] = call(
        getattr(clients.s3tables(b.region, b.account), operation),
        tableBucketARN=bucket_arn,
        namespace=namespace,
        name=name,
    )
    return got


def metadata_location(response: dict[str, Any] | None) -> str | None:
    """The ``metadataLocation`` of a GetTable/GetTableMetadataLocation response; None when the table has none yet."""
    loc = (response or {}).get("metadataLocation")
    return str(loc) if loc else None


def read_object(clients: Clients, location: str, region: str, account: str | None = None) -> bytes:
    """One GetObject of an ``s3://`` location (a metadata file), with the throttling backoff."""
    bucket, key = split_s3_uri(location)
    body: bytes = call(clients.s3(region, account).get_object, Bucket=bucket, Key=key)["Body"].read()
    return body


@dataclass(frozen=True)
class TableMetadata:
    """A GetTable response and the table's current metadata file (None when the table has no metadata yet)."""

    table: dict[str, Any]
    location: str | None
    raw: bytes | None


def read_table_metadata(clients: Clients, bucket_arn: str, namespace: str, name: str) -> TableMetadata:
    """GetTable, then one GetObject of its ``metadataLocation`` (in the bucket's Region and account)."""
    b = BucketRef(bucket_arn)
    got = table_call(clients, bucket_arn, namespace, name, "get_table")
    location = metadata_location(got)
    raw = read_object(clients, location, b.region, b.account) if location else None
    return TableMetadata(dict(got), location, raw)


def tables_by_name(clients: Clients, bucket_arn: str, page_size: int | None = None) -> dict[str, TableRef]:
    """{namespace.name: the table as ListTables tells it} of one bucket."""
    return {t.qualified: t for t in list_tables(clients, bucket_arn, page_size)}


def list_replica_buckets(
    clients: Clients, bucket_arns: Sequence[str], page_size: int | None = None
) -> dict[str, dict[str, TableRef]]:
    """{bucket ARN: {namespace.name: its table as ListTables tells it (managed by the service, created at)}} of each
    bucket, the buckets side by side; a bucket that cannot be listed is left out (`mark_detached` lists it again and
    warns; its replicas' windows take a GetTable each)."""

    def one(arn: str) -> dict[str, TableRef] | None:
        try:
            return tables_by_name(clients, arn, page_size)
        except ClientError:
            return None

    found = run_concurrently(one, list(bucket_arns), max(1, len(bucket_arns)))
    return {arn: tables for arn, tables in zip(bucket_arns, found, strict=True) if tables is not None}
