"""The provider bindings load lazily (infra/bindings.py): synthesizing imports only the resource modules the kit
uses, not the ~2,200 that the package's own `__init__` imports; the goldens prove the stacks are unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import sys
from s3tables_kit.infra.app import build_app
P = "cdktf_cdktf_provider_aws."
print(len([m for m in sys.modules if m.startswith(P)]), P + "kms_key" in sys.modules, P + "xray_group" in sys.modules)
"""


@pytest.mark.synth
def test_the_kit_imports_only_the_provider_modules_it_uses() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, kms, xray = proc.stdout.split()[-3:]
    assert (kms, xray) == ("True", "False") and int(count) < 200, proc.stdout
