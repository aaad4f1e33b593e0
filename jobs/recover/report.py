"""Per-table and summary reports (JSON + Markdown), pure rendering plus a small writer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TableResult:
    replica_table: str
    target_table: str
    verdict: str  # verified | skipped | failed | refused | planned
    snapshot_id: int | None = None
    snapshot_committed_at: str | None = None
    rows: int | None = None
    files: int | None = None
    bytes: int | None = None
    plan_seconds: float = 0.0
    copy_seconds: float = 0.0
    verify_seconds: float = 0.0
    action: str = ""
    message: str = ""
    verification: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    copy_mode: str = "ctas"  # files | ctas: what this run did (or planned)
    copy_mode_reason: str = ""
    verification_method: str = ""
    expected_rows: int | None = None  # from the plan; `rows` is only set for a table that was copied and counted
    properties_as_of: str = ""
    leftovers: list[str] = field(default_factory=list)  # objects a failed attempt left in the target location
    leftover_note: str = ""
    copy_mb_per_s: float | None = None
    cause: dict[str, Any] | None = None  # a JVM failure's deepest Java cause: class, message, first frames
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase (batched file copy)

    @property
    def ok(self) -> bool:
        return self.verdict in ("verified", "skipped", "planned")

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def table_markdown(r: TableResult) -> str:
    lines = [
        f"# Recovery of `{r.replica_table}` -> `{r.target_table}`",
        "",
        f"**Verdict: {r.verdict.upper()}**" + (f" — {r.message}" if r.message else ""),
        "",
        "| item | value |",
        "|---|---|",
        f"| replica snapshot | {r.snapshot_id} |",
        f"| snapshot committed at | {r.snapshot_committed_at} |",
        f"| action | {r.action} |",
        f"| copy mode | {r.copy_mode} ({r.copy_mode_reason}) |",
        f"| properties | {r.properties_as_of} |",
        f"| verification | {r.verification_method or '-'} |",
        f"| rows | {r.rows} |",
        f"| data files (target) | {r.files} |",
        f"| bytes (target) | {r.bytes} |",
        f"| plan seconds | {r.plan_seconds:.2f} |",
        f"| copy seconds | {r.copy_seconds:.2f} |",
        f"| verify seconds | {r.verify_seconds:.2f} |",
    ]
    if r.phases:
        lines.append("| phases (s) | " + ", ".join(f"{k} {v:.3f}" for k, v in r.phases.items()) + " |")
    if r.warnings:
        lines += ["", "## Warnings", "", *[f"- {w}" for w in r.warnings]]
    if r.cause:
        lines += ["", "## Cause (deepest Java exception)", "", f"`{r.cause['class']}`: {r.cause['message']}", ""]
        lines += ["```", *r.cause.get("frames", []), "```"]
    if r.leftovers or r.leftover_note:
        lines += ["", "## Left behind by this attempt", "", r.leftover_note or "", ""]
        lines += [f"- `{u}`" for u in r.leftovers[:50]]
        if len(r.leftovers) > 50:
            lines.append(f"- ... {len(r.leftovers) - 50} more (all of them in the JSON report)")
    v = r.verification
    if v:
        lines += [
            "",
            "## Verification",
            "",
            f"- rows: replica {v['source_rows']}, target {v['target_rows']}; partitions compared: {v['partitions']}",
            f"- method: {r.verification_method or 'per-partition count + sum(xxhash64(row)) + sum(hash(row))'}",
        ]
        lines += [f"- problem: {p}" for p in v["problems"]]
        if v.get("missing_sample") or v.get("extra_sample"):
            lines += ["", "Sample (EXCEPT ALL):", "", "```"]
            lines += [f"- in replica only: {json.dumps(x, default=str)}" for x in v["missing_sample"]]
            lines += [f"+ in target only:  {json.dumps(x, default=str)}" for x in v["extra_sample"]]
            lines += ["```"]
    return "\n".join(lines) + "\n"


def summary_table(results: list[TableResult]) -> str:
    hdr = (
        f"{'replica table':<28} {'target':<30} {'verdict':<9} {'mode':<5} {'snapshot':<20} {'rows':>9} {'files':>5} "
        f"{'plan s':>6} {'copy s':>6} {'verif s':>7}"
    )
    lines = [hdr, "-" * len(hdr)]
    for r in results:
        lines.append(
            f"{r.replica_table:<28} {r.target_table:<30} {r.verdict:<9} {r.copy_mode:<5} {r.snapshot_id or '-'!s:<20} "
            f"{_n(r.rows):>9} {_n(r.files):>5} {r.plan_seconds:>6.1f} {r.copy_seconds:>6.1f} {r.verify_seconds:>7.1f}"
        )
    failed = [r for r in results if not r.ok]
    lines.append(f"{len(results) - len(failed)} ok, {len(failed)} failed")
    lines.extend(f"  {r.replica_table} -> {r.target_table}: {r.message}" for r in failed if r.message)
    return "\n".join(lines)


def summary_markdown(results: list[TableResult], header: dict[str, Any]) -> str:
    lines = ["# Recovery summary", ""]
    lines += [f"- {k}: {v}" for k, v in header.items()]
    lines += [
        "",
        "| replica table | target | verdict | mode | snapshot | committed at | rows | files | bytes "
        "| plan s | copy s | verify s | verification |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.replica_table} | {r.target_table} | {r.verdict} | {r.copy_mode} | {r.snapshot_id} | "
            f"{r.snapshot_committed_at} | {_n(r.rows)} | {_n(r.files)} | {_n(r.bytes)} | {r.plan_seconds:.2f} | "
            f"{r.copy_seconds:.2f} | {r.verify_seconds:.2f} | {r.verification_method or '-'} |"
        )
    failed = [r for r in results if not r.ok and r.message]
    if failed:
        lines += ["", "Failures:", ""] + [f"- `{r.target_table}`: {r.message}" for r in failed]
    return "\n".join(lines) + "\n"


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)


def write_reports(report_dir: Path, results: list[TableResult], header: dict[str, Any]) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    for r in results:
        stem = f"{r.replica_table}--{r.target_table}".replace("/", "_")
        (report_dir / f"{stem}.json").write_text(json.dumps(r.as_dict(), indent=2, default=str) + "\n")
        (report_dir / f"{stem}.md").write_text(table_markdown(r))
    (report_dir / "report.json").write_text(
        json.dumps({**header, "tables": [r.as_dict() for r in results]}, indent=2, default=str) + "\n"
    )
    (report_dir / "report.md").write_text(
        summary_markdown(results, header) + "".join("\n---\n\n" + table_markdown(r) for r in results)
    )
    return report_dir / "report.md"
