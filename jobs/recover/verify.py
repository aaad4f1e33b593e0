"""Verification of a recovered table against the replica snapshot it came from.

One aggregate pass per side (`sql.fingerprint_sql`) gives the row count, the per-partition counts and an
order-independent multiset hash. Only on a mismatch does the job pay for exact `EXCEPT ALL` samples.
The comparison itself is pure (`compare_fingerprints`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.snapshots import IcebergColumn
from s3tables_kit.jobs.recover import sql

if TYPE_CHECKING:  # pragma: no cover
    from s3tables_kit.jobs.recover.guard import GuardedSql
    from s3tables_kit.jobs.recover.planning import TablePlan

Key = tuple[Any, ...]
Fingerprint = dict[Key, tuple[int, Decimal, Decimal]]


@dataclass
class Verification:
    ok: bool
    source_rows: int
    target_rows: int
    partitions: int
    problems: list[str] = field(default_factory=list)
    missing_sample: list[dict[str, Any]] = field(default_factory=list)  # in replica, not in target
    extra_sample: list[dict[str, Any]] = field(default_factory=list)  # in target, not in replica

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fingerprint_from_rows(rows: list[dict[str, Any]], n_keys: int) -> Fingerprint:
    out: Fingerprint = {}
    for r in rows:
        key = tuple(r[f"p{i}"] for i in range(n_keys))
        h64 = (Decimal(r["h64hi"] or 0) * (1 << 32)) + Decimal(r["h64lo"] or 0)
        out[key] = (int(r["n"]), h64, Decimal(r["h32"] or 0))
    return out


def compare_fingerprints(src: Fingerprint, dst: Fingerprint) -> list[str]:
    problems: list[str] = []
    ns, nd = sum(v[0] for v in src.values()), sum(v[0] for v in dst.values())
    if ns != nd:
        problems.append(f"row count: replica {ns}, target {nd}")
    for key in sorted(set(src) | set(dst), key=repr):
        a, b = src.get(key), dst.get(key)
        label = "unpartitioned" if key == () else f"partition {key!r}"
        if a is None or b is None:
            problems.append(f"{label}: only in {'target' if a is None else 'replica'} ({(a or b)[0]} rows)")  # type: ignore[index]
        elif a[0] != b[0]:
            problems.append(f"{label}: replica {a[0]} rows, target {b[0]}")
        elif a[1:] != b[1:]:
            problems.append(f"{label}: same count ({a[0]}) but different row contents (hash)")
        if len(problems) > 20:
            problems.append("...")
            break
    return problems


def schema_problems(expected: tuple[IcebergColumn, ...], actual: tuple[IcebergColumn, ...]) -> list[str]:
    """Names, order, types, nullability and docs must match the snapshot's schema (field ids may differ)."""
    problems = []
    if [c.name for c in expected] != [c.name for c in actual]:
        return [f"columns: expected {[c.name for c in expected]}, got {[c.name for c in actual]}"]
    for e, a in zip(expected, actual, strict=True):
        if _strip_ids(e.type) != _strip_ids(a.type):
            problems.append(f"column {e.name}: type {e.type!r} became {a.type!r}")
        if e.required != a.required:
            problems.append(f"column {e.name}: required={e.required} became {a.required}")
        if (e.doc or None) != (a.doc or None):
            problems.append(f"column {e.name}: doc {e.doc!r} became {a.doc!r}")
    return problems


def _strip_ids(t: Any) -> Any:
    if isinstance(t, dict):
        return {k: _strip_ids(v) for k, v in t.items() if k not in ("id", "element-id", "key-id", "value-id")}
    if isinstance(t, list):
        return [_strip_ids(v) for v in t]
    return t


def verify(
    gsql: GuardedSql,
    plan: TablePlan,
    replica_catalog: str,
    target_catalog: str,
    target_schema: tuple[IcebergColumn, ...] | None,
    sample: int = 10,
) -> Verification:
    src_rel = f"{sql.table_ref(replica_catalog, plan.replica)} VERSION AS OF {plan.snapshot.snapshot_id}"
    dst_rel = sql.table_ref(target_catalog, plan.target)
    n_keys = len(plan.partition_spec)

    def fp(rel: str) -> Fingerprint:
        q = sql.fingerprint_sql(rel, plan.schema, plan.partition_spec, target_catalog)
        return fingerprint_from_rows([r.asDict() for r in gsql.sql(q).collect()], n_keys)

    src, dst = fp(src_rel), fp(dst_rel)
    problems = compare_fingerprints(src, dst)
    if target_schema is not None:
        problems.extend(schema_problems(plan.schema, target_schema))
    result = Verification(
        ok=not problems,
        source_rows=sum(v[0] for v in src.values()),
        target_rows=sum(v[0] for v in dst.values()),
        partitions=len(src),
        problems=problems,
    )
    if problems:
        result.missing_sample = [
            _jsonable(r.asDict(recursive=True))
            for r in gsql.sql(sql.except_all_sql(src_rel, dst_rel, plan.schema, sample)).collect()
        ]
        result.extra_sample = [
            _jsonable(r.asDict(recursive=True))
            for r in gsql.sql(sql.except_all_sql(dst_rel, src_rel, plan.schema, sample)).collect()
        ]
    return result


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return str(v)
