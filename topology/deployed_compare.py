"""How what runs differs from the deploy's record (`s3tables_kit.topology.deployed`), without pydantic: the Lambda
functions that compare at every run (`jobs/ops/running.py`) ship none; `make audit` uses the same functions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

CONFIGURATION_KEYS = ("handler", "role", "environment", "layers")


def function_differences(
    live: Mapping[str, Any], sha: str, configuration: Mapping[str, Any] | None = None
) -> list[str]:
    """How a function as `GetFunctionConfiguration` (or `GetFunction`'s `Configuration`) returns it (`live`)
    differs from the deployed one: its code's SHA-256 and, when recorded (`FunctionOut`'s fields), its handler,
    role, environment and layers; one line per setting, [] when it is the same."""
    got: dict[str, object] = {"code SHA-256": live.get("CodeSha256")}
    want: dict[str, object] = {"code SHA-256": sha}
    if configuration is not None:
        got |= live_configuration(live)
        want |= {k: configuration.get(k, {} if k == "environment" else [] if k == "layers" else None) for k in
                 CONFIGURATION_KEYS}  # fmt: skip
    return [f"{k} {got[k]!r} (deployed {want[k]!r})" for k in want if got[k] != want[k]]


def live_configuration(live: Mapping[str, Any]) -> dict[str, Any]:
    """`FunctionOut`'s fields of a function as `GetFunctionConfiguration` returns it."""
    return {
        "handler": live.get("Handler"),
        "role": live.get("Role"),
        "environment": dict((live.get("Environment") or {}).get("Variables") or {}),
        "layers": [x.get("Arn") for x in live.get("Layers") or []],
    }


def configuration_digest(configuration: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a configuration's `FunctionOut` fields as sorted, compact JSON: what a record too large for an
    environment variable holds of another function's configuration (`contract.ENV_PEERS`)."""
    doc = {k: configuration.get(k, {} if k == "environment" else [] if k == "layers" else None) for k in
           CONFIGURATION_KEYS}  # fmt: skip
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def peer_differences(live: Mapping[str, Any], sha: str, digest: str) -> list[str]:
    """How another account's kit function (`live`) differs from its record in `contract.ENV_PEERS`."""
    out = [] if live.get("CodeSha256") == sha else [f"code SHA-256 {live.get('CodeSha256')!r} (deployed {sha!r})"]
    got = configuration_digest(live_configuration(live))
    return out + ([] if got == digest else [f"configuration digest {got!r} (deployed {digest!r})"])


def _same_input(live: str | None, deployed: str | None) -> bool:
    """Inputs compared as JSON where both parse (the service may re-serialise), else as text."""
    if live is None or deployed is None:
        return live == deployed
    try:
        return bool(json.loads(live) == json.loads(deployed))
    except ValueError:
        return live == deployed


def schedule_differences(live: Mapping[str, Any], target_arn: str, input: str | None) -> list[str]:
    """How a schedule as `GetSchedule` returns it differs from the deployed one (`ScheduleOut`'s target and input: a
    job run's request, its entry point, arguments, execution role); [] when it is the same."""
    target = live.get("Target") or {}
    changed = [] if target.get("Arn") == target_arn else [f"target {target.get('Arn')!r} (deployed {target_arn!r})"]
    return changed + ([] if _same_input(target.get("Input"), input) else ["input differs from the deployed one"])
