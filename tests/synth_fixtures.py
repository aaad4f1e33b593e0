"""Session fixtures: synthesise every example once (the provider bindings are imported once per test session)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """{example stem: {stack id: parsed cdk.tf.json}} from a full App.synth() of each example."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from s3tables_kit.infra.golden import synth_example

    return {cfg.stem: synth_example(cfg, tmp_path_factory.mktemp(f"synth-{cfg.stem}")) for cfg in EXAMPLES}


def terraform_toolchain() -> tuple[Path, Path]:
    """Terraform and the local provider mirror (`infra.validate`'s discovery); skips without them, fails under CI
    (the CI image ships both)."""
    from s3tables_kit.infra import validate as V

    terraform, mirror = V.find_terraform(), V.find_mirror()
    if terraform is None or mirror is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true but no terraform or provider mirror on this machine")
        pytest.skip("no terraform or provider filesystem mirror on this machine (see `make validate`)")
    return terraform, mirror
