"""The replica half of `s3tables_kit.jobs.ops.audit`: every replica bucket's tables against the source tables in
replication scope (coverage: ``replica-missing``, ``replica-detached``), their snapshot retention against the source's
(``retention-below-source``) and against the replica's configured ``snapshot_retention``
(``retention-below-configured``: the replication service may give a new replica the source's shorter window), their
table policy, the second layer of every replica (``table-policy-missing`` / ``table-policy-changed``: a replica
`harden` has not reached yet, or whose policy was deleted), and, on a failover topology, the promoted tables
(``promoted-table-still-replica``), and each replica's snapshot times (``snapshot-time-untrusted``: a snapshot dated in
the future or a snapshot log going backwards). Each source table is read once (its retention), each replica table
three times (its table policy, its retention and its metadata); large buckets are split over worker processes
(`s3tables_kit.jobs.kernel.concurrency`).

A replica's source is known without a call when it is unambiguous (`pair_by_name`): S3 Tables gives a replica the
namespace and name of its source (docs/aws-facts.md#replication), so a table that `ListTables` reports managed by
the service, in a destination bucket that exactly one source table of that name replicates into, is that table's
replica. Any other table (not managed: detached or foreign; or a name two sources feed into one bucket) is asked
with `GetTable`, which names its source. Whether replication to a replica is healthy is `status`'s question, not
this one's.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.commits import NO_CACHE, summary_at
from s3tables_kit.jobs.kernel.concurrency import (
    Progress,
    WorkerPool,
    chunks,
    processes_for,
    run_concurrently,
    stream_concurrently,
    worker_pool,
)
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, MetadataSummary
from s3tables_kit.jobs.kernel.sdk import BucketRef, bucket_of_table_arn, call, describe_error, error_code
from s3tables_kit.jobs.kernel.signed_ops import signed_call
from s3tables_kit.jobs.kernel.snapshot_times import summary_time_findings
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables, metadata_location, table_call
from s3tables_kit.jobs.ops.audit_scope import AuditReport, Drift, Scope, TablePolicy, TablePolicyCheck, s3tables_of
from s3tables_kit.jobs.ops.cli import ambiguous_tables, table_label
from s3tables_kit.jobs.ops.drift import below_configured
from s3tables_kit.jobs.ops.status_metadata import loaded_summary
from s3tables_kit.topology.config import Replica

SNAPSHOT = "icebergSnapshotManagement"

# ----------------------------------------------------------------------------------------------------
# Replicas: coverage and retention
# ----------------------------------------------------------------------------------------------------


def table_get(clients: Clients, table: TableRef | tuple[str, str, str], operation: str) -> dict[str, Any]:
    """One GET operation of S3 Tables on one table (`table`: a `TableRef` or (bucket ARN, namespace, name)), sent
    lean (`s3tables_kit.jobs.kernel.signed_ops`: a quarter of botocore's CPU per request), with the throttling
    backoff; errors as botocore's."""
    bucket_arn, namespace, name = (
        (table.bucket_arn, table.namespace, table.name) if isinstance(table, TableRef) else table
    )
    return call(signed_call, clients, bucket_arn, operation, tableBucketARN=bucket_arn, namespace=namespace, name=name)


def _retention(clients: Clients, bucket_arn: str, namespace: str, name: str) -> dict[str, Any]:
    conf = table_get(clients, (bucket_arn, namespace, name), "GetTableMaintenanceConfiguration")["configuration"]
    return dict(conf.get(SNAPSHOT) or {})


def _shorter(replica: dict[str, Any], source: dict[str, Any]) -> str | None:
    """Why the replica keeps snapshots for less than the source, or None. Disabled expiry keeps everything."""
    if replica.get("status") == "disabled":
        return None
    if source.get("status") == "disabled":
        return "snapshot expiry is enabled on the replica but disabled (keep everything) on the source"
    r = (replica.get("settings") or {}).get(SNAPSHOT) or {}
    s = (source.get("settings") or {}).get(SNAPSHOT) or {}
    problems = [
        f"{k} {r.get(k)} < source {s.get(k)}"
        for k in ("maxSnapshotAgeHours", "minSnapshotsToKeep")
        if r.get(k) is not None and s.get(k) is not None and r[k] < s[k]
    ]
    return "; ".join(problems) or None


def configured_retention(replica: Replica) -> dict[str, int]:
    """A replica's configured snapshot retention as the maintenance configuration's settings."""
    return {
        "maxSnapshotAgeHours": replica.snapshot_retention.max_snapshot_age_hours,
        "minSnapshotsToKeep": replica.snapshot_retention.min_snapshots_to_keep,
    }


def _source_retention(clients: Clients, table: TableRef) -> tuple[str, dict[str, Any] | str]:
    """(source table ARN, its retention or the error text): read once per source table."""
    try:
        return table.arn, _retention(clients, table.bucket_arn, table.namespace, table.name)
    except (ClientError, BotoCoreError) as exc:
        return table.arn, describe_error(exc)


def pair_by_name(replica_tables: Iterable[TableRef], feeding: Mapping[str, Sequence[TableRef]]) -> dict[str, str]:
    """{replica table ARN: source table ARN} for every table of one destination bucket whose source is known by
    its name: managed by the service, and exactly one source table of that `namespace.name` replicates into the
    bucket (`feeding`: {namespace.name: the source tables of that name replicating into it}). The others are left
    to `GetTable` (`_replica_check`)."""
    out: dict[str, str] = {}
    for t in replica_tables:
        sources = feeding.get(t.qualified, ())
        if t.managed_by_service and len(sources) == 1:
            out[t.arn] = sources[0].arn
    return out


def table_policy_drift(
    clients: Clients, table: TableRef, table_arn: str, want: TablePolicy | TablePolicyCheck
) -> Drift | None:
    """`table-policy-missing` / `table-policy-changed` when the live table policy is not `want(table_arn)` (compared
    by meaning: `TablePolicyCheck`, made once for many tables), else None."""
    check = want if isinstance(want, TablePolicyCheck) else TablePolicyCheck(want)
    resource = f"{table.qualified} ({table_arn})"
    try:
        live = table_get(clients, table, "GetTablePolicy")["resourcePolicy"]
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            return Drift("table-policy-missing", resource, "the table has no table policy")
        raise
    if not check.matches(live, table_arn):
        return Drift("table-policy-changed", resource, "the table policy differs from the configuration")
    return None


def _replica_check(
    clients: Clients,
    table: TableRef,
    sources: dict[str, dict[str, Any] | str],
    paired: Mapping[str, str] | None = None,
    want_policy: TablePolicy | TablePolicyCheck | None = None,
    configured: Mapping[str, int] | None = None,
    cache: MetadataCache = NO_CACHE,
    rest: bool = True,
) -> tuple[TableRef, str | None, list[Drift]]:
    """One replica: its source and its retention, compared with the source's read once beforehand (`sources`; a
    source outside it, e.g. in another bucket, is read here). The source is known without a call when `pair_by_name`
    knows it (`paired`: {replica table ARN: source table ARN}) and ListTables reports the table managed by the
    service. Otherwise (a detached or foreign table, a name two sources feed) `GetTable` names it. `cache`, `rest`:
    how its metadata is read (`time_drifts`)."""
    drifts: list[Drift] = []
    try:
        source = (paired or {}).get(table.arn) if table.managed_by_service else None
        table_arn = table.arn
        if source is None:
            got = table_call(clients, table.bucket_arn, table.namespace, table.name, "get_table")
            table_arn = got["tableARN"]
            source = ((got.get("managedTableInformation") or {}).get("replicationInformation") or {}).get(
                "sourceTableARN"
            )
        if not source:
            return table, None, drifts
        drifts.extend(time_drifts(clients, table, f"{table.qualified} ({table_arn})", cache, rest))
        if want_policy is not None:
            drifts.extend(d for d in [table_policy_drift(clients, table, table_arn, want_policy)] if d)
        rep = _retention(clients, table.bucket_arn, table.namespace, table.name)
        short = below_configured(rep, configured) if configured else None
        if short:
            drifts.append(Drift("retention-below-configured", f"{table.qualified} ({table_arn})", short))
        src = sources.get(source)
        if src is None:
            src_table = call(s3tables_of(clients, bucket_of_table_arn(source)).get_table, tableArn=source)
            src = _retention(clients, bucket_of_table_arn(source), src_table["namespace"][0], src_table["name"])
        if isinstance(src, str):
            drifts.append(Drift("unverifiable", f"{table.qualified} ({table_arn})", f"source retention: {src}"))
            return table, source, drifts
        why = _shorter(rep, src)
        if why:
            drifts.append(Drift("retention-below-source", f"{table.qualified} ({table_arn})", why))
        return table, source, drifts
    except (ClientError, BotoCoreError) as exc:
        drifts.append(Drift("unverifiable", f"{table.qualified} in {table.bucket_arn}", describe_error(exc)))
        return table, None, drifts


def time_drifts(
    clients: Clients, table: TableRef, label: str, cache: MetadataCache = NO_CACHE, rest: bool = True
) -> list[Drift]:
    """``snapshot-time-untrusted``: the replica's snapshot times in the future or its snapshot log going backwards
    (`s3tables_kit.jobs.kernel.snapshot_times`), from the summary of its current metadata file, read as `status` reads
    a replica's: with `rest` (the run's `cache` held nothing to reuse when it started) one loadTable answers the
    location and the metadata together (`loaded_summary`); else, or where the endpoint does not answer, its metadata
    location, then the file unless `cache` holds its summary (a metadata file never changes)."""
    summary: MetadataSummary | None = loaded_summary(clients, table.bucket_arn, table, cache) if rest else None
    if summary is None:
        location = metadata_location(table_get(clients, table, "GetTableMetadataLocation"))
        if not location:
            return []
        try:
            summary = summary_at(clients, location, table.bucket_arn, cache)
        except ValueError as exc:
            return [Drift("unverifiable", label, f"metadata {location}: {exc}")]
    now_ms = int(time.time() * 1000)
    return [Drift("snapshot-time-untrusted", label, f.detail) for f in summary_time_findings(summary, now_ms)]


def check_detached(
    results: Sequence[tuple[TableRef, str | None, list[Drift]]], expected: Mapping[str, TableRef], report: AuditReport
) -> set[tuple[str, str]]:
    """`replica-detached` for every table of a replica bucket that should be a replica (a replicated source table
    of that name, `expected`: {namespace.name: source table}) but whose GetTable names no source (no longer managed
    by the service). Returns the (source table ARN, destination bucket ARN) pairs so reported, which are then not
    also reported missing."""
    out: set[tuple[str, str]] = set()
    for table, source, drifts in results:
        src = expected.get(table.qualified)
        if source or src is None or any(d.kind == "unverifiable" for d in drifts):
            continue
        report.add(
            "replica-detached",
            f"{table.qualified} ({table.arn}) in {BucketRef(table.bucket_arn).name}",
            f"should be a replica of {src.arn} but is no longer managed by S3 Tables replication (disassociated: "
            "replication to it has stopped for good and it is writable; a new destination bucket and a backfill "
            "are needed unless this was a deliberate failover)",
        )
        out.add((src.arn, table.bucket_arn))
    return out


def _sources_chunk(tables: list[TableRef], concurrency: int, clients: Clients) -> list[tuple[str, Any]]:
    """One worker-process job of the source pass: `_source_retention` of each source table."""
    return run_concurrently(lambda t: _source_retention(clients, t), tables, concurrency)


def _replicas_chunk(
    tables: list[TableRef],
    sources: dict[str, dict[str, Any] | str],
    paired: dict[str, str],
    want_policy: TablePolicy | None,
    configured: dict[str, int],
    cache: MetadataCache,
    rest: bool,
    concurrency: int,
    clients: Clients,
) -> list[tuple[TableRef, str | None, list[Drift]]]:
    """One worker-process job of the replica pass: `_replica_check` of each replica table."""
    check = TablePolicyCheck(want_policy) if want_policy is not None else None
    return run_concurrently(
        lambda t: _replica_check(clients, t, sources, paired, check, configured, cache, rest), tables, concurrency
    )


CHUNK = 500  # tables per worker-process job


def check_replicas(
    clients: Clients,
    planned: Sequence[tuple[Scope, list[TableRef]]],
    report: AuditReport,
    concurrency: int,
    page_size: int | None,
    show_progress: bool,
    processes: int | None = 1,
    pool: WorkerPool | None = None,
    cache: MetadataCache | None = None,
) -> None:
    """Every replica bucket of every scope (each bucket listed and read once, a fan-in vault too) against the source
    tables in each scope's replication (`planned`: each scope with its scoped source tables). `pool`: the caller's
    worker processes (else a pool of `processes` is started here when the work is large). `cache`: summaries of
    metadata files by location, `status`'s (`s3tables_kit.jobs.kernel.metadata_cache`; None: every file is read)."""
    meta = cache or NO_CACHE
    rest = meta.empty  # nothing to reuse: one loadTable a replica (`time_drifts`)
    scoped = [t for _, tables in planned for t in tables]
    destinations: dict[str, tuple[Replica, TablePolicy | None]] = {}
    feeding: dict[str, dict[str, list[TableRef]]] = {}  # replica bucket -> namespace.name -> its source tables
    for scope, tables in planned:
        for r in scope.destinations:
            want = scope.destination_table_policy(r) if scope.destination_table_policy else None
            destinations.setdefault(r.bucket_arn, (r, want))
            into = feeding.setdefault(r.bucket_arn, {})  # a destination of no table in scope too
            for t in tables:
                into.setdefault(t.qualified, []).append(t)
    # Each source table's retention is read once, not once per destination.
    progress = Progress("audit sources", len(scoped), enabled=show_progress and len(scoped) > 50)
    sources: dict[str, dict[str, Any] | str] = {}
    # one pool for both passes, sized by the work: each source table and its replica in every destination
    procs = pool.processes if pool else processes_for(processes, replica_work(planned))
    threads = max(1, concurrency // procs)
    covered: set[tuple[str, str]] = set()  # (source table ARN, destination bucket ARN)
    with contextlib.nullcontext(pool) if pool else worker_pool(clients, procs) as pool:
        source_results: Iterable[tuple[str, Any]]
        if pool is not None:
            jobs = [functools.partial(_sources_chunk, part, threads) for part in chunks(scoped, CHUNK)]
            source_results = (x for out in pool.map(jobs, progress) for x in out)
        else:
            source_results = stream_concurrently(lambda t: _source_retention(clients, t), scoped, concurrency, progress)
        sources.update(source_results)
        report.count("source tables", len(scoped))
        # Every replica bucket is listed first, then all their tables are read in one pass of the pool (no bucket
        # waits for the slowest chunk of the one before).
        listed: list[tuple[Replica, TablePolicy | None, list[TableRef]]] = []
        for r, want_policy in destinations.values():
            try:
                replica_tables = list_tables(clients, r.bucket_arn, page_size)
            except ClientError as exc:
                report.add("unverifiable", r.bucket_arn, describe_error(exc))
                continue
            report.count("replica tables", len(replica_tables))
            listed.append((r, want_policy, replica_tables))
        total = sum(len(tables) for _, _, tables in listed)
        progress = Progress("audit replicas", total, enabled=show_progress and total > 50)
        expected_in: dict[str, dict[str, TableRef]] = {}  # replica bucket -> what it should hold (detached check)
        results: Iterable[tuple[TableRef, str | None, list[Drift]]] = ()
        replica_jobs = []
        for r, want_policy, replica_tables in listed:
            configured = configured_retention(r)
            fed = feeding[r.bucket_arn]
            expected_in[r.bucket_arn] = {name: srcs[-1] for name, srcs in fed.items()}
            paired = pair_by_name(replica_tables, fed)
            if pool is None:
                check = functools.partial(
                    _replica_check,
                    clients,
                    sources=sources,
                    paired=paired,
                    want_policy=TablePolicyCheck(want_policy) if want_policy is not None else None,
                    configured=configured,
                    cache=meta,
                    rest=rest,
                )
                results = itertools.chain(results, stream_concurrently(check, replica_tables, concurrency, progress))
                continue
            for part in chunks(replica_tables, CHUNK):
                # what the chunk's tables need of the source pass: the paired source, or the same-name source
                part_paired = {t.arn: paired[t.arn] for t in part if t.arn in paired}
                same_name = {src.arn for t in part for src in fed.get(t.qualified, ())}
                wanted = set(part_paired.values()) | same_name
                part_sources = {arn: sources[arn] for arn in wanted if arn in sources}
                replica_jobs.append(
                    functools.partial(
                        _replicas_chunk, part, part_sources, part_paired, want_policy, configured, meta, rest, threads
                    )
                )
        if pool is not None:
            results = (x for out in pool.map(replica_jobs, progress) for x in out)
        for table, source, drifts in results:
            report.drifts.extend(drifts)
            if source:
                covered.add((source, table.bucket_arn))
            covered |= check_detached([(table, source, drifts)], expected_in[table.bucket_arn], report)
    ambiguous = ambiguous_tables((t.bucket_arn, t.qualified) for t in scoped)
    for scope, tables in planned:
        for st in tables:
            for r in scope.destinations:
                if (st.arn, r.bucket_arn) not in covered:
                    report.add(
                        "replica-missing",
                        f"{table_label(st.bucket_arn, st.qualified, ambiguous)} -> {r.bucket_arn}",
                        f"no replica of {st.arn} in {r.bucket}",
                    )
    report.drifts.sort(key=lambda d: (d.kind, d.resource))


def replica_work(planned: Sequence[tuple[Scope, Collection[object]]]) -> int:
    """The per-table reads of the replica pass: each source table and its replica in every destination."""
    return sum(len(tables) * (1 + len(scope.destinations)) for scope, tables in planned)


def _promoted_check(clients: Clients, table: TableRef, want: TablePolicyCheck) -> list[Drift]:
    if table.managed_by_service:
        return [
            Drift(
                "promoted-table-still-replica",
                f"{table.qualified} ({table.arn})",
                "still managed by S3 Tables replication (a read-only replica of the failed source): not promoted",
            )
        ]
    try:
        return [d for d in [table_policy_drift(clients, table, table.arn, want)] if d]
    except (ClientError, BotoCoreError) as exc:
        return [Drift("unverifiable", f"{table.qualified} ({table.arn})", describe_error(exc))]


def check_promoted_tables(
    clients: Clients, scope: Scope, source_tables: Mapping[str, TableRef], report: AuditReport, concurrency: int
) -> None:
    """Failover only: every table of the promoted bucket (the source) is promoted (writable, not a replica) and
    carries the promoted table policy."""
    want = scope.promoted_table_policy
    if want is None:
        return
    report.count("promoted tables", len(source_tables))
    tables = sorted(source_tables.values(), key=lambda t: t.qualified)
    check = TablePolicyCheck(want)
    for drifts in run_concurrently(lambda t: _promoted_check(clients, t, check), tables, concurrency):
        report.drifts.extend(drifts)
