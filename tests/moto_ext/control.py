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

    def health(self) -> bool:
        return bool(self._post("health").get("ok"))

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
    ) -> None:
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
                    }
                ]
            },
        )

    def set_latency(self, operation: str, seconds: float) -> None:
        """Every call of `operation` takes `seconds` longer (makes overlapping calls observable)."""
        self._post("latency", {"operation": operation, "seconds": seconds})

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
        item: dict[str, Any] = {
            "sourceTableArn": source_table_arn,
            "destinationTableBucketArn": destination_bucket_arn,
            "replicationStatus": status,
            "merge": merge,
        }
        if failure_message is not None:
            item["failureMessage"] = failure_message
        if replicated_at is not None:
            item["lastSuccessfulReplicatedUpdate"] = {
                "metadataLocation": replicated_metadata_location or "s3://replica/metadata/previous.metadata.json",
                "timestamp": replicated_at.isoformat(),
            }
        self._post("replication-status", item)

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

    def seed(self, bucket_arn: str, namespaces: dict[str, list[str]], commit_ms: int | None = None) -> list[str]:
        return list(
            self._post("seed", {"bucketArn": bucket_arn, "namespaces": namespaces, "commitMs": commit_ms})["tables"]
        )
