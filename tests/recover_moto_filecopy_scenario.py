"""File copy over an S3 API whose table storage refuses what S3 Tables refuses (run in its own interpreter and JVM,
AWS environment pointing at a local emulator (`emulator/`)). Prints one JSON line with what the test asserts.

A writer catalog (the S3 Tables client catalog jar) builds `analytics.events` in the replica table bucket: schema
evolution, partition evolution, merge-on-read deletes over both specs (many position-delete files) and one data file
larger than the 5 MiB multipart part size. Then the recovery CLI runs exactly as on AWS (`--catalog-mode client
--endpoint-url`): a dry run (no JVM) and the real run with `--copy-mode files`.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main(endpoint: str, report_dir: str) -> None:
    import boto3

    from emulator.control import Control
    from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
    from s3tables_kit.jobs.recover.cli import main as cli_main
    from s3tables_kit.jobs.spark import build_session

    ctl = Control(endpoint)
    st = boto3.client("s3tables", endpoint_url=endpoint)
    rep = st.create_table_bucket(name="replica-bkt")["arn"]
    rec = st.create_table_bucket(name="recovery-bkt")["arn"]
    st.create_namespace(tableBucketARN=rep, namespace=["analytics"])
    writer = CatalogSpec("writer", "client", rep, region="us-east-1", endpoint=endpoint)
    spark = build_session(catalog_conf(writer))
    sql = spark.sql
    sql(
        "CREATE TABLE writer.analytics.events (id bigint NOT NULL, ts timestamp, payload string) USING iceberg "
        "PARTITIONED BY (days(ts)) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    # one file above the 5 MiB part size (hashes compress poorly), then small files in six days
    sql(
        "INSERT INTO writer.analytics.events SELECT id, TIMESTAMP '2025-01-01 00:00:00', "
        "concat(sha2(CAST(id AS string), 256), sha2(CAST(id * 7 AS string), 256)) FROM range(0, 100000, 1, 1)"
    )
    sql(
        "INSERT INTO writer.analytics.events SELECT id, timestamp_seconds(1735689600 + (id % 6) * 86400), "
        "CAST(id AS string) FROM range(100000, 101200, 1, 2)"
    )
    sql("ALTER TABLE writer.analytics.events ADD COLUMN region string")
    sql("ALTER TABLE writer.analytics.events REPLACE PARTITION FIELD days(ts) WITH months(ts)")
    sql(
        "INSERT INTO writer.analytics.events SELECT id, timestamp_seconds(1738368000 + (id % 60) * 86400), "
        "CAST(id AS string), 'eu' FROM range(101200, 102400, 1, 2)"
    )
    sql("DELETE FROM writer.analytics.events WHERE id % 9 = 0")
    rep_table = st.get_table(tableBucketARN=rep, namespace="analytics", name="events")
    rep_storage = rep_table["warehouseLocation"].removeprefix("s3://")
    delete_files = sql("SELECT count(*) FROM writer.analytics.events.delete_files").first()[0]  # type: ignore[index]
    specs = sorted(r[0] for r in sql("SELECT DISTINCT spec_id FROM writer.analytics.events.files").collect())
    expected = sql("SELECT count(*) FROM writer.analytics.events").first()[0]  # type: ignore[index]
    biggest = sql("SELECT max(file_size_in_bytes) FROM writer.analytics.events.data_files").first()[0]  # type: ignore[index]

    # The table storage refuses what S3 Tables refuses (probe with plain boto3).
    s3 = boto3.client("s3", endpoint_url=endpoint, config=_path_style())
    probes: dict[str, str] = {}
    for name, call in (
        ("CopyObject", lambda: s3.copy_object(Bucket=rep_storage, Key="x", CopySource=f"{rep_storage}/metadata/x")),
        ("ListObjectsV2", lambda: s3.list_objects_v2(Bucket=rep_storage)),
        ("DeleteObject", lambda: s3.delete_object(Bucket=rep_storage, Key="metadata/x")),
        ("DeleteObjects", lambda: s3.delete_objects(Bucket=rep_storage, Delete={"Objects": [{"Key": "x"}]})),
    ):
        try:
            call()
            probes[name] = "allowed"
        except Exception as e:  # botocore ClientError
            probes[name] = str(getattr(e, "response", {}).get("Error", {}).get("Code", type(e).__name__))
    before = ctl.stats()

    common = ["--catalog-mode", "client", "--replica-warehouse", rep, "--target-warehouse", rec]
    common += ["--replica-region", "us-east-1", "--endpoint-url", endpoint, "--table", "analytics.events"]
    common += ["--target-namespace", "recovered", "--report", report_dir, "--part-size-mb", "5"]

    def factory(conf: dict[str, str]) -> Any:
        return build_session(conf)

    dry = cli_main([*common, "--dry-run", "--copy-mode", "files"], spark_factory=factory)
    real = cli_main([*common, "--copy-mode", "files"], spark_factory=factory)
    after = ctl.stats()
    rows = sql("SELECT count(*) FROM recovery.recovered.events").first()[0]  # type: ignore[index]
    diff = (
        sql("SELECT * FROM writer.analytics.events EXCEPT ALL SELECT * FROM recovery.recovered.events").count(),
        sql("SELECT * FROM recovery.recovered.events EXCEPT ALL SELECT * FROM writer.analytics.events").count(),
    )
    tgt_table = st.get_table(tableBucketARN=rec, namespace="recovered", name="events")
    tgt_storage = tgt_table["warehouseLocation"].removeprefix("s3://")
    paths = [r[0] for r in sql("SELECT file_path FROM recovery.recovered.events.files").collect()]
    calls = {k: after["s3_calls"].get(k, 0) - before["s3_calls"].get(k, 0) for k in after["s3_calls"]}
    print(
        json.dumps(
            {
                "dry": dry,
                "real": real,
                "rows": rows,
                "expected": expected,
                "diff": diff,
                "delete_files": delete_files,
                "specs": specs,
                "biggest_file": biggest,
                "probes": probes,
                "refused_during_recovery": after["s3_refused"][len(before["s3_refused"]) :],
                "replica_storage_ops": sorted(
                    {k.split(" ")[1] for k, v in calls.items() if v and k.startswith(rep_storage)}
                ),
                "target_storage_ops": sorted(
                    {k.split(" ")[1] for k, v in calls.items() if v and k.startswith(tgt_storage)}
                ),
                "target_paths_in_own_storage": all(p.startswith(f"s3://{tgt_storage}/") for p in paths),
                "target_files": len(paths),
            }
        )
    )


def _path_style() -> Any:
    from botocore.config import Config

    return Config(s3={"addressing_style": "path"})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
