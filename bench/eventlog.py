"""A profile of the Spark work of each benchmark phase, from Spark's own event log (`spark.eventLog.enabled`).

Jobs are attributed to phases by their submission time (each phase records its wall-clock window), so jobs that the
recovery job runs on its own worker threads are attributed too. Per phase: stages, summed stage wall time, executor
run and CPU time, GC, shuffle and spill bytes, and the `Exchange` / `Sort` operators of its SQL physical plans.
Parsing is pure (lines in, dataclasses out).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ICEBERG_FN = r"staticinvoke\(class org\.apache\.iceberg\.spark\.functions\.(\w+?)Function\$\w+, \w+, \w+, (\w+)[^)]*\)"
_WRITES = {
    "AtomicCreateTableAsSelect",
    "CreateTableAsSelect",
    "AtomicReplaceTableAsSelect",
    "ReplaceTableAsSelect",
    "AppendData",
    "OverwriteByExpression",
    "OverwritePartitionsDynamic",
}
_SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
_SQL_END = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"
# Spark 3.5's formatted plan: "(N) Exchange" sections with an "Arguments:" line (partitioning, shuffle origin).
_OPERATOR = re.compile(r"^\(\d+\) (Exchange|Sort)\s*\n(?:[^\n]*\n){0,6}?Arguments: ([^\n]{0,300})", re.M)


@dataclass
class Stage:
    stage_id: int
    name: str
    tasks: int
    submitted_ms: int
    completed_ms: int
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return max(0, self.completed_ms - self.submitted_ms) / 1000

    def m(self, key: str) -> float:
        return self.metrics.get(key, 0.0)


@dataclass
class SqlExecution:
    execution_id: int
    start_ms: int
    end_ms: int | None
    description: str
    plan: str

    @property
    def kind(self) -> str:
        """What the statement did, from its physical plan: the write, the verification fingerprint, EXCEPT ALL..."""
        lines = self.plan.splitlines()
        root = lines[1].split(" (")[0].strip() if len(lines) > 1 else "?"
        if "xxhash64" in self.plan:
            return "verification fingerprint (aggregate)"
        if "replicaterows" in self.plan.lower() or "Except" in self.plan:
            return "EXCEPT ALL"
        if root in _WRITES:
            return f"write ({root})"
        return root

    def operators(self) -> list[str]:
        return [f"{op} {args.strip()}" for op, args in _OPERATOR.findall(self.plan)]


@dataclass
class EventLog:
    stages: dict[int, Stage] = field(default_factory=dict)
    sql: dict[int, SqlExecution] = field(default_factory=dict)
    stage_sql: dict[int, int] = field(default_factory=dict)  # stage id -> SQL execution id (from job properties)


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def parse(lines: Iterable[str]) -> EventLog:
    log = EventLog()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = ev.get("Event")
        if kind == "SparkListenerJobStart":
            eid = (ev.get("Properties") or {}).get("spark.sql.execution.id")
            if eid is not None:
                for sid in ev.get("Stage IDs", []):
                    log.stage_sql[int(sid)] = int(eid)
        elif kind == "SparkListenerStageCompleted":
            info = ev.get("Stage Info", {})
            metrics: dict[str, float] = {}
            for acc in info.get("Accumulables", []):
                name = str(acc.get("Name", ""))
                if name.startswith("internal.metrics."):
                    metrics[name[len("internal.metrics.") :]] = _num(acc.get("Value"))
            sid = int(info.get("Stage ID", -1))
            log.stages[sid] = Stage(
                stage_id=sid,
                name=str(info.get("Stage Name", "")),
                tasks=int(info.get("Number of Tasks", 0)),
                submitted_ms=int(info.get("Submission Time", 0) or 0),
                completed_ms=int(info.get("Completion Time", 0) or 0),
                metrics=metrics,
            )
        elif kind == _SQL_START:
            eid = int(ev.get("executionId", -1))
            desc, plan = str(ev.get("description", "")), str(ev.get("physicalPlanDescription", ""))
            log.sql[eid] = SqlExecution(eid, int(ev.get("time", 0)), None, desc, plan)
        elif kind == _SQL_END:
            eid = int(ev.get("executionId", -1))
            if eid in log.sql:
                log.sql[eid].end_ms = int(ev.get("time", 0))
    return log


def read(directory: Path) -> EventLog:
    """All event log files of a directory (uncompressed, Spark's default), merged."""
    lines: list[str] = []
    for f in sorted(directory.glob("*")):
        if f.is_file() and not f.name.endswith((".lz4", ".zstd", ".snappy", ".lzf")):
            lines.extend(f.read_text(errors="replace").splitlines())
    return parse(lines)


@dataclass
class Phase:
    name: str
    start_ms: int
    end_ms: int

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000


@dataclass
class PhaseProfile:
    phase: Phase
    stages: list[Stage]
    sql: list[SqlExecution]

    def total(self, key: str) -> float:
        return sum(s.m(key) for s in self.stages)

    def by_kind(self, log: EventLog) -> dict[str, dict[str, float]]:
        """The phase's stages grouped by the kind of statement that ran them."""
        groups: dict[str, list[Stage]] = {}
        for st in self.stages:
            eid = log.stage_sql.get(st.stage_id)
            q = log.sql.get(eid) if eid is not None else None
            groups.setdefault(q.kind if q else "other (no SQL execution)", []).append(st)
        out = {}
        for k, sts in groups.items():
            s = PhaseProfile(Phase(k, 0, 0), sts, []).summary()
            s.pop("phase_s")
            out[k] = s
        return out

    def summary(self) -> dict[str, float]:
        run_s = self.total("executorRunTime") / 1000
        cpu_s = self.total("executorCpuTime") / 1e9
        return {
            "phase_s": self.phase.seconds,
            "stages": len(self.stages),
            "stage_wall_s": sum(s.seconds for s in self.stages),
            "executor_run_s": run_s,
            "executor_cpu_s": cpu_s,
            "cpu_share_of_run": cpu_s / run_s if run_s else 0.0,
            "gc_s": self.total("jvmGCTime") / 1000,
            "shuffle_write_mb": self.total("shuffle.write.bytesWritten") / 1e6,
            "spill_disk_mb": self.total("diskBytesSpilled") / 1e6,
            "input_mb": self.total("input.bytesRead") / 1e6,
        }


def attribute(log: EventLog, phases: list[Phase]) -> list[PhaseProfile]:
    out = []
    for p in phases:
        stages = [s for s in log.stages.values() if p.start_ms <= s.submitted_ms <= p.end_ms]
        sql = [q for q in log.sql.values() if p.start_ms <= q.start_ms <= p.end_ms]
        out.append(PhaseProfile(p, sorted(stages, key=lambda s: s.submitted_ms), sorted(sql, key=lambda q: q.start_ms)))
    return out


def render(profiles: list[PhaseProfile], top: int = 4, log: EventLog | None = None) -> str:
    lines = []
    for pp in profiles:
        s = pp.summary()
        lines.append(
            f"{pp.phase.name}: {s['phase_s']:.1f} s wall; {int(s['stages'])} stage(s) summing "
            f"{s['stage_wall_s']:.1f} s; executor run {s['executor_run_s']:.1f} s (CPU {s['executor_cpu_s']:.1f} s = "
            f"{100 * s['cpu_share_of_run']:.0f}%), GC {s['gc_s']:.1f} s; shuffle write "
            f"{s['shuffle_write_mb']:.0f} MB; spill {s['spill_disk_mb']:.0f} MB; input {s['input_mb']:.0f} MB"
        )
        if log is not None:
            for kind, k in sorted(pp.by_kind(log).items(), key=lambda kv: -kv[1]["stage_wall_s"]):
                lines.append(
                    f"  - {kind}: {int(k['stages'])} stage(s), {k['stage_wall_s']:.1f} s; "
                    f"run {k['executor_run_s']:.1f} s, CPU {k['executor_cpu_s']:.1f} s, GC {k['gc_s']:.1f} s, "
                    f"shuffle write {k['shuffle_write_mb']:.0f} MB"
                )
        for st in sorted(pp.stages, key=lambda x: -x.seconds)[:top]:
            lines.append(
                f"    stage {st.stage_id:>4} {st.seconds:7.1f} s  tasks {st.tasks:>4}  "
                f"run {st.m('executorRunTime') / 1000:6.1f} s  cpu {st.m('executorCpuTime') / 1e9:6.1f} s  "
                f"gc {st.m('jvmGCTime') / 1000:5.1f} s  "
                f"shuffle-w {st.m('shuffle.write.bytesWritten') / 1e6:6.0f} MB  {st.name[:60]}"
            )
        ops: dict[str, int] = {}
        for q in pp.sql:
            for op in q.operators():
                key = re.sub(_ICEBERG_FN, r"\1(\2)", op)
                key = re.sub(r"#\d+|, \[plan_id=\d+\]", "", key)[:100]
                ops[key] = ops.get(key, 0) + 1
        for op, n in sorted(ops.items(), key=lambda kv: -kv[1])[:6]:
            lines.append(f"    plan: {n} x {op}")
    return "\n".join(lines)


@dataclass
class Statement:
    """The Spark work of one SQL statement (all stages of the jobs it ran)."""

    sql: str
    stages: list[Stage]

    def summary(self) -> dict[str, Any]:
        pp = PhaseProfile(Phase(self.sql, 0, 0), self.stages, [])
        s: dict[str, Any] = pp.summary()
        s.pop("phase_s")
        s["sql"] = " ".join(self.sql.split())[:160]
        return s


def statements(log: EventLog) -> list[Statement]:
    """Stages grouped by the SQL statement that ran them (the statement text is Spark's execution description)."""
    by: dict[int, list[Stage]] = {}
    for sid, eid in log.stage_sql.items():
        if sid in log.stages:
            by.setdefault(eid, []).append(log.stages[sid])
    out = []
    for eid, stages in sorted(by.items()):
        q = log.sql.get(eid)
        out.append(Statement(q.description if q else f"execution {eid}", sorted(stages, key=lambda s: s.stage_id)))
    return out
