"""The ONE local SparkSession of the test run (session scope), shared by every `@pytest.mark.spark` test.

Tests register their own catalogs on it with `s3tables_kit.jobs.spark.add_catalogs` (catalog names are resolved lazily,
so a test module picks names of its own, e.g. `rt_replica`). Built by `s3tables_kit.jobs.spark.build_session`: local[2],
4 shuffle partitions, Iceberg extensions, the jars of `.jars/`. `stand_in_credentials` hands it the local stand-in's
credentials for a block.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from s3tables_kit.jobs.spark import build_session

    session = build_session({}, app_name="kit-tests")
    yield session
    session.stop()


@contextmanager
def stand_in_credentials(spark: Any, env: Mapping[str, str]) -> Iterator[None]:
    """The session's JVM and its executors' Python workers started without AWS credentials: the stand-in's, meanwhile.

    `env`: the variables the workers get (`AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` among them, which the JVM's
    S3 client gets as system properties); each is put back as it was after the block."""
    jvm = spark._jvm.java.lang.System
    props = {"aws.accessKeyId": env["AWS_ACCESS_KEY_ID"], "aws.secretAccessKey": env["AWS_SECRET_ACCESS_KEY"]}
    environment = spark.sparkContext.environment
    saved = {k: environment.get(k) for k in env}
    for k, v in props.items():
        jvm.setProperty(k, v)
    environment.update(env)
    try:
        yield
    finally:
        for k in props:
            jvm.clearProperty(k)
        for k, old in saved.items():
            if old is None:
                environment.pop(k, None)
            else:
                environment[k] = old
