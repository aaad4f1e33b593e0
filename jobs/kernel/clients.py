"""boto3 clients for the ops jobs.

Every session is a stock boto3 session (`s3tables_kit.jobs.kernel.sdk.boto3_session`; botocore >= 1.44.7 knows every S3
Tables operation the kit calls, ``disassociate_table_replication`` included). With an endpoint
(``--endpoint-url`` or the ``AWS_ENDPOINT_URL`` environment variable, read only in `resolve_endpoint`: the flag
wins) every service's URL is that endpoint and the credentials are the environment's (a function's role session,
as Lambda gives it) or else localstack-client's, so every request goes
through botocore's real serialisation to the local endpoint (moto in tests). Without one, the
default credential chain is used, optionally assuming a role per account (``--role-name`` for the same role name
in every account, ``--role-arn ACCOUNT=ARN`` to override one account).

Retries: the kit's one policy, `s3tables_kit.jobs.kernel.sdk` (control-plane calls: botocore's ``standard`` mode with
its client-side retry quota, exponential backoff with jitter, throttling codes such as
``TooManyRequestsException``/``ThrottlingException`` included) with a configurable attempt count; `sdk.call`
adds an outer backoff for throttling that outlives botocore's attempts, and the tools give what still failed a
second pass.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.config import Config

from s3tables_kit.jobs.kernel.iceberg_rest import IcebergRest
from s3tables_kit.jobs.kernel.sdk import MAX_ATTEMPTS, boto3_session, retry_config

ENDPOINT_ENV = "AWS_ENDPOINT_URL"
SESSION_NAME = "s3tables-replica-kit-ops"
# localstack-client's default credentials (moto maps them to its default account 123456789012).
LOCAL_CREDENTIALS = {
    "aws_access_key_id": "accesskey",
    "aws_secret_access_key": "secretkey",
    "aws_session_token": "token",
}


def _environment_credentials() -> dict[str, str | None] | None:
    """The role session botocore's environment provider finds (a Lambda function's execution role: keys and a
    session token), or None; never a bare key pair (the tools' account keys keep their reading), the shared files or
    instance metadata (a stand-in run must not wait on those)."""
    from botocore.credentials import EnvProvider

    found = EnvProvider().load()
    frozen = found.get_frozen_credentials() if found is not None else None
    if frozen is None or not frozen.token:
        return None
    return {
        "aws_access_key_id": frozen.access_key,
        "aws_secret_access_key": frozen.secret_key,
        "aws_session_token": frozen.token,
    }


def resolve_endpoint(flag: str | None) -> str | None:
    """The one place the endpoint environment variable is read: the flag wins, then ``$AWS_ENDPOINT_URL``."""
    value = flag or os.environ.get(ENDPOINT_ENV, "").strip()
    return value or None


def parse_role_arns(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        account, sep, arn = item.partition("=")
        if not sep or not account.isdigit() or len(account) != 12 or not arn.startswith("arn:"):
            raise ValueError(f"--role-arn {item!r} must look like 123456789012=arn:aws:iam::123456789012:role/name")
        out[account] = arn
    return out


@dataclass
class Clients:
    """Thread-safe, cached client factory keyed by (service, Region, account)."""

    endpoint_url: str | None = None
    role_arns: Mapping[str, str] = field(default_factory=dict)
    role_name: str | None = None
    max_attempts: int = MAX_ATTEMPTS
    max_pool_connections: int = 32
    _cache: dict[tuple[str, str, str | None], Any] = field(default_factory=dict, init=False, repr=False)
    _creds: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        """What a worker process needs to build the same clients (`s3tables_kit.jobs.kernel.concurrency.WorkerPool`):
        the settings and the credentials already assumed; not the clients, caches or lock of this process."""
        return {
            "endpoint_url": self.endpoint_url,
            "role_arns": dict(self.role_arns),
            "role_name": self.role_name,
            "max_attempts": self.max_attempts,
            "max_pool_connections": self.max_pool_connections,
            "_creds": dict(self._creds),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        creds = state.pop("_creds", {})
        self.__init__(**state)  # type: ignore[misc]
        self._creds.update(creds)

    def _config(self, service: str) -> Config:
        kwargs: dict[str, Any] = {
            "max_pool_connections": self.max_pool_connections,
            "connect_timeout": 10,
            "read_timeout": 60,
        }
        if service == "s3" and self.endpoint_url:
            kwargs["s3"] = {"addressing_style": "path"}
        return retry_config(self.max_attempts, **kwargs)

    def role_for(self, account: str | None) -> str | None:
        if account is None:
            return None
        if account in self.role_arns:
            return self.role_arns[account]
        if self.role_name:
            return f"arn:aws:iam::{account}:role/{self.role_name}"
        return None

    def _session(self, region: str, creds: Mapping[str, str] | None) -> Any:
        kwargs: dict[str, Any] = {"region_name": region}
        if creds:
            kwargs.update(
                aws_access_key_id=creds["AccessKeyId"],
                aws_secret_access_key=creds["SecretAccessKey"],
                aws_session_token=creds["SessionToken"],
            )
        elif self.endpoint_url:  # a stand-in: a role session the environment holds (Lambda's), else the defaults
            kwargs.update(_environment_credentials() or LOCAL_CREDENTIALS)
        return boto3_session(**kwargs)

    def _endpoint_for(self, service: str) -> str | None:
        """The endpoint every service is sent to: the resolved one as given (never re-read from the environment,
        where `$AWS_ENDPOINT_URL` would override the flag)."""
        return self.endpoint_url.rstrip("/") if self.endpoint_url else None

    def _credentials(self, account: str | None, region: str) -> dict[str, str] | None:
        role = self.role_for(account)
        if role is None or account is None:
            return None
        if account not in self._creds:
            sts = self._session(region, None).client(
                "sts", config=self._config("sts"), endpoint_url=self._endpoint_for("sts")
            )
            self._creds[account] = sts.assume_role(RoleArn=role, RoleSessionName=SESSION_NAME)["Credentials"]
        return self._creds[account]

    def client(self, service: str, region: str, account: str | None = None) -> Any:
        key = (service, region, account)
        with self._lock:
            if key not in self._cache:
                session = self._session(region, self._credentials(account, region))
                self._cache[key] = session.client(
                    service, config=self._config(service), endpoint_url=self._endpoint_for(service)
                )
            return self._cache[key]

    def s3tables(self, region: str, account: str | None = None) -> Any:
        return self.client("s3tables", region, account)

    def channels(self, region: str, account: str) -> Any:
        """An s3tables client for `GetChannel`, whose endpoint on AWS is another host than the control plane's
        (`<account>.putrows.s3tables-data.<region>`, docs/aws-facts.md#streaming-writes-putrows); locally the same."""
        key = ("s3tables-channels", region, account)
        with self._lock:
            if key not in self._cache:
                session = self._session(region, self._credentials(account, region))
                url = (
                    self._endpoint_for("s3tables") or f"https://{account}.putrows.s3tables-data.{region}.amazonaws.com"
                )
                self._cache[key] = session.client("s3tables", config=self._config("s3tables"), endpoint_url=url)
            return self._cache[key]

    def iceberg_rest(self, region: str, account: str | None = None) -> IcebergRest:
        """The S3 Tables Iceberg REST endpoint of a Region (and account), over the s3tables client's transport and
        credentials (`s3tables_kit.jobs.kernel.iceberg_rest`). Called once per replica read: a cached one costs one
        lookup."""
        key = ("iceberg-rest", region, account)
        with self._lock:
            rest: IcebergRest | None = self._cache.get(key)
        if rest is not None:
            return rest
        s3t = self.s3tables(region, account)  # takes the lock itself
        with self._lock:
            if key not in self._cache:
                session = self._session(region, self._credentials(account, region))
                self._cache[key] = IcebergRest(s3t, session.get_credentials(), self.max_attempts)
            built: IcebergRest = self._cache[key]
            return built

    def s3(self, region: str, account: str | None = None) -> Any:
        return self.client("s3", region, account)

    def organizations(self, account: str | None = None) -> Any:
        return self.client("organizations", "us-east-1", account)
