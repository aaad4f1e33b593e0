"""What a promotion did, table by table: the outcome of each table, the summary the run prints, and the report it
writes (`<dir>/<UTC time>-<run id>/report.{json,md}`, the layout of the recovery job's reports)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.failover import model as failover_model


@dataclass
class TableOutcome:
    table: str
    table_arn: str
    verdict: str  # promoted | converged | skipped | failed
    source_table_arn: str | None = None
    snapshot_id: int | None = None
    snapshot_committed_at: str | None = None
    rpo: str = ""
    rpo_seconds: float | None = None
    point_in_time: bool = False
    rto_seconds: float | None = None  # from the run's start to this table writable and verified
    steps: dict[str, float] = field(default_factory=dict)  # step -> seconds
    partitions: int | None = None
    rows: int | None = None
    protection: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict in ("promoted", "converged", "skipped")


def worst_rpo(plan: failover_model.FailoverPlan) -> str:
    active = [t for t in plan.tables if t.step is not failover_model.FailoverStep.SKIP]
    unknown = [t.rpo.at_least_since for t in active if t.rpo.lacking_commits is None and t.rpo.at_least_since]
    if unknown:
        return f"at least since {min(unknown)} (source unreachable)"
    secs = [t.rpo.seconds or 0.0 for t in active]
    n = sum(t.rpo.lacking_commits or 0 for t in active)
    return f"{n} commit(s) lacking, worst {failover_model.format_seconds(max(secs, default=0.0))}"


def summary(outcomes: Sequence[TableOutcome], header: dict[str, Any]) -> str:
    from s3tables_kit.jobs.kernel.render import render_table

    body = render_table(
        ["TABLE", "VERDICT", "SNAPSHOT", "PIT", "RPO", "RTO", "ROWS", "MESSAGE"],
        [
            (
                o.table,
                o.verdict,
                o.snapshot_id or "-",
                "yes" if o.point_in_time else "-",
                o.rpo,
                failover_model.format_seconds(o.rto_seconds),
                "-" if o.rows is None else o.rows,
                o.message,
            )
            for o in outcomes
        ],
    )
    ok = sum(o.ok for o in outcomes)
    return f"{body}\n\n{ok} ok, {len(outcomes) - ok} failed. RPO: {header['rpo']}. RTO: {header['rto_seconds']:.1f}s"


def write_report(
    report_dir: Path | None,
    started: datetime,
    run_id: str,
    header: dict[str, Any],
    plan: failover_model.FailoverPlan,
    outcomes: Sequence[TableOutcome],
) -> Path:
    """`<dir>/<UTC time>-<run id>/report.{json,md}`, the layout of the recovery job's reports."""
    assert report_dir is not None
    d = report_dir / f"{started:%Y%m%dT%H%M%SZ}-{run_id}"
    d.mkdir(parents=True, exist_ok=True)
    doc = {**header, "plan": plan.as_dict(), "tables": [o.__dict__ for o in outcomes]}
    (d / "report.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    lines = ["# Failover report", "", *[f"- {k}: {v}" for k, v in header.items()], "", "## Steps", ""]
    lines += [f"- {s}" for s in plan.steps()]
    lines += [
        "",
        "## Tables",
        "",
        "| table | verdict | snapshot | committed at | point in time | RPO | RTO s | partitions | rows "
        "| protected by now |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {o.table} | {o.verdict} | {o.snapshot_id} | {o.snapshot_committed_at} | {o.point_in_time} | {o.rpo} | "
        f"{o.rto_seconds} | {o.partitions} | {o.rows} | {o.protection} |"
        for o in outcomes
    ]
    problems = [o for o in outcomes if not o.ok or o.message]
    if problems:
        lines += ["", "## Messages", "", *[f"- `{o.table}`: {o.message}" for o in problems]]
    if any(o.point_in_time for o in outcomes):
        lines += ["", failover_model.PIT_WARNING]
    (d / "report.md").write_text("\n".join(lines) + "\n")
    return d / "report.md"
