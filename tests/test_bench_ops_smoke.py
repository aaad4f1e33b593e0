"""Smoke tests of the ops-at-scale benchmark (issue 18): goals and Markdown from a results document (pure), and the
whole harness at its tiny scale against the emulator (no timing assertions)."""

from __future__ import annotations

from typing import Any

from bench import ops_scale as ob


def _doc(wall: float, rss: float, unknown: int = 0, heartbeat: bool = True) -> dict[str, Any]:
    kit = {
        "status": {"wall_s": wall, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1, "rows": 6,
                   "windows": 6, "unknown": 0},
        "monitor": {"wall_s": wall, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1, "unknown": 0,
                    "heartbeat": True},
        "harden": {"wall_s": wall, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1, "counts": {}},
        "audit": {"wall_s": wall, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1, "checked": {},
                  "drifts": {}},
        "monitor-throttled": {"wall_s": wall, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1,
                              "unknown": unknown, "heartbeat": heartbeat, "second_pass_tables": 3},
    }  # fmt: skip
    base = {
        t: {"scaled_s": 100.0, "per_table_s": 0.01, "sample_tables": 4}
        for t in ("status", "monitor", "harden", "audit")
    }
    return {"scale": "tiny", "config": {"tables": 2, "namespaces": 1, "destinations": 3, "sample": 4, "concurrency": 8},
            "kit": kit, "baseline": base}  # fmt: skip


def test_goals_and_markdown() -> None:
    good = _doc(wall=4.0, rss=100)
    assert all(g["met"] for g in ob.goals(good))  # 100 s / 4 s = 25x, 4 s, 100 MB, no unknown
    slow = _doc(wall=70.0, rss=600, unknown=2, heartbeat=False)
    missed = {g["goal"] for g in ob.goals(slow) if not g["met"]}
    assert "status: <= 60 s" in missed and "audit: peak RSS <= 500 MB" in missed
    assert "throttled monitor: 0 unknown, 0 crashes, heartbeat" in missed
    crashed = _doc(wall=4.0, rss=100)
    crashed["kit"]["harden"] = {"crashed": True, "stderr": "Traceback"}
    assert {"goal": "harden: runs", "value": "crashed", "met": False} in ob.goals(crashed)
    good["goals"] = ob.goals(good)
    md = ob.markdown(good)
    assert "## Ops tools at lake scale" in md and "| status | 4.0 s | 100 s | 25.0x |" in md
    assert ob.markdown(None) == ""


def test_tiny_run_end_to_end(tmp_path) -> None:
    doc = ob.run_ops_bench("tiny", tmp_path)
    assert doc["setup"]["replicas"] == 40
    for tool in ("status", "monitor", "harden", "audit", "monitor-throttled"):
        assert doc["kit"][tool]["crashed"] is False, doc["kit"][tool]
    assert doc["kit"]["status"]["rows"] == 40 and doc["kit"]["status"]["unknown"] == 0
    assert doc["kit"]["harden"]["counts"]["unchanged"] == 40
    assert doc["kit"]["audit"]["drifts"] == {}
    throttled = doc["kit"]["monitor-throttled"]
    assert throttled["unknown"] == 0 and throttled["heartbeat"] is True
