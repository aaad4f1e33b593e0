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


def _deployed(what: str) -> bool:
    """The switch of a scheduled assurance component, on unless turned off (both read the same in `kit.toml`)."""
    return Field(default=True, description=f"Whether the {what} is deployed.")


def _interval(default: int, most: int, description: str) -> int:
    """A schedule's interval: at least one unit, at most what a CloudWatch alarm spanning two intervals allows."""
    return Field(default=default, ge=1, le=most, description=description)


class Subscription(_Frozen):
    """An SNS subscription of the alarm topics: `email`/`email-json` (address), `https` (URL), `sqs`/`lambda`
    (ARN in the topic's account and Region)."""

    protocol: Literal["email", "email-json", "https", "sqs", "lambda"] = Field(
        description="SNS protocol of the subscription."
    )
    endpoint: str = Field(
        description="An e-mail address (email, email-json), an https:// URL (https), or an SQS queue or Lambda "
        "function ARN in the alarm topic's account and Region (sqs, lambda)."
    )

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

    enabled: bool = _deployed("replication monitor (a Lambda function on an EventBridge Scheduler schedule)")
    interval_minutes: int = _interval(5, MAX_MONITOR_INTERVAL_MINUTES, "Minutes between two runs of the monitor.")
    max_lag_minutes: int = Field(default=30, ge=1, description="Replication lag, in minutes, that fires the lag alarm.")
    max_replication_point_age_minutes: int = Field(
        default=60,
        ge=1,
        description="Age, in minutes, of the replication point (the newest instant every table of a replica can be "
        "restored to) that fires its alarm.",
    )
    max_table_metrics: int = Field(
        default=50,
        ge=0,
        le=MAX_TABLE_METRICS,
        description="Tables that get metric series of their own; the others are folded into `Table=_other`.",
    )
    concurrency: int = Field(default=16, ge=1, le=64, description="Parallel status calls in the monitor's function.")
    timeout_seconds: int = Field(
        default=300, ge=30, le=900, description="Timeout of the monitor's function in seconds (Lambda allows 900)."
    )


class Harden(_Frozen):
    """Scheduled hardening: `harden` of the source's replica buckets every `interval_minutes`, so that a replica the
    service creates (bucket mode: one for every new source table) has one layer for at most one interval and one
    run."""

    enabled: bool = Field(
        default=False,
        description="Deploy the scheduled hardener (a Lambda function on an EventBridge Scheduler schedule, in the "
        "source stack): its role writes a replica table's policy and retention only, and must not be listed in "
        "`protection.break_glass_principals`.",
    )
    interval_minutes: int = _interval(15, 60, "Minutes between two runs of the hardener.")
    timeout_seconds: int = Field(
        default=300, ge=30, le=900, description="Timeout of the hardener's function in seconds (Lambda allows 900)."
    )

    @property
    def one_layer_bound_minutes(self) -> int:
        """The longest a new replica keeps one layer (its bucket's) once the service created it: one interval and
        one run, rounded up to the minute."""
        return self.interval_minutes + -(-self.timeout_seconds // 60)


class Rehearsal(_Frozen):
    """Scheduled recovery rehearsal: recovers `tables` (or a sample) as of `offset_hours` ago into `namespace` of
    the recovery bucket, verifies, reports, publishes the rehearsed RTO, and drops what it created."""

    enabled: bool = _deployed("scheduled recovery rehearsal (an EMR Serverless job run of the recovery job)")
    interval_hours: int = _interval(24, MAX_REHEARSAL_INTERVAL_HOURS, "Hours between two rehearsals.")
    offset_hours: int = Field(
        default=1,
        ge=0,
        description="The rehearsal recovers the state of this many hours before it runs (keep it within the "
        "recovery replica's retention).",
    )
    tables: tuple[str, ...] = Field(
        default=(), description="`namespace.table` names to rehearse; empty, a sample of `sample` replicated tables."
    )
    sample: int = Field(
        default=1, ge=1, le=50, description="Replicated tables sampled for each rehearsal when `tables` is empty."
    )
    namespace: str = Field(
        default="rehearsal",
        description="Namespace of the recovery bucket the rehearsal recovers into and drops afterwards.",
    )

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

    name: str = Field(
        description="1-64 letters, digits, '_', '.' or '-': the metric dimension `Group` and the NAME of `--group`."
    )
    tables: tuple[str, ...] = Field(
        min_length=1,
        description="Table patterns: `namespace.table`, or `namespace.*` for every table of the namespace, declared "
        "or not.",
    )

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
    alarm_subscriptions: tuple[Subscription, ...] = Field(
        default=(),
        description="Whom the alarms notify; empty, nobody (summary, synth and deploy print a warning).",
    )
    replication_point_groups: tuple[PointGroup, ...] = Field(
        default=(),
        description="Named groups of tables whose replication point `status` reports, the monitor publishes and "
        "recover and failover take with `--group NAME`, besides the whole bucket's.",
    )
    monitor: Monitor = Field(
        default=Monitor(), description="The replication monitor: runs the `status` logic and publishes metrics."
    )
    rehearsal: Rehearsal = Field(
        default=Rehearsal(),
        description="The scheduled recovery rehearsal: recovers, verifies, reports and publishes the rehearsed RTO.",
    )
    harden: Harden = Field(
        default=Harden(),
        description="The scheduled hardener: new replicas get their table policy and retention without a person.",
    )

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
        """{group name: table patterns}: what the outputs export and `s3tables_kit.jobs.ops.point` takes."""
        return {g.name: g.tables for g in self.replication_point_groups}


def monitor_schedule_expression(monitor: Monitor | Harden) -> str:
    n = monitor.interval_minutes
    return f"rate({n} {'minute' if n == 1 else 'minutes'})"


# EventBridge Scheduler's universal target for EMR Serverless StartJobRun (the request is the target's input).
UNIVERSAL_TARGET = "arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun"

# From this release EMR Serverless publishes its job metrics by application id *and* name, and no longer the series by
# id alone (EMR Serverless user guide, "Monitoring EMR Serverless applications and jobs"; docs/aws-facts.md U38).
NAMED_METRICS_FROM = (7, 10)


def job_metric_dimensions(application_id: str, name: str, release_label: str) -> dict[str, str]:
    """The dimensions of the application's job-state metrics (`AWS/EMRServerless` `FailedJobs`, `CancelledJobs`)."""
    major, minor = (int(x) for x in release_label.removeprefix("emr-").split(".")[:2])
    named = {"ApplicationName": name} if (major, minor) >= NAMED_METRICS_FROM else {}
    return {"ApplicationId": application_id} | named
