"""The recovery's own vocabulary: the lineage properties it writes on every recovered table, and its errors.

The tables, snapshots and selectors it shares with failover live in the jobs' kernel (`s3tables_kit.jobs.kernel.idents`,
`s3tables_kit.jobs.kernel.snapshots`, `s3tables_kit.jobs.kernel.selectors`).
"""

from __future__ import annotations

from s3tables_kit.jobs.kernel.idents import JobError
from s3tables_kit.jobs.kernel.lineage import Lineage

# Lineage properties written on every recovered table (the contract for reruns and audits): the shared ones
# (`LINEAGE.source_table_arn`, `.snapshot_id`, `.run_id`) and recovery's own.
LINEAGE = Lineage.of("recovery")
PROP_REPLICA_TABLE = LINEAGE.key("replica-table")
PROP_REPLICA_METADATA = LINEAGE.key("replica-metadata-location")
PROP_SNAPSHOT_TIME = LINEAGE.key("replica-snapshot-committed-at")
PROP_SNAPSHOT_TIME_MS = LINEAGE.key("replica-snapshot-timestamp-ms")
PROP_VERIFIED = LINEAGE.key("verified-at")


class RecoveryError(JobError):
    """A recovery that could not be done (a copy, a commit, a verification failed): the message says which."""
