"""Reading a table's streaming channel (`GetChannel`) with the kit's retry policy; the vocabulary is
`s3tables_kit.topology.channels`."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.sdk import call, error_code
from s3tables_kit.topology.channels import Channel, of_answer


def read(channels_client: Any, table_arn: str) -> Channel | None:
    """The table's default channel, None when it has none (never written through `PutRows`)."""
    try:
        r = call(channels_client.get_channel, tableArn=table_arn)
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            return None
        raise
    return of_answer(table_arn, r)
