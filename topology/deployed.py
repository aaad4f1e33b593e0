"""What a stack deployed that runs the kit's jobs (`deployed` in `kit_source`, `kit_replica` and `kit_recovery`,
`s3tables_kit.topology.outputs`): each Lambda function's code hash, each schedule's target and input, and the EMR
Serverless application's settings, as `make audit` compares them with what runs (`jobs/ops/audit_deployed.py`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from s3tables_kit.topology.deployed_compare import function_differences, schedule_differences

__all__ = ["function_differences", "schedule_differences"]  # the comparisons, importable without pydantic


class _Recorded(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")  # as every output model: a newer infra may add keys


class ScheduleOut(_Recorded):
    target_arn: str = Field(description="ARN of what the schedule invokes (a function, or the universal target).")
    input: str | None = Field(default=None, description="The target's input as deployed (a job run's request).")
    group: str | None = Field(default=None, description="The schedule's group; null: the default group.")


class ApplicationOut(_Recorded):
    release_label: str = Field(description="EMR release of the application.")
    image_uri: str | None = Field(default=None, description="A custom image; null: the release's own.")
    runtime_configuration: str | None = Field(
        default=None, description="The runtime configuration as JSON with sorted keys; null: none."
    )
    network_configuration: dict[str, list[str]] | None = Field(
        default=None, description="Subnets and security groups; null: none (the service's network)."
    )


class FunctionOut(_Recorded):
    """What of a function's configuration decides what it does besides its code (`GetFunctionConfiguration`)."""

    handler: str = Field(description="The entry point.")
    role: str = Field(description="The execution role's ARN.")
    environment: dict[str, str] = Field(default={}, description="The environment variables.")
    layers: list[str] = Field(default=[], description="The layers' ARNs (the kit deploys none).")


class DeployedOut(_Recorded):
    """What a stack deployed that runs the kit's jobs, as `audit` compares it with what runs
    (`jobs/ops/audit_deployed.py`): code, schedules and the EMR Serverless application."""

    functions: dict[str, str] = Field(default={}, description="Each Lambda function's name: its code's SHA-256.")
    schedules: dict[str, ScheduleOut] = Field(default={}, description="Each schedule's name: its target.")
    application: ApplicationOut | None = Field(default=None, description="The EMR Serverless application, if any.")
    configurations: dict[str, FunctionOut] = Field(
        default={}, description="Each function's name: its configuration, where recorded (compared with the code)."
    )


def deployed_value(
    functions: Mapping[str, str],
    schedules: Mapping[str, tuple[str, str | None]],
    application: Mapping[str, Any] | None = None,
    configurations: Mapping[str, Mapping[str, Any]] | None = None,
    groups: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The `deployed` entry of a stack's output (`DeployedOut`): {function name: code SHA-256}, {schedule name:
    (target ARN, input)}, the EMR Serverless application's settings (`ApplicationOut`'s fields), {function name:
    its configuration} (`FunctionOut`'s fields) and {schedule name: its group, where not the default}. The record a
    function's package holds to compare at every run is this value too (`jobs/ops/running.py`)."""
    out: dict[str, Any] = {
        "functions": dict(functions),
        "schedules": {
            n: {"target_arn": arn, "input": data} | ({"group": (groups or {})[n]} if n in (groups or {}) else {})
            for n, (arn, data) in schedules.items()
        },
    }
    if configurations:
        out["configurations"] = {n: dict(c) for n, c in configurations.items()}
    return out | ({"application": dict(application)} if application is not None else {})


def _canonical(value: object) -> str | None:
    """A configuration as the outputs record it: JSON with sorted keys; None when absent or empty."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if value else None


def application_differences(app: Mapping[str, Any], deployed: ApplicationOut) -> list[str]:
    """How an EMR Serverless application as `GetApplication` returns it (`application`) differs from the deployed
    one: one line per setting (release, image, runtime or network configuration); [] when it is the same. Read by
    `make audit` and by the scheduled job runs before they run in it."""
    live = {
        "release": app.get("releaseLabel"),
        "image": (app.get("imageConfiguration") or {}).get("imageUri"),
        "runtime configuration": _canonical(app.get("runtimeConfiguration")),
        "network configuration": app.get("networkConfiguration") or None,
    }
    want = {
        "release": deployed.release_label,
        "image": deployed.image_uri,
        "runtime configuration": deployed.runtime_configuration,
        "network configuration": deployed.network_configuration,
    }
    return [f"{k} {live[k]!r} (deployed {want[k]!r})" for k in want if live[k] != want[k]]


# The `deployed` field of `SourceOut`, `ReplicaOut` and `RecoveryOut`.
DEPLOYED = Field(default=None, description="What the stack deployed that runs the kit's jobs; null: not recorded.")


def deployed_field(deployed: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `deployed` entry of a stack's value, when the stack records one (the stand-in's outputs do not)."""
    return {"deployed": dict(deployed)} if deployed is not None else {}
