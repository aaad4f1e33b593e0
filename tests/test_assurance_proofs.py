# ruff: noqa: E501  (one proof case per line: the matrix reads as a table)
"""IAM proofs of the assurance roles (`[assurance]`), evaluated by @cloud-copilot/iam-simulate.

Expectations are written by hand from the intent, with literal ARNs of examples/multi-account.toml (source account
111111111111 in eu-west-1, recovery in 222222222222 / eu-central-1); only the documents come from `policies/`:

- the monitor function reads replication status and source metadata of the source bucket only, the source's and
  each replica's bucket policy, and the table policy and retention of replica tables (never their data), changes
  none of them, publishes metrics only to the kit's namespace, writes only its own log group, and nothing else;
- the monitor schedule may only invoke the monitor function; the rehearsal schedule may only start job runs on the
  kit-tagged EMR Serverless application and pass it the recovery role (to EMR Serverless only);
- the recovery role may publish rehearsal metrics to the kit's namespace only;
- each role is assumable only by its service, for its own function or schedule, from its own account;
- the alarm topic key lets CloudWatch (of its own account) encrypt alarm notifications.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import assurance as AS
from s3tables_kit.policies.documents import build_documents
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, IMPLICIT_DENY, SimRequest, evaluate
from s3tables_kit.policies.sites import SCHEDULER_SERVICE
from s3tables_kit.topology.config import load_config
from tests import policy_fixtures

ROOT = Path(__file__).resolve().parents[1]
CFG = load_config(ROOT / "examples" / "multi-account.toml")

SRC, REC = "111111111111", "222222222222"
SOURCE_BUCKET = "arn:aws:s3tables:eu-west-1:111111111111:bucket/lakehouse-prod"
SOURCE_TABLE = SOURCE_BUCKET + "/table/9d8c7b6a-5f4e-4d3c-8b2a-112233445566"
OTHER_BUCKET_TABLE = (
    "arn:aws:s3tables:eu-west-1:111111111111:bucket/finance-prod/table/0f0e0d0c-1111-4222-8333-444455556666"
)
REPLICA_TABLE = "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-replica-euc1/table/6f1b2c3d-4e5f-4a6b"
SOURCE_KEY = "arn:aws:kms:eu-west-1:111111111111:key/1234abcd-12ab-34cd-56ef-1234567890ab"
MONITOR_ROLE = "arn:aws:iam::111111111111:role/lakehouse-replication-monitor"
MONITOR_SCHEDULE_ROLE = "arn:aws:iam::111111111111:role/lakehouse-replication-monitor-schedule"
REHEARSAL_SCHEDULE_ROLE = "arn:aws:iam::222222222222:role/lakehouse-recovery-rehearsal-schedule"
RECOVERY_ROLE = "arn:aws:iam::222222222222:role/lakehouse-s3tables-recovery"
FUNCTION = "arn:aws:lambda:eu-west-1:111111111111:function:lakehouse-replication-monitor"
APPLICATION = "arn:aws:emr-serverless:eu-central-1:222222222222:/applications/00fabc123def4567"
LOG_STREAM = "arn:aws:logs:eu-west-1:111111111111:log-group:lakehouse-replication-monitor:log-stream:2026/11/23/x"
OTHER_KEY = "arn:aws:kms:eu-west-1:111111111111:key/99999999-12ab-34cd-56ef-1234567890ab"
# Another team's key whose policy delegates to IAM (the AWS default key policy): only identity policies decide.
OTHER_KEY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "EnableIamPolicies", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
         "Action": "kms:*", "Resource": "*"}
    ],
}  # fmt: skip
ALARM_KEY = "arn:aws:kms:eu-west-1:111111111111:key/aaaabbbb-12ab-34cd-56ef-1234567890ab"
NS = "S3TablesReplicaKit"
# PutMetricData is authorised on Resource "*" (its one resource type, dataset, is optional); the simulator expands a
# "*" request into every resource type, so the metric cases name a concrete ARN that "*" covers.
METRICS = "arn:aws:cloudwatch:eu-west-1:111111111111:dataset/kit"

# (case id, principal, action, resource, resource account, extra context, policy names, expected)
Case = tuple[str, str, str, str, str, dict[str, Any], tuple[str, ...], str]
MON = ("monitor-role-permissions",)
MSCHED = ("monitor-schedule-role-permissions",)
RSCHED = ("rehearsal-schedule-role-permissions",)
REHEARSAL = ("recovery-role-permissions", "recovery-role-rehearsal-metrics")

IDENTITY_CASES: list[Case] = [
    ("monitor reads replication status", MONITOR_ROLE, "s3tables:GetTableReplicationStatus", SOURCE_TABLE, SRC, {}, MON, ALLOWED),
    ("monitor reads metadata location", MONITOR_ROLE, "s3tables:GetTableMetadataLocation", SOURCE_TABLE, SRC, {}, MON, ALLOWED),
    ("monitor reads metadata object", MONITOR_ROLE, "s3tables:GetTableData", SOURCE_TABLE, SRC, {}, MON, ALLOWED),
    ("monitor gets table", MONITOR_ROLE, "s3tables:GetTable", SOURCE_TABLE, SRC, {}, MON, ALLOWED),
    ("monitor lists source tables", MONITOR_ROLE, "s3tables:ListTables", SOURCE_BUCKET, SRC, {}, MON, ALLOWED),
    ("monitor cannot write source", MONITOR_ROLE, "s3tables:PutTableData", SOURCE_TABLE, SRC, {}, MON, IMPLICIT_DENY),
    ("monitor cannot delete source", MONITOR_ROLE, "s3tables:DeleteTable", SOURCE_TABLE, SRC, {}, MON, IMPLICIT_DENY),
    ("monitor cannot change replication", MONITOR_ROLE, "s3tables:PutTableReplication", SOURCE_TABLE, SRC, {}, MON, IMPLICIT_DENY),
    ("monitor cannot read other buckets", MONITOR_ROLE, "s3tables:GetTableData", OTHER_BUCKET_TABLE, SRC, {}, MON, IMPLICIT_DENY),
    ("monitor cannot read replicas", MONITOR_ROLE, "s3tables:GetTableData", REPLICA_TABLE, REC, {}, MON, IMPLICIT_DENY),
    ("monitor reads a replica's table policy", MONITOR_ROLE, "s3tables:GetTablePolicy", REPLICA_TABLE, REC, {}, MON, ALLOWED),
    ("monitor reads a replica's retention", MONITOR_ROLE, "s3tables:GetTableMaintenanceConfiguration", REPLICA_TABLE, REC, {}, MON, ALLOWED),
    ("monitor cannot change a replica's table policy", MONITOR_ROLE, "s3tables:PutTablePolicy", REPLICA_TABLE, REC, {}, MON, IMPLICIT_DENY),
    ("monitor cannot change a replica's retention", MONITOR_ROLE, "s3tables:PutTableMaintenanceConfiguration", REPLICA_TABLE, REC, {}, MON, IMPLICIT_DENY),
    ("monitor reads the source bucket policy", MONITOR_ROLE, "s3tables:GetTableBucketPolicy", SOURCE_BUCKET, SRC, {}, MON, ALLOWED),
    ("monitor cannot change the source bucket policy", MONITOR_ROLE, "s3tables:PutTableBucketPolicy", SOURCE_BUCKET, SRC, {}, MON, IMPLICIT_DENY),
    ("monitor publishes kit metrics", MONITOR_ROLE, "cloudwatch:PutMetricData", METRICS, SRC, {"cloudwatch:namespace": NS}, MON, ALLOWED),
    ("monitor cannot publish elsewhere", MONITOR_ROLE, "cloudwatch:PutMetricData", METRICS, SRC, {"cloudwatch:namespace": "AWS/Lambda"}, MON, IMPLICIT_DENY),
    ("monitor cannot change alarms", MONITOR_ROLE, "cloudwatch:DeleteAlarms", "arn:aws:cloudwatch:eu-west-1:111111111111:alarm:x", SRC, {}, MON, IMPLICIT_DENY),
    ("monitor writes its logs", MONITOR_ROLE, "logs:PutLogEvents", LOG_STREAM, SRC, {}, MON, ALLOWED),
    ("monitor writes no other logs", MONITOR_ROLE, "logs:PutLogEvents", LOG_STREAM.replace("replication-monitor", "other"), SRC, {}, MON, IMPLICIT_DENY),
    ("monitor decrypts source metadata", MONITOR_ROLE, "kms:Decrypt", SOURCE_KEY, SRC, {"kms:ResourceAliases": ["alias/lakehouse-lakehouse-prod"]}, MON, ALLOWED),
    ("monitor cannot decrypt other keys", MONITOR_ROLE, "kms:Decrypt", OTHER_KEY, SRC, {"kms:ResourceAliases": ["alias/payroll"]}, MON, IMPLICIT_DENY),
    ("monitor schedule invokes the monitor", MONITOR_SCHEDULE_ROLE, "lambda:InvokeFunction", FUNCTION, SRC, {}, MSCHED, ALLOWED),
    ("monitor schedule invokes nothing else", MONITOR_SCHEDULE_ROLE, "lambda:InvokeFunction", FUNCTION.replace("replication-monitor", "payroll"), SRC, {}, MSCHED, IMPLICIT_DENY),
    ("monitor schedule cannot update code", MONITOR_SCHEDULE_ROLE, "lambda:UpdateFunctionCode", FUNCTION, SRC, {}, MSCHED, IMPLICIT_DENY),
    ("rehearsal schedule starts kit job runs", REHEARSAL_SCHEDULE_ROLE, "emr-serverless:StartJobRun", APPLICATION, REC, {"aws:ResourceTag/kit": "lakehouse"}, RSCHED, ALLOWED),
    ("rehearsal schedule: untagged application", REHEARSAL_SCHEDULE_ROLE, "emr-serverless:StartJobRun", APPLICATION, REC, {}, RSCHED, IMPLICIT_DENY),
    ("rehearsal schedule: other application", REHEARSAL_SCHEDULE_ROLE, "emr-serverless:StartJobRun", APPLICATION, REC, {"aws:ResourceTag/kit": "payroll"}, RSCHED, IMPLICIT_DENY),
    ("rehearsal schedule: other Region", REHEARSAL_SCHEDULE_ROLE, "emr-serverless:StartJobRun", APPLICATION.replace("eu-central-1", "us-east-1"), REC, {"aws:ResourceTag/kit": "lakehouse"}, RSCHED, IMPLICIT_DENY),
    ("rehearsal schedule cannot stop applications", REHEARSAL_SCHEDULE_ROLE, "emr-serverless:StopApplication", APPLICATION, REC, {"aws:ResourceTag/kit": "lakehouse"}, RSCHED, IMPLICIT_DENY),
    ("rehearsal schedule passes recovery role to EMR", REHEARSAL_SCHEDULE_ROLE, "iam:PassRole", RECOVERY_ROLE, REC, {"iam:PassedToService": "emr-serverless.amazonaws.com"}, RSCHED, ALLOWED),
    ("rehearsal schedule: recovery role to EC2", REHEARSAL_SCHEDULE_ROLE, "iam:PassRole", RECOVERY_ROLE, REC, {"iam:PassedToService": "ec2.amazonaws.com"}, RSCHED, IMPLICIT_DENY),
    ("rehearsal schedule: other roles", REHEARSAL_SCHEDULE_ROLE, "iam:PassRole", "arn:aws:iam::222222222222:role/Administrator", REC, {"iam:PassedToService": "emr-serverless.amazonaws.com"}, RSCHED, IMPLICIT_DENY),
    ("rehearsal publishes its metrics", RECOVERY_ROLE, "cloudwatch:PutMetricData", METRICS.replace("eu-west-1:111111111111", "eu-central-1:222222222222"), REC, {"cloudwatch:namespace": NS}, REHEARSAL, ALLOWED),
    ("rehearsal publishes nowhere else", RECOVERY_ROLE, "cloudwatch:PutMetricData", METRICS.replace("eu-west-1:111111111111", "eu-central-1:222222222222"), REC, {"cloudwatch:namespace": "Billing"}, REHEARSAL, IMPLICIT_DENY),
    ("rehearsal drops its recovered tables", RECOVERY_ROLE, "s3tables:DeleteTable", "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-recovery-euc1/table/1a2b", REC, {}, REHEARSAL, ALLOWED),
    ("rehearsal writes its report", RECOVERY_ROLE, "s3:PutObject", "arn:aws:s3:::lakehouse-recovery-222222222222-eu-central-1/reports/rehearsals/x/report.json", REC, {}, REHEARSAL, ALLOWED),
]  # fmt: skip

# A replica of another account must also grant the monitor's reads in its bucket policy (cross-account requests need
# both sides): these cases are evaluated with it.
GRANTED_BY = {
    "monitor reads a replica's table policy": ("replica-bucket-policy--lakehouse-replica-euc1",),
    "monitor reads a replica's retention": ("replica-bucket-policy--lakehouse-replica-euc1",),
}

# Trust policies: the service principal assumes the role (the trust policy is the role's resource policy).
TRUST_CASES: list[tuple[str, str, str, str, dict[str, str], str]] = [
    ("lambda for the monitor function", "monitor-role-trust", MONITOR_ROLE, AS.LAMBDA_SERVICE, {"aws:SourceAccount": SRC, "aws:SourceArn": FUNCTION}, ALLOWED),
    ("lambda for another function", "monitor-role-trust", MONITOR_ROLE, AS.LAMBDA_SERVICE, {"aws:SourceAccount": SRC, "aws:SourceArn": FUNCTION + "-copy"}, IMPLICIT_DENY),
    ("lambda from another account", "monitor-role-trust", MONITOR_ROLE, AS.LAMBDA_SERVICE, {"aws:SourceAccount": "555555555555", "aws:SourceArn": FUNCTION.replace(SRC, "555555555555")}, IMPLICIT_DENY),
    ("scheduler for the monitor schedule", "monitor-schedule-role-trust", MONITOR_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": SRC, "aws:SourceArn": "arn:aws:scheduler:eu-west-1:111111111111:schedule/default/lakehouse-replication-monitor"}, ALLOWED),
    ("scheduler (group ARN) for the monitor", "monitor-schedule-role-trust", MONITOR_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": SRC, "aws:SourceArn": "arn:aws:scheduler:eu-west-1:111111111111:schedule-group/default"}, ALLOWED),
    ("scheduler from another account", "monitor-schedule-role-trust", MONITOR_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": "555555555555", "aws:SourceArn": "arn:aws:scheduler:eu-west-1:555555555555:schedule-group/default"}, IMPLICIT_DENY),
    ("lambda cannot assume the schedule role", "monitor-schedule-role-trust", MONITOR_SCHEDULE_ROLE, AS.LAMBDA_SERVICE, {"aws:SourceAccount": SRC, "aws:SourceArn": FUNCTION}, IMPLICIT_DENY),
    ("scheduler for the rehearsal schedule", "rehearsal-schedule-role-trust", REHEARSAL_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": REC, "aws:SourceArn": "arn:aws:scheduler:eu-central-1:222222222222:schedule/lakehouse-recovery-rehearsal/lakehouse-recovery-rehearsal"}, ALLOWED),
    ("scheduler, the rehearsal's own group", "rehearsal-schedule-role-trust", REHEARSAL_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": REC, "aws:SourceArn": "arn:aws:scheduler:eu-central-1:222222222222:schedule-group/lakehouse-recovery-rehearsal"}, ALLOWED),
    ("scheduler, the default group (any schedule of the account)", "rehearsal-schedule-role-trust", REHEARSAL_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": REC, "aws:SourceArn": "arn:aws:scheduler:eu-central-1:222222222222:schedule-group/default"}, IMPLICIT_DENY),
    ("scheduler, other schedule group", "rehearsal-schedule-role-trust", REHEARSAL_SCHEDULE_ROLE, SCHEDULER_SERVICE, {"aws:SourceAccount": REC, "aws:SourceArn": "arn:aws:scheduler:eu-central-1:222222222222:schedule-group/team-x"}, IMPLICIT_DENY),
]  # fmt: skip

KEY_CASES: list[tuple[str, str, str, dict[str, str], str]] = [
    ("cloudwatch encrypts alarm notifications", AS.CLOUDWATCH_SERVICE, "kms:GenerateDataKey", {"aws:SourceAccount": SRC}, ALLOWED),
    ("cloudwatch of another account", AS.CLOUDWATCH_SERVICE, "kms:GenerateDataKey", {"aws:SourceAccount": "555555555555"}, IMPLICIT_DENY),
    # the source stack's alarm key denies its destruction to all but the deploy role and break-glass
    ("cloudwatch cannot schedule key deletion", AS.CLOUDWATCH_SERVICE, "kms:ScheduleKeyDeletion", {"aws:SourceAccount": SRC}, EXPLICIT_DENY),
]  # fmt: skip


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    docs: dict[str, Any] = {d.name: d.document for d in build_documents(CFG)}
    docs["world:other-key"] = OTHER_KEY_POLICY
    # KMS: the key policy must allow the use too (the kit's key policies name each key user)
    key_policies = {SOURCE_KEY: ("kms-key-policy--lakehouse-prod",), OTHER_KEY: ("world:other-key",)}
    reqs: list[SimRequest] = []
    for cid, principal, action, resource, account, ctx, policies, _ in IDENTITY_CASES:
        on_resource = GRANTED_BY.get(cid) or key_policies.get(resource, ())
        reqs.append(policy_fixtures.own_request(cid, principal, action, resource, account, policies, on_resource, ctx))
    for cid, doc, role, service, ctx, _ in TRUST_CASES:
        reqs.append(
            policy_fixtures.own_request(cid, service, "sts:AssumeRole", role, role.split(":")[4], (), (doc,), ctx)
        )
    for cid, service, action, ctx, _ in KEY_CASES:
        reqs.append(
            policy_fixtures.own_request(
                cid, service, action, ALARM_KEY, SRC, (), ("kms-key-policy--alarm-topic-source",), ctx
            )
        )
    return evaluate(docs, reqs)


def _expected() -> dict[str, str]:
    out = {c[0]: c[-1] for c in IDENTITY_CASES}
    out.update({c[0]: c[-1] for c in TRUST_CASES})
    out.update({c[0]: c[-1] for c in KEY_CASES})
    return out


def test_every_assurance_case_matches_the_intent(results: dict[str, Any]) -> None:
    wrong = {cid: results[cid].decision for cid, want in _expected().items() if results[cid].decision != want}
    detail = {cid: (results[cid].errors, results[cid].ignored_context_keys) for cid in wrong}
    assert not wrong, f"decisions differ from the intent: {wrong} {detail}"


def test_no_proof_relies_on_a_context_key_the_simulator_ignored(results: dict[str, Any]) -> None:
    ignored = {cid: r.ignored_context_keys for cid, r in results.items() if r.ignored_context_keys}
    assert not ignored


def test_both_outcomes_are_exercised_for_every_role() -> None:
    expected = _expected()
    for role in (MONITOR_ROLE, MONITOR_SCHEDULE_ROLE, REHEARSAL_SCHEDULE_ROLE, RECOVERY_ROLE):
        outcomes = {expected[c[0]] for c in IDENTITY_CASES if c[1] == role}
        assert outcomes == {ALLOWED, IMPLICIT_DENY}, role


def test_metric_namespace_is_the_one_the_monitor_publishes_to() -> None:
    from s3tables_kit.jobs.ops.monitor import METRIC_NAMESPACE

    assert AS.METRIC_NAMESPACE == METRIC_NAMESPACE == NS
