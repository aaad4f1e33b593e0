"""The lineage properties a kit job records on every table it writes (the contract for reruns, audits and
failback), under the job's prefix `kit.<job>.`. What every job records has one name here: the source table, the
replica snapshot and the run; a job's own properties are `key(name)`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lineage:
    job: str  # "recovery", "failover"

    @property
    def prefix(self) -> str:
        return f"kit.{self.job}."

    def key(self, name: str) -> str:
        return self.prefix + name

    @property
    def source_table_arn(self) -> str:
        return self.key("source-table-arn")

    @property
    def snapshot_id(self) -> str:
        """The replica snapshot the job took."""
        return self.key("replica-snapshot-id")

    @property
    def run_id(self) -> str:
        return self.key("run-id")
