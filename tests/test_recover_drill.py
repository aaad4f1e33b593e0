"""`make demo`'s drill end to end (subprocess: the drill owns and stops its SparkSession), into a temporary dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3tables_kit.topology import paths

pytestmark = pytest.mark.spark


def test_drill_prints_the_walkthrough(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "harness.drills.demo", "--out", str(tmp_path / "demo-out")],
        cwd=paths.ROOT,
        env={**os.environ, "PYTHONPATH": str(paths.ROOT)},
        capture_output=True,
        text=True,
        timeout=400,
    )
    out = r.stdout
    assert r.returncode == 0, out[-3000:] + r.stderr[-3000:]
    assert "SELECT count(*) FROM replica.analytics.orders -> 6 rows" in out
    assert "snapshot history (6 snapshots)" in out
    assert (
        "recovery.recovered.orders: 6 rows; replica EXCEPT ALL recovered = 0 rows, recovered EXCEPT ALL replica = 0"
        in out
    )
    assert "recovery.recovered.orders_asof: 5 rows; replica EXCEPT ALL recovered = 0 rows" in out
    for verb in ("INSERT", "UPDATE", "DELETE"):
        assert f"{verb} on recovery.recovered.orders: ok" in out
        assert f"{verb} on replica.analytics.orders: refused" in out
    assert out.count("recovery mode used: FILES") == 2  # the drill shows which mode each recovery used
    assert out.count("row fingerprint") >= 2  # and runs the full fingerprint (--verify full) after the file copy
    assert "SUCCESS" in out
    # the stand-in replica keeps its metadata history: the as-of properties come from the recovery point's file
    assert "warning" not in out.lower(), [ln for ln in out.splitlines() if "warning" in ln.lower()]
    assert "properties: as of" in out and "metadata file v6.metadata.json" in out
    assert list((tmp_path / "demo-out" / "report").glob("*/*/report.md"))
