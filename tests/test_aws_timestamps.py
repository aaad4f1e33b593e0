"""`s3tables_kit.jobs.aws_timestamps`: the kit's sessions parse timestamps as botocore does, only faster (botocore's own
parser is the oracle for every shape AWS sends and for the shapes it hands back to botocore)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.utils import parse_timestamp as botocore_parse

from s3tables_kit.jobs import aws_timestamps
from s3tables_kit.jobs.kernel.sdk import boto3_session

SHAPES = [
    "2026-11-24T05:30:00Z",  # JSON protocols (S3 Tables createdAt, modifiedAt, replication timestamps)
    "2026-11-24T05:30:00.123Z",
    "2026-11-24T05:30:00.123456Z",
    "2026-11-24T05:30:00+00:00",
    "2026-11-24T07:30:00.5+02:00",
    "Tue, 24 Nov 2026 05:30:00 GMT",  # RFC 7231 headers (S3 Last-Modified)
    "Tue, 24 Nov 2026 05:30:00 +0000",
    "2026-11-24T05:30:00",  # naive: botocore decides
    "2026-11-24",
    "1795498200",  # epoch seconds as a string
    1795498200,
    1795498200.25,
    "24 November 2026 05:30 UTC",  # odd, left to dateutil
]


@pytest.mark.parametrize("value", SHAPES)
def test_same_instant_and_awareness_as_botocore(value: object) -> None:
    ours, theirs = aws_timestamps.parse_timestamp(value), botocore_parse(value)
    assert (ours.tzinfo is None) == (theirs.tzinfo is None)
    if ours.tzinfo is None:
        assert ours == theirs
    else:
        assert ours.astimezone(UTC) == theirs.astimezone(UTC)
        assert ours.utcoffset() == theirs.utcoffset()


def test_garbage_raises_like_botocore() -> None:
    with pytest.raises(ValueError):
        botocore_parse("not a date")
    with pytest.raises(ValueError):
        aws_timestamps.parse_timestamp("not a date")


def test_the_kits_sessions_use_it() -> None:
    session = boto3_session(region_name="us-east-1")
    factory = session._session.get_component("response_parser_factory")
    parser = factory.create_parser("rest-json")
    ts = parser._timestamp_parser  # what the rest-json parser calls for every timestamp member
    assert ts is aws_timestamps.parse_timestamp
    assert ts("2026-11-24T05:30:00.123Z") == datetime(2026, 11, 24, 5, 30, 0, 123000, tzinfo=UTC)
