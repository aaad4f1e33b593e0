"""`make e2e`'s reading of a saved plan (what it would do to the guarded resources) and which configurations
share one emulator and one Terraform state."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from s3tables_kit.infra.validate import Json
from s3tables_kit.topology.config import load_config

# ---------------------------------------------------------------- the applied plan ----

REPLACE = (["delete", "create"], ["create", "delete"])


def plan_actions(plan: Json) -> dict[str, list[str]]:
    """{address: actions} of the managed resources a `terraform show -json` plan changes (no-op and read left out)."""
    out = {}
    for rc in plan.get("resource_changes") or []:
        actions = list(rc.get("change", {}).get("actions") or [])
        if rc.get("mode") == "managed" and actions not in ([], ["no-op"], ["read"]):
            out[str(rc["address"])] = actions
    return out


def planned_summary(actions: dict[str, list[str]]) -> str:
    """ "+<created> ~<updated> -<destroyed> ±<replaced>" of a plan's actions."""
    n = {k: 0 for k in "+~-±"}
    for a in actions.values():
        n["±" if a in REPLACE else "+" if a == ["create"] else "~" if a == ["update"] else "-"] += 1
    return " ".join(f"{k}{v}" for k, v in n.items())


def transition_problems(actions: dict[str, list[str]], protected: set[str]) -> list[str]:
    """What a plan must not do: destroy or replace a resource `prevent_destroy` guards, in the configuration being
    applied or in the one applied before (a resource left out of the new configuration loses its flag, and Terraform
    plans its destroy without complaint)."""
    return [f"{addr}: {'replaced' if a in REPLACE else 'destroyed'}" for addr, a in sorted(actions.items())
            if "delete" in a and addr in protected]  # fmt: skip


# `terraform apply -json`'s planned_change actions, as `terraform show -json` spells them (no-op, read, move and
# the like change nothing the checks look at).
STREAM_ACTIONS = {
    "create": ["create"],
    "update": ["update"],
    "delete": ["delete"],
    "replace": ["delete", "create"],
}


def stream_actions(lines: Iterable[str]) -> dict[str, list[str]]:
    """{address: actions} of the managed resources that `terraform apply -json` (the machine-readable UI) planned."""
    out: dict[str, list[str]] = {}
    for line in lines:
        if not line.startswith("{"):
            continue
        msg = json.loads(line)
        change = msg.get("change") or {}
        addr = str((change.get("resource") or {}).get("addr", ""))
        actions = STREAM_ACTIONS.get(str(change.get("action")))
        is_data = addr.startswith("data.") or ".data." in addr
        if msg.get("type") == "planned_change" and addr and actions is not None and not is_data:
            out[addr] = actions
    return out


def stream_errors(lines: Iterable[str]) -> list[str]:
    """The error diagnostics of a `-json` run, one line each."""
    out = []
    for line in lines:
        if line.startswith("{") and (msg := json.loads(line)).get("@level") == "error":
            diag = msg.get("diagnostic") or {}
            out.append(f"{msg.get('@message', '')}: {diag.get('detail', '')}".strip(": "))
    return out


def managed_count(plan: Json) -> int:
    """Managed resource instances in the state once the plan is applied (`planned_values`)."""
    resources = plan.get("planned_values", {}).get("root_module", {}).get("resources") or []
    return sum(1 for r in resources if r.get("mode") == "managed")


# ---------------------------------------------------------------- which configurations run together ----


def is_failover_topology(config: Path) -> bool:
    return load_config(config).kind.promoted


def normal_of(config: Path) -> Path:
    """The normal topology a failover topology promotes: examples/failover/<name>.toml -> examples/<name>.toml."""
    base = config.resolve().parent.parent / config.name
    if not base.is_file():
        raise ValueError(f"{config}: a failover topology runs on top of its normal topology, expected at {base}")
    return base


def chains_of(configs: Iterable[Path]) -> list[list[Path]]:
    """Configurations grouped by emulator and Terraform state: a normal topology, then the failover topologies that
    run on top of it (the normal one is added when not given)."""
    chains: list[list[Path]] = []
    for config in configs:
        if not is_failover_topology(config):
            chains.append([config])
            continue
        base = normal_of(config)
        chain = next((c for c in chains if c[0] == base), None)
        if chain is None:
            chains.append([base, config])
        else:
            chain.append(config)
    return chains
