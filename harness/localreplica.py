"""A local stand-in for S3 Tables replication: a relocated, read-only copy of a table with its full history.

`CALL <source>.system.rewrite_table_path` rewrites every metadata file for the replica's location and lists the files
to copy; we copy all of them, metadata files included, so the replica keeps its whole metadata history in its own
location like a real replica (every metadata-log entry points at a file that exists: `--as-of` reads the properties
of the recovery point from there). The replica catalog is a Hadoop catalog: the copied `v<N>.metadata.json` files
are the table, and `version-hint.text` names the newest. A source whose metadata files are not named `v<N>` is
registered instead (`register_table`; its metadata log then points at files that were not copied). This is the
"replication service" of the drill and the tests: it is the only code that writes into a replica warehouse and it
does not go through the kit's guarded SQL runner on purpose.
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from s3tables_kit.jobs.kernel.catalogs import file_uri
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.metadata import local_path

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


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
    staged_metadata: dict[str, str] = {}  # file name -> staged (rewritten) copy
    metadata_dst: dict[str, str] = {}  # file name -> its place in the replica
    for f in files:
        with f.open(newline="") as fh:
            for rec in csv.reader(fh):
                if len(rec) != 2:
                    continue
                if rec[1].endswith(".metadata.json"):
                    staged_metadata[rec[1].rsplit("/", 1)[-1]] = rec[0]
                    metadata_dst[rec[1].rsplit("/", 1)[-1]] = rec[1]
                    continue
                _copy(rec[0], rec[1])
                copied += 1
    versions = {name: _VERSION.match(name) for name in staged_metadata}
    if all(versions.values()):
        # A Hadoop table's whole metadata history, in the replica's own location; the newest file is the table.
        for name, src in staged_metadata.items():
            _copy(src, metadata_dst[name])
            copied += 1
        newest = max(int(m.group(1)) for m in versions.values() if m)
        hint = local_path(metadata_dst[latest]).parent / "version-hint.text"
        hint.write_text(f"{newest}\n")
        metadata_file = metadata_dst[latest]
        spark.sql(f"REFRESH TABLE `{replica_catalog}`.`{ident.namespace}`.`{ident.name}`")
    else:
        metadata_file = staged_metadata[latest]
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{replica_catalog}`.`{ident.namespace}`")
        spark.sql(
            f"CALL `{replica_catalog}`.system.register_table(table => '{ident}', metadata_file => '{metadata_file}')"
        ).collect()
    if staging.name.startswith("copy-table-staging-"):
        shutil.rmtree(staging, ignore_errors=True)
    return {"files_copied": copied, "metadata_file": metadata_file, "latest_version": latest}


_VERSION = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


def _copy(src: str, dst: str) -> None:
    s, d = local_path(src), local_path(dst)
    d.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(s, d)
