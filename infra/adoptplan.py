"""Is it a saved plan of this configuration? What the adoption gate (`s3tables_kit.infra.adoptgate`) reads before it
judges: a `terraform show -json <plan file>` document of one of the configuration's stacks. Fail closed: anything else
(the state that `show -json` prints without the plan file, a list, an empty plan, another configuration's plan) is
refused with one line naming what it is not. Then the plan typed: the resource changes the gate's rules read."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
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


# ---------------------------------------------------------------- the plan, typed ----


@dataclass(frozen=True)
class PlannedResource:
    """One managed resource change of a saved plan, as `terraform show -json` writes it."""

    address: str
    rtype: str
    actions: tuple[str, ...]
    before: Json
    after: Json
    after_unknown: Json
    importing: str | None  # the import id, when the plan imports it
    reason: str  # `action_reason`, e.g. "replace_because_cannot_update"
    replace_paths: tuple[str, ...]  # "name", "encryption_configuration.sse_algorithm", "rule[0]"
    references: tuple[str, ...]  # what its `table_bucket_arn` expression refers to in the configuration

    @property
    def deletes(self) -> bool:
        return "delete" in self.actions

    @property
    def replaced(self) -> bool:
        return "delete" in self.actions and "create" in self.actions


def _path(steps: Iterable[object]) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _references(plan: Json) -> dict[str, tuple[str, ...]]:
    """address -> the references of its `table_bucket_arn` expression (root module: the stacks are flat)."""
    out: dict[str, tuple[str, ...]] = {}
    for res in (plan.get("configuration") or {}).get("root_module", {}).get("resources") or []:
        expr = (res.get("expressions") or {}).get("table_bucket_arn") or {}
        refs = expr.get("references") if isinstance(expr, dict) else None
        if refs:
            out[str(res.get("address"))] = tuple(str(r) for r in refs)
    return out


def planned_resources(plan: Json) -> list[PlannedResource]:
    """The managed resources a saved plan touches (a no-op import included; reads and plain no-ops left out)."""
    if not isinstance(plan.get("resource_changes", []), list):
        raise ValueError("not a `terraform show -json` plan: resource_changes is not a list")
    refs = _references(plan)
    out = []
    for rc in plan.get("resource_changes") or []:
        change = rc.get("change") or {}
        actions = tuple(str(a) for a in change.get("actions") or [])
        importing = change.get("importing")
        if rc.get("mode") != "managed" or (actions in ((), ("no-op",), ("read",)) and not importing):
            continue
        address = str(rc["address"])
        out.append(
            PlannedResource(
                address=address,
                rtype=str(rc.get("type")),
                actions=actions,
                before=change.get("before") or {},
                after=change.get("after") or {},
                after_unknown=change.get("after_unknown") or {},
                importing=str(importing.get("id", "")) if isinstance(importing, dict) else None,
                reason=str(rc.get("action_reason") or ""),
                replace_paths=tuple(_path(p) for p in change.get("replace_paths") or []),
                references=refs.get(address.split("[")[0], ()),
            )
        )
    return out


def bucket_arn_of(res: PlannedResource) -> str:
    """The table bucket a resource is or belongs to, from its values in the plan ("" when not known yet)."""
    for body in (res.before, res.after):
        for key in ("table_bucket_arn", "table_arn", "arn"):
            value = body.get(key)
            if isinstance(value, str) and ":bucket/" in value:
                return value.split("/table/")[0]
    return ""


def bucket_name_of(res: PlannedResource) -> str:
    body = res.after or res.before
    return str(body.get("name") or body.get("table_bucket_name") or "")
