"""The one place the kit extends botocore's models: operations AWS documents that the pinned botocore lacks, merged
by botocore's own loader (`<service>/<version>/service-2.sdk-extras.json` on a search path), never a patched SDK.

Now: `GetChannel` and `PutRows` (botocore >= 1.44.18; docs/aws-facts.md#streaming-writes-putrows). Remove an entry
once the pinned botocore has it (tests/test_sdk_models.py says when). It sits in `topology` because every layer that
builds an AWS session reads it: the jobs' sessions, live-verify's target and, by path, the stand-in.
"""

from __future__ import annotations

from typing import Any

from s3tables_kit.topology import paths

MODELS_DIR = paths.PACKAGE / "topology" / "botocore_models"


def extended(session: Any) -> Any:
    """`session` (a botocore session) whose loader also reads the kit's model extensions (`MODELS_DIR`)."""
    loader = session.get_component("data_loader")
    if str(MODELS_DIR) not in loader.search_paths:
        loader.search_paths.insert(0, str(MODELS_DIR))
    return session
