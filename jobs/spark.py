"""One place that builds a SparkSession with the kit's Iceberg / S3 Tables jars.

Used by the recovery job, the local drill, the tests and the benchmarks. Catalogs are passed in as plain Spark
configuration (`spark.sql.catalog.<name>...`), see `s3tables_kit.jobs.kernel.catalogs` for builders.

Under `spark-submit` (the `make recover` target) the jars are already on the classpath and the master comes from the
command line: `build_session(local=False)` then only adds the catalogs and the SQL extensions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from s3tables_kit.jobs.jars import kit_jars
from s3tables_kit.topology import paths

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
JAVA_OPTIONS_ENV = "KIT_SPARK_JAVA_OPTIONS"  # extra JVM flags of a local session's driver (the tests: C1 JIT only)


def session_conf(
    catalogs: Mapping[str, str] | None = None,
    *,
    local: bool = True,
    cores: int = 2,
    shuffle_partitions: int = 4,
    jars_dir: Path | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The Spark configuration as a plain dict (pure apart from listing the jar directory when `local`)."""
    conf: dict[str, str] = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
    }
    if local:
        conf["spark.master"] = f"local[{cores}]"
        conf["spark.jars"] = ",".join(str(j) for j in kit_jars(jars_dir))
        conf["spark.driver.memory"] = os.environ.get("KIT_SPARK_DRIVER_MEMORY", "2g")
        conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.default.parallelism"] = str(cores)
        # Python tasks (the file copy) import the kit from the repository.
        conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(
            p for p in (str(paths.ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        conf["spark.sql.warehouse.dir"] = os.environ.get("KIT_SPARK_WAREHOUSE", "/tmp/kit-spark-warehouse")
        # The local driver's JVM flags: must be set before that JVM starts, so they come with the launch conf.
        if java_options := os.environ.get(JAVA_OPTIONS_ENV, "").strip():
            conf["spark.driver.extraJavaOptions"] = java_options
    conf.update(catalogs or {})
    conf.update(extra or {})
    return conf


def build_session(
    catalogs: Mapping[str, str] | None = None,
    *,
    app_name: str = "s3tables-replica-kit",
    local: bool = True,
    cores: int = 2,
    shuffle_partitions: int = 4,
    jars_dir: Path | None = None,
    extra: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """Build (or reuse) the SparkSession. Catalog settings are applied to an existing session too."""
    from pyspark.sql import SparkSession

    conf = session_conf(
        catalogs,
        local=local,
        cores=cores,
        shuffle_partitions=shuffle_partitions,
        jars_dir=jars_dir,
        extra=extra,
    )
    if local:  # PySpark's Python tasks (the file copy) run this interpreter, with its packages (boto3, pyarrow)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    add_catalogs(spark, catalogs or {})
    return spark


def add_catalogs(spark: SparkSession, catalogs: Mapping[str, str]) -> None:
    """Register catalogs on a running session (Spark resolves `spark.sql.catalog.*` lazily, at first use)."""
    for k, v in catalogs.items():
        spark.conf.set(k, v)
