"""`status`'s streaming column: rows a `PutRows` channel accepted on a source table and has not committed yet.

Such rows are in no snapshot of the source, so in no replica: they are outside every replica's recovery point until
the service commits them and replication carries the commit (`s3tables_kit.jobs.kernel.channels`). One `GetChannel` per
source table (`s3tables:GetChannel`, granted to the monitor role); a table never written through `PutRows` has no
channel and shows nothing. Read by the command only (the monitor's package does not carry the model extension GetChannel
needs).
"""

from __future__ import annotations

from collections.abc import Sequence

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel import channels as channel_reads
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.sdk import BucketRef, describe_error
from s3tables_kit.jobs.ops.status_rows import DestinationStatus
from s3tables_kit.topology import channels


def mark_buffered(clients: Clients, rows: Sequence[DestinationStatus], concurrency: int) -> list[str]:
    """Set each row's `buffered_rows` from its source table's channel; the warnings (a channel whose commits are
    blocked, a channel that could not be read)."""

    def one(arn: str) -> tuple[str, channels.Channel | None, str | None]:
        b = BucketRef(arn.split("/table/", 1)[0])
        try:
            return arn, channel_reads.read(clients.channels(b.region, b.account), arn), None
        except (ClientError, BotoCoreError) as exc:
            return arn, None, describe_error(exc)

    found = run_concurrently(one, sorted({r.source_table_arn for r in rows}), concurrency)
    by_arn = {arn: ch for arn, ch, _ in found}
    for r in rows:
        ch = by_arn.get(r.source_table_arn)
        r.buffered_rows = ch.buffered_rows if ch is not None else None
    names = {r.source_table_arn: r.table for r in rows}
    warnings = [f"streaming channel of {names[a]} unreadable: {err}" for a, _, err in found if err]
    warnings += [
        f"streaming channel of {names[a]} is not committing: {ch.describe()}"
        for a, ch, _ in found
        if ch is not None and (ch.state != channels.ACTIVE or ch.error)
    ]
    return warnings
