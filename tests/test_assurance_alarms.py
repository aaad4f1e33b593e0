"""docs/assurance.md lists every alarm of every example's synthesized stacks, each with the signal it reads and who
could write that signal: its table ("alarm | signal it reads | who could write that signal | what a forged datum can
do") has a row whose alarm names match the alarm (`<prefix>`/`<kit>` and `<replica>` stand for names), whose signal
cell names the namespace and every metric the alarm reads, and whose writers' cell is not empty."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from s3tables_kit.topology import paths

pytestmark = pytest.mark.synth
DOC = paths.ROOT / "docs" / "assurance.md"
Row = tuple[list[re.Pattern[str]], str, str]


def alarm_rows(text: str) -> list[Row]:
    """(name patterns, signal cell, writers cell) of each row of the alarms' table."""
    out: list[Row] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 4:
            continue
        names = [t for t in re.findall(r"`([^`]+)`", cells[0]) if t.startswith("<")]
        rx = [re.sub(r"<[a-z]+>", ".+", re.sub(r"<(?:prefix|kit)>", "[a-z0-9-]+", re.escape(t))) for t in names]
        out.append(([re.compile(f"{r}$".replace(r"\<", "<").replace(r"\>", ">")) for r in rx], cells[1], cells[2]))
    return out


def _reads(alarm: dict[str, Any]) -> list[tuple[str, str]]:
    """(namespace, metric) of the alarm's metric, or of each metric of its metric math."""
    if "metric_name" in alarm:
        return [(alarm["namespace"], alarm["metric_name"])]
    return [(q["metric"]["namespace"], q["metric"]["metric_name"]) for q in alarm["metric_query"] if "metric" in q]


def undocumented(stacks: dict[str, dict[str, Any]], rows: list[Row]) -> list[str]:
    """One line per alarm without a row, or whose row does not name what it reads or who could write it."""
    out = []
    for stack in stacks.values():
        for alarm in stack.get("resource", {}).get("aws_cloudwatch_metric_alarm", {}).values():
            name = alarm["alarm_name"]
            row = next((r for r in rows if any(p.match(name) for p in r[0])), None)
            if row is None:
                out.append(f"{name}: no row")
                continue
            missing = [f"`{x}`" for ns, metric in _reads(alarm) for x in (ns, metric) if f"`{x}`" not in row[1]]
            out += [f"{name}: the row does not name {m}" for m in dict.fromkeys(missing)]
            out += [f"{name}: the row names no writer"] if not row[2] else []
    return out


def test_every_alarm_is_listed_with_its_signal_and_its_writers(synthesized: dict[str, dict[str, Any]]) -> None:
    rows = alarm_rows(DOC.read_text(encoding="utf-8"))
    assert len(rows) >= 12
    problems = [f"{ex}: {p}" for ex, stacks in synthesized.items() for p in undocumented(stacks, rows)]
    assert problems == []
    alarms = sum(len(s.get("resource", {}).get("aws_cloudwatch_metric_alarm", {})) for x in synthesized.values()
                 for s in x.values())  # fmt: skip
    assert alarms >= 200  # every example's alarms were read


def test_the_check_names_an_alarm_missing_from_the_table_or_a_signal_its_row_omits(
    synthesized: dict[str, dict[str, Any]],
) -> None:
    stacks = copy.deepcopy(synthesized["seed"])
    rows = alarm_rows(DOC.read_text(encoding="utf-8"))
    alarms = stacks["source"]["resource"]["aws_cloudwatch_metric_alarm"]
    lag = next(a for a in alarms.values() if a.get("metric_name") == "ReplicationLagSeconds")
    lag["metric_name"] = "SomethingElse"
    new = copy.deepcopy(lag) | {"alarm_name": "seed-a-new-alarm"}
    alarms["new"] = new
    assert sorted(undocumented({"source": stacks["source"]}, rows)) == [
        "seed-a-new-alarm: no row",
        f"{lag['alarm_name']}: the row does not name `SomethingElse`",
    ]
