"""What one `make live-verify` run will create, where, for how much, and the ownership rule every call obeys.

A run has an id (8 lowercase hex digits). Every name it creates starts with `<prefix>-<run id>-` and every resource
that takes tags carries `kit-live-verify-run = <run id>`. `owned()` is the only gate to a destructive call: a name
without the run's prefix, or a resource without the run's tag, is refused (exit 2), whoever asks.
"""

from __future__ import annotations

import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUN_TAG = "kit-live-verify-run"
NAMESPACE_THROWAWAY = "throwaway"

# Cost model (USD, us-east-1 list prices, rounded up): S3 Tables storage of a few MB and a few hundred requests are
# far below a cent; what costs is the run's requests, replication (per GB replicated) and the replica's KMS key (a
# day's share of $1 a month until its deletion takes effect, and its requests).
REQUEST_COST_PER_1000 = 0.005
EXPECTED_REQUESTS = 2_000
STORAGE_AND_REPLICATION_USD = 0.02
KMS_KEY_USD = 0.25  # deletion takes effect 7 days after cleanup schedules it: 7/30 of the monthly dollar
MINUTES_PER_COMMIT = 5.0  # the unknown: replication latency on AWS (the run measures it); the bound the run waits
FIXED_MINUTES = 10.0  # apply, plan, destroy of a handful of resources
BACKFILL_MINUTES = 5.0  # U26: three commits to a table of its own, then its first backfill (infra/live/backfill.py)
# U37, U38 (infra/live/detection_facts.py): one failed EMR Serverless job run (a driver's first minute at most), then
# CloudWatch's delivery, which the probe waits for
JOB_RUN_USD, JOB_METRICS_MINUTES = 0.05, 17.0


# What a stand-in run's reader does next: the facts are AWS's, so only a run there answers them.
AWS_NEXT_STEP = (
    "next step: the same run on AWS, in a sandbox account of your organization: `make live-verify AWS=1` "
    '(settings: examples/live-verify/live-verify.toml; docs/provisioning.md, "Verify on your own account before you '
    'rely on it")'
)


class Refused(Exception):
    """A resource the run did not create, or a configuration it will not run: exit 2."""


@dataclass(frozen=True)
class Settings:
    prefix: str
    account_id: str
    source_region: str
    replica_region: str
    management_account_id: str
    organizational_unit: str
    commits: int = 3
    table: str = "probe.orders"
    second_account_id: str | None = None
    # On AWS the run acts in the second account as this role (the organization's default access role); the local
    # stand-in takes any account's own key instead.
    second_account_role: str = "OrganizationAccountAccessRole"

    @property
    def replica_account_id(self) -> str:
        return self.second_account_id or self.account_id

    @property
    def cross_account(self) -> bool:
        return self.replica_account_id != self.account_id

    @property
    def second_account_role_arn(self) -> str | None:
        """The role the run assumes to act in the second account (None: a same-account run)."""
        if not self.cross_account:
            return None
        return f"arn:aws:iam::{self.replica_account_id}:role/{self.second_account_role}"


def load_settings(path: Path) -> Settings:
    run: dict[str, Any] = tomllib.loads(path.read_text())["run"]
    s = Settings(**run)
    if s.source_region == s.replica_region:
        raise Refused("replica_region must differ from source_region (the replica lives in another Region)")
    if not s.prefix.isalnum() or not s.prefix.islower() or len(s.prefix) > 12:
        raise Refused("prefix: 1-12 lowercase letters or digits")
    for what, acct in (("account_id", s.account_id), ("second_account_id", s.second_account_id or s.account_id)):
        if not (len(acct) == 12 and acct.isdigit()):
            raise Refused(f"{what}: 12 digits")
    if s.second_account_id is not None and s.second_account_id in (s.account_id, s.management_account_id):
        raise Refused("second_account_id must differ from account_id and management_account_id (or be left out)")
    return s


def new_run_id() -> str:
    return secrets.token_hex(4)


@dataclass(frozen=True)
class RunPlan:
    settings: Settings
    run_id: str
    created: list[str] = field(default_factory=list)

    @property
    def name_prefix(self) -> str:
        return f"{self.settings.prefix}-{self.run_id}"

    @property
    def tags(self) -> dict[str, str]:
        return {RUN_TAG: self.run_id}

    @property
    def namespace(self) -> str:
        return self.settings.table.split(".")[0]

    @property
    def table(self) -> str:
        return self.settings.table.split(".")[1]

    def name(self, what: str) -> str:
        return f"{self.name_prefix}-{what}"

    @property
    def source_bucket(self) -> str:
        return self.name("src")

    @property
    def replica_bucket(self) -> str:
        return self.name("dst")

    def role_arn(self, what: str, account: str | None = None) -> str:
        return f"arn:aws:iam::{account or self.settings.account_id}:role/{self.name(what)}"

    def bucket_arn(self, bucket: str, region: str, account: str | None = None) -> str:
        return f"arn:aws:s3tables:{region}:{account or self.settings.account_id}:bucket/{bucket}"

    @property
    def source_bucket_arn(self) -> str:
        return self.bucket_arn(self.source_bucket, self.settings.source_region)

    @property
    def replica_bucket_arn(self) -> str:
        return self.bucket_arn(self.replica_bucket, self.settings.replica_region, self.settings.replica_account_id)

    def inventory(self) -> list[tuple[str, str, str, str]]:
        """(account, Region, kind, name) of everything the run creates."""
        s = self.settings
        acct, racct = s.account_id, s.replica_account_id
        return [
            (acct, s.source_region, "table bucket", self.source_bucket),
            (acct, s.source_region, "table", f"{self.source_bucket}/{s.table}"),
            (acct, s.source_region, "table", f"{self.source_bucket}/{NAMESPACE_THROWAWAY}.{self.table}"),
            (racct, s.replica_region, "table bucket", self.replica_bucket),
            (racct, s.replica_region, "table (replicas, by the service)", f"{self.replica_bucket}/*"),
            (acct, s.source_region, "table bucket (U26: a table with history)", self.name("bfsrc")),
            (racct, s.replica_region, "table bucket (U26: its backfilled replica)", self.name("bfdst")),
            (acct, "global", "IAM role", self.name("replication")),
            (acct, "global", "IAM role (U27: the source's deploy role, denied the destination)", self.name("setup")),
            (acct, "global", "IAM role (U26's replication)", self.name("bf-replication")),
            (racct, "global", "IAM role", self.name("deploy")),
            (racct, "global", "IAM role", self.name("admin")),
            (racct, "global", "IAM role", self.name("break-glass")),
            (racct, "global", "IAM role", self.name("reader")),
            (racct, s.replica_region, "schedule group, one-time schedule (U37)", self.name("u37")),
            (racct, s.replica_region, "EMR Serverless application, one failing job run (U38)", self.name("u38")),
            (racct, "global", "IAM role (U37's schedule, U38's job: no permission)", self.name("u37-schedule")),
            (racct, "global", "IAM role", self.name("u38-job")),
            (acct, s.source_region, "Lambda function (U39: read from the second account)", self.name("u39")),
            (acct, "global", "IAM role (U39's function: no permission)", self.name("u39-fn")),
            (racct, "global", "IAM policy (each part)", f"{self.name_prefix}-s3tables-replica-guardrail*"),
            (s.management_account_id, "global", "SCP (2)", f"{self.name_prefix}-*"),
        ]

    def estimate(self) -> tuple[float, float]:
        """(USD, minutes): an upper estimate of one run."""
        usd = EXPECTED_REQUESTS / 1000 * REQUEST_COST_PER_1000 + STORAGE_AND_REPLICATION_USD + KMS_KEY_USD + JOB_RUN_USD
        minutes = (
            FIXED_MINUTES + BACKFILL_MINUTES + JOB_METRICS_MINUTES + MINUTES_PER_COMMIT * (self.settings.commits + 2)
        )
        return round(usd, 2), minutes

    def describe(self, *, local: bool = False) -> str:
        """What the run creates and what it costs; `local`: a run on the stand-in (nothing on AWS, no cost)."""
        usd, minutes = self.estimate()
        where = "on the local stand-in (nothing on AWS)" if local else "on AWS"
        lines = [f"live-verify run {self.run_id} {where}: it will create (every name starts with {self.name_prefix}-,"]
        lines.append(f"every resource is tagged {RUN_TAG}={self.run_id}):")
        lines += [f"  {acct:<12} {region:<10} {kind:<34} {name}" for acct, region, kind, name in self.inventory()]
        if local:
            lines.append("cost: none (a local emulator); time: seconds (minutes with --apply terraform).")
            lines.append("It checks the run itself, not AWS:")
            lines.append(f"  {AWS_NEXT_STEP}")
        else:
            lines.append(f"estimated cost: under ${usd:.2f}; estimated time: up to {minutes:.0f} minutes")
        lines.append("everything is destroyed at the end (make live-verify-cleanup RUN=<id> after a crash)")
        return "\n".join(lines)

    # ---------------------------------------------------------------- ownership ----

    def owned_name(self, name: str) -> bool:
        """A bucket, role or policy name (or an ARN ending in one) the run created."""
        last = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return last.startswith(self.name_prefix + "-")

    def require_owned(self, name: str, tags: dict[str, str] | None) -> None:
        """Refuse unless `name` carries the run's prefix and (when the resource takes tags) the run's tag."""
        if not self.owned_name(name):
            raise Refused(f"refusing to touch {name}: its name does not start with {self.name_prefix}-")
        if tags is not None and tags.get(RUN_TAG) != self.run_id:
            raise Refused(f"refusing to touch {name}: it does not carry the tag {RUN_TAG}={self.run_id}")


def confirm(plan: RunPlan, *, yes: bool, ask: Any = input, local: bool = False) -> bool:
    print(plan.describe(local=local), flush=True)
    if yes:
        return True
    answer = str(ask("create these resources? type the run id to go on: ")).strip()
    return answer == plan.run_id
