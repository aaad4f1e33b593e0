"""Streaming channels (`PutRows`): what a table's default channel holds that is not yet in the table.

`PutRows` accepts rows into a table's channel and the service commits them later, usually within a minute
(docs/aws-facts.md#streaming-writes-putrows): rows accepted but not committed are in no snapshot of the source, so
in no replica either. `GetChannel` reports the channel's `state` and `approximateNumberOfBufferedRows`, a count AWS
says "can read 0 before your rows are committed": a reader that needs every accepted row committed waits one commit
interval after it reads 0 (`COMMIT_INTERVAL_S`). A table never written through `PutRows` has no channel
(`GetChannel` answers NotFoundException). The vocabulary of every reader: the jobs (`jobs/kernel/channels.py`) and
live-verify's probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

# "usually within a minute" (the PutRows user guide); the drain's wait after a channel reads 0.
COMMIT_INTERVAL_S = 60.0
ACTIVE = "active"


@dataclass(frozen=True)
class Channel:
    """A table's default channel as `GetChannel` reports it."""

    table_arn: str
    state: str
    buffered_rows: int
    error: str | None = None  # "<errorCode>: <errorMessage>" while commits are blocked

    @property
    def drained(self) -> bool:
        """Nothing buffered and nothing blocking commits (a `failing` channel holds rows whatever its count says)."""
        return self.buffered_rows == 0 and self.state == ACTIVE and self.error is None

    def describe(self) -> str:
        held = f"~{self.buffered_rows} buffered row(s)"
        return f"{held}, channel {self.state}" + (f" ({self.error})" if self.error else "")


def of_answer(table_arn: str, r: dict[str, Any]) -> Channel:
    error = f"{r['errorCode']}: {r.get('errorMessage', '')}".rstrip(": ") if r.get("errorCode") else None
    return Channel(table_arn, str(r.get("state") or ""), int(r.get("approximateNumberOfBufferedRows") or 0), error)


def read(get_channel: Callable[..., dict[str, Any]], table_arn: str) -> Channel | None:
    """The table's default channel through `get_channel` (a client's `get_channel`, or the jobs' retrying call of it),
    None when it has none (never written through `PutRows`: NotFoundException)."""
    try:
        r = get_channel(tableArn=table_arn)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "NotFoundException":
            return None
        raise
    return of_answer(table_arn, r)
