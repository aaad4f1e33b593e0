"""The `[assurance]` section of `kit.toml`: continuous assurance that `cdktf deploy` creates with the topology.

    [assurance]
    alarm_subscriptions = [{ protocol = "email", endpoint = "oncall@example.com" }]
    # replication point groups (jobs/ops/point.py), besides the whole bucket: `namespace.table` or `namespace.*`
    replication_point_groups = [{ name = "sales", tables = ["sales.*", "ops.incidents"] }]

    [assurance.monitor]             # replication monitor (Lambda on an EventBridge Scheduler schedule)
    interval_minutes = 5
    max_lag_minutes = 30
    max_replication_point_age_minutes = 60   # replication point alarm (jobs/ops/point.py)
    max_table_metrics = 50          # per-table metric cap; tables beyond it are folded into `Table=_other`

    [assurance.rehearsal]           # scheduled recovery rehearsal (EMR Serverless job run of the recovery job)
    interval_hours = 24
    offset_hours = 1                # recover the state as of `offset_hours` before the run
    tables = ["analytics.orders"]   # empty: a sample of `sample` replicated tables
    namespace = "rehearsal"

Every key has a default, so a configuration without the section gets the monitor and a daily rehearsal with
notifications to nobody (the alarms still change state and show in the console). This module is imported by
`topology/model.py` (the root `KitConfig.assurance` field; the section's cross-field rules, which read the whole
topology, live in `topology/checks.py` as `assurance_checks`) and imports nothing of the kit, so there is no import
circle.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

# CloudWatch (PutMetricAlarm): Period x EvaluationPeriods <= 7 days, and <= 1 day when the period is under an
# hour. The monitor's silence alarm spans two intervals, the rehearsal alarm two rehearsal intervals.
MAX_MONITOR_INTERVAL_MINUTES = 720
MAX_REHEARSAL_INTERVAL_HOURS = 84
MAX_TABLE_METRICS = 1000

_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_ARN_RE = re.compile(r"^arn:aws(-cn|-us-gov)?:(sqs|lambda|firehose):[a-z0-9-]+:\d{12}:\S+$")
_ICEBERG_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,254}$")
# A group's name is a CloudWatch dimension value (`Group`) and a command-line word (`--group NAME`).
_GROUP_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_GROUP_PATTERN_RE = re.compile(r"^([a-z0-9][a-z0-9_]{0,254})\.([a-z0-9][a-z0-9_]{0,254}|\*)$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class Subscription(_Frozen):
    """An SNS subscription of the alarm topics: `email`/`email-json` (address), `https` (URL), `sqs`/`lambda`
    (ARN in the topic's account and Region)."""

    protocol: Literal["email", "email-json", "https", "sqs", "lambda"]
    endpoint: str

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, v: str, info: ValidationInfo) -> str:
        protocol = info.data.get("protocol")
        if protocol in ("email", "email-json") and not _EMAIL_RE.match(v):
            raise ValueError(f"endpoint {v!r} must be an e-mail address for protocol {protocol}")
        if protocol == "https" and not v.startswith("https://"):
            raise ValueError(f"endpoint {v!r} must be an https:// URL for protocol https")
        if protocol in ("sqs", "lambda") and not _ARN_RE.match(v):
            raise ValueError(f"endpoint {v!r} must be an {protocol} ARN for protocol {protocol}")
        return v


class Monitor(_Frozen):
    """Replication monitor: runs the kit's `status` logic every `interval_minutes` and publishes metrics."""

    enabled: bool = True
    interval_minutes: int = Field(default=5, ge=1, le=MAX_MONITOR_INTERVAL_MINUTES)
    max_lag_minutes: int = Field(default=30, ge=1)
    # alarm when the replication point (the newest instant every table of a replica can be restored to) is older
    max_replication_point_age_minutes: int = Field(default=60, ge=1)
    max_table_metrics: int = Field(default=50, ge=0, le=MAX_TABLE_METRICS)
    concurrency: int = Field(default=16, ge=1, le=64)
    timeout_seconds: int = Field(default=300, ge=30, le=900)  # Lambda's limit is 900 s


class Rehearsal(_Frozen):
    """Scheduled recovery rehearsal: recovers `tables` (or a sample) as of `offset_hours` ago into `namespace` of
    the recovery bucket, verifies, reports, publishes the rehearsed RTO, and drops what it created."""

    enabled: bool = True
    interval_hours: int = Field(default=24, ge=1, le=MAX_REHEARSAL_INTERVAL_HOURS)
    offset_hours: int = Field(default=1, ge=0)
    tables: tuple[str, ...] = ()
    sample: int = Field(default=1, ge=1, le=50)
    namespace: str = "rehearsal"

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        if not _ICEBERG_NAME_RE.match(v) or v.startswith("aws"):
            raise ValueError(
                f"rehearsal namespace {v!r} must be lower case letters, digits and underscores, start with a "
                "letter or digit and not start with 'aws'"
            )
        return v

    @property
    def schedule_expression(self) -> str:
        return f"rate({self.interval_hours} {'hour' if self.interval_hours == 1 else 'hours'})"


class PointGroup(_Frozen):
    """A replication point group: `status` reports, the monitor publishes (dimension `Group`) and `recover` /
    `failover --group NAME` take the point of these tables, besides the whole bucket's. `tables`: `namespace.table`
    or `namespace.*` (every table of the namespace, declared or not)."""

    name: str
    tables: tuple[str, ...] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _GROUP_NAME_RE.match(v):
            raise ValueError(
                f"group name {v!r} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
            )
        return v

    @field_validator("tables")
    @classmethod
    def _tables(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in v:
            if not _GROUP_PATTERN_RE.match(pattern):
                raise ValueError(
                    f"table pattern {pattern!r} must be 'namespace.table' or 'namespace.*' (lower case Iceberg names)"
                )
        twice = sorted({p for p in v if v.count(p) > 1})
        if twice:
            raise ValueError(f"table patterns {twice} appear more than once")
        return v


class Assurance(_Frozen):
    alarm_subscriptions: tuple[Subscription, ...] = ()
    replication_point_groups: tuple[PointGroup, ...] = ()
    monitor: Monitor = Monitor()
    rehearsal: Rehearsal = Rehearsal()

    @field_validator("replication_point_groups")
    @classmethod
    def _unique_groups(cls, v: tuple[PointGroup, ...]) -> tuple[PointGroup, ...]:
        names = [g.name for g in v]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"group names {twice} appear more than once (a name is a group's metric dimension)")
        return v

    @property
    def point_groups(self) -> dict[str, tuple[str, ...]]:
        """{group name: table patterns}: what the outputs export and `jobs.ops.point` takes."""
        return {g.name: g.tables for g in self.replication_point_groups}


def monitor_schedule_expression(monitor: Monitor) -> str:
    n = monitor.interval_minutes
    return f"rate({n} {'minute' if n == 1 else 'minutes'})"
