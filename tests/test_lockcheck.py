"""`s3tables_kit.infra.lockcheck`: a plan that changes a locked setting is refused before apply as a break-glass deploy;
the first deploy and the changes a platform engineer makes on a running kit are not. The plans are built from the
recorded synthesized stacks (tests/golden/) in the shape `terraform show -json` writes; `make e2e` runs the same
check on real Terraform plans (harness/e2e/second.py)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.e2e.second import changed_config, non_protective, protective
from s3tables_kit.infra import lockcheck
from s3tables_kit.infra.lockcheck import Classifier
from s3tables_kit.topology.config import KitConfig, load_config

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SEED = load_config(ROOT / "examples" / "seed.toml")
MULTI = load_config(ROOT / "examples" / "multi-account.toml")
FAILOVER_SEED = load_config(ROOT / "examples" / "failover" / "seed.toml")
REPLICA_STACK = "replica-demo-dest-tablebucket"
BUCKET = "awscc_s3tables_table_bucket.table-bucket_515E36E8"
BUCKET_POLICY = "aws_s3tables_table_bucket_policy.bucket-policy_EC674237"
GUARDRAIL = "aws_iam_policy.guardrail_policy_367614D9"
META = ("lifecycle", "depends_on", "provider", "//")


def stack(example: str, name: str) -> dict[str, Any]:
    return dict(json.loads((GOLDEN / example / f"{name}.json").read_text()))


def resolved(cfg: KitConfig, doc: dict[str, Any]) -> dict[str, Any]:
    """The stack's references to its table bucket and tables replaced by their ARNs, as a plan shows them."""
    buckets = {r.bucket: r.bucket_arn for r in (*cfg.replicas, *cfg.sources)}
    text = json.dumps(doc)
    for name, body in doc["resource"].get("awscc_s3tables_table_bucket", {}).items():
        arn = buckets.get(body["table_bucket_name"], "arn:aws:s3tables:::bucket/other")
        text = re.sub(r"\$\{awscc_s3tables_table_bucket\." + re.escape(name) + r"\.(table_bucket_)?arn\}", arn, text)
        text = re.sub(r"\$\{aws_s3tables_table\.[\w-]+\.arn\}", f"{arn}/table/0f0e", text)
    return dict(json.loads(text))


def plan_between(cfg: KitConfig, before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """The `resource_changes` of a plan taking the deployed stack `before` (None: nothing deployed) to `after`."""
    old = resolved(cfg, before)["resource"] if before else {}
    new = resolved(cfg, after)["resource"]
    changes = []
    for rtype in sorted(set(old) | set(new)):
        for name in sorted(set(old.get(rtype, {})) | set(new.get(rtype, {}))):
            b = {k: v for k, v in old.get(rtype, {}).get(name, {}).items() if k not in META} or None
            a = {k: v for k, v in new.get(rtype, {}).get(name, {}).items() if k not in META} or None
            actions = ["create"] if b is None else ["delete"] if a is None else ["update"] if a != b else ["no-op"]
            change = {"actions": actions, "before": b, "after": a}
            changes.append({"address": f"{rtype}.{name}", "mode": "managed", "type": rtype, "name": name,
                            "change": change})  # fmt: skip
    return {"format_version": "1.2", "resource_changes": changes}


def edited(doc: dict[str, Any], address: str, **values: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    rtype, name = address.split(".", 1)
    out["resource"][rtype][name].update(values)
    return out


def found(cfg: KitConfig, before: dict[str, Any] | None, after: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(f.address, f.action, f.rule) for f in Classifier(cfg).locked(plan_between(cfg, before, after))}


def test_the_first_deploy_and_an_unchanged_stack_are_not_locked() -> None:
    for example, cfg in (("seed", SEED), ("multi-account", MULTI)):
        for path in sorted((GOLDEN / example).glob("*.json")):
            deployed = stack(example, path.stem)
            assert found(cfg, deployed, deployed) == set(), path
            first = found(cfg, None, deployed)  # the first deploy creates, it changes nothing locked ...
            if example == "seed" and path.stem == "source":  # ... but where the source has no deploy role, its
                # replication is break-glass only from the start (the seed is deployed with break-glass credentials)
                want = {("s3tables:PutTableReplication", "DenySourceReplicationChange")}
                assert {(a, r) for _, a, r in first} == want
            else:
                assert first == set(), path


def test_a_new_break_glass_principal_is_a_break_glass_deploy() -> None:
    """The usual locked change: a new break-glass principal rewrites the replica's bucket policy and the guardrail;
    the documents are the kit's own for the changed configuration."""
    from s3tables_kit.policies import documents

    def new_break_glass(data: dict[str, Any]) -> str:
        data["protection"]["break_glass_principals"].append("arn:aws:iam::111122223333:role/seed-break-glass-2")
        return "a new break-glass principal"

    changed_cfg, _ = changed_config(ROOT / "examples" / "seed.toml", new_break_glass)
    replica = changed_cfg.replicas[0]
    deployed = stack("seed", REPLICA_STACK)
    bucket_policy = documents.replica_bucket_policy(changed_cfg, replica)
    guardrail = documents.replica_guardrail(changed_cfg, replica.account_id)
    changed = edited(deployed, BUCKET_POLICY, resource_policy={"<policy-json>": bucket_policy})
    changed = edited(changed, GUARDRAIL, policy={"<policy-json>": guardrail})
    assert found(changed_cfg, deployed, changed) == {
        (BUCKET_POLICY, "s3tables:PutTableBucketPolicy", "DenyReplicaProtectionChange"),
        (GUARDRAIL, "iam:CreatePolicyVersion", "DenyGuardrailChange"),
    }


def test_replica_bucket_settings_are_locked_other_tags_are_not() -> None:
    deployed = stack("seed", REPLICA_STACK)
    body = deployed["resource"]["awscc_s3tables_table_bucket"]["table-bucket_515E36E8"]
    cases = {
        "storage_class_configuration": ({"storage_class": "STANDARD"}, "PutTableBucketStorageClass"),
        "encryption_configuration": ({"sse_algorithm": "aws:kms", "kms_key_arn": "k"}, "PutTableBucketEncryption"),
        "unreferenced_file_removal": (
            {**body["unreferenced_file_removal"], "unreferenced_days": 1}, "PutTableBucketMaintenanceConfiguration"),
    }  # fmt: skip
    for key, (value, action) in cases.items():
        rule = "DenyReplicaBucketSettingsChange"
        assert found(SEED, deployed, edited(deployed, BUCKET, **{key: value})) == {(BUCKET, f"s3tables:{action}", rule)}
    team_tag = edited(deployed, BUCKET, tags=[*body["tags"], {"key": "team", "value": "data"}])
    assert found(SEED, deployed, team_tag) == set()
    protection_tag = edited(deployed, BUCKET, tags=[*body["tags"], {"key": "kit-protection", "value": "other"}])
    assert found(SEED, deployed, protection_tag) == {(BUCKET, "s3tables:TagResource", "DenyProtectionTagChange")}


def test_an_alarm_threshold_is_not_locked_a_sources_replication_is_without_a_source_deploy_role() -> None:
    """The seed's source has no deploy role: its replication changes only with break-glass (the source guard). The
    multi-account source's deploy role changes its own source's replication."""
    for cfg, example in ((SEED, "seed"), (MULTI, "multi-account")):
        deployed = stack(example, "source")
        alarms = deployed["resource"]["aws_cloudwatch_metric_alarm"]
        name = next(n for n in alarms if "point" in n)
        threshold = edited(deployed, f"aws_cloudwatch_metric_alarm.{name}", threshold=7200)
        assert found(cfg, deployed, threshold) == set(), example
        kind = next(k for k in ("aws_s3tables_table_replication", "aws_s3tables_table_bucket_replication")
                    if k in deployed["resource"])  # fmt: skip
        repl = next(iter(deployed["resource"][kind]))
        other_role = edited(deployed, f"{kind}.{repl}", role="arn:aws:iam::999999999999:role/elsewhere")
        got = found(cfg, deployed, other_role)
        if cfg.sources[0].deploy_role_arn:
            assert got == set(), example
        else:
            assert {(a, r) for _, a, r in got} == {("s3tables:PutTableReplication", "DenySourceReplicationChange")}


def test_the_promoted_bucket_keeps_its_replication_setup_a_replica_does_not() -> None:
    promoted = FAILOVER_SEED.replicas[0].bucket_arn
    new_bucket = FAILOVER_SEED.failover.new_buckets[0].bucket_arn  # type: ignore[union-attr]

    def plan(bucket_arn: str) -> dict[str, Any]:
        change = {"actions": ["update"], "before": {"table_bucket_arn": bucket_arn, "role": "a"},
                  "after": {"table_bucket_arn": bucket_arn, "role": "b"}}  # fmt: skip
        rc = {"address": "aws_s3tables_table_bucket_replication.r", "mode": "managed",
              "type": "aws_s3tables_table_bucket_replication", "change": change}  # fmt: skip
        return {"resource_changes": [rc]}

    assert Classifier(FAILOVER_SEED).locked(plan(promoted)) == []
    [only] = Classifier(FAILOVER_SEED).locked(plan(new_bucket))
    assert (only.action, only.rule) == ("s3tables:PutTableBucketReplication", "DenyReplicaReplicationChange")


def test_deleting_a_replica_or_its_policy_is_locked() -> None:
    deployed = stack("seed", REPLICA_STACK)
    gone = copy.deepcopy(deployed)
    del gone["resource"]["aws_s3tables_table_bucket_policy"]
    assert found(SEED, deployed, gone) == {(BUCKET_POLICY, "s3tables:DeleteTableBucketPolicy", "DenyReplicaDeletion")}


def test_the_command_refuses_with_the_break_glass_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployed = stack("seed", REPLICA_STACK)
    changed = edited(deployed, BUCKET, storage_class_configuration={"storage_class": "STANDARD"})
    locked_plan, clean_plan = tmp_path / "locked.json", tmp_path / "clean.json"
    locked_plan.write_text(json.dumps(plan_between(SEED, deployed, changed)))
    clean_plan.write_text(json.dumps(plan_between(SEED, deployed, deployed)))
    config = str(ROOT / "examples" / "seed.toml")

    assert lockcheck.main(["--config", config, str(clean_plan)]) == 0
    assert "no locked setting changes" in capsys.readouterr().out
    assert lockcheck.main(["--config", config, str(clean_plan), str(locked_plan)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("this change is a break-glass deploy: 1 locked change(s)")
    assert "Changing a locked setting: a break-glass deploy" in err
    assert f"{BUCKET}: s3tables:PutTableBucketStorageClass on {SEED.replicas[0].bucket_arn}" in err
    assert lockcheck.main(["--config", config, "--break-glass", str(locked_plan)]) == 0
    assert "applied with break-glass credentials" in capsys.readouterr().out
    assert lockcheck.main(["--config", config, str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate", "adopt"])
def test_the_e2e_changes_are_valid_configurations_of_every_example(example: str) -> None:
    """`make e2e`'s second deploy and locked change (harness/e2e/second.py) apply to each normal topology."""
    path = ROOT / "examples" / f"{example}.toml"
    cfg = load_config(path)
    later, what = changed_config(path, non_protective)
    assert (
        later.assurance.monitor.max_replication_point_age_minutes
        == 2 * cfg.assurance.monitor.max_replication_point_age_minutes
    ), what
    locked, what = changed_config(path, lambda d: protective(d, cfg))
    first = locked.replicas[0].unreferenced_file_removal
    assert (
        first is not None
        and first.noncurrent_days < (cfg.replicas[0].unreferenced_file_removal or first).noncurrent_days
    ), what
