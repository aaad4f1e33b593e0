"""The ONE local SparkSession of the test run (session scope), shared by every `@pytest.mark.spark` test.

Tests register their own catalogs on it with `jobs.spark.add_catalogs` (catalog names are resolved lazily, so a test
module picks names of its own, e.g. `rt_replica`). Built by `jobs.spark.build_session`: local[2], 4 shuffle partitions,
Iceberg extensions, the jars of `.jars/`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from s3tables_kit.jobs.spark import build_session

    session = build_session({}, app_name="kit-tests")
    yield session
    session.stop()
