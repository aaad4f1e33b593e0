"""The synthesised Terraform JSON of the examples: what gets deployed, checked on the parsed documents."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra.golden import GOLDEN, normalize, render
from s3tables_kit.policies import documents
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.outputs import parse_outputs

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]
SEED = load_config(ROOT / "examples/seed.toml")
REPLICA_STACK = "replica-demo-dest-tablebucket"
Stacks = dict[str, dict[str, Any]]


def res(stack: dict[str, Any], rtype: str) -> dict[str, Any]:
    return stack.get("resource", {}).get(rtype, {})


# Constructs of assurance (monitor, rehearsal, alarm topic) add roles, keys and namespaces to the source and recovery
# stacks; tests/test_assurance_synth.py covers them, so `only` looks at the kit's other resources.
ASSURANCE_CONSTRUCTS = ("alarm-topic", "replication-monitor", "recovery-rehearsal", "replica-freshness")


def _top_construct(resource: dict[str, Any]) -> str:
    parts = resource.get("//", {}).get("metadata", {}).get("path", "").split("/")
    return parts[1] if len(parts) > 1 else ""


def only(stack: dict[str, Any], rtype: str) -> dict[str, Any]:
    found = {k: v for k, v in res(stack, rtype).items() if _top_construct(v) not in ASSURANCE_CONSTRUCTS}
    assert len(found) == 1, f"expected one {rtype}, found {list(found)}"
    return next(iter(found.values()))


@pytest.fixture(scope="module")
def seed(synthesized: dict[str, Stacks]) -> Stacks:
    return synthesized["seed"]


def test_seed_has_the_expected_stacks(seed: Stacks) -> None:
    assert set(seed) == {"source", REPLICA_STACK, "recovery", "organization", "vault"}


def test_three_table_buckets_each_with_explicit_encryption(seed: Stacks) -> None:
    buckets = {
        name: only(seed[stack], "awscc_s3tables_table_bucket")
        for name, stack in (("source", "source"), ("replica", REPLICA_STACK), ("recovery", "recovery"))
    }
    assert {b["table_bucket_name"] for b in buckets.values()} == {
        "demo-source-tablebucket", "demo-dest-tablebucket", "demo-recovery-tablebucket",
    }  # fmt: skip
    for b in buckets.values():
        assert b["encryption_configuration"] == {"sse_algorithm": "AES256"}
        assert b["lifecycle"] == {"prevent_destroy": True}
        assert b["unreferenced_file_removal"]["status"] == "Enabled"
    assert buckets["replica"]["storage_class_configuration"] == {"storage_class": "INTELLIGENT_TIERING"}
    assert buckets["source"]["storage_class_configuration"] == {"storage_class": "STANDARD"}


def test_namespace_and_table_with_schema_and_source_retention(seed: Stacks) -> None:
    src = seed["source"]
    assert only(src, "aws_s3tables_namespace")["namespace"] == "analytics"
    table = only(src, "aws_s3tables_table")
    assert table["name"] == "orders" and table["format"] == "ICEBERG"
    assert table["namespace"].startswith("${aws_s3tables_namespace.")
    fields = table["metadata"][0]["iceberg"][0]["schema"][0]["field"]
    assert [(f["name"], f["type"], f["required"]) for f in fields] == [
        ("order_id", "string", True),
        ("customer_id", "string", False),
        ("order_date", "date", False),
        ("amount", "double", False),
        ("status", "string", False),
    ]
    snap = table["maintenance_configuration"]["iceberg_snapshot_management"]
    assert snap == {"status": "enabled", "settings": {"max_snapshot_age_hours": 720, "min_snapshots_to_keep": 1}}
    # object attribute: every key present, kms_key_arn = null for SSE-S3 (a partial object fails at plan)
    assert table["encryption_configuration"] == {"sse_algorithm": "AES256", "kms_key_arn": None}


def test_replication_role_trust_and_exact_permissions(seed: Stacks) -> None:
    role = only(seed["source"], "aws_iam_role")
    assert role["name"] == "seed-s3tables-replication"
    trust = json.loads(role["assume_role_policy"])
    (stmt,) = trust["Statement"]
    assert stmt["Principal"] == {"Service": "replication.s3tables.amazonaws.com"}
    assert stmt["Action"] == "sts:AssumeRole"
    assert stmt["Condition"]["StringEquals"] == {"aws:SourceAccount": "111122223333"}
    assert (
        "arn:aws:s3tables:us-east-1:111122223333:bucket/demo-source-tablebucket"
        in stmt["Condition"]["ArnLike"]["aws:SourceArn"]
    )

    perms = json.loads(only(seed["source"], "aws_iam_role_policy")["policy"])
    src = "arn:aws:s3tables:us-east-1:111122223333:bucket/demo-source-tablebucket"
    dst = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"
    got = {(s["Effect"], a, r) for s in perms["Statement"] for a in _list(s["Action"]) for r in _list(s["Resource"])}
    want = {
        ("Allow", f"s3tables:{a}", f"{src}/table/*")
        for a in ("GetTable", "GetTableMetadataLocation", "GetTableMaintenanceConfiguration", "GetTableData")
    }
    want |= {("Allow", "s3tables:ListTables", src)}
    want |= {("Allow", f"s3tables:{a}", dst) for a in ("CreateTable", "CreateNamespace")}
    want |= {
        ("Allow", f"s3tables:{a}", f"{dst}/table/*")
        for a in ("PutTableData", "GetTableData", "UpdateTableMetadataLocation", "PutTableMaintenanceConfiguration")
    }
    assert got == want


def _list(v: str | list[str]) -> list[str]:
    return [v] if isinstance(v, str) else v


def test_replication_configuration_points_at_the_replica_bucket(seed: Stacks) -> None:
    cfg = only(seed["source"], "aws_s3tables_table_replication")
    assert cfg["role"].startswith("${aws_iam_role.")
    assert cfg["table_arn"].startswith("${aws_s3tables_table.")
    (rule,) = cfg["rule"]
    (dest,) = rule["destination"]
    ref = re.fullmatch(
        r"\$\{data\.terraform_remote_state\.([^.]+)\.outputs\.([^}]+)\}", dest["destination_table_bucket_arn"]
    )
    assert ref, dest
    remote = seed["source"]["data"]["terraform_remote_state"][ref.group(1)]
    # the cross-stack reference resolves to the replica stack's bucket ARN output
    assert remote["config"]["path"].endswith(f"terraform.{REPLICA_STACK}.tfstate")
    produced = seed[REPLICA_STACK]["output"][ref.group(2)]["value"]
    bucket_id = next(iter(res(seed[REPLICA_STACK], "awscc_s3tables_table_bucket")))
    assert produced == f"${{awscc_s3tables_table_bucket.{bucket_id}.table_bucket_arn}}"
    assert not res(seed["source"], "aws_s3tables_table_bucket_replication")


def test_replica_bucket_policy_has_denies_and_exemptions(seed: Stacks) -> None:
    pol = json.loads(only(seed[REPLICA_STACK], "aws_s3tables_table_bucket_policy")["resource_policy"])
    by_sid = {s["Sid"]: s for s in pol["Statement"]}
    assert all(s["Effect"] == "Deny" and s["Principal"] == "*" for s in by_sid.values())  # same account: no grant
    bg = "arn:aws:iam::111122223333:role/s3tables-break-glass"
    repl = "arn:aws:iam::111122223333:role/seed-s3tables-replication"
    delete = by_sid["DenyReplicaDeletion"]
    assert {"s3tables:DeleteTable", "s3tables:DeleteTableBucket", "s3tables:DeleteNamespace"} <= set(delete["Action"])
    assert delete["Condition"] == {"ArnNotLike": {"aws:PrincipalArn": bg}}
    retention = by_sid["DenyReplicaRetentionChange"]
    assert retention["Action"] == "s3tables:PutTableMaintenanceConfiguration"
    assert retention["Condition"]["ArnNotLike"]["aws:PrincipalArn"] == [bg, repl]
    writes = by_sid["DenyReplicaDataWrite"]
    assert writes["Condition"]["StringNotEqualsIfExists"] == {
        "aws:PrincipalServiceName": "maintenance.s3tables.amazonaws.com"
    }
    assert "s3tables:PutTableBucketPolicy" in by_sid["DenyReplicaProtectionChange"]["Action"]
    assert "s3tables:DeleteTableBucketPolicy" in delete["Action"]  # removing protection is a deletion


def test_cross_account_replica_bucket_policy_grants_the_source_role(synthesized: dict[str, Stacks]) -> None:
    stack = synthesized["multi-account"]["replica-lakehouse-replica-apse2"]
    pol = json.loads(only(stack, "aws_s3tables_table_bucket_policy")["resource_policy"])
    grants = {s["Sid"]: s for s in pol["Statement"] if s["Effect"] == "Allow"}
    assert set(grants) == {
        "AllowSourceReplicationRoleCreateReplicas",
        "AllowSourceReplicationRoleWriteReplicas",
        "AllowCrossAccountBreakGlassOnBucket",
        "AllowCrossAccountBreakGlassOnTables",
        "AllowReplicationMonitorsReadBucketPolicy",  # the source's monitor compares it with the reviewed document
        "AllowReplicationMonitorsReadTableLayers",  # and reads a sample of its tables' table policy and retention
    }
    assert grants["AllowReplicationMonitorsReadBucketPolicy"]["Action"] == "s3tables:GetTableBucketPolicy"
    layers = grants["AllowReplicationMonitorsReadTableLayers"]
    assert layers["Action"] == ["s3tables:GetTableMaintenanceConfiguration", "s3tables:GetTablePolicy"]
    assert layers["Resource"] == "arn:aws:s3tables:ap-southeast-2:333333333333:bucket/lakehouse-replica-apse2/table/*"
    for sid in ("AllowReplicationMonitorsReadBucketPolicy", "AllowReplicationMonitorsReadTableLayers"):
        assert grants[sid]["Principal"] == {"AWS": "arn:aws:iam::111111111111:role/lakehouse-replication-monitor"}
    for sid in ("AllowSourceReplicationRoleCreateReplicas", "AllowSourceReplicationRoleWriteReplicas"):
        assert grants[sid]["Principal"] == {"AWS": "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication"}
    # Break-glass of the OTHER accounts (apse2 lives in 333333333333): its own break-glass needs no grant.
    for sid in ("AllowCrossAccountBreakGlassOnBucket", "AllowCrossAccountBreakGlassOnTables"):
        assert grants[sid]["Principal"] == {
            "AWS": [
                "arn:aws:iam::222222222222:role/s3tables-break-glass",
                "arn:aws:iam::444444444444:role/replica-guardian-automation",
            ]
        }


def test_scps_and_attachments(seed: Stacks) -> None:
    org = seed["organization"]
    policies = {p["name"]: p for p in org["resource"]["aws_organizations_policy"].values()}
    assert {n: p["type"] for n, p in policies.items()} == {
        "seed-protect-s3tables-replicas": "SERVICE_CONTROL_POLICY",
        "seed-protect-s3tables-replica-guards": "SERVICE_CONTROL_POLICY",
        "seed-protect-s3tables-pipeline": "SERVICE_CONTROL_POLICY",
        "seed-protect-s3tables-replication-roles": "RESOURCE_CONTROL_POLICY",
        "seed-protect-backup-vault": "SERVICE_CONTROL_POLICY",
        "seed-protect-scheduled-jobs": "SERVICE_CONTROL_POLICY",
    }
    for policy in policies.values():
        assert len(policy["content"]) <= 5120
        assert all(s["Effect"] == "Deny" for s in json.loads(policy["content"])["Statement"])
    attachments = org["resource"]["aws_organizations_policy_attachment"].values()
    # the vault's two SCPs on the vault's and the recovery account itself (one account in the seed)
    assert sorted(a["target_id"] for a in attachments) == ["111122223333"] * 2 + ["ou-ab12-replicas1"] * 4
    assert org["provider"]["aws"][0]["allowed_account_ids"] == ["999988887777"]


def test_replica_keys_carry_the_protection_tag_and_deny_their_own_policy_change(synthesized: dict[str, Stacks]) -> None:
    stack = synthesized["multi-account"]["replica-lakehouse-replica-euc1"]
    key = only(stack, "aws_kms_key")
    assert key["tags"] == {"s3tables-kit-replica-key": "lakehouse"}
    # The key policy denies kms:PutKeyPolicy to the deploy role that creates it: KMS's lockout check is bypassed
    # for that, deliberately and only on replica keys.
    assert key["bypass_policy_lockout_safety_check"] is True
    source_key = only(synthesized["multi-account"]["source"], "aws_kms_key")
    assert "bypass_policy_lockout_safety_check" not in source_key and "tags" not in source_key


def test_guardrail_is_attached_to_the_replica_deploy_role(synthesized: dict[str, Stacks]) -> None:
    stack = synthesized["multi-account"]["replica-lakehouse-replica-euc1"]
    roles = sorted(a["role"] for a in stack["resource"]["aws_iam_role_policy_attachment"].values())
    # each role carries the guardrail and, beside it, the account's pipeline guardrail
    assert roles == sorted(2 * ["data-engineer", "platform-admin", "terraform-deploy"])


def test_recovery_bucket_role_and_emr_application(seed: Stacks) -> None:
    rec = seed["recovery"]
    assert only(rec, "aws_s3tables_namespace")["namespace"] == "recovered"
    # the recovery role (the seed's `[vault]` adds the backup role beside it: tests/test_vault_synth.py)
    role = next(r for r in rec["resource"]["aws_iam_role"].values() if r["name"] == "seed-s3tables-recovery")
    assert json.loads(role["assume_role_policy"])["Statement"][0]["Principal"] == {
        "Service": "emr-serverless.amazonaws.com"
    }
    inline = rec["resource"]["aws_iam_role_policy"].values()
    perms = json.loads(next(p for p in inline if p["name"] == "s3tables-recovery")["policy"])
    deny = next(s for s in perms["Statement"] if s["Sid"] == "DenyAllWritesToReplicas")
    # every protected write on every resource but the recovery bucket: constant in the number of replicas
    rec_bucket = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-recovery-tablebucket"
    assert deny["NotResource"] == [rec_bucket, f"{rec_bucket}/table/*"] and "Resource" not in deny
    app = only(rec, "aws_emrserverless_application")
    assert app["type"] == "spark" and app["release_label"] == "emr-7.12.0"
    # only job runs of the provisioned application may assume the role (not any application in the account)
    (app_id,) = res(rec, "aws_emrserverless_application")
    (trust,) = json.loads(role["assume_role_policy"])["Statement"]
    assert trust["Condition"]["ArnLike"] == {"aws:SourceArn": f"${{aws_emrserverless_application.{app_id}.arn}}"}
    assert only(rec, "aws_s3_bucket_public_access_block")["restrict_public_buckets"] is True


def test_scripts_bucket_is_tls_only_and_expires_logs_reports_and_old_versions(seed: Stacks) -> None:
    rec = seed["recovery"]
    (bucket_id,) = res(rec, "aws_s3_bucket")
    policy = only(rec, "aws_s3_bucket_policy")
    assert policy["bucket"] == f"${{aws_s3_bucket.{bucket_id}.id}}"
    deny, *scheduled = json.loads(policy["policy"])["Statement"]
    arn = "arn:aws:s3:::seed-recovery-111122223333-us-west-2"
    # the scheduled artifacts: read by all, written by the recovery stack's deployer (break-glass in the seed)
    assert [s["Sid"] for s in scheduled] == [
        "DenyScheduledArtifacts",
        "DenyScheduledArtifactsDeployers",
    ]
    assert {s["Resource"] for s in scheduled} == {f"{arn}/scheduled/*"}
    assert deny == {
        "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [arn, f"{arn}/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }  # fmt: skip
    rules = {r["id"]: r for r in only(rec, "aws_s3_bucket_lifecycle_configuration")["rule"]}
    assert rules["expire-logs"]["filter"] == [{"prefix": "logs/"}]
    assert rules["expire-logs"]["expiration"] == [{"days": 90}]
    assert rules["expire-reports"]["filter"] == [{"prefix": "reports/"}]
    assert rules["expire-reports"]["expiration"] == [{"days": 365}]
    every = rules["noncurrent-versions-and-incomplete-uploads"]
    assert every["filter"] == [{}] and every["status"] == "Enabled"
    assert every["noncurrent_version_expiration"] == [{"noncurrent_days": 30}]
    assert every["abort_incomplete_multipart_upload"] == [{"days_after_initiation": 7}]
    assert every["expiration"] == [{"expired_object_delete_marker": True}]
    assert not any("scripts/" in json.dumps(r["filter"]) for r in rules.values())  # job scripts never expire
    assert rec["provider"]["aws"][0]["region"] == "us-west-2"


def test_outputs_carry_replica_retention_and_satisfy_the_jobs_contract(
    seed: Stacks, synthesized: dict[str, Stacks]
) -> None:
    rep = seed[REPLICA_STACK]["output"]["kit_replica"]["value"]
    assert rep["snapshot_retention"] == {"max_snapshot_age_hours": 2160, "min_snapshots_to_keep": 1}
    # Resolve the tokens as `cdktf output` would after apply, then load with the jobs' loader.
    fake = {"demo": "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"}

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        if isinstance(node, str) and node.startswith("${"):
            return fake["demo"] if "table_bucket_arn" in node else "resolved-" + str(abs(hash(node)) % 1000)
        return node

    doc = {
        name: {k: resolve(v["value"]) for k, v in st.get("output", {}).items() if k.startswith("kit_")}
        for name, st in seed.items()
    }
    out = parse_outputs(doc)
    assert out.sources[0].replicated_tables == ["analytics.orders"]
    assert out.replicas[0].snapshot_retention.max_snapshot_age_hours == 2160
    assert out.recovery.namespace == "recovered" and out.recovery.emr_release == "emr-7.12.0"
    assert out.organization is not None and out.organization.targets == ["ou-ab12-replicas1"]
    assert out.replicas[0].deploy_role_arns == []  # the seed configures no deploy role
    apse2 = synthesized["multi-account"]["replica-lakehouse-replica-apse2"]["output"]["kit_replica"]["value"]
    assert apse2["deploy_role_arns"] == ["arn:aws:iam::333333333333:role/terraform-deploy"]


def test_stacks_deploy_exactly_the_reviewed_documents(synthesized: dict[str, Stacks]) -> None:
    # every example, the estate's per-source documents (`<purpose>--source-<id>`) included; read as AWS receives them
    from s3tables_kit.infra.policy_json import policy_from_json

    assert {"seed", "multi-account", "estate"} <= set(synthesized)
    for example, stacks in synthesized.items():
        cfg = load_config(ROOT / "examples" / f"{example}.toml")
        deployed = []
        for st in stacks.values():
            r = st.get("resource", {})
            deployed += [policy_from_json(x["assume_role_policy"]) for x in r.get("aws_iam_role", {}).values()]
            deployed += [policy_from_json(x["policy"]) for x in r.get("aws_iam_role_policy", {}).values()]
            deployed += [policy_from_json(x["policy"]) for x in r.get("aws_iam_policy", {}).values()]
            deployed += [
                policy_from_json(x["resource_policy"]) for x in r.get("aws_s3tables_table_bucket_policy", {}).values()
            ]
            deployed += [policy_from_json(x["content"]) for x in r.get("aws_organizations_policy", {}).values()]
            deployed += [policy_from_json(x["policy"]) for x in r.get("aws_kms_key", {}).values()]
            deployed += [policy_from_json(x["policy"]) for x in r.get("aws_s3_bucket_policy", {}).values()]
        # The recovery trust names the provisioned EMR Serverless application, whose id exists after apply only: the
        # reviewed document shows a placeholder where the stack references the application's ARN.
        (app_id,) = stacks["recovery"]["resource"]["aws_emrserverless_application"]
        app_arn = f"${{aws_emrserverless_application.{app_id}.arn}}"
        bound = {"recovery-role-trust": documents.recovery_role_trust(cfg, app_arn)}
        if cfg.vault is not None:
            bound["backup-role-trust"] = documents.recovery_role_trust(cfg, app_arn)  # the same trust
        reviewed = [bound.get(d.name, d.document) for d in documents.build_documents(cfg) if d.kind != "table-policy"]
        canon = sorted(json.dumps(d, sort_keys=True) for d in deployed)
        assert canon == sorted(json.dumps(d, sort_keys=True) for d in reviewed), example


def test_allow_destroy_flag_lifts_prevent_destroy(tmp_path: Path) -> None:
    from s3tables_kit.infra.app import build_app

    build_app(SEED, outdir=str(tmp_path), allow_destroy=True).synth()
    stack = json.loads((tmp_path / "stacks" / REPLICA_STACK / "cdk.tf.json").read_text())
    assert only(stack, "awscc_s3tables_table_bucket")["lifecycle"] == {"prevent_destroy": False}


@pytest.mark.parametrize("example", sorted(p.name for p in GOLDEN.iterdir()))
def test_golden_snapshots_are_current(synthesized: dict[str, Stacks], example: str) -> None:
    stacks = synthesized[example]
    golden_files = sorted((GOLDEN / example).glob("*.json"))
    assert [p.stem for p in golden_files] == sorted(stacks), "stacks changed: run `make golden` and review"
    for path in golden_files:
        fresh = render(normalize(stacks[path.stem], os.getcwd()))
        assert fresh == path.read_text(), f"{path} is stale: run `make golden` and review the diff"


@pytest.mark.parametrize("example", ["seed", "multi-account"])
def test_cdktf_cli_synth_matches_python_entry_point(
    synthesized: dict[str, Stacks], example: str, tmp_path: Path
) -> None:
    env = dict(os.environ, KIT_CONFIG=f"examples/{example}.toml", CHECKPOINT_DISABLE="1",
               JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20")  # fmt: skip
    env.pop("KIT_OUTDIR", None)
    proc = subprocess.run(
        ["npx", "--no-install", "cdktf", "synth", "--output", str(tmp_path / "out")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cli = {p.name: json.loads((p / "cdk.tf.json").read_text()) for p in (tmp_path / "out" / "stacks").iterdir()}
    assert set(cli) == set(synthesized[example])
    for name, doc in cli.items():
        assert normalize(doc, "") == normalize(synthesized[example][name], ""), name


def test_summary_names_stacks_denies_and_outputs(seed: Stacks) -> None:
    from s3tables_kit.infra.summary import summarize

    text = summarize(seed)
    # the bucket, its policy, the guardrail and the pipeline guardrail; the account's freshness check (fourteen)
    assert f"stack {REPLICA_STACK}  [111122223333 us-west-2]  18 resources" in text
    assert "DenyReplicaDeletion: DeleteNamespace, DeleteTable, DeleteTableBucket" in text
    assert "(except s3tables-break-glass, seed-s3tables-replication + maintenance service)" in text
    assert "output kit_recovery: account_id, deployed, emr_application_id" in text


# ---------------------------------------------------------------- the estate (`[[sources]]`) ----

ESTATE = load_config(ROOT / "examples/estate.toml")
VAULT = "replica-estate-vault-euc1"
SALES_REPLICA = "replica-estate-sales-replica-euc1"


@pytest.fixture(scope="module")
def estate(synthesized: dict[str, Stacks]) -> Stacks:
    return synthesized["estate"]


def _destination_stacks(stacks: Stacks, source_stack: str) -> list[str]:
    """The replica stacks whose bucket ARNs a source stack's replication rule names, in rule order (resolved through
    the cross-stack references to the producing stack's state and output)."""
    st = stacks[source_stack]
    rules = [
        *res(st, "aws_s3tables_table_bucket_replication").values(),
        *res(st, "aws_s3tables_table_replication").values(),
    ]
    out: list[list[str]] = []
    for rule_holder in rules:
        (rule,) = rule_holder["rule"]
        names = []
        for dest in rule["destination"]:
            ref = re.fullmatch(
                r"\$\{data\.terraform_remote_state\.([^.]+)\.outputs\.([^}]+)\}", dest["destination_table_bucket_arn"]
            )
            assert ref, dest
            remote = st["data"]["terraform_remote_state"][ref.group(1)]
            producer = remote["config"]["key"].rsplit("/", 1)[1].removesuffix(".tfstate")
            (bucket_id,) = res(stacks[producer], "awscc_s3tables_table_bucket")
            produced = stacks[producer]["output"][ref.group(2)]["value"]
            assert produced == f"${{awscc_s3tables_table_bucket.{bucket_id}.table_bucket_arn}}"
            names.append(producer)
        out.append(names)
    assert out and all(o == out[0] for o in out), out  # every table-level configuration names the same buckets
    return out[0]


def test_estate_has_a_stack_per_source_and_per_replica(estate: Stacks) -> None:
    assert set(estate) == {
        "source-sales-euw1", "source-marketing-euw1", "source-ops-use1", VAULT, SALES_REPLICA, "recovery",
        "organization",
    }  # fmt: skip
    where = {name: st["provider"]["aws"][0] for name, st in estate.items() if name.startswith("source-")}
    assert {n: (p["allowed_account_ids"], p["region"]) for n, p in where.items()} == {
        "source-sales-euw1": (["111111111111"], "eu-west-1"),
        "source-marketing-euw1": (["111111111111"], "eu-west-1"),
        "source-ops-use1": (["555555555555"], "us-east-1"),
    }


@pytest.mark.parametrize(
    ("stack", "mode", "destinations"),
    [
        ("source-sales-euw1", "bucket", [VAULT, SALES_REPLICA]),
        ("source-marketing-euw1", "tables", [VAULT]),
        ("source-ops-use1", "bucket", [VAULT]),
    ],
)
def test_each_source_replicates_with_its_own_role_to_its_own_destinations(
    estate: Stacks, stack: str, mode: str, destinations: list[str]
) -> None:
    src = next(s for s in ESTATE.sources if s.stack_id == stack)
    st = estate[stack]
    assert only(st, "awscc_s3tables_table_bucket")["table_bucket_name"] == src.bucket
    role = only(st, "aws_iam_role")
    assert role["name"] == f"estate-{src.id}-s3tables-replication"
    (trust,) = json.loads(role["assume_role_policy"])["Statement"]
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": src.account_id}
    perms = json.loads(only(st, "aws_iam_role_policy")["policy"])
    written = {r for s in perms["Statement"] for r in _list(s["Resource"]) if "CreateTable" in str(s["Action"])}
    assert written == {r.bucket_arn for r in ESTATE.destinations_of(src)}  # its destinations, no other replica
    (role_id,) = (k for k, v in res(st, "aws_iam_role").items() if v["name"] == role["name"])
    bucket_mode = res(st, "aws_s3tables_table_bucket_replication")
    table_mode = res(st, "aws_s3tables_table_replication")
    assert bool(bucket_mode) == (mode == "bucket") and bool(table_mode) == (mode == "tables")
    tables = res(st, "aws_s3tables_table")
    replicated = {tables[t["table_arn"].split(".")[1]]["name"] for t in table_mode.values()}
    assert replicated == ({"campaigns"} if mode == "tables" else set())
    for body in (*bucket_mode.values(), *table_mode.values()):
        assert body["role"] == f"${{aws_iam_role.{role_id}.arn}}"
    assert _destination_stacks(estate, stack) == destinations
    out = st["output"]["kit_source"]["value"]
    assert (out["kit"], out["source_id"], out["replication_mode"]) == ("estate", src.id, mode)


def test_the_vault_grants_every_cross_account_source_role_and_exempts_all(estate: Stacks) -> None:
    from s3tables_kit.infra.policy_json import policy_from_json

    synthesized = only(estate[VAULT], "aws_s3tables_table_bucket_policy")["resource_policy"]
    # Terraform would read the policy variable as an interpolation: synthesized as the literal `$${`, sent as `${`
    assert '"acct$${aws:PrincipalAccount}_*"' in synthesized and '"acct${aws:' not in synthesized
    pol = policy_from_json(synthesized)
    roles = {ESTATE.replication_role_arn_of(s) for s in ESTATE.sources}
    assert roles == {
        "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication",
        "arn:aws:iam::111111111111:role/estate-marketing-euw1-s3tables-replication",
        "arn:aws:iam::555555555555:role/estate-ops-use1-s3tables-replication",
    }
    grants = [
        s for s in pol["Statement"] if s["Effect"] == "Allow" and s["Sid"].endswith(("CreateReplicas", "WriteReplicas"))
    ]
    # one pair of statements for every feeding role, by the roles' name pattern in the feeding accounts (a policy
    # holds 20,480 characters); the vault (666666666666) is cross-account to all three sources
    assert len(grants) == 2
    pattern = "arn:aws:iam::*:role/estate-*-s3tables-replication"
    for grant in grants:
        assert grant["Principal"] == "*" and grant["Condition"]["ArnLike"] == {"aws:PrincipalArn": pattern}
        assert grant["Condition"]["StringEquals"] == {"aws:PrincipalAccount": ["111111111111", "555555555555"]}
    writes = next(s for s in pol["Statement"] if s["Sid"] == "DenyReplicaDataWrite")
    assert pattern in writes["Condition"]["ArnNotLike"]["aws:PrincipalArn"]
    confine = next(s for s in pol["Statement"] if s["Sid"] == "DenyFanInRolesOutsideTheirAccountsNamespaces")
    assert confine["Condition"]["StringNotLike"] == {"s3tables:namespace": "acct${aws:PrincipalAccount}_*"}
    # The sales replica shares the sales source's account: no grant, only sales' role exempt from its denies.
    local = json.loads(only(estate[SALES_REPLICA], "aws_s3tables_table_bucket_policy")["resource_policy"])
    assert not [s for s in local["Statement"] if "ReplicationRole" in s["Sid"] and s["Effect"] == "Allow"]
    exempt = next(s for s in local["Statement"] if s["Sid"] == "DenyReplicaDataWrite")["Condition"]["ArnNotLike"]
    assert {a for a in exempt["aws:PrincipalArn"] if "s3tables-replication" in a} == {
        "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication"
    }
    # The vault key lets every feeding role write: by the pattern, in the feeding accounts.
    key = json.loads(only(estate[VAULT], "aws_kms_key")["policy"])
    use = next(s for s in key["Statement"] if s["Sid"] == "AllowReplicationRoleWriteReplica")
    assert use["Principal"] == "*" and use["Condition"]["ArnLike"] == {"aws:PrincipalArn": pattern}
    assert use["Condition"]["StringEquals"] == {"aws:PrincipalAccount": ["111111111111", "555555555555"]}


def test_one_guardrail_per_replica_account(estate: Stacks) -> None:
    """Each replica account: its guardrail and, beside it on the same roles, its pipeline guardrail (the kit's
    allow-lists: one managed policy holds 6,144 characters)."""
    for stack, account in ((VAULT, "666666666666"), (SALES_REPLICA, "111111111111")):
        names = sorted(p["name"] for p in res(estate[stack], "aws_iam_policy").values())
        assert names == ["estate-s3tables-pipeline-guardrail", "estate-s3tables-replica-guardrail"], account
        roles = sorted(a["role"] for a in res(estate[stack], "aws_iam_role_policy_attachment").values())
        assert roles == ["data-engineer", "data-engineer", "terraform-deploy", "terraform-deploy"], account
    # the one other managed policy: the pipeline guardrail of the source account without a replica
    others = {name: res(st, "aws_iam_policy") for name, st in estate.items() if not name.startswith("replica-")}
    assert {n: [p["name"] for p in ps.values()] for n, ps in others.items() if ps} == {
        "source-ops-use1": ["estate-s3tables-pipeline-guardrail"]
    }
    roles = sorted(a["role"] for a in res(estate["source-ops-use1"], "aws_iam_role_policy_attachment").values())
    assert roles == ["data-engineer"]


def _tags(body: dict[str, Any]) -> dict[str, str]:
    tags = body.get("tags", {})
    return {t["key"]: t["value"] for t in tags} if isinstance(tags, list) else dict(tags)


def test_the_protection_tag_is_on_every_replica_bucket_and_nowhere_else(synthesized: dict[str, Stacks]) -> None:
    for example, stacks in synthesized.items():
        for name, st in stacks.items():
            for rtype, instances in st.get("resource", {}).items():
                for rid, body in instances.items():
                    tagged = _tags(body).get("kit-protection")
                    on_replica_bucket = (  # the estates (`[[sources]]`): the estate and the one-account lake
                        example in ("estate", "lake")
                        and name.startswith("replica-")
                        and rtype == "awscc_s3tables_table_bucket"
                    )
                    assert tagged == (example if on_replica_bucket else None), f"{example}/{name} {rtype}.{rid}"
            for provider in st.get("provider", {}).get("aws", []):
                assert "kit-protection" not in json.dumps(provider.get("default_tags", [])), f"{example}/{name}"
    assert "kit-protection" not in json.dumps(synthesized["seed"]) + json.dumps(synthesized["multi-account"])


def test_each_source_has_its_own_monitor_names_and_metrics(estate: Stacks) -> None:
    """Two sources share 111111111111/eu-west-1: names and the Kit dimension carry the source id, so no alarm name,
    heartbeat or lag metric is shared; the fan-in vault gets one set of alarms per source."""
    alarms: dict[str, tuple[str, dict[str, str]]] = {}
    for src in ESTATE.sources:
        st = estate[src.stack_id]
        prefix = f"estate-{src.id}"
        (fn,) = res(st, "aws_lambda_function").values()
        assert fn["function_name"] == f"{prefix}-replication-monitor"
        env = fn["environment"]["variables"]
        assert env["KIT_NAME"] == prefix and env["KIT_SOURCE_BUCKET_ARNS"] == src.bucket_arn
        assert env["KIT_DESTINATION_BUCKET_ARNS"] == ",".join(r.bucket_arn for r in ESTATE.destinations_of(src))
        (topic,) = res(st, "aws_sns_topic").values()
        assert topic["name"] == f"{prefix}-assurance-alarms"
        for a in res(st, "aws_cloudwatch_metric_alarm").values():
            kinds = ("replication-", "replica-bucket-policy-drift-", "source-bucket-policy-drift", "replica-layers-")
            assert a["alarm_name"].startswith(tuple(f"{prefix}-{k}" for k in (*kinds, "replica-retention-")))
            # the kit's metrics under the source's Kit; the liveness alarms on its own function's AWS/Lambda metrics
            assert a["dimensions"] in ({"FunctionName": fn["function_name"]}, a["dimensions"] | {"Kit": prefix})
            alarms[a["alarm_name"]] = (src.id or "", a["dimensions"])
    vault_lag = [n for n in alarms if n.endswith("-replication-lag-estate-vault-euc1")]
    assert len(vault_lag) == 3
    # 7 kinds per destination (lag, failed, detached, replication point, bucket-policy drift, table layers, retention;
    # sales 2, others 1) + two liveness, a status-unreadable, a replication-configuration and a source-bucket-policy
    # drift alarm per source
    assert len(alarms) == 3 * 5 + 7 * 4
    (topic,) = res(estate["recovery"], "aws_sns_topic").values()
    assert topic["name"] == "estate-assurance-alarms"  # the estate's own rehearsal alarms


def test_the_rehearsal_samples_every_table_the_vault_receives(estate: Stacks) -> None:
    (schedule,) = res(estate["recovery"], "aws_scheduler_schedule").values()
    args = json.loads(schedule["target"]["input"])["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    candidates = [args[i + 1] for i, a in enumerate(args) if a == "--candidate"]
    assert candidates == [
        "acct111111111111_sales.orders",
        "acct111111111111_marketing.campaigns",
        "acct555555555555_ops.incidents",
    ]
    assert args[args.index("--replica-warehouse") + 1] == ESTATE.recovery_replica.bucket_arn


def test_estate_outputs_parse_per_source_and_list_every_feeding_source(estate: Stacks) -> None:
    from s3tables_kit.topology.outputs import ReplicaOut, SourceOut

    def resolved(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: resolved(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolved(v) for v in node]
        return "resolved" if isinstance(node, str) and node.startswith("${") else node

    for src in ESTATE.sources:
        out = SourceOut.model_validate(resolved(estate[src.stack_id]["output"]["kit_source"]["value"]))
        assert out.source_id == src.id and out.monitor_kit == f"estate-{src.id}"
        assert out.table_bucket_name == src.bucket and len(out.destinations) == len(ESTATE.destinations_of(src))
    vault = ReplicaOut.model_validate(resolved(estate[VAULT]["output"]["kit_replica"]["value"]))
    assert vault.feeding_source_arns == [s.bucket_arn for s in ESTATE.sources]
    assert vault.source_table_bucket_arn == ESTATE.sources[0].bucket_arn  # the first, as the field always was
    sales = ReplicaOut.model_validate(resolved(estate[SALES_REPLICA]["output"]["kit_replica"]["value"]))
    assert sales.feeding_source_arns == [ESTATE.sources[0].bucket_arn]


def test_source_configurations_keep_one_source_field_in_replica_outputs(synthesized: dict[str, Stacks]) -> None:
    for example in ("seed", "multi-account"):
        for name, st in synthesized[example].items():
            if name.startswith("replica-"):
                value = st["output"]["kit_replica"]["value"]
                assert "source_table_bucket_arns" not in value and "source_id" not in json.dumps(st["output"])


def test_an_estate_promotion_is_refused_at_synth(tmp_path: Path) -> None:
    from s3tables_kit.infra.app import EstateFailoverError, build_app

    text = (ROOT / "examples/estate.toml").read_text() + (
        '\n[failover]\nwriter_roles = ["arn:aws:iam::111111111111:role/sales-writer"]\n'
        'promoted_bucket = "estate-sales-replica-euc1"\nreplicate_to = ["estate-vault-euc1"]\n'
    )
    (tmp_path / "kit.toml").write_text(text)
    cfg = load_config(tmp_path / "kit.toml")  # a valid configuration: the refusal is the synth's
    with pytest.raises(EstateFailoverError, match=r"promoted_bucket = 'estate-sales-replica-euc1'.*not for an estate"):
        build_app(cfg, outdir=str(tmp_path / "out"))
    assert not (tmp_path / "out" / "stacks").exists()


def test_summary_headline_names_each_source_of_an_estate() -> None:
    from s3tables_kit.infra.summary import headline

    assert headline(SEED) == "1 replica(s), replication mode tables"
    assert headline(ESTATE) == "3 source(s) (sales-euw1 bucket, marketing-euw1 tables, ops-use1 bucket), 2 replica(s)"
