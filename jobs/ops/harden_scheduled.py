"""The scheduled hardener: `harden` of every replica bucket of one source, run by EventBridge Scheduler as a Lambda
function (`infra/constructs/replica_hardener.py`), so that a replica the service creates in bucket mode gets its
table policy and retention within one interval, without a person.

What it writes comes from its package, not from the outputs contract (the Lambda runtime has no pydantic): the
plan file (`s3tables_kit.topology.contract.HARDEN_PLAN_FILE`), written at synth from the configuration and the reviewed
documents, holds each replica bucket's configured retention and its reviewed table policy with a placeholder where
the table's ARN goes. A change of either is a change of the package, deployed like code. The function's role is a
break-glass principal of the configuration (the table policy and retention of a replica are break-glass only) whose
own policy allows harden's reads and its two writes on the replica buckets and nothing else (docs/assurance.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from s3tables_kit.jobs.kernel.clients import Clients, resolve_endpoint
from s3tables_kit.jobs.ops.harden import HardenReport, harden
from s3tables_kit.topology import paths
from s3tables_kit.topology.contract import HARDEN_PLAN_FILE, HARDEN_REPLICAS, HARDEN_TABLE_ARN


class PlannedRetention(NamedTuple):
    """A replica bucket's configured retention, as the plan file states it."""

    max_snapshot_age_hours: int
    min_snapshots_to_keep: int


@dataclass(frozen=True)
class PlannedReplica:
    """One replica bucket as the plan file states it (what `harden` reads of a `ReplicaOut`)."""

    table_bucket_arn: str
    snapshot_retention: PlannedRetention
    table_policy: str  # the reviewed document as JSON, HARDEN_TABLE_ARN where the table's ARN goes
    break_glass_principals: Sequence[str] = ()
    deploy_role_arns: Sequence[str] = ()
    hardener_principals: Sequence[str] = ()


@dataclass(frozen=True)
class PlannedSource:
    replication_role_arn: str = ""
    failover: object | None = None


@dataclass(frozen=True)
class HardenPlan:
    """The outputs `harden` reads, from the plan file: the replicas, no failover (a promoted topology's stacks carry
    no hardener), and every table of a replica bucket is a replica the service made (none is `detached`: that is
    `audit`'s finding, and the hardener never writes to a table that is not a replica)."""

    replicas: Sequence[PlannedReplica]
    sources: Sequence[PlannedSource] = field(default_factory=tuple)
    several_sources: bool = False

    def replicated_tables_into(self, replica: Any) -> list[str]:
        return []

    def is_failover_destination(self, replica: Any) -> bool:
        return False

    def sources_into(self, replica: Any) -> Sequence[PlannedSource]:
        return ()

    def table_policy_writers(self, replica: Any) -> list[str]:
        return []

    def table_policy(self, *, table_arn: str, **_: Any) -> dict[str, Any]:
        """The builder `harden` calls: the reviewed document of the table's bucket, for this table."""
        bucket_arn = table_arn.split("/table/")[0]
        planned = next(r for r in self.replicas if r.table_bucket_arn == bucket_arn)
        doc: dict[str, Any] = json.loads(planned.table_policy.replace(HARDEN_TABLE_ARN, table_arn))
        return doc


def load_plan(doc: dict[str, Any]) -> HardenPlan:
    return HardenPlan(
        replicas=tuple(
            PlannedReplica(
                table_bucket_arn=str(r["table_bucket_arn"]),
                snapshot_retention=PlannedRetention(int(r["max_snapshot_age_hours"]), int(r["min_snapshots_to_keep"])),
                table_policy=json.dumps(r["table_policy"]),
            )
            for r in doc[HARDEN_REPLICAS]
        )
    )


def run_scheduled(clients: Clients, plan: HardenPlan) -> HardenReport:
    """One scheduled run: every replica of the plan's buckets gets its retention and table policy where they differ
    (one read per replica already hardened)."""
    return harden(clients, plan, builder=plan.table_policy, show_progress=False, processes=1)


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point: the plan from the package; exit status as the summary's `exit_code` (1: some replica
    could not be hardened, which the monitor's layers alarm then reports)."""
    plan = load_plan(json.loads((paths.ROOT / HARDEN_PLAN_FILE).read_text(encoding="utf-8")))
    clients = Clients(endpoint_url=resolve_endpoint(None))
    report = run_scheduled(clients, plan)
    summary = {k: v for k, v in report.to_json().items() if k in ("counts", "bucket_errors", "exit_code")}
    summary["failed"] = [{"table": r.table_arn, "reason": r.reason} for r in report.by("failed")]
    print(json.dumps(summary))  # one log line per run in the function's log group
    return summary
