"""Shared pieces of the ops jobs: durations, ARNs, throttling backoff, bounded concurrency, progress,
tables, CLI."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TextIO, TypeVar

from botocore.exceptions import ClientError

from jobs.aws_retry import MAX_ATTEMPTS
from jobs.ops.clients import Clients, parse_role_arns, resolve_endpoint

T = TypeVar("T")
R = TypeVar("R")

# ----------------------------------------------------------------------------------------------------
# Durations
# ----------------------------------------------------------------------------------------------------

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> timedelta:
    """`30m`, `2h`, `1h30m`, `90s`, `1d` -> timedelta. A bare number is minutes."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return timedelta(minutes=float(s))
    pos, total = 0, 0.0
    for m in _DURATION_RE.finditer(s):
        if s[pos : m.start()].strip():
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        raise ValueError(f"duration {text!r} is not like 30m, 2h, 1h30m, 90s or 1d")
    return timedelta(seconds=total)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


# ----------------------------------------------------------------------------------------------------
# ARNs
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BucketRef:
    arn: str

    @property
    def parts(self) -> list[str]:
        return self.arn.split(":", 5)

    @property
    def region(self) -> str:
        return self.parts[3]

    @property
    def account(self) -> str:
        return self.parts[4]

    @property
    def name(self) -> str:
        return self.parts[5].split("/", 1)[1]


def bucket_of_table_arn(table_arn: str) -> str:
    return table_arn.split("/table/", 1)[0]


# ----------------------------------------------------------------------------------------------------
# AWS calls: error codes, throttling backoff, pagination
# ----------------------------------------------------------------------------------------------------

THROTTLING_CODES = frozenset(
    {
        "TooManyRequestsException",
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestLimitExceeded",
        "SlowDown",
        "RequestThrottled",
    }
)


# Worth another try later (the second pass): throttling, server-side and connection errors. Anything else
# (AccessDenied, NotFound, validation) would fail the same way again.
TRANSIENT_CODES = THROTTLING_CODES | frozenset(
    {
        "InternalError",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
TRANSIENT_ERRORS = frozenset(
    {"EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError", "ConnectionError"}
)


def is_transient(message: str | None) -> bool:
    """Whether a `describe_error` text ("Operation: Code: message" or "ErrorType: message") names a transient
    error."""
    if not message:
        return False
    for part in message.split(": ")[:2]:
        if part.strip() in TRANSIENT_CODES or part.strip() in TRANSIENT_ERRORS:
            return True
    return any(f" {c}: " in f" {message}" for c in TRANSIENT_CODES | TRANSIENT_ERRORS)


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return type(exc).__name__


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        op = getattr(exc, "operation_name", "")
        return f"{op}: {err.get('Code', '?')}: {err.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Backoff:
    """Outer retry for throttling that survives botocore's own attempts (full jitter, capped)."""

    attempts: int = 5
    base: float = 0.2
    cap: float = 10.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap, self.base * (2**attempt)))


DEFAULT_BACKOFF = Backoff()


def call(fn: Callable[..., R], /, *args: Any, backoff: Backoff = DEFAULT_BACKOFF, **kwargs: Any) -> R:
    for attempt in range(backoff.attempts + 1):
        try:
            return fn(*args, **kwargs)
        except ClientError as exc:
            if error_code(exc) not in THROTTLING_CODES or attempt >= backoff.attempts:
                raise
            time.sleep(backoff.delay(attempt))
    raise AssertionError("unreachable")


def paginate(client: Any, operation: str, key: str, page_size: int | None = None, **kwargs: Any) -> Iterator[Any]:
    """Every item of a paginated list operation; each page request gets the throttling backoff too."""
    token_in, token_out = _TOKENS.get(operation, ("continuationToken", "continuationToken"))
    size_key = _SIZE_KEYS.get(operation)
    token: str | None = None
    while True:
        params = dict(kwargs)
        if token:
            params[token_in] = token
        if page_size and size_key:
            params[size_key] = page_size
        page = call(getattr(client, operation), **params)
        yield from page.get(key, [])
        token = page.get(token_out)
        if not token:
            return


_TOKENS = {
    "list_tables": ("continuationToken", "continuationToken"),
    "list_targets_for_policy": ("NextToken", "NextToken"),
    "list_policies_for_target": ("NextToken", "NextToken"),
}
_SIZE_KEYS = {
    "list_tables": "maxTables",
    "list_targets_for_policy": "MaxResults",
    "list_policies_for_target": "MaxResults",
}


@dataclass(frozen=True)
class TableRef:
    bucket_arn: str
    namespace: str
    name: str
    arn: str
    managed_by_service: bool = False  # ListTables' `managedByService` (a replica the service maintains)

    @property
    def qualified(self) -> str:
        return f"{self.namespace}.{self.name}"


def list_tables(clients: Clients, bucket_arn: str, page_size: int | None = None) -> list[TableRef]:
    b = BucketRef(bucket_arn)
    client = clients.s3tables(b.region, b.account)
    return [
        TableRef(bucket_arn, t["namespace"][0], t["name"], t["tableARN"], bool(t.get("managedByService")))
        for t in paginate(client, "list_tables", "tables", page_size, tableBucketARN=bucket_arn)
    ]


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
    for per-item failures (return them instead); an unexpected exception propagates."""
    results: list[R | None] = [None] * len(items)
    if concurrency <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            results[i] = fn(item)
            if progress:
                progress.tick()
        return results  # type: ignore[return-value]
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="ops") as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if progress:
                progress.tick()
    return results  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------------------------

# botocore spends 1-2 ms of CPU per request (serialise, sign, parse) under one interpreter lock, so one process tops
# out at a few hundred requests per second whatever the thread count; at 10,000 tables x 3 destinations that is
# the wall time (BENCHMARKS.md, issue 18). A many-table loop therefore runs in worker processes when it is large:
# each process has its own clients and `concurrency // processes` threads.
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


# ----------------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------------


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], max_width: int = 60) -> str:
    cells = [[str(h) for h in headers]] + [[_clip(str(c), max_width) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _clip(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def dump_json(doc: Any, stream: TextIO | None = None) -> None:
    json.dump(doc, stream or sys.stdout, indent=2, sort_keys=True, default=str)
    (stream or sys.stdout).write("\n")


def emit(report: Any, *, as_json: bool, render: Callable[[], str]) -> int:
    """Print a report (JSON for machines, the rendered table for people) and return its exit code."""
    if as_json:
        dump_json(report.to_json())
    else:
        print(render())
    return int(report.exit_code)


# ----------------------------------------------------------------------------------------------------
# Policies: canonical form for comparison
# ----------------------------------------------------------------------------------------------------

_LISTY = {"Action", "NotAction", "Resource", "NotResource"}


def canonical(value: Any, key: str | None = None) -> Any:
    """Normalise an IAM policy fragment so that equivalent documents compare equal: a single string and a
    one-element list are the same, list order does not matter, condition values are lists."""
    if isinstance(value, dict):
        return {k: canonical(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [canonical(v) for v in value]
        if all(isinstance(i, str | int | float | bool) for i in items):
            return sorted({str(i) for i in items})
        return sorted(items, key=lambda i: json.dumps(i, sort_keys=True))
    if isinstance(value, bool | int | float):
        return [str(value).lower() if isinstance(value, bool) else str(value)]
    if isinstance(value, str) and key not in ("Effect", "Sid", "Version"):
        return [value]
    return value


def canonical_policy(doc: Any) -> dict[str, Any]:
    if isinstance(doc, str):
        doc = json.loads(doc)
    stmts = doc.get("Statement", [])
    if isinstance(stmts, dict):
        stmts = [stmts]
    return {
        "Version": doc.get("Version"),
        "Statement": sorted((canonical(s) for s in stmts), key=lambda s: json.dumps(s, sort_keys=True)),
    }


# ----------------------------------------------------------------------------------------------------
# CLI plumbing
# ----------------------------------------------------------------------------------------------------


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outputs", default="outputs.json", help="outputs contract written after `cdktf deploy`")
    p.add_argument("--endpoint-url", help="local endpoint (moto/LocalStack); default $AWS_ENDPOINT_URL")
    p.add_argument("--role-name", help="assume this role name in every account")
    p.add_argument("--role-arn", action="append", metavar="ACCOUNT=ARN", help="assume ARN for ACCOUNT (repeatable)")
    p.add_argument("--concurrency", type=int, default=16, help="parallel API calls (default 16)")
    p.add_argument(
        "--processes",
        type=int,
        default=None,
        help=f"worker processes sharing the calls (default: 1 below {PROCESSES_FROM} tables, else one per core up "
        f"to {MAX_PROCESSES})",
    )
    p.add_argument(
        "--max-attempts", type=int, default=MAX_ATTEMPTS, help=f"botocore attempts per call (default {MAX_ATTEMPTS})"
    )
    p.add_argument("--page-size", type=int, default=None, help="ListTables page size (1-1000)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def clients_from_args(args: argparse.Namespace) -> Clients:
    return Clients(
        endpoint_url=resolve_endpoint(args.endpoint_url),
        role_arns=parse_role_arns(args.role_arn),
        role_name=args.role_name,
        max_attempts=args.max_attempts,
        max_pool_connections=max(10, args.concurrency * 2),
    )
