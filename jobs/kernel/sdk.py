"""The kit's AWS SDK layer: sessions and clients of the stock boto3, the one retry policy, error codes, the
throttling backoff that outlives botocore's attempts (`call`), pagination, ARNs.

The retry policy covers every boto3 client the kit builds (ops tools, monitor, recovery planner,
file copy executors, EMR submission) and pyiceberg's/pyarrow's S3 access.

* `MAX_ATTEMPTS` attempts per call in total (the first included), botocore's exponential backoff with full jitter
  between them; throttling codes (``TooManyRequestsException``, ``ThrottlingException``, ``SlowDown``, ...), HTTP 5xx
  and connection errors are retried; botocore's client-side retry quota (a token bucket of retries shared by the
  threads of one client) stops retry storms.
* Two botocore modes, chosen by workload, not by caller:

  - `DATA_PLANE` = ``adaptive`` for bulk S3 object traffic (the file copy's executors): S3's ``SlowDown`` answers the
    caller's own request rate on a prefix, so the client-side rate limiter (lower the send rate after a throttle,
    raise it again as calls succeed) is the cure.
  - `CONTROL_PLANE` = ``standard`` for everything else (S3 Tables/CloudWatch/Organizations calls and the few
    metadata-object reads of the many-table loops). Measured on the emulator with 20% of the calls throttled
    independently of the rate (the issue's measuring layer): 200 tables x 3 destinations took 73 s in adaptive
    mode against 1 s unthrottled (every throttle cuts the send rate by 30%, down to 0.5 requests/s, so a
    10,000-table run would need about an hour and the monitor Lambda, 15 minutes at most, would never publish its
    heartbeat); standard mode plus the tools' second pass read every table. See docs/decisions/0016-one-retry-policy.md.

* pyarrow's ``S3FileSystem`` (pyiceberg's ``PyArrowFileIO`` for ``s3://``): the AWS SDK for C++'s standard strategy
  with the same attempt count, set through pyiceberg 0.12's FileIO property ``s3.retry-strategy-impl`` (a class path
  instantiated without arguments, hence `KitS3RetryStrategy`); pyarrow 26 exposes no adaptive strategy.

Long loops over many tables (the ops tools) give what still failed a second pass after a pause
(`s3tables_kit.jobs.ops.status`/`s3tables_kit.jobs.ops.monitor`). Nothing here reads the environment.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from s3tables_kit.topology import sdk_models

R = TypeVar("R")

MAX_ATTEMPTS = 10  # total attempts per call (botocore `total_max_attempts`, pyarrow `max_attempts`)
CONTROL_PLANE = "standard"
DATA_PLANE = "adaptive"
PYICEBERG_RETRY_PROPERTY = "s3.retry-strategy-impl"  # pyiceberg.io.S3_RETRY_STRATEGY_IMPL (0.12)


def retry_config(max_attempts: int = MAX_ATTEMPTS, *, data_plane: bool = False, **config: Any) -> Any:
    """A `botocore.config.Config` with the kit's retry policy merged with the other `config` options
    (``max_pool_connections``, ``s3``, timeouts, ...). `data_plane`: bulk S3 object traffic (adaptive mode)."""
    from botocore.config import Config

    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    if data_plane:
        return Config(retries={"mode": "adaptive", "total_max_attempts": max_attempts}, **config)
    return Config(retries={"mode": "standard", "total_max_attempts": max_attempts}, **config)


def boto3_session(**kwargs: Any) -> Any:
    """A `boto3.session.Session(**kwargs)` of the stock SDK whose clients parse timestamps with
    `s3tables_kit.jobs.aws_timestamps` (every session the kit builds for AWS calls comes from here)."""
    import boto3
    import botocore.session

    from s3tables_kit.jobs import aws_timestamps

    session = aws_timestamps.install(sdk_models.extended(botocore.session.get_session()))
    return boto3.session.Session(botocore_session=session, **kwargs)


def client(
    service: str, region: str | None, endpoint_url: str | None = None, *, data_plane: bool = False, **config: Any
) -> Any:
    """A boto3 client with the kit's retry policy, default credentials chain."""
    conf = retry_config(data_plane=data_plane, **config)
    return boto3_session(region_name=region).client(service, endpoint_url=endpoint_url, config=conf)


def _strategy_base() -> type:
    from pyarrow.fs import AwsStandardS3RetryStrategy

    return AwsStandardS3RetryStrategy


def pyarrow_retry_strategy(max_attempts: int = MAX_ATTEMPTS) -> Any:
    """The retry strategy for ``pyarrow.fs.S3FileSystem(retry_strategy=...)``."""
    return _strategy_base()(max_attempts=max_attempts)


class KitS3RetryStrategy:
    """What pyiceberg's ``s3.retry-strategy-impl`` names: instantiated without arguments, it is pyarrow's
    standard strategy with `MAX_ATTEMPTS` (``__new__`` returns the pyarrow object itself, so pyarrow gets the
    exact type it checks for)."""

    def __new__(cls) -> Any:
        return pyarrow_retry_strategy()


def fileio_properties(properties: dict[str, str] | None = None) -> dict[str, str]:
    """pyiceberg FileIO properties with the kit's S3 retry strategy added (an explicit setting wins)."""
    out = {PYICEBERG_RETRY_PROPERTY: f"{__name__}.{KitS3RetryStrategy.__qualname__}"}
    out.update(properties or {})
    return out


# ----------------------------------------------------------------------------------------------------
# ARNs
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BucketRef:
    arn: str

    @property
    def parts(self) -> list[str]:
        return self.arn.split(":", 5)

    @property
    def region(self) -> str:
        return self.parts[3]

    @property
    def account(self) -> str:
        return self.parts[4]

    @property
    def name(self) -> str:
        return self.parts[5].split("/", 1)[1]


def bucket_of_table_arn(table_arn: str) -> str:
    return table_arn.split("/table/", 1)[0]


# ----------------------------------------------------------------------------------------------------
# AWS calls: error codes, throttling backoff, pagination
# ----------------------------------------------------------------------------------------------------

THROTTLING_CODES = frozenset(
    {
        "TooManyRequestsException",
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestLimitExceeded",
        "SlowDown",
        "RequestThrottled",
    }
)


# Worth another try later (the second pass): throttling, server-side and connection errors. Anything else
# (AccessDenied, NotFound, validation) would fail the same way again.
TRANSIENT_CODES = THROTTLING_CODES | frozenset(
    {
        "InternalError",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
TRANSIENT_ERRORS = frozenset(
    {"EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError", "ConnectionError"}
)


def is_transient(message: str | None) -> bool:
    """Whether a `describe_error` text ("Operation: Code: message" or "ErrorType: message") names a transient
    error."""
    if not message:
        return False
    for part in message.split(": ")[:2]:
        if part.strip() in TRANSIENT_CODES or part.strip() in TRANSIENT_ERRORS:
            return True
    return any(f" {c}: " in f" {message}" for c in TRANSIENT_CODES | TRANSIENT_ERRORS)


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return type(exc).__name__


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        op = getattr(exc, "operation_name", "")
        return f"{op}: {err.get('Code', '?')}: {err.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Backoff:
    """Outer retry for throttling that survives botocore's own attempts (full jitter, capped)."""

    attempts: int = 5
    base: float = 0.2
    cap: float = 10.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap, self.base * (2**attempt)))


DEFAULT_BACKOFF = Backoff()


def call(fn: Callable[..., R], /, *args: Any, backoff: Backoff = DEFAULT_BACKOFF, **kwargs: Any) -> R:
    for attempt in range(backoff.attempts + 1):
        try:
            return fn(*args, **kwargs)
        except ClientError as exc:
            if error_code(exc) not in THROTTLING_CODES or attempt >= backoff.attempts:
                raise
            time.sleep(backoff.delay(attempt))
    raise AssertionError("unreachable")


def paginate(client: Any, operation: str, key: str, page_size: int | None = None, **kwargs: Any) -> Iterator[Any]:
    """Every item of a paginated list operation; each page request gets the throttling backoff too."""
    token_in, token_out = _TOKENS.get(operation, ("continuationToken", "continuationToken"))
    size_key = _SIZE_KEYS.get(operation)
    token: str | None = None
    while True:
        params = dict(kwargs)
        if token:
            params[token_in] = token
        if page_size and size_key:
            params[size_key] = page_size
        page = call(getattr(client, operation), **params)
        yield from page.get(key, [])
        token = page.get(token_out)
        if not token:
            return


_TOKENS = {
    "list_tables": ("continuationToken", "continuationToken"),
    "list_targets_for_policy": ("NextToken", "NextToken"),
    "list_policies_for_target": ("NextToken", "NextToken"),
}
_SIZE_KEYS = {
    "list_tables": "maxTables",
    "list_targets_for_policy": "MaxResults",
    "list_policies_for_target": "MaxResults",
}


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key); the scheme is optional."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key
