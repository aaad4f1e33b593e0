"""`s3tables-kit outputs --config kit.toml`: after `cdktf deploy`, write the outputs contract that the jobs read.

Runs `npx cdktf output '*'` for the configuration's stacks (in the current directory, the CDKTF app's), then loads
the file it wrote with `s3tables_kit.topology.outputs.load_outputs`, so a file the jobs would refuse is refused here, at
once. Exit 0 with the path written; 2 when the configuration is not named or invalid, cdktf fails, or the file is not a
valid outputs contract (the file is then left for inspection, and the line says so).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from s3tables_kit.topology.config import ConfigError, load_config
from s3tables_kit.topology.outputs import OutputsError, load_outputs


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="s3tables-kit outputs", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the deployed configuration (kit.toml): its stacks are read")
    p.add_argument("--out", default="outputs.json", help="where to write the outputs contract (default outputs.json)")
    return p


def command(out: Path) -> list[str]:
    """The cdktf CLI call that writes every stack's outputs, sensitive ones included (the jobs need the ARNs)."""
    return ["npx", "cdktf", "output", "*", "--outputs-file", str(out), "--outputs-file-include-sensitive-outputs"]


def main(argv: list[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    try:
        load_config(ns.config)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    if shutil.which("npx") is None:
        print(
            "outputs: npx (Node.js) is required to read the deployed stacks' outputs with the cdktf CLI",
            file=sys.stderr,
        )
        return 2
    out = Path(ns.out)
    proc = subprocess.run(command(out), env={**os.environ, "KIT_CONFIG": ns.config}, check=False)
    if proc.returncode != 0:
        print(f"outputs: `cdktf output` failed (exit {proc.returncode}); nothing is valid at {out}", file=sys.stderr)
        return 2
    try:
        outputs = load_outputs(out)
    except OutputsError as err:
        print(f"outputs: {out} was written but is not a valid outputs contract: {err}", file=sys.stderr)
        return 2
    print(f"outputs: wrote {out} ({len(outputs.replicas)} replica bucket(s)); pass it as --outputs {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
