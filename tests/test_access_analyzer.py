"""policies/access_analyzer.py offline: the skip path, and the requests (validated against botocore's model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from s3tables_kit.policies import access_analyzer as AA
from s3tables_kit.policies.documents import build_documents
from s3tables_kit.topology.config import load_config

ROOT = Path(__file__).resolve().parent.parent
MULTI = ROOT / "examples" / "multi-account.toml"


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_without_credentials_it_is_skipped(no_credentials: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert AA.main([]) == 0
    assert "skipped (no AWS credentials" in capsys.readouterr().out


def _requests(baseline: dict[str, str] | None = None) -> tuple[list[AA.AnalyzerRequest], list[str]]:
    cfg = load_config(MULTI)
    docs = build_documents(cfg)
    base = baseline if baseline is not None else {d.name: json.dumps(d.document, indent=2) for d in docs}
    return AA.build_requests("multi-account", docs, [r.bucket_arn for r in cfg.replicas], base.get)


def test_every_document_is_validated_with_its_policy_type() -> None:
    requests, notes = _requests()
    assert notes == []
    validated = {r.document: r.params for r in requests if r.api == "validate_policy"}
    assert validated["scp-protect-replicas"]["policyType"] == "SERVICE_CONTROL_POLICY"
    assert validated["replication-role-permissions"]["policyType"] == "IDENTITY_POLICY"
    assert validated["replica-bucket-policy--lakehouse-replica-euc1"]["policyType"] == "RESOURCE_POLICY"
    assert validated["replication-role-trust"]["validatePolicyResourceType"] == "AWS::IAM::AssumeRolePolicyDocument"
    assert len(validated) == len(build_documents(load_config(MULTI)))


def test_destructive_actions_are_checked_on_every_replica() -> None:
    requests, _ = _requests()
    not_granted = [r for r in requests if r.api == "check_access_not_granted"]
    assert {r.document for r in not_granted} >= {
        "replication-role-permissions",
        "recovery-role-permissions",
        "replica-guardrail--222222222222",
        "replica-bucket-policy--lakehouse-replica-euc1",
        "replica-table-policy--lakehouse-replica-apse2",
    }
    access = not_granted[0].params["access"]
    actions = {a for entry in access for a in entry["actions"]}
    assert {"s3tables:DeleteTable", "s3tables:DeleteTableBucket", "s3tables:PutTableBucketPolicy"} <= actions
    # what the replication role legitimately does is not in the "never granted" list
    assert not {"s3tables:PutTableData", "s3tables:UpdateTableMetadataLocation"} & actions
    resources = access[0]["resources"]
    assert "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-replica-euc1/table/*" in resources
    assert not any(r.document.startswith(("scp-", "kms-")) for r in not_granted)


def test_no_new_access_against_the_baseline_and_new_documents_are_noted() -> None:
    requests, notes = _requests(baseline={"replication-role-permissions": '{"Version": "2012-10-17", "Statement": []}'})
    cna = [r for r in requests if r.api == "check_no_new_access"]
    assert [r.document for r in cna] == ["replication-role-permissions"]
    assert json.loads(cna[0].params["existingPolicyDocument"]) == {"Version": "2012-10-17", "Statement": []}
    assert any("recovery-role-trust: no committed baseline" in n for n in notes)
    assert not any("scp-protect-replicas" in n for n in notes)  # SCPs only deny: no CheckNoNewAccess


def test_requests_match_the_access_analyzer_api_and_failures_are_reported() -> None:
    """botocore's Stubber validates every request against the real service model."""
    requests, _ = _requests()
    client = boto3.client("accessanalyzer", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        for r in requests:
            response: dict[str, Any]
            if r.api == "validate_policy":
                response = {"findings": []}
            elif r.document == "recovery-role-permissions" and r.api == "check_access_not_granted":
                response = {"result": "FAIL", "message": "grants s3tables:DeleteTable"}
            else:
                response = {"result": "PASS"}
            stub.add_response(r.api, response, r.params)  # validates r.params against the API model
        failures = AA.run(client, requests)
        stub.assert_no_pending_responses()
    assert len(failures) == 1 and "recovery-role-permissions" in failures[0]


def test_validate_policy_errors_fail_and_suggestions_do_not() -> None:
    class Fake:
        def validate_policy(self, **kwargs: Any) -> dict[str, Any]:
            return {
                "findings": [
                    {"findingType": "SUGGESTION", "issueCode": "EMPTY_ARRAY_ACTION", "findingDetails": "x"},
                    {
                        "findingType": "SECURITY_WARNING",
                        "issueCode": "PASS_ROLE_WITH_STAR_IN_RESOURCE",
                        "findingDetails": "y",
                    },
                ]
            }

    req = AA.AnalyzerRequest("validate_policy", "ex", "doc", {"policyDocument": "{}", "policyType": "IDENTITY_POLICY"})
    failures = AA.run(Fake(), [req])
    assert len(failures) == 1 and "SECURITY_WARNING" in failures[0]
