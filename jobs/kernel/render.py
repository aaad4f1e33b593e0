"""Reports as the tools print them: aligned text tables, durations (`1h05m`), JSON for machines, and the exit code
a report carries. Standard library only: the monitor's Lambda package ships this module."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any, TextIO

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> timedelta:
    """`30m`, `2h`, `1h30m`, `90s`, `1d` -> timedelta. A bare number is minutes."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return timedelta(minutes=float(s))
    pos, total = 0, 0.0
    for m in _DURATION_RE.finditer(s):
        if s[pos : m.start()].strip():
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        raise ValueError(f"duration {text!r} is not like 30m, 2h, 1h30m, 90s or 1d")
    return timedelta(seconds=total)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], max_width: int = 60) -> str:
    cells = [[str(h) for h in headers]] + [[_clip(str(c), max_width) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _clip(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def dump_json(doc: Any, stream: TextIO | None = None) -> None:
    json.dump(doc, stream or sys.stdout, indent=2, sort_keys=True, default=str)
    (stream or sys.stdout).write("\n")


def emit(report: Any, *, as_json: bool, render: Callable[[], str]) -> int:
    """Print a report (JSON for machines, the rendered table for people) and return its exit code."""
    if as_json:
        dump_json(report.to_json())
    else:
        print(render())
    return int(report.exit_code)
