"""`make rehearse`: the recovery rehearsal on the local drill warehouses (demo-out/), running the recovery drill
(`make demo`) first when there is no drill replica yet.

    python -m harness.drills.rehearse [the options of python -m s3tables_kit.jobs.rehearse --local]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    from harness.drills.demo import main as drill
    from s3tables_kit.jobs.rehearse import main as rehearse
    from s3tables_kit.jobs.rehearse import parser

    args = ["--local", *(sys.argv[1:] if argv is None else argv)]
    out = Path(parser().parse_args(args).out).resolve()
    if not (out / "warehouses" / "replica" / "analytics" / "orders").is_dir():
        print(f"rehearsal: no drill replica under {out}; running the drill first (make demo)", flush=True)
        if drill(["--out", str(out)]) != 0:
            print("rehearsal: the drill failed; nothing to rehearse on", file=sys.stderr)
            return 1
    return rehearse(args)


if __name__ == "__main__":
    sys.exit(main())
