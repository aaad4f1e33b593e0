"""Run inside its own interpreter (own JVM, AWS env pointing at a local moto): the production catalog path.

A writer catalog (S3 Tables client catalog jar) creates analytics.orders in the "replica" table bucket (standing in
for replication), then the recovery CLI runs with `--catalog-mode client --endpoint-url` exactly as on AWS: dry run
(boto3 + pyiceberg, no JVM) and the real run. Prints one JSON line with the results.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main(endpoint: str, report_dir: str) -> None:
    import boto3

    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
    from s3tables_kit.jobs.recover.cli import main as cli_main
    from s3tables_kit.jobs.spark import build_session

    st = boto3.client("s3tables", endpoint_url=endpoint)
    rep = st.create_table_bucket(name="replica-bkt")["arn"]
    rec = st.create_table_bucket(name="recovery-bkt")["arn"]
    st.create_namespace(tableBucketARN=rep, namespace=["analytics"])
    common = ["--catalog-mode", "client", "--replica-warehouse", rep, "--target-warehouse", rec]
    common += ["--replica-region", "us-east-1", "--endpoint-url", endpoint, "--namespace", "analytics"]
    common += ["--target-namespace", "recovered", "--report", report_dir]

    spark_holder: dict[str, object] = {}

    def factory(conf: dict[str, str]) -> Any:
        spark_holder["s"] = s = build_session(conf)
        return s

    writer = CatalogSpec("writer", "client", rep, region="us-east-1", endpoint=endpoint)
    spark = build_session(catalog_conf(writer))
    spark.sql(
        "CREATE TABLE writer.analytics.orders (order_id string NOT NULL, order_date date, amount double) "
        "USING iceberg PARTITIONED BY (months(order_date))"
    )
    spark.sql(
        "INSERT INTO writer.analytics.orders VALUES ('o1', DATE '2025-10-01', 1.0), ('o2', DATE '2025-11-01', 2.0)"
    )
    spark.sql("INSERT INTO writer.analytics.orders VALUES ('o3', DATE '2025-12-01', 3.0)")
    dry = cli_main([*common, "--dry-run"], spark_factory=factory)
    real = cli_main(common, spark_factory=factory)
    rows = spark.sql("SELECT count(*) FROM recovery.recovered.orders").first()[0]  # type: ignore[index]
    tables = [t["name"] for t in st.list_tables(tableBucketARN=rec, namespace="recovered")["tables"]]
    print(json.dumps({"dry": dry, "real": real, "rows": rows, "recovery_tables": tables}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
