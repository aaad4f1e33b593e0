"""What `s3tables_kit.jobs.ops.discover` reads of a live account: every table bucket of some Regions (and accounts)
with its
settings, policies and replication, and of each table its size from the current snapshot's summary, its maintenance,
its policy and its table-level replication. Read-only: nothing here writes.

Per table, five requests: one loadTable of the Iceberg REST endpoint (the metadata location and the metadata together,
as `s3tables_kit.jobs.ops.status_metadata` reads a replica; where the endpoint is refused, GetTableMetadataLocation
and a GetObject
of the file), then GetTableMaintenanceConfiguration, GetTablePolicy and GetTableReplication. Those three are sent as
signed GETs (`s3tables_kit.jobs.kernel.signed_ops`): botocore's request serialisation and response parsing would
cost about a millisecond of CPU per request, which at 30,000 tables is the run's wall time. Last, GetChannel on the
streaming host (`Clients.channels`; NotFoundException for a table never written through `PutRows`:
`s3tables_kit.jobs.kernel.channels.read`) tells the tables a `PutRows` channel feeds. Data files
are never listed.
The requests are bounded in flight by `--concurrency` (worker processes for a large lake) and retried with the kit's
backoff on throttling.

A refused permission is not an error of one table: `DiscoverRefused` names the action and the resource, and the tool
stops there (exit 2). Throttling, server and connection errors are retried (the kit's policy,
`s3tables_kit.jobs.kernel.sdk`); what
still fails is kept in the table's `error` for the tool's second pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel import channels
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.sdk import (
    TRANSIENT_CODES,
    BucketRef,
    call,
    describe_error,
    error_code,
    paginate,
)
from s3tables_kit.jobs.kernel.signed_ops import is_missing, signed_get
from s3tables_kit.jobs.kernel.tables import metadata_location, read_object, table_call

DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "Forbidden"})
# The IAM action that authorises each request (GetObject of a table's metadata file is s3tables:GetTableData).
ACTION_OF = {"LoadTable": "GetTableMetadataLocation", "GetObject": "GetTableData"}


class DiscoverRefused(Exception):
    """A request refused for want of a permission: `action` (``s3tables:GetTablePolicy``) on `resource` (an ARN)."""

    def __init__(self, action: str, resource: str) -> None:
        super().__init__(action, resource)
        self.action, self.resource = action, resource

    def __str__(self) -> str:
        return f"{self.action} on {self.resource}"


def refusal(exc: BaseException, resource: str) -> DiscoverRefused | None:
    """The `DiscoverRefused` an error means, or None when it is not a refused permission."""
    if not isinstance(exc, ClientError):
        return None
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if error_code(exc) not in DENIED_CODES and status != 403:
        return None
    op = getattr(exc, "operation_name", "") or "?"
    return DiscoverRefused(f"s3tables:{ACTION_OF.get(op, op)}", resource)


# ----------------------------------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------------------------------


@dataclass
class TableFound:
    """One table as discovery saw it. `bytes`/`records`/`files`: the current snapshot's summary (``total-files-size``,
    ``total-records``, ``total-data-files``), 0 for a table with no snapshot, None when the summary lacks them."""

    namespace: str
    name: str
    arn: str
    metadata_location: str | None = None
    bytes: int | None = None
    records: int | None = None
    files: int | None = None
    snapshots: int = 0
    maintenance: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, Any] | None = None
    replication: dict[str, Any] | None = None
    channel: str | None = None  # its PutRows channel as GetChannel reports it; None: never written through PutRows
    refused: tuple[str, str] | None = None  # (action, resource): a permission the run lacks
    error: str | None = None  # what still failed after the retries (the second pass reads the table again)

    @property
    def qualified(self) -> str:
        return f"{self.namespace}.{self.name}"


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def snapshot_totals(metadata: dict[str, Any]) -> tuple[int | None, int | None, int | None, int]:
    """(bytes, records, data files, snapshots retained) of an Iceberg metadata document's current snapshot, from
    its summary (pure)."""
    snapshots = metadata.get("snapshots") or []
    current = metadata.get("current-snapshot-id")
    if current in (None, -1):
        return 0, 0, 0, len(snapshots)
    snap = next((s for s in snapshots if s.get("snapshot-id") == current), None)
    summary = (snap or {}).get("summary") or {}
    return (
        _int(summary.get("total-files-size")),
        _int(summary.get("total-records")),
        _int(summary.get("total-data-files")),
        len(snapshots),
    )


def _metadata(clients: Clients, bucket_arn: str, t: TableFound) -> tuple[str | None, dict[str, Any] | None]:
    """The table's metadata location and document: one loadTable, else the S3 Tables API's two requests."""
    b = BucketRef(bucket_arn)
    rest = clients.iceberg_rest(b.region, b.account)
    if not rest.refused:
        try:
            loaded = call(rest.load_table, bucket_arn, t.namespace, t.name)
            return loaded.metadata_location, loaded.metadata
        except ClientError as exc:
            if error_code(exc) in TRANSIENT_CODES:
                raise
        except ValueError:
            pass  # an answer that is not a LoadTableResult: the S3 Tables API answers instead
    got = table_call(clients, bucket_arn, t.namespace, t.name, "get_table_metadata_location")
    location = metadata_location(got)
    if location is None:
        return None, None
    doc = json.loads(read_object(clients, location, b.region, b.account))
    return location, doc if isinstance(doc, dict) else None


def read_table(clients: Clients, bucket_arn: str, namespace: str, name: str, arn: str) -> TableFound:
    """Everything discovery reports of one table. Never raises for the table's own errors: a refused permission is
    in `refused`, anything else in `error`."""
    t = TableFound(namespace, name, arn)
    ident = {"tableBucketARN": bucket_arn, "namespace": namespace, "name": name}
    try:
        t.metadata_location, metadata = _metadata(clients, bucket_arn, t)
        if metadata is not None:
            t.bytes, t.records, t.files, t.snapshots = snapshot_totals(metadata)
        else:
            t.bytes, t.records, t.files = 0, 0, 0
        got = signed_get(clients, bucket_arn, "GetTableMaintenanceConfiguration", **ident)
        t.maintenance = dict((got or {}).get("configuration") or {})
        got = signed_get(clients, bucket_arn, "GetTablePolicy", **ident)
        t.policy = json.loads(got["resourcePolicy"]) if got and got.get("resourcePolicy") else None
        got = signed_get(clients, bucket_arn, "GetTableReplication", tableArn=arn)
        t.replication = dict(got) if got else None
        b = BucketRef(bucket_arn)
        found = channels.read(clients.channels(b.region, b.account), arn)
        t.channel = found.describe() if found else None
    except (ClientError, BotoCoreError, ValueError) as exc:
        refused = refusal(exc, arn)
        if refused is not None:
            t.refused = (refused.action, refused.resource)
        else:
            t.error = describe_error(exc)
    return t


def read_chunk(
    bucket_arn: str, items: list[tuple[str, str, str]], concurrency: int, clients: Clients
) -> list[TableFound]:
    """`read_table` over (namespace, name, ARN) items of one bucket with `concurrency` threads (a worker process's
    job, `s3tables_kit.jobs.kernel.concurrency.WorkerPool`)."""
    return run_concurrently(lambda i: read_table(clients, bucket_arn, *i), items, concurrency)


# ----------------------------------------------------------------------------------------------------
# Buckets
# ----------------------------------------------------------------------------------------------------


@dataclass
class BucketFound:
    """One table bucket: its settings, policy, bucket-level replication, namespaces and tables."""

    arn: str
    name: str
    region: str
    account: str
    created_at: str | None = None
    encryption: dict[str, Any] = field(default_factory=dict)
    storage_class: str | None = None
    maintenance: dict[str, Any] = field(default_factory=dict)
    policy: dict[str, Any] | None = None
    replication: dict[str, Any] | None = None
    namespaces: list[str] = field(default_factory=list)
    listed: list[tuple[str, str, str]] = field(default_factory=list)  # (namespace, name, ARN) of every table
    managed_by: dict[str, str] = field(default_factory=dict)  # table ARN -> ListTables' `managedByService`, if any
    tables: list[TableFound] = field(default_factory=list)


def list_buckets(clients: Clients, region: str, account: str | None) -> list[dict[str, Any]]:
    """Every customer table bucket of a Region (and account): ListTableBuckets' entries (the AWS managed buckets, such
    as S3 Metadata's, are not the lake's). With `account`, only that account's buckets: without a role to assume
    there, the credentials list their own account's, which are not the ones asked for."""
    try:
        s3t = clients.s3tables(region, account)
        found = list(paginate(s3t, "list_table_buckets", "tableBuckets"))
    except ClientError as exc:
        refused = refusal(exc, f"arn:aws:s3tables:{region}:{account or '*'}:bucket/*")
        if refused is not None:
            raise refused from None
        raise
    return [
        dict(b)
        for b in found
        if str(b.get("type") or "customer") == "customer"
        and (account is None or BucketRef(b["arn"]).account == account)
    ]


def read_bucket(clients: Clients, entry: dict[str, Any], page_size: int | None = None) -> BucketFound:
    """A bucket's settings, policy, replication, namespaces and table list (not yet its tables' details). Raises
    `DiscoverRefused` for a permission the run lacks."""
    arn = str(entry["arn"])
    b = BucketRef(arn)
    created = entry.get("createdAt")
    found = BucketFound(arn, b.name, b.region, b.account, created.isoformat() if created else None)
    s3t = clients.s3tables(b.region, b.account)
    operation = "ListNamespaces"
    try:
        operation = "GetTableBucketEncryption"
        got = call(s3t.get_table_bucket_encryption, tableBucketARN=arn)
        found.encryption = dict(got.get("encryptionConfiguration") or {})
        operation = "GetTableBucketStorageClass"
        got = call(s3t.get_table_bucket_storage_class, tableBucketARN=arn)
        found.storage_class = (got.get("storageClassConfiguration") or {}).get("storageClass")
        operation = "GetTableBucketMaintenanceConfiguration"
        got = call(s3t.get_table_bucket_maintenance_configuration, tableBucketARN=arn)
        found.maintenance = dict(got.get("configuration") or {})
        operation = "GetTableBucketPolicy"
        found.policy = _optional(
            lambda: json.loads(call(s3t.get_table_bucket_policy, tableBucketARN=arn)["resourcePolicy"])
        )
        operation = "GetTableBucketReplication"
        found.replication = _optional(lambda: _plain(call(s3t.get_table_bucket_replication, tableBucketARN=arn)))
        operation = "ListNamespaces"
        found.namespaces = sorted(
            n["namespace"][0] for n in paginate(s3t, "list_namespaces", "namespaces", tableBucketARN=arn)
        )
        operation = "ListTables"
        summaries = list(paginate(s3t, "list_tables", "tables", page_size, tableBucketARN=arn))
        found.listed = [(t["namespace"][0], t["name"], t["tableARN"]) for t in summaries]
        found.managed_by = {t["tableARN"]: str(t["managedByService"]) for t in summaries if t.get("managedByService")}
    except ClientError as exc:
        refused = refusal(exc, arn)
        if refused is not None:
            raise DiscoverRefused(f"s3tables:{operation}", arn) from None
        raise
    return found


def _optional(read: Any) -> Any:
    """`read()`, None when the thing read does not exist."""
    try:
        return read()
    except ClientError as exc:
        if is_missing(exc):
            return None
        raise


def _plain(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}
