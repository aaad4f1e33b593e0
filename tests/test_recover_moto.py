"""Stretch (issue 4, item 10): the production catalog path — S3 Tables client catalog jar + boto3 metadata — against
a local moto server (own free loopback port; the ops fixture owns 4566). Runs in a subprocess: its JVM must see the
AWS environment of the moto endpoint."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.spark import REPO_ROOT

pytestmark = pytest.mark.spark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_client_catalog_jar_against_moto(tmp_path: Path) -> None:
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
            [sys.executable, "-m", "tests.recover_moto_server", "-H", "127.0.0.1", "-p", str(port)],
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
        r = subprocess.run(
            [sys.executable, "-m", "tests.recover_moto_scenario", endpoint, str(tmp_path / "reports")],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result == {"dry": 0, "real": 0, "rows": 3, "recovery_tables": ["orders"]}
    assert "VERIFIED (files): 3 rows" in r.stderr  # auto: the file copy, checked by stored checksums
