"""`make e2e-adopt`: the brownfield worlds adopted end to end, each on its own stand-in (`--world lake|one|all`):
`harness/e2e/adopt.py` (two buckets and a partner's share) and `harness/e2e/adopt_one.py` (one account in two
Regions that already replicates)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from emulator.process import Emulator
from harness.e2e.adopt import AdoptRun, _say
from harness.e2e.adopt_one import OneAccountRun
from harness.e2e.run import WORKDIR, terraform_setup
from harness.e2e.terraform import Terraform, cpu_summary, proxy_env, table, toolchain

WORLDS = ("lake", "one")  # harness/e2e/brownfield.py's two-bucket lake; brownfield_one.py's one-account lake


def run_world(world_name: str, workdir: Path, tf: Terraform, mirror: Path) -> AdoptRun:
    """One brownfield world adopted on its own stand-in."""
    kind = OneAccountRun if world_name == "one" else AdoptRun
    with Emulator(log=workdir / f"adopt-{world_name}-emulator.log") as emu:
        run = kind(workdir, Terraform(tf.binary, {**tf.env, **proxy_env(emu.url)}), emu, toolchain(tf, mirror, workdir))
        run.run()
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    parser.add_argument("--world", choices=(*WORLDS, "all"), default="all",
                        help="lake: two buckets and a partner's share; one: one account in two Regions that already "
                        "replicates (harness/e2e/brownfield_one.py); all (default): both, in turn")  # fmt: skip
    args = parser.parse_args(argv)
    workdir: Path = args.workdir.resolve()
    found = terraform_setup(workdir)
    if found is None:
        print("e2e-adopt: needs `terraform` and a provider filesystem mirror (see `make validate`)", file=sys.stderr)
        return 2
    tf, mirror = found
    t0 = time.monotonic()
    runs, seconds = [], {}
    for name in WORLDS if args.world == "all" else (args.world,):
        t1 = time.monotonic()
        runs.append(run_world(name, workdir, tf, mirror))
        seconds[name] = round(time.monotonic() - t1, 1)
    ok = all(r.ok for r in runs)
    _say("\n" + "\n".join(table([s for r in runs for s in r.stacks], [t for r in runs for t in r.tools])))
    report = {
        "ok": ok,
        "seconds": round(time.monotonic() - t0, 1),
        "worlds": {r.name: {"ok": r.ok, "seconds": seconds[n]} for n, r in zip(seconds, runs, strict=True)},
        "stacks": [asdict(s) | {"ok": s.ok} for r in runs for s in r.stacks],
        "tools": [asdict(t) | {"ok": t.ok} for r in runs for t in r.tools],
    }
    (workdir / "adopt-results.json").write_text(json.dumps(report, indent=2) + "\n")
    _say(cpu_summary())
    worlds = ", ".join(
        f"{n} {'passed' if r.ok else 'FAILED'} in {seconds[n]} s" for n, r in zip(seconds, runs, strict=True)
    )
    _say(f"\ne2e-adopt: {'PASSED' if ok else 'FAILED'} in {report['seconds']} s ({worlds}); "
         f"{workdir / 'adopt-results.json'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
