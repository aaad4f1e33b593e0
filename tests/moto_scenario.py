"""Run a scenario module in a subprocess against its own emulator (`emulator.process.Emulator`) on a free port.

The production catalog path (S3 Tables client catalog jar + boto3) must run in a process whose JVM sees the AWS
environment of the moto endpoint, so the scenario is a module run with `python -m`; the server is the kit's moto
extension (`emulator/`, which also carries the UpdateTableMetadataLocation response fix the jar needs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from emulator.process import Emulator
from s3tables_kit.topology import paths


def run_scenario(module: str, tmp_path: Path, *, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m <module> <endpoint> <reports dir>` with a moto server up for its whole run; returns the result."""
    env = {
        **os.environ,
        "PYTHONPATH": str(paths.ROOT),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MOTO_ALLOW_NONEXISTENT_REGION": "true",
    }
    env.pop("AWS_ENDPOINT_URL", None)
    with Emulator(log=tmp_path / "moto.log") as emu:
        endpoint = emu.url
        return subprocess.run(
            [sys.executable, "-m", module, endpoint, str(tmp_path / "reports")],
            cwd=paths.ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
