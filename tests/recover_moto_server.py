"""moto server for the recovery stretch test (issue 4, item 10), with one fix of moto 5.2.5's S3 Tables API.

moto's UpdateTableMetadataLocation answers `"namespace": "<name>"` where the API (and the AWS SDK v2 used by the
S3 Tables client catalog jar) has a list of strings: the SDK fails to unmarshal the 200 response, retries, and the
retry hits a version-token conflict, so every Iceberg commit fails. This wraps that one response; everything else is
stock moto. Run: `python -m tests.recover_moto_server -H 127.0.0.1 -p PORT`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from moto.s3tables import responses as _responses

_original = _responses.S3TablesResponse.update_table_metadata_location


def _update_table_metadata_location(self: Any) -> Any:
    status, headers, body = _original(self)
    doc = json.loads(body)
    if isinstance(doc.get("namespace"), str):
        doc["namespace"] = [doc["namespace"]]
    return status, headers, json.dumps(doc)


_responses.S3TablesResponse.update_table_metadata_location = _update_table_metadata_location  # type: ignore[method-assign]

if __name__ == "__main__":
    from moto.server import main

    main(sys.argv[1:])
