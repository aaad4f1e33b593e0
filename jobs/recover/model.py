"""The recovery's own vocabulary: the lineage properties it writes on every recovered table, and its errors.

The tables, snapshots and selectors it shares with failover live in the jobs' kernel (`jobs.kernel.idents`,
`jobs.kernel.snapshots`, `jobs.kernel.selectors`).
"""

from __future__ import annotations

from s3tables_kit.jobs.kernel.idents import JobError

# Lineage properties written on every recovered table (the contract for reruns and audits).
PROP_PREFIX = "kit.recovery."
PROP_SOURCE_TABLE_ARN = PROP_PREFIX + "source-table-arn"
PROP_REPLICA_TABLE = PROP_PREFIX + "replica-table"
PROP_REPLICA_METADATA = PROP_PREFIX + "replica-metadata-location"
PROP_SNAPSHOT_ID = PROP_PREFIX + "replica-snapshot-id"
PROP_SNAPSHOT_TIME = PROP_PREFIX + "replica-snapshot-committed-at"
PROP_SNAPSHOT_TIME_MS = PROP_PREFIX + "replica-snapshot-timestamp-ms"
PROP_RUN_ID = PROP_PREFIX + "run-id"
PROP_VERIFIED = PROP_PREFIX + "verified-at"


class RecoveryError(JobError):
    """A recovery that could not be done (a copy, a commit, a verification failed): the message says which."""
