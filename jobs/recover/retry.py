"""The recovery job's one retry policy for every client it builds (boto3 `s3tables`/`s3`, pyiceberg/pyarrow S3).

S3 Tables publishes no per-API request rates; the only signal is `TooManyRequestsException` (HTTP 429, REFERENCE §8).
botocore's `standard` mode retries throttling and 5xx per call with exponential backoff and jitter (base 1 s, cap
20 s) under a retry quota (a token bucket: 5 tokens per retry, returned on success), and the planner's bounded thread
pool caps the request rate. botocore's `adaptive` mode adds a client-wide send-rate limiter: measured here on the
emulator, a burst of 90 throttled GetTable calls among 300 drove one shared client down to its minimum rate
(0.5 request/s) and the 300-table plan took 198 s instead of ~4 s; it suits one caller that alone meets a server-side
rate, not 32 threads sharing one client against throttling that is not rate-driven. pyiceberg reads metadata and
manifest lists through pyarrow's S3 filesystem, whose retry strategy is set by class name (`s3.retry-strategy-impl`).

Helper 18-ops builds the kit-wide policy (`jobs/ops`); `boto_config` is the single place to point at it once merged.
"""

from __future__ import annotations

from typing import Any

# Under a 20% throttling rate: P(10 failures in a row) = 0.2**10 ~ 1e-7 per call: none in a 10,000-table plan.
MAX_ATTEMPTS = 10
# Connections per client: the planner's threads share one client (botocore clients are thread-safe).
MAX_POOL = 64


def boto_config(**overrides: Any) -> Any:
    """botocore `Config`: standard retries (backoff with jitter, retry quota), the kit's attempt count."""
    from botocore.config import Config

    kwargs: dict[str, Any] = {
        "retries": {"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        "max_pool_connections": MAX_POOL,
    }
    kwargs.update(overrides)
    return Config(**kwargs)


def s3tables_client(region: str | None, endpoint: str | None, retries: dict[str, Any] | None = None) -> Any:
    import boto3

    config = boto_config(**({"retries": retries} if retries else {}))
    return boto3.client("s3tables", region_name=region, endpoint_url=endpoint, config=config)


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
