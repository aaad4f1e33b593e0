"""The live side of `s3tables_kit.jobs.ops.drift`: a source's replication configurations (bucket level, and table level
for every table of the bucket: one `GetTableReplication` per table) and a bucket's policy. A configuration or policy
that does not exist is None; one that could not be read is `Unreadable` (never silently passed). Shipped in the
monitor's Lambda package."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import chunks, run_concurrently
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error, error_code
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables
from s3tables_kit.jobs.ops.drift import Live, LiveReplication, Unreadable

if TYPE_CHECKING:
    from s3tables_kit.jobs.kernel.concurrency import WorkerPool


def _s3tables(clients: Clients, bucket_arn: str) -> Any:
    b = BucketRef(bucket_arn)
    return clients.s3tables(b.region, b.account)


def read_live(fn: Any, /, *args: Any, **kw: Any) -> Any:
    """`fn(*args, **kw)`'s response (with the throttling backoff), None on NotFound (the configuration or policy
    does not exist), `Unreadable` on any other error: what the audit and the monitor read never fails silently."""
    try:
        return call(fn, *args, **kw)
    except ClientError as exc:
        return None if error_code(exc) == "NotFoundException" else Unreadable(describe_error(exc))
    except BotoCoreError as exc:
        return Unreadable(describe_error(exc))


def configuration_of(response: Any) -> Live:
    """The ``configuration`` of a `read_live` answer of a replication read (None and `Unreadable` pass through)."""
    if response is None or isinstance(response, Unreadable):
        return response
    return dict(response["configuration"])


def read_replication(
    clients: Clients,
    bucket_arn: str,
    tables: Sequence[TableRef] | Unreadable | None = None,
    *,
    concurrency: int = 16,
    pool: WorkerPool | None = None,
) -> LiveReplication:
    """The bucket-level configuration of `bucket_arn` and the table-level one of each of `tables` (default: every
    table of the bucket, listed here; `Unreadable`: the caller could not list them). With `pool` the table-level
    reads are shared by its worker processes (one process's interpreter lock would bound a large bucket's reads to
    one core)."""
    s3t = _s3tables(clients, bucket_arn)
    bucket = configuration_of(read_live(s3t.get_table_bucket_replication, tableBucketARN=bucket_arn))
    if tables is None:
        try:
            tables = list_tables(clients, bucket_arn)
        except (ClientError, BotoCoreError) as exc:
            tables = Unreadable(describe_error(exc))
    if isinstance(tables, Unreadable):
        return LiveReplication(bucket, {}, listing=tables)
    if pool is not None:
        threads = max(1, concurrency // pool.processes)
        jobs = [functools.partial(_table_configurations, part, threads) for part in chunks(list(tables), CHUNK)]
        confs = [c for out in pool.map(jobs) for c in out]
    else:
        confs = _table_configurations(list(tables), concurrency, clients)
    return LiveReplication(bucket, {t.qualified: (t.arn, c) for t, c in zip(tables, confs, strict=True)})


CHUNK = 500  # tables per worker-process job


def _table_configurations(tables: list[TableRef], concurrency: int, clients: Clients) -> list[Live]:
    """The table-level replication configuration of each table, in order (a worker-process job, or inline)."""
    return run_concurrently(
        lambda t: configuration_of(read_live(_s3tables(clients, t.bucket_arn).get_table_replication, tableArn=t.arn)),
        tables,
        concurrency,
    )


def read_bucket_policy(clients: Clients, bucket_arn: str) -> Any:
    """The bucket policy's JSON text, None when the bucket has none, `Unreadable` when it could not be read."""
    got = read_live(_s3tables(clients, bucket_arn).get_table_bucket_policy, tableBucketARN=bucket_arn)
    if got is None or isinstance(got, Unreadable):
        return got
    return got["resourcePolicy"]
