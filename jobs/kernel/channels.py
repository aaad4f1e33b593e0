"""Reading a table's streaming channel (`GetChannel`) with the kit's retry policy; the vocabulary is
`s3tables_kit.topology.channels`."""

from __future__ import annotations

import functools
from typing import Any

from s3tables_kit.jobs.kernel.sdk import call
from s3tables_kit.topology import channels
from s3tables_kit.topology.channels import Channel


def read(channels_client: Any, table_arn: str) -> Channel | None:
    """The table's default channel, None when it has none (never written through `PutRows`)."""
    return channels.read(functools.partial(call, channels_client.get_channel), table_arn)
