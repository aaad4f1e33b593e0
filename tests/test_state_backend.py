"""Team state (`[state]`) in the synthesized stacks: one state per stack in the configured backend, cross-stack
references reading the same backend, the Terraform version the features need, and no machine-specific path (the
same configuration synthesizes byte-identically in two directories)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.synth_fixtures import Synthesized

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]
# The lake (nine sources and replicas of one account) repeats the estate's stacks nine times: synthesizing it in a
# second directory proves nothing the others do not, at the cost of a synth.
# The seed holds every kind of stack (source, replica, recovery, organization, vault): a path that leaked into one
# kind's documents shows there; synthesizing every example again in a second directory cost a minute of CPU.
EXAMPLES = [ROOT / "examples" / "seed.toml"]
Stacks = dict[str, dict[str, Any]]
SYNTH_IN_CWD = """
import sys
from pathlib import Path
from s3tables_kit.infra.app import build_app
from s3tables_kit.topology.config import load_config
Path("cdktf.out").mkdir()
for p in sys.argv[1:]:
    build_app(load_config(p), outdir="cdktf.out/" + Path(p).stem).synth()
"""


def test_every_stack_has_its_own_state_in_the_configured_backend(synthesized: dict[str, Stacks]) -> None:
    seed = synthesized["seed"]
    for name, doc in seed.items():
        assert doc["terraform"]["backend"] == {"local": {"path": f"../../../terraform.{name}.tfstate"}}
        assert doc["terraform"]["required_version"] == ">= 1.5.0"
    multi = synthesized["multi-account"]
    keys = []
    for name, doc in multi.items():
        (s3,) = doc["terraform"]["backend"].values()
        assert doc["terraform"]["backend"].keys() == {"s3"}
        assert s3 == {
            "bucket": "lakehouse-terraform-state-111111111111",
            "key": f"s3tables-replica-kit/lakehouse/{name}.tfstate",
            "region": "eu-west-1",
            "encrypt": True,
            "kms_key_id": "arn:aws:kms:eu-west-1:111111111111:key/0b5d3e6a-2f4c-4e8b-9a7d-3c1e5f2a4b6d",
            "use_lockfile": True,
        }
        assert doc["terraform"]["required_version"] == ">= 1.10.0"  # S3 native locking
        keys.append(s3["key"])
    assert len(set(keys)) == len(multi)


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate"])
def test_cross_stack_references_read_the_producing_stacks_backend(synthesized: dict[str, Stacks], example: str) -> None:
    stacks = synthesized[example]
    seen = 0
    for doc in stacks.values():
        for ref, remote in doc.get("data", {}).get("terraform_remote_state", {}).items():
            producer = ref.removeprefix("cross-stack-reference-input-")
            ((btype, bconf),) = stacks[producer]["terraform"]["backend"].items()
            assert remote["backend"] == btype
            assert remote["config"] == {k: v for k, v in bconf.items() if k != "use_lockfile"}
            seen += 1
    assert seen >= 2  # source and recovery read replica bucket ARNs


def test_same_configuration_synthesizes_identically_in_two_directories(
    tmp_path: Path, synthesized: Synthesized
) -> None:
    """The session's synth (working directory: the repository, absolute outdir) against one in a subprocess whose
    working directory is elsewhere (relative outdir `cdktf.out`, as `cdktf synth` writes it): the same documents,
    naming neither directory."""
    elsewhere = tmp_path / "elsewhere" / "checkout"
    elsewhere.mkdir(parents=True)
    script = SYNTH_IN_CWD
    env = dict(os.environ, PYTHONPATH=str(ROOT), JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20")
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, EXAMPLES)],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    compared = 0
    for cfg in EXAMPLES:
        mine = synthesized[cfg.stem]
        theirs = sorted((elsewhere / "cdktf.out" / cfg.stem / "stacks").glob("*/cdk.tf.json"))
        assert sorted(mine) == [p.parent.name for p in theirs]
        for path in theirs:
            text = path.read_text()
            assert json.loads(text) == mine[path.parent.name], f"{cfg.stem}/{path.parent.name} differs"
            assert str(elsewhere) not in text and str(ROOT) not in json.dumps(mine[path.parent.name])
            compared += 1
    assert compared == 5  # source, replica, recovery, organization, vault
