"""The backup's report, as the recovery's: a readable summary on stdout and `report.{md,json}` in a directory of the
run (pure apart from writing the files)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.kernel.render import render_table
from s3tables_kit.jobs.vault.backup import TableBackup

OK_STATUSES = ("backed-up", "already-backed-up", "committed-by-another-run")


def exit_code(rows: Sequence[TableBackup]) -> int:
    """0 when every table has its point, 1 when some table failed (the others completed)."""
    return 0 if all(r.status in OK_STATUSES for r in rows) else 1


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def summary_text(rows: Sequence[TableBackup]) -> str:
    table = render_table(
        ("table", "status", "snapshot", "files", "copied", "copied MB", "reused", "rewritten", "extended", "s"),
        [
            (
                r.table,
                r.status,
                r.snapshot_id or "-",
                r.files,
                r.copied,
                _mb(r.bytes_copied),
                r.reused + r.adopted,
                r.restorable,
                r.extended,
                f"{r.seconds:.1f}",
            )
            for r in rows
        ],
    )
    failed = [r for r in rows if r.status not in OK_STATUSES]
    lines = [table, f"{len(rows) - len(failed)} ok, {len(failed)} failed"]
    lines += [f"  {r.table}: {r.error}" for r in failed]
    return "\n".join(lines)


def summary_markdown(rows: Sequence[TableBackup], header: Mapping[str, Any]) -> str:
    lines = ["# Backup summary", ""] + [f"- {k}: {v}" for k, v in header.items()]
    lines += [
        "",
        "| table | status | snapshot | point | files | bytes | copied | copied bytes | adopted | reused | read back "
        "| rewritten | rewritten bytes | extended | copy s | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.table} | {r.status} | {r.snapshot_id or '-'} | `{r.point or '-'}` | {r.files} | {r.bytes_total} | "
            f"{r.copied} | {r.bytes_copied} | {r.adopted} | {r.reused} | {r.digested} | {r.restorable} | "
            f"{r.restorable_bytes} | {r.extended} | {r.copy_seconds:.2f} | {r.seconds:.2f} |"
        )
    failed = [r for r in rows if r.status not in OK_STATUSES]
    if failed:
        lines += ["", "Failures:", ""] + [f"- `{r.table}`: {r.error}" for r in failed]
    return "\n".join(lines) + "\n"


def write_reports(report_dir: Path, rows: Sequence[TableBackup], header: Mapping[str, Any]) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    doc = {**header, "exit_code": exit_code(rows), "tables": [r.as_dict() for r in rows]}
    (report_dir / "report.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    (report_dir / "report.md").write_text(summary_markdown(rows, header))
    return report_dir / "report.md"
