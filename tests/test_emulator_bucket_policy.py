"""The stand-in's reading of an S3 request as IAM authorises it (`emulator/bucket_policy.py`: the action and the
condition keys a bucket policy is evaluated with), and the check of a deploy's recorded calls against the reviewed
set (`harness/drills/deploy_actions.py`). The policies evaluated end to end: `tests/test_live_verify.py` (U32-U34)
and the detection drill's vault doors (`tests/test_drill_detection.py`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from emulator import authz
from emulator.bucket_policy import action_of, context
from harness.drills.deploy_actions import outside

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


def test_the_deploy_check_names_a_write_outside_the_reviewed_set() -> None:
    served = {
        "arn:aws:iam::1:user/x (terraform)": ["lambda:CreateFunction", "lambda:GetFunction", "lambda:DeleteFunction"],
        "arn:aws:iam::1:user/x": ["lambda:PutFunctionEventInvokeConfig"],  # a tool's call, not the provider's
    }
    assert outside(served) == (["lambda:CreateFunction"], ["lambda:DeleteFunction"])
