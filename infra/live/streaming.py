"""U30: whether a Deny added after `PutRows` accepted rows stops the service's deferred commit of them
(docs/aws-facts.md, "Unverified AWS behaviours").

On the run's main source table (a schema and data from the run's writer): one row through `PutRows`, then at once
the planned failover's own freeze (`s3tables_kit.policies.freeze`, merged into the source bucket's policy as the tool
merges it), then, while frozen, the table's snapshot and its channel are watched for `WATCH_S`. Reading (a): the row is
committed while frozen (the Deny does not bind the service's commit); reading (b): it stays buffered (or the channel
fails) until the freeze is lifted, then it is committed. The planned failover is right either way (it drains the
channels while frozen and refuses when one does not drain), so either reading confirms the fact and names itself; a row
that is committed neither while frozen nor after the lift contradicts it (accepted rows lost).

The bucket policy is put back as it was read (or deleted when there was none) whatever happens.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.infra.live.probes import Fact, evidence_of, judge

WATCH_S, POLL_S = 150.0, 5.0  # AWS commits "usually within a minute"; the stand-in within a fraction of a second
ROW_ID = 987654321


def _snapshot(src: Any, bucket_arn: str, ns: str, name: str) -> str:
    return str(src.get_table_metadata_location(tableBucketARN=bucket_arn, namespace=ns, name=name)["metadataLocation"])


def probe_deferred_commit(
    fact: Fact, src: Any, bucket_arn: str, table_arn: str, ns: str, name: str, break_glass: Sequence[str], local: bool
) -> None:
    """U30 (module docstring). `src`: an s3tables client of the source account (the kit's SDK session, which knows
    PutRows and GetChannel). Leaves `fact` undecided when a request fails."""
    try:
        _probe(fact, src, bucket_arn, table_arn, ns, name, break_glass, local)
    except ClientError as exc:
        fact.observed = f"undecided: {evidence_of(exc)}: {exc}"


def _probe(
    fact: Fact, src: Any, bucket_arn: str, table_arn: str, ns: str, name: str, break_glass: Sequence[str], local: bool
) -> None:
    from s3tables_kit.policies.freeze import freeze_statement, frozen_policy, render
    from s3tables_kit.topology import channels

    watch = 1.0 if local else WATCH_S  # the stand-in commits 0.2 s after acceptance
    try:
        original = src.get_table_bucket_policy(tableBucketARN=bucket_arn)["resourcePolicy"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NotFoundException":
            raise
        original = None
    before = _snapshot(src, bucket_arn, ns, name)
    fact.expected = "the row is committed while frozen (reading a) or once the freeze is lifted (reading b)"
    try:
        accepted = src.put_rows(tableArn=table_arn, payloadFormat="JSON", payload=json.dumps({"id": ROW_ID}).encode())
        frozen = frozen_policy(json.loads(original) if original else None, freeze_statement(break_glass, bucket_arn))
        src.put_table_bucket_policy(tableBucketARN=bucket_arn, resourcePolicy=render(frozen))
        seen, deadline = None, time.monotonic() + watch
        while time.monotonic() < deadline and _snapshot(src, bucket_arn, ns, name) == before:
            seen = channels.read(src.get_channel, table_arn)
            time.sleep(0.1 if local else POLL_S)
        while_frozen = _snapshot(src, bucket_arn, ns, name) != before
    finally:
        if original is None:
            src.delete_table_bucket_policy(tableBucketARN=bucket_arn)
        else:
            src.put_table_bucket_policy(tableBucketARN=bucket_arn, resourcePolicy=original)
    after_lift = while_frozen
    deadline = time.monotonic() + watch
    while not after_lift and time.monotonic() < deadline:
        time.sleep(0.1 if local else POLL_S)
        after_lift = _snapshot(src, bucket_arn, ns, name) != before
    held = f"; while frozen the channel said {seen.describe()}" if seen is not None else ""
    reading = "a (the Deny does not stop the commit)" if while_frozen else "b (the Deny holds the rows until lifted)"
    judge(
        fact,
        fact.expected,
        after_lift,
        f"reading {reading}{held}" if after_lift else f"the row was never committed{held}",
        evidence_of(accepted),
        change="accepted rows were lost to a freeze: stop PutRows producers before a planned failover (runbook) and "
        "record it in docs/failover.md",
    )
