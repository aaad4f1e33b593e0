"""Finding moto's S3 Tables buckets and tables by ARN (and the index that makes a lookup by table ARN O(1))."""

from __future__ import annotations

from typing import Any

from emulator import live, resource_policy
from emulator.state import (
    _BUCKET_ARN_RE,
    _TABLE_ARN_RE,
    BUCKET_NOT_FOUND,
    LOCK,
    STATE,
    TABLE_NOT_FOUND,
    ApiError,
    StandInState,
    bad_request,
    not_found,
)


def _backend(account: str, region: str) -> Any:
    from moto.s3tables.models import s3tables_backends

    return s3tables_backends[account][region]


def _s3_backend(account: str, partition: str = "aws") -> Any:
    from moto.s3.models import s3_backends

    return s3_backends[account][partition]


def get_bucket(bucket_arn: str) -> Any:
    m = _BUCKET_ARN_RE.match(bucket_arn or "")
    if not m:
        raise bad_request(f"The specified table bucket ARN is not valid: {bucket_arn}")
    bucket = _backend(m.group(3), m.group(2)).table_buckets.get(bucket_arn)
    if bucket is None:
        raise not_found(BUCKET_NOT_FOUND)
    return bucket


def get_table_by_name(bucket_arn: str, namespace: str, name: str) -> Any:
    bucket = get_bucket(bucket_arn)
    ns = bucket.namespaces.get(namespace)
    if ns is None or name not in ns.tables:
        raise not_found(TABLE_NOT_FOUND)
    return ns.tables[name]


_ARN_INDEX: dict[str, Any] = {}  # table ARN -> table; a cache, checked against the bucket on every hit


def get_table_by_arn(table_arn: str) -> Any:
    m = _TABLE_ARN_RE.match(table_arn or "")
    if not m:
        raise bad_request(f"The specified table ARN is not valid: {table_arn}")
    bucket_arn = table_arn.split("/table/")[0]
    try:
        bucket = get_bucket(bucket_arn)
    except ApiError:
        raise not_found(TABLE_NOT_FOUND) from None
    hit = _ARN_INDEX.get(table_arn)
    if hit is not None:
        ns = bucket.namespaces.get(hit.namespace)
        if ns is not None and ns.tables.get(hit.name) is hit and hit.arn == table_arn:
            return hit  # still the same table in the same bucket (not deleted, renamed or reset since)
    found = None
    for ns in bucket.namespaces.values():  # a miss re-indexes the whole bucket: O(1) per lookup at 10,000 tables
        for t in ns.tables.values():
            _ARN_INDEX[t.arn] = t
            if t.arn == table_arn:
                found = t
    if found is None:
        raise not_found(TABLE_NOT_FOUND)
    return found


def reset_state() -> None:
    """Forget the extension's state (in place: every module holds the same `STATE`)."""
    with LOCK:
        fresh = StandInState()
        for name in fresh.__dataclass_fields__:
            setattr(STATE, name, getattr(fresh, name))
        _ARN_INDEX.clear()
        resource_policy.ENFORCED.clear()
        live.reset()
