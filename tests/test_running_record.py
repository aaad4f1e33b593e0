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


REPLICA_ACCOUNT = "210987654321"


def _two_accounts() -> Any:
    """The fixtures' topology with its replica (and the freshness check) in an account of its own."""
    doc = config_dict()
    doc["replicas"][0]["account_id"] = REPLICA_ACCOUNT
    doc["replicas"][0]["deploy_role_arn"] = f"arn:aws:iam::{REPLICA_ACCOUNT}:role/terraform-deploy"
    doc["protection"]["organization"]["ou_accounts"]["ou-placeholder-00000000"].append(REPLICA_ACCOUNT)
    return parse_config(doc)


def _synth_both(cfg: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The source stack's monitor and the replica stack's freshness check, each synthesized as its stack adds it; and
    each stack's `deployed` output entry (`deployed_entry`)."""
    from cdktf import TerraformOutput, TerraformStack, Testing
    from cdktf_cdktf_provider_aws.provider import AwsProvider

    from s3tables_kit.infra.constructs.freshness import replica_freshness
    from s3tables_kit.infra.constructs.monitor import source_assurance
    from s3tables_kit.infra.constructs.schedule import deployed_entry

    app, docs, out = Testing.app(), build(cfg), dict[str, Any]()
    for name, add in (
        ("source", lambda s: source_assurance(s, cfg, cfg.sources[0], docs.for_source(cfg, cfg.sources[0]))),
        ("replica", lambda s: replica_freshness(s, cfg, docs, cfg.replicas[0])),
    ):
        stack = TerraformStack(app, name)
        AwsProvider(stack, "aws", region="us-east-1")
        made = add(stack)
        TerraformOutput(stack, "deployed", value=deployed_entry([made.function], [made.schedule]))
        synthesized = json.loads(Testing.synth(stack))
        out[name] = synthesized["output"]["deployed"]["value"]
        out[f"{name}-resources"] = synthesized["resource"]
    return out["source-resources"] | {"deployed": out["source"]}, out["replica-resources"] | {
        "deployed": out["replica"]
    }


def _role_arn(resources: dict[str, Any], ref: str, account: str) -> str:
    name = resources["aws_iam_role"][ref.split(".")[1]]["name"]
    return f"arn:aws:iam::{account}:role/{name}"


def test_the_monitor_and_the_check_record_each_other_as_their_stacks_deploy_them() -> None:
    """The check's package records the monitor (by ARN) as the source stack synthesizes it, without the monitor's
    record of the check; the monitor's `KIT_PEERS_DEPLOYED` records the check as the replica stack synthesizes it; each
    function's resource policy grants the other account that one read, and each role may make exactly it. Each
    stack's `deployed` output records the code and configuration the function is synthesized with."""
    from s3tables_kit.infra.constructs.freshness import freshness_function
    from s3tables_kit.policies import freshness
    from s3tables_kit.topology import contract
    from s3tables_kit.topology.deployed_compare import configuration_digest

    cfg = _two_accounts()
    src, acct = cfg.sources[0], REPLICA_ACCOUNT
    source, replica = _synth_both(cfg)
    (monitor,) = source["aws_lambda_function"].values()
    (check,) = replica["aws_lambda_function"].values()
    monitor_arn = f"arn:aws:lambda:{src.region}:{src.account_id}:function:{monitor['function_name']}"
    check_arn = freshness.function_arn(cfg, acct)
    env = monitor["environment"]["variables"]
    check_cfg = {"handler": check["handler"], "role": _role_arn(replica, check["role"], acct),
                 "environment": check["environment"]["variables"], "layers": []}  # fmt: skip
    assert json.loads(env[contract.ENV_PEERS]) == {
        check_arn: {"code": check["source_code_hash"], "configuration": configuration_digest(check_cfg)}
    }
    fn = freshness_function(cfg, acct, check_cfg["role"], build(cfg))
    assert fn.variables == check_cfg["environment"] and packaging_hash(fn.package) == check["source_code_hash"]
    record = _declared(fn.package)[contract.DECLARED_DEPLOYED]
    assert record["functions"][monitor_arn] == monitor["source_code_hash"]
    assert record["configurations"][monitor_arn] == {
        "handler": monitor["handler"], "role": _role_arn(source, monitor["role"], src.account_id),
        "environment": {k: v for k, v in env.items() if k != contract.ENV_PEERS}, "layers": [],
    }  # fmt: skip
    grants = [(p["principal"], p["action"]) for r in (source, replica) for p in r["aws_lambda_permission"].values()]
    assert grants == [(acct, "lambda:GetFunctionConfiguration"), (src.account_id, "lambda:GetFunctionConfiguration")]
    docs = {d.name: d.document for d in build(cfg).all()}
    reads = {
        sid: s["Resource"] for name in ("monitor-role-permissions", f"freshness-role-permissions--{acct}")
        for s in docs[name]["Statement"] for sid in [s["Sid"]] if sid.startswith("ReadThe")
    }  # fmt: skip
    monitors = f"arn:aws:lambda:*:*:function:{monitor['function_name']}"  # by name: one size for any number of sources
    assert reads == {"ReadTheFreshnessChecksOfItsReplicas": check_arn, "ReadTheMonitorsFeedingItsReplicas": monitors}
    for resources, fn_res in ((source, monitor), (replica, check)):  # the outputs' record: code and configuration
        name = fn_res["function_name"]
        assert resources["deployed"]["functions"] == {name: fn_res["source_code_hash"]}
        assert resources["deployed"]["configurations"] == {name: {
            "handler": fn_res["handler"], "role": fn_res["role"],
            "environment": fn_res["environment"]["variables"], "layers": [],
        }}  # fmt: skip


def packaging_hash(package: bytes) -> str:
    from s3tables_kit.infra import packaging

    return packaging.sha256_base64(package)


def _declared(package: bytes) -> dict[str, Any]:
    import io
    import zipfile

    from s3tables_kit.topology import contract

    with zipfile.ZipFile(io.BytesIO(package)) as z:
        doc: dict[str, Any] = json.loads(z.read(contract.DECLARED_FILE))
    return doc


def test_the_promoted_topology_has_no_cross_account_records() -> None:
    """A promoted topology's monitor is built from a configuration of its own (`failover_monitor_config`), so
    neither it nor the freshness checks (the protected topology's names) record or read the other: each checks
    in-account, and `make audit` the rest (decision 0039, addendum); the protected topology they are both built from
    does."""
    from s3tables_kit.infra.stacks.failover import failover_monitor_config
    from s3tables_kit.policies import freshness
    from s3tables_kit.topology.config import load_config
    from s3tables_kit.topology.failover import failover_topology
    from s3tables_kit.topology.paths import ROOT

    normal = load_config(ROOT / "examples" / "multi-account.toml")
    assert freshness.checks_of(normal, normal.sources[0]) == ["222222222222", "333333333333"]
    assert [s.bucket for s in freshness.monitors_checked(normal, "222222222222")] == ["lakehouse-prod"]
    promoted = load_config(ROOT / "examples" / "failover" / "multi-account.toml")
    assert all(freshness.monitors_checked(promoted, a) == [] for a in freshness.accounts(promoted))
    mon_cfg = failover_monitor_config(promoted, failover_topology(promoted))
    assert freshness.checks_of(mon_cfg, mon_cfg.sources[0]) == []
