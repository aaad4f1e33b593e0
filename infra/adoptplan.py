"""Is it a saved plan of this configuration? What the adoption gate (`s3tables_kit.infra.adoptgate`) reads before it
judges: a
`terraform show -json <plan file>` document of one of the configuration's stacks. Fail closed: anything else (the state
that `show -json` prints without the plan file, a list, an empty plan, another configuration's plan) is refused with
one line naming what it is not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from s3tables_kit.topology.config import KitConfig

Json = dict[str, Any]
BUCKET_TYPES = ("aws_s3tables_table_bucket", "awscc_s3tables_table_bucket")

PLAN_KEYS = ("format_version", "planned_values", "resource_changes")


def _planned_bucket_names(plan: Json) -> set[str]:
    """The table bucket names a plan holds (planned values and changes; awscc and aws spellings)."""
    root = (plan.get("planned_values") or {}).get("root_module") or {}
    bodies = [r.get("values") or {} for r in root.get("resources") or [] if r.get("type") in BUCKET_TYPES]
    for rc in plan.get("resource_changes") or []:
        if isinstance(rc, dict) and rc.get("type") in BUCKET_TYPES:
            change = rc.get("change") or {}
            bodies += [change.get("after") or {}, change.get("before") or {}]
    return {
        str(b.get("table_bucket_name") or b.get("name")) for b in bodies if b.get("table_bucket_name") or b.get("name")
    }


def config_bucket_names(cfg: KitConfig) -> set[str]:
    """Every table bucket a configuration's stacks hold: its sources', replicas' and recovery bucket."""
    names = {s.bucket for s in cfg.sources} | {r.bucket for r in cfg.replicas}
    return names | {cfg.recovery.bucket}


def saved_plan(doc: object, cfg: KitConfig | None, name: str) -> Json:
    """`doc` when it is a saved plan (`terraform show -json <plan file>`) of one of the configuration's stacks; else
    ValueError with the one line that says what it is not. Fail closed: the gate passes only what it can read as such
    a plan (`terraform show -json` without the plan file prints the state, `{"format_version": "1.0"}` when empty)."""
    if not isinstance(doc, dict):
        raise ValueError(
            f"{name}: not a saved plan: `terraform show -json <plan file>` writes a JSON object, this is a "
            f"{type(doc).__name__}"
        )
    missing = [k for k in PLAN_KEYS if k not in doc]
    if missing:
        raise ValueError(
            f"{name}: not a saved plan (no {', '.join(missing)}): write it with `terraform plan -out=tfplan` and "
            "`terraform show -json tfplan` (without the plan file, show prints the state)"
        )
    if not isinstance(doc["resource_changes"], list) or not isinstance(doc["planned_values"], dict):
        raise ValueError(f"{name}: not a saved plan: resource_changes must be a list and planned_values an object")
    if not (doc["planned_values"].get("root_module") or {}).get("resources") and not doc["resource_changes"]:
        raise ValueError(f"{name}: a plan of no resource: not the plan of a stack (synthesize and plan the stack)")
    if cfg is not None:
        found, known = _planned_bucket_names(doc), config_bucket_names(cfg)
        if found and not found & known:
            raise ValueError(
                f"{name}: a plan of table bucket(s) {', '.join(sorted(found))}, none of which the configuration "
                "names: the plan of another configuration's stack"
            )
    return doc


def read_saved_plan(path: Path, cfg: KitConfig | None) -> Json:
    """`saved_plan` of a file (`terraform show -json tfplan > plan.json`); ValueError, one line, when it is not."""
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not a saved plan: not JSON ({exc})") from None
    return saved_plan(doc, cfg, path.name)
