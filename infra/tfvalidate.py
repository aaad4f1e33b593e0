"""`terraform validate` of prepared stack directories: one stack as its own root, or many stacks at once as the
modules of one generated root.

Every Terraform command starts the provider binary again (the aws provider costs seconds of CPU per start, three
starts per `validate`), so thirty stacks validated one by one cost thirty times that. As modules of one root they
are validated by one `init` and one `validate`, and each diagnostic still names its stack through the file it is in.
A stack with a block Terraform accepts only in a root module (`import`, `variable`) is validated on its own.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Blocks a child module may not have (import) or that would need the calling module to set them (variable).
ROOT_ONLY_BLOCKS = ("import", "variable")
# The combined root's own warning for every stack: its backend belongs to the stack's own root, never to a module
# (the backend block is checked apart, through a `terraform_remote_state` source of the same configuration).
COMBINED_ROOT_WARNING = "Backend configuration ignored"
INIT = ["init", "-backend=false", "-input=false", "-no-color"]
VALIDATE = ["validate", "-json", "-no-color"]


def _run(terraform: Path, env: dict[str, str], cwd: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(terraform), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def _diagnostic_line(diag: Mapping[str, Any]) -> str:
    where = diag.get("snippet", {}).get("context") or ""
    rng = diag.get("range", {})
    loc = f"{rng.get('filename', '')}:{rng.get('start', {}).get('line', '')}" if rng else ""
    detail = " ".join(str(diag.get("detail", "")).split())
    return f"{diag.get('severity', '?')}: {diag.get('summary', '')}: {detail}" + (
        f"  [{where}{' ' + loc if loc else ''}]" if where or loc else ""
    )


def _diagnostics(raw: str) -> list[dict[str, Any]] | None:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return list(data.get("diagnostics", []))


def validate_dir(terraform: Path, env: dict[str, str], stack_dir: Path) -> tuple[bool, list[str]]:
    """One stack directory as its own root: (valid, diagnostics as lines)."""
    init = _run(terraform, env, stack_dir, INIT)
    if init.returncode != 0:
        return False, ["terraform init failed:", *(init.stdout + init.stderr).strip().splitlines()]
    val = _run(terraform, env, stack_dir, VALIDATE)
    diags = _diagnostics(val.stdout)
    lines = [_diagnostic_line(d) for d in diags] if diags is not None else [val.stdout.strip()]
    lines = [x for x in lines if x] or ([val.stderr.strip()] if val.stderr.strip() else [])
    return val.returncode == 0, lines


def root_only(doc: Mapping[str, Any]) -> bool:
    """The stack has a block only a root module may have: it is validated on its own."""
    return any(doc.get(block) for block in ROOT_ONLY_BLOCKS)


def validate_together(
    terraform: Path, env: dict[str, str], root: Path, stacks: Mapping[str, Path]
) -> dict[str, tuple[bool, list[str]]]:
    """Validate `stacks` ({key: directory under `root`}) as the modules of one root written to `root/main.tf.json`:
    {key: (valid, that stack's diagnostics)}. A diagnostic in no stack's file fails every stack (it is shown on
    each): nothing passes on a failure that could not be placed."""
    modules: dict[str, dict[str, str]] = {}
    prefixes: dict[str, str] = {}
    for i, (key, stack_dir) in enumerate(sorted(stacks.items())):
        rel = stack_dir.relative_to(root).as_posix()
        modules[f"stack_{i}"] = {"source": f"./{rel}"}
        prefixes[key] = f"{rel}/"
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.tf.json").write_text(json.dumps({"module": modules}, indent=2, sort_keys=True) + "\n")
    init = _run(terraform, env, root, INIT)
    if init.returncode != 0:
        failure = ["terraform init of the combined root failed:", *(init.stdout + init.stderr).strip().splitlines()]
        return {key: (False, failure) for key in stacks}
    val = _run(terraform, env, root, VALIDATE)
    diags = _diagnostics(val.stdout)
    if diags is None:
        return {key: (False, [val.stdout.strip() or val.stderr.strip()]) for key in stacks}
    per: dict[str, list[dict[str, Any]]] = {key: [] for key in stacks}
    unplaced: list[dict[str, Any]] = []
    for diag in diags:
        if diag.get("summary") == COMBINED_ROOT_WARNING and diag.get("severity") == "warning":
            continue
        filename = str(diag.get("range", {}).get("filename", ""))
        owner = next((key for key, prefix in prefixes.items() if filename.startswith(prefix)), None)
        (per[owner] if owner is not None else unplaced).append(diag)
    unplaced_error = any(d.get("severity") == "error" for d in unplaced)
    if val.returncode != 0 and not any(d.get("severity") == "error" for d in diags):
        unplaced_error = True
        unplaced.append({"severity": "error", "summary": "terraform validate failed", "detail": val.stderr})
    return {
        key: (
            not unplaced_error and not any(d.get("severity") == "error" for d in own),
            [_diagnostic_line(d) for d in own + unplaced],
        )
        for key, own in per.items()
    }
