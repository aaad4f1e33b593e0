"""S3 Tables operations moto lacks or gets wrong: table views, policies, maintenance, encryption, storage class,
tags."""

from __future__ import annotations

import json
import uuid
from typing import Any, cast
from urllib.parse import parse_qs

from emulator.lookup import _backend, get_bucket, get_table_by_arn, get_table_by_name
from emulator.routing import RAW_QUERY, handles
from emulator.state import (
    _BUCKET_ARN_RE,
    _TABLE_ARN_RE,
    DEFAULT_MAINTENANCE,
    MANAGED_BY_REPLICATION,
    NO_POLICY,
    STATE,
    _iso,
    bad_request,
    not_found,
)


def _new_token() -> str:
    return uuid.uuid4().hex


def _table_view(t: Any) -> dict[str, Any]:
    out = {
        "name": t.name,
        "type": t.type,
        "tableARN": t.arn,
        "namespace": [t.namespace],
        "versionToken": t.version_token,
        "warehouseLocation": t.warehouse_location,
        "createdAt": _iso(t.creation_date),
        "createdBy": t.account_id,
        "modifiedAt": _iso(t.last_modified),
        "modifiedBy": t.modified_by or t.account_id,
        "ownerAccountId": t.account_id,
        "format": t.format,
        "tableBucketId": t.table_bucket_arn.rsplit("/", 1)[1],
    }
    if t.metadata_location:
        out["metadataLocation"] = t.metadata_location
    src = STATE.replica_source.get(t.arn)
    if src:
        out["managedByService"] = MANAGED_BY_REPLICATION
        out["managedTableInformation"] = {"replicationInformation": {"sourceTableARN": src}}
    elif t.arn in STATE.managed_by:
        out["managedByService"] = STATE.managed_by[t.arn]
    return out


def _summary_view(t: Any) -> dict[str, Any]:
    out = {
        "namespace": [t.namespace],
        "name": t.name,
        "type": t.type,
        "tableARN": t.arn,
        "createdAt": _iso(t.creation_date),
        "modifiedAt": _iso(t.last_modified),
    }
    if t.arn in STATE.replica_source:
        out["managedByService"] = MANAGED_BY_REPLICATION
    elif t.arn in STATE.managed_by:
        out["managedByService"] = STATE.managed_by[t.arn]
    return out


@handles("GetTable")
def get_table(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    if q.get("tableArn"):
        if any(q.get(k) for k in ("tableBucketARN", "namespace", "name")):
            raise bad_request("Specify either tableArn or tableBucketARN, namespace and name, not both.")  # our wording
        return 200, _table_view(get_table_by_arn(q["tableArn"]))
    if not all(q.get(k) for k in ("tableBucketARN", "namespace", "name")):
        raise bad_request("Either tableArn or tableBucketARN, namespace and name must be specified.")  # our wording
    return 200, _table_view(get_table_by_name(q["tableBucketARN"], q["namespace"], q["name"]))


@handles("GetTableMetadataLocation")
def get_table_metadata_location(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    """moto's answer (its fields, `metadataLocation` null before the first commit) from the kit's table lookup: the
    AWS errors of a missing bucket, namespace or table, and a third of moto's CPU (status reads a replica's location
    so, bench/ops_scale.py)."""
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    return 200, {
        "versionToken": t.version_token,
        "metadataLocation": t.metadata_location,
        "warehouseLocation": t.warehouse_location,
    }


@handles("ListTables")
def list_tables(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    m = _BUCKET_ARN_RE.match(bucket.arn)
    assert m
    max_tables = int(q["maxTables"]) if q.get("maxTables") else None
    if max_tables is not None and not 1 <= max_tables <= 1000:
        raise bad_request("maxTables must be between 1 and 1000.")
    if q.get("namespace") and q["namespace"] not in bucket.namespaces:  # moto answers 500
        raise not_found("The specified namespace does not exist.")
    backend = _backend(m.group(3), m.group(2))
    tables, token = backend.list_tables(
        table_bucket_arn=bucket.arn,
        namespace=q.get("namespace"),
        prefix=q.get("prefix"),
        continuation_token=q.get("continuationToken"),
        max_tables=max_tables,
    )
    out: dict[str, Any] = {"tables": [_summary_view(t) for t in tables]}
    if token:
        out["continuationToken"] = token
    return 200, out


# ---- policies ----


def _check_policy(doc: str) -> None:
    try:
        parsed = json.loads(doc)
    except ValueError:
        raise bad_request("The policy document is not valid JSON.") from None  # our wording
    if not isinstance(parsed, dict) or "Statement" not in parsed:
        raise bad_request("The policy document must be a JSON object with a Statement.")  # our wording


@handles("PutTableBucketPolicy")
def put_bucket_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    _check_policy(b["resourcePolicy"])
    STATE.bucket_policies[bucket.arn] = b["resourcePolicy"]
    return 200, {}


@handles("GetTableBucketPolicy")
def get_bucket_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    if bucket.arn not in STATE.bucket_policies:
        raise not_found(NO_POLICY)
    return 200, {"resourcePolicy": STATE.bucket_policies[bucket.arn]}


def _deletes_bucket_setting(op: str, store: str) -> None:
    """`op` forgets a bucket's setting (kept in `STATE.<store>` by bucket ARN); none set is not an error."""

    @handles(op)
    def delete(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        bucket = get_bucket(p["tableBucketARN"])
        cast("dict[str, Any]", getattr(STATE, store)).pop(bucket.arn, None)
        return 204, None


_deletes_bucket_setting("DeleteTableBucketPolicy", "bucket_policies")
_deletes_bucket_setting("DeleteTableBucketEncryption", "bucket_encryption")


@handles("PutTablePolicy")
def put_table_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    _check_policy(b["resourcePolicy"])
    STATE.table_policies[t.arn] = b["resourcePolicy"]
    return 200, {}


@handles("GetTablePolicy")
def get_table_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    if t.arn not in STATE.table_policies:
        raise not_found(NO_POLICY)
    return 200, {"resourcePolicy": STATE.table_policies[t.arn]}


@handles("DeleteTablePolicy")
def delete_table_policy(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    STATE.table_policies.pop(t.arn, None)
    return 204, None


# ---- maintenance ----


def _check_maintenance(kind: str, value: dict[str, Any], allowed: tuple[str, ...]) -> None:
    if kind not in allowed:
        raise bad_request(f"The maintenance type {kind} is not valid.")  # our wording
    settings = value.get("settings") or {}
    if settings and set(settings) != {kind}:
        raise bad_request(f"The settings do not match the maintenance type {kind}.")  # our wording
    for k, v in (settings.get(kind) or {}).items():
        if isinstance(v, int) and v < 1:
            raise bad_request(f"{k} must be at least 1.")


@handles("PutTableMaintenanceConfiguration")
def put_table_maintenance(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    kind = p["type"]
    _check_maintenance(kind, b["value"], ("icebergCompaction", "icebergSnapshotManagement"))
    if kind == "icebergCompaction" and t.arn in STATE.replica_source:
        # docs/aws-facts.md#replication; our wording
        raise bad_request("Compaction is not supported on replica tables.")
    current = STATE.table_maintenance.setdefault(t.arn, {})
    merged = json.loads(json.dumps(DEFAULT_MAINTENANCE[kind]))
    merged["status"] = b["value"].get("status", merged["status"])
    if b["value"].get("settings"):
        merged["settings"][kind].update(b["value"]["settings"][kind])
    current[kind] = merged
    return 204, None


@handles("GetTableMaintenanceConfiguration")
def get_table_maintenance(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    conf = json.loads(json.dumps(DEFAULT_MAINTENANCE))
    conf.update(STATE.table_maintenance.get(t.arn, {}))
    return 200, {"tableARN": t.arn, "configuration": conf}


@handles("PutTableBucketMaintenanceConfiguration")
def put_bucket_maintenance(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    _check_maintenance(p["type"], b["value"], ("icebergUnreferencedFileRemoval",))
    STATE.bucket_maintenance.setdefault(bucket.arn, {})[p["type"]] = b["value"]
    return 204, None


@handles("GetTableBucketMaintenanceConfiguration")
def get_bucket_maintenance(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    conf = {
        "icebergUnreferencedFileRemoval": {
            "status": "enabled",
            "settings": {"icebergUnreferencedFileRemoval": {"unreferencedDays": 3, "nonCurrentDays": 10}},
        }
    }
    conf.update(STATE.bucket_maintenance.get(bucket.arn, {}))
    return 200, {"tableBucketARN": bucket.arn, "configuration": conf}


# ---- encryption and storage class ----


@handles("PutTableBucketEncryption")
def put_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    enc = b["encryptionConfiguration"]
    if enc.get("sseAlgorithm") == "aws:kms" and not enc.get("kmsKeyArn"):
        raise bad_request("A KMS key ARN is required with aws:kms.")  # our wording
    if enc.get("sseAlgorithm") == "AES256" and enc.get("kmsKeyArn"):
        raise bad_request("A KMS key ARN is only valid with aws:kms.")  # our wording
    STATE.bucket_encryption[bucket.arn] = enc
    return 200, {}


@handles("GetTableBucketEncryption")
def get_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"encryptionConfiguration": STATE.bucket_encryption.get(bucket.arn, {"sseAlgorithm": "AES256"})}


@handles("GetTableBucketStorageClass")
def get_storage_class(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"storageClassConfiguration": {"storageClass": STATE.storage_class.get(bucket.arn, "STANDARD")}}


@handles("PutTableBucketStorageClass")
def put_storage_class(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    bucket = get_bucket(p["tableBucketARN"])
    STATE.storage_class[bucket.arn] = b["storageClassConfiguration"]["storageClass"]
    return 200, {}


@handles("GetTableEncryption")
def get_table_encryption(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    """A table's encryption: the bucket's (what a table created without its own encryption gets; the emulator does not
    keep a per-table setting)."""
    get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"encryptionConfiguration": STATE.bucket_encryption.get(bucket.arn, {"sseAlgorithm": "AES256"})}


@handles("GetTableStorageClass")
def get_table_storage_class(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    """A table's storage class: the bucket's (a table takes the bucket's class when it is created)."""
    get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    bucket = get_bucket(p["tableBucketARN"])
    return 200, {"storageClassConfiguration": {"storageClass": STATE.storage_class.get(bucket.arn, "STANDARD")}}


def _tagged_resource(arn: str) -> str:
    """The ARN of an existing table bucket or table (NotFound otherwise)."""
    if _TABLE_ARN_RE.match(arn):
        return str(get_table_by_arn(arn).arn)
    return str(get_bucket(arn).arn)


@handles("TagResource")
def tag_resource(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    arn = _tagged_resource(p["resourceArn"])
    STATE.tags.setdefault(arn, {}).update(b.get("tags") or {})
    return 200, {}


@handles("UntagResource")
def untag_resource(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    arn = _tagged_resource(p["resourceArn"])
    for key in parse_qs(q.get(RAW_QUERY, "")).get("tagKeys", []):
        STATE.tags.get(arn, {}).pop(key, None)
    return 204, None


@handles("ListTagsForResource")
def list_tags(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    return 200, {"tags": dict(STATE.tags.get(_tagged_resource(p["resourceArn"]), {}))}
