"""Harden the replica tables the S3 Tables service created: table policy + replica snapshot retention.

    python -m jobs.ops.harden --outputs outputs.json [--dry-run] [--json]

For each destination bucket in the outputs, every table whose ``get_table`` shows
``managedTableInformation.replicationInformation.sourceTableARN`` is a replica. For each replica:

1. snapshot retention: ``icebergSnapshotManagement`` = the replica's ``snapshot_retention`` from the outputs
   (written first: the table policy denies ``PutTableMaintenanceConfiguration`` to everyone but the
   break-glass
   principals, so a run by any other principal still leaves the retention right before it locks the table);
2. table policy: ``policies.documents.replica_table_policy`` for the table's UUID-scoped ARN.

A table without that information is not a replica and is never hardened as one; a table the outputs list as
replicated (``replicated_tables``) that has none is reported as ``detached``: it was disassociated from replication
(``DisassociateTableReplication``, permanent; README 'Detached replicas'), so it is a standalone writable table now.

Both are compared with the live state (policies in canonical form) and written only when they differ, so a
second
run changes nothing. ``--dry-run`` prints the diff and writes nothing. Exit 1 when any replica could not be
hardened (each is reported with the failing call and its error).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from jobs.ops.clients import Clients
from jobs.ops.common import (
    BucketRef,
    Progress,
    TableRef,
    add_common_args,
    call,
    canonical_policy,
    clients_from_args,
    describe_error,
    emit,
    error_code,
    list_tables,
    render_table,
    run_concurrently,
)
from topology.outputs import KitOutputs, ReplicaOut

TablePolicyBuilder = Callable[..., dict[str, Any]]
SNAPSHOT = "icebergSnapshotManagement"


def default_table_policy_builder() -> TablePolicyBuilder:
    """`policies.documents.replica_table_policy(*, table_arn, break_glass_principals, replication_role_arn,
    deploy_role_arns)`,
    imported lazily so the other ops modules work without `policies/`."""
    from policies.documents import replica_table_policy  # type: ignore[import-not-found,unused-ignore]

    return replica_table_policy  # type: ignore[no-any-return,unused-ignore]


@dataclass
class Change:
    kind: str  # "table-policy" | "snapshot-retention"
    before: Any
    after: Any
    diff: str


@dataclass
class TableResult:
    bucket_arn: str
    table: str
    table_arn: str
    source_table_arn: str | None
    outcome: str  # hardened | would-change | unchanged | failed | skipped | detached
    changes: list[Change] = field(default_factory=list)
    reason: str | None = None


@dataclass
class HardenReport:
    dry_run: bool
    results: list[TableResult] = field(default_factory=list)
    bucket_errors: list[dict[str, str]] = field(default_factory=list)

    def by(self, outcome: str) -> list[TableResult]:
        return [r for r in self.results if r.outcome == outcome]

    @property
    def exit_code(self) -> int:
        return 1 if self.by("failed") or self.bucket_errors else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "counts": {k: len(self.by(k)) for k in OUTCOMES},
            "bucket_errors": self.bucket_errors,
            "exit_code": self.exit_code,
            "tables": [asdict(r) for r in self.results],
        }


OUTCOMES = ("hardened", "would-change", "unchanged", "failed", "skipped", "detached")
DETACHED_REASON = (
    "DETACHED: replicated by the configuration but no longer managed by S3 Tables replication (disassociated, "
    "permanent): not a replica any more, so not hardened as one; see `status` and `audit`"
)


def desired_retention(replica: ReplicaOut) -> dict[str, Any]:
    return {
        "status": "enabled",
        "settings": {
            SNAPSHOT: {
                "minSnapshotsToKeep": replica.snapshot_retention.min_snapshots_to_keep,
                "maxSnapshotAgeHours": replica.snapshot_retention.max_snapshot_age_hours,
            }
        },
    }


def _retention_view(value: dict[str, Any] | None) -> dict[str, Any] | None:
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
    replica: ReplicaOut,
    outputs: KitOutputs,
    builder: TablePolicyBuilder,
    dry_run: bool,
) -> TableResult:
    b = BucketRef(table.bucket_arn)
    s3t = clients.s3tables(b.region, b.account)
    ident: dict[str, Any] = {
        "tableBucketARN": table.bucket_arn,
        "namespace": table.namespace,
        "name": table.name,
    }
    result = TableResult(table.bucket_arn, table.qualified, table.arn, None, "unchanged")
    step = "GetTable"
    try:
        got = call(s3t.get_table, **ident)
        result.table_arn = got["tableARN"]
        source = ((got.get("managedTableInformation") or {}).get("replicationInformation") or {}).get("sourceTableARN")
        if not source:
            if table.qualified in outputs.source.replicated_tables:
                result.outcome, result.reason = "detached", DETACHED_REASON
            else:
                result.outcome, result.reason = (
                    "skipped",
                    "not a replica (no managedTableInformation.replicationInformation)",
                )
            return result
        result.source_table_arn = source

        step = "GetTableMaintenanceConfiguration"
        live_conf = call(s3t.get_table_maintenance_configuration, **ident).get("configuration", {})
        live_ret = _retention_view(live_conf.get(SNAPSHOT))
        want_ret = desired_retention(replica)
        if live_ret != want_ret:
            result.changes.append(
                Change("snapshot-retention", live_ret, want_ret, _diff("snapshot-retention", live_ret, want_ret))
            )

        step = "build table policy"
        want_policy = builder(
            table_arn=result.table_arn,
            break_glass_principals=list(replica.break_glass_principals),
            replication_role_arn=outputs.source.replication_role_arn,
            deploy_role_arns=list(replica.deploy_role_arns),
        )
        step = "GetTablePolicy"
        try:
            live_policy: Any = json.loads(call(s3t.get_table_policy, **ident)["resourcePolicy"])
        except ClientError as exc:
            if error_code(exc) != "NotFoundException":
                raise
            live_policy = None
        if live_policy is None or canonical_policy(live_policy) != canonical_policy(want_policy):
            result.changes.append(
                Change("table-policy", live_policy, want_policy, _diff("table-policy", live_policy, want_policy))
            )

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


def harden(
    clients: Clients,
    outputs: KitOutputs,
    *,
    dry_run: bool = False,
    builder: TablePolicyBuilder | None = None,
    concurrency: int = 16,
    page_size: int | None = None,
    show_progress: bool = True,
) -> HardenReport:
    builder = builder or default_table_policy_builder()
    report = HardenReport(dry_run=dry_run)
    work: list[tuple[TableRef, ReplicaOut]] = []
    for replica in outputs.replicas:
        try:
            work.extend((t, replica) for t in list_tables(clients, replica.table_bucket_arn, page_size))
        except ClientError as exc:
            report.bucket_errors.append({"bucket_arn": replica.table_bucket_arn, "reason": describe_error(exc)})
    progress = Progress("harden", len(work), enabled=show_progress and len(work) > 50)
    report.results = run_concurrently(
        lambda item: harden_table(clients, item[0], item[1], outputs, builder, dry_run),
        work,
        concurrency,
        progress,
    )
    return report


def render(report: HardenReport) -> str:
    lines = []
    if report.dry_run:
        for r in report.results:
            for c in r.changes:
                lines.append(f"# {r.table} in {BucketRef(r.bucket_arn).name}: {c.kind}\n{c.diff}")
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
    counts = ", ".join(f"{len(report.by(k))} {k}" for k in OUTCOMES)
    lines.append(
        f"{len(report.results)} tables in destination buckets: {counts}"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    return "\n\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.ops.harden", description=__doc__.split("\n\n")[0])
    add_common_args(p)
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    args = p.parse_args(argv)
    from topology.outputs import load_outputs

    report = harden(
        clients_from_args(args),
        load_outputs(args.outputs),
        dry_run=args.dry_run,
        concurrency=args.concurrency,
        page_size=args.page_size,
        show_progress=not args.quiet,
    )
    return emit(report, as_json=args.json, render=lambda: render(report))


if __name__ == "__main__":
    sys.exit(main())
