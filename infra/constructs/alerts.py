"""The encrypted SNS topic assurance alarms notify: a customer managed KMS key (CloudWatch can publish to a topic
encrypted with an AWS managed key only if that key's policy lets it, which an AWS managed key's cannot), the topic,
and one subscription per `[assurance].alarm_subscriptions` entry. One topic per stack that has alarms: a source
stack's is named by the source's prefix (`<kit>-<id>-...` in an estate), the recovery stack's by the kit.

`above_threshold_alarm`: the alarms on the kit's metrics (figures: a forged datum can raise, never lower, the
Maximum), notifying the topic on ALARM and on OK. `liveness_alarms`: whether a scheduled function of the kit runs and
succeeds, read from the metrics AWS publishes for it (`FunctionLiveness`, the record every liveness alarm is built
from), never from the kit's namespace: anyone who may write a log event can create a datum there (CloudWatch's
embedded metric format), nobody a datum in a namespace beginning `AWS/`. `job_liveness_alarm`: the same for a
scheduled EMR Serverless job run (the rehearsal, the vault backup), read from `AWS/Scheduler` (its schedule's own
group) and `AWS/EMRServerless` (the application)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdktf_cdktf_provider_aws.cloudwatch_metric_alarm import (
    CloudwatchMetricAlarm,
    CloudwatchMetricAlarmMetricQuery,
    CloudwatchMetricAlarmMetricQueryMetric,
)
from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from cdktf_cdktf_provider_aws.sns_topic import SnsTopic
from cdktf_cdktf_provider_aws.sns_topic_subscription import SnsTopicSubscription
from constructs import Construct

from s3tables_kit.infra.policy_json import policy_json
from s3tables_kit.policies import assurance
from s3tables_kit.policies.docset import DocumentSet
from s3tables_kit.topology.config import KitConfig, Source


class AlarmTopic(Construct):
    def __init__(
        self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet, stack: str, src: Source | None = None
    ) -> None:
        """`stack`: "source" (the topic of the source `src`'s stack), "recovery", or a freshness check's."""
        super().__init__(scope, id)
        self.key = KmsKey(
            self,
            "key",
            description=f"{cfg.kit.name}: encrypts the assurance alarm topic",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=policy_json(docs.document("kms-key-policy", f"alarm-topic-{stack}")),
        )
        KmsAlias(self, "alias", name=assurance.alarm_key_alias(cfg, stack, src), target_key_id=self.key.key_id)
        self.topic = SnsTopic(
            self, "topic", name=assurance.alarm_topic_name(cfg, stack, src), kms_master_key_id=self.key.arn
        )
        for i, sub in enumerate(cfg.assurance.alarm_subscriptions):
            SnsTopicSubscription(
                self, f"subscription-{i}", topic_arn=self.topic.arn, protocol=sub.protocol, endpoint=sub.endpoint
            )

    @property
    def arn(self) -> str:
        return str(self.topic.arn)


@dataclass(frozen=True)
class KitMetricAlarm:
    """What an alarm on one of the kit's metrics (namespace `S3TablesReplicaKit`) is about: its construct id, alarm
    name and description, and the metric with its dimensions."""

    id: str
    name: str
    description: str
    metric: str
    dimensions: dict[str, str]


def above_threshold_alarm(
    scope: Construct,
    alarm: KitMetricAlarm,
    *,
    period: int,
    threshold: float,
    comparison: str,
    actions: list[str],
    periods: int = 1,
    silence_breaches: bool = False,
) -> CloudwatchMetricAlarm:
    """Fires when the metric's maximum crosses the threshold in each of `periods` periods. No data is not a breach
    (silence is the not-reporting alarm's job) unless `silence_breaches`: then one alarm covers both."""
    return _metric_alarm(
        scope,
        alarm,
        actions,
        statistic="Maximum",
        period=period,
        evaluation_periods=periods,
        threshold=threshold,
        comparison_operator=comparison,
        treat_missing_data="breaching" if silence_breaches else "notBreaching",
    )


LAMBDA_NAMESPACE = "AWS/Lambda"  # written by Lambda only: PutMetricData refuses namespaces beginning `AWS/`
# The tag that marks an alarm as a liveness alarm in the synthesized stacks (tests/test_liveness_synth.py reads it).
SIGNAL_TAG, LIVENESS = "KitSignal", "liveness"


@dataclass(frozen=True)
class FunctionLiveness:
    """The liveness alarms of one scheduled Lambda function of the kit (`<function>-not-reporting`: not invoked in
    two runs; `<function>-failing`: two runs in a row failed), on `AWS/Lambda` `Invocations` and `Errors` of that
    function. `what`: what the function does, for the descriptions; `doc`: where the on-call steps are."""

    function_name: str
    what: str
    doc: str

    def alarms(self) -> tuple[LivenessAlarm, LivenessAlarm]:
        fn = self.function_name
        return (
            LivenessAlarm(
                "not-reporting",
                f"{fn}-not-reporting",
                f"{self.what} ({fn}) was not invoked in two runs (AWS/Lambda Invocations, missing data breaching): "
                f"its schedule is disabled, deleted or cannot invoke it, so what it watches is unknown. {self.doc}",
                fn,
                "Invocations",
                "LessThanThreshold",
                "breaching",
            ),
            LivenessAlarm(
                "failing",
                f"{fn}-failing",
                f"{self.what} ({fn}) failed two runs in a row (AWS/Lambda Errors): it raised, timed out or could not "
                f"read some table; its log group names why. {self.doc}",
                fn,
                "Errors",
                "GreaterThanOrEqualToThreshold",
                "notBreaching",  # a function not invoked is the other alarm's finding
            ),
        )


@dataclass(frozen=True)
class LivenessAlarm:
    """One liveness alarm: construct id, alarm name, description, the function and the AWS/Lambda metric it reads."""

    id: str
    name: str
    description: str
    function_name: str
    metric: str
    comparison: str
    missing: str


def liveness_alarms(
    scope: Construct, liveness: FunctionLiveness, *, period: int, actions: list[str]
) -> list[CloudwatchMetricAlarm]:
    """The function's two liveness alarms: the Sum of its AWS/Lambda metric below 1 (not invoked) or at least 1
    (failed) in each of two periods of one run interval."""
    return [
        CloudwatchMetricAlarm(
            scope,
            a.id,
            alarm_name=a.name,
            alarm_description=a.description,
            namespace=LAMBDA_NAMESPACE,
            metric_name=a.metric,
            dimensions={"FunctionName": a.function_name},
            statistic="Sum",
            period=period,
            evaluation_periods=2,
            datapoints_to_alarm=2,
            threshold=1,
            comparison_operator=a.comparison,
            treat_missing_data=a.missing,
            alarm_actions=actions,
            ok_actions=actions,
            tags={SIGNAL_TAG: LIVENESS},
        )
        for a in liveness.alarms()
    ]


SCHEDULER_NAMESPACE = "AWS/Scheduler"  # per schedule group (`ScheduleGroup`), written by EventBridge Scheduler only
EMR_SERVERLESS_NAMESPACE = "AWS/EMRServerless"  # per application, written by EMR Serverless only
# A period in which the job did not succeed: its schedule made no attempt, dropped one after its retries, or a job run
# of the application ended FAILED or CANCELLED (a run past its timeout is cancelled). FILL: no datum is none of them.
NOT_SUCCEEDED = "IF(FILL(attempts, 0) < 1 OR FILL(dropped, 0) + FILL(failed, 0) + FILL(cancelled, 0) >= 1, 1, 0)"


@dataclass(frozen=True)
class JobLiveness:
    """Whether a scheduled EMR Serverless job run of the kit runs and succeeds, from metrics AWS publishes: its
    schedule's attempts and dropped invocations (`AWS/Scheduler`, by `schedule_group`, a group holding that schedule
    alone) and the application's failed and cancelled job runs (`AWS/EMRServerless`, by `application`'s dimensions:
    `s3tables_kit.topology.assurance.job_metric_dimensions`). `name`: the alarm's; `what` and `doc` for its
    description."""

    name: str
    what: str
    doc: str
    schedule_group: str
    application: Mapping[str, str]

    def queries(self, period: int) -> list[CloudwatchMetricAlarmMetricQuery]:
        group = {"ScheduleGroup": self.schedule_group}
        metrics = (  # (id, namespace, metric, dimensions, statistic)
            ("attempts", SCHEDULER_NAMESPACE, "InvocationAttemptCount", group, "Sum"),
            ("dropped", SCHEDULER_NAMESPACE, "InvocationDroppedCount", group, "Sum"),
            ("failed", EMR_SERVERLESS_NAMESPACE, "FailedJobs", dict(self.application), "Maximum"),
            ("cancelled", EMR_SERVERLESS_NAMESPACE, "CancelledJobs", dict(self.application), "Maximum"),
        )
        return [
            CloudwatchMetricAlarmMetricQuery(
                id="not_succeeded", expression=NOT_SUCCEEDED, label="1: did not succeed", return_data=True
            ),
            *(
                CloudwatchMetricAlarmMetricQuery(
                    id=qid,
                    metric=CloudwatchMetricAlarmMetricQueryMetric(
                        namespace=ns, metric_name=metric, dimensions=dims, period=period, stat=stat
                    ),
                )
                for qid, ns, metric, dims, stat in metrics
            ),
        ]


def job_liveness_alarm(
    scope: Construct, id: str, job: JobLiveness, *, period: int, periods: int, actions: list[str]
) -> CloudwatchMetricAlarm:
    """Fires when the job did not succeed in any of `periods` periods (together: two of its intervals): not started,
    start dropped, or a job run of the application failed or was cancelled; no data at all breaches."""
    return CloudwatchMetricAlarm(
        scope,
        id,
        alarm_name=job.name,
        alarm_description=f"{job.what} has not succeeded in two of its intervals: its schedule made no attempt or "
        "dropped one (AWS/Scheduler), or a job run of the recovery application failed or was cancelled "
        f"(AWS/EMRServerless; its job runs list names which). {job.doc}",
        metric_query=job.queries(period),
        evaluation_periods=periods,
        datapoints_to_alarm=periods,
        threshold=1,
        comparison_operator="GreaterThanOrEqualToThreshold",
        treat_missing_data="breaching",
        alarm_actions=actions,
        ok_actions=actions,
        tags={SIGNAL_TAG: LIVENESS},
    )


def _metric_alarm(scope: Construct, alarm: KitMetricAlarm, actions: list[str], **rule: Any) -> CloudwatchMetricAlarm:
    """The alarm on `alarm`'s metric by `rule` (CloudwatchMetricAlarm's own settings), notifying `actions` on ALARM
    and on OK."""
    return CloudwatchMetricAlarm(
        scope,
        alarm.id,
        alarm_name=alarm.name,
        alarm_description=alarm.description,
        namespace=assurance.METRIC_NAMESPACE,
        metric_name=alarm.metric,
        dimensions=alarm.dimensions,
        alarm_actions=actions,
        ok_actions=actions,
        **rule,
    )
