"""Harden the replica tables the S3 Tables service created: table policy + replica snapshot retention.

    python -m s3tables_kit.jobs.ops.harden --outputs outputs.json [--dry-run] [--check-retention] [--json]

For each destination bucket in the outputs, every replica (``ListTables`` marks it ``managedByService``; a table
without the mark is asked with ``GetTable``: a replica has
``managedTableInformation.replicationInformation.sourceTableARN``) gets:

1. snapshot retention: ``icebergSnapshotManagement`` = the replica's ``snapshot_retention`` from the outputs
   (written first: the table policy denies ``PutTableMaintenanceConfiguration`` to everyone but the break-glass
   principals, so a run by any other principal still leaves the retention right before it locks the table);
2. table policy: ``s3tables_kit.policies.documents.replica_table_policy`` for the table's UUID-scoped ARN; in a failover
   topology (`[failover]`: the outputs' source is a promoted bucket, with a ``failover`` section), the destinations of
   the promoted source get ``s3tables_kit.policies.failover.destination_table_policy_of`` instead (the failover
   replication role exempt), and the other buckets' replicas keep the replica document with the failed source's role.

A table without that information is not a replica and is never hardened as one; a table the outputs list as
replicated (``replicated_tables``) that has none is reported as ``detached``: it was disassociated from replication
(``DisassociateTableReplication``, permanent; docs/assurance.md#detached-replicas), so it is a standalone writable table
now.

On an estate (several `kit_source` outputs) every replica bucket of every source is hardened; a replica
fed by several sources (a fan-in vault) gets the table policy exempting every feeding source's replication role by
name pattern (`KitOutputs.table_policy_writers`, the same document as
`s3tables_kit.policies.documents.replica_table_policy_for`), and the report counts each destination bucket.

Both are compared with the live state (policies in canonical form) and written only when they differ, so a second
run changes nothing. A replica whose table policy is already the desired one costs ONE read (``GetTablePolicy``):
the retention was written before that policy locked it, and since then only a break-glass principal can change it
(``audit`` reports a replica retention below the source's). ``--check-retention`` reads the retention of every
replica as well (two reads each). ``--dry-run`` prints each diff as it is found and writes nothing. Output streams:
the report keeps counts and the tables that are not unchanged, never a list of every replica. Exit 1 when any
replica could not be hardened (each is reported with the failing call and its error).
"""

from __future__ import annotations

import difflib
import functools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import (
    Progress,
    chunks,
    processes_for,
    run_concurrently,
    stream_concurrently,
    worker_pool,
)
from s3tables_kit.jobs.kernel.options import add_common_args, clients_from_args, refuse, run_options, tool_parser
from s3tables_kit.jobs.kernel.render import emit, render_table
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error, error_code
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables
from s3tables_kit.jobs.ops.cli import canonical_policy

TablePolicyBuilder = Callable[..., dict[str, Any]]
SNAPSHOT = "icebergSnapshotManagement"


# What harden reads of the outputs contract (`s3tables_kit.topology.outputs.KitOutputs`, `ReplicaOut`), as protocols
# (`HardenOutputs`, `HardenReplica`): the scheduled hardener (`jobs/ops/harden_scheduled.py`) runs where the
# contract's models cannot be imported and hands in its own.
class Retention(Protocol):
    """A replica's configured `snapshot_retention`."""

    @property
    def max_snapshot_age_hours(self) -> int:
        """Hours a snapshot is kept."""

    @property
    def min_snapshots_to_keep(self) -> int:
        """Snapshots always kept."""


class HardenReplica(Protocol):
    """A replica bucket: where its tables are, what their layers say."""

    @property
    def table_bucket_arn(self) -> str:
        """The bucket."""

    @property
    def snapshot_retention(self) -> Retention:
        """What `harden` writes as retention."""

    @property
    def break_glass_principals(self) -> Sequence[str]:
        """Exempt in the table policy."""

    @property
    def deploy_role_arns(self) -> Sequence[str]:
        """Named in the table policy."""

    @property
    def hardener_principals(self) -> Sequence[str]:
        """The scheduled hardener: exempt in the table policy from its own writes only."""


class SourceView(Protocol):
    """A source feeding a replica bucket."""

    @property
    def replication_role_arn(self) -> str:
        """Exempt in its replicas' table policies."""

    @property
    def failover(self) -> object | None:
        """Set on a promoted source."""


class HardenOutputs(Protocol):
    @property
    def replicas(self) -> Sequence[HardenReplica]: ...
    @property
    def sources(self) -> Sequence[SourceView]: ...
    @property
    def several_sources(self) -> bool: ...
    def replicated_tables_into(self, replica: Any) -> list[str]: ...
    def is_failover_destination(self, replica: Any) -> bool: ...
    def sources_into(self, replica: Any) -> Sequence[SourceView]: ...
    def table_policy_writers(self, replica: Any) -> list[str]: ...


def default_table_policy_builder() -> TablePolicyBuilder:
    """`s3tables_kit.policies.documents.replica_table_policy(*, table_arn, break_glass_principals, replication_role_arn,
    deploy_role_arns, hardener_principals)`,
    imported lazily so the other ops modules work without `policies/`."""
    from s3tables_kit.policies.documents import replica_table_policy  # type: ignore[import-not-found,unused-ignore]

    return replica_table_policy  # type: ignore[no-any-return,unused-ignore]


def default_failover_table_policy_builder() -> TablePolicyBuilder:
    """`s3tables_kit.policies.failover.destination_table_policy_of(*, table_arn, break_glass_principals,
    replication_role_arns, deploy_role_arns)`: the table policy of a destination of a promoted source (failover),
    imported lazily."""
    from s3tables_kit.policies.failover import destination_table_policy_of  # type: ignore[import-not-found,unused-ignore]

    return destination_table_policy_of  # type: ignore[no-any-return,unused-ignore]


def desired_table_policy(
    outputs: HardenOutputs,
    replica: HardenReplica,
    table_arn: str,
    builder: TablePolicyBuilder,
    failover_builder: TablePolicyBuilder | None = None,
) -> dict[str, Any]:
    """The table policy a replica table of `replica` must carry. In a failover topology (the outputs' source has a
    `failover` section) a destination of the promoted source gets the failover document (the failover replication
    role exempt, not the failed source's); the promoted bucket's tables still replicated from the failed source and
    the retained replicas keep the replica document with the failed source's role. Promoted tables are detached and
    never get here (`harden_table` reports them `detached`)."""
    if outputs.is_failover_destination(replica):
        return (failover_builder or default_failover_table_policy_builder())(
            table_arn=table_arn,
            break_glass_principals=list(replica.break_glass_principals),
            replication_role_arns=[s.replication_role_arn for s in outputs.sources_into(replica)],
            deploy_role_arns=list(replica.deploy_role_arns),
        )
    roles = outputs.table_policy_writers(replica)  # a fan-in vault: every feeding source's role, by pattern
    return builder(
        table_arn=table_arn,
        break_glass_principals=list(replica.break_glass_principals),
        replication_role_arn=roles[0] if len(roles) == 1 else roles,
        deploy_role_arns=list(replica.deploy_role_arns),
        hardener_principals=list(replica.hardener_principals),
    )


@dataclass
class HardenChange:
    kind: str  # "table-policy" | "snapshot-retention"
    before: Any
    after: Any
    diff: str


@dataclass
class HardenTableResult:
    bucket_arn: str
    table: str
    table_arn: str
    source_table_arn: str | None
    outcome: str  # hardened | would-change | unchanged | failed | skipped | detached
    changes: list[HardenChange] = field(default_factory=list)
    reason: str | None = None


OUTCOMES = ("hardened", "would-change", "unchanged", "failed", "skipped", "detached")
DETACHED_REASON = (
    "DETACHED: replicated by the configuration but no longer managed by S3 Tables replication (disassociated, "
    "permanent): not a replica any more, so not hardened as one; see `status` and `audit`"
)


@dataclass
class HardenReport:
    """Counts of every outcome and the results that are not "unchanged" (a 10,000-replica run keeps the summary,
    not 10,000 results)."""

    dry_run: bool
    results: list[HardenTableResult] = field(default_factory=list)
    bucket_errors: list[dict[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    # An estate's run (several sources) also counts per destination bucket and reports each.
    estate: bool = False
    per_bucket: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, result: HardenTableResult) -> None:
        self.counts[result.outcome] = self.counts.get(result.outcome, 0) + 1
        bucket = self.per_bucket.setdefault(result.bucket_arn, {})
        bucket[result.outcome] = bucket.get(result.outcome, 0) + 1
        if result.outcome != "unchanged":
            self.results.append(result)

    def count(self, outcome: str) -> int:
        return self.counts.get(outcome, 0)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def by(self, outcome: str) -> list[HardenTableResult]:
        """The results of one outcome ("unchanged" ones are only counted)."""
        return [r for r in self.results if r.outcome == outcome]

    @property
    def exit_code(self) -> int:
        return 1 if self.count("failed") or self.bucket_errors else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "counts": {k: self.count(k) for k in OUTCOMES},
            "bucket_errors": self.bucket_errors,
            "exit_code": self.exit_code,
            "tables": [asdict(r) for r in self.results],  # every table that is not unchanged
        } | ({"buckets": self.by_bucket()} if self.estate else {})

    def by_bucket(self) -> list[dict[str, Any]]:
        """Per destination bucket (listed or not): the counts of its outcomes."""
        unlisted = [e["bucket_arn"] for e in self.bucket_errors if e["bucket_arn"] not in self.per_bucket]
        arns = [*self.per_bucket, *unlisted]
        return [
            {"bucket_arn": arn, "counts": {k: self.per_bucket.get(arn, {}).get(k, 0) for k in OUTCOMES}} for arn in arns
        ]


def desired_retention(replica: HardenReplica) -> dict[str, Any]:
    return {
        "status": "enabled",
        "settings": {
            SNAPSHOT: {
                "minSnapshotsToKeep": replica.snapshot_retention.min_snapshots_to_keep,
                "maxSnapshotAgeHours": replica.snapshot_retention.max_snapshot_age_hours,
            }
        },
    }


def _retention_compared(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if not value:
        return None
    settings = (value.get("settings") or {}).get(SNAPSHOT) or {}
    return {
        "status": value.get("status"),
        "settings": {SNAPSHOT: {k: settings.get(k) for k in ("minSnapshotsToKeep", "maxSnapshotAgeHours")}},
    }


def _diff(kind: str, before: Any, after: Any) -> str:
    a = json.dumps(before, indent=2, sort_keys=True).splitlines() if before is not None else []
    b = json.dumps(after, indent=2, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(a, b, f"{kind} (live)", f"{kind} (desired)", lineterm=""))


def harden_table(
    clients: Clients,
    table: TableRef,
    replica: HardenReplica,
    outputs: HardenOutputs,
    builder: TablePolicyBuilder,
    dry_run: bool,
    check_retention: bool = False,
    failover_builder: TablePolicyBuilder | None = None,
) -> HardenTableResult:
    """One replica: one read (its table policy) when it is hardened already; the retention is read when the policy
    differs or with `check_retention` (see the module docstring)."""
    b = BucketRef(table.bucket_arn)
    s3t = clients.s3tables(b.region, b.account)
    ident: dict[str, Any] = {
        "tableBucketARN": table.bucket_arn,
        "namespace": table.namespace,
        "name": table.name,
    }
    result = HardenTableResult(table.bucket_arn, table.qualified, table.arn, None, "unchanged")
    step = "GetTable"
    try:
        if not table.managed_by_service:  # ListTables did not say it is a replica: ask the table itself
            got = call(s3t.get_table, **ident)
            result.table_arn = got["tableARN"]
            info = (got.get("managedTableInformation") or {}).get("replicationInformation") or {}
            if not info.get("sourceTableARN"):
                if table.qualified in outputs.replicated_tables_into(replica):
                    result.outcome, result.reason = "detached", DETACHED_REASON
                else:
                    result.outcome, result.reason = (
                        "skipped",
                        "not a replica (no managedTableInformation.replicationInformation)",
                    )
                return result
            result.source_table_arn = info["sourceTableARN"]

        step = "build table policy"
        want_policy = desired_table_policy(outputs, replica, result.table_arn, builder, failover_builder)
        step = "GetTablePolicy"
        try:
            live_policy: Any = json.loads(call(s3t.get_table_policy, **ident)["resourcePolicy"])
        except ClientError as exc:
            if error_code(exc) != "NotFoundException":
                raise
            live_policy = None
        policy_change = None
        # The document read back as written (what harden puts) needs no canonical form: equal documents are equal
        # policies; only a document written otherwise (order, single statements) is compared canonically.
        if live_policy is None or (
            live_policy != want_policy and canonical_policy(live_policy) != canonical_policy(want_policy)
        ):
            policy_change = HardenChange(
                "table-policy", live_policy, want_policy, _diff("table-policy", live_policy, want_policy)
            )
        if policy_change is None and not check_retention:
            return result  # hardened already: the policy locks the retention written before it

        step = "GetTableMaintenanceConfiguration"
        live_conf = call(s3t.get_table_maintenance_configuration, **ident).get("configuration", {})
        live_ret = _retention_compared(live_conf.get(SNAPSHOT))
        want_ret = desired_retention(replica)
        if live_ret != want_ret:
            result.changes.append(
                HardenChange("snapshot-retention", live_ret, want_ret, _diff("snapshot-retention", live_ret, want_ret))
            )
        if policy_change is not None:
            result.changes.append(policy_change)

        if not result.changes:
            return result
        if dry_run:
            result.outcome = "would-change"
            return result
        for change in result.changes:  # retention first, then the policy (see the module docstring)
            if change.kind == "snapshot-retention":
                step = "PutTableMaintenanceConfiguration"
                call(s3t.put_table_maintenance_configuration, type=SNAPSHOT, value=want_ret, **ident)
        for change in result.changes:
            if change.kind == "table-policy":
                step = "PutTablePolicy"
                call(s3t.put_table_policy, resourcePolicy=json.dumps(want_policy), **ident)
        result.outcome = "hardened"
    except ClientError as exc:
        result.outcome, result.reason = "failed", describe_error(exc)
    except Exception as exc:  # a bad policy document must not stop the other tables
        result.outcome, result.reason = "failed", f"{step}: {type(exc).__name__}: {exc}"
    return result


CHUNK = 500  # replica tables per worker-process job


def _harden_chunk(
    tables: list[TableRef],
    replica: HardenReplica,
    outputs: HardenOutputs,
    builder: TablePolicyBuilder,
    dry_run: bool,
    check_retention: bool,
    failover_builder: TablePolicyBuilder | None,
    concurrency: int,
    clients: Clients,
) -> list[HardenTableResult]:
    """One worker-process job: `harden_table` of each replica table, in order."""
    return run_concurrently(
        lambda t: harden_table(clients, t, replica, outputs, builder, dry_run, check_retention, failover_builder),
        tables,
        concurrency,
    )


def harden(
    clients: Clients,
    outputs: HardenOutputs,
    *,
    dry_run: bool = False,
    builder: TablePolicyBuilder | None = None,
    concurrency: int = 16,
    page_size: int | None = None,
    show_progress: bool = True,
    check_retention: bool = False,
    on_result: Callable[[HardenTableResult], None] | None = None,
    processes: int | None = 1,
) -> HardenReport:
    """Harden every replica. Results stream: `on_result` sees each one as it completes (the CLI prints dry-run diffs
    there); the report keeps the counts and only the results that are not "unchanged" (memory: the summary).
    `processes`: worker processes for the run (None: `processes_for` decides by the number of replica tables; the
    builders must then be module-level functions, as the defaults are)."""
    builder = builder or default_table_policy_builder()
    failover = any(s.failover is not None for s in outputs.sources)
    failover_builder = default_failover_table_policy_builder() if failover else None
    report = HardenReport(dry_run=dry_run, estate=outputs.several_sources)
    listed: list[tuple[HardenReplica, list[TableRef]]] = []
    for replica in outputs.replicas:
        try:
            listed.append((replica, list_tables(clients, replica.table_bucket_arn, page_size)))
            report.per_bucket.setdefault(replica.table_bucket_arn, {})  # an empty bucket is reported too
        except ClientError as exc:
            report.bucket_errors.append({"bucket_arn": replica.table_bucket_arn, "reason": describe_error(exc)})
    procs = processes_for(processes, sum(len(tables) for _, tables in listed))
    threads = max(1, concurrency // procs)
    with worker_pool(clients, procs) as pool:
        for replica, tables in listed:
            progress = Progress(
                f"harden {BucketRef(replica.table_bucket_arn).name}",
                len(tables),
                enabled=show_progress and len(tables) > 50,
            )
            results: Iterable[HardenTableResult]
            if pool is not None:
                jobs = [
                    functools.partial(
                        _harden_chunk, part, replica, outputs, builder, dry_run, check_retention, failover_builder,
                        threads,
                    )
                    for part in chunks(tables, CHUNK)
                ]  # fmt: skip
                results = (r for out in pool.map(jobs, progress) for r in out)
            else:
                results = stream_concurrently(
                    lambda t, r=replica: harden_table(  # type: ignore[misc]
                        clients, t, r, outputs, builder, dry_run, check_retention, failover_builder
                    ),
                    tables,
                    concurrency,
                    progress,
                )
            for result in results:
                report.add(result)
                if on_result is not None:
                    on_result(result)
    report.results.sort(key=lambda r: (r.bucket_arn, r.table))
    return report


def render_diffs(result: HardenTableResult) -> str:
    return "\n".join(
        f"# {result.table} in {BucketRef(result.bucket_arn).name}: {c.kind}\n{c.diff}" for c in result.changes
    )


def render(report: HardenReport, diffs: bool | None = None) -> str:
    """The summary; with `diffs` (default: in a dry run) every change's diff first (the CLI streams them instead)."""
    lines = []
    if report.dry_run if diffs is None else diffs:
        lines += [render_diffs(r) for r in report.results if r.changes]
    rows = [
        (
            r.table,
            BucketRef(r.bucket_arn).name,
            r.outcome.upper(),
            ", ".join(c.kind for c in r.changes) or "-",
            r.reason or "",
        )
        for r in report.results
        if r.outcome != "unchanged"
    ]
    if rows:
        lines.append(render_table(["TABLE", "BUCKET", "OUTCOME", "CHANGES", "REASON"], rows, max_width=100))
    for e in report.bucket_errors:
        lines.append(f"could not list {e['bucket_arn']}: {e['reason']}")
    counts = ", ".join(f"{report.count(k)} {k}" for k in OUTCOMES)
    lines.append(
        f"{report.total} tables in destination buckets: {counts}"
        + (" (dry run: nothing written)" if report.dry_run else "")
        + _render_buckets(report)
    )
    return "\n\n".join(lines)


def _render_buckets(report: HardenReport) -> str:
    """An estate's run names every destination bucket and its counts (outcomes that occurred)."""
    if not report.estate:
        return ""
    lines = []
    for b in report.by_bucket():
        counts = ", ".join(f"{n} {k}" for k, n in b["counts"].items() if n) or "no tables"
        lines.append(f"\n  {BucketRef(b['bucket_arn']).name}: {sum(b['counts'].values())} tables: {counts}")
    return "".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = tool_parser("harden", __doc__)
    add_common_args(p)
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument(
        "--check-retention",
        action="store_true",
        help="also read the retention of replicas whose table policy is right (two reads per replica, not one)",
    )
    args = p.parse_args(argv)
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    try:
        outputs = load_outputs(args.outputs)
    except OutputsError as err:
        return refuse(err)

    def stream(result: HardenTableResult) -> None:  # dry-run diffs as they come, not kept for the end
        if args.dry_run and not args.json and result.changes:
            print(render_diffs(result) + "\n", flush=True)

    report = harden(
        clients_from_args(args),
        outputs,
        dry_run=args.dry_run,
        check_retention=args.check_retention,
        on_result=stream,
        **run_options(args),
    )
    return emit(report, as_json=args.json, render=lambda: render(report, diffs=False))


if __name__ == "__main__":
    sys.exit(main())
