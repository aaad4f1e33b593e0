"""A faster timestamp parser for the kit's botocore sessions (same results as botocore's own).

botocore parses every timestamp of a response with ``dateutil.parser.parse`` (``botocore.utils.parse_timestamp``):
about 0.1 ms each. The ops tools' many-table loops parse two per ``GetTable``, one per object read and two per table
of every ``ListTables`` page, about 15% of the client CPU per call (profile:
docs/decisions/0017-ops-tools-at-lake-scale.md). The formats AWS sends are fixed: ISO 8601 with an offset (JSON
protocols: ``2026-11-24T05:30:00.123Z``) and RFC 7231 dates in headers (``Tue, 24 Nov 2026 05:30:00 GMT``);
`parse_timestamp` reads those with the standard library and hands everything else (epoch numbers, naive or odd strings)
to botocore's parser, so what it returns is what botocore would return (a test compares both on every shape). Installed
per session through botocore's documented parser-factory component (what the AWS CLI does for
``--cli-timestamp-format``); nothing happens on import.
"""

from __future__ import annotations

from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any


def parse_timestamp(value: Any) -> datetime:
    """botocore's `parse_timestamp`, with the two formats AWS sends parsed by the standard library."""
    from botocore.utils import parse_timestamp as botocore_parse

    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            try:
                parsed = parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                return botocore_parse(value)
        if parsed.tzinfo is not None:
            return parsed
    return botocore_parse(value)


def install(botocore_session: Any) -> Any:
    """Make `botocore_session`'s clients parse timestamps with `parse_timestamp` (before any client is made from
    it). Returns the session."""
    botocore_session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=parse_timestamp)
    return botocore_session
