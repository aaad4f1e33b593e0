"""The local warehouses the recovery Spark tests share: a replica warehouse the kit only reads, a target warehouse it
writes, each a Hadoop catalog of the module's own name on the one session SparkSession, and a digest to prove that a
warehouse is byte-identical before and after a test."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.recover.catalogs import CatalogSpec, catalog_conf
from jobs.recover.localreplica import file_uri
from jobs.spark import add_catalogs


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


def digest(root: Path, *, with_crc: bool = True) -> dict[str, str]:
    """sha256 of every file below root (Hadoop's .crc sidecars left out when with_crc is False)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and (with_crc or not p.name.endswith(".crc"))
    }
