"""Audit live protections against the configuration and the outputs; name every drift.

    python -m s3tables_kit.jobs.ops.audit --config examples/seed.toml --outputs outputs.json [--json]

Checks (each drift has a kind, the resource and a detail):

* ``replication-*``, ``source-table-missing``: the source's bucket-level configuration and the table-level
  configuration of EVERY source table, in either mode, against the declared replication: the configuration of the
  mode exists, uses the kit's replication role and exactly the configured destinations, and no other configuration
  exists (``replication-extra-configuration``: a table-level destination beside the bucket-level configuration, a
  bucket-level one in tables mode); `s3tables_kit.jobs.ops.drift` has every kind;
* ``replica-missing``: every replicated source table has a replica in every destination (a deleted replica);
* ``replica-detached``: a table in a replica bucket that the configuration replicates but that is no longer managed
  by S3 Tables replication (disassociated with ``DisassociateTableReplication``: permanent;
  docs/assurance.md#detached-replicas);
* ``bucket-policy-*``: each replica bucket policy is the reviewed document
  ``s3tables_kit.policies.documents.replica_bucket_policy(cfg, replica)``, and the source bucket policy is the reviewed
  ``s3tables_kit.policies.source_guard.source_bucket_policy`` (rendered ``source-bucket-policy``, ``--<stack id>`` in an
  estate; docs/decisions/0028-lock-after-first-deploy.md): every statement, matched by ``Sid`` and compared in canonical
  form (by meaning: order and one-element lists do not matter), and no other (``bucket-policy-statement-unexpected``);
* ``table-policy-missing`` / ``table-policy-changed``: every replica table carries the table policy `harden` puts
  (``s3tables_kit.policies.documents.replica_table_policy_for``), the second layer of every replica: a table without it
  (a new replica `harden` has not reached, a deleted policy) has one layer only;
* ``scp-*``: the SCP exists and is attached to every configured target (``ListTargetsForPolicy``);
* ``retention-below-source``: on every replica table, snapshot retention >= the source table's (both live; each
  source table is read once, its retention; a replica costs three reads, its table policy, its retention and its
  metadata (below): its
  source is known by its name, which the service gives every replica, where one source table of that name feeds the
  bucket, else ``GetTable`` names it: `s3tables_kit.jobs.ops.audit_replicas.pair_by_name`);
* ``retention-below-configured``: on every replica table, snapshot retention >= the replica's configured
  ``snapshot_retention`` (what `harden` writes; the replication service may give a new replica the source's);
* ``snapshot-time-untrusted``: a replica table whose snapshot is dated in the future or whose snapshot log goes
  backwards (`s3tables_kit.jobs.kernel.snapshot_times`: writer-chosen times `--as-of` and freshness would otherwise
  trust), from a summary of its metadata file kept in `status`'s cache (`s3tables_kit.jobs.kernel.metadata_cache`,
  ``--cache-dir``, ``--no-cache``): with nothing cached, one loadTable a replica; else its metadata location, and the
  file only when it moved;
* ``encryption-mismatch`` / ``storage-class-mismatch``: bucket settings as configured;
* ``vault-*``: with ``[vault]``, the vault bucket's Object Lock (COMPLIANCE, ``retention_days``:
  ``vault-lock-changed``, ``vault-retention-below-configured``), versioning, encryption, bucket policy, and each
  selected table without a backup point past the budget, ``vault-table-without-backup-point``
  (`s3tables_kit.jobs.ops.audit_vault`);
* ``deployed-*``: the kit's Lambda functions (code hash), schedules (target, input) and EMR Serverless application
  (release, image, runtime and network configuration) against what the deploy recorded
  (`s3tables_kit.jobs.ops.audit_deployed`);
* ``unverifiable``: a check could not be made (the error is the detail) -- never silently passed.

On a failover topology (``[failover] promoted_bucket`` set: `s3tables_kit.topology.failover`) the same checks run on
the promoted topology (`Scope`): the promoted bucket is the source (its bucket-level replication uses the failover
replication role and the ``replicate_to`` destinations; its bucket policy is the promoted one, opened to the
writers), the destinations are checked like replicas with the failover documents, and also:

* ``table-policy-missing`` / ``table-policy-changed``: every replica table of a destination carries the failover
  destination table policy (what `harden` puts on the failover outputs) instead of the replica one, every promoted
  table the promoted table policy (what the failover tool puts);
* ``promoted-table-still-replica``: a table of the promoted bucket still managed by S3 Tables replication (a replica
  of the failed source, read-only: not promoted);
* retained replicas of the failed source keep their own bucket policy and settings (their tables are not compared
  with the failed source, which is gone).

On an estate (`[[sources]]`) every source is checked with its own replication (`replication_of(src)`: mode; its
role and `destinations_of(src)`) and every replica bucket once, against the estate's documents (a fan-in vault's
bucket policy grants and exempts every source feeding it); a table missing from a replica is named
`bucket/namespace.name` where two sources hold that name; ``outputs-mismatch`` when the outputs' source stacks are
not the configured sources; the report names every bucket it audited.

The per-table reads (maintenance, table policy, table-level replication, metadata location) are sent as signed GETs
without botocore's per-request work (`s3tables_kit.jobs.kernel.signed_ops`); the errors are botocore's.

Exit 0 without drift, 1 with drift.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import WorkerPool, chunks, processes_for, run_concurrently, worker_pool
from s3tables_kit.jobs.kernel.metadata_cache import MetadataCache, resolve_cache_dir
from s3tables_kit.jobs.kernel.options import add_common_args, clients_from_args, refuse, run_options, tool_parser
from s3tables_kit.jobs.kernel.render import emit, render_table
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error, error_code, paginate
from s3tables_kit.jobs.kernel.signed_ops import signed_call
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables
from s3tables_kit.jobs.ops.audit_deployed import check_deployed
from s3tables_kit.jobs.ops.audit_replicas import check_promoted_tables, check_replicas, replica_work
from s3tables_kit.jobs.ops.audit_scope import (
    AuditReport,
    BucketPolicyBuilder,
    Drift,
    Scope,
    default_bucket_policy_builder,
    s3tables_of,
    scopes_of,
)
from s3tables_kit.jobs.ops.audit_vault import check_vault
from s3tables_kit.jobs.ops.cli import mentions_bucket
from s3tables_kit.jobs.ops.drift import Live, LiveReplication, Unreadable, policy_drift, replication_drift
from s3tables_kit.jobs.ops.drift_read import configuration_of, read_bucket_policy, read_live, read_replication
from s3tables_kit.topology.config import KitConfig, Replica
from s3tables_kit.topology.outputs import KitOutputs

__all__ = ["AuditReport", "Drift", "audit", "main", "render"]

CHUNK = 500  # source tables per worker-process job


# ----------------------------------------------------------------------------------------------------
# Replication configuration and bucket policies (compared by `s3tables_kit.jobs.ops.drift`)
# ----------------------------------------------------------------------------------------------------


def check_replication(
    clients: Clients,
    scope: Scope,
    report: AuditReport,
    source_tables: dict[str, TableRef] | Unreadable,
    table_level: Mapping[str, Live],
) -> list[TableRef]:
    """The source's bucket-level configuration and every table's table-level one (`table_level`: by table ARN, read
    for every source at once: `table_replications`) against the declared replication
    (`s3tables_kit.jobs.ops.drift.replication_drift`). Returns the source tables in replication scope (for the replica
    coverage check)."""
    listing: Unreadable | list[TableRef] = source_tables if isinstance(source_tables, Unreadable) else []
    live = read_replication(clients, scope.source.bucket_arn, listing)  # the bucket-level configuration
    if not isinstance(source_tables, Unreadable):
        tables = {t.qualified: (t.arn, table_level[t.arn]) for t in source_tables.values()}
        live = LiveReplication(live.bucket, tables)
    report.count("replication configurations", 1 + len(live.tables))
    report.drifts.extend(replication_drift(scope.declared, live))
    if isinstance(source_tables, Unreadable):
        return []
    if scope.mode == "bucket":
        return list(source_tables.values())
    return [source_tables[name] for name in scope.tables if name in source_tables]


def table_replications(
    clients: Clients, tables: list[TableRef], concurrency: int, pool: WorkerPool | None
) -> dict[str, Live]:
    """{table ARN: its table-level configuration} of every source table of every source (one pass of the pool), read
    as `s3tables_kit.jobs.ops.drift_read.read_replication` reads them (None: none; `Unreadable`: an error), each sent
    lean (`s3tables_kit.jobs.kernel.signed_ops`: one per source table, a quarter of botocore's CPU per request)."""
    if pool is not None:
        threads = max(1, concurrency // pool.processes)
        jobs = [functools.partial(_replications_chunk, part, threads) for part in chunks(tables, CHUNK)]
        confs = [c for out in pool.map(jobs) for c in out]
    else:
        confs = _replications_chunk(tables, concurrency, clients)
    return {t.arn: c for t, c in zip(tables, confs, strict=True)}


def _replications_chunk(tables: list[TableRef], concurrency: int, clients: Clients) -> list[Live]:
    """One worker-process job (or the whole pass inline): each table's GetTableReplication, in order."""

    def read(t: TableRef) -> Live:
        return configuration_of(read_live(signed_call, clients, t.bucket_arn, "GetTableReplication", tableArn=t.arn))

    return run_concurrently(read, tables, concurrency)


def check_bucket_policy(clients: Clients, arn: str, wanted: dict[str, Any], report: AuditReport) -> None:
    """The live bucket policy of `arn` is the reviewed document `wanted`: every statement (by Sid, canonical form),
    and no other (`s3tables_kit.jobs.ops.drift.policy_drift`)."""
    report.count("bucket policies")
    report.drifts.extend(policy_drift(arn, read_bucket_policy(clients, arn), wanted))


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
        client = s3tables_of(clients, arn)
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
    cache: MetadataCache | None = None,
) -> AuditReport:
    """Every source of the configuration (an estate's too) and every replica bucket, each read once.
    `processes`: worker processes for the per-table passes (None: `processes_for` decides by the table count).
    `cache`: summaries of the replicas' metadata files by location, shared with `status`
    (`s3tables_kit.jobs.kernel.metadata_cache`; None: every file is read)."""
    scopes = scopes_of(cfg, builder or default_bucket_policy_builder())
    report = AuditReport(estate=len(scopes) > 1)
    check_outputs_match(scopes, outputs, report)
    planned: list[tuple[Scope, list[TableRef]]] = []
    listings: list[dict[str, TableRef] | Unreadable] = []
    for scope in scopes:
        try:
            listings.append({t.qualified: t for t in list_tables(clients, scope.source.bucket_arn, page_size)})
        except ClientError as exc:
            listings.append(Unreadable(describe_error(exc)))  # reported by the replication check
    listed = [{} if isinstance(x, Unreadable) else x for x in listings]
    # One pool of worker processes for every per-table pass (table-level replication, sources, replicas), sized by
    # the work: one process's interpreter lock would bound a large estate's reads to one core.
    work = replica_work(list(zip(scopes, listed, strict=True))) + sum(len(x) for x in listed)
    with worker_pool(clients, processes_for(processes, work)) as pool:
        table_level = table_replications(clients, [t for x in listed for t in x.values()], concurrency, pool)
        for scope, source_tables in zip(scopes, listings, strict=True):
            planned.append((scope, check_replication(clients, scope, report, source_tables, table_level)))
        _check_rest(clients, cfg, outputs, scopes, listed, planned, report, concurrency, page_size, show_progress,
                    processes, pool, cache)  # fmt: skip
    report.buckets = [("source", scope.source.bucket_arn) for scope in scopes]
    replicas = dict.fromkeys(r.bucket_arn for scope in scopes for r in scope.replica_sites)
    report.buckets += [("replica", arn) for arn in replicas]
    return report


def _check_rest(
    clients: Clients,
    cfg: KitConfig,
    outputs: KitOutputs,
    scopes: Sequence[Scope],
    listed: Sequence[dict[str, TableRef]],
    planned: Sequence[tuple[Scope, list[TableRef]]],
    report: AuditReport,
    concurrency: int,
    page_size: int | None,
    show_progress: bool,
    processes: int | None,
    pool: WorkerPool | None,
    cache: MetadataCache | None,
) -> None:
    """Bucket policies (each source's and replica's), the SCP, bucket settings, promoted tables, then every replica
    bucket."""
    for scope in scopes:  # each source's own layer against changing its replication (decision 0028)
        if scope.source_bucket_policy is not None:
            check_bucket_policy(clients, scope.source.bucket_arn, scope.source_bucket_policy, report)
    checked_policies: set[str] = set()
    for bucket, wanted in (bp for scope in scopes for bp in scope.bucket_policies):
        if bucket.bucket_arn not in checked_policies:  # a replica of several sources is checked once
            checked_policies.add(bucket.bucket_arn)
            check_bucket_policy(clients, bucket.bucket_arn, wanted, report)
    check_scp(clients, cfg, outputs, report)
    check_deployed(clients, outputs, report)  # what runs the kit's jobs against what the deploy recorded
    created = {name: t.created_at for tables in listed for name, t in tables.items()}
    check_vault(clients, cfg, outputs, report, created=created)
    check_bucket_settings(clients, scopes, outputs, report)
    for scope, source_tables in zip(scopes, listed, strict=True):
        check_promoted_tables(clients, scope, source_tables, report, concurrency)
    check_replicas(clients, planned, report, concurrency, page_size, show_progress, processes, pool, cache)


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
    return "".join(_bucket_line(report, role, arn) for role, arn in report.buckets)


def _bucket_line(report: AuditReport, role: str, arn: str) -> str:
    name = BucketRef(arn).name
    n = sum(1 for d in report.drifts if mentions_bucket(d.resource, arn) or d.resource.endswith(f" in {name}"))
    return f"\n  {role} {name}: {f'{n} drift(s)' if n else 'no drift'}"


def main(argv: Sequence[str] | None = None) -> int:
    p = tool_parser("audit", __doc__)
    add_common_args(p)
    p.add_argument("--config", default="examples/seed.toml", help="the kit configuration (TOML)")
    p.add_argument("--cache-dir", help="the metadata summaries `status` keeps (default: as `status`)")
    p.add_argument("--no-cache", action="store_true", help="read every metadata file; neither read nor write the cache")
    args = p.parse_args(argv)
    from s3tables_kit.topology.config import ConfigError, load_config
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    try:
        cfg, outputs = load_config(args.config), load_outputs(args.outputs)
    except (ConfigError, OutputsError) as err:
        return refuse(err)
    cache = None if args.no_cache else MetadataCache.open(resolve_cache_dir(args.cache_dir))
    report = audit(clients_from_args(args), cfg, outputs, cache=cache, **run_options(args))
    return emit(report, as_json=args.json, render=lambda: render(report))


if __name__ == "__main__":
    sys.exit(main())
