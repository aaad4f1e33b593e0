"""Synthesised Terraform of `[assurance]` (both examples): the monitor function and its schedule, the rehearsal
schedule, the alarms, the encrypted alarm topic and the roles."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.monitor import declared_document, reviewed_replica_policies
from s3tables_kit.jobs.ops import monitor
from s3tables_kit.jobs.ops.audit_scope import default_bucket_policy_builder, scopes_of
from s3tables_kit.jobs.ops.monitor_drift import Declared
from s3tables_kit.jobs.rehearse import SUCCEEDED
from s3tables_kit.policies import assurance, docset
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.contract import (
    BACKUP_AGE,
    CONFIG_DRIFT,
    LAYERS_MISSING,
    POINT_AGE,
    POLICY_DRIFT,
    RETENTION_BELOW,
    SOURCE_POLICY_DRIFT,
)

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("seed", "multi-account")
Stacks = dict[str, dict[str, Any]]


def res(stack: dict[str, Any], rtype: str) -> dict[str, Any]:
    return {k: v for k, v in stack.get("resource", {}).get(rtype, {}).items()}


def by_name(stack: dict[str, Any], rtype: str, key: str) -> dict[str, dict[str, Any]]:
    return {v[key]: v for v in res(stack, rtype).values()}


@pytest.mark.parametrize("example", EXAMPLES)
def test_monitor_function_is_the_packaged_status_code(synthesized: dict[str, Stacks], example: str) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    src = synthesized[example]["source"]
    (fn,) = res(src, "aws_lambda_function").values()
    assert fn["function_name"] == f"{cfg.kit.name}-replication-monitor"
    assert fn["runtime"] == "python3.12" and fn["handler"] == "s3tables_kit.jobs.ops.monitor.handler"
    # the package: the status code and this source's kit_declared.json (declared replication, reviewed documents)
    docs = docset.build(cfg)
    declared = declared_document(
        cfg, cfg.sources[0], reviewed_replica_policies(cfg, cfg.sources[0], docs), docs.document("source-bucket-policy")
    )
    assert fn["source_code_hash"] == packaging.sha256_base64(packaging.monitor_zip(packaging.declared_bytes(declared)))
    (scope,) = scopes_of(cfg, default_bucket_policy_builder())  # what `audit` compares with, the monitor too
    retention = {
        r.bucket_arn: {
            "maxSnapshotAgeHours": r.snapshot_retention.max_snapshot_age_hours,
            "minSnapshotsToKeep": r.snapshot_retention.min_snapshots_to_keep,
        }
        for r in cfg.replicas
    }
    assert Declared.from_json(declared) == Declared(
        scope.declared,
        {r.bucket_arn: d for r, d in scope.bucket_policies},
        source_bucket_policy=scope.source_bucket_policy,
        replica_retention=retention,
        interval_seconds=cfg.assurance.monitor.interval_minutes * 60,
    )
    assert re.fullmatch(r"assets/[\w-]+/[\w-]+/replication-monitor\.zip", fn["filename"]), fn["filename"]
    assert fn["reserved_concurrent_executions"] == 1
    env = fn["environment"]["variables"]
    assert env[monitor.ENV_SOURCES] == cfg.sources[0].bucket_arn
    assert env[monitor.ENV_DESTINATIONS].split(",") == [r.bucket_arn for r in cfg.replicas]
    assert env[monitor.ENV_MAX_LAG] == str(cfg.assurance.monitor.max_lag_minutes * 60)
    assert env[monitor.ENV_CAP] == str(cfg.assurance.monitor.max_table_metrics)
    assert env["AWS_DATA_PATH"] == "/var/task/botocore_data"
    (logs,) = res(src, "aws_cloudwatch_log_group").values()
    assert fn["logging_config"]["log_group"].startswith("${aws_cloudwatch_log_group.")
    assert logs["name"] == assurance.monitor_log_group(cfg, cfg.sources[0]) and logs["retention_in_days"] == 30


def test_no_machine_path_in_any_stack(synthesized: dict[str, Stacks]) -> None:
    for example in EXAMPLES:
        for name, stack in synthesized[example].items():
            # resources and outputs (backends and remote state carry the working directory by the existing design)
            body = {k: stack.get(k, {}) for k in ("resource", "output", "provider")}
            text = json.dumps(body)
            assert "/tmp/" not in text and str(ROOT) not in text, (example, name)


@pytest.mark.parametrize("example", EXAMPLES)
def test_monitor_schedule_invokes_the_function_with_its_own_role(synthesized: dict[str, Stacks], example: str) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    src = synthesized[example]["source"]
    sched = by_name(src, "aws_scheduler_schedule", "name")[f"{cfg.kit.name}-replication-monitor"]
    assert sched["schedule_expression"] == f"rate({cfg.assurance.monitor.interval_minutes} minutes)"
    assert sched["flexible_time_window"] == {"mode": "OFF"}
    assert sched["target"]["arn"].startswith("${aws_lambda_function.")
    roles = by_name(src, "aws_iam_role", "name")
    sched_role = roles[assurance.monitor_scheduler_role_name(cfg, cfg.sources[0])]
    assert json.loads(sched_role["assume_role_policy"]) == assurance.monitor_scheduler_role_trust(cfg, cfg.sources[0])
    fn_role = roles[assurance.monitor_role_name(cfg, cfg.sources[0])]
    assert json.loads(fn_role["assume_role_policy"]) == assurance.monitor_role_trust(cfg, cfg.sources[0])
    policies = by_name(src, "aws_iam_role_policy", "name")
    assert json.loads(
        policies[assurance.monitor_role_name(cfg, cfg.sources[0])]["policy"]
    ) == assurance.monitor_role_permissions(cfg, cfg.sources[0])
    assert json.loads(policies[assurance.monitor_scheduler_role_name(cfg, cfg.sources[0])]["policy"]) == (
        assurance.monitor_scheduler_role_permissions(cfg, cfg.sources[0])
    )


@pytest.mark.parametrize("example", EXAMPLES)
def test_monitor_alarms(synthesized: dict[str, Stacks], example: str) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    alarms = by_name(synthesized[example]["source"], "aws_cloudwatch_metric_alarm", "alarm_name")
    kit, mon = cfg.kit.name, cfg.assurance.monitor
    assert len(alarms) == 7 * len(cfg.replicas) + 5 + (cfg.vault is not None)
    if cfg.vault is not None:  # the vault's backup age: the stalest table's newest point against the budget
        backup = alarms[f"{kit}-backup-age"]
        assert (backup["metric_name"], backup["dimensions"], backup["comparison_operator"]) == (
            BACKUP_AGE, {"Kit": kit}, "GreaterThanThreshold"
        )  # fmt: skip
        assert backup["threshold"] == cfg.vault.max_backup_age_hours * 3600 and backup["statistic"] == "Maximum"
    drift = alarms[f"{kit}-replication-configuration-drift"]  # drift: any finding, the source's configurations
    assert (drift["metric_name"], drift["dimensions"], drift["threshold"]) == (CONFIG_DRIFT, {"Kit": kit}, 1)
    source_policy = alarms[f"{kit}-source-bucket-policy-drift"]  # the source bucket policy: not the reviewed one
    assert (source_policy["metric_name"], source_policy["dimensions"]) == (SOURCE_POLICY_DRIFT, {"Kit": kit})
    assert source_policy["threshold"] == 1
    for rep in cfg.replicas:
        lag = alarms[f"{kit}-replication-lag-{rep.bucket}"]
        assert (lag["metric_name"], lag["statistic"], lag["comparison_operator"]) == (
            monitor.LAG, "Maximum", "GreaterThanThreshold"
        )  # fmt: skip
        assert lag["threshold"] == mon.max_lag_minutes * 60
        assert lag["dimensions"] == {"Kit": kit, "Destination": rep.bucket_arn}
        failed = alarms[f"{kit}-replication-failed-{rep.bucket}"]
        assert (failed["metric_name"], failed["threshold"], failed["comparison_operator"]) == (
            monitor.FAILED_METRIC, 1, "GreaterThanOrEqualToThreshold"
        )  # fmt: skip
        assert failed["dimensions"] == lag["dimensions"]
        detached = alarms[f"{kit}-replication-detached-{rep.bucket}"]  # any detached replica
        assert (detached["metric_name"], detached["statistic"], detached["threshold"]) == (
            monitor.DETACHED_METRIC, "Maximum", 1
        )  # fmt: skip
        assert detached["comparison_operator"] == "GreaterThanOrEqualToThreshold"
        assert detached["dimensions"] == lag["dimensions"]
        point = alarms[f"{kit}-replication-point-{rep.bucket}"]  # the replication point is too old
        assert (point["metric_name"], point["statistic"], point["comparison_operator"]) == (
            POINT_AGE, "Maximum", "GreaterThanThreshold"
        )  # fmt: skip
        assert point["threshold"] == mon.max_replication_point_age_minutes * 60
        assert point["dimensions"] == lag["dimensions"]
        policy = alarms[f"{kit}-replica-bucket-policy-drift-{rep.bucket}"]  # drift: not the reviewed document
        assert (policy["metric_name"], policy["threshold"]) == (POLICY_DRIFT, 1)
        assert policy["dimensions"] == lag["dimensions"]
        layers = alarms[f"{kit}-replica-layers-missing-{rep.bucket}"]  # a sampled replica without its table policy
        retention = alarms[f"{kit}-replica-retention-below-configured-{rep.bucket}"]
        assert (layers["metric_name"], retention["metric_name"]) == (LAYERS_MISSING, RETENTION_BELOW)
        assert layers["threshold"] == retention["threshold"] == 1
        assert layers["comparison_operator"] == retention["comparison_operator"] == "GreaterThanOrEqualToThreshold"
        assert layers["dimensions"] == retention["dimensions"] == lag["dimensions"]
        for a in (lag, failed, detached, point, policy, drift, source_policy, layers, retention):
            assert a["namespace"] == monitor.METRIC_NAMESPACE and a["period"] == mon.interval_minutes * 60
            assert a["treat_missing_data"] == "notBreaching"
    fn = {"FunctionName": f"{kit}-replication-monitor"}  # liveness: AWS/Lambda's metrics, written by Lambda only
    silent = alarms[f"{kit}-replication-monitor-not-reporting"]
    assert (silent["namespace"], silent["metric_name"], silent["dimensions"]) == ("AWS/Lambda", "Invocations", fn)
    assert silent["treat_missing_data"] == "breaching"  # missing data breaches
    assert silent["evaluation_periods"] == 2 and silent["comparison_operator"] == "LessThanThreshold"
    failing = alarms[f"{kit}-replication-monitor-failing"]
    assert (failing["namespace"], failing["metric_name"], failing["dimensions"]) == ("AWS/Lambda", "Errors", fn)
    assert failing["datapoints_to_alarm"] == 2 and failing["comparison_operator"] == "GreaterThanOrEqualToThreshold"
    unreadable = alarms[f"{kit}-replication-status-unreadable"]  # a table the monitor cannot read is a finding
    assert (unreadable["namespace"], unreadable["metric_name"]) == (monitor.METRIC_NAMESPACE, monitor.ERRORS)
    assert unreadable["threshold"] == 1 and unreadable["statistic"] == "Maximum"
    (topic,) = res(synthesized[example]["source"], "aws_sns_topic")
    for a in alarms.values():
        assert a["alarm_actions"] == a["ok_actions"] == [f"${{aws_sns_topic.{topic}.arn}}"]


@pytest.mark.parametrize(("example", "stack"), [(e, s) for e in EXAMPLES for s in ("source", "recovery")])
def test_alarm_topic_is_kms_encrypted_with_the_configured_subscriptions(
    synthesized: dict[str, Stacks], example: str, stack: str
) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    st = synthesized[example][stack]
    (topic,) = res(st, "aws_sns_topic").values()
    assert topic["name"] == f"{cfg.kit.name}-assurance-alarms"
    assert topic["kms_master_key_id"].startswith("${aws_kms_key.alarm-topic_key_")
    keys = [k for name, k in res(st, "aws_kms_key").items() if name.startswith("alarm-topic_key_")]
    (key,) = keys
    assert key["enable_key_rotation"] is True
    site = assurance.site_of(cfg.sources[0]) if stack == "source" else assurance.recovery_site(cfg)
    guardians = assurance.source_key_guardians(cfg, cfg.sources[0])
    assert json.loads(key["policy"]) == assurance.alarm_topic_key_policy(site, guardians)
    subs = sorted((s["protocol"], s["endpoint"]) for s in res(st, "aws_sns_topic_subscription").values())
    assert subs == sorted((s.protocol, s.endpoint) for s in cfg.assurance.alarm_subscriptions)


@pytest.mark.parametrize("example", EXAMPLES)
def test_rehearsal_schedule_starts_the_recovery_job_on_emr_serverless(
    synthesized: dict[str, Stacks], example: str
) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    rec = synthesized[example]["recovery"]
    reh = cfg.assurance.rehearsal
    sched = by_name(rec, "aws_scheduler_schedule", "name")[f"{cfg.kit.name}-recovery-rehearsal"]
    assert sched["schedule_expression"] == f"rate({reh.interval_hours} hours)"
    target = sched["target"]
    assert target["arn"] == "arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun"
    request = json.loads(target["input"])
    assert request["applicationId"].startswith("${aws_emrserverless_application.spark_application_")
    assert request["executionRoleArn"] == cfg.recovery_role_arn
    assert request["clientToken"] == "<aws.scheduler.execution-id>"
    driver = request["jobDriver"]["sparkSubmit"]
    assert driver["entryPoint"] == f"s3://{cfg.recovery_scripts_bucket}/scheduled/rehearse_entry.py"
    args = driver["entryPointArguments"]
    assert args[args.index("--namespace") + 1] == reh.namespace
    assert args[args.index("--offset-hours") + 1] == str(reh.offset_hours)
    assert args[args.index("--target-warehouse") + 1] == cfg.recovery_bucket_arn
    assert args[args.index("--replica-warehouse") + 1] == cfg.recovery_replica.bucket_arn
    assert args[args.index("--report-uri") + 1] == f"s3://{cfg.recovery_scripts_bucket}/reports/rehearsals"
    # the run checks its application against the deploy's record before it works (jobs/kernel/preflight.py)
    assert args[args.index("--application-id") + 1] == request["applicationId"]
    recorded = rec["output"]["kit_recovery"]["value"]["deployed"]["application"]
    assert json.loads(args[args.index("--deployed-application") + 1]) == recorded
    groups = {g["name"] for g in res(rec, "aws_scheduler_schedule_group").values()}
    assert sched["group_name"].startswith("${aws_scheduler_schedule_group.recovery-rehearsal_schedule-group_")
    assert f"{cfg.kit.name}-recovery-rehearsal" in groups
    if reh.tables:
        assert [args[i + 1] for i, a in enumerate(args) if a == "--table"] == list(reh.tables)
    else:
        assert [args[i + 1] for i, a in enumerate(args) if a == "--candidate"] == [
            f"{n}.{t}" for n, t in cfg.replicated_tables_of(cfg.sources[0])
        ]
        assert args[args.index("--sample") + 1] == str(reh.sample)
    roles = by_name(rec, "aws_iam_role", "name")
    role = roles[assurance.rehearsal_scheduler_role_name(cfg)]
    assert json.loads(role["assume_role_policy"]) == assurance.rehearsal_scheduler_role_trust(cfg)
    assert target["role_arn"].startswith("${aws_iam_role.recovery-rehearsal_schedule-role_")
    policies = by_name(rec, "aws_iam_role_policy", "name")
    assert json.loads(policies[assurance.rehearsal_scheduler_role_name(cfg)]["policy"]) == (
        assurance.rehearsal_scheduler_role_permissions(cfg)
    )
    metrics = policies["assurance-rehearsal-metrics"]
    assert metrics["role"].startswith("${aws_iam_role.recovery-role_")
    assert json.loads(metrics["policy"]) == assurance.rehearsal_metrics_permissions(cfg)
    namespaces = [n["namespace"] for n in res(rec, "aws_s3tables_namespace").values()]
    assert sorted(namespaces) == sorted([cfg.recovery.namespace, reh.namespace])


@pytest.mark.parametrize("example", EXAMPLES)
def test_rehearsal_alarm_spans_two_intervals_and_missing_data_breaches(
    synthesized: dict[str, Stacks], example: str
) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    alarms = by_name(synthesized[example]["recovery"], "aws_cloudwatch_metric_alarm", "alarm_name")
    a = alarms[f"{cfg.kit.name}-recovery-rehearsal-not-succeeding"]
    metrics = {q["id"]: q["metric"] for q in a["metric_query"] if "metric" in q}  # AWS's, never `RehearsalSucceeded`
    group = {"ScheduleGroup": f"{cfg.kit.name}-recovery-rehearsal"}
    assert {k: (m["namespace"], m["metric_name"]) for k, m in metrics.items()} == {
        "attempts": ("AWS/Scheduler", "InvocationAttemptCount"),
        "dropped": ("AWS/Scheduler", "InvocationDroppedCount"),
        "failed": ("AWS/EMRServerless", "FailedJobs"),
        "cancelled": ("AWS/EMRServerless", "CancelledJobs"),
    }
    assert metrics["attempts"]["dimensions"] == metrics["dropped"]["dimensions"] == group
    app = metrics["failed"]["dimensions"]
    assert app == metrics["cancelled"]["dimensions"] and app["ApplicationName"] == f"{cfg.kit.name}-recovery"
    assert app["ApplicationId"].startswith("${aws_emrserverless_application.spark_application_")
    period = {m["period"] for m in metrics.values()}
    assert (
        len(period) == 1 and period.pop() * a["evaluation_periods"] == 2 * cfg.assurance.rehearsal.interval_hours * 3600
    )
    assert a["evaluation_periods"] == a["datapoints_to_alarm"]  # every period of the two intervals failed
    assert a["treat_missing_data"] == "breaching" and a["comparison_operator"] == "GreaterThanOrEqualToThreshold"
    assert SUCCEEDED not in json.dumps(a)


def test_assurance_can_be_switched_off(tmp_path: Path) -> None:
    import tomllib

    from s3tables_kit.infra.app import build_app
    from s3tables_kit.topology.config import parse_config

    doc = tomllib.loads((ROOT / "examples" / "seed.toml").read_text())
    doc["assurance"]["monitor"]["enabled"] = False
    doc["assurance"]["rehearsal"]["enabled"] = False
    doc["vault"]["tables"] = []  # the scheduled backup is the vault's job, not an assurance component
    build_app(parse_config(doc), outdir=str(tmp_path)).synth()
    for name in ("source", "recovery"):
        stack = json.loads((tmp_path / "stacks" / name / "cdk.tf.json").read_text())
        for rtype in ("aws_lambda_function", "aws_scheduler_schedule", "aws_cloudwatch_metric_alarm", "aws_sns_topic"):
            assert not res(stack, rtype), (name, rtype)
