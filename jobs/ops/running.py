"""What runs is what was deployed, at every run of the source monitor and of the replica-side freshness check: the
package's `kit_declared.json` may hold the deploy's record (`DECLARED_DEPLOYED`: `DeployedOut`) of the other kit
functions and the schedules of the function's own account, and of another account's monitor (named by ARN: the
freshness check's record of the monitors feeding its replicas); the monitor's environment (`contract.ENV_PEERS`)
holds its record of the freshness checks of its replicas' accounts. Each is read (`lambda:GetFunctionConfiguration`,
`scheduler:GetSchedule`) and compared through `s3tables_kit.topology.deployed`, the comparison `make audit` uses.
A difference, or a resource that cannot be read, is a finding: one log line each, `DeployedChanged` published, then
the run raises, so the function's AWS/Lambda `Errors` (written by Lambda only) fires its `-failing` alarm.

The record travels inside the checker's own code package: whoever rewrites it changes that function's code hash,
which the deploy's record in another function (and `make audit`) holds; a function never vouches for itself
(docs/decisions/0039-what-runs-is-what-was-deployed-alarmed.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.sdk import describe_error
from s3tables_kit.topology import contract
from s3tables_kit.topology.deployed_compare import function_differences, peer_differences, schedule_differences

FINDING = "deployed-changed"  # the log lines' prefix, as the detection drill names it


class DeployedChanged(RuntimeError):
    """What runs in the account is not what the deploy recorded (or could not be read): a failed run."""


def recorded(declared_file: Path) -> Mapping[str, Any] | None:
    """The deploy's record in the package's declared file (`DeployedOut` as JSON); None when the package holds none
    (nothing to compare)."""
    if not declared_file.is_file():
        return None
    doc: Mapping[str, Any] = json.loads(declared_file.read_text(encoding="utf-8"))
    record: Mapping[str, Any] | None = doc.get(contract.DECLARED_DEPLOYED)
    return record


def _read(op: Callable[..., Any], **request: Any) -> tuple[dict[str, Any] | None, str | None]:
    try:
        got: dict[str, Any] = op(**request)
    except (ClientError, BotoCoreError) as exc:
        return None, f"not read: {describe_error(exc)}"
    return got, None


def running_findings(clients: Clients, region: str, deployed: Mapping[str, Any]) -> list[str]:
    """One line per function or schedule of `deployed` (in `region` of the caller's account) that differs from the
    record or cannot be read; [] when all is as deployed."""
    scheduler = clients.client("scheduler", region)
    out: list[str] = []
    configurations = deployed.get("configurations") or {}
    for name, sha in sorted((deployed.get("functions") or {}).items()):
        live, error = _read(_lambda(clients, name, region).get_function_configuration, FunctionName=name)
        if live is not None and name.startswith("arn:"):  # another account's monitor: its record of us is not ours
            live = _without_peers(live)
        found = [error] if live is None else function_differences(live, sha, configurations.get(name))
        out += [f"function {name}: {f}" for f in found if f]
    for name, schedule in sorted((deployed.get("schedules") or {}).items()):
        group = {"GroupName": schedule["group"]} if schedule.get("group") else {}
        live, error = _read(scheduler.get_schedule, Name=name, **group)
        found = [error] if live is None else schedule_differences(live, schedule["target_arn"], schedule.get("input"))
        out += [f"schedule {name}: {f}" for f in found if f]
    return out


def _lambda(clients: Clients, name: str, region: str) -> Any:
    """A Lambda client in the Region of a function named by ARN (another account's), else in `region`."""
    return clients.client("lambda", name.split(":")[3] if name.startswith("arn:") else region)


def _without_peers(live: dict[str, Any]) -> dict[str, Any]:
    env = dict((live.get("Environment") or {}).get("Variables") or {})
    env.pop(contract.ENV_PEERS, None)
    return live | {"Environment": {"Variables": env}}


def peers(environ: Mapping[str, str]) -> Mapping[str, Any] | None:
    """The record of other accounts' kit functions in the environment (`contract.ENV_PEERS`); None without it."""
    text = environ.get(contract.ENV_PEERS)
    return json.loads(text) if text else None


def peer_findings(clients: Clients, recorded_peers: Mapping[str, Any]) -> list[str]:
    """One line per function of another account (by ARN, read through its resource policy) that differs from
    `recorded_peers` ({ARN: {"code", "configuration"}}) or cannot be read."""
    out: list[str] = []
    for arn, want in sorted(recorded_peers.items()):
        live, error = _read(_lambda(clients, arn, "").get_function_configuration, FunctionName=arn)
        found = [error] if live is None else peer_differences(live, want["code"], want["configuration"])
        out += [f"function {arn}: {f}" for f in found if f]
    return out


def check_running(
    clients: Clients,
    region: str,
    deployed: Mapping[str, Any] | None,
    *,
    kit: str,
    publish: Callable[[list[dict[str, Any]]], object],
    recorded_peers: Mapping[str, Any] | None = None,
) -> list[str]:
    """Compare (the account's record `deployed`, and `recorded_peers`: other accounts' kit functions), print one line
    per finding, publish `DeployedChanged` (Kit) and raise `DeployedChanged` when there is any; nothing without a
    record."""
    if deployed is None and recorded_peers is None:
        return []
    found = running_findings(clients, region, deployed) if deployed is not None else []
    found += peer_findings(clients, recorded_peers) if recorded_peers is not None else []
    for f in found:
        print(
            f"{FINDING}: {f} (CloudTrail UpdateFunctionCode, UpdateFunctionConfiguration, UpdateSchedule; make audit)"
        )
    datum = {"MetricName": contract.DEPLOYED_CHANGED, "Value": float(len(found)), "Unit": "Count",
             "Dimensions": [{"Name": "Kit", "Value": kit}], "Timestamp": datetime.now(UTC)}  # fmt: skip
    publish([datum])
    if found:
        raise DeployedChanged(f"{len(found)} deployed resource(s) not as deployed: {found}")
    return found
