"""The scheduled hardener (`[assurance.harden]`): its configuration and documents, and its handler against the
emulator: run from its own package (what the Lambda function deploys, with pydantic unimportable as in the Lambda
runtime), it hardens a new replica that bucket-mode replication created, and only that one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from s3tables_kit.infra import packaging
from s3tables_kit.infra.constructs.replica_hardener import hardener_plan
from s3tables_kit.jobs.ops.cli import canonical_policy
from s3tables_kit.jobs.ops.harden_scheduled import load_plan, run_scheduled
from s3tables_kit.policies.assurance import summary_principals
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.documents import replica_table_policy_for
from s3tables_kit.topology.checks import hardener_role_arn
from s3tables_kit.topology.config import KitConfig, Source
from s3tables_kit.topology.contract import HARDEN_PLAN_FILE
from s3tables_kit.topology.loader import ConfigError, parse_config
from tests.ops_fixtures import OpsEnv, World, config_dict, deploy

HARDENER = "arn:aws:iam::123456789012:role/seed-replica-hardener"


def _with_source(cfg: KitConfig) -> tuple[KitConfig, Source]:
    """The configuration and its one source (the hardener serves a `[source]`)."""
    (src,) = cfg.sources
    return cfg, src


def _doc(enabled: bool = True, listed: bool = False) -> dict[str, Any]:
    doc = config_dict()
    doc["assurance"] = {"harden": {"enabled": enabled, "interval_minutes": 10}}
    if listed:
        doc["protection"]["break_glass_principals"] = [*doc["protection"]["break_glass_principals"], HARDENER]
    return doc


def test_the_hardener_is_off_by_default_and_its_role_is_no_break_glass() -> None:
    assert parse_config(config_dict()).assurance.harden.enabled is False
    with pytest.raises(ConfigError, match=f"protection.break_glass_principals: remove {HARDENER}"):
        parse_config(_doc(listed=True))
    cfg = parse_config(_doc())
    assert hardener_role_arn(cfg, cfg.sources[0]) == HARDENER
    assert cfg.assurance.harden.one_layer_bound_minutes == 15  # 10 min interval + one run of at most 300 s


def test_the_hardener_role_may_do_what_harden_does_on_the_replica_buckets_only() -> None:
    off = {d.name for d in build(parse_config(_doc(enabled=False))).all()}
    docs = {d.name: d.document for d in build(parse_config(_doc())).all()}
    assert set(docs) - off == {
        "hardener-role-trust",
        "hardener-role-permissions",
        "hardener-schedule-role-trust",
        "hardener-schedule-role-permissions",
    }
    grants = {s["Sid"]: s for s in docs["hardener-role-permissions"]["Statement"]}
    replica = "arn:aws:s3tables:us-west-2:123456789012:bucket/demo-dest-tablebucket"
    assert grants["ListReplicaTables"]["Resource"] in (replica, [replica])
    assert sorted(grants["HardenReplicaTables"]["Action"]) == [
        "s3tables:GetTable",
        "s3tables:GetTableMaintenanceConfiguration",
        "s3tables:GetTablePolicy",
        "s3tables:PutTableMaintenanceConfiguration",
        "s3tables:PutTablePolicy",
    ]
    assert all(s["Effect"] == "Allow" and "*" not in json.dumps(s["Action"]) for s in grants.values())
    rows = {title: arns for title, arns, _intro, _docs in summary_principals(*_with_source(parse_config(_doc())))}
    assert rows["Scheduled hardener function role"] == [HARDENER]  # SUMMARY.md's "Who may do what"
    assert "Scheduled hardener function role" not in {
        t for t, *_ in summary_principals(*_with_source(parse_config(config_dict())))
    }
    invoke = docs["hardener-schedule-role-permissions"]["Statement"]
    assert [s["Resource"] for s in invoke] == ["arn:aws:lambda:us-east-1:123456789012:function:seed-replica-hardener"]


def _package(cfg: KitConfig, into: Path) -> Path:
    """The function's package as synth builds it, unpacked."""
    plan = (HARDEN_PLAN_FILE, packaging.declared_bytes(hardener_plan(cfg, cfg.sources[0])))
    with zipfile.ZipFile(io.BytesIO(packaging.hardener_zip(plan))) as z:
        z.extractall(into)
    return into


def _run_handler(package: Path, endpoint: str) -> dict[str, Any]:
    """The Lambda entry point from its package, in a Python where pydantic cannot be imported (the runtime's)."""
    code = (
        "import json, sys; sys.modules['pydantic'] = None; sys.path.insert(0, sys.argv[1]);"
        "from s3tables_kit.jobs.ops.harden_scheduled import handler; print(json.dumps(handler({}, None)))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"AWS_ENDPOINT_URL": endpoint}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(package)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    summary: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return summary


def _policy(world: World, name: str) -> Any:
    got = world.dst().get_table_policy(tableBucketARN=world.replica_arn, namespace="analytics", name=name)
    return json.loads(got["resourcePolicy"])


def test_a_new_replica_in_bucket_mode_is_hardened_by_the_scheduled_handler(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env)
    cfg = parse_config(_doc())
    package = _package(cfg, tmp_path / "package")
    plan = load_plan(json.loads((package / HARDEN_PLAN_FILE).read_text()))
    first = run_scheduled(world.clients, plan)  # the first run after the deploy: the three initial replicas
    assert first.exit_code == 0 and first.count("hardened") == 3

    # a table created at the source after the deploy: bucket-mode replication creates its replica, one layer only
    src = world.src()
    created = src.create_table(
        tableBucketARN=world.source_arn, namespace="analytics", name="returns", format="ICEBERG"
    )["tableARN"]
    ops_env.control.replicate(source_table_arn=created)
    replica = world.replica_table("analytics.returns")
    with pytest.raises(ClientError, match="NotFoundException"):
        _policy(world, "returns")

    summary = _run_handler(package, ops_env.endpoint)
    assert summary["exit_code"] == 0 and summary["failed"] == []
    assert summary["counts"]["hardened"] == 1 and summary["counts"]["unchanged"] == 3
    want = replica_table_policy_for(cfg, cfg.replicas[0], replica["tableARN"])
    assert canonical_policy(_policy(world, "returns")) == canonical_policy(want)
    assert HARDENER in json.dumps(want)  # the hardener is break-glass in the reviewed document it writes
    conf = world.dst().get_table_maintenance_configuration(
        tableBucketARN=world.replica_arn, namespace="analytics", name="returns"
    )["configuration"]["icebergSnapshotManagement"]["settings"]["icebergSnapshotManagement"]
    assert conf == {"minSnapshotsToKeep": 1, "maxSnapshotAgeHours": 2160}
    # a run that finds nothing new writes nothing
    again = run_scheduled(world.clients, plan)
    assert again.count("hardened") == 0 and again.count("unchanged") == 4


def test_the_construct_synthesizes_the_function_its_schedule_and_roles_under_the_nag_rules() -> None:
    from cdktf import TerraformStack, Testing
    from cdktf_cdktf_provider_aws.provider import AwsProvider

    from s3tables_kit.infra.constructs.replica_hardener import source_hardener
    from s3tables_kit.infra.nag import apply_nag

    cfg = parse_config(_doc())
    stack = TerraformStack(Testing.app(), "t")
    AwsProvider(stack, "aws", region="us-east-1")
    assert source_hardener(stack, *_with_source(parse_config(_doc(enabled=False))), build(cfg), None) is None
    source_hardener(stack, cfg, cfg.sources[0], build(cfg), None)  # the monitor off: it brings the stack's topic
    apply_nag(stack)
    resources = json.loads(Testing.synth(stack))["resource"]
    (topic,) = resources["aws_sns_topic"].values()
    assert topic["name"] == "seed-assurance-alarms"
    alarms = {a["alarm_name"]: a for a in resources["aws_cloudwatch_metric_alarm"].values()}
    assert set(alarms) == {"seed-replica-hardener-not-reporting", "seed-replica-hardener-failing"}
    for a in alarms.values():  # AWS/Lambda's metrics of the function, which only Lambda writes
        assert (a["namespace"], a["dimensions"]) == ("AWS/Lambda", {"FunctionName": "seed-replica-hardener"})
        assert a["period"] == 600 and a["evaluation_periods"] == a["datapoints_to_alarm"] == 2
    (fn,) = resources["aws_lambda_function"].values()
    assert fn["function_name"] == "seed-replica-hardener" and fn["handler"] == packaging.handler_of(
        packaging.HARDENER_ENTRY
    )
    assert fn["reserved_concurrent_executions"] == 1
    (schedule,) = resources["aws_scheduler_schedule"].values()
    assert schedule["schedule_expression"] == "rate(10 minutes)"
    assert schedule["description"] == "Hardens new replicas within 15 minutes of their creation"
    roles = {r["name"]: json.loads(r["assume_role_policy"]) for r in resources["aws_iam_role"].values()}
    assert set(roles) == {"seed-replica-hardener", "seed-replica-hardener-schedule"}
    policies = {p["name"]: json.loads(p["policy"]) for p in resources["aws_iam_role_policy"].values()}
    assert policies["seed-replica-hardener"] == next(
        d.document for d in build(cfg).all() if d.name == "hardener-role-permissions"
    )


@pytest.mark.node
def test_changing_the_hardener_is_denied_to_an_admin_by_two_layers_and_left_to_break_glass() -> None:
    """The hardener's role holds break-glass rights on the replicas, so its code and schedule are guarded like the
    monitor's: the pipeline SCP and the account's pipeline guardrail deny changing them to an administrator of the
    source account (the kit's resources' allow-list, `DenyKitResources`); break-glass still may. With the guard left
    out, the admin goes through."""
    import copy

    from s3tables_kit.policies import pipeline
    from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, ScpLevel, SimRequest, evaluate, principal_context

    cfg = parse_config(_doc())
    docs = {d.name: d.document for d in build(cfg).all()}
    admin, glass = "arn:aws:iam::123456789012:role/Admin", "arn:aws:iam::123456789012:role/s3tables-break-glass"
    function = "arn:aws:lambda:us-east-1:123456789012:function:seed-replica-hardener"
    schedule = "arn:aws:scheduler:us-east-1:123456789012:schedule/default/seed-replica-hardener"
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    no_hardener = copy.deepcopy(docs["scp-protect-pipeline"])
    no_hardener["Statement"] = [
        s for s in no_hardener["Statement"] if s["Sid"] not in ("DenyKitResources", "DenyKitHardener")
    ]
    policies = {"admin": everything, "scp": docs["scp-protect-pipeline"], "scp-without": no_hardener,
                "guardrail": docs["pipeline-guardrail--123456789012"], "all": everything}  # fmt: skip
    cases = {
        "admin code, both layers": (admin, "lambda:UpdateFunctionCode", function, ("admin", "guardrail"), "scp"),
        "admin code, SCP alone": (admin, "lambda:UpdateFunctionCode", function, ("admin",), "scp"),
        "admin code, guardrail alone": (admin, "lambda:UpdateFunctionCode", function, ("admin", "guardrail"), "all"),
        "admin schedule, SCP alone": (admin, "scheduler:DeleteSchedule", schedule, ("admin",), "scp"),
        "break-glass code": (glass, "lambda:UpdateFunctionCode", function, ("admin",), "scp"),
        "admin code, no guard": (admin, "lambda:UpdateFunctionCode", function, ("admin",), "scp-without"),
        # its role widened (a statement of one's own), given a boundary, or passed to another function
        "admin widens its role": (admin, "iam:PutRolePolicy", HARDENER, ("admin", "guardrail"), "scp"),
        "admin bounds its role": (admin, "iam:PutRolePermissionsBoundary", HARDENER, ("admin",), "scp"),
        "admin passes its role": (admin, "iam:PassRole", HARDENER, ("admin",), "scp"),
    }

    def levels(scp: str) -> tuple[ScpLevel, ...]:
        return ScpLevel("r-root", ("all",)), ScpLevel("123456789012", (scp, "all"))

    results = evaluate(
        policies,
        [
            SimRequest(case, who, action, resource, "123456789012", principal_context(who), identity, scps=levels(scp))
            for case, (who, action, resource, identity, scp) in cases.items()
        ],
    )
    got = {case: r.decision for case, r in results.items()}
    assert got == {
        "admin code, both layers": EXPLICIT_DENY,
        "admin code, SCP alone": EXPLICIT_DENY,
        "admin code, guardrail alone": EXPLICIT_DENY,
        "admin schedule, SCP alone": EXPLICIT_DENY,
        "break-glass code": ALLOWED,
        "admin code, no guard": ALLOWED,
        "admin widens its role": EXPLICIT_DENY,
        "admin bounds its role": EXPLICIT_DENY,
        "admin passes its role": EXPLICIT_DENY,
    }
    assert function in pipeline.hardener_resources(pipeline.assurance.site_of(cfg.sources[0]), cfg, cfg.sources[0])


def _hardener_requests(cfg: KitConfig, identity: str) -> dict[str, bool]:
    """What the hardener's role may do on the replica (its bucket, a table, its key) with `identity` as its identity
    policy, under the kit's SCPs, against the replica's bucket and table policies and its key policy."""
    from s3tables_kit.policies.simulate import ALLOWED, ScpLevel, SimRequest, evaluate, principal_context

    docs = {d.name: d.document for d in build(cfg).all()}
    bucket = "arn:aws:s3tables:us-west-2:123456789012:bucket/demo-dest-tablebucket"
    table = f"{bucket}/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
    key = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    policies = {
        "own": docs["hardener-role-permissions"],
        "all": everything,
        "bucket": docs["replica-bucket-policy--demo-dest-tablebucket"],
        "table": replica_table_policy_for(cfg, cfg.replicas[0], table),
        "key": docs["kms-key-policy--demo-dest-tablebucket"],
        **{n: docs[n] for n in docs if n.startswith("scp-")},
    }
    scps = tuple(n for n in policies if n.startswith("scp-"))
    cases = {
        "s3tables:PutTablePolicy": (table, ("bucket", "table")),
        "s3tables:PutTableMaintenanceConfiguration": (table, ("bucket", "table")),
        "s3tables:DeleteTable": (table, ("bucket", "table")),
        "s3tables:DeleteTablePolicy": (table, ("bucket", "table")),
        "s3tables:PutTableData": (table, ("bucket", "table")),
        "s3tables:DeleteNamespace": (bucket, ("bucket",)),
        "s3tables:DeleteTableBucket": (bucket, ("bucket",)),
        "s3tables:DeleteTableBucketPolicy": (bucket, ("bucket",)),
        "s3tables:PutTableBucketPolicy": (bucket, ("bucket",)),
        "s3tables:PutTableBucketMaintenanceConfiguration": (bucket, ("bucket",)),
        "kms:ScheduleKeyDeletion": (key, ("key",)),
        "kms:DisableKey": (key, ("key",)),
        "kms:PutKeyPolicy": (key, ("key",)),
    }
    ctx = {**principal_context(HARDENER), "kms:ResourceAliases": ["alias/seed-demo-dest-tablebucket"]}
    reqs = [
        SimRequest(
            action,
            HARDENER,
            action,
            resource,
            "123456789012",
            ctx,
            (identity,),
            scps=(ScpLevel("r-root", ("all",)), ScpLevel("123456789012", ("all", *scps))),
            resource_policies=resource_policies,
        )
        for action, (resource, resource_policies) in cases.items()
    ]
    return {rid: r.decision == ALLOWED for rid, r in evaluate(policies, reqs).items()}


def _kms_replica(doc: dict[str, Any]) -> dict[str, Any]:
    doc["replicas"][0]["encryption"] = {
        "type": "kms",
        "kms_key": "create",
    }  # a kit-created replica key, with its key policy
    return doc


def test_the_hardener_cannot_delete_a_replica_its_bucket_policy_or_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `[assurance.harden]` on, the hardener's role writes a replica table's policy and retention and nothing
    else, even with its own policy widened to everything (its code or role taken over): every replica layer exempts
    it from those two writes only (`AL.REPLICA_HARDENER`), and it is no break-glass principal, so no table, namespace
    or bucket is deleted, no bucket policy rewritten or deleted, no key disabled, re-policied or scheduled for
    deletion. The row is what lets it write: emptied, its writes are denied; widened by `DeleteTable`, the delete
    goes through."""
    from s3tables_kit.policies import allowlists as AL

    cfg = parse_config(_kms_replica(_doc()))
    writes = ("s3tables:PutTablePolicy", "s3tables:PutTableMaintenanceConfiguration")
    for identity in ("own", "all"):
        got = _hardener_requests(cfg, identity)
        assert got == {a: a in writes for a in got}, identity
    monkeypatch.setattr(AL, "REPLICA_HARDENER", replace(AL.REPLICA_HARDENER, actions=()))
    assert not any(_hardener_requests(cfg, "all").values())
    widened = replace(AL.REPLICA_HARDENER, actions=(*writes, "s3tables:DeleteTable"))
    monkeypatch.setattr(AL, "REPLICA_HARDENER", widened)
    got = _hardener_requests(cfg, "all")
    assert got == {a: a in (*writes, "s3tables:DeleteTable") for a in got}


def test_the_hardener_gets_no_key_vault_or_break_glass_grant() -> None:
    """In the seed with its vault, and in the multi-account example (replicas in other accounts), with the hardener
    on, no document but the hardener's own allows its role anything but its reads and two writes on the replicas
    (`AllowCrossAccountHardenerOn*`: no key, vault or `AllowCrossAccountBreakGlass*` grant), and the only Denies
    that exempt it are the replica layers' statements of its own two writes."""
    import tomllib

    from tests.test_vault_config import ROOT, VAULT, with_vault

    seed = with_vault(VAULT)
    multi = tomllib.loads((ROOT / "examples/multi-account.toml").read_text())
    writes = {"s3tables:PutTableMaintenanceConfiguration", "s3tables:PutTablePolicy"}
    cross = {"s3tables:ListTables", "s3tables:GetTable", "s3tables:GetTablePolicy",
             "s3tables:GetTableMaintenanceConfiguration", *writes}  # fmt: skip
    for doc, grants in ((seed, 0), (multi, 6)):
        doc.setdefault("assurance", {})["harden"] = {"enabled": True}
        cfg = parse_config(doc)
        arn = hardener_role_arn(cfg, cfg.sources[0])
        exempting: set[str] = set()
        granted: list[str] = []
        for d in build(cfg).all():
            for st in d.document.get("Statement", []):
                actions = st.get("Action", [])
                actions = {actions} if isinstance(actions, str) else set(actions)
                if st["Effect"] == "Allow" and arn in json.dumps(st) and not d.name.startswith("hardener-"):
                    assert st["Sid"].startswith("AllowCrossAccountHardenerOn") and actions <= cross, (d.name, st)
                    granted.append(st["Sid"])
                if st["Effect"] == "Deny" and arn in json.dumps(st.get("Condition", {})):
                    exempting |= actions
        assert exempting == writes and len(granted) == grants, (exempting, granted)


def test_harden_from_the_outputs_writes_the_table_policy_that_exempts_the_hardener() -> None:
    """`make harden` has no configuration: the hardener's role reaches the table policy through the outputs
    (`ReplicaOut.hardener_principals`), so what it puts is the reviewed document; with the hardener off the outputs
    carry no such key."""
    from s3tables_kit.jobs.ops.harden import default_table_policy_builder, desired_table_policy
    from s3tables_kit.policies.documents import example_table_arn
    from s3tables_kit.topology.deploy_outputs import outputs_doc
    from s3tables_kit.topology.outputs import parse_outputs

    cfg = parse_config(_doc())
    out = parse_outputs(outputs_doc(cfg))
    (rep_out,) = out.replicas
    arn = example_table_arn(cfg.replicas[0])
    got = desired_table_policy(out, rep_out, arn, default_table_policy_builder())
    assert rep_out.hardener_principals == [HARDENER]
    assert got == replica_table_policy_for(cfg, cfg.replicas[0], arn) and HARDENER in json.dumps(got)
    assert "hardener_principals" not in json.dumps(outputs_doc(parse_config(_doc(enabled=False))))
