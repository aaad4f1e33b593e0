"""Reading table metadata without Spark where possible (so `--dry-run` starts no JVM).

A `MetadataSource` finds a table's current metadata file and reads it:
  - `HadoopMetadataSource`: local Hadoop-catalog warehouse, pure file reads: the table's newest
    `v<N>.metadata.json`, the rule Iceberg's `HadoopTableOperations` ends with (never the `version-hint.text`, which
    is only Iceberg's shortcut and is written after the metadata file: a process killed in between left a committed
    table without a hint).
  - `S3TablesMetadataSource`: boto3 `s3tables` (GetTableMetadataLocation, ListTables, GetTable for the replica's
    source table ARN) + pyiceberg's FileIO for the JSON; works for the client, REST and Glue modes alike.
  - `SparkMetadataSource`: fallback for any other catalog (JDBC): the `metadata_log_entries` metadata table.
All of them only READ. Parsing is pyiceberg-free JSON (see `model.table_info_from_metadata`).
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import PlanError
from s3tables_kit.jobs.kernel.snapshots import TableInfo, table_info_from_metadata

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


class MetadataSource(Protocol):
    def list_tables(self, namespace: str) -> list[str]: ...

    def metadata_location(self, ident: Ident) -> str | None: ...

    def read_json(self, location: str) -> dict[str, Any]: ...

    def source_table_arn(self, ident: Ident) -> str | None: ...

    def table_location(self, ident: Ident) -> str | None:
        """Where a NEW table of that name would live, when the catalog decides it from the name (Hadoop)."""
        ...


def load_table_info(src: MetadataSource, ident: Ident) -> TableInfo | None:
    loc = src.metadata_location(ident)
    if loc is None:
        return None
    return table_info_from_metadata(ident, src.read_json(loc), loc, src.source_table_arn(ident))


def table_properties(src: MetadataSource, ident: Ident) -> dict[str, str] | None:
    loc = src.metadata_location(ident)
    if loc is None:
        return None
    return {str(k): str(v) for k, v in (src.read_json(loc).get("properties") or {}).items()}


def read_manifest_list(location: str, props: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The entries of a snapshot's manifest list (Avro), read with pyiceberg (no JVM): content, spec id, counts."""
    from pyiceberg.io import load_file_io
    from pyiceberg.manifest import read_manifest_list as _read

    io = load_file_io(props or {}, location)
    return [
        {
            "path": m.manifest_path,
            "content": int(m.content),
            "partition_spec_id": m.partition_spec_id,
            "added_files_count": m.added_files_count,
            "existing_files_count": m.existing_files_count,
        }
        for m in _read(io.new_input(location))
    ]


def _decode(raw: bytes, location: str) -> dict[str, Any]:
    if location.endswith(".gz.metadata.json") or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    if not isinstance(doc, dict):
        raise ValueError(f"{location}: not an Iceberg metadata document")
    return doc


def local_path(uri: str) -> Path:
    if uri.startswith("file://"):
        return Path(uri[len("file://") :])
    if uri.startswith("file:"):
        return Path(uri[len("file:") :])
    if "://" in uri:
        raise ValueError(f"{uri}: not a local path")
    return Path(uri)


_VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


def newest_version_file(meta_dir: Path) -> str | None:
    """The highest `v<N>[.gz].metadata.json` in a Hadoop table's metadata directory (what Iceberg's Hadoop catalog
    loads: it starts from the hint and then moves on while `v<N+1>` exists, or lists when the hint is missing)."""
    try:
        names = [p.name for p in meta_dir.iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return None
    found = [(int(m.group(1)), n) for n in names if (m := _VERSION_FILE.match(n))]
    return max(found)[1] if found else None


def missing_warehouse(warehouse: str) -> str | None:
    """A local warehouse path that does not exist, named (None when it exists or is not local)."""
    try:
        root = local_path(warehouse)
    except ValueError:
        return None
    return None if root.is_dir() else f"the warehouse path {root} does not exist (from {warehouse!r})"


class HadoopMetadataSource:
    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse.rstrip("/")
        self.root = local_path(self.warehouse)

    def _table_dir(self, ident: Ident) -> Path:
        return self.root / ident.namespace / ident.name

    def list_tables(self, namespace: str) -> list[str]:
        d = self.root / namespace
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir() if p.is_dir() and newest_version_file(p / "metadata"))

    def metadata_location(self, ident: Ident) -> str | None:
        name = newest_version_file(self._table_dir(ident) / "metadata")
        return f"{self.warehouse}/{ident.namespace}/{ident.name}/metadata/{name}" if name else None

    def read_json(self, location: str) -> dict[str, Any]:
        try:
            raw = local_path(location).read_bytes()
        except OSError as e:
            raise PlanError(f"cannot read the metadata file {location}: {e.strerror or type(e).__name__}") from None
        return _decode(raw, location)

    def source_table_arn(self, ident: Ident) -> str | None:
        return None

    def table_location(self, ident: Ident) -> str | None:
        return f"{self.warehouse}/{ident.namespace}/{ident.name}"


class S3TablesMetadataSource:
    """S3 Tables control plane through boto3 (read-only calls only) + pyiceberg FileIO for the metadata JSON."""

    def __init__(self, spec: CatalogSpec, client: Any = None) -> None:
        from s3tables_kit.jobs.kernel import sdk

        self.spec = spec
        # the lake planner's threads share this client: one pooled connection each
        self.client = client or sdk.client("s3tables", spec.region, spec.endpoint, max_pool_connections=64)
        self._io: Any = None
        self._s3: Any = None
        self._io_lock = threading.Lock()

    def list_tables(self, namespace: str) -> list[str]:
        names: list[str] = []
        kwargs: dict[str, Any] = {"tableBucketARN": self.spec.warehouse, "namespace": namespace}
        while True:
            try:
                page = self.client.list_tables(**kwargs)
            except Exception as e:
                raise PlanError(
                    f"cannot list namespace {namespace} of table bucket {self.spec.warehouse}: {e}"
                ) from None
            names.extend(t["name"] for t in page.get("tables", []))
            if not page.get("continuationToken"):
                return sorted(names)
            kwargs["continuationToken"] = page["continuationToken"]

    def metadata_location(self, ident: Ident) -> str | None:
        try:
            r = self.client.get_table_metadata_location(
                tableBucketARN=self.spec.warehouse, namespace=ident.namespace, name=ident.name
            )
        except self.client.exceptions.NotFoundException:
            return None
        except Exception as e:
            raise PlanError(f"cannot read table {ident} of table bucket {self.spec.warehouse}: {e}") from None
        from s3tables_kit.jobs.kernel.tables import metadata_location

        return metadata_location(r)

    @property
    def io_props(self) -> dict[str, str]:
        from s3tables_kit.jobs.kernel.sdk import fileio_properties

        props = {"s3.region": self.spec.region or ""}
        if self.spec.endpoint:
            props["s3.endpoint"] = self.spec.endpoint
        return fileio_properties(props)  # pyarrow's S3 retries: the kit's attempt count

    def file_io(self) -> Any:
        """One FileIO, one S3 filesystem, for the metadata of every table of the bucket
        (`s3tables_kit.jobs.iceberg_io`)."""
        with self._io_lock:
            if self._io is None:
                from s3tables_kit.jobs.iceberg_io import shared_s3_file_io

                self._io = shared_s3_file_io(self.io_props)
            return self._io

    def _s3_client(self) -> Any:
        with self._io_lock:
            if self._s3 is None:
                from s3tables_kit.jobs.kernel import sdk

                extra: dict[str, Any] = {"s3": {"addressing_style": "path"}} if self.spec.endpoint else {}
                self._s3 = sdk.client("s3", self.spec.region, self.spec.endpoint, max_pool_connections=64, **extra)
            return self._s3

    def read_bytes(self, location: str) -> bytes:
        """A whole metadata file. ``s3://``: one GetObject with the kit's retry policy (pyarrow's filesystem makes a
        HeadObject before every read, and its C++ client cost more CPU per file than botocore's request: at 10,000
        tables both doubled the plan's requests and CPU); other schemes through the FileIO."""
        if location.startswith("s3://"):
            from s3tables_kit.jobs.kernel.sdk import split_s3_uri

            bucket, key = split_s3_uri(location)
            return bytes(self._s3_client().get_object(Bucket=bucket, Key=key)["Body"].read())
        with self.file_io().new_input(location).open() as f:
            return bytes(f.read())

    def read_json(self, location: str) -> dict[str, Any]:
        try:
            raw = self.read_bytes(location)
        except Exception as e:
            raise PlanError(f"cannot read the metadata file {location}: {type(e).__name__}: {e}") from None
        return _decode(raw, location)

    def source_table_arn(self, ident: Ident) -> str | None:
        try:
            r = self.client.get_table(tableBucketARN=self.spec.warehouse, namespace=ident.namespace, name=ident.name)
        except Exception:
            return None
        info = (r.get("managedTableInformation") or {}).get("replicationInformation") or {}
        arn = info.get("sourceTableARN")
        return str(arn) if arn else None

    def table_location(self, ident: Ident) -> str | None:
        return None  # S3 Tables allocates a fresh location per table


class SparkMetadataSource:
    """Fallback for catalogs without a JVM-free reader: read-only Spark queries (SHOW TABLES, metadata tables)."""

    def __init__(self, spark: SparkSession, catalog: str) -> None:
        self.spark = spark
        self.catalog = catalog

    def list_tables(self, namespace: str) -> list[str]:
        rows = self.spark.sql(f"SHOW TABLES IN `{self.catalog}`.`{namespace}`").collect()
        return sorted(r["tableName"] for r in rows)

    def metadata_location(self, ident: Ident) -> str | None:
        ref = f"`{self.catalog}`.`{ident.namespace}`.`{ident.name}`"
        if not self.spark.catalog.tableExists(f"{self.catalog}.{ident.namespace}.{ident.name}"):
            return None
        row = self.spark.sql(f"SELECT file FROM {ref}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1").first()
        return str(row["file"]) if row else None

    def read_json(self, location: str) -> dict[str, Any]:
        text = self.spark.read.text(location, wholetext=True).first()
        assert text is not None
        return _decode(str(text[0]).encode(), location)

    def source_table_arn(self, ident: Ident) -> str | None:
        return None

    def table_location(self, ident: Ident) -> str | None:
        return None


def metadata_source(spec: CatalogSpec, spark: SparkSession | None = None) -> MetadataSource:
    if spec.mode == "hadoop":
        return HadoopMetadataSource(spec.warehouse)
    if spec.is_aws:
        return S3TablesMetadataSource(spec)
    if spark is None:
        raise ValueError(f"catalog {spec.name} ({spec.mode}) needs Spark to read metadata")
    return SparkMetadataSource(spark, spec.name)
