"""Planning at lake scale: list and resolve thousands of tables concurrently, under throttling, without a traceback.

- Listing: each namespace is listed with paged `ListTables` (1,000 per page,
  docs/aws-facts.md#throttling-and-paging), namespaces concurrently; the target bucket's namespaces too, so a target
  that does not exist (the common case) costs no call at all.
- Resolution: `job.plan_one` per table on a bounded thread pool, in batches (bounded memory for futures); the
  replica's `GetTable` answers both the metadata location and the source table ARN (one round trip instead of two);
  the metadata JSON is read through ONE pyiceberg FileIO per catalog (one pyarrow S3 filesystem, connection reuse).
- Faults: every client carries the kit's one retry policy (`s3tables_kit.jobs.kernel.sdk`: botocore standard mode, 10
attempts;
  pyarrow's retry strategy for pyiceberg's S3 reads). Whatever still fails for one table (any botocore error,
  throttling after the retries, a pyiceberg or pyarrow read error, a malformed document) becomes that table's plan
  error; the other tables are still planned.
- De-duplication is a set (O(n)).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.metadata import MetadataSource, S3TablesMetadataSource, _decode
from s3tables_kit.jobs.recover.planning import Plan, TablePlan, check_distinct_targets, target_ident

if TYPE_CHECKING:  # pragma: no cover
    from s3tables_kit.jobs.recover.request import RecoveryRequest

# Threads resolving tables at once: each waits on round trips (30 ms S3 Tables, 20 ms S3); 32 in flight keep a Region
# endpoint busy; the pool, not a client-side rate limiter, caps the request rate (s3tables_kit.jobs.kernel.sdk: standard
# mode).
DEFAULT_CONCURRENCY = 32
BATCH = 1000  # tables submitted to the pool at once (futures and partial results stay bounded)
PAGE = 1000  # ListTables maxTables (the API's maximum)

T = TypeVar("T")
R = TypeVar("R")


def describe_error(e: BaseException) -> str:
    """One line for a plan error: the AWS error code and message when there is one, else the exception."""
    resp = getattr(e, "response", None)
    if isinstance(resp, dict) and resp.get("Error"):
        err = resp["Error"]
        attempts = (resp.get("ResponseMetadata") or {}).get("RetryAttempts")
        extra = f" after {attempts} retries" if attempts else ""
        return f"{err.get('Code', type(e).__name__)}: {str(err.get('Message', ''))[:300]}{extra}"
    text = str(e).splitlines()[0][:300] if str(e) else ""
    return f"{type(e).__name__}: {text}"


def bounded_map(fn: Callable[[T], R], items: Iterable[T], workers: int, batch: int = BATCH) -> Iterator[R]:
    """`fn` over `items` on `workers` threads, in order, at most `batch` submitted at once."""
    chunk: list[T] = []
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="plan") as pool:
        for it in items:
            chunk.append(it)
            if len(chunk) >= batch:
                yield from pool.map(fn, chunk)
                chunk = []
        if chunk:
            yield from pool.map(fn, chunk)


@dataclass
class Listing:
    """What one catalog holds in the namespaces asked about: names per namespace, plus (S3 Tables) whether each
    table is managed by a service (a replica: `managedByService` in the table summary)."""

    tables: dict[str, list[str]] = field(default_factory=dict)
    managed: dict[Ident, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _names: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def add(self, ns: str, names: list[str], managed: dict[Ident, str]) -> None:
        self.tables[ns] = names
        self._names[ns] = set(names)
        self.managed.update(managed)

    def has(self, ident: Ident) -> bool:
        return ident.name in self._names.get(ident.namespace, ())


def list_namespace(src: MetadataSource, ns: str) -> tuple[list[str], dict[Ident, str]]:
    """Every table name of `ns`; S3 Tables: paged ListTables, 1,000 per page, keeping `managedByService`."""
    if not isinstance(src, S3TablesMetadataSource):
        return src.list_tables(ns), {}
    names: list[str] = []
    managed: dict[Ident, str] = {}
    pages = src.client.get_paginator("list_tables").paginate(
        tableBucketARN=src.spec.warehouse, namespace=ns, PaginationConfig={"PageSize": PAGE}
    )
    for page in pages:
        for t in page.get("tables", []):
            names.append(t["name"])
            if t.get("managedByService"):
                managed[Ident(ns, t["name"])] = str(t["managedByService"])
    return sorted(names), managed


def list_namespaces(src: S3TablesMetadataSource) -> set[str]:
    pages = src.client.get_paginator("list_namespaces").paginate(
        tableBucketARN=src.spec.warehouse, PaginationConfig={"PageSize": PAGE}
    )
    return {str(n["namespace"][0]) for page in pages for n in page.get("namespaces", [])}


def list_all(src: MetadataSource, namespaces: Iterable[str], workers: int) -> Listing:
    """List the namespaces concurrently; a namespace that cannot be listed is an error, not a crash. A namespace
    that does not exist lists as empty."""
    out = Listing()
    nss = list(dict.fromkeys(namespaces))
    if isinstance(src, S3TablesMetadataSource) and nss:
        # ListTables on a namespace that does not exist is not an empty page (the emulator even answers 500): list
        # the bucket's namespaces first (paged, 1,000 per page) and skip the absent ones.
        try:
            existing = list_namespaces(src)
        except Exception as e:
            out.errors.append(f"the namespaces of {src.spec.warehouse} could not be listed: {describe_error(e)}")
            return out
        for ns in nss:
            if ns not in existing:
                out.add(ns, [], {})
        nss = [ns for ns in nss if ns in existing]

    def one(ns: str) -> tuple[str, list[str] | None, dict[Ident, str], str | None]:
        try:
            names, managed = list_namespace(src, ns)
            return ns, names, managed, None
        except Exception as e:
            if _not_found(e):
                return ns, [], {}, None
            return ns, None, {}, f"namespace {ns}: the tables could not be listed: {describe_error(e)}"

    for ns, names, managed, err in bounded_map(one, nss, min(workers, 16)):
        if err:
            out.errors.append(err)
        else:
            out.add(ns, names or [], managed)
    return out


def _not_found(e: BaseException) -> bool:
    resp = getattr(e, "response", None)
    return isinstance(resp, dict) and (resp.get("Error") or {}).get("Code") == "NotFoundException"


class ListedSource:
    """A `MetadataSource` backed by a listing and per-table caches, for concurrent planning.

    - A table absent from the listing of its (listed) namespace has no metadata: answered without a call.
    - S3 Tables: one `GetTable` gives the metadata location and the replica's source table ARN; one pyiceberg FileIO
      (with the kit's retry policy) reads every metadata file.
    Everything else is delegated to the wrapped source. Read-only, like every source.
    """

    def __init__(self, inner: MetadataSource, listing: Listing | None) -> None:
        self.inner = inner
        self.listing = listing
        self._tables: dict[Ident, dict[str, Any] | None] = {}
        self._lock = threading.Lock()
        self.io_props: dict[str, str] | None = getattr(inner, "io_props", None)  # S3: with the kit's retry strategy

    def _listed_absent(self, ident: Ident) -> bool:
        lst = self.listing
        return lst is not None and ident.namespace in lst.tables and not lst.has(ident)

    def list_tables(self, namespace: str) -> list[str]:
        if self.listing is not None and namespace in self.listing.tables:
            return list(self.listing.tables[namespace])
        return self.inner.list_tables(namespace)

    def _get_table(self, ident: Ident) -> dict[str, Any] | None:
        with self._lock:
            if ident in self._tables:
                return self._tables[ident]
        inner = self.inner
        assert isinstance(inner, S3TablesMetadataSource)
        try:
            r: dict[str, Any] | None = inner.client.get_table(
                tableBucketARN=inner.spec.warehouse, namespace=ident.namespace, name=ident.name
            )
        except Exception as e:
            if not _not_found(e):
                raise
            r = None
        with self._lock:
            self._tables[ident] = r
        return r

    def metadata_location(self, ident: Ident) -> str | None:
        if self._listed_absent(ident):
            return None
        if not isinstance(self.inner, S3TablesMetadataSource):
            return self.inner.metadata_location(ident)
        from s3tables_kit.jobs.kernel.tables import metadata_location

        return metadata_location(self._get_table(ident))

    def source_table_arn(self, ident: Ident) -> str | None:
        if not isinstance(self.inner, S3TablesMetadataSource):
            return self.inner.source_table_arn(ident)
        r = self._get_table(ident) or {}
        info = (r.get("managedTableInformation") or {}).get("replicationInformation") or {}
        arn = info.get("sourceTableARN")
        return str(arn) if arn else None

    def read_json(self, location: str) -> dict[str, Any]:
        if not isinstance(self.inner, S3TablesMetadataSource):
            return self.inner.read_json(location)
        return _decode(self.inner.read_bytes(location), location)  # one GetObject (see `read_bytes`)

    def table_location(self, ident: Ident) -> str | None:
        return self.inner.table_location(ident)


class PlanProgress:
    """`planned k/N tables` on stderr every `every` seconds (thread-safe), and a last line with the totals."""

    def __init__(self, total: int, out: TextIO | None = None, every: float = 5.0) -> None:
        self.total, self.out, self.every = total, out or sys.stderr, every
        self.done = self.failed = 0
        self.t0 = self.last = time.monotonic()
        self.lock = threading.Lock()

    def tick(self, failed: bool) -> None:
        with self.lock:
            self.done += 1
            self.failed += int(failed)
            now = time.monotonic()
            if now - self.last >= self.every:
                self.last = now
                self._say()

    def _say(self) -> None:
        rate = self.done / max(time.monotonic() - self.t0, 1e-9)
        print(
            f"[plan {time.monotonic() - self.t0:6.1f}s] {self.done}/{self.total} table(s) resolved "
            f"({rate:,.0f}/s), {self.failed} with errors",
            file=self.out,
            flush=True,
        )

    def finish(self) -> None:
        with self.lock:
            self._say()


def build_plan_at_scale(
    req: RecoveryRequest,
    replica_src: MetadataSource,
    target_src: MetadataSource,
    plan_one: Callable[
        [RecoveryRequest, MetadataSource, MetadataSource, Ident, int], tuple[TablePlan | None, list[str]]
    ],
    concurrency: int = DEFAULT_CONCURRENCY,
    progress_out: TextIO | None = None,
) -> Plan:
    """The same plan as `job.build_plan` (same per-table rules: `plan_one` is `job.plan_one`, handed in so that
    this module does not import the job), resolved concurrently."""
    from s3tables_kit.jobs.recover.metadata import missing_warehouse

    now_ms = req.now_ms if req.now_ms is not None else int(time.time() * 1000)
    plan = Plan(selector=req.selector)
    if req.replica.mode == "hadoop" and (missing := missing_warehouse(req.replica.warehouse)):
        plan.errors.append(f"replica catalog {req.replica.name}: {missing}")  # named, so it can be fixed
        return plan
    rep_listing = list_all(replica_src, req.namespaces, concurrency)
    plan.errors.extend(rep_listing.errors)
    idents = list(dict.fromkeys(req.tables))
    seen = set(idents)
    for ns in req.namespaces:
        names = rep_listing.tables.get(ns)
        if names is None:
            continue  # listing failed: already an error
        if not names:
            plan.errors.append(f"namespace {ns}: no tables in the replica catalog")
        for n in names:
            i = Ident(ns, n)
            if i not in seen:
                seen.add(i)
                idents.append(i)
    # the target namespaces, listed once: absent targets cost no call
    tgt_nss = {target_ident(i, req.target_namespace, req.suffix).namespace for i in idents}
    tgt_listing = list_all(target_src, sorted(tgt_nss), concurrency)
    # the target's listing is only an optimisation: where it failed, the tables are looked up one by one
    rsrc, tsrc = ListedSource(replica_src, rep_listing), ListedSource(target_src, tgt_listing)
    progress = PlanProgress(len(idents), progress_out) if len(idents) >= 100 else None

    def one(ident: Ident) -> tuple[TablePlan | None, list[str]]:
        try:
            out = plan_one(req, rsrc, tsrc, ident, now_ms)
        except Exception as e:  # any client, pyiceberg or pyarrow error: this table's plan error
            out = None, [f"{ident}: could not be planned: {describe_error(e)}"]
        if progress:
            progress.tick(bool(out[1]))
        return out

    for tp, errors in bounded_map(one, idents, concurrency):
        plan.errors.extend(errors)
        if tp is not None:
            plan.tables.append(tp)
    if progress:
        progress.finish()
    same = req.replica.mode == req.target.mode and req.replica.warehouse == req.target.warehouse
    plan.errors.extend(check_distinct_targets(plan.tables, same))
    return plan
