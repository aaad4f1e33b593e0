"""The failover drill (`make failover-drill`) end to end: emulator + Spark with the S3 Tables client catalog, no AWS.
Runs in a subprocess (its own emulator and JVM), as `make failover-drill` does from a fresh clone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3tables_kit.topology import paths

pytestmark = [pytest.mark.spark, pytest.mark.extended]  # its steps: test_failover, test_failover_planned


def test_failover_drill_prints_rpo_and_rto_and_the_planned_round_trip(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT)}
    env.pop("AWS_ENDPOINT_URL", None)
    r = subprocess.run(
        [sys.executable, "-m", "harness.drills.failover", "--out", str(tmp_path / "out")],
        cwd=paths.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    out = r.stdout
    assert "== done. SUCCESS" in out
    assert "promoted.analytics.orders: 4 rows" in out  # point in time before the bad commit, then a Spark write
    assert "promoted.analytics.customers: 3 rows" in out
    assert "  RPO: at least since " in out and "  RTO: " in out
    for direction in ("out", "back"):  # the planned round trip
        assert f"  planned {direction}: RPO 0 (snapshot ids equal for 2/2 tables), write outage " in out
    assert out.count("a writer's commit during the freeze: AccessDeniedException") == 2
    assert len(list((tmp_path / "out" / "reports").glob("*/report.json"))) == 2
