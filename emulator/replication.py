"""S3 Tables replication: configurations (versioned), status, disassociation, and replicas being read-only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from emulator.lookup import get_bucket, get_table_by_arn, get_table_by_name
from emulator.routing import GUARDS, handles
from emulator.state import (
    _BUCKET_ARN_RE,
    _ROLE_RE,
    NO_REPLICATION,
    NO_VERSION_TOKEN,
    NOT_A_REPLICA,
    REPLICA_READ_ONLY,
    STATE,
    TOKEN_MISMATCH,
    ApiError,
    _iso,
    _parse_ts,
    bad_request,
    conflict,
    not_found,
)
from emulator.tables import _new_token

# ---- replication configuration ----


def _check_replication(conf: dict[str, Any], source_bucket_arn: str) -> None:
    if not _ROLE_RE.match(conf.get("role") or ""):
        raise bad_request("The role must be an IAM role ARN.")  # our wording
    rules = conf.get("rules") or []
    if len(rules) != 1:
        raise bad_request("Exactly one replication rule must be specified.")  # our wording (model: min 1, max 1)
    dests = [d.get("destinationTableBucketARN") for d in rules[0].get("destinations") or []]
    if not 1 <= len(dests) <= 5:
        raise bad_request("A replication rule must have between 1 and 5 destinations.")  # our wording
    if len(set(dests)) != len(dests):
        raise bad_request("Duplicate destination table buckets are not allowed.")  # our wording
    for d in dests:
        if not _BUCKET_ARN_RE.match(d or ""):
            raise bad_request(f"The destination table bucket ARN is not valid: {d}")
        if d == source_bucket_arn:
            raise bad_request("The destination table bucket must not be the source table bucket.")  # our wording


def _put_versioned(store: dict[str, dict[str, Any]], key: str, conf: dict[str, Any], token: str | None) -> str:
    existing = store.get(key)
    if existing is not None:
        if not token:
            raise bad_request(NO_VERSION_TOKEN)
        if token != existing["versionToken"]:
            raise conflict(TOKEN_MISMATCH)
    new_token = _new_token()
    store[key] = {"configuration": conf, "versionToken": new_token}
    return new_token


def _delete_versioned(store: dict[str, dict[str, Any]], key: str, token: str | None) -> None:
    existing = store.get(key)
    if existing is None:
        raise not_found(NO_REPLICATION)
    if not token:
        raise bad_request(NO_VERSION_TOKEN)
    if token != existing["versionToken"]:
        raise conflict(TOKEN_MISMATCH)
    del store[key]  # existing replicas stay (docs/aws-facts.md#replication)


def _replication_handlers(level: str, resolve: Callable[[dict[str, str]], tuple[str, str]], store: str) -> None:
    """Put/Get/Delete<level>Replication: one versioned configuration per resource, the same rules at either level.
    `resolve(query)` names the resource (the configuration's key) and the source bucket the rule must not target."""

    def configurations() -> dict[str, dict[str, Any]]:
        return cast("dict[str, dict[str, Any]]", getattr(STATE, store))

    @handles(f"Put{level}Replication")
    def put(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        key, source_bucket_arn = resolve(q)
        _check_replication(b["configuration"], source_bucket_arn)
        token = _put_versioned(configurations(), key, b["configuration"], q.get("versionToken"))
        return 200, {"versionToken": token, "status": "ENABLED"}  # status value undocumented

    @handles(f"Get{level}Replication")
    def get(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        key, _ = resolve(q)
        if key not in configurations():
            raise not_found(NO_REPLICATION)
        return 200, configurations()[key]

    @handles(f"Delete{level}Replication")
    def delete(p: dict[str, str], q: dict[str, str], b: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        key, _ = resolve(q)
        _delete_versioned(configurations(), key, q.get("versionToken"))
        return 204, None


def _table(q: dict[str, str]) -> tuple[str, str]:
    t = get_table_by_arn(q.get("tableArn", ""))
    return t.arn, t.table_bucket_arn


def _bucket(q: dict[str, str]) -> tuple[str, str]:
    bucket = get_bucket(q.get("tableBucketARN", ""))
    return bucket.arn, bucket.arn


_replication_handlers("Table", _table, "table_replication")
_replication_handlers("TableBucket", _bucket, "bucket_replication")


@handles("DisassociateTableReplication")
def disassociate_table_replication(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    """Turn a replica into a standalone writable table in place, for good (docs/aws-facts.md#disassociating-a-replica).
    Maintenance settings are unchanged; the source's replication configuration is untouched (it still names the
    destination bucket)."""
    t = get_table_by_arn(q.get("tableArn", ""))
    source = STATE.replica_source.pop(t.arn, None)
    if source is None:
        raise bad_request(NOT_A_REPLICA)
    STATE.detached[t.arn] = source
    return 200, {}


def effective_destinations(table: Any) -> list[str] | None:
    """Table-level configuration overrides bucket-level for that table (docs/aws-facts.md#replication)."""
    conf = STATE.table_replication.get(table.arn) or STATE.bucket_replication.get(table.table_bucket_arn)
    if conf is None:
        return None
    return [d["destinationTableBucketARN"] for d in conf["configuration"]["rules"][0]["destinations"]]


def replication_role(table: Any) -> str:
    """The role the replication service acts as for `table` (its effective configuration's), "" without one."""
    conf = STATE.table_replication.get(table.arn) or STATE.bucket_replication.get(table.table_bucket_arn) or {}
    return str(conf.get("configuration", conf).get("role", ""))


@handles("GetTableReplicationStatus")
def get_replication_status(
    p: dict[str, str], q: dict[str, str], b: dict[str, Any]
) -> tuple[int, dict[str, Any] | None]:
    t = get_table_by_arn(q.get("tableArn", ""))
    dests = effective_destinations(t)
    if not dests:
        raise not_found(NO_REPLICATION)
    out = []
    for d in dests:
        st = STATE.repl_status.get((t.arn, d), {"replicationStatus": "pending"})
        item: dict[str, Any] = {"destinationTableBucketArn": d, "replicationStatus": st["replicationStatus"]}
        for k in ("destinationTableArn", "failureMessage"):
            if st.get(k):
                item[k] = st[k]
        if st.get("lastSuccessfulReplicatedUpdate"):
            lsu = st["lastSuccessfulReplicatedUpdate"]
            item["lastSuccessfulReplicatedUpdate"] = {
                "metadataLocation": lsu["metadataLocation"],
                "timestamp": _iso(_parse_ts(lsu["timestamp"])),
            }
        out.append(item)
    return 200, {"sourceTableArn": t.arn, "destinations": out}


def _replica_read_only(p: dict[str, str], q: dict[str, str]) -> None:
    try:
        t = get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    except ApiError:
        return  # moto answers for a table that does not exist
    if t.arn in STATE.replica_source:
        raise ApiError("ForbiddenException", REPLICA_READ_ONLY, 403)


GUARDS["UpdateTableMetadataLocation"] = _replica_read_only
