"""The extension's shared pieces: API errors and their AWS wording, ARN shapes, and the in-memory state
(policies, maintenance, replication, faults, latency, call counts) behind one lock."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

# ----------------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def not_found(msg: str) -> ApiError:
    return ApiError("NotFoundException", msg, 404)


def bad_request(msg: str) -> ApiError:
    return ApiError("BadRequestException", msg, 400)


def conflict(msg: str) -> ApiError:
    return ApiError("ConflictException", msg, 409)


TABLE_NOT_FOUND = "The specified table does not exist."
BUCKET_NOT_FOUND = "The specified bucket does not exist."
NO_VERSION_TOKEN = "A version token is not specified."  # docs/aws-facts.md#replication (measured on AWS)
TOKEN_MISMATCH = "Provided version token does not match the table version token."  # moto's wording, same op family
# Not documented by AWS; our wording:
NO_REPLICATION = "The specified replication configuration does not exist."
NO_POLICY = "The specified resource policy does not exist."
# Documented: DisassociateTableReplication fails on a table that is not a replica (including one already
# disassociated); the error code and message are not shown on the pages we could read: our choice and wording.
NOT_A_REPLICA = "The specified table is not a replica table."
# Documented: replicas are read-only; the error a write gets is not documented: our choice and wording.
REPLICA_READ_ONLY = "The specified table is a replica table managed by S3 Tables replication and is read-only."
# Documented (docs/aws-facts.md#disassociating-a-replica): after a disassociation the source reports FAILED for
# that destination "with a message that begins 'The destination table has been det'". The rest of the sentence is
# OURS (only the prefix is AWS's).
DETACHED_FAILURE = "The destination table has been detached from replication and no longer receives updates."
# GetTable/ListTables report `managedByService` for replicas; the value is not documented: ours (UNVERIFIED).
MANAGED_BY_REPLICATION = "replication.s3tables.amazonaws.com"

_BUCKET_ARN_RE = re.compile(r"^arn:(aws[-a-z0-9]*):s3tables:([-a-z0-9]*):([0-9]{12}):bucket/([a-z0-9_-]{3,63})$")
_TABLE_ARN_RE = re.compile(
    r"^arn:(aws[-a-z0-9]*):s3tables:([-a-z0-9]*):([0-9]{12}):bucket/([a-z0-9_-]{3,63})/table/([a-zA-Z0-9-_]{1,255})$"
)
_ROLE_RE = re.compile(r"^arn:.+:iam::[0-9]{12}:role/.+$")

DEFAULT_MAINTENANCE: dict[str, Any] = {
    "icebergCompaction": {
        "status": "enabled",
        "settings": {"icebergCompaction": {"targetFileSizeMB": 512, "strategy": "auto"}},
    },
    "icebergSnapshotManagement": {
        "status": "enabled",
        "settings": {"icebergSnapshotManagement": {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 120}},
    },
}


def _iso(ts: dt.datetime) -> str:
    return ts.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _parse_ts(v: Any) -> dt.datetime:
    if isinstance(v, int | float):
        return dt.datetime.fromtimestamp(v, tz=dt.UTC)
    return dt.datetime.fromisoformat(str(v).replace("Z", "+00:00"))


# ----------------------------------------------------------------------------------------------------
# Extension state
# ----------------------------------------------------------------------------------------------------


@dataclass
class Fault:
    """Fail matching requests with an error: the first `remaining` of them (a burst), or, with `share` < 1, a
    deterministic share of them (throttling). Each request is decided by a hash of (`seed`, the request, how many
    times this same request was seen before), so the outcome does not depend on thread interleaving and a retry of
    a throttled request gets a fresh, equally deterministic draw."""

    operation: str  # botocore/S3 operation name (GetTableReplicationStatus, GetObject, ...) or "*" (any)
    remaining: int  # requests still to fail; -1: no limit (use with `share`)
    code: str = "TooManyRequestsException"  # the s3tables/organizations model's throttling error
    status: int = 429
    message: str = "Rate exceeded"
    match: str | None = None  # substring of the decoded request URI/body that must occur
    share: float = 1.0  # fraction of matching requests that fail
    seed: int = 0
    service: str | None = None  # SigV4 signing name (s3tables, s3, monitoring, ...); None: any service
    served: int = 0
    seen: int = 0  # matching requests considered (failed or not)
    repeats: dict[str, int] = field(default_factory=dict, repr=False)  # request digest -> times seen

    def applies(self, service: str | None, op: str, haystack: str) -> bool:
        if self.operation not in ("*", op) or self.remaining == 0:
            return False
        if self.service is not None and self.service != service:
            return False
        if self.match is not None and self.match not in haystack:
            return False
        self.seen += 1
        if self.share < 1.0:
            digest = hashlib.sha256(f"{op}\n{haystack}".encode()).hexdigest()
            n = self.repeats.get(digest, 0)
            self.repeats[digest] = n + 1
            draw = int(hashlib.sha256(f"{self.seed}:{digest}:{n}".encode()).hexdigest()[:15], 16) / 16**15
            if draw >= self.share:
                return False
        if self.remaining > 0:
            self.remaining -= 1
        self.served += 1
        return True

    def view(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "repeats"}


@dataclass
class StandInState:
    bucket_policies: dict[str, str] = field(default_factory=dict)
    table_policies: dict[str, str] = field(default_factory=dict)
    table_maintenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    bucket_maintenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    bucket_encryption: dict[str, dict[str, Any]] = field(default_factory=dict)
    storage_class: dict[str, str] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # table bucket or table ARN -> AWS resource tags
    table_replication: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # table ARN -> {configuration, versionToken}
    bucket_replication: dict[str, dict[str, Any]] = field(default_factory=dict)
    repl_status: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (source table, dest bucket)
    # (source table, dest bucket) -> the status the replication simulation keeps it at (a slow or failing backfill)
    repl_hold: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    replica_source: dict[str, str] = field(default_factory=dict)  # replica table ARN -> source table ARN
    # table ARN -> the `managedByService` another AWS service (zero-ETL, catalog export) gives the tables it writes
    managed_by: dict[str, str] = field(default_factory=dict)
    detached: dict[str, str] = field(default_factory=dict)  # disassociated replica ARN -> its former source ARN
    latency: dict[str, float] = field(default_factory=dict)  # operation -> seconds added to every call
    service_latency: dict[str, float] = field(default_factory=dict)  # signing name -> seconds (unless per op)
    latency_left: dict[str, int] = field(default_factory=dict)  # operation -> calls still delayed (absent: all)
    latency_after: set[str] = field(default_factory=set)  # operations whose delay comes after the work, not before
    faults: list[Fault] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    s3_calls: dict[str, int] = field(default_factory=dict)  # "<bucket> <S3 operation>" -> count (table storage)
    s3_refused: list[str] = field(default_factory=list)  # "<bucket> <operation> <key>" refused as S3 Tables does
    plain_reads: int = 0  # reads answered without moto's request stack (emulator.storage.plain_read)
    in_flight: int = 0
    max_in_flight: int = 0
    channels: dict[str, Any] = field(default_factory=dict)  # table ARN -> its PutRows channel (emulator.streaming)
    streaming: dict[str, Any] = field(default_factory=dict)  # the simulated commit's settings (emulator.streaming)


STATE = StandInState()
LOCK = threading.RLock()
