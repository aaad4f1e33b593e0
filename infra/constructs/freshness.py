"""A replica account's own freshness check (`[assurance.monitor]`): the monitor's Lambda package in its freshness mode
(`jobs/ops/freshness.py`), on an EventBridge Scheduler schedule, reading the replicas of this account only, with one
alarm per replica through a topic of this account:

- `<kit>-freshness-replica-stale-<replica>`: some table of that replica was stale in two runs in a row
  (`ReplicaStaleTables` > 0: its source changed and the replica has not followed for longer than `max_lag_minutes`,
  or, where this account cannot read the source, the replica has not changed for that long), or the check did not
  report it for two runs (missing data breaches). docs/assurance.md#replica-side-freshness has the on-call steps;
- `<kit>-freshness-replication-monitor-not-reporting` / `-failing`: the check was not invoked, or failed, in two
  runs (AWS/Lambda `Invocations` / `Errors` of its function: metrics only Lambda writes; a replica it cannot read
  fails the run).

It does not depend on the source account (a source account's administrator, or an attacker holding it, can freeze
replication and mute the source-side monitor together). One per replica account: the stack of its first replica
deploys it (the one owning the guardrail, IAM being global). Names and documents: `s3tables_kit.policies.freshness`.
"""

from __future__ import annotations

from cdktf_cdktf_provider_aws.lambda_permission import LambdaPermission
from constructs import Construct

from s3tables_kit.infra.constructs.alerts import (
    AlarmTopic,
    FunctionLiveness,
    KitMetricAlarm,
    above_threshold_alarm,
    liveness_alarms,
)
from s3tables_kit.infra.constructs.iam import documented_role
from s3tables_kit.infra.constructs.monitor import freshness_function
from s3tables_kit.infra.constructs.schedule import job_schedule, scheduled_function
from s3tables_kit.policies import freshness
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology import contract
from s3tables_kit.topology.assurance import monitor_schedule_expression
from s3tables_kit.topology.config import KitConfig, Replica


class ReplicaFreshnessCheck(Construct):
    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet, account_id: str) -> None:
        super().__init__(scope, id)
        mon = cfg.assurance.monitor
        name = freshness.name(cfg)
        replicas = freshness.replicas_of(cfg, account_id)
        topic = AlarmTopic(self, "alarm-topic", cfg=cfg, docs=docs, stack=freshness.topic_stack(account_id))
        role, _ = documented_role(
            self,
            "role",
            docs=docs,
            documents="freshness-role",
            site=account_id,
            name=freshness.role_name(cfg),
            description="Replica freshness check: reads this account's replica tables, publishes the kit's metrics",
            policy_id="role-permissions",
            policy_name=freshness.role_name(cfg),
        )
        fn = freshness_function(cfg, account_id, role.arn, docs)
        self.function = function = scheduled_function(self, fn)
        for other in freshness.granted_accounts(cfg, account_id):
            # the monitor of a source in that account reads this function's code and configuration
            LambdaPermission(
                self,
                f"read-by-monitor-{other}",
                function_name=function.function_name,
                statement_id=f"MonitorOf{other}ReadsIt",
                action="lambda:GetFunctionConfiguration",
                principal=other,
            )
        self.schedule = job_schedule(
            self,
            docs,
            documents="freshness-schedule-role",
            site=account_id,
            role_name=freshness.role_name(cfg, schedule=True),
            role_description="EventBridge Scheduler: invokes the replica freshness check",
            name=name,
            description="Runs the replica freshness check",
            expression=monitor_schedule_expression(mon),
            target_arn=function.arn,
        )
        # a stale table in two runs, or two runs without the datum (a muted, failing or unreadable check)
        self.alarms = [
            above_threshold_alarm(
                self,
                KitMetricAlarm(
                    f"stale-{r.bucket}",
                    freshness.alarm_name(cfg, r),
                    f"A table of {r.bucket} ({r.region}) has not followed its source for more than "
                    f"{mon.max_lag_minutes} min (or, where this account cannot read the source, has not changed for "
                    "that long) in two runs, or this account's freshness check has not reported for two runs: "
                    "replication into it may be frozen, whatever the source account's monitor says. The check's log "
                    "line names the tables. README: 'Assurance' (docs/assurance.md#replica-side-freshness).",
                    contract.REPLICA_STALE_TABLES,
                    {"Kit": cfg.kit.name, "Destination": r.bucket_arn},
                ),
                period=mon.interval_minutes * 60,
                threshold=0,
                comparison="GreaterThanThreshold",
                actions=[topic.arn],
                periods=2,
                silence_breaches=True,
            )
            for r in replicas
        ]
        self.liveness = FunctionLiveness(
            name, "This account's replica freshness check", "docs/assurance.md#replica-side-freshness."
        )
        self.alarms += liveness_alarms(self, self.liveness, period=mon.interval_minutes * 60, actions=[topic.arn])


def replica_freshness(
    scope: Construct, cfg: KitConfig, docs: DocumentSet, replica: Replica
) -> ReplicaFreshnessCheck | None:
    """What a replica stack gets (one hook line): the account's check, from the stack of its first replica."""
    acct = replica.account_id
    if acct not in freshness.accounts(cfg) or freshness.home(cfg, acct).bucket != replica.bucket:
        return None
    return ReplicaFreshnessCheck(scope, "replica-freshness", cfg=cfg, docs=docs, account_id=acct)
