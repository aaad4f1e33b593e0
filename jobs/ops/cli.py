"""What the ops tools share besides the kernel (`s3tables_kit.jobs.kernel`): how a report names a table of an estate,
and the canonical form of the IAM documents they compare."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from typing import Any


def ambiguous_tables(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """The `namespace.name`s that (bucket ARN, namespace.name) `pairs` show in more than one bucket (an estate's
    sources may each hold a table of one name)."""
    buckets: dict[str, set[str]] = {}
    for bucket, table in pairs:
        buckets.setdefault(table, set()).add(bucket)
    return {t for t, b in buckets.items() if len(b) > 1}


def table_label(bucket_arn: str, table: str, ambiguous: Collection[str]) -> str:
    """`namespace.name`, or `bucket/namespace.name` where the report holds that name in two buckets."""
    return f"{bucket_arn.rsplit('/', 1)[-1]}/{table}" if table in ambiguous else table


def mentions_bucket(text: str, bucket_arn: str) -> bool:
    """`text` names the bucket `bucket_arn` or one of its tables (not another bucket whose name it prefixes)."""
    return re.search(re.escape(bucket_arn) + r"(?=$|[/\s),])", text) is not None


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
        if all(isinstance(i, str | int | float | bool) for i in value):  # as a scalar below: ["a"] is "a"
            return sorted({str(i).lower() if isinstance(i, bool) else str(i) for i in value})
        items = [canonical(v) for v in value]
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
