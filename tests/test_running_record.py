"""The record the monitor's package holds of what it compares at every run (`ReplicationMonitor.watched`,
`jobs/ops/running.py`) is what the source stack deploys: the hardener's code hash, handler, role and environment as the
synthesized function has them, the schedules' targets as the synthesized schedules have them; and the monitor's role
may read exactly those (`lambda:GetFunctionConfiguration`, `scheduler:GetSchedule`), nothing of its own code."""

from __future__ import annotations

import json
from typing import Any

from s3tables_kit.infra.constructs.monitor import ReplicationMonitor
from s3tables_kit.policies.docset import build
from s3tables_kit.topology.loader import parse_config
from tests.ops_fixtures import config_dict


def _synth(cfg: Any) -> dict[str, Any]:
    from cdktf import TerraformStack, Testing
    from cdktf_cdktf_provider_aws.provider import AwsProvider

    from s3tables_kit.infra.constructs.monitor import source_assurance
    from s3tables_kit.infra.constructs.replica_hardener import source_hardener

    stack = TerraformStack(Testing.app(), "t")
    AwsProvider(stack, "aws", region="us-east-1")
    src, docs = cfg.sources[0], build(cfg)
    monitor = source_assurance(stack, cfg, src, docs)
    assert monitor is not None
    source_hardener(stack, cfg, src, docs, monitor.alarm_topic_arn)
    resources: dict[str, Any] = json.loads(Testing.synth(stack))["resource"]
    return resources


def test_the_monitors_record_is_what_the_source_stack_deploys_and_its_role_reads_only_that() -> None:
    doc = config_dict()
    doc["assurance"] = {"harden": {"enabled": True, "interval_minutes": 10}}
    cfg = parse_config(doc)
    src = cfg.sources[0]
    resources = _synth(cfg)
    record = ReplicationMonitor.watched(cfg, src)
    fns = {f["function_name"]: f for f in resources["aws_lambda_function"].values()}
    hardener = fns["seed-replica-hardener"]
    assert record["functions"] == {"seed-replica-hardener": hardener["source_code_hash"]}
    roles = {k: r["name"] for k, r in resources["aws_iam_role"].items()}
    role_ref = hardener["role"]  # "${aws_iam_role.<id>.arn}": the record derives the same role's ARN
    role_name = roles[role_ref.split(".")[1]]
    assert record["configurations"]["seed-replica-hardener"] == {
        "handler": hardener["handler"],
        "role": f"arn:aws:iam::{src.account_id}:role/{role_name}",
        "environment": hardener["environment"]["variables"],
        "layers": [],
    }
    by_ref = {f"${{aws_lambda_function.{k}.arn}}": f for k, f in resources["aws_lambda_function"].items()}
    deployed = {
        s[
            "name"
        ]: f"arn:aws:lambda:{src.region}:{src.account_id}:function:{by_ref[s['target']['arn']]['function_name']}"
        for s in resources["aws_scheduler_schedule"].values()
    }
    assert {n: s["target_arn"] for n, s in record["schedules"].items()} == deployed
    assert all(s["input"] is None for s in record["schedules"].values())
    assert not any("input" in s["target"] for s in resources["aws_scheduler_schedule"].values())
    policy = next(d.document for d in build(cfg).all() if d.name == "monitor-role-permissions")
    site = f"arn:aws:lambda:{src.region}:{src.account_id}:"
    reads = {
        a: s["Resource"] for s in policy["Statement"] for a in [s["Action"]] if s["Sid"].startswith("ReadDeployed")
    }
    assert reads == {
        "lambda:GetFunctionConfiguration": f"{site}function:seed-replica-hardener",
        "scheduler:GetSchedule": sorted(
            f"arn:aws:scheduler:{src.region}:{src.account_id}:schedule/default/{n}" for n in record["schedules"]
        ),
    }
