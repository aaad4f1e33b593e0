"""Smoke tests of the discovery benchmark: goals and Markdown from a results document (pure), and the whole harness at
its tiny scale against the emulator (no timing assertion)."""

from __future__ import annotations

from typing import Any

from bench import discover_scale as ds
from bench.plan import PLANS


def _doc(wall: float, tables: int = 60) -> dict[str, Any]:
    sc = ds.SCALES["tiny"]
    per_bucket = sc.namespaces * sc.tables_per_namespace
    backfill = {
        f"arn:aws:s3tables:{ds.DST_REGION}:{ds.ACCOUNT}:bucket/lake-{i}-{ds.DST_REGION}": per_bucket * ds.FILE_SIZE
        for i in range(sc.buckets)
    }
    kit = {"wall_s": wall, "crashed": False, "tables": tables, "bytes": tables * ds.FILE_SIZE, "backfill": backfill,
           "second_pass": 0, "requests": {"LoadTable": 60, "GetTablePolicy": 60}, "emulator_cpu_s": 1.0}  # fmt: skip
    return {"scale": "tiny", "config": {**sc.__dict__, "tables": sc.tables}, "kit": kit,
            "baseline": {"scaled_s": 100.0, "sample_tables": 6}}  # fmt: skip


def test_goals_and_markdown() -> None:
    good = _doc(wall=4.0)
    assert all(g["met"] for g in ds.goals(good))
    missed = {g["goal"] for g in ds.goals(_doc(wall=70.0, tables=59)) if not g["met"]}
    assert missed == {"discover 60 tables: <= 60 s", "every table read, bytes per destination = sum of the summaries"}
    good["goals"] = ds.goals(good)
    md = ds.markdown(good)
    assert "## Discovery of a live lake (scale tiny)" in md and "| discover | 4.0 s | 100 s | 25.0x |" in md
    assert ds.markdown(None) == ""


def test_every_bench_scale_names_a_discovery_scale() -> None:
    assert [ds.scale_named(p.discover_tables) for p in PLANS.values()] == ["tiny", "small", "full"]
    assert ds.SCALES["full"].tables == 30_000 and ds.SCALES["full"].buckets == 3


def test_tiny_run_end_to_end() -> None:
    doc = ds.run_discover_bench("tiny")
    assert doc["kit"]["crashed"] is False, doc["kit"]
    assert doc["kit"]["tables"] == 60 and doc["goals"][1]["met"], doc["goals"]
    assert doc["kit"]["requests"]["LoadTable"] == 60 and doc["baseline"]["tables"] == 60
