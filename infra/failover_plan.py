"""The plan a reviewer sees for a failover topology: what `cdktf deploy` of `[failover] promoted_bucket`
changes against the kit's normal topology, per stack, and the proof that nothing `prevent_destroy` guards is replaced.

    python -m s3tables_kit.infra.failover_plan examples/failover/multi-account.toml

Both topologies are synthesized from the same file (the normal one without `promoted_bucket`), so the comparison is
by Terraform address: *added*, *updated in place* (only a policy document changes), *unchanged*, and stacks *not
planned* (the failed Region's: their state is left as it is). Any protected resource that would disappear or change
anything but its document is listed under *REPLACED* and the command exits 1.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.infra.lifecycle import PROTECTED_TYPES
from s3tables_kit.topology.config import PROTECTED, ConfigError, KitConfig, load_config

DOCUMENT_ATTRIBUTES = frozenset({"resource_policy", "policy", "content", "assume_role_policy"})


@dataclass
class StackPlan:
    stack: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # a document attribute changes, in place
    unchanged: int = 0
    replaced: list[str] = field(default_factory=list)  # protected and gone or changed beyond its document
    dropped: list[str] = field(default_factory=list)  # unprotected and gone (Terraform would destroy it)


def _resources(stack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for rtype, items in stack.get("resource", {}).items():
        for name, body in items.items():
            out[f"{rtype}.{name}"] = {k: v for k, v in body.items() if k != "//"}
    return out


def compare(
    normal: dict[str, dict[str, Any]], failover: dict[str, dict[str, Any]]
) -> tuple[list[StackPlan], list[str]]:
    """(plans of the stacks the failover topology deploys, stacks of the normal topology it does not plan)."""
    plans = []
    for stack in sorted(failover):
        plan = StackPlan(stack)
        before = _resources(normal.get(stack, {}))
        after = _resources(failover[stack])
        for address, body in after.items():
            if address not in before:
                plan.added.append(address)
            elif body == before[address]:
                plan.unchanged += 1
            elif {k: v for k, v in body.items() if k not in DOCUMENT_ATTRIBUTES} == {
                k: v for k, v in before[address].items() if k not in DOCUMENT_ATTRIBUTES
            }:
                plan.updated.append(address)
            else:
                (plan.replaced if address.split(".", 1)[0] in PROTECTED_TYPES else plan.updated).append(address)
        for address in before:
            if address not in after:
                (plan.replaced if address.split(".", 1)[0] in PROTECTED_TYPES else plan.dropped).append(address)
        plans.append(plan)
    return plans, sorted(set(normal) - set(failover))


def render(cfg: KitConfig, plans: Sequence[StackPlan], not_planned: Sequence[str]) -> str:
    fo = cfg.failover
    assert fo is not None and cfg.kind.promoted
    lines = [
        f"== failover of {cfg.kit.name}: {cfg.kind.promoted_bucket} becomes the source, replicating to "
        f"{', '.join(fo.replicate_to)}",
        f"not planned (failed Region, state left as it is): {', '.join(not_planned) or 'none'}",
    ]
    for p in plans:
        lines.append(
            f"stack {p.stack}: {len(p.added)} to add, {len(p.updated)} to update in place, {p.unchanged} unchanged, "
            f"{len(p.replaced)} replaced"
        )
        lines += [f"    + {a}" for a in p.added]
        lines += [f"    ~ {a}" for a in p.updated]
        lines += [f"    - {a}  (not protected)" for a in p.dropped]
        lines += [f"    REPLACED {a}" for a in p.replaced]
    replaced = sum(len(p.replaced) for p in plans)
    lines.append(
        "nothing that prevent_destroy guards is replaced"
        if not replaced
        else f"REFUSED: {replaced} protected resource(s) would be replaced"
    )
    return "\n".join(lines)


def plan(config: Path, workdir: Path) -> tuple[KitConfig, list[StackPlan], list[str]]:
    from s3tables_kit.infra.app import build_app
    from s3tables_kit.infra.golden import normalize

    cfg = load_config(config)
    if not cfg.kind.promoted:
        raise ConfigError(str(config), [])
    normal_cfg = cfg.model_copy(update={"failover": None, "kind": PROTECTED})
    synths = {}
    for label, c in (("normal", normal_cfg), ("failover", cfg)):
        out = workdir / label
        build_app(c, outdir=str(out)).synth()
        synths[label] = {
            d.name: normalize(json.loads((d / "cdk.tf.json").read_text()), "")
            for d in sorted((out / "stacks").iterdir())
        }
    plans, not_planned = compare(synths["normal"], synths["failover"])
    return cfg, plans, not_planned


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        usage = "usage: python -m s3tables_kit.infra.failover_plan <kit.toml with [failover] promoted_bucket>"
        print(usage, file=sys.stderr)
        return 2
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cfg, plans, not_planned = plan(Path(args[0]), Path(tmp))
    except ConfigError as err:
        print(err if err.issues else f"{args[0]}: no [failover] promoted_bucket to plan", file=sys.stderr)
        return 2
    print(render(cfg, plans, not_planned))
    return 1 if any(p.replaced for p in plans) else 0


if __name__ == "__main__":
    sys.exit(main())
