"""Replica-side freshness check: each replica account watches its own replicas, whatever the source account says.

    handler(event, context)   # the monitor's Lambda package with KIT_MONITOR_MODE=replica-freshness
    (s3tables_kit.jobs.ops.monitor)

The source-side monitor (`s3tables_kit.jobs.ops.monitor`) lives in the source account, where an attacker who freezes
replication (a Deny boundary on the replication role, a disabled source key, a Deny table policy on chosen tables) can
also mute it. This check runs in the replica's own account (deployed by the replica's stack,
`infra/constructs/freshness.py`) and reads, per run, one paged ListTables of each replica bucket of that account and of
each source bucket replicating into it: every table's `modifiedAt`, a time S3 Tables sets (never the writer's snapshot
`timestamp-ms`, which a writer chooses and could date in the future).

A table of a replica is **stale** when

- its source table (same namespace and name, in a source the account may list) changed more than the lag budget ago
  and after the replica's last change: the replica has not followed a change it should have;
- or, where the account cannot list the source (another account that grants it nothing), the replica has not changed
  for longer than the budget: an idle source and a frozen replication look the same from here.

So an idle source is told apart wherever the source can be listed: a table its source has not changed is never
stale, however old. It publishes, in namespace `METRIC_NAMESPACE` with dimensions Kit and Destination:

| metric | meaning |
|---|---|
| `ReplicaStaleTables`          | stale tables of the replica (the alarm: > 0 in two runs) |
| `ReplicaLastCommitAgeSeconds` | seconds since the newest change of any table of the replica (0: no table yet) |

A replica bucket it cannot list publishes nothing (its alarm treats missing data as breaching) and fails the run
after the others are published, so the function's AWS/Lambda `Errors` alarm fires too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from s3tables_kit.jobs.kernel.clients import Clients, resolve_endpoint
from s3tables_kit.jobs.kernel.sdk import BucketRef, describe_error
from s3tables_kit.jobs.kernel.tables import list_tables
from s3tables_kit.jobs.ops import running
from s3tables_kit.topology import paths
from s3tables_kit.topology.contract import (
    DECLARED_FILE,
    ENV_CONCURRENCY,
    ENV_DESTINATIONS,
    ENV_KIT,
    ENV_MAX_LAG,
    ENV_NAMESPACE,
    ENV_REPLICA_SOURCES,
    METRIC_NAMESPACE,
    REPLICA_COMMIT_AGE,
    REPLICA_STALE_TABLES,
)


class FreshnessRunFailed(RuntimeError):
    """Some replica could not be read: the run fails (after publishing the others) so that AWS/Lambda `Errors` of
    the function counts it."""


@dataclass(frozen=True)
class FreshnessSettings:
    kit: str
    replica_bucket_arns: tuple[str, ...]
    max_lag: timedelta
    concurrency: int = 8
    namespace: str = METRIC_NAMESPACE
    region: str | None = None  # where the metrics go (default: the first replica's Region)
    sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # replica ARN -> source bucket ARNs

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FreshnessSettings:
        sources = json.loads(env.get(ENV_REPLICA_SOURCES) or "{}")
        return cls(
            kit=env[ENV_KIT],
            replica_bucket_arns=tuple(a for a in env.get(ENV_DESTINATIONS, "").split(",") if a),
            max_lag=timedelta(seconds=float(env[ENV_MAX_LAG])),
            concurrency=int(env.get(ENV_CONCURRENCY, "8")),
            namespace=env.get(ENV_NAMESPACE) or METRIC_NAMESPACE,
            region=env.get("AWS_REGION"),  # the function's own
            sources={k: tuple(v) for k, v in sources.items()},
        )


@dataclass
class ReplicaFreshness:
    """One replica bucket as read this run: each table's last change, its source table's where the sources could be
    listed (`source_changed`; None: compared with the budget, `source_note` says why), and what failed."""

    bucket_arn: str
    changed: dict[str, datetime] = field(default_factory=dict)  # table -> the replica table's modifiedAt
    source_changed: dict[str, datetime] | None = None  # table -> its source table's modifiedAt
    source_note: str | None = None
    unread: str | None = None  # why the replica bucket could not be listed

    def newest(self) -> datetime | None:
        return max(self.changed.values(), default=None)

    def age_seconds(self, now: datetime) -> float | None:
        """Seconds since the replica's newest change; 0 without tables; None when it could not be read."""
        if self.unread is not None:
            return None
        newest = self.newest()
        return 0.0 if newest is None else max(0.0, (now - newest).total_seconds())

    def stale(self, now: datetime, max_lag: timedelta) -> list[str]:
        """The stale tables, by name (module docstring): against the source's last change where it was read, else
        against the budget."""
        out = []
        for table, at in self.changed.items():
            if self.source_changed is None:
                late = now - at > max_lag
            else:
                src = self.source_changed.get(table)  # None: no such source table (dropped): nothing to follow
                late = src is not None and src > at and now - src > max_lag
            if late:
                out.append(table)
        return sorted(out)

    def to_json(self, now: datetime, max_lag: timedelta) -> dict[str, Any]:
        newest = self.newest()
        compared = "source" if self.source_changed is not None else f"budget ({self.source_note})"
        return {
            "tables": len(self.changed),
            "newest_change": newest.isoformat() if newest else None,
            "age_seconds": self.age_seconds(now),
            "compared_with": compared,
            "stale": self.stale(now, max_lag),
            "unread": self.unread,
        }


def metric_data(
    replicas: Sequence[ReplicaFreshness], *, kit: str, now: datetime, max_lag: timedelta
) -> list[dict[str, Any]]:
    """Each readable replica's two data points (an unreadable one publishes none: see the module docstring)."""
    out: list[dict[str, Any]] = []
    for rep in sorted(replicas, key=lambda r: r.bucket_arn):
        age = rep.age_seconds(now)
        if age is None:
            continue
        dims = [{"Name": "Kit", "Value": kit}, {"Name": "Destination", "Value": rep.bucket_arn}]
        out.append(_datum(REPLICA_COMMIT_AGE, age, "Seconds", dims, now))
        out.append(_datum(REPLICA_STALE_TABLES, len(rep.stale(now, max_lag)), "Count", dims, now))
    return out


def _datum(name: str, value: float, unit: str, dims: list[dict[str, str]], ts: datetime) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dims, "Value": float(value), "Unit": unit, "Timestamp": ts}


def _changes(clients: Clients, bucket_arn: str) -> dict[str, datetime]:
    """{namespace.name: modifiedAt} of every table of a bucket (one paged ListTables)."""
    return {t.qualified: t.modified_at for t in list_tables(clients, bucket_arn) if t.modified_at is not None}


def read_replica(
    clients: Clients, bucket_arn: str, sources: Sequence[str], listed: dict[str, dict[str, datetime] | str]
) -> ReplicaFreshness:
    """One replica bucket and its sources' tables (`listed`: what this run already listed of a source, or why not)."""
    out = ReplicaFreshness(bucket_arn)
    try:
        out.changed = _changes(clients, bucket_arn)
    except Exception as exc:  # the bucket unreadable: every table unknown, a finding
        out.unread = describe_error(exc)
        return out
    merged: dict[str, datetime] = {}
    for src in sources:
        if src not in listed:
            try:
                listed[src] = _changes(clients, src)
            except Exception as exc:  # another account that grants nothing: compare with the budget
                listed[src] = f"{BucketRef(src).name}: {describe_error(exc)}"
        got = listed[src]
        if isinstance(got, str):
            out.source_note = got
            return out
        merged |= got
    if sources:
        out.source_changed = merged
    else:
        out.source_note = "no source declared"
    return out


@dataclass
class FreshnessResult:
    replicas: list[ReplicaFreshness]
    data: list[dict[str, Any]]
    now: datetime
    max_lag: timedelta
    requests: int = 0

    def breached(self) -> list[str]:
        """The replicas whose alarm this run counts towards: a stale table, or unreadable."""
        return [r.bucket_arn for r in self.replicas if r.unread is not None or r.stale(self.now, self.max_lag)]

    def unread(self) -> dict[str, str]:
        return {r.bucket_arn: r.unread for r in self.replicas if r.unread is not None}

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
    listed: dict[str, dict[str, datetime] | str] = {}
    replicas = [
        read_replica(clients, arn, settings.sources.get(arn, ()), listed) for arn in settings.replica_bucket_arns
    ]
    data = metric_data(replicas, kit=settings.kit, now=at, max_lag=settings.max_lag)
    result = FreshnessResult(replicas, data, at, settings.max_lag)
    if publish is not None:
        region = settings.region or BucketRef(settings.replica_bucket_arns[0]).region
        result.requests = publish(clients.client("cloudwatch", region), settings.namespace, data)
    return result


def handler(event: Any, context: Any, publish: Publish) -> dict[str, Any]:
    """Lambda entry (through `s3tables_kit.jobs.ops.monitor.handler`, which hands over its `publish`): the replicas
    named by the environment, the metrics in the function's own Region; raises after publishing when a replica was
    unreadable."""
    settings = FreshnessSettings.from_env(os.environ)
    clients = Clients(endpoint_url=resolve_endpoint(None), max_pool_connections=max(10, settings.concurrency * 2))
    result = run_freshness(clients, settings, publish=publish)
    out = result.to_json()
    print(out)  # one log line per run in the function's log group
    region = os.environ.get("AWS_REGION") or settings.region or BucketRef(settings.replica_bucket_arns[0]).region
    cloudwatch = clients.client("cloudwatch", region)
    running.check_running(
        clients,
        region,
        running.recorded(paths.ROOT / DECLARED_FILE),
        kit=settings.kit,
        publish=lambda d: publish(cloudwatch, settings.namespace, d),
    )  # this account's kit functions and schedules, as deployed (raises otherwise)
    if result.unread():
        raise FreshnessRunFailed(f"replicas not read: {result.unread()}")
    return out
