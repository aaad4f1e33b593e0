"""The runtime contract between what `infra/` deploys and the `jobs/` code that runs there (besides `outputs.json`,
`s3tables_kit.topology.outputs`): names both sides must agree on, defined once here so neither imports the other.

- the replication monitor Lambda: its environment variables (set by `infra/constructs/monitor.py`, read by
  `jobs/ops/monitor.py`) and the metrics it publishes (alarmed on by the monitor construct), the backup vault's
  included;
- the recovery rehearsal job run: its entry file under `jobs/`, where it writes reports, the metric its alarm
  watches, and the jars it runs with (those of `jars/pom.xml`, derived from that file's path).

Standard library only: the monitor's Lambda package ships this module (`infra/packaging.py`), and the Lambda runtime
has no pydantic.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from s3tables_kit.topology import paths

METRIC_NAMESPACE = "S3TablesReplicaKit"

# ---------------------------------------------------------------- replication monitor (jobs/ops/monitor.py) ----

MONITOR_MODULE = "jobs/ops/monitor.py"  # the Lambda handler's file; the handler is its function `handler`
LAG, FAILED_METRIC, BEHIND = "ReplicationLagSeconds", "FailedReplications", "ReplicasBehind"
TABLES, ERRORS, HEARTBEAT = "TablesMonitored", "StatusReadErrors", "MonitorHeartbeat"
DETACHED_METRIC = "DetachedReplicas"  # replicas whose table was disassociated: replication stopped for good
BACKFILLING = "TablesBackfilling"  # tables never yet replicated to a destination (not COMPLETED, no update since)
POINT_AGE = "ReplicationPointAgeSeconds"  # age of the replication point of a replica bucket (jobs/ops/point.py)
AS_OF_REPLICATION_POINT = "replication-point"  # `--as-of replication-point` of `recover` and `failover`
# Drift of what cannot be prevented (jobs/ops/drift.py): findings in the source's replication configurations (either
# level, every table), and in each replica bucket policy against the reviewed document (Kit, Destination).
CONFIG_DRIFT = "ReplicationConfigurationDrift"
POLICY_DRIFT = "ReplicaBucketPolicyDrift"
SOURCE_POLICY_DRIFT = "SourceBucketPolicyDrift"  # the source bucket policy against the reviewed document (Kit)
# The layers of each replica table, checked on a bounded sample per run (jobs/ops/monitor_drift.py; Kit, Destination):
LAYERS_MISSING = "ReplicaLayersMissing"  # replica tables without their table policy (one of their two layers)
RETENTION_BELOW = "RetentionBelowConfigured"  # replica tables keeping snapshots for less than configured
LAYER_SAMPLE = 50  # replica tables per destination per run whose layers are read (two requests each)
# What the monitor compares with, written into its package at synth (infra/constructs/monitor.py) as JSON:
# {DECLARED_REPLICATION: the source's declared replication (s3tables_kit.topology.outputs.declared_replication),
#  DECLARED_POLICIES: {replica bucket ARN: its reviewed bucket policy document},
#  DECLARED_SOURCE_POLICY: the source bucket's reviewed policy document,
#  DECLARED_RETENTION: {replica bucket ARN: its configured icebergSnapshotManagement settings},
#  DECLARED_INTERVAL: seconds between runs (which window of the replica tables a run samples),
#  DECLARED_GROUPS: {group name: table patterns}, only when replication point groups are configured}.
# (A file, not the environment: Lambda caps environment variables at 4 KB.)
DECLARED_FILE = "kit_declared.json"
DECLARED_REPLICATION, DECLARED_POLICIES = "replication", "replica_bucket_policies"
DECLARED_SOURCE_POLICY, DECLARED_RETENTION = "source_bucket_policy", "replica_retention"
DECLARED_INTERVAL = "interval_seconds"
DECLARED_GROUPS = "replication_point_groups"
# DECLARED_DEPLOYED: what the function compares at every run with what runs in its account (the other kit functions'
# code and configuration, the schedules' targets and inputs: `s3tables_kit.topology.deployed.DeployedOut`)
DECLARED_DEPLOYED = "deployed"
DEPLOYED_CHANGED = "DeployedChanged"  # Kit: differences from the deploy's record this run (the run then fails)

# Lambda environment (set by infra/constructs/monitor.py; the names are part of the deployed contract)
ENV_KIT = "KIT_NAME"
ENV_SOURCES = "KIT_SOURCE_BUCKET_ARNS"
ENV_DESTINATIONS = "KIT_DESTINATION_BUCKET_ARNS"
ENV_MAX_LAG = "KIT_MAX_LAG_SECONDS"
ENV_CAP = "KIT_MAX_TABLE_METRICS"
ENV_CONCURRENCY = "KIT_CONCURRENCY"
ENV_NAMESPACE = "KIT_METRIC_NAMESPACE"
# With `[vault]`: the vault bucket and its Region, whose backup points the monitor lists (jobs/ops/monitor_vault.py).
ENV_VAULT_BUCKET = "KIT_VAULT_BUCKET"
ENV_VAULT_REGION = "KIT_VAULT_REGION"
ENV_VAULT_TABLES = "KIT_VAULT_TABLES"  # `[vault] tables`, comma-separated: the tables expected to have a backup point
# Kit: the stalest table's; Kit, Table: seconds since the table's newest backup point (a selected table without one:
# since its creation, jobs/ops/monitor_vault.py)
BACKUP_AGE = "BackupAgeSeconds"
OLDEST_BACKUP_POINT_AGE = "OldestBackupPointAgeSeconds"  # Kit: age of the vault's oldest backup point
TABLES_WITHOUT_BACKUP_POINT = "TablesWithoutBackupPoint"  # Kit: selected tables the vault holds no point of
# Kit: point objects a vault restore or rehearsal refused (malformed, not MACed by the point key, dated after S3 wrote
# them); published by the rehearsal, skipped by every restore.
VAULT_POINTS_REFUSED = "VaultPointsRefused"
ENV_MODE = "KIT_MONITOR_MODE"  # unset: the source-side monitor; MODE_FRESHNESS: the replica-side freshness check

# ------------------------------------------------------------ replica-side freshness check (jobs/ops/freshness.py) ----

MODE_FRESHNESS = "replica-freshness"
# Seconds since the newest change (`modifiedAt`, a time the service sets) of any table of a replica bucket (Kit,
# Destination): shown, not alarmed on (one flowing table would hide a frozen one).
REPLICA_COMMIT_AGE = "ReplicaLastCommitAgeSeconds"
# Tables of that replica not following their source for longer than the lag budget (or, where the replica's account
# cannot read the source, unchanged for that long): what the replica's own account alarms on
# (infra/constructs/freshness.py), whatever the source account's monitor says.
REPLICA_STALE_TABLES = "ReplicaStaleTables"
# JSON {function ARN: {"code": SHA-256, "configuration": digest}}: the source monitor's record of the freshness checks
# of its replicas' accounts, which it reads across accounts at every run (jobs/ops/running.py). In the environment,
# not the package: the check's own package records the monitor's code hash, so the other way round would be a cycle;
# the check compares the monitor's configuration without this variable, which only weakens the monitor's check of
# another account's function (docs/decisions/0039).
ENV_PEERS = "KIT_PEERS_DEPLOYED"
ENV_REPLICA_SOURCES = "KIT_REPLICA_SOURCES"  # JSON {replica bucket ARN: [source bucket ARNs replicating into it]}

# ------------------------------------------------------------- scheduled hardener (jobs/ops/harden_scheduled.py) ----

# The plan file at the package's root (written at synth by infra/constructs/replica_hardener.py), its key, and the
# placeholder where a table's ARN goes in a table policy (not an ARN character sequence: it cannot occur otherwise).
HARDEN_PLAN_FILE = "kit_harden.json"
HARDEN_REPLICAS = "replicas"
HARDEN_TABLE_ARN = "${table_arn}"

# ---------------------------------------------------------------- recovery rehearsal (jobs/rehearse.py) ----

REHEARSAL_ENTRY = "rehearse_entry.py"  # under jobs/; uploaded next to the jobs zip by `make rehearse-upload`
BACKUP_ENTRY = "backup_entry.py"  # under jobs/: the scheduled vault backup's, uploaded with the rehearsal's
# Where the scheduled job runs (rehearsal, vault backup) read their entries, jobs zip and jars in the scripts bucket:
# a prefix of their own, written at deploy time only (the pipeline SCP), since whoever writes it runs code as their
# roles; `make recover-emr` uploads its on-demand run's under `scripts/`.
SCHEDULED_ARTIFACTS_PREFIX = "scheduled/"
# The vault's storage classes (`[vault] storage_class`, the backup job's --storage-class): read without a restore
# request, so a restore from the vault is a plain file copy; all take Object Lock. GLACIER and DEEP_ARCHIVE need a
# restore of hours per object; ONEZONE_IA keeps one zone. Here, not in topology/vault.py: the backup job on EMR
# Serverless imports it, and the Spark runtime has no pydantic.
VAULT_STORAGE_CLASSES = ("STANDARD", "INTELLIGENT_TIERING", "STANDARD_IA", "GLACIER_IR")
REHEARSAL_REPORT_PREFIX = "reports/rehearsals"
REHEARSAL_SUCCEEDED, REHEARSAL_RTO, REHEARSAL_TABLES = (
    "RehearsalSucceeded",
    "RehearsedRecoverySeconds",
    "RehearsalTables",
)
REHEARSAL_STALE = "RehearsalStaleTables"  # rehearsed tables whose recovered point is older than the lag budget


def pinned_jar_names(pom: Path = paths.PACKAGE / "jars" / "pom.xml") -> list[str]:
    """`<artifactId>-<version>.jar` of every dependency of jars/pom.xml (what `make setup` puts in .jars/ and what
    `--upload` copies to the scripts bucket), sorted; known at synth without the jars themselves."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(pom).getroot()
    props = {el.tag.split("}", 1)[-1]: (el.text or "").strip() for el in root.findall("m:properties/*", ns)}
    names = []
    for dep in root.findall("m:dependencies/m:dependency", ns):
        artifact = dep.findtext("m:artifactId", default="", namespaces=ns).strip()
        version = dep.findtext("m:version", default="", namespaces=ns).strip()
        for key, value in props.items():
            version = version.replace("${" + key + "}", value)
        names.append(f"{artifact}-{version}.jar")
    return sorted(names)
