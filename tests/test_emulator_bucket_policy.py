"""The stand-in's reading of an S3 request as IAM authorises it (`emulator/bucket_policy.py`: the action and the
condition keys a bucket policy is evaluated with), and the check of a deploy's recorded calls against the reviewed
set (`harness/drills/deploy_actions.py`). The policies evaluated end to end: `tests/test_live_verify.py` (U32-U34)
and the detection drill's vault doors (`tests/test_drill_detection.py`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from emulator import authz
from emulator.bucket_policy import action_of, context
from emulator.control import Control
from harness.drills.deploy_actions import check

ROLE = authz.RequestPrincipal("arn:aws:iam::111122223333:role/backup", "arn:aws:sts::111122223333:assumed-role/b/s")


def test_requests_are_authorised_as_iam_names_them() -> None:
    assert action_of("PutObject", "PUT", "k", {}) == "s3:PutObject"
    assert action_of("PutObject", "PUT", "k", {"tagging": [""]}) == "s3:PutObjectTagging"
    assert action_of("PutObjectRetention", "PUT", "k", {"retention": [""]}) == "s3:PutObjectRetention"
    assert action_of("UploadPart", "PUT", "k", {"partNumber": ["1"], "uploadId": ["u"]}) == "s3:PutObject"
    assert action_of("DeleteObject", "DELETE", "k", {"versionId": ["v"]}) == "s3:DeleteObjectVersion"
    assert action_of("HeadObject", "HEAD", "k", {}) == "s3:GetObject"
    assert action_of("ListObjectsV2", "GET", "", {"list-type": ["2"]}) == "s3:ListBucket"
    assert action_of("PUTBucket", "PUT", "", {"intelligent-tiering": [""]}) == "s3:PutIntelligentTieringConfiguration"
    assert action_of("DeleteBucket", "DELETE", "", {"policy": [""]}) == "s3:DeleteBucketPolicy"
    assert action_of("DeleteBucket", "DELETE", "", {"lifecycle": [""]}) == "s3:PutLifecycleConfiguration"


def test_a_write_carries_the_keys_the_vault_rules_read() -> None:
    until = (datetime.now(UTC) + timedelta(days=3, hours=-1)).isoformat()
    headers = {"HTTP_IF_NONE_MATCH": "*", "HTTP_X_AMZ_OBJECT_LOCK_MODE": "COMPLIANCE",
               "HTTP_X_AMZ_OBJECT_LOCK_RETAIN_UNTIL_DATE": until}  # fmt: skip
    ctx = context(headers, "PutObject", b"", ROLE)
    assert ctx["aws:PrincipalArn"] == ROLE.arn and ctx["s3:if-none-match"] == "*"
    assert ctx["s3:ObjectCreationOperation"] == "true" and ctx["s3:object-lock-mode"] == "COMPLIANCE"
    assert ctx["s3:object-lock-remaining-retention-days"] == "3"  # whole days, rounded up
    part = context({}, "UploadPart", b"", ROLE)
    assert part["s3:ObjectCreationOperation"] == "false" and "s3:if-none-match" not in part
    body = f"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>{until}</RetainUntilDate></Retention>".encode()
    assert context({}, "PutObjectRetention", body, ROLE)["s3:object-lock-mode"] == "GOVERNANCE"
    ceiling = {"NumericGreaterThan": {"s3:object-lock-remaining-retention-days": "2"}}
    assert authz.conditions(ceiling, ctx) and not authz.conditions(ceiling, part)  # absent: a positive op fails


def test_the_deploy_check_fails_only_a_later_deploys_write_on_a_protected_resource() -> None:
    tf, tool = "arn:aws:iam::1:user/x (terraform)", "arn:aws:iam::1:user/x"
    record = {
        "first deploy": {tf: {"kms:CreateKey": [""], "iam:PutRolePermissionsBoundary": ["seed-monitor"]}},
        "second deploy": {
            tf: {
                "lambda:UpdateFunctionCode": ["seed-monitor"],  # reviewed
                "lambda:DeleteFunction": ["seed-monitor"],  # a kit function: fails
                "iam:UpdateAssumeRolePolicy": ["arn:aws:iam::1:role/seed-backup"],  # by ARN: fails
                "cloudwatch:PutDashboard": [""],  # not attributed: reported
                "lambda:DeleteFunctionConcurrency": ["someone-else"],  # not the kit's name: reported
                "s3tables:PutTableBucketPolicy": ["buckets/arn:aws:s3tables:r:1:bucket/seed-x/policy"],  # the lock's
            },
            tool: {"lambda:PutFunctionEventInvokeConfig": ["seed-monitor"]},  # a tool's call, not the provider's
        },
    }
    verdict = check(record, ["seed"])
    assert [(c.action, c.resource) for c in verdict.failing] == [
        ("iam:UpdateAssumeRolePolicy", "arn:aws:iam::1:role/seed-backup"),
        ("lambda:DeleteFunction", "seed-monitor"),
    ]
    assert [c.action for c in verdict.inside] == ["lambda:UpdateFunctionCode"]
    assert {(c.phase, c.action) for c in verdict.reported} == {
        ("first deploy", "kms:CreateKey"), ("first deploy", "iam:PutRolePermissionsBoundary"),
        ("second deploy", "cloudwatch:PutDashboard"), ("second deploy", "lambda:DeleteFunctionConcurrency"),
        ("second deploy", "s3tables:PutTableBucketPolicy"),
    }  # fmt: skip


def test_the_stand_in_records_each_call_by_phase_and_resource(moto_endpoint: str, tmp_path: Path) -> None:
    """The record a Terraform apply leaves (`emulator.served`), from real requests told as the provider's by their
    User-Agent: the resource each names, under the phase the e2e switches to before its second deploy."""
    import boto3
    import botocore.parsers
    import botocore.serialize
    from botocore.config import Config

    control, path = Control(moto_endpoint), tmp_path / "served.json"
    kw = {"endpoint_url": moto_endpoint, "region_name": "us-east-1", "aws_access_key_id": "AKIDSERVEDTEST",
          "aws_secret_access_key": "x", "config": Config(user_agent_extra="Terraform/1.10.5")}  # fmt: skip
    iam, cloudwatch = boto3.client("iam", **kw), boto3.client("cloudwatch", **kw)
    kms, emr = boto3.client("kms", **kw), boto3.client("emr-serverless", **kw)
    trust = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                        "Principal": {"Service": "lambda.amazonaws.com"}}]})  # fmt: skip
    control.call("served", {"path": str(path), "phase": "first deploy"})
    try:
        iam.create_role(RoleName="seed-served-monitor", AssumeRolePolicyDocument=trust)
        key = kms.create_key()["KeyMetadata"]
        kms.create_alias(AliasName="alias/seed-served-key", TargetKeyId=key["KeyId"])
        app = emr.create_application(name="seed-served-recovery", releaseLabel="emr-7.12.0", type="SPARK")
        control.call("served", {"phase": "second deploy"})
        kms.put_key_policy(KeyId=key["Arn"], PolicyName="default", Policy=json.dumps({"Version": "2012-10-17",
                           "Statement": []}))  # by its ARN: told by its alias  # fmt: skip
        kms.schedule_key_deletion(KeyId=key["KeyId"], PendingWindowInDays=7)  # by its id
        emr.delete_application(applicationId=app["applicationId"])  # by its id: told by its name
        cloudwatch.put_metric_alarm(
            AlarmName="seed-served-point", MetricName="M", Namespace="N", Statistic="Maximum", Period=60,
            EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanThreshold",
        )  # fmt: skip
        iam.update_assume_role_policy(RoleName="seed-served-monitor", PolicyDocument=trust)
        cbor = boto3.client("cloudwatch", **kw)  # as the provider speaks CloudWatch (tests/test_emulator_cbor.py)
        cbor._serializer = botocore.serialize.create_serializer("smithy-rpc-v2-cbor", include_validation=True)
        cbor._response_parser = botocore.parsers.create_parser("smithy-rpc-v2-cbor")
        cbor.meta.service_model.__dict__["resolved_protocol"] = "smithy-rpc-v2-cbor"
        cbor.delete_alarms(AlarmNames=["seed-served-point"])
    finally:
        control.call("served", {"path": "", "phase": "first deploy"})
    record = json.loads(path.read_text())
    (who,) = record["second deploy"]
    assert who.endswith("(terraform)")
    assert record["first deploy"][who]["iam:CreateRole"] == ["seed-served-monitor"]
    assert record["second deploy"][who]["cloudwatch:PutMetricAlarm"] == ["seed-served-point"]
    verdict = check(record, ["seed"])
    assert [(c.phase, c.action, c.resource) for c in verdict.failing] == [
        ("second deploy", "cloudwatch:DeleteAlarms", "seed-served-point"),  # CBOR: the list's first name
        ("second deploy", "emr-serverless:DeleteApplication", "seed-served-recovery"),
        ("second deploy", "iam:UpdateAssumeRolePolicy", "seed-served-monitor"),
        ("second deploy", "kms:PutKeyPolicy", "alias/seed-served-key"),
        ("second deploy", "kms:ScheduleKeyDeletion", "alias/seed-served-key"),
    ]
    assert {c.action for c in verdict.inside} == {"iam:CreateRole", "cloudwatch:PutMetricAlarm", "kms:CreateAlias"}
