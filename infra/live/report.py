"""The run's report, Markdown and JSON: a contradicted fact that endangers replication or protection, and any
attack that was not denied, come FIRST; then the leftovers of earlier runs, the facts, the latency, the attacks,
time and estimated cost, and what cleanup left."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.infra.live.attacks import Attack
from s3tables_kit.infra.live.plan import AWS_NEXT_STEP
from s3tables_kit.infra.live.probes import CONTRADICTED, Fact


@dataclass
class Report:
    run_id: str
    target: str  # "aws" | "stand-in <url>"
    earlier_leftovers: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    attacks: list[Attack] = field(default_factory=list)
    left_after_cleanup: list[str] = field(default_factory=list)
    seconds: float = 0.0
    estimated_usd: float = 0.0
    error: str = ""

    def endangering(self) -> list[str]:
        out = [
            f"fact {f.id} contradicted ({f.endangers} at risk): {f.observed} -> {f.change}"
            for f in self.facts
            if f.verdict == CONTRADICTED and f.endangers
        ]
        out += [
            f"attack not denied: {a.principal} {a.action} -> {a.outcome} ({a.evidence})"
            for a in self.attacks
            if a.expected == "denied" and not a.ok
        ]
        return out

    @property
    def exit_code(self) -> int:
        if self.error:
            return 2 if self.error.startswith("refused") else 1
        bad = bool(self.endangering()) or any(not a.ok for a in self.attacks) or bool(self.left_after_cleanup)
        return 1 if bad else 0

    def latency(self) -> dict[str, float | int | None]:
        xs = self.latencies_s
        return {
            "commits": len(xs),
            "median_s": round(statistics.median(xs), 3) if xs else None,
            "worst_s": round(max(xs), 3) if xs else None,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "target": self.target,
            "exit_code": self.exit_code,
            "endangering": self.endangering(),
            "error": self.error,
            "earlier_leftovers": self.earlier_leftovers,
            "facts": [f.to_json() for f in self.facts],
            "latency": {**self.latency(), "samples_s": [round(x, 3) for x in self.latencies_s]},
            "attacks": [a.to_json() for a in self.attacks],
            "left_after_cleanup": self.left_after_cleanup,
            "seconds": round(self.seconds, 1),
            "estimated_usd": self.estimated_usd,
        }

    def markdown(self) -> str:
        lines = [f"# live-verify run {self.run_id} ({self.target})", ""]
        danger = self.endangering()
        if danger:
            lines += ["**FAILED: the kit's protection or replication is at risk here:**", ""]
            lines += [f"- {d}" for d in danger] + [""]
        if self.error:
            lines += [f"**Run error:** {self.error}", ""]
        if self.earlier_leftovers:
            lines += ["**Leftovers of an earlier run** (`make live-verify-cleanup RUN=<id>`):", ""]
            lines += [f"- {x}" for x in self.earlier_leftovers] + [""]
        lines += ["## Facts", "", "| id | verdict | expected | observed | evidence | what the kit should change |"]
        lines.append("|---|---|---|---|---|---|")
        for f in self.facts:
            row = (f.id, f.verdict, f.expected, f.observed, f.evidence, f.change)
            lines.append("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |")
        lat = self.latency()
        lines += ["", "## Replication latency (commit -> lastSuccessfulReplicatedUpdate)", ""]
        lines.append(f"{lat['commits']} commits: median {lat['median_s']} s, worst {lat['worst_s']} s")
        lines += ["", "## Attacks on the replica", "", "| principal | action | expected | outcome | layer | evidence |"]
        lines.append("|---|---|---|---|---|---|")
        for a in self.attacks:
            lines.append(f"| {a.principal} | {a.action} | {a.expected} | {a.outcome} | {a.layer} | {a.evidence} |")
        if self.target.startswith("stand-in"):
            lines += [
                "",
                f"Time: {self.seconds:.0f} s on the local stand-in (no AWS cost): it exercised the run, not AWS.",
            ]
            lines.append(AWS_NEXT_STEP[0].upper() + AWS_NEXT_STEP[1:] + ".")
        else:
            lines += ["", f"Time: {self.seconds:.0f} s; estimated cost: under ${self.estimated_usd:.2f}"]
        left = ", ".join(self.left_after_cleanup) or "nothing"
        lines.append(f"Left after cleanup: {left}")
        return "\n".join(lines) + "\n"

    def write(self, outdir: Path) -> tuple[Path, Path]:
        outdir.mkdir(parents=True, exist_ok=True)
        md, js = outdir / f"live-verify-{self.run_id}.md", outdir / f"live-verify-{self.run_id}.json"
        md.write_text(self.markdown())
        js.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        return md, js
