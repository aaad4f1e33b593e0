"""Figures, goals and ratios of a benchmark run, rendered as a console table, Markdown and JSON (pure apart from
`machine_info`, which reads /proc and package metadata)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from s3tables_kit.topology.paths import ROOT


@dataclass(frozen=True)
class Goal:
    op: str  # ">=", "<=", "<", ">"
    target: float

    def met(self, value: float | None) -> bool | None:
        if value is None:
            return None
        return {
            ">=": value >= self.target,
            "<=": value <= self.target,
            "<": value < self.target,
            ">": value > self.target,
        }[self.op]

    def __str__(self) -> str:
        t = f"{self.target:g}"
        return f"{self.op} {t}"


@dataclass
class Measurement:
    """One timed thing (seconds), optionally with the rows and bytes it processed."""

    section: str
    name: str
    seconds: float | None
    rows: int | None = None
    bytes: int | None = None
    note: str = ""
    load: tuple[float, float] | None = None  # 1-minute load average at start and end

    @property
    def rows_per_s(self) -> float | None:
        return self.rows / self.seconds if self.rows and self.seconds else None

    @property
    def mb_per_s(self) -> float | None:
        return self.bytes / 1e6 / self.seconds if self.bytes and self.seconds else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows_per_s"] = self.rows_per_s
        d["mb_per_s"] = self.mb_per_s
        return d


@dataclass
class Comparison:
    """A ratio of two measurements of the same run, or an absolute figure, against its goal."""

    section: str
    name: str
    value: float | None
    unit: str  # "x" for ratios, else the unit of an absolute figure ("s", "GB")
    how: str  # how the value is computed, e.g. "CTAS s / kit copy s"
    goal: Goal | None = None
    note: str = ""
    rounds: list[float] | None = None  # interleaved rounds: `value` is their median; the goal must hold in the worst

    @property
    def worst(self) -> float | None:
        if not self.rounds or not self.goal:
            return self.value
        return min(self.rounds) if self.goal.op in (">=", ">") else max(self.rounds)

    @property
    def met(self) -> bool | None:
        return self.goal.met(self.worst) if self.goal else None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"goal": str(self.goal) if self.goal else None, "met": self.met, "worst": self.worst}


def median(xs: list[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def rounds_comparison(section: str, name: str, values: list[float | None], unit: str, how: str,
                      goal: Goal | None = None) -> Comparison:  # fmt: skip
    """A ratio measured in interleaved rounds: median as the value, the goal judged on the worst round."""
    vs = [v for v in values if v is not None]
    return Comparison(section, name, median(vs), unit, how, goal, rounds=vs or None)


def fmt_value(c: Comparison) -> str:
    v = fmt_num(c.value, c.unit)
    if c.rounds and len(c.rounds) > 1:
        lo, hi = min(c.rounds), max(c.rounds)
        v = f"median {v} (range {fmt_num(lo, c.unit)}-{fmt_num(hi, c.unit)}, {len(c.rounds)} rounds)"
    return v


@dataclass
class Results:
    scale: str
    machine: dict[str, Any] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)  # title -> preformatted text
    extra: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Results:
        """Back from `as_dict()` (comparisons and notes are recomputed by the caller)."""
        ms = []
        for m in d.get("measurements", []):
            fields = {k: v for k, v in m.items() if k not in ("rows_per_s", "mb_per_s")}
            if fields.get("load") is not None:
                fields["load"] = tuple(fields["load"])
            ms.append(Measurement(**fields))
        return cls(
            scale=d["scale"],
            machine=dict(d.get("machine", {})),
            measurements=ms,
            profiles=dict(d.get("profiles", {})),
            extra=dict(d.get("extra", {})),
            errors=list(d.get("errors", [])),
        )

    def find(self, section: str, name: str) -> Measurement | None:
        return next((m for m in self.measurements if m.section == section and m.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "machine": self.machine,
            "measurements": [m.as_dict() for m in self.measurements],
            "comparisons": [c.as_dict() for c in self.comparisons],
            "notes": self.notes,
            "profiles": self.profiles,
            "extra": self.extra,
            "errors": self.errors,
        }


# --- arithmetic -------------------------------------------------------------------------------------------------


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def speedup(baseline_seconds: float | None, kit_seconds: float | None) -> float | None:
    """How many times faster the kit is than the baseline on the same work (= kit throughput / baseline's)."""
    return ratio(baseline_seconds, kit_seconds)


# --- formatting -------------------------------------------------------------------------------------------------


def fmt_num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if unit == "x":
        return f"{v:.2f}x"
    if unit in ("rows/s",):
        return f"{v / 1e6:.2f} M rows/s" if v >= 1e6 else f"{v / 1e3:.0f} k rows/s"
    if unit == "MB/s":
        return f"{v:,.0f} MB/s" if v >= 100 else f"{v:.1f} MB/s"
    if unit == "s":
        return f"{v:.2f} s" if v < 10 else f"{v:.1f} s"
    if unit == "GB":
        return f"{v:.2f} GB"
    return f"{v:g} {unit}".strip()


def verdict(met: bool | None) -> str:
    return {True: "met", False: "NOT met", None: "-"}[met]


def _count(n: int | None) -> str:
    if n is None:
        return "-"
    if n >= 1_000_000:
        return f"{n / 1e6:g} M"
    if n >= 1000:
        return f"{n / 1e3:g} k"
    return str(n)


def _mb(b: int | None) -> str:
    return "-" if b is None else f"{b / 1e6:,.1f}"


def console_table(res: Results) -> str:
    lines = []
    w = max([len(c.name) for c in res.comparisons] + [10])
    lines.append(f"{'goal / ratio':<{w}}  {'value':>12}  {'goal':>8}  verdict")
    for c in res.comparisons:
        lines.append(f"{c.name:<{w}}  {fmt_value(c):>12}  {(str(c.goal) if c.goal else '-'):>8}  {verdict(c.met)}")
    lines.append("")
    w = max([len(m.name) for m in res.measurements] + [10])
    lines.append(f"{'measurement':<{w}}  {'seconds':>9}  {'rows':>8}  {'rows/s':>14}  {'MB/s':>10}")
    for m in res.measurements:
        lines.append(
            f"{m.name:<{w}}  {fmt_num(m.seconds, 's'):>9}  {_count(m.rows):>8}  "
            f"{fmt_num(m.rows_per_s, 'rows/s'):>14}  {fmt_num(m.mb_per_s, 'MB/s'):>10}"
        )
    return "\n".join(lines)


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def render_markdown(res: Results) -> str:
    m = res.machine
    out = [
        "# Benchmarks",
        "",
        f"Generated by `make bench` (`BENCH_SCALE={res.scale}`, `python -m bench.run`) on {m.get('date', '?')}. "
        "Every ratio compares two figures measured in the same run on the same machine; the kit's figures come from "
        "its real code paths (`s3tables_kit.jobs.recover`, `s3tables_kit.infra.app`). Not a timed test: numbers vary "
        "with the machine and "
        "its load (see the load averages below). The goals are defined for `BENCH_SCALE=full`; every scale runs "
        "every section, and the `quick` (within 10 minutes on 2 cores) and `small` scales smoke-test the harness "
        "(too little data or too few tables for the ratios to mean much).",
        "",
        "## Machine",
        "",
        "| item | value |",
        "|---|---|",
    ]
    out += [f"| {k} | {_md_escape(str(v))} |" for k, v in m.items()]
    out += [
        "",
        "## Goals and ratios",
        "",
        "| # | figure | value | how | goal | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in res.comparisons:
        out.append(
            f"| {c.section} | {_md_escape(c.name)} | {fmt_value(c)} | {_md_escape(c.how)} | "
            f"{c.goal or '-'} | {'**NOT met**' if c.met is False else verdict(c.met)} |"
        )
    out += [
        "",
        "## Measurements",
        "",
        "| # | measurement | seconds | rows | MB | rows/s | MB/s | load 1m (start→end) | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for x in res.measurements:
        load = f"{x.load[0]:.1f}→{x.load[1]:.1f}" if x.load else "-"
        out.append(
            f"| {x.section} | {_md_escape(x.name)} | {fmt_num(x.seconds, 's')} | {_count(x.rows)} | {_mb(x.bytes)} | "
            f"{fmt_num(x.rows_per_s, 'rows/s')} | {fmt_num(x.mb_per_s, 'MB/s')} | {load} | {_md_escape(x.note)} |"
        )
    if res.errors:
        out += ["", "## Errors", ""] + [f"- {e}" for e in res.errors]
    if res.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in res.notes]
    if res.profiles:
        out += ["", "## Profiles", ""]
        for title, text in res.profiles.items():
            out += [f"### {title}", "", "```", text.rstrip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"


# --- the machine ------------------------------------------------------------------------------------------------


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_gb() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _iceberg_version(jars: Path) -> str:
    for j in sorted(jars.glob("iceberg-spark-runtime-*.jar")):
        mt = re.match(r"iceberg-spark-runtime-([\d.]+)_([\d.]+)-(.+)\.jar$", j.name)
        if mt:
            return f"{mt.group(3)} (iceberg-spark-runtime-{mt.group(1)}_{mt.group(2)})"
    return "no runtime jar in .jars/"


def _java_version() -> str:
    try:
        p = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=20)
        first = (p.stderr or p.stdout).splitlines()
        return first[0].strip() if first else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "memory": _mem_gb(),
        "CPU model": _cpu_model(),
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "Java": _java_version(),
        "Spark (pyspark)": _version("pyspark"),
        "Iceberg": _iceberg_version(ROOT / ".jars"),
        "pyiceberg": _version("pyiceberg"),
        "pyarrow": _version("pyarrow"),
        "cdktf": _version("cdktf"),
        "cdktf-cdktf-provider-aws": _version("cdktf-cdktf-provider-aws"),
        "jsii": _version("jsii"),
        "load average at start (1/5/15 min)": f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}",
    }
