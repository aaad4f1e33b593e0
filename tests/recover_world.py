"""The local warehouses the recovery Spark tests share: a replica warehouse the kit only reads, a target warehouse it
writes, each a Hadoop catalog of the module's own name on the one session SparkSession; a request between them and a
run of it; a digest to prove that a warehouse is byte-identical before and after a test; and the reads the tests
compare tables with."""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.localreplica import file_uri
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.job import Outcome, RecoveryRequest, run
from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource
from s3tables_kit.jobs.spark import add_catalogs


@dataclass
class Warehouses:
    root: Path
    replica_catalog: str
    target_catalog: str

    @property
    def replica_wh(self) -> Path:
        return self.root / "replica"

    @property
    def target_wh(self) -> Path:
        return self.root / "target"

    @property
    def replica(self) -> CatalogSpec:
        return CatalogSpec(self.replica_catalog, "hadoop", file_uri(self.replica_wh))

    @property
    def target(self) -> CatalogSpec:
        return CatalogSpec(self.target_catalog, "hadoop", file_uri(self.target_wh))

    def register(self, spark: Any, writers: dict[str, Path]) -> None:
        """Create the warehouses and register the replica, target and writer catalogs (name -> warehouse)."""
        conf: dict[str, str] = {}
        for name, path in {
            self.replica_catalog: self.replica_wh,
            self.target_catalog: self.target_wh,
            **writers,
        }.items():
            path.mkdir(parents=True, exist_ok=True)
            conf.update(catalog_conf(CatalogSpec(name, "hadoop", file_uri(path))))
        add_catalogs(spark, conf)

    def writer(self, spark: Any, catalog: str, warehouse: Path) -> Any:
        """Register the catalogs with `catalog` writing the tests' tables into `warehouse`, create its `sales`
        namespace, and return the session's `sql` to write them with."""
        self.register(spark, {catalog: warehouse})
        spark.sql(f"CREATE NAMESPACE {catalog}.sales")
        return spark.sql

    def request(self, tables: Iterable[str], **kw: Any) -> RecoveryRequest:
        """Recover `tables` (NS.NAME) from the replica into the target warehouse (either replaced by a `replica` or
        `target` keyword), reporting into a directory of its own unless `report_dir` is given."""
        kw.setdefault("replica", self.replica)
        kw.setdefault("target", self.target)
        kw.setdefault("report_dir", self.root / "reports" / f"r{time.monotonic_ns()}")
        return RecoveryRequest(tables=[Ident.parse(t) for t in tables], **kw)


def recover(spark: Any, req: RecoveryRequest) -> tuple[Outcome, str, str]:
    """Run the recovery job on the session SparkSession: its outcome, and what it printed to out and err."""
    out, err = io.StringIO(), io.StringIO()
    outcome = run(req, lambda conf: spark, out=out, err=err)
    return outcome, out.getvalue(), err.getvalue()


def sym_diff(spark: Any, a: str, b: str) -> tuple[int, int]:
    """Rows of table a missing from b, and of b missing from a (duplicates counted)."""
    x = spark.sql(f"SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})").first()[0]
    y = spark.sql(f"SELECT count(*) FROM (SELECT * FROM {b} EXCEPT ALL SELECT * FROM {a})").first()[0]
    return int(x), int(y)


def table_metadata(warehouse: str, name: str) -> dict[str, Any]:
    """The current metadata JSON of table NS.NAME in a Hadoop warehouse."""
    src = HadoopMetadataSource(warehouse)
    loc = src.metadata_location(Ident.parse(name))
    assert loc, f"{name}: no table in {warehouse}"
    return src.read_json(loc)


def digest(root: Path, *, with_crc: bool = True) -> dict[str, str]:
    """sha256 of every file below root (Hadoop's .crc sidecars left out when with_crc is False)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and (with_crc or not p.name.endswith(".crc"))
    }
