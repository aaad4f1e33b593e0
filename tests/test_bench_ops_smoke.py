"""Smoke tests of the ops-at-scale benchmark: goals and Markdown from a results document (pure), and the
whole harness at its tiny scale against the emulator (no timing assertions)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import ops_estate as oe
from bench import ops_scale as ob


def _doc(wall: float, rss: float, unknown: int = 0, heartbeat: bool = True) -> dict[str, Any]:
    kit = {
        "status": {"wall_s": wall, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1, "rows": 6,
                   "windows": 6, "unknown": 0},
        "status-warm": {"wall_s": wall / 2, "peak_rss_mb": rss, "client_cpu_s": 1, "emulator_cpu_s": 1, "rows": 6,
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
    assert "status-warm: <= 60 s" not in missed and "status-warm: peak RSS <= 500 MB" in missed  # 35 s, 600 MB
    assert "throttled monitor: 0 unknown, 0 crashes, heartbeat" in missed
    crashed = _doc(wall=4.0, rss=100)
    crashed["kit"]["harden"] = {"crashed": True, "stderr": "Traceback"}
    assert {"goal": "harden: runs", "value": "crashed", "met": False} in ob.goals(crashed)
    good["goals"] = ob.goals(good)
    md = ob.markdown(good)
    assert "## Ops tools at lake scale" in md and "| status | 4.0 s | 100 s | 25.0x |" in md
    assert "| status-warm | 2.0 s | 100 s | 50.0x |" in md  # the warm run against the same hand-scripted baseline
    assert ob.markdown(None) == ""


@pytest.mark.extended  # the harness at its tiny scale; `make bench` runs it at every scale
def test_tiny_run_end_to_end(tmp_path) -> None:
    doc = ob.run_ops_bench("tiny", tmp_path)
    assert doc["setup"]["replicas"] == 40
    for tool in ("status", "status-warm", "monitor", "harden", "audit", "monitor-throttled"):
        assert doc["kit"][tool]["crashed"] is False, doc["kit"][tool]
    for run in ("status", "status-warm"):
        assert doc["kit"][run]["rows"] == 40 and doc["kit"][run]["unknown"] == 0 and doc["kit"][run]["windows"] == 40
    # the first run reads each replica with one loadTable; the warm run its metadata location, and no metadata file
    cold, warm = doc["kit"]["status"]["requests"], doc["kit"]["status-warm"]["requests"]
    assert cold["LoadTable"] == 40 and "GetObject" not in cold and "GetTableMetadataLocation" not in cold
    assert warm["GetTableMetadataLocation"] == 40 and "GetObject" not in warm and "LoadTable" not in warm
    assert doc["kit"]["harden"]["counts"]["unchanged"] == 40
    assert doc["kit"]["audit"]["drifts"] == {}
    throttled = doc["kit"]["monitor-throttled"]
    assert throttled["unknown"] == 0 and throttled["heartbeat"] is True


def test_limits_name_the_floor_from_the_runs_own_figures() -> None:
    """70,000 requests, 140 s of tool CPU and 80 s of emulator CPU on 2 cores: the CPU floor (110 s) is above the
    latency floor (about 30 s at concurrency 64), so the tool is CPU-bound here."""
    x = {"client_cpu_s": 140.0, "emulator_cpu_s": 80.0,
         "requests": {"GetTableReplicationStatus": 10_000, "GetTable": 30_000, "GetObject": 30_000}}  # fmt: skip
    lim = ob.limits(x, concurrency=64, cores=2)
    assert lim is not None
    assert lim["requests"] == 70_000 and lim["bound"] == "CPU"
    assert lim["cpu_floor_s"] == 110.0
    assert abs(lim["latency_floor_s"] - (40_000 * 0.030 + 30_000 * 0.020) / 64) < 1e-9
    assert abs(lim["client_ms_per_request"] - 2.0) < 1e-9
    # with the service's latency alone the emulator's 80 s go: the tool's 140 s over 2 cores, above the latency floor
    assert lim["aws_estimate_s"] == 70.0
    fast = ob.limits({"client_cpu_s": 1.0, "emulator_cpu_s": 1.0, "requests": {"GetTable": 10_000}}, 8, 2)
    assert fast is not None and fast["bound"] == "latency"
    assert fast["aws_estimate_s"] == fast["latency_floor_s"]
    assert ob.limits({"client_cpu_s": 1.0, "emulator_cpu_s": 1.0, "requests": {}}, 8, 2) is None


def test_requests_between_sums_s3_buckets() -> None:
    before = {"calls": {"GetTable": 5}, "s3_calls": {"b1 GetObject": 1}}
    after = {"calls": {"GetTable": 8, "ListTables": 1}, "s3_calls": {"b1 GetObject": 2, "b2 GetObject": 4}}
    assert ob.requests_between(before, after) == {"GetObject": 5, "GetTable": 3, "ListTables": 1}


def test_recover_scale_goals_and_markdown() -> None:
    from bench import recover_scale as rs

    plan = {"tables": 10_000, "namespaces": 100, "destinations": 3, "latency_ms": 30.0, "s3_latency_ms": 20.0,
            "sample": 200, "serial_per_table_ms": 150.0, "baseline_scaled_s": 1500.0, "plan_s": 50.0, "speedup": 30.0,
            "planned": 10_000, "plan_errors": 0, "peak_rss_mb": 240.0, "calls": {"GetTable": 10_200}}  # fmt: skip
    row = {"wall_s": 15.0, "tables_per_min": 800.0, "phases_s_sum": {"copy": 1.0}}
    many = {"tables": 200, "avg_file_kb": 15.0, "cores": 2, "startup_s": 5.0, "worst_batch_tables_per_min": 550.0,
            "rounds": [{"round": 1, "order": ["batch", "per-table"], "batch": row, "per-table": row,
                        "speedup": 1.0}]}  # fmt: skip
    verdicts = {g["goal"]: g["met"] for g in rs.goals({"plan": plan, "many": many})}
    assert verdicts["dry-run plan of 10,000 tables: <= 60 s"] is True
    assert verdicts["dry-run plan: >= 20x the serial per-table plan"] is True
    assert verdicts["many small tables (200, file copy): worst round >= 600 tables/min"] is False  # 550 < 600
    failed = rs.goals({"plan": {"error": "RuntimeError: boom"}, "many": many})
    assert {"goal": "dry-run plan: runs", "value": "RuntimeError: boom", "met": False} in failed
    md = rs.markdown({"plan": plan, "many": many})
    assert "**50.0 s** (30.0x)" in md and "| 1 | batch first, per-table second | 15.0 s | 800 |" in md
    assert "| many small tables (200, file copy): worst round >= 600 tables/min | 550.0 | NO |" in md
    assert rs.markdown(None) == ""


def test_the_estate_estimate_scales_the_runs_figures_per_table() -> None:
    """A run over 1,500 tables: 4,500 requests (30 ms each) at concurrency 64, 12 s of tool CPU of which 10 s in the
    tool's run (2 s start-up) on 2 cores. At 30,000 tables (x20): latency floor 20 x 2.1 s = 42 s, CPU (2 + 200) / 2
    = 101 s: CPU-bound, 101 s."""
    x = {"client_cpu_s": 12.0, "work_cpu_s": 10.0, "emulator_cpu_s": 6.0, "wall_s": 9.0,
         "requests": {"GetTableReplicationStatus": 1_500, "GetTable": 3_000}}  # fmt: skip
    est = oe.estate_estimate(x, tables=1_500, target_tables=30_000, concurrency=64, cores=2)
    assert abs(est["latency_floor_s"] - 20 * 4_500 * 0.030 / 64) < 1e-9
    assert est["client_cpu_floor_s"] == 101.0 and est["aws_estimate_s"] == 101.0 and est["bound"] == "CPU"
    assert est["requests_per_table"] == 3.0 and abs(est["client_ms_per_table"] - 10_000 / 1_500) < 1e-9
    # fast tool CPU: the latency floor bounds it
    quick = oe.estate_estimate(x | {"client_cpu_s": 0.3, "work_cpu_s": 0.2}, 1_500, 30_000, 64, 2)
    assert quick["bound"] == "latency" and quick["aws_estimate_s"] == quick["latency_floor_s"]
    doc = {"config": {"sources": 3, "namespaces": 5, "tables_per_namespace": 100},
           "kit": {"status": x, "audit": {"crashed": True}}, "estimate": {"status": est}}  # fmt: skip
    md = oe.estate_markdown(doc)
    assert "estimate for 3 x 10,000 tables, service latency alone" in md
    assert "| status, cold cache | 9.0 s (0 rows, 0 unknown; processes 1, 0 MB) | - | 4,500 (GetTable 3,000, " in md
    assert "| 6.7 ms |" in md and "| 101 s | CPU |" in md
    assert "| audit, cold cache | crashed |" in md
    doc |= {"scale": "scaled", "cores": 2, "setup": {"tables": 1_500}}
    doc["config"]["concurrency"] = 64
    section = oe.section_markdown(doc)
    assert "### An estate: status and audit over every bucket" in section and md.rstrip() in section
    assert "- status, cold cache: 9.0 s (the goal is defined at 3 x 10,000 tables); bound by CPU here" in section
    doc["config"] |= {"namespaces": 100, "tables_per_namespace": 100}
    assert "- status, cold cache: 9.0 s, meets the 60 s goal; bound by CPU" in oe.section_markdown(doc)
    assert oe.section_markdown(None) == ""


def test_the_estate_scenario_is_a_valid_estate() -> None:
    from s3tables_kit.topology.config import parse_config

    cfg = parse_config(oe.estate_config_doc(oe.ESTATE_SCALES["tiny"]))
    assert cfg.scheme.key == "sources" and [s.stack_id for s in cfg.sources] == ["source-s0", "source-s1", "source-s2"]
    assert [[r.bucket for r in cfg.destinations_of(s)] for s in cfg.sources] == [
        ["lake-rep-0"],
        ["lake-rep-1"],
        ["lake-rep-2"],
    ]
