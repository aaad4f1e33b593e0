"""The encrypted SNS topic assurance alarms notify: a customer managed KMS key (CloudWatch can publish to a topic
encrypted with an AWS managed key only if that key's policy lets it, which an AWS managed key's cannot), the topic,
and one subscription per `[assurance].alarm_subscriptions` entry. One topic per stack that has alarms."""

from __future__ import annotations

import json

from cdktf_cdktf_provider_aws.kms_alias import KmsAlias
from cdktf_cdktf_provider_aws.kms_key import KmsKey
from cdktf_cdktf_provider_aws.sns_topic import SnsTopic
from cdktf_cdktf_provider_aws.sns_topic_subscription import SnsTopicSubscription
from constructs import Construct

from policies import assurance
from policies.docset import DocumentSet
from topology.config import KitConfig


class AlarmTopic(Construct):
    def __init__(self, scope: Construct, id: str, *, cfg: KitConfig, docs: DocumentSet, stack: str) -> None:
        super().__init__(scope, id)
        self.key = KmsKey(
            self,
            "key",
            description=f"{cfg.kit.name}: encrypts the assurance alarm topic",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=json.dumps(docs.document("kms-key-policy", f"alarm-topic-{stack}"), indent=2),
        )
        KmsAlias(self, "alias", name=assurance.alarm_key_alias(cfg), target_key_id=self.key.key_id)
        self.topic = SnsTopic(self, "topic", name=assurance.alarm_topic_name(cfg), kms_master_key_id=self.key.arn)
        for i, sub in enumerate(cfg.assurance.alarm_subscriptions):
            SnsTopicSubscription(
                self, f"subscription-{i}", topic_arn=self.topic.arn, protocol=sub.protocol, endpoint=sub.endpoint
            )

    @property
    def arn(self) -> str:
        return str(self.topic.arn)
