"""The lineage properties a kit job records on every table it writes (the contract for reruns, audits and
failback), under the job's prefix `kit.<job>.`. What every job records has one name here: the source table, the
replica snapshot and the run; a job's own properties are `key(name)`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lineage:
    prefix: str
    source_table_arn: str
    snapshot_id: str  # the replica snapshot the job took
    run_id: str

    @classmethod
    def of(cls, job: str) -> Lineage:
        """`job`: "recovery", "failover"."""
        prefix = f"kit.{job}."
        return cls(prefix, prefix + "source-table-arn", prefix + "replica-snapshot-id", prefix + "run-id")

    def key(self, name: str) -> str:
        return self.prefix + name
