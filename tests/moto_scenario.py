"""Run a scenario module in a subprocess against its own `tests.moto_ext` server on a free loopback port.

The production catalog path (S3 Tables client catalog jar + boto3) must run in a process whose JVM sees the AWS
environment of the moto endpoint, so the scenario is a module run with `python -m`; the server is the kit's moto
extension (`tests/moto_ext`, which also carries the UpdateTableMetadataLocation response fix the jar needs).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from jobs.spark import REPO_ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_scenario(module: str, tmp_path: Path, *, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m <module> <endpoint> <reports dir>` with a moto server up for its whole run; returns the result."""
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MOTO_ALLOW_NONEXISTENT_REGION": "true",
    }
    env.pop("AWS_ENDPOINT_URL", None)
    with (tmp_path / "moto.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.moto_ext.server", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        return subprocess.run(
            [sys.executable, "-m", module, endpoint, str(tmp_path / "reports")],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
