"""Golden snapshots of the synthesised stacks, normalised (no cdktf metadata, no machine paths, sorted keys).

`make golden` (`python -m s3tables_kit.infra.golden --write`) re-records tests/golden/<example>/<stack>.json; review the
diff like any other change. The tests compare a fresh full-app synth with these files and never write them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from s3tables_kit.topology import paths
from s3tables_kit.topology.config import load_config

EXAMPLES = paths.ROOT / "examples"
GOLDEN = paths.ROOT / "tests" / "golden"
CWD_MARK = "<cwd>"


def normalize(node: Any, cwd: str) -> Any:
    if isinstance(node, dict):
        return {k: normalize(v, cwd) for k, v in sorted(node.items()) if k != "//"}
    if isinstance(node, list):
        return [normalize(v, cwd) for v in node]
    if isinstance(node, str) and node.startswith("{") and '"Statement"' in node:
        # Embedded policy documents are expanded so that a golden diff shows the statement that changed.
        return {"<policy-json>": normalize(json.loads(node), cwd)}
    if isinstance(node, str) and cwd and cwd in node:
        return node.replace(cwd, CWD_MARK)
    return node


def synth_example(config: Path, outdir: Path) -> dict[str, dict[str, Any]]:
    """Full app synth (cross-stack references are rewritten only by App.synth) -> {stack: parsed cdk.tf.json}."""
    from s3tables_kit.infra.app import build_app

    build_app(load_config(config), outdir=str(outdir)).synth()
    stacks = {}
    for stack_dir in sorted((outdir / "stacks").iterdir()):
        stacks[stack_dir.name] = json.loads((stack_dir / "cdk.tf.json").read_text())
    return stacks


def normalized_example(config: Path, outdir: Path) -> dict[str, Any]:
    return {name: normalize(doc, os.getcwd()) for name, doc in synth_example(config, outdir).items()}


def render(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="re-record tests/golden/ (review the diff!)")
    args = parser.parse_args(argv)
    if not args.write:
        parser.error("nothing to do: pass --write (the tests check the snapshots)")
    for config in sorted(EXAMPLES.glob("*.toml")):
        with tempfile.TemporaryDirectory() as tmp:
            stacks = normalized_example(config, Path(tmp))
        target = GOLDEN / config.stem
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name, doc in stacks.items():
            (target / f"{name}.json").write_text(render(doc))
        print(f"golden: {config.name} -> {target.relative_to(paths.ROOT)}/ ({len(stacks)} stacks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
