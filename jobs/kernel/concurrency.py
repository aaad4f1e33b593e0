"""Bounded concurrency for the kit's many-table loops: threads (`run_concurrently`, `stream_concurrently`), worker
processes for large lakes (`WorkerPool`, `processes_for`), progress on stderr (`Progress`)."""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import TextIO, TypeVar

from s3tables_kit.jobs.kernel.clients import Clients

T = TypeVar("T")
R = TypeVar("R")

# ----------------------------------------------------------------------------------------------------
# Concurrency and progress
# ----------------------------------------------------------------------------------------------------


class Progress:
    """`label: done/total` on stderr, at most every `interval` seconds, and once at the end."""

    def __init__(
        self,
        label: str,
        total: int,
        stream: TextIO | None = None,
        interval: float = 2.0,
        enabled: bool = True,
    ) -> None:
        self.label, self.total, self.stream, self.interval, self.enabled = (
            label,
            total,
            stream,
            interval,
            enabled,
        )
        self.done = 0
        self._last = 0.0
        self._lock = threading.Lock()
        self._start = time.monotonic()

    def tick(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = time.monotonic()
            if self.enabled and (now - self._last >= self.interval or self.done == self.total):
                self._last = now
                rate = self.done / max(now - self._start, 1e-6)
                print(
                    f"{self.label}: {self.done}/{self.total} ({rate:.0f}/s)",
                    file=self.stream or sys.stderr,
                    flush=True,
                )


def stream_concurrently(
    fn: Callable[[T], R], items: Iterable[T], concurrency: int, progress: Progress | None = None
) -> Iterator[R]:
    """fn over items, results as they complete (any order), with at most `concurrency` calls in flight and at most
    twice that many items taken from `items` at a time: memory does not grow with the number of items. Same error
    contract as `run_concurrently`."""
    it = iter(items)
    if concurrency <= 1:
        for item in it:
            yield fn(item)
            if progress:
                progress.tick()
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ops") as pool:
        pending = {pool.submit(fn, item) for item in itertools.islice(it, concurrency * 2)}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()
                if progress:
                    progress.tick()
            pending |= {pool.submit(fn, item) for item in itertools.islice(it, len(done))}


def run_concurrently(
    fn: Callable[[T], R], items: Sequence[T], concurrency: int, progress: Progress | None = None
) -> list[R]:
    """fn over items with at most `concurrency` in flight; results in the order of `items`. fn must not raise
    for per-item failures (return them instead); an unexpected exception propagates (the items not yet started are
    not started). Each of `concurrency` threads takes the next item until none is left and writes its result in
    place: no future per item and no hand-over to a collecting thread, whose wake-ups were a tenth of a many-table
    tool's CPU."""
    results: list[R | None] = [None] * len(items)
    if concurrency <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            results[i] = fn(item)
            if progress:
                progress.tick()
        return results  # type: ignore[return-value]
    pending = iter(range(len(items)))
    lock = threading.Lock()
    failed: list[BaseException] = []

    def work() -> None:
        while not failed:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # raised in the caller's thread once every thread has stopped
                failed.append(exc)
                return
            if progress:
                progress.tick()

    threads = [threading.Thread(target=work, name=f"ops-{n}") for n in range(min(concurrency, len(items)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return results  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------------------------

# botocore spends 1-2 ms of CPU per request (serialise, sign, parse) under one interpreter lock, so one process tops
# out at a few hundred requests per second whatever the thread count; at 10,000 tables x 3 destinations that is
# the wall time (BENCHMARKS.md, ops tools at lake scale). A many-table loop therefore runs in worker processes when it
# is large: each process has its own clients and `concurrency // processes` threads.
PROCESSES_FROM = 2000  # items; below that, starting processes (imports, clients) costs more than it saves
MAX_PROCESSES = 4

_WORKER_CLIENTS: Clients | None = None


def processes_for(requested: int | None, items: int) -> int:
    """Worker processes for a loop over `items`: `requested` if given (>= 1), else 1 below `PROCESSES_FROM` items
    and one per core up to `MAX_PROCESSES` from there."""
    import os

    if requested is not None:
        if requested < 1:
            raise ValueError(f"processes must be at least 1, got {requested}")
        return requested
    if items < PROCESSES_FROM:
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_PROCESSES))


def _init_worker(clients: Clients) -> None:
    global _WORKER_CLIENTS
    _WORKER_CLIENTS = clients


def _noop() -> None:
    pass


def _run_job(job: Callable[[Clients], list[R]]) -> list[R]:
    assert _WORKER_CLIENTS is not None
    return job(_WORKER_CLIENTS)


def chunks(items: Sequence[T], size: int) -> list[list[T]]:
    return [list(items[i : i + size]) for i in range(0, len(items), max(1, size))]


class WorkerPool:
    """`processes` spawned worker processes, each with its own clients built from `clients`' settings, for the
    whole run of a tool (starting a worker costs its imports and clients: one pool serves every pass and bucket).
    Use as a context manager; `map` runs jobs."""

    def __init__(self, clients: Clients, processes: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")  # never fork a process whose threads hold botocore's locks
        self.processes = processes
        self._pool = ProcessPoolExecutor(processes, mp_context=ctx, initializer=_init_worker, initargs=(clients,))

    def __enter__(self) -> WorkerPool:
        return self

    def warm(self) -> None:
        """Start every worker now (its imports and clients) instead of at the first job, so that they start while the
        caller does something else, such as listing buckets."""
        for _ in range(self.processes):
            self._pool.submit(_noop)

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def map(self, jobs: Sequence[Callable[[Clients], list[R]]], progress: Progress | None = None) -> Iterator[list[R]]:
        """Each job (a picklable callable: a module-level function with its arguments bound, e.g. one chunk of
        tables) in a worker; the jobs' results in job order, as they are ready. A job must not raise for per-item
        failures (as `run_concurrently`); a worker that dies raises here (`BrokenProcessPool`)."""
        for out in self._pool.map(_run_job, jobs):
            if progress:
                progress.tick(len(out))
            yield out


def worker_pool(clients: Clients, processes: int) -> contextlib.AbstractContextManager[WorkerPool | None]:
    """A `WorkerPool` when `processes` > 1, else None (the caller runs in its own process)."""
    return WorkerPool(clients, processes) if processes > 1 else contextlib.nullcontext()
