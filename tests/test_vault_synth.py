"""The vault stack of the seed (`[vault]`) as synthesized: the bucket with versioning, Object Lock in COMPLIANCE mode
for the configured days, SSE-KMS with the vault key, no public access, no ACLs, the storage-class lifecycle rule, the
bucket policy applied last and deployed as rendered; the backup role in the recovery stack, trusted by the kit's own
EMR Serverless application; and the `kit_vault` output the backup job reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.rehearse import scheduled_uri
from s3tables_kit.policies.docset import build
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.outputs import OUTPUT_VAULT

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]
Stacks = dict[str, dict[str, Any]]


def only(stack: dict[str, Any], rtype: str) -> tuple[str, dict[str, Any]]:
    (name, body), *more = stack["resource"][rtype].items()
    assert not more, f"{rtype}: more than one"
    return name, body


def test_the_vault_bucket_has_every_setting(synthesized: dict[str, Stacks]) -> None:
    cfg = load_config(ROOT / "examples/seed.toml")
    assert cfg.vault is not None
    vault = synthesized["seed"]["vault"]
    _, bucket = only(vault, "aws_s3_bucket")
    assert bucket["bucket"] == "seed-backup-vault-111122223333-us-west-2"
    assert bucket["object_lock_enabled"] is True and bucket["force_destroy"] is False
    _, lock = only(vault, "aws_s3_bucket_object_lock_configuration")
    assert lock["rule"]["default_retention"] == {"mode": "COMPLIANCE", "days": cfg.vault.retention_days}
    _, versioning = only(vault, "aws_s3_bucket_versioning")
    assert versioning["versioning_configuration"]["status"] == "Enabled"
    keys = {name: body for name, body in vault["resource"]["aws_kms_key"].items() if name.startswith("key_")}
    ((key_name, key),) = keys.items()
    assert key["bypass_policy_lockout_safety_check"] is True
    assert key["tags"] == {"s3tables-kit-replica-key": "seed"}
    assert json.loads(key["policy"]) == build(cfg).document("kms-key-policy", "vault")
    _, sse = only(vault, "aws_s3_bucket_server_side_encryption_configuration")
    (rule,) = sse["rule"]
    assert rule["bucket_key_enabled"] is True
    assert rule["apply_server_side_encryption_by_default"] == {
        "sse_algorithm": "aws:kms",
        "kms_master_key_id": f"${{aws_kms_key.{key_name}.arn}}",
    }
    _, pab = only(vault, "aws_s3_bucket_public_access_block")
    assert all(pab[k] is True for k in ("block_public_acls", "block_public_policy", "ignore_public_acls"))
    _, own = only(vault, "aws_s3_bucket_ownership_controls")
    assert own["rule"]["object_ownership"] == "BucketOwnerEnforced"
    _, lifecycle = only(vault, "aws_s3_bucket_lifecycle_configuration")
    rules = {r["id"]: r for r in lifecycle["rule"]}
    assert rules["storage-class"]["transition"] == [{"days": 0, "storage_class": "GLACIER_IR"}]
    assert rules["abort-incomplete-uploads"]["abort_incomplete_multipart_upload"] == [{"days_after_initiation": 7}]
    # deployed = reviewed, and applied after every setting it guards
    _, policy = only(vault, "aws_s3_bucket_policy")
    assert json.loads(policy["policy"]) == build(cfg).document("vault-bucket-policy")
    waits = set(policy["depends_on"])
    for rtype in (
        "aws_s3_bucket_object_lock_configuration",
        "aws_s3_bucket_lifecycle_configuration",
        "aws_s3_bucket_server_side_encryption_configuration",
        "aws_s3_bucket_versioning",
        "aws_s3_bucket_public_access_block",
        "aws_s3_bucket_ownership_controls",
    ):
        assert f"{rtype}.{only(vault, rtype)[0]}" in waits, rtype
    # the stack is in the vault's account and Region
    (provider,) = vault["provider"]["aws"]
    assert (provider["region"], provider["allowed_account_ids"]) == ("us-west-2", ["111122223333"])


def test_the_backup_role_runs_in_the_recovery_application(synthesized: dict[str, Stacks]) -> None:
    cfg = load_config(ROOT / "examples/seed.toml")
    recovery = synthesized["seed"]["recovery"]
    roles = {body["name"]: body for body in recovery["resource"]["aws_iam_role"].values()}
    role = roles["seed-s3tables-backup"]
    trust = json.loads(role["assume_role_policy"])
    (stmt,) = trust["Statement"]
    assert stmt["Principal"] == {"Service": "emr-serverless.amazonaws.com"}
    app_name, _ = only(recovery, "aws_emrserverless_application")
    assert stmt["Condition"]["ArnLike"]["aws:SourceArn"] == f"${{aws_emrserverless_application.{app_name}.arn}}"
    policies = {body["name"]: body for body in recovery["resource"]["aws_iam_role_policy"].values()}
    assert json.loads(policies["s3tables-backup"]["policy"]) == build(cfg).document("backup-role-permissions")


def test_the_outputs_name_what_the_backup_job_reads(synthesized: dict[str, Stacks]) -> None:
    out = synthesized["seed"]["vault"]["output"][OUTPUT_VAULT]["value"]
    assert out["bucket_name"] == "seed-backup-vault-111122223333-us-west-2"
    assert out["backup_role_arn"] == "arn:aws:iam::111122223333:role/seed-s3tables-backup"
    assert out["kms_key_arn"].startswith("${aws_kms_key.") and out["bucket_arn"].startswith("${aws_s3_bucket.")
    assert (out["retention_days"], out["storage_class"]) == (365, "GLACIER_IR")


def test_without_a_vault_no_stack_and_no_role(synthesized: dict[str, Stacks]) -> None:
    for example, stacks in synthesized.items():
        if load_config(ROOT / "examples" / f"{example}.toml").vault is None:
            assert "vault" not in stacks
            roles = stacks["recovery"]["resource"]["aws_iam_role"].values()
            assert not [r for r in roles if r["name"].endswith("-s3tables-backup")]


def test_the_backup_schedule_starts_the_backup_job_as_the_backup_role(synthesized: dict[str, Stacks]) -> None:
    cfg = load_config(ROOT / "examples/seed.toml")
    assert cfg.vault is not None and cfg.vault.tables == ["analytics.orders"]
    recovery = synthesized["seed"]["recovery"]
    schedules = {body["name"]: body for body in recovery["resource"]["aws_scheduler_schedule"].values()}
    sched = schedules["seed-vault-backup"]
    assert sched["schedule_expression"] == f"rate({cfg.vault.interval_hours} hours)"
    target = sched["target"]
    assert target["arn"] == "arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun"
    assert target["role_arn"].startswith("${aws_iam_role.vault-backup_schedule-role_")
    request = json.loads(target["input"])
    app_name, _ = only(recovery, "aws_emrserverless_application")
    assert request["applicationId"] == f"${{aws_emrserverless_application.{app_name}.id}}"
    assert request["executionRoleArn"] == "arn:aws:iam::111122223333:role/seed-s3tables-backup"
    assert request["name"] == "kit-vault-backup" and request["clientToken"] == "<aws.scheduler.execution-id>"
    driver = request["jobDriver"]["sparkSubmit"]
    # where `make rehearse-upload` puts it (a prefix only the deploy roles and break-glass write), not `recover-emr`'s
    uploaded = scheduled_uri(f"s3://{cfg.recovery_scripts_bucket}/scripts/")
    assert (
        driver["entryPoint"]
        == f"{uploaded}backup_entry.py"
        == f"s3://{cfg.recovery_scripts_bucket}/scheduled/backup_entry.py"
    )
    args = driver["entryPointArguments"]

    def arg(flag: str) -> str:
        return str(args[args.index(flag) + 1])

    assert arg("--replica-warehouse") == cfg.recovery_replica.bucket_arn
    assert (arg("--vault-bucket"), arg("--vault-region")) == ("seed-backup-vault-111122223333-us-west-2", "us-west-2")
    assert (arg("--retention-days"), arg("--storage-class"), arg("--table")) == (
        "365",
        "GLACIER_IR",
        "analytics.orders",
    )
    # the arguments are the backup CLI's own: it parses them into the request the scheduled run makes
    from s3tables_kit.jobs.vault.cli import parser, request_from_args

    ns = parser().parse_args(args)
    req = request_from_args(ns)
    # before it works, the run checks its application against the deploy's record (jobs/kernel/preflight.py)
    recorded = recovery["output"]["kit_recovery"]["value"]["deployed"]["application"]
    assert ns.application_id == request["applicationId"] and json.loads(ns.deployed_application) == recorded
    assert (req.vault.bucket, req.selection) == (
        "seed-backup-vault-111122223333-us-west-2",
        (("analytics.orders",), ()),
    )
    roles = {body["name"]: body for body in recovery["resource"]["aws_iam_role"].values()}
    docs = build(cfg)
    assert json.loads(roles["seed-vault-backup-schedule"]["assume_role_policy"]) == docs.document(
        "backup-schedule-role-trust"
    )
    policies = {body["name"]: body for body in recovery["resource"]["aws_iam_role_policy"].values()}
    permissions = json.loads(policies["seed-vault-backup-schedule"]["policy"])
    assert permissions == docs.document("backup-schedule-role-permissions")
    passed = [s for s in permissions["Statement"] if s["Action"] == "iam:PassRole"]
    assert [s["Resource"] for s in passed] == [request["executionRoleArn"]]  # the backup role, nothing else


def test_the_point_key_is_an_hmac_key_only_the_backup_role_macs_with(synthesized: dict[str, Stacks]) -> None:
    from s3tables_kit.topology.backup import backup_role_arn, vault_point_key_alias_arn

    cfg = load_config(ROOT / "examples/seed.toml")
    assert cfg.vault is not None
    vault, recovery = synthesized["seed"]["vault"], synthesized["seed"]["recovery"]
    keys = {name: body for name, body in vault["resource"]["aws_kms_key"].items() if name.startswith("point-key")}
    ((name, key),) = keys.items()
    assert (key["customer_master_key_spec"], key["key_usage"]) == ("HMAC_256", "GENERATE_VERIFY_MAC")
    assert key["lifecycle"]["prevent_destroy"] is True
    policy = json.loads(key["policy"])
    assert policy == build(cfg).document("kms-key-policy", "vault-points")
    macs = [s for s in policy["Statement"] if s["Effect"] == "Allow" and "kms:GenerateMac" in s["Action"]]
    assert [s["Principal"]["AWS"] for s in macs] == [backup_role_arn(cfg)]  # nobody else MACs a point
    output = vault["output"]["kit_vault"]["value"]
    assert output["point_key_arn"] == f"${{aws_kms_key.{name}.arn}}"
    # the scheduled backup MACs with it and the scheduled rehearsal verifies with it, by its alias
    jobs = [json.loads(s["target"]["input"]) for s in recovery["resource"]["aws_scheduler_schedule"].values()]
    args = {j["name"]: j["jobDriver"]["sparkSubmit"]["entryPointArguments"] for j in jobs}
    alias = vault_point_key_alias_arn(cfg, cfg.vault)
    assert args["kit-vault-backup"][args["kit-vault-backup"].index("--point-key") + 1] == alias
    rehearsal = next(a for n, a in args.items() if n != "kit-vault-backup")
    assert rehearsal[rehearsal.index("--vault-point-key") + 1] == alias
