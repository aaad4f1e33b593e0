"""Audit live protections against the configuration and the outputs; name every drift.

    python -m jobs.ops.audit --config examples/seed.toml --outputs outputs.json [--json]

Checks (each drift has a kind, the resource and a detail):

* ``replication-*``: the replication configuration on the source bucket (bucket mode) or on each listed table
  (tables mode) exists, uses the kit's replication role and exactly the configured destinations;
* ``replica-missing``: every replicated source table has a replica in every destination (a deleted replica);
* ``replica-detached``: a table in a replica bucket that the configuration replicates but that is no longer managed
  by S3 Tables replication (disassociated with ``DisassociateTableReplication``: permanent;
  docs/assurance.md#detached-replicas);
* ``bucket-policy-*``: each replica bucket policy contains every statement of
  ``policies.documents.replica_bucket_policy(cfg, replica)``, matched by ``Sid`` and compared in canonical
  form;
* ``scp-*``: the SCP exists and is attached to every configured target (``ListTargetsForPolicy``);
* ``retention-below-source``: on every replica table, snapshot retention >= the source table's (both live; each
  source table is read once: its retention and its replication status, which names its replica tables, so a replica
  costs one read, its retention);
* ``encryption-mismatch`` / ``storage-class-mismatch``: bucket settings as configured;
* ``unverifiable``: a check could not be made (the error is the detail) -- never silently passed.

On a failover topology (``[failover] promoted_bucket`` set: issue 17, `topology.failover`) the same checks run on
the promoted topology (`Scope`): the promoted bucket is the source (its bucket-level replication uses the failover
replication role and the ``replicate_to`` destinations; its bucket policy is the promoted one, opened to the
writers), the destinations are checked like replicas with the failover documents, and also:

* ``table-policy-missing`` / ``table-policy-changed``: every replica table of a destination carries the failover
  destination table policy (what `harden` puts on the failover outputs), every promoted table the promoted table
  policy (what the failover tool puts);
* ``promoted-table-still-replica``: a table of the promoted bucket still managed by S3 Tables replication (a replica
  of the failed source, read-only: not promoted);
* retained replicas of the failed source keep their own bucket policy and settings (their tables are not compared
  with the failed source, which is gone).

On an estate (`[[sources]]`, issue 24) every source is checked with its own replication (`cfg.view`: mode, role,
destinations) and every replica bucket once, against the estate's documents (a fan-in vault's bucket policy grants
and exempts every source feeding it); a table missing from a replica is named `bucket/namespace.name` where two
sources hold that name; ``outputs-mismatch`` when the outputs' source stacks are not the configured sources; the
report names every bucket it audited.

Exit 0 without drift, 1 with drift.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from jobs.kernel.clients import Clients
from jobs.kernel.concurrency import Progress, chunks, processes_for, run_concurrently, stream_concurrently, worker_pool
from jobs.kernel.sdk import BucketRef, bucket_of_table_arn, call, describe_error, error_code, paginate
from jobs.kernel.tables import TableRef, list_tables
from jobs.ops.cli import (
    add_common_args,
    ambiguous_tables,
    canonical,
    canonical_policy,
    clients_from_args,
    emit,
    mentions_bucket,
    refuse,
    render_table,
    table_label,
)
from topology.config import KitConfig, Replica, Source
from topology.outputs import KitOutputs

BucketPolicyBuilder = Callable[[KitConfig, Replica], dict[str, Any]]
TablePolicy = Callable[[str], dict[str, Any]]  # the wanted table policy of one table, by table ARN
SNAPSHOT = "icebergSnapshotManagement"


def default_bucket_policy_builder() -> BucketPolicyBuilder:
    """`policies.documents.replica_bucket_policy(cfg, replica)`, imported lazily."""
    from policies.documents import replica_bucket_policy  # type: ignore[import-not-found,unused-ignore]

    return replica_bucket_policy  # type: ignore[no-any-return,unused-ignore]


@dataclass(frozen=True)
class Scope:
    """What the audit compares the live state with: the configured topology (`normal_scope`) or, once
    ``[failover] promoted_bucket`` is set, the failover topology whose source is the promoted bucket
    (`failover_scope`)."""

    source: Source | Replica
    mode: str  # "bucket" or "tables"
    tables: tuple[str, ...]  # replicated tables in "tables" mode
    replication_role_arn: str
    destinations: tuple[Replica, ...]  # the source's replicas: coverage, retention (and table policies)
    bucket_policies: tuple[tuple[Replica, dict[str, Any]], ...]  # every bucket whose policy is checked, its document
    replica_sites: tuple[Replica, ...]  # buckets whose encryption and storage class are checked besides the source
    # Failover only: the wanted table policy of a destination's replica table (None: table policies not checked).
    destination_table_policy: Callable[[Replica], TablePolicy] | None = None
    promoted_table_policy: TablePolicy | None = None  # failover only: every promoted table's table policy


def normal_scope(cfg: KitConfig, builder: BucketPolicyBuilder, src: Source | None = None) -> Scope:
    """One source (`src`, default the single source) with its own replication and destinations (`cfg.view`); the
    replica bucket policies are the whole configuration's (a fan-in vault grants and exempts every source)."""
    view = cfg if src is None else cfg.view(src)
    return Scope(
        source=view.source,
        mode=view.replication.mode,
        tables=tuple(view.replication.tables),
        replication_role_arn=view.replication_role_arn,
        destinations=tuple(view.replicas),
        bucket_policies=tuple((r, builder(cfg, r)) for r in view.replicas),
        replica_sites=tuple(view.replicas),
    )


def failover_scope(cfg: KitConfig, builder: BucketPolicyBuilder) -> Scope:
    """The promoted topology (`topology.failover.failover_topology`) with the documents of `policies.failover`."""
    from policies import failover as F  # type: ignore[import-not-found,unused-ignore]
    from topology.failover import failover_topology

    topo = failover_topology(cfg)
    policies = [(topo.promoted, F.promoted_bucket_policy(cfg, topo))]
    policies += [(d, F.destination_bucket_policy(cfg, topo, d)) for d in topo.destinations]
    policies += [(r, builder(cfg, r)) for r in topo.retained]  # unchanged documents
    return Scope(
        source=topo.promoted,
        mode="bucket",  # the failover topology replicates at bucket level (infra/stacks/failover_outputs.py)
        tables=(),
        replication_role_arn=topo.replication_role_arn,
        destinations=topo.destinations,
        bucket_policies=tuple(policies),
        replica_sites=topo.destinations + topo.retained,
        destination_table_policy=functools.partial(_destination_table_policy, cfg, topo),
        promoted_table_policy=functools.partial(F.promoted_table_policy, cfg, topo),
    )


def _destination_table_policy(cfg: KitConfig, topo: Any, dest: Replica) -> TablePolicy:
    from policies import failover as F  # type: ignore[import-not-found,unused-ignore]

    return functools.partial(F.destination_table_policy, cfg, topo, dest)  # type: ignore[no-any-return,unused-ignore]


def scopes_of(cfg: KitConfig, builder: BucketPolicyBuilder) -> tuple[Scope, ...]:
    """One scope per source of the estate (one for `[source]`); the failover topology's once promoted."""
    promoted = cfg.failover is not None and cfg.failover.promoted_bucket is not None
    if promoted:
        return (failover_scope(cfg, builder),)
    return tuple(normal_scope(cfg, builder, src) for src in cfg.sources)


@dataclass(frozen=True)
class Drift:
    kind: str
    resource: str
    detail: str


@dataclass
class AuditReport:
    drifts: list[Drift] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    # An estate's audit (several sources, issue 24) names every bucket it audited: (role, bucket ARN).
    estate: bool = False
    buckets: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, resource: str, detail: str) -> None:
        self.drifts.append(Drift(kind, resource, detail))

    def count(self, what: str, n: int = 1) -> None:
        self.checked[what] = self.checked.get(what, 0) + n

    def kinds(self) -> set[str]:
        return {d.kind for d in self.drifts}

    @property
    def exit_code(self) -> int:
        return 1 if self.drifts else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "drift": bool(self.drifts),
            "checked": self.checked,
            "drifts": [asdict(d) for d in self.drifts],
            "exit_code": self.exit_code,
        } | ({"buckets": [{"role": role, "bucket_arn": arn} for role, arn in self.buckets]} if self.estate else {})


def _client(clients: Clients, bucket_arn: str) -> Any:
    b = BucketRef(bucket_arn)
    return clients.s3tables(b.region, b.account)


# ----------------------------------------------------------------------------------------------------
# Replication configuration
# ----------------------------------------------------------------------------------------------------


def _compare_replication(report: AuditReport, resource: str, conf: dict[str, Any], scope: Scope) -> None:
    if conf.get("role") != scope.replication_role_arn:
        report.add(
            "replication-role",
            resource,
            f"role is {conf.get('role')!r}, expected {scope.replication_role_arn!r}",
        )
    rules = conf.get("rules") or []
    live = {d["destinationTableBucketARN"] for r in rules for d in r.get("destinations", [])}
    want = {r.bucket_arn for r in scope.destinations}
    for missing in sorted(want - live):
        report.add("replication-destination-missing", resource, f"destination {missing} is not configured")
    for extra in sorted(live - want):
        report.add("replication-destination-unexpected", resource, f"destination {extra} is not in the configuration")


def check_replication(
    clients: Clients, scope: Scope, report: AuditReport, source_tables: dict[str, TableRef]
) -> list[TableRef]:
    """Returns the source tables in replication scope (for the replica coverage check)."""
    src = scope.source.bucket_arn
    s3t = _client(clients, src)
    if scope.mode == "bucket":
        report.count("replication configurations")
        try:
            conf = call(s3t.get_table_bucket_replication, tableBucketARN=src)["configuration"]
            _compare_replication(report, src, conf, scope)
        except ClientError as exc:
            if error_code(exc) == "NotFoundException":
                report.add("replication-missing", src, "no bucket-level replication configuration")
            else:
                report.add("unverifiable", src, describe_error(exc))
        return list(source_tables.values())
    scoped = []
    for name in scope.tables:
        report.count("replication configurations")
        table = source_tables.get(name)
        if table is None:
            report.add("source-table-missing", f"{src} {name}", "listed for replication but not in the source bucket")
            continue
        scoped.append(table)
        try:
            conf = call(s3t.get_table_replication, tableArn=table.arn)["configuration"]
            _compare_replication(report, f"{name} ({table.arn})", conf, scope)
        except ClientError as exc:
            if error_code(exc) == "NotFoundException":
                report.add("replication-missing", f"{name} ({table.arn})", "no table-level replication configuration")
            else:
                report.add("unverifiable", f"{name} ({table.arn})", describe_error(exc))
    return scoped


# ----------------------------------------------------------------------------------------------------
# Bucket policies, SCP, encryption
# ----------------------------------------------------------------------------------------------------


def _statements(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, str):
        doc = json.loads(doc)
    stmts = doc.get("Statement", [])
    return [stmts] if isinstance(stmts, dict) else list(stmts)


def check_bucket_policy(clients: Clients, arn: str, wanted: dict[str, Any], report: AuditReport) -> None:
    """The live bucket policy of `arn` holds every statement of `wanted` (by Sid, canonical form)."""
    report.count("bucket policies")
    try:
        live = _statements(call(_client(clients, arn).get_table_bucket_policy, tableBucketARN=arn)["resourcePolicy"])
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            report.add("bucket-policy-missing", arn, "the bucket has no bucket policy")
        else:
            report.add("unverifiable", arn, describe_error(exc))
        return
    by_sid = {s.get("Sid"): s for s in live if s.get("Sid")}
    live_canon = [canonical(s) for s in live]
    for stmt in _statements(wanted):
        sid = stmt.get("Sid")
        if sid:
            if sid not in by_sid:
                report.add("bucket-policy-statement-missing", arn, f"statement {sid!r} is missing")
            elif canonical(by_sid[sid]) != canonical(stmt):
                report.add(
                    "bucket-policy-statement-changed",
                    arn,
                    f"statement {sid!r} differs from the configuration",
                )
        elif canonical(stmt) not in live_canon:
            report.add(
                "bucket-policy-statement-missing",
                arn,
                f"statement {json.dumps(stmt, sort_keys=True)[:120]} is missing",
            )


def check_scp(clients: Clients, cfg: KitConfig, outputs: KitOutputs, report: AuditReport) -> None:
    org = cfg.protection.organization
    if org is None:
        return
    report.count("scp targets", len(org.targets))
    if outputs.organization is None:
        report.add("scp-missing", cfg.scp_name, "the outputs have no organization stack (SCP not deployed)")
        return
    client = clients.organizations(org.management_account_id)
    if outputs.organization.guards_policy_id is None:
        report.add("scp-missing", cfg.scp_guards_name, "the outputs name no guards SCP (deployed by an older kit)")
    for policy_id, name in outputs.organization.policies:
        try:
            attached = {
                t["TargetId"] for t in paginate(client, "list_targets_for_policy", "Targets", PolicyId=policy_id)
            }
        except ClientError as exc:
            if error_code(exc) == "PolicyNotFoundException":
                report.add("scp-missing", policy_id, f"SCP {name} does not exist")
            else:
                report.add("unverifiable", policy_id, describe_error(exc))
            continue
        for target in org.targets:
            if target not in attached:
                report.add("scp-detached", target, f"SCP {policy_id} ({name}) is not attached to {target}")


def check_bucket_settings(clients: Clients, scopes: Sequence[Scope], outputs: KitOutputs, report: AuditReport) -> None:
    """Encryption of every source and replica bucket, storage class of every replica bucket (each bucket once)."""
    out_sources = {o.table_bucket_arn: o for o in outputs.sources}
    sites: list[tuple[str, Any, str | None]] = []
    for scope in scopes:
        out = out_sources.get(scope.source.bucket_arn)
        if out is None and len(outputs.sources) == 1:
            out = outputs.sources[0]  # the single source's outputs, even for another bucket (outputs-mismatch)
        sites.append(("source", scope.source, out.encryption.kms_key_arn if out else None))
    seen: set[str] = set()
    for r in (r for scope in scopes for r in scope.replica_sites):
        if r.bucket_arn in seen:
            continue
        seen.add(r.bucket_arn)
        rout = next((o for o in outputs.replicas if o.table_bucket_arn == r.bucket_arn), None)
        sites.append((f"replica {r.bucket}", r, rout.encryption.kms_key_arn if rout else None))
    for _label, site, out_key in sites:
        arn = site.bucket_arn
        client = _client(clients, arn)
        report.count("bucket encryption")
        try:
            enc = call(client.get_table_bucket_encryption, tableBucketARN=arn)["encryptionConfiguration"]
            want_alg = site.encryption.sse_algorithm
            want_key = site.encryption.kms_key if (site.encryption.kms_key or "").startswith("arn:") else out_key
            if enc.get("sseAlgorithm") != want_alg:
                report.add(
                    "encryption-mismatch",
                    arn,
                    f"sseAlgorithm is {enc.get('sseAlgorithm')}, expected {want_alg}",
                )
            elif want_alg == "aws:kms" and want_key and enc.get("kmsKeyArn") != want_key:
                report.add("encryption-mismatch", arn, f"kmsKeyArn is {enc.get('kmsKeyArn')}, expected {want_key}")
        except ClientError as exc:
            report.add("unverifiable", arn, describe_error(exc))
        if isinstance(site, Replica):
            report.count("storage class")
            try:
                sc = call(client.get_table_bucket_storage_class, tableBucketARN=arn)["storageClassConfiguration"][
                    "storageClass"
                ]
                if sc != site.storage_class:
                    report.add("storage-class-mismatch", arn, f"storage class is {sc}, expected {site.storage_class}")
            except ClientError as exc:
                report.add("unverifiable", arn, describe_error(exc))


# ----------------------------------------------------------------------------------------------------
# Replicas: coverage and retention
# ----------------------------------------------------------------------------------------------------


def _retention(clients: Clients, bucket_arn: str, namespace: str, name: str) -> dict[str, Any]:
    conf = call(
        _client(clients, bucket_arn).get_table_maintenance_configuration,
        tableBucketARN=bucket_arn,
        namespace=namespace,
        name=name,
    )["configuration"]
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


def _source_retention(clients: Clients, table: TableRef) -> tuple[str, dict[str, Any] | str, list[str]]:
    """(source table ARN, its retention or the error text, the ARNs of its replica tables): read once per source
    table. The replica ARNs come from `GetTableReplicationStatus` (one call names the replica table of every
    destination, where a `GetTable` per replica would take one call each); when that call fails the list is empty
    and each replica's `GetTable` names its source instead (`_replica_check`)."""
    try:
        retention: dict[str, Any] | str = _retention(clients, table.bucket_arn, table.namespace, table.name)
    except (ClientError, BotoCoreError) as exc:
        retention = describe_error(exc)
    try:
        b = BucketRef(table.bucket_arn)
        status = call(clients.s3tables(b.region, b.account).get_table_replication_status, tableArn=table.arn)
        replicas = [d["destinationTableArn"] for d in status.get("destinations", []) if d.get("destinationTableArn")]
    except (ClientError, BotoCoreError):
        replicas = []
    return table.arn, retention, replicas


def table_policy_drift(clients: Clients, table: TableRef, table_arn: str, want: TablePolicy) -> Drift | None:
    """`table-policy-missing` / `table-policy-changed` when the live table policy is not `want(table_arn)` (compared
    in canonical form), else None."""
    resource = f"{table.qualified} ({table_arn})"
    try:
        live = call(
            _client(clients, table.bucket_arn).get_table_policy,
            tableBucketARN=table.bucket_arn,
            namespace=table.namespace,
            name=table.name,
        )["resourcePolicy"]
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            return Drift("table-policy-missing", resource, "the table has no table policy")
        raise
    if canonical_policy(live) != canonical_policy(want(table_arn)):
        return Drift("table-policy-changed", resource, "the table policy differs from the configuration")
    return None


def _replica_check(
    clients: Clients,
    table: TableRef,
    sources: dict[str, dict[str, Any] | str],
    paired: Mapping[str, str] | None = None,
    want_policy: TablePolicy | None = None,
) -> tuple[TableRef, str | None, list[Drift]]:
    """One replica: its source and its retention, compared with the source's read once beforehand (`sources`; a
    source outside it, e.g. in another bucket, is read here). The source is known without a call when both sides say
    so: the source's replication status names this table (`paired`: {replica table ARN: source table ARN}) and
    ListTables reports it managed by the service. Otherwise (a detached or foreign table, a status that could not be
    read) `GetTable` names it."""
    drifts: list[Drift] = []
    try:
        source = (paired or {}).get(table.arn) if table.managed_by_service else None
        table_arn = table.arn
        if source is None:
            got = call(
                _client(clients, table.bucket_arn).get_table,
                tableBucketARN=table.bucket_arn,
                namespace=table.namespace,
                name=table.name,
            )
            table_arn = got["tableARN"]
            source = ((got.get("managedTableInformation") or {}).get("replicationInformation") or {}).get(
                "sourceTableARN"
            )
        if not source:
            return table, None, drifts
        if want_policy is not None:
            drifts.extend(d for d in [table_policy_drift(clients, table, table_arn, want_policy)] if d)
        rep = _retention(clients, table.bucket_arn, table.namespace, table.name)
        src = sources.get(source)
        if src is None:
            src_table = call(_client(clients, bucket_of_table_arn(source)).get_table, tableArn=source)
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


def _sources_chunk(tables: list[TableRef], concurrency: int, clients: Clients) -> list[tuple[str, Any, list[str]]]:
    """One worker-process job of the source pass: `_source_retention` of each source table."""
    return run_concurrently(lambda t: _source_retention(clients, t), tables, concurrency)


def _replicas_chunk(
    tables: list[TableRef],
    sources: dict[str, dict[str, Any] | str],
    paired: dict[str, str],
    want_policy: TablePolicy | None,
    concurrency: int,
    clients: Clients,
) -> list[tuple[TableRef, str | None, list[Drift]]]:
    """One worker-process job of the replica pass: `_replica_check` of each replica table."""
    return run_concurrently(lambda t: _replica_check(clients, t, sources, paired, want_policy), tables, concurrency)


CHUNK = 500  # tables per worker-process job


def check_replicas(
    clients: Clients,
    planned: Sequence[tuple[Scope, list[TableRef]]],
    report: AuditReport,
    concurrency: int,
    page_size: int | None,
    show_progress: bool,
    processes: int | None = 1,
) -> None:
    """Every replica bucket of every scope (each bucket listed and read once, a fan-in vault too) against the source
    tables in each scope's replication (`planned`: each scope with its scoped source tables)."""
    scoped = [t for _, tables in planned for t in tables]
    destinations: dict[str, tuple[Replica, TablePolicy | None]] = {}
    expected_into: dict[str, dict[str, TableRef]] = {}  # what each replica bucket should hold (detached check)
    for scope, tables in planned:
        for r in scope.destinations:
            want = scope.destination_table_policy(r) if scope.destination_table_policy else None
            destinations.setdefault(r.bucket_arn, (r, want))
            expected_into.setdefault(r.bucket_arn, {}).update({t.qualified: t for t in tables})
    # Each source table's retention is read once, not once per destination.
    progress = Progress("audit sources", len(scoped), enabled=show_progress and len(scoped) > 50)
    sources: dict[str, dict[str, Any] | str] = {}
    paired: dict[str, str] = {}  # replica table ARN -> source table ARN, from the sources' replication status
    # one pool for both passes, sized by the work: each source table and its replica in every destination
    procs = processes_for(processes, sum(len(tables) * (1 + len(scope.destinations)) for scope, tables in planned))
    threads = max(1, concurrency // procs)
    covered: set[tuple[str, str]] = set()  # (source table ARN, destination bucket ARN)
    with worker_pool(clients, procs) as pool:
        source_results: Iterable[tuple[str, Any, list[str]]]
        if pool is not None:
            jobs = [functools.partial(_sources_chunk, part, threads) for part in chunks(scoped, CHUNK)]
            source_results = (x for out in pool.map(jobs, progress) for x in out)
        else:
            source_results = stream_concurrently(lambda t: _source_retention(clients, t), scoped, concurrency, progress)
        for arn, retention, replicas in source_results:
            sources[arn] = retention
            paired.update(dict.fromkeys(replicas, arn))
        report.count("source tables", len(scoped))
        for r, want_policy in destinations.values():
            expected = expected_into[r.bucket_arn]
            try:
                replica_tables = list_tables(clients, r.bucket_arn, page_size)
            except ClientError as exc:
                report.add("unverifiable", r.bucket_arn, describe_error(exc))
                continue
            progress = Progress(
                f"audit replicas in {r.bucket}",
                len(replica_tables),
                enabled=show_progress and len(replica_tables) > 50,
            )
            report.count("replica tables", len(replica_tables))
            results: Iterable[tuple[TableRef, str | None, list[Drift]]]
            if pool is not None:
                replica_jobs = []
                for part in chunks(replica_tables, CHUNK):
                    # what the chunk's tables need of the source pass: the paired source, or the same-name source
                    part_paired = {t.arn: paired[t.arn] for t in part if t.arn in paired}
                    same_name = {expected[t.qualified].arn for t in part if t.qualified in expected}
                    wanted = set(part_paired.values()) | same_name
                    part_sources = {arn: sources[arn] for arn in wanted if arn in sources}
                    replica_jobs.append(
                        functools.partial(_replicas_chunk, part, part_sources, part_paired, want_policy, threads)
                    )
                results = (x for out in pool.map(replica_jobs, progress) for x in out)
            else:
                results = stream_concurrently(
                    functools.partial(_replica_check, clients, sources=sources, paired=paired, want_policy=want_policy),
                    replica_tables,
                    concurrency,
                    progress,
                )
            for table, source, drifts in results:
                report.drifts.extend(drifts)
                if source:
                    covered.add((source, table.bucket_arn))
                covered |= check_detached([(table, source, drifts)], expected, report)
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


def _promoted_check(clients: Clients, table: TableRef, want: TablePolicy) -> list[Drift]:
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
    for drifts in run_concurrently(lambda t: _promoted_check(clients, t, want), tables, concurrency):
        report.drifts.extend(drifts)


# ----------------------------------------------------------------------------------------------------


def audit(
    clients: Clients,
    cfg: KitConfig,
    outputs: KitOutputs,
    *,
    builder: BucketPolicyBuilder | None = None,
    concurrency: int = 16,
    page_size: int | None = None,
    show_progress: bool = True,
    processes: int | None = 1,
) -> AuditReport:
    """Every source of the configuration (an estate's too) and every replica bucket, each read once.
    `processes`: worker processes for the per-table passes (None: `processes_for` decides by the table count)."""
    scopes = scopes_of(cfg, builder or default_bucket_policy_builder())
    report = AuditReport(estate=len(scopes) > 1)
    check_outputs_match(scopes, outputs, report)
    planned: list[tuple[Scope, list[TableRef]]] = []
    listed: list[dict[str, TableRef]] = []
    for scope in scopes:
        source_arn = scope.source.bucket_arn
        try:
            source_tables = {t.qualified: t for t in list_tables(clients, source_arn, page_size)}
        except ClientError as exc:
            report.add("unverifiable", source_arn, describe_error(exc))
            source_tables = {}
        planned.append((scope, check_replication(clients, scope, report, source_tables)))
        listed.append(source_tables)
    checked_policies: set[str] = set()
    for bucket, wanted in (bp for scope in scopes for bp in scope.bucket_policies):
        if bucket.bucket_arn not in checked_policies:  # a replica of several sources is checked once
            checked_policies.add(bucket.bucket_arn)
            check_bucket_policy(clients, bucket.bucket_arn, wanted, report)
    check_scp(clients, cfg, outputs, report)
    check_bucket_settings(clients, scopes, outputs, report)
    for scope, source_tables in zip(scopes, listed, strict=True):
        check_promoted_tables(clients, scope, source_tables, report, concurrency)
    check_replicas(clients, planned, report, concurrency, page_size, show_progress, processes)
    report.buckets = [("source", scope.source.bucket_arn) for scope in scopes]
    replicas = dict.fromkeys(r.bucket_arn for scope in scopes for r in scope.replica_sites)
    report.buckets += [("replica", arn) for arn in replicas]
    return report


def check_outputs_match(scopes: Sequence[Scope], outputs: KitOutputs, report: AuditReport) -> None:
    """`outputs-mismatch`: the outputs are for other source buckets than the configuration's."""
    configured = [scope.source.bucket_arn for scope in scopes]
    deployed = [o.table_bucket_arn for o in outputs.sources]
    if len(configured) == 1 and len(deployed) == 1:
        if deployed[0] != configured[0]:
            report.add("outputs-mismatch", deployed[0], f"outputs are for another source bucket than {configured[0]}")
        return
    for arn in configured:
        if arn not in deployed:
            report.add("outputs-mismatch", arn, "the outputs have no source stack for this configured source bucket")
    for arn in deployed:
        if arn not in configured:
            report.add("outputs-mismatch", arn, "the outputs name a source bucket the configuration does not")


def render(report: AuditReport) -> str:
    checked = ", ".join(f"{n} {k}" for k, n in sorted(report.checked.items()))
    if not report.drifts:
        return f"no drift ({checked}){_render_buckets(report)}"
    table = render_table(
        ["DRIFT", "RESOURCE", "DETAIL"],
        [(d.kind, d.resource, d.detail) for d in report.drifts],
        max_width=110,
    )
    return f"{table}\n\n{len(report.drifts)} drift(s) found ({checked}){_render_buckets(report)}"


def _render_buckets(report: AuditReport) -> str:
    """An estate's audit names every bucket it audited, with its drifts (nothing for one source)."""
    if not report.estate:
        return ""
    lines = []
    for role, arn in report.buckets:
        name = BucketRef(arn).name
        n = sum(1 for d in report.drifts if mentions_bucket(d.resource, arn) or d.resource.endswith(f" in {name}"))
        lines.append(f"\n  {role} {name}: {f'{n} drift(s)' if n else 'no drift'}")
    return "".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.ops.audit", description=__doc__.split("\n\n")[0])
    add_common_args(p)
    p.add_argument("--config", default="examples/seed.toml", help="the kit configuration (TOML)")
    args = p.parse_args(argv)
    from topology.config import ConfigError, load_config
    from topology.outputs import OutputsError, load_outputs

    try:
        cfg, outputs = load_config(args.config), load_outputs(args.outputs)
    except (ConfigError, OutputsError) as err:
        return refuse(err)
    report = audit(
        clients_from_args(args),
        cfg,
        outputs,
        concurrency=args.concurrency,
        page_size=args.page_size,
        show_progress=not args.quiet,
        processes=args.processes,
    )
    return emit(report, as_json=args.json, render=lambda: render(report))


if __name__ == "__main__":
    sys.exit(main())
