"""Where the kit's assurance resources live (`Site`: partition, account, Region) and the service principals and
schedule ARNs their trust policies name: shared by the assurance documents (`s3tables_kit.policies.assurance`) and the
scheduled hardener's (`s3tables_kit.policies.hardener`)."""

from __future__ import annotations

from dataclasses import dataclass

from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.topology.config import Source

LAMBDA_SERVICE = "lambda.amazonaws.com"
SCHEDULER_SERVICE = "scheduler.amazonaws.com"
CLOUDWATCH_SERVICE = "cloudwatch.amazonaws.com"
TRUSTED_SERVICES = frozenset({LAMBDA_SERVICE, SCHEDULER_SERVICE})


@dataclass(frozen=True)
class Site:
    partition: str
    account_id: str
    region: str

    def arn(self, service: str, resource: str) -> str:
        return f"arn:{self.partition}:{service}:{self.region}:{self.account_id}:{resource}"

    def role_arn(self, name: str) -> str:
        return f"arn:{self.partition}:iam::{self.account_id}:role/{name}"


def site_of(src: Source) -> Site:
    return Site(src.partition, src.account_id, src.region)


def schedule_arn(site: Site, name: str, group: str = "default") -> str:
    return site.arn("scheduler", f"schedule/{group}/{name}")


def schedule_group_arn(site: Site, group: str) -> str:
    return site.arn("scheduler", f"schedule-group/{group}")


def schedule_arns(site: Site, name: str, group: str = "default") -> list[str]:
    """What a schedule's target invocation carries as aws:SourceArn: the schedule group (documented) or the
    schedule itself; both are listed so either form matches, and neither matches another group's schedules."""
    return [schedule_group_arn(site, group), schedule_arn(site, name, group)]


def allow_scheduler_assume_role(
    sid: str, site: Site, schedule: str, group: str = "default"
) -> iam_statements.Statement:
    """EventBridge Scheduler assumes the role to invoke one schedule's target (in `group`)."""
    return iam_statements.allow_service_assume_role(
        sid, SCHEDULER_SERVICE, source_account=site.account_id, source_arns=schedule_arns(site, schedule, group)
    )
