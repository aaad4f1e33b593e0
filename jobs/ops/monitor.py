"""Replication monitor: the kit's `status` logic as CloudWatch metrics (the Lambda function `cdktf deploy` creates).

    handler(event, context)                   # Lambda entry: s3tables_kit.jobs.ops.monitor.handler, configured by
    environment python -m s3tables_kit.jobs.ops.monitor --outputs outputs.json --endpoint-url http://127.0.0.1:4566
    --dry-run

AWS publishes no replication metrics for S3 Tables (only `GetTableReplicationStatus`), so the monitor runs
`status.collect_status` on every source table and publishes, in namespace `METRIC_NAMESPACE`:

| metric | dimensions | statistic meaning |
|---|---|---|
| `ReplicationLagSeconds` | Kit, Destination / Kit, Destination, Table | worst lag (oldest unreplicated commit) |
| `FailedReplications`    | Kit, Destination / Kit, Destination, Table | tables whose replication status is FAILED |
| `ReplicasBehind`        | Kit, Destination / Kit, Destination, Table | tables not COMPLETED (pending, failed, ...) |
| `DetachedReplicas`      | Kit, Destination / Kit, Destination, Table | tables DETACHED (replica disassociated) |
| `TablesBackfilling`     | Kit, Destination                           | tables still in their first backfill |
| `TablesMonitored`       | Kit, Destination                           | tables with a status for this destination |
| `StatusReadErrors`      | Kit                                        | tables unread, or with a commit dated ahead |
| `MonitorHeartbeat`      | Kit                                        | 1 when every status was read (no alarm) |
| `ReplicationPointAgeSeconds` | Kit, Destination / + Group          | age of the replication point (point.py) |

A table whose commits the run read (a replica behind) and found one dated in the future counts in `StatusReadErrors`
too (its lag is counted from the service's `modifiedAt`, the log line names it in `future_dated_commits`); it does not
fail the run. A run that cannot read some table's status (or the vault) publishes what it read, then raises: the
function's AWS/Lambda `Errors`, which no one but Lambda writes, is what the liveness alarms read
(`infra/constructs/alerts.py`), not the heartbeat, which anyone who may write a log event could forge in this
namespace.

Cardinality is bounded: per destination, the first `max_table_metrics` tables in name order (a stable set, so
the number of metric series stays fixed while tables do not change) get `Table=<namespace.name>` series; every
other table is folded into one `Table=_other` series (max lag, sum of failed and behind). The per-destination
series always cover every table. Configured destinations without any table still get zeros, so their alarms
see data. The replication point's age is published for the whole bucket and for each configured group
(`[assurance] replication_point_groups`, read from the package's `kit_declared.json`) with a table in it.

Drift (`s3tables_kit.jobs.ops.monitor_drift`): every run also compares the source's replication configurations (bucket
level and every table's table level) with the declared one, each replica bucket policy and the source bucket policy with
the reviewed documents, and the two layers of a bounded sample of the replica tables (table policy present, retention
not below the configured one), publishing `ReplicationConfigurationDrift` (Kit), `ReplicaBucketPolicyDrift` (Kit,
Destination), `SourceBucketPolicyDrift` (Kit), `ReplicaLayersMissing` and `RetentionBelowConfigured` (Kit,
Destination): the number of findings, each named in the run's summary. What they are compared with is the package's
`kit_declared.json`.

`TablesBackfilling` counts the tables whose replica is not yet a copy at all: not COMPLETED and no successful
replicated update ever (`lastSuccessfulReplicatedUpdate` absent), DETACHED excluded. After replication is turned on
for a lake that already holds tables (an adoption) it falls to 0 as the backfill completes; a table that completed
once and then lags counts in `ReplicasBehind`, not here. `s3tables-kit status --backfill` shows the bytes and an ETA.

Backup vault (`s3tables_kit.jobs.ops.monitor_vault`, with `[vault]`): `BackupAgeSeconds` (Kit: the stalest table; Kit,
Table) and `OldestBackupPointAgeSeconds` (Kit), from the keys of the vault's committed backup points, and with `[vault]
tables` `TablesWithoutBackupPoint` (Kit): a selected source table without a point is as late as it is old; a vault
that cannot be listed stops the heartbeat and fails the run.

`DetachedReplicas` counts destinations `status` classifies DETACHED (permanent loss of replication). The
function's role reads the source account only, so it sees a detachment once the source reports it (the documented
FAILED message, at the next replication attempt); `status` run with access to the replica buckets sees it earlier.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.clients import Clients, resolve_endpoint
from s3tables_kit.jobs.kernel.commits import FUTURE_DATED
from s3tables_kit.jobs.kernel.options import refuse
from s3tables_kit.jobs.kernel.render import dump_json, parse_duration
from s3tables_kit.jobs.kernel.sdk import BucketRef, call
from s3tables_kit.jobs.ops import running
from s3tables_kit.jobs.ops.monitor_drift import Declared, DriftCheck, check_drift, declared_for, load_declared
from s3tables_kit.jobs.ops.monitor_vault import backup_ages, list_points, selected_tables, vault_metric_data
from s3tables_kit.jobs.ops.point import point_metric_data
from s3tables_kit.jobs.ops.status import (
    COMPLETED,
    DETACHED,
    ERROR,
    FAILED,
    SECOND_PASS_PAUSE,
    UNCONFIGURED,
    DestinationStatus,
    StatusReport,
    collect_status,
)
from s3tables_kit.topology import paths
from s3tables_kit.topology.contract import (  # the names infra/constructs/monitor.py deploys and alarms on
    BACKFILLING,
    BEHIND,
    DECLARED_FILE,
    DETACHED_METRIC,
    ENV_CAP,
    ENV_CONCURRENCY,
    ENV_DESTINATIONS,
    ENV_KIT,
    ENV_MAX_LAG,
    ENV_MODE,
    ENV_NAMESPACE,
    ENV_SOURCES,
    ENV_VAULT_BUCKET,
    ENV_VAULT_REGION,
    ENV_VAULT_TABLES,
    ERRORS,
    FAILED_METRIC,
    HEARTBEAT,
    LAG,
    METRIC_NAMESPACE,
    MODE_FRESHNESS,
    TABLES,
)

if TYPE_CHECKING:  # the Lambda package ships no pydantic: the outputs are read by the command line only
    from s3tables_kit.topology.outputs import KitOutputs, SourceOut

OTHER_TABLES = "_other"
# PutMetricData takes up to 1,000 metrics per request (and 1 MB); a smaller batch keeps a throttled retry cheap.
BATCH = 500


@dataclass(frozen=True)
class MonitorSettings:
    kit: str
    source_bucket_arns: tuple[str, ...]
    destination_bucket_arns: tuple[str, ...] = ()
    max_lag: timedelta | None = None
    max_table_metrics: int = 50
    concurrency: int = 16
    namespace: str = METRIC_NAMESPACE
    second_pass_pause: float = SECOND_PASS_PAUSE  # seconds before tables unread after retries are read again
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # replication point groups (`Group`)
    vault_bucket: str | None = None  # with `[vault]`: the vault bucket whose backup points it lists
    vault_region: str | None = None
    vault_tables: tuple[str, ...] = ()  # `[vault] tables`: the selected tables expected to have a backup point

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MonitorSettings:
        def listed(key: str) -> tuple[str, ...]:
            return tuple(a for a in env.get(key, "").split(",") if a)

        max_lag = env.get(ENV_MAX_LAG)
        return cls(
            kit=env[ENV_KIT],
            source_bucket_arns=listed(ENV_SOURCES),
            destination_bucket_arns=listed(ENV_DESTINATIONS),
            max_lag=timedelta(seconds=float(max_lag)) if max_lag else None,
            max_table_metrics=int(env.get(ENV_CAP, "50")),
            concurrency=int(env.get(ENV_CONCURRENCY, "16")),
            namespace=env.get(ENV_NAMESPACE) or METRIC_NAMESPACE,
            vault_bucket=env.get(ENV_VAULT_BUCKET) or None,
            vault_region=env.get(ENV_VAULT_REGION) or None,
            vault_tables=listed(ENV_VAULT_TABLES),
        )


# ----------------------------------------------------------------------------------------------------
# Report -> metric data (pure)
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Agg:
    lag: float = 0.0
    failed: int = 0
    behind: int = 0
    tables: int = 0
    detached: int = 0
    backfilling: int = 0

    def add(self, row: DestinationStatus) -> None:
        self.tables += 1
        self.lag = max(self.lag, row.lag_seconds or 0.0)
        self.failed += int(row.status == FAILED)
        self.behind += int(row.status != COMPLETED)
        self.detached += int(row.status == DETACHED)
        self.backfilling += int(is_backfilling(row))


def replicated_tables(rows: Iterable[DestinationStatus]) -> dict[str, list[str]]:
    """Destination ARN -> the tables whose replica exists there (a successful replicated update, not DETACHED): the
    replicas whose layers the drift check may read."""
    out: dict[str, list[str]] = {}
    for row in rows:
        exists = row.status == COMPLETED or row.last_replicated_at is not None
        if row.destination_bucket_arn and exists and row.status not in (DETACHED, ERROR, UNCONFIGURED):
            out.setdefault(row.destination_bucket_arn, []).append(row.table)
    return out


def future_dated(rows: Iterable[DestinationStatus]) -> list[str]:
    """The tables whose commits this run read (a replica behind) and found one dated in the future: a writer chose a
    time no reader may trust (`s3tables_kit.jobs.kernel.commits.source_commits`)."""
    return sorted({r.table for r in rows if r.lag_source == FUTURE_DATED})


def is_backfilling(row: DestinationStatus) -> bool:
    """A replica that is not a copy yet: never successfully replicated to, and not detached (module docstring)."""
    return row.status not in (COMPLETED, DETACHED) and row.last_replicated_at is None


def tracked_tables(names: Iterable[str], cap: int) -> set[str]:
    """The tables that get their own series: the first `cap` in name order (stable while tables do not change)."""
    return set(sorted(set(names))[:cap])


def _dims(kit: str, destination: str | None = None, table: str | None = None) -> list[dict[str, str]]:
    out = [{"Name": "Kit", "Value": kit}]
    if destination is not None:
        out.append({"Name": "Destination", "Value": destination})
    if table is not None:
        out.append({"Name": "Table", "Value": table})
    return out


def _datum(name: str, value: float, unit: str, dims: list[dict[str, str]], ts: datetime) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dims, "Value": float(value), "Unit": unit, "Timestamp": ts}


def _agg_data(agg: _Agg, dims: list[dict[str, str]], ts: datetime, with_tables: bool) -> list[dict[str, Any]]:
    out = [
        _datum(LAG, agg.lag, "Seconds", dims, ts),
        _datum(FAILED_METRIC, agg.failed, "Count", dims, ts),
        _datum(BEHIND, agg.behind, "Count", dims, ts),
        _datum(DETACHED_METRIC, agg.detached, "Count", dims, ts),
    ]
    if with_tables:  # the per-destination series
        out.append(_datum(TABLES, agg.tables, "Count", dims, ts))
        out.append(_datum(BACKFILLING, agg.backfilling, "Count", dims, ts))
    return out


def metric_data(
    report: StatusReport,
    *,
    kit: str,
    max_table_metrics: int,
    destinations: Sequence[str] = (),
    groups: Mapping[str, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """Every datum of one run, deterministic order (per destination, then per tracked table, then `_other`)."""
    ts = datetime.fromisoformat(report.generated_at)
    per_dest: dict[str, list[DestinationStatus]] = {d: [] for d in destinations}
    errors = 0
    for row in report.rows:
        if row.status == ERROR:
            errors += 1
        elif row.status != UNCONFIGURED and row.destination_bucket_arn:
            per_dest.setdefault(row.destination_bucket_arn, []).append(row)
    tracked = tracked_tables((r.table for rows in per_dest.values() for r in rows), max_table_metrics)
    data: list[dict[str, Any]] = []
    for dest in sorted(per_dest):
        rows = per_dest[dest]
        total, other = _Agg(), _Agg()
        by_table: dict[str, _Agg] = {}
        for row in rows:
            total.add(row)
            if row.table in tracked:
                by_table.setdefault(row.table, _Agg()).add(row)
            else:
                other.add(row)
        data += _agg_data(total, _dims(kit, dest), ts, with_tables=True)
        for table in sorted(by_table):
            data += _agg_data(by_table[table], _dims(kit, dest, table), ts, with_tables=False)
        if other.tables:
            data += _agg_data(other, _dims(kit, dest, OTHER_TABLES), ts, with_tables=False)
    data += point_metric_data(report.rows, ts, kit=kit, destinations=destinations, groups=groups)  # the point's age
    # a commit dated in the future (its lag already counted from the service's modifiedAt) is a finding that alarms
    errors += len(future_dated(report.rows))
    data.append(_datum(ERRORS, errors, "Count", _dims(kit), ts))
    if errors == 0:
        data.append(_datum(HEARTBEAT, 1, "Count", _dims(kit), ts))
    return data


# ----------------------------------------------------------------------------------------------------
# Publishing
# ----------------------------------------------------------------------------------------------------


def publish(cloudwatch: Any, namespace: str, data: Sequence[dict[str, Any]], batch: int = BATCH) -> int:
    """PutMetricData in batches (throttling retried by `sdk.call`); returns the number of requests."""
    requests = 0
    for i in range(0, len(data), batch):
        call(cloudwatch.put_metric_data, Namespace=namespace, MetricData=list(data[i : i + batch]))
        requests += 1
    return requests


@dataclass
class MonitorResult:
    tables: int
    data: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    second_pass: int = 0  # tables read again after a pause (unreadable after the first pass's retries)
    drift: DriftCheck | None = None  # the drift checks' findings (None: nothing declared to compare with)
    vault: str | None = None  # with a vault: how many backup points it lists, or why it could not be listed
    future_dated: list[str] = field(default_factory=list)  # tables with a commit dated in the future (a finding)

    @property
    def heartbeat(self) -> bool:
        return any(d["MetricName"] == HEARTBEAT for d in self.data)

    def to_json(self) -> dict[str, Any]:
        series = {(d["MetricName"], tuple((x["Name"], x["Value"]) for x in d["Dimensions"])) for d in self.data}
        return (
            {
                "tables": self.tables,
                "counts": self.counts,
                "status_read_errors": self.errors,
                "future_dated_commits": self.future_dated,
                "second_pass_tables": self.second_pass,
                "heartbeat": self.heartbeat,
                "metrics": len(self.data),
                "series": len(series),
                "put_metric_data_requests": self.requests,
            }
            | ({"drift": self.drift.to_json()} if self.drift is not None else {})
            | ({"vault": self.vault} if self.vault is not None else {})
        )


def run_monitor(
    clients: Clients,
    settings: MonitorSettings,
    *,
    region: str,
    now: datetime | None = None,
    dry_run: bool = False,
    declared: Declared | None = None,
) -> MonitorResult:
    report = collect_status(
        clients,
        list(settings.source_bucket_arns),
        now=now or datetime.now(UTC),
        max_lag=settings.max_lag,
        concurrency=settings.concurrency,
        show_progress=False,
        list_destinations=False,  # the function's role reads the source account only (module docstring)
        second_pass_pause=settings.second_pass_pause,
    )
    data = metric_data(
        report,
        kit=settings.kit,
        max_table_metrics=settings.max_table_metrics,
        destinations=settings.destination_bucket_arns,
        groups=settings.groups,
    )
    ts = datetime.fromisoformat(report.generated_at)
    drift = None
    if declared is not None:
        drift = check_drift(
            clients, declared, concurrency=settings.concurrency, replicas=replicated_tables(report.rows), ts=ts
        )
        data += drift.data(settings.kit, ts)
    result = MonitorResult(
        report.tables,
        data,
        counts=report.counts(),
        errors=len(report.errors),
        second_pass=report.second_pass,
        future_dated=future_dated(report.rows),
    )
    result.drift = drift
    if settings.vault_bucket is not None:
        _vault_data(clients, settings, result, report.created, now=now or ts, ts=ts)
    if not dry_run:
        result.requests = publish(clients.client("cloudwatch", region), settings.namespace, result.data)
    return result


def _vault_data(
    clients: Clients,
    settings: MonitorSettings,
    result: MonitorResult,
    created: Mapping[str, datetime | None],
    *,
    now: datetime,
    ts: datetime,
) -> None:
    """The vault's backup ages into `result` (`created`: each source table's creation time, for the selected ones
    without a point); a vault that cannot be listed is a failed run (no heartbeat)."""
    from botocore.exceptions import BotoCoreError, ClientError

    assert settings.vault_bucket is not None
    try:
        points = list_points(clients.s3(settings.vault_region or "us-east-1"), settings.vault_bucket)
    except (BotoCoreError, ClientError) as exc:
        result.vault = f"unreadable: {exc}"
        result.errors += 1
        result.data = [d for d in result.data if d["MetricName"] != HEARTBEAT]
        return
    result.vault = f"{len(points)} backup points"
    selected = selected_tables(created, settings.vault_tables) if settings.vault_tables else None
    ages = backup_ages(points, now, selected)
    if ages.unbacked:
        result.vault += f"; selected tables without a backup point: {', '.join(sorted(ages.unbacked))}"
    result.data += vault_metric_data(ages, kit=settings.kit, max_table_metrics=settings.max_table_metrics, ts=ts)


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point. Configuration comes from the environment the construct sets; the function's own
    Region (AWS_REGION) receives the metrics. With `ENV_MODE` = `MODE_FRESHNESS` the same package is a replica
    account's freshness check (`s3tables_kit.jobs.ops.freshness`)."""
    if os.environ.get(ENV_MODE) == MODE_FRESHNESS:
        from s3tables_kit.jobs.ops import freshness

        return freshness.handler(event, context, publish)
    settings = MonitorSettings.from_env(os.environ)
    region = os.environ.get("AWS_REGION") or BucketRef(settings.source_bucket_arns[0]).region
    clients = Clients(endpoint_url=resolve_endpoint(None), max_pool_connections=max(10, settings.concurrency * 2))
    declared = load_declared(paths.ROOT / DECLARED_FILE)
    if declared is not None:
        settings = replace(settings, groups=declared.groups)
    result = run_monitor(clients, settings, region=region, declared=declared)
    summary = result.to_json()
    print(summary)  # one log line per run in the function's log group
    cloudwatch = clients.client("cloudwatch", region)
    deployed = running.recorded(paths.ROOT / DECLARED_FILE)
    running.check_running(
        clients,
        region,
        deployed,
        kit=settings.kit,
        publish=lambda d: publish(cloudwatch, settings.namespace, d),
        recorded_peers=running.peers(os.environ),
    )  # the other kit functions and schedules of this account, and its replicas' freshness checks (raises otherwise)
    fail_loud(result)
    return summary


class MonitorRunFailed(RuntimeError):
    """Some table's status (or the vault) could not be read: a blinded table is a failed run, never a quiet one."""


def fail_loud(result: MonitorResult) -> None:
    """After publishing what it could: a run that could not read some table (or the vault) raises, so that the
    function's AWS/Lambda `Errors` counts it (the `-failing` alarm)."""
    if result.errors:
        raise MonitorRunFailed(f"{result.errors} table(s) or the vault could not be read: {result.to_json()}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m s3tables_kit.jobs.ops.monitor", description=__doc__.splitlines()[0])
    p.add_argument("--outputs", default="outputs.json", help="outputs contract written after `cdktf deploy`")
    p.add_argument("--endpoint-url", help="local endpoint (moto); default $AWS_ENDPOINT_URL")
    p.add_argument("--max-lag", type=parse_duration, default=None)
    p.add_argument("--max-table-metrics", type=int, default=50)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--dry-run", action="store_true", help="compute the metrics, publish nothing")
    p.add_argument(
        "--config",
        help="the kit configuration: also compare each replica bucket policy (drift) and expect a backup point of "
        "each table [vault] tables selects",
    )
    args = p.parse_args(argv)
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    try:
        outputs = load_outputs(args.outputs)
    except OutputsError as err:
        return refuse(err)
    declared = declared_for(outputs, args.config)
    selection = _vault_selection(args.config)
    clients = Clients(endpoint_url=resolve_endpoint(args.endpoint_url))
    results: dict[str, Any] = {}
    for src in outputs.sources:  # one monitor per source, as deployed (an estate's source stacks each have one)
        settings = settings_for(outputs, src, max_lag=args.max_lag, cap=args.max_table_metrics, conc=args.concurrency)
        settings = replace(settings, vault_tables=selection)
        result = run_monitor(
            clients, settings, region=src.region, dry_run=args.dry_run, declared=declared[src.table_bucket_arn]
        )
        results[src.table_bucket_name] = result.to_json() | {"kit": settings.kit}
    if not outputs.several_sources:
        results = {name: {k: v for k, v in r.items() if k != "kit"} for name, r in results.items()}
    dump_json(next(iter(results.values())) if len(results) == 1 else {"sources": results})
    return 0


def _vault_selection(config: str | None) -> tuple[str, ...]:
    """`[vault] tables` of the configuration (the outputs do not carry the selection; none without `--config`)."""
    if config is None:
        return ()
    from s3tables_kit.topology.config import load_config

    vault = load_config(config).vault
    return tuple(vault.tables) if vault is not None else ()


def settings_for(
    outputs: KitOutputs, src: SourceOut, *, max_lag: timedelta | None, cap: int, conc: int
) -> MonitorSettings:
    """The settings of one source's monitor, as its Lambda function is deployed: its bucket, its destinations, the
    `Kit` dimension of its alarms, the vault it lists (with one)."""
    dests = [r.table_bucket_arn for r in outputs.destination_replicas if r.table_bucket_arn in src.destinations]
    return MonitorSettings(
        kit=src.monitor_kit,  # `<kit>-<id>` for an estate's source: two sources into one vault never share a series
        source_bucket_arns=(src.table_bucket_arn,),
        destination_bucket_arns=tuple(dests or (r.table_bucket_arn for r in outputs.destination_replicas)),
        max_lag=max_lag,
        max_table_metrics=cap,
        concurrency=conc,
        groups={k: tuple(v) for k, v in src.replication_point_groups.items()},
        vault_bucket=outputs.vault.bucket_name if outputs.vault else None,
        vault_region=outputs.vault.region if outputs.vault else None,
    )


if __name__ == "__main__":
    sys.exit(main())
