"""A local stand-in for S3 Tables replication: a relocated, read-only copy of a table with its full history.

`CALL <source>.system.rewrite_table_path` rewrites every metadata file for the replica's location and lists the files
to copy; we copy them and register the latest metadata file in the replica catalog (`register_table`). This is the
"replication service" of the drill and the tests: it is the only code that writes into a replica warehouse and it
does not go through the kit's guarded SQL runner on purpose.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.recover.metadata import local_path
from jobs.recover.model import Ident

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def file_uri(path: Path) -> str:
    """`file:/abs` (one slash): the form a Hadoop catalog uses for its table locations (REFERENCE §5)."""
    return "file:" + str(path.resolve())


def replicate_table(
    spark: SparkSession,
    source_catalog: str,
    source_warehouse: Path,
    replica_catalog: str,
    replica_warehouse: Path,
    ident: Ident,
) -> dict[str, object]:
    src_loc = f"{file_uri(source_warehouse)}/{ident.namespace}/{ident.name}"
    dst_loc = f"{file_uri(replica_warehouse)}/{ident.namespace}/{ident.name}"
    row = spark.sql(
        f"CALL `{source_catalog}`.system.rewrite_table_path(table => '{ident}', "
        f"source_prefix => '{src_loc}', target_prefix => '{dst_loc}')"
    ).first()
    assert row is not None
    latest, file_list = str(row["latest_version"]), str(row["file_list_location"])
    copied = 0
    list_path = local_path(file_list)
    staging = list_path.parent
    files = list(list_path.glob("*.csv")) if list_path.is_dir() else [list_path]
    staged_metadata: dict[str, str] = {}
    for f in files:
        with f.open(newline="") as fh:
            for rec in csv.reader(fh):
                if len(rec) != 2:
                    continue
                if rec[1].endswith(".metadata.json"):
                    # Table metadata files are not copied: register_table commits the latest one into the replica
                    # catalog (a Hadoop catalog would otherwise discover copied metadata files as a table already).
                    staged_metadata[rec[1].rsplit("/", 1)[-1]] = rec[0]
                    continue
                src, dst = local_path(rec[0]), local_path(rec[1])
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                copied += 1
    metadata_file = staged_metadata[latest]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{replica_catalog}`.`{ident.namespace}`")
    spark.sql(
        f"CALL `{replica_catalog}`.system.register_table(table => '{ident}', metadata_file => '{metadata_file}')"
    ).collect()
    if staging.name.startswith("copy-table-staging-"):
        shutil.rmtree(staging, ignore_errors=True)
    return {"files_copied": copied, "metadata_file": metadata_file, "latest_version": latest}
