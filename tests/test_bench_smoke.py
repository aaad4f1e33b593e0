"""Smoke tests of the benchmark harness's pure parts: no Spark, no provider import, no timing assertions."""

from __future__ import annotations

import json

import pytest

from bench import eventlog
from bench.report import Comparison, Goal, Measurement, Results, console_table, fmt_num, ratio, render_markdown, speedup
from bench.run import comparisons, notes
from bench.synthscale import ESTATE_SOURCE_ACCOUNTS, count_tables, estate_config, scale_config


def test_ratio_and_speedup() -> None:
    assert ratio(3.0, 1.5) == 2.0
    assert ratio(None, 1.0) is None
    assert ratio(1.0, 0.0) is None
    assert speedup(30.0, 10.0) == 3.0  # baseline 30 s, kit 10 s -> 3x the throughput


@pytest.mark.parametrize(
    ("goal", "value", "met"),
    [
        (Goal(">=", 1.5), 1.5, True),
        (Goal(">=", 1.5), 1.49, False),
        (Goal("<=", 0.5), 0.5, True),
        (Goal("<", 3), 3.0, False),
        (Goal("<", 3), None, None),
    ],
)
def test_goal(goal: Goal, value: float | None, met: bool | None) -> None:
    assert goal.met(value) is met


def test_measurement_rates() -> None:
    m = Measurement("1", "x", 2.0, rows=1_000_000, bytes=100_000_000)
    assert m.rows_per_s == 500_000
    assert m.mb_per_s == 50
    assert Measurement("1", "y", None).rows_per_s is None
    assert fmt_num(1_760_000, "rows/s") == "1.76 M rows/s"
    assert fmt_num(620_000, "rows/s") == "620 k rows/s"


def _results() -> Results:
    res = Results("small", machine={"date": "2026-01-01 00:00 UTC", "cores": 2, "CPU model": "test | cpu"})
    res.measurements = [
        Measurement(
            "1", "round 1: (B) plain Spark CTAS, default settings", 30.0, 20_000_000, 200_000_000, load=(1.0, 2.0)
        ),
        Measurement("1", "(b) kit recovery, --copy-mode ctas: copy only", 20.0, 20_000_000),
        Measurement("1", "(d) raw file copy of the data files (cp -r, floor)", 0.2, 20_000_000),
        Measurement("2", "kit row fingerprint verification (both sides, one pass each)", 15.0, 20_000_000),
        Measurement("2", "EXCEPT ALL both ways (replica vs kit target)", 84.0, 20_000_000),
        Measurement("3", "kit: namespace of 50 tables", 100.0),
        Measurement("3", "baseline: one spark-submit per table, 50 in sequence", 700.0),
        Measurement("5", "dry-run plan of 100 tables (fresh interpreter, no JVM)", 1.2),
    ]
    # three interleaved rounds: kit file copy 4 s / 5 s / 6.5 s against CTAS 30 s and Arrow 12 s
    res.extra["rounds"] = {
        "rounds": [
            {"kit_copy_s": k, "ctas_s": 30.0, "arrow_s": 12.0, "kit_verify_s": v, "kit_copy_mb_per_s": 400.0}
            for k, v in ((4.0, 1.0), (5.0, 2.0), (6.5, 4.0))
        ]
    }
    res.extra["data"] = {"orders": {"bytes": 200_000_000}}
    res.extra["synth"] = {
        "wall_s": 55.0, "import_s": 32.0, "build_synth_s": 11.0, "build_s": 5.0, "synth_s": 6.0,
        "peak_tree_rss_kb": 1_400_000, "hwm_by_process_kb": {"python": 600_000, "node": 760_000},
        "resources": 2061, "stacks": ["source", "recovery"],
    }  # fmt: skip
    res.extra["synth_estate"] = {
        "sources": 50, "wall_s": 48.0, "import_s": 20.0, "build_s": 12.0, "synth_s": 10.0, "tables": 500,
        "resources": 1500, "stacks": ["source-s00-euw1", "recovery"],
    }  # fmt: skip
    res.comparisons = comparisons(res)
    return res


def test_comparisons_from_measurements() -> None:
    res = _results()
    by = {c.name: c for c in res.comparisons}
    vs_ctas = by["kit file copy (plan + copy + commit) vs default Spark CTAS"]
    assert vs_ctas.rounds == [7.5, 6.0, 30.0 / 6.5] and vs_ctas.value == 6.0  # median of the rounds
    assert vs_ctas.worst == 30.0 / 6.5 and vs_ctas.met is False  # the worst round (4.6x) misses 5x
    vs_arrow = by["kit file copy vs pyiceberg Arrow copy"]
    assert vs_arrow.value == 12.0 / 5.0 and vs_arrow.met is False  # worst 1.85x < 2x
    ver = by["file-copy verification / CTAS copy time"]
    assert ver.value == 2.0 / 30.0 and ver.worst == 4.0 / 30.0 and ver.met is False
    assert by["kit --copy-mode ctas (copy only) vs default Spark CTAS"].value == 1.5
    assert by["row fingerprint (--verify full) / CTAS-mode copy"].value == 0.75
    assert by["many tables: kit (one app) vs one spark-submit per table"].value == 7.0
    assert by["synth: peak RSS (Python + jsii node)"].met is True
    assert by["synth estate of 50 source buckets: wall time"].met is True  # 48 s <= 60 s
    assert by["planning: dry run of 100 tables, no JVM"].met is True
    # a measurement that did not run gives "n/a", not a crash
    res.measurements = [m for m in res.measurements if not m.name.startswith("(d)")]
    assert {c.name: c for c in comparisons(res)}["raw file copy (cp -r, floor) vs kit file copy"].value is None
    res.extra["rounds"]["rounds"] = [dict(r, kit_copy_s=4.0) for r in res.extra["rounds"]["rounds"]]
    assert {c.name: c for c in comparisons(res)}["kit file copy (plan + copy + commit) vs default Spark CTAS"].met


def test_markdown_and_console_render_every_figure() -> None:
    res = _results()
    res.notes = notes(res, {})
    res.profiles["p"] = "stage 1  1.0 s"
    md = render_markdown(res)
    assert md.startswith("# Benchmarks")
    assert "2026-01-01 00:00 UTC" in md
    assert "test \\| cpu" in md  # pipes escaped inside table cells
    for c in res.comparisons:
        assert c.name in md
    for m in res.measurements:
        assert m.name in md
    assert "**NOT met**" in md  # worst rounds miss the goals
    assert "median 6.00x (range 4.62x-7.50x, 3 rounds)" in md
    assert "RTO model (ESTIMATE" in md and "10 workers (40 vCPU)" in md
    assert "## Notes" in md and "## Profiles" in md
    text = console_table(res)
    assert "NOT met" in text and "met" in text
    json.dumps(res.as_dict())  # JSON-serialisable


def test_comparison_without_goal_has_no_verdict() -> None:
    c = Comparison("1", "x", 2.0, "x", "a / b")
    assert c.met is None
    assert c.as_dict()["goal"] is None


def test_scale_config_is_valid_and_has_the_requested_size() -> None:
    from s3tables_kit.topology.config import parse_config

    data = scale_config(destinations=5, tables=1000)
    assert count_tables(data) == 1000
    cfg = parse_config(data)
    assert len(cfg.replicas) == 5
    assert len(cfg.replicated_tables_of(cfg.sources[0])) == 1000
    assert len({r.site_key for r in cfg.replicas}) == 5
    small = parse_config(scale_config(destinations=2, tables=25, namespaces=3, table_level_replication=False))
    assert sum(len(ns.tables) for ns in small.sources[0].namespaces) == 25
    assert small.replication_of(small.sources[0]).mode == "bucket"
    with pytest.raises(ValueError):
        scale_config(destinations=6)


def test_estate_config_is_a_valid_estate_of_fifty_buckets() -> None:
    """The estate the synth benchmark builds: 50 source buckets in 5 accounts x 2 Regions, ten into each
    vault (fan-in), a few regional replicas; valid as the loader checks it (quotas, fan-in names)."""
    from collections import Counter

    from s3tables_kit.topology.config import parse_config

    data = estate_config(50)
    assert count_tables(data) == 500
    cfg = parse_config(data)
    assert cfg.scheme.key == "sources" and len(cfg.sources) == 50 and len({s.stack_id for s in cfg.sources}) == 50
    vaults = [r for r in cfg.replicas if r.bucket.startswith("estate-vault")]
    assert [len(cfg.sources_into(v)) for v in vaults] == [10] * 5
    assert {r.account_id for r in cfg.replicas if r not in vaults} == set(ESTATE_SOURCE_ACCOUNTS)
    assert {cfg.replication_of(s).mode for s in cfg.sources} == {"bucket", "tables"}
    sites = Counter((b.account_id, b.region) for b in (*cfg.sources, *cfg.replicas))
    assert max(sites.values()) <= 10  # table buckets per account and Region
    assert len(parse_config(estate_config(3, tables_per_source=4)).sources) == 3
    with pytest.raises(ValueError):
        estate_config(91)


PLAN = (
    "== Physical Plan ==\nAppendData (3)\n+- Exchange (2)\n   +- BatchScan (1)\n\n\n"
    "(1) BatchScan\nOutput [1]: [a#1]\n\n"
    "(2) Exchange\nInput [1]: [a#1]\nArguments: hashpartitioning(months(order_date#1), 4), "
    "REBALANCE_PARTITIONS_BY_COL, [plan_id=12]\n\n(3) AppendData\nArguments: x\n"
)


def test_eventlog_parse_and_attribute() -> None:
    lines = [
        json.dumps({"Event": "SparkListenerStageCompleted", "Stage Info": {
            "Stage ID": 3, "Stage Name": "sql at x", "Number of Tasks": 4, "Submission Time": 1000,
            "Completion Time": 6000, "Accumulables": [
                {"Name": "internal.metrics.executorRunTime", "Value": 9000},
                {"Name": "internal.metrics.executorCpuTime", "Value": 6_000_000_000},
                {"Name": "internal.metrics.shuffle.write.bytesWritten", "Value": "250000000"},
            ]}}),
        json.dumps({"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 1,
                    "time": 900, "description": "sql at x", "physicalPlanDescription": PLAN}),
        json.dumps({"Event": "SparkListenerJobStart", "Job ID": 0, "Stage IDs": [3],
                    "Properties": {"spark.sql.execution.id": "1"}}),
        "not json",
        json.dumps({"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 9, "Submission Time": 99_000,
                                                                             "Completion Time": 99_500}}),
    ]  # fmt: skip
    log = eventlog.parse(lines)
    assert set(log.stages) == {3, 9}
    pps = eventlog.attribute(log, [eventlog.Phase("ctas", 500, 7000)])
    s = pps[0].summary()
    assert s["stages"] == 1
    assert s["shuffle_write_mb"] == 250
    assert s["cpu_share_of_run"] == pytest.approx(6 / 9)
    assert log.sql[1].kind == "write (AppendData)"
    assert pps[0].by_kind(log)["write (AppendData)"]["stages"] == 1
    text = eventlog.render(pps, log=log)
    assert "Exchange hashpartitioning" in text
    assert "#1" not in text and "plan_id" not in text
    assert "write (AppendData): 1 stage(s)" in text
    fp = eventlog.SqlExecution(2, 0, None, "", "== Physical Plan ==\nHashAggregate (3)\n... xxhash64(a#1) ...")
    assert fp.kind == "verification fingerprint (aggregate)"


def test_every_scale_runs_every_section_and_quick_is_the_smallest() -> None:
    """`BENCH_SCALE=quick` runs every section of `bench.run.main` (no timing here: only that each section is wired
    in and sized at every scale, and that quick is nowhere larger than small)."""
    import dataclasses
    import inspect
    import re

    from bench import ops_estate, ops_scale, recovery, run
    from bench.plan import PLANS, SECTIONS, BenchPlan

    steps = set(re.findall(r'step\(\s*"([^"]+)"', inspect.getsource(run.main)))
    assert steps - {"setup: data in the source warehouse, relocated into the replica"} == set(SECTIONS)
    fields = {f.name for f in dataclasses.fields(BenchPlan)}
    assert {f for sized_by in SECTIONS.values() for f in sized_by} == fields  # every size belongs to a section
    assert set(PLANS) == {"quick", "small", "full"}
    for plan in PLANS.values():
        assert plan.data in recovery.SCALES and plan.ops in ops_scale.SCALES
        assert plan.ops_estate in ops_estate.ESTATE_SCALES
        assert all(getattr(plan, f) for f in fields)  # no section sized to nothing
    quick, small = PLANS["quick"], PLANS["small"]
    for f in fields - {"data", "ops", "ops_estate"}:
        assert getattr(quick, f) <= getattr(small, f), f
    q, s = recovery.SCALES[quick.data], recovery.SCALES[small.data]
    assert q.orders_rows < s.orders_rows and q.many_tables <= s.many_tables and q.synth_tables <= s.synth_tables
    assert ops_scale.SCALES[quick.ops].tables <= ops_scale.SCALES[small.ops].tables


def test_bench_backup_comparisons() -> None:
    from bench.backup import comparisons as backup_comparisons

    res = Results("quick", machine={})
    res.extra["backup"] = {
        # the same table into the stand-in: the backup took twice the recovery's time, then half of it
        "full_rounds": [
            {"recovery_s": 5.0, "backup_s": 10.0, "recovery_copy_s": 4.0, "backup_copy_s": 4.0},
            {"recovery_s": 6.0, "backup_s": 3.0, "recovery_copy_s": 2.0, "backup_copy_s": 2.5},
        ],
        "incremental": {
            "copied_bytes": 1_000,
            "restorable_bytes": 100,
            "added_bytes": 900,
            "other_metadata_bytes": 100,
        },
    }
    rate, stage, incremental = backup_comparisons(res)
    assert rate.rounds == [0.5, 2.0] and rate.value == 1.25  # the median of the rounds' rate ratios
    assert rate.goal is not None and rate.goal.met(min(rate.rounds)) is False  # the slower round is below the copy
    assert stage.rounds == [1.0, 0.8] and stage.goal is None  # a diagnostic beside the goal
    assert incremental.value == 1.1 and incremental.goal is not None and incremental.goal.met(1.1) is True
    assert [c.value for c in backup_comparisons(Results("quick", machine={}))] == [None, None, None]
