"""Session fixtures: synthesise every example once (the provider bindings are imported once per test session)."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


Synthesized = dict[str, dict[str, dict[str, Any]]]


def _synth_all(outdir: Path) -> Synthesized:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from s3tables_kit.infra.golden import synth_example

    return {cfg.stem: synth_example(cfg, outdir / f"synth-{cfg.stem}") for cfg in EXAMPLES}


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """{example stem: {stack id: parsed cdk.tf.json}} from a full App.synth() of each example.

    Under xdist the first worker that needs it synthesizes for the whole run (the workers share the run's base
    directory; a lock makes the others wait, then read its JSON): each worker synthesizing every example for itself
    cost four times the CPU for the same bytes."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return _synth_all(tmp_path_factory.mktemp("synth"))
    shared = tmp_path_factory.getbasetemp().parent / f"synth-{run}"
    shared.mkdir(exist_ok=True)
    done = shared / "stacks.json"
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the synth raised
        if not done.exists():
            partial = shared / "stacks.json.partial"
            partial.write_text(json.dumps(_synth_all(shared)))
            partial.replace(done)
    parsed: Synthesized = json.loads(done.read_text())
    return parsed


def attached_scps_per_target(stacks: dict[str, dict[str, Any]]) -> dict[str, int]:
    """From the synthesized organization stack: how many SCPs (not RCPs) the kit attaches to each root, OU or
    account."""
    org = stacks.get("organization", {}).get("resource", {})
    scps = {
        f"${{aws_organizations_policy.{n}.id}}"
        for n, body in org.get("aws_organizations_policy", {}).items()
        if body["type"] == "SERVICE_CONTROL_POLICY"
    }
    out: dict[str, int] = {}
    for body in org.get("aws_organizations_policy_attachment", {}).values():
        if body["policy_id"] in scps:
            out[body["target_id"]] = out.get(body["target_id"], 0) + 1
    return out


def terraform_toolchain() -> tuple[Path, Path]:
    """Terraform and the local provider mirror (`s3tables_kit.infra.validate`'s discovery); skips without them, fails
    under CI (the CI image ships both)."""
    from s3tables_kit.infra import validate

    terraform, mirror = validate.find_terraform(), validate.find_mirror()
    if terraform is None or mirror is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true but no terraform or provider mirror on this machine")
        pytest.skip("no terraform or provider filesystem mirror on this machine (see `make validate`)")
    return terraform, mirror
