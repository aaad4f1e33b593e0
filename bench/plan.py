"""What each `BENCH_SCALE` runs: every section of `make bench` at every scale, only the sizes differ.

* ``quick``: every section at its smallest meaningful size, within 10 minutes on 2 cores: a check that every
  section still runs and prints its ratio against a baseline measured in the same run, for every change; the
  figures are too small to quote.
* ``small`` (default): a few more rows and tables, a few minutes more.
* ``full``: the sizes the goals are defined for (`BENCHMARKS.md`).

`SECTIONS` names every section `bench.run.main` runs, with the `BenchPlan` field that sizes it: a section is wired into
a scale when its size there is set (`tests/test_bench_smoke.py` checks every scale runs every section).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchPlan:
    data: str  # `bench.recovery.SCALES` key: the orders table, the many-tables namespace, planning, synth size
    failover_tables: int  # section 6: failover of this many small tables
    estate_synth_sources: int  # section 4: synth of an estate of this many source buckets
    ops: str  # `bench.ops_scale.SCALES` key: status, monitor, harden, audit over one lake
    ops_estate: str  # `bench.ops_estate.ESTATE_SCALES` key: status (cold and warm cache) and audit over an estate
    recover_plan_tables: int  # section 7: dry-run plan of this many tables
    recover_small_tables: int  # section 7: many small tables, file copy
    recover_rounds: int  # section 7: interleaved rounds of the many-small-tables comparison
    estate_scp_sources: int  # section 8: the largest estate whose SCP sizes are measured
    discover_tables: int  # section 9: tables per bucket (of 3) discovered (`bench.discover_scale.SCALES`)


# section title (as `bench.run.main` prints it) -> the `BenchPlan` fields that size it
SECTIONS: dict[str, tuple[str, ...]] = {
    "1+2 interleaved rounds: kit file copy, Spark CTAS, pyiceberg": ("data",),
    "1+2 CTAS-mode kit, fingerprint, EXCEPT ALL": ("data",),
    "3 many tables": ("data",),
    "5 planning": ("data",),
    "6 failover: time to a writable table": ("failover_tables",),
    "4 synth scale": ("data",),
    "4 synth estate": ("estate_synth_sources",),
    "6 ops tools at lake scale": ("ops",),
    "6 ops tools over an estate": ("ops_estate",),
    "7 recovery at lake scale": ("recover_plan_tables", "recover_small_tables", "recover_rounds"),
    "8 estate SCP sizes": ("estate_scp_sources",),
    "9 discovery of a live lake": ("discover_tables",),
    "10 vault backup: full rate, incremental ratio": ("data",),
}

PLANS = {
    "quick": BenchPlan(
        data="quick",
        failover_tables=100,
        estate_synth_sources=5,
        ops="tiny",
        ops_estate="tiny",
        recover_plan_tables=200,
        recover_small_tables=10,
        recover_rounds=1,
        estate_scp_sources=50,
        discover_tables=20,
    ),
    "small": BenchPlan(
        data="small",
        failover_tables=1000,
        estate_synth_sources=50,
        ops="small",
        ops_estate="tiny",
        recover_plan_tables=500,
        recover_small_tables=20,
        recover_rounds=1,
        estate_scp_sources=50,
        discover_tables=200,
    ),
    "full": BenchPlan(
        data="full",
        failover_tables=1000,
        estate_synth_sources=50,
        ops="full",
        ops_estate="full",
        recover_plan_tables=10_000,
        recover_small_tables=200,
        recover_rounds=2,
        estate_scp_sources=50,
        discover_tables=10_000,
    ),
}
