"""The recovery job's one retry policy for every client it builds (boto3 `s3tables`/`s3`, pyiceberg/pyarrow S3).

S3 Tables publishes no per-API request rates; the only signal is `TooManyRequestsException` (HTTP 429, REFERENCE §8).
botocore's `adaptive` mode retries throttling with exponential backoff AND a client-side token bucket that slows the
whole client down when it is throttled, which is what a planner with 32 threads on one client needs. pyiceberg reads
metadata and manifest lists through pyarrow's S3 filesystem, whose retry strategy is set by class name
(`s3.retry-strategy-impl`).

Helper 18-ops builds the kit-wide policy (`jobs/ops`); `boto_config` is the single place to point at it once merged.
"""

from __future__ import annotations

from typing import Any

# Under a 20% throttling rate: P(10 failures in a row) = 0.2**10 ~ 1e-7 per call: none in a 10,000-table plan.
MAX_ATTEMPTS = 10
# Connections per client: the planner's threads share one client (botocore clients are thread-safe).
MAX_POOL = 64


def boto_config(**overrides: Any) -> Any:
    """botocore `Config` with adaptive retries (backoff + client-side rate limiting on throttling)."""
    from botocore.config import Config

    kwargs: dict[str, Any] = {
        "retries": {"mode": "adaptive", "total_max_attempts": MAX_ATTEMPTS},
        "max_pool_connections": MAX_POOL,
    }
    kwargs.update(overrides)
    return Config(**kwargs)


def s3tables_client(region: str | None, endpoint: str | None) -> Any:
    import boto3

    return boto3.client("s3tables", region_name=region, endpoint_url=endpoint, config=boto_config())


def _arrow_strategy_base() -> Any:
    from pyarrow.fs import AwsStandardS3RetryStrategy

    return AwsStandardS3RetryStrategy


class ArrowS3Retry(_arrow_strategy_base()):  # type: ignore[misc]
    """pyarrow's standard AWS retry strategy (exponential backoff on 429/5xx) with the kit's attempt count;
    pyiceberg instantiates it by name with no arguments."""

    def __init__(self) -> None:
        super().__init__(max_attempts=MAX_ATTEMPTS)


ARROW_RETRY_IMPL = f"{__name__}.ArrowS3Retry"


def fileio_props(region: str | None, endpoint: str | None) -> dict[str, str]:
    """pyiceberg FileIO properties for S3 (table storage) with the kit's retry policy."""
    props = {"s3.region": region or "", "s3.retry-strategy-impl": ARROW_RETRY_IMPL}
    if endpoint:
        props["s3.endpoint"] = endpoint
    return props
