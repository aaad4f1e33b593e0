"""Spark's side of the executors' file copies (the recovery's and the vault backup's): files balanced over one task
per core, a job group run on the executors, and a progress line of its tasks while it runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from s3tables_kit.jobs.kernel.filecopy import StoreConfig


def bins(items: list[Any], n: int, size: Callable[[Any], int]) -> list[list[Any]]:
    """Greedy balance by size over n tasks (largest first into the lightest bin)."""
    n = max(1, min(n, len(items)))
    out: list[list[Any]] = [[] for _ in range(n)]
    load = [0] * n
    for it in sorted(items, key=size, reverse=True):
        i = load.index(min(load))
        out[i].append(it)
        load[i] += max(1, size(it))
    return [b for b in out if b]


class TaskProgress:
    """Prints `k/N tasks` of the table's Spark job group every few seconds while it runs."""

    def __init__(self, spark: SparkSession, group: str, say: Callable[[str], None], what: str) -> None:
        self.spark, self.group, self.say, self.what = spark, group, say, what
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TaskProgress:
        self.thread.start()
        return self

    def __exit__(self, *a: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        last = ""
        tracker = self.spark.sparkContext.statusTracker()
        while not self.stop.wait(3.0):
            done = total = 0
            for jid in tracker.getJobIdsForGroup(self.group):
                job = tracker.getJobInfo(jid)
                for sid in job.stageIds if job else []:
                    st = tracker.getStageInfo(sid)
                    if st:
                        done, total = done + st.numCompletedTasks, total + st.numTasks
            msg = f"{self.what}: {done}/{total} task(s) done"
            if total and msg != last:
                self.say(msg)
                last = msg


def run_on_executors(
    spark: SparkSession, group: str, desc: str, groups: list[list[Any]], fn: Callable[..., Any], cfg: StoreConfig
) -> list[dict[str, Any]]:
    sc = spark.sparkContext
    sc.setJobGroup(group, desc)
    try:
        return sc.parallelize(groups, len(groups)).flatMap(lambda g: list(fn(g, cfg))).collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
