"""Replica-side freshness check: each replica account watches its own replicas, whatever the source account says.

    handler(event, context)   # the monitor's Lambda package with KIT_MONITOR_MODE=replica-freshness
    (s3tables_kit.jobs.ops.monitor)

The source-side monitor (`s3tables_kit.jobs.ops.monitor`) lives in the source account, where an attacker who freezes
replication (a Deny boundary on the replication role, a disabled source key) can also mute it. This check runs in the
replica's own account (deployed by the replica's stack, `infra/constructs/freshness.py`) and reads only the replica
buckets of that account: for each table, the commit time of its newest snapshot (one loadTable of the Iceberg REST
endpoint, or the S3 Tables API where it does not answer: `s3tables_kit.jobs.ops.status_metadata.replica_window`, as
`status` reads it). Replication copies the source's snapshots with their commit times, so that time is how fresh the
replica is.

It publishes, in namespace `METRIC_NAMESPACE` with dimensions Kit and Destination:

| metric | meaning |
|---|---|
| `ReplicaLastCommitAgeSeconds` | age of the newest commit any table of the replica holds (0: no table yet) |
| `ReplicaStaleTables`          | tables whose newest commit is older than the lag budget |

The alarm is on the first: the whole replica received nothing within the lag budget (replication frozen, or a source
lake idle that long). It is not published when no table could be read, so its alarm (missing data breaches) also
fires when the check cannot read or does not run. A single idle table is not a finding here (the source-side lag,
which compares with the source's commits, says whether it lacks anything); `ReplicaStaleTables` counts them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from s3tables_kit.jobs.kernel.clients import Clients, resolve_endpoint
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.sdk import BucketRef, describe_error
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables
from s3tables_kit.jobs.ops.status_metadata import replica_window
from s3tables_kit.topology.contract import (
    ENV_CONCURRENCY,
    ENV_DESTINATIONS,
    ENV_KIT,
    ENV_MAX_LAG,
    ENV_NAMESPACE,
    METRIC_NAMESPACE,
    REPLICA_COMMIT_AGE,
    REPLICA_STALE_TABLES,
)


@dataclass(frozen=True)
class FreshnessSettings:
    kit: str
    replica_bucket_arns: tuple[str, ...]
    max_lag: timedelta
    concurrency: int = 8
    namespace: str = METRIC_NAMESPACE
    region: str | None = None  # where the metrics go (default: the first replica's Region)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FreshnessSettings:
        return cls(
            kit=env[ENV_KIT],
            replica_bucket_arns=tuple(a for a in env.get(ENV_DESTINATIONS, "").split(",") if a),
            max_lag=timedelta(seconds=float(env[ENV_MAX_LAG])),
            concurrency=int(env.get(ENV_CONCURRENCY, "8")),
            namespace=env.get(ENV_NAMESPACE) or METRIC_NAMESPACE,
            region=env.get("AWS_REGION"),  # the function's own
        )


@dataclass
class ReplicaFreshness:
    """One replica bucket as read this run: each table's newest commit (None: no snapshot yet) and what failed."""

    bucket_arn: str
    commits: dict[str, datetime | None] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)  # table -> why its metadata could not be read

    def newest(self) -> datetime | None:
        return max((t for t in self.commits.values() if t is not None), default=None)

    def age_seconds(self, now: datetime) -> float | None:
        """Age of the replica's newest commit; 0 for a replica without tables (nothing can be stale); None when
        tables exist but none could be read, or none has a snapshot yet (unknown: the alarm's missing data)."""
        if not self.commits and not self.unread:
            return 0.0
        newest = self.newest()
        return None if newest is None else max(0.0, (now - newest).total_seconds())

    def stale(self, now: datetime, max_lag: timedelta) -> list[str]:
        """The tables whose newest commit is older than the lag budget, by name."""
        return sorted(t for t, at in self.commits.items() if at is not None and now - at > max_lag)

    def to_json(self, now: datetime, max_lag: timedelta) -> dict[str, Any]:
        newest = self.newest()
        return {
            "tables": len(self.commits) + len(self.unread),
            "newest_commit": newest.isoformat() if newest else None,
            "age_seconds": self.age_seconds(now),
            "stale": self.stale(now, max_lag),
            "unread": dict(sorted(self.unread.items())),
        }


def metric_data(
    replicas: Sequence[ReplicaFreshness], *, kit: str, now: datetime, max_lag: timedelta
) -> list[dict[str, Any]]:
    """Each replica's two data points (the age only when known: see the module docstring)."""
    out: list[dict[str, Any]] = []
    for rep in sorted(replicas, key=lambda r: r.bucket_arn):
        dims = [{"Name": "Kit", "Value": kit}, {"Name": "Destination", "Value": rep.bucket_arn}]
        age = rep.age_seconds(now)
        if age is not None:
            out.append(_datum(REPLICA_COMMIT_AGE, age, "Seconds", dims, now))
        out.append(_datum(REPLICA_STALE_TABLES, len(rep.stale(now, max_lag)), "Count", dims, now))
    return out


def _datum(name: str, value: float, unit: str, dims: list[dict[str, str]], ts: datetime) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dims, "Value": float(value), "Unit": unit, "Timestamp": ts}


def read_replica(clients: Clients, bucket_arn: str, now: datetime, concurrency: int) -> ReplicaFreshness:
    """Every table of one replica bucket and its newest commit (ListTables, then one read per table)."""
    out = ReplicaFreshness(bucket_arn)
    try:
        tables = list_tables(clients, bucket_arn)
    except Exception as exc:  # the bucket unreadable: every table unknown
        out.unread["*"] = describe_error(exc)
        return out

    def one(t: TableRef) -> tuple[str, datetime | None, str | None]:
        w = replica_window(clients, bucket_arn, t, now, None, created=t.created_at, rest=t.created_at is not None)
        if w.end is not None:
            return t.qualified, datetime.fromisoformat(w.end), None
        if w.note and w.note.startswith("window unknown"):
            return t.qualified, None, w.note
        return t.qualified, None, None  # no snapshot yet: nothing replicated to this table to be stale

    for name, at, error in run_concurrently(one, tables, concurrency):
        if error is not None:
            out.unread[name] = error
        else:
            out.commits[name] = at
    return out


@dataclass
class FreshnessResult:
    replicas: list[ReplicaFreshness]
    data: list[dict[str, Any]]
    now: datetime
    max_lag: timedelta
    requests: int = 0

    def breached(self) -> list[str]:
        """The replicas whose alarm this run raises: newest commit older than the budget, or unknown."""
        out = []
        for r in self.replicas:
            age = r.age_seconds(self.now)
            if age is None or age > self.max_lag.total_seconds():
                out.append(r.bucket_arn)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "replicas": {r.bucket_arn: r.to_json(self.now, self.max_lag) for r in self.replicas},
            "breached": self.breached(),
            "metrics": len(self.data),
            "put_metric_data_requests": self.requests,
        }


# PutMetricData of a batch of data (`s3tables_kit.jobs.ops.monitor.publish`, whose handler calls this module's): the
# number of requests.
Publish = Callable[[Any, str, Sequence[dict[str, Any]]], int]


def run_freshness(
    clients: Clients, settings: FreshnessSettings, *, now: datetime | None = None, publish: Publish | None = None
) -> FreshnessResult:
    """One run over the configured replicas; `publish`: how to publish the data (None: a dry run)."""
    at = now or datetime.now(UTC)
    replicas = [read_replica(clients, arn, at, settings.concurrency) for arn in settings.replica_bucket_arns]
    data = metric_data(replicas, kit=settings.kit, now=at, max_lag=settings.max_lag)
    result = FreshnessResult(replicas, data, at, settings.max_lag)
    if publish is not None:
        region = settings.region or BucketRef(settings.replica_bucket_arns[0]).region
        result.requests = publish(clients.client("cloudwatch", region), settings.namespace, data)
    return result


def handler(event: Any, context: Any, publish: Publish) -> dict[str, Any]:
    """Lambda entry (through `s3tables_kit.jobs.ops.monitor.handler`, which hands over its `publish`): the replicas
    named by the environment, the metrics in the function's own Region."""
    settings = FreshnessSettings.from_env(os.environ)
    clients = Clients(endpoint_url=resolve_endpoint(None), max_pool_connections=max(10, settings.concurrency * 2))
    out = run_freshness(clients, settings, publish=publish).to_json()
    print(out)  # one log line per run in the function's log group
    return out
