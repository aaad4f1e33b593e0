"""Client for the extension's test-only control endpoint (`/_kit_test/...`)."""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from typing import Any


class Control:
    def __init__(self, endpoint_url: str) -> None:
        self.endpoint_url = endpoint_url.rstrip("/")

    def _post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        req = urllib.request.Request(
            f"{self.endpoint_url}/_kit_test/{path}",
            data=json.dumps(body or {}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read() or b"{}")

    def call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """POST `body` to `/_kit_test/<path>`; the decoded JSON answer."""
        return self._post(path, body)

    def seed_accounts(self, accounts: list[str]) -> dict[str, dict[str, str]]:
        """An access key per account: {account: {"accessKeyId", "secretAccessKey"}}; requests signed with one are
        served as that account."""
        return dict(self._post("accounts", {"accounts": accounts})["accounts"])

    def seed_organization(
        self, management_account_id: str, ous: dict[str, list[str]], accounts: list[str] | None = None
    ) -> dict[str, Any]:
        """An organization of `management_account_id` with these OUs (by id) and member accounts."""
        body = {"managementAccountId": management_account_id, "ous": ous, "accounts": accounts or []}
        return dict(self._post("organization", body))

    def health(self) -> bool:
        return bool(self._post("health").get("ok"))

    def server_pid(self) -> int | None:
        """The pid of the server process answering (None from an emulator that does not report it)."""
        pid = self._post("health").get("pid")
        return int(pid) if pid is not None else None

    def reset(self) -> None:
        self._post("reset")

    def stats(self) -> dict[str, Any]:
        return dict(self._post("stats"))

    def inject_faults(
        self,
        operation: str,
        count: int,
        code: str = "TooManyRequestsException",
        status: int = 429,
        message: str = "Rate exceeded",
        match: str | None = None,
        *,
        share: float = 1.0,
        seed: int = 0,
        service: str | None = None,
    ) -> None:
        """Fail the next `count` matching calls of `operation` ("*": any operation of `service`) with the error;
        `count=-1` has no limit. With `share` < 1 only that deterministic (seeded) share of the calls fails."""
        self._post(
            "faults",
            {
                "faults": [
                    {
                        "operation": operation,
                        "remaining": count,
                        "code": code,
                        "status": status,
                        "message": message,
                        "match": match,
                        "share": share,
                        "seed": seed,
                        "service": service,
                    }
                ]
            },
        )

    def throttle(self, operation: str, share: float, *, seed: int = 0, service: str | None = None) -> None:
        """Throttle `share` of the calls of `operation` ("*" with `service`: every operation), with the service's
        own throttling error: S3 `SlowDown` (HTTP 503), otherwise `TooManyRequestsException` (HTTP 429)."""
        if service == "s3":
            self.inject_faults(
                operation, -1, "SlowDown", 503, "Please reduce your request rate.", share=share, seed=seed, service="s3"
            )
        else:
            self.inject_faults(operation, -1, share=share, seed=seed, service=service)

    def set_latency(
        self,
        operation: str | None = None,
        seconds: float = 0.0,
        *,
        service: str | None = None,
        count: int = 0,
        after: bool = False,
    ) -> None:
        """Every call of `operation` (or, with `service`, of every operation of that SigV4 signing name, e.g.
        "s3tables" or "s3", unless the operation has its own) takes `seconds` longer; with `count`, only the next
        `count` calls of `operation`; with `after`, the operation's work is done at once and its answer is late (a slow
        first answer to a create that did create)."""
        body = {"operation": operation, "service": service, "seconds": seconds, "count": count, "after": after}
        self._post("latency", body)

    def set_status(
        self,
        source_table_arn: str,
        destination_bucket_arn: str,
        status: str,
        *,
        failure_message: str | None = None,
        replicated_at: dt.datetime | None = None,
        replicated_metadata_location: str | None = None,
        merge: bool = True,
    ) -> None:
        item = _replication_body(source_table_arn, destination_bucket_arn, status, failure_message, merge=merge)
        if replicated_at is not None:
            item["lastSuccessfulReplicatedUpdate"] = {
                "metadataLocation": replicated_metadata_location or "s3://replica/metadata/previous.metadata.json",
                "timestamp": replicated_at.isoformat(),
            }
        self._post("replication-status", item)

    def hold_replication(
        self,
        source_table_arn: str,
        destination_bucket_arn: str,
        status: str = "pending",
        *,
        failure_message: str | None = None,
        release: bool = False,
    ) -> None:
        """Keep a table's replication to a destination at `status` (pending: a slow backfill; failed, with
        `failure_message`) through every `replicate`, until called again with `release`."""
        body = _replication_body(source_table_arn, destination_bucket_arn, status, failure_message, release=release)
        self._post("replication-hold", body)

    def replicate(
        self,
        *,
        source_table_arn: str | None = None,
        source_bucket_arn: str | None = None,
        at: dt.datetime | None = None,
    ) -> list[dict[str, str]]:
        body: dict[str, Any] = {"sourceTableArn": source_table_arn, "sourceBucketArn": source_bucket_arn}
        if at is not None:
            body["timestamp"] = at.isoformat()
        return list(self._post("replicate", body)["replicated"])

    def managed_by(self, table_arn: str, service: str) -> None:
        """Mark a table as written by another AWS service: GetTable and ListTables report `service` as its
        `managedByService` (not the replication service's value; no replication information)."""
        self._post("managed-by", {"tableArn": table_arn, "service": service})

    def enforce_policies(self, bucket_arns: list[str], enabled: bool = True) -> list[str]:
        """Evaluate the explicit Denies of these table buckets' (and their tables') policies on the write path
        (`emulator.resource_policy`); the buckets enforced now."""
        return list(self._post("enforce-policies", {"bucketArns": bucket_arns, "enabled": enabled})["enforced"])

    def putrows(self, **settings: Any) -> dict[str, dict[str, int]]:
        """The PutRows service (`emulator.streaming`): `commitDelayS`, `replicate`, `readsZero` settings, `flush=True`
        commits every buffered row now; each channel's buffered and committed rows."""
        return dict(self._post("putrows", settings))

    def seed(
        self,
        bucket_arn: str,
        namespaces: dict[str, list[str]],
        commit_ms: int | None = None,
        summary: dict[str, int | str] | None = None,
    ) -> list[str]:
        """Bulk-create tables; with `commit_ms`, each gets a metadata file with one snapshot committed then, whose
        summary carries `summary` (e.g. ``{"total-files-size": 1024, "total-records": 10}``)."""
        body = {"bucketArn": bucket_arn, "namespaces": namespaces, "commitMs": commit_ms, "summary": summary}
        return list(self._post("seed", body)["tables"])


def _replication_body(
    source_table_arn: str, destination_bucket_arn: str, status: str, failure_message: str | None, **flags: bool
) -> dict[str, Any]:
    """One table's replication to one destination as `set_status` and `hold_replication` post it."""
    body: dict[str, Any] = {
        "sourceTableArn": source_table_arn,
        "destinationTableBucketArn": destination_bucket_arn,
        "replicationStatus": status,
        **flags,
    }
    if failure_message is not None:
        body["failureMessage"] = failure_message
    return body
