"""The kit's one retry policy for AWS calls: every boto3 client the kit builds (ops tools, monitor, recovery planner,
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
(`jobs.ops.common.second_pass`). Nothing here reads the environment.
"""

from __future__ import annotations

from typing import Any

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
    `jobs.aws_timestamps` (every session the kit builds for AWS calls comes from here)."""
    import boto3
    import botocore.session

    from jobs import aws_timestamps

    session = aws_timestamps.install(botocore.session.get_session())
    return boto3.session.Session(botocore_session=session, **kwargs)


def client(
    service: str, region: str | None, endpoint_url: str | None = None, *, data_plane: bool = False, **config: Any
) -> Any:
    """A boto3 client with the kit's retry policy, default credentials chain."""
    conf = retry_config(data_plane=data_plane, **config)
    return boto3_session(region_name=region).client(service, endpoint_url=endpoint_url, config=conf)


def _strategy_base() -> type:
    from pyarrow.fs import AwsStandardS3RetryStrategy

    return AwsStandardS3RetryStrategy  # type: ignore[no-any-return]


def pyarrow_retry_strategy(max_attempts: int = MAX_ATTEMPTS) -> Any:
    """The retry strategy for ``pyarrow.fs.S3FileSystem(retry_strategy=...)``."""
    return _strategy_base()(max_attempts=max_attempts)


class KitS3RetryStrategy:
    """What pyiceberg's ``s3.retry-strategy-impl`` names: instantiated without arguments, it is pyarrow's
    standard strategy with `MAX_ATTEMPTS` (``__new__`` returns the pyarrow object itself, so pyarrow gets the
    exact type it checks for)."""

    def __new__(cls) -> Any:  # type: ignore[misc]
        return pyarrow_retry_strategy()


def fileio_properties(properties: dict[str, str] | None = None) -> dict[str, str]:
    """pyiceberg FileIO properties with the kit's S3 retry strategy added (an explicit setting wins)."""
    out = {PYICEBERG_RETRY_PROPERTY: f"{__name__}.{KitS3RetryStrategy.__qualname__}"}
    out.update(properties or {})
    return out
