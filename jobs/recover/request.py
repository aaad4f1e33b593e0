"""What one recovery run is asked to do (`s3tables-kit recover` builds it from its flags): catalogs, tables,
the recovery point, the copy mode, verification, leases and batching. A module of its own so that the planners
(`job`, `lakeplan`) and the batched copy (`batch`) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.kernel.filecopy import DEFAULT_PART_SIZE, StoreConfig
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.leases import DEFAULT_TTL_S
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.recover.model import RecoveryError
from s3tables_kit.jobs.recover.modes import CopyMode

if TYPE_CHECKING:  # pragma: no cover
    from s3tables_kit.jobs.recover.fromvault import VaultRestore


@dataclass
class RecoveryRequest:
    replica: CatalogSpec
    target: CatalogSpec
    tables: list[Ident] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    selector: Selector = field(default_factory=Selector)
    target_namespace: str | None = None
    suffix: str = ""
    dry_run: bool = False
    replace: bool = False
    parallelism: int = 2
    report_dir: Path | None = None
    now_ms: int | None = None
    copy_mode: CopyMode = CopyMode.AUTO
    verify: str = (
        "auto"  # auto: checksums + metadata counts for file copies, row fingerprint for CTAS; full: + fingerprint
    )
    part_size: int = DEFAULT_PART_SIZE
    wait: bool = False  # another live attempt on a target: wait for it (True) or refuse at plan time (False)
    lease_dir: str | None = None  # local path or s3://bucket/prefix; default: next to a local target's table
    lease_ttl_s: float = DEFAULT_TTL_S
    batch: bool = True  # plain file copies of many tables in shared Spark jobs (s3tables_kit.jobs.recover.batch)
    vault: VaultRestore | None = None  # a recovery from a backup point of the vault (`replica` is its catalog)

    def __post_init__(self) -> None:
        if self.replica.name == self.target.name:
            raise RecoveryError("the replica and the target must be different Spark catalogs")
        if not self.tables and not self.namespaces:
            raise RecoveryError("nothing to recover: pass --table ns.name (repeatable) or --namespace ns")
        if self.parallelism < 1:
            raise RecoveryError("--parallelism must be >= 1")
        if self.verify not in ("auto", "full"):
            raise RecoveryError("--verify must be auto or full")
        if self.part_size < 5 * 1024 * 1024:
            raise RecoveryError("the multipart part size must be at least 5 MiB (S3's minimum)")
        if self.vault is not None and (self.copy_mode is not CopyMode.FILES or self.batch or self.verify != "auto"):
            raise RecoveryError(
                "a recovery from the vault is a file copy of one table (copy mode files, no batch, --verify auto)"
            )

    def spark_conf(self) -> dict[str, str]:
        return {**catalog_conf(self.replica), **catalog_conf(self.target)}

    def store_config(self) -> StoreConfig:
        # a local target copying from the vault's bucket reaches it through the vault's endpoint
        endpoint = self.target.endpoint or self.replica.endpoint
        return StoreConfig(region=self.target.region or self.replica.region, endpoint=endpoint,
                           part_size=self.part_size)  # fmt: skip
