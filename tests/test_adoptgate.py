"""`s3tables_kit.infra.adoptgate`: the saved plan of an adopting stack is refused before apply when it would destroy,
replace or overwrite what the account holds, and a clean import passes and is applied as planned.

The plans are real: a small Terraform configuration (an `aws_s3tables_table_bucket` and its bucket policy, each with
an `import {}` block) planned with the real `terraform` binary and the local provider against the emulator, where the
bucket exists already with an adopter's `AthenaReaders` grant. The gate's verdict is the independent check of what
the stacks' import blocks do."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest

from emulator.process import Emulator
from harness.e2e.terraform import cli_config
from s3tables_kit.infra import adoptgate
from s3tables_kit.infra.adoptgate import AdoptGateReport, AdoptionIntent, GatedApply, gate, plan_gate_apply
from s3tables_kit.infra.validate import tf_env
from s3tables_kit.topology.config import load_config
from tests.synth_fixtures import terraform_toolchain

pytestmark = pytest.mark.terraform

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT = "111122223333"
REGION = "us-east-1"
KMS_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/0f0e0d0c-0b0a-0908-0706-050403020100"
SSE_S3 = '{ sse_algorithm = "AES256", kms_key_arn = null }'
SSE_KMS = f'{{ sse_algorithm = "aws:kms", kms_key_arn = "{KMS_KEY}" }}'


def athena_grant(arn: str) -> dict[str, Any]:
    """The adopter's own statement: the lake's readers rely on it."""
    return {"Sid": "AthenaReaders", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/athena"},
            "Action": ["s3tables:GetTable", "s3tables:GetTableData"], "Resource": f"{arn}/*"}  # fmt: skip


def narrowed(arn: str) -> dict[str, Any]:
    """The adopter's grant restated under its Sid with fewer actions."""
    return {**athena_grant(arn), "Action": "s3tables:GetTable"}


def kit_deny(arn: str) -> dict[str, Any]:
    return {"Sid": "DenySourceBucketPolicyChange", "Effect": "Deny", "Principal": "*",
            "Action": "s3tables:PutTableBucketPolicy", "Resource": arn}  # fmt: skip


def bucket_tf(label: str, arn: str, *, name: str | None = None, encryption: str = SSE_S3,
              statements: list[dict[str, Any]] | None = None, import_policy: bool = True) -> str:  # fmt: skip
    """An adopting configuration of one existing bucket: the bucket imported, and its bucket policy (imported, or
    created when `import_policy` is false) holding `statements` (default: the adopter's grant and the kit's Deny)."""
    policy = {"Version": "2012-10-17", "Statement": statements or [athena_grant(arn), kit_deny(arn)]}
    policy_import = f'import {{\n  to = aws_s3tables_table_bucket_policy.{label}\n  id = "{arn}"\n}}\n'
    return f"""
import {{
  to = aws_s3tables_table_bucket.{label}
  id = "{arn}"
}}

resource "aws_s3tables_table_bucket" "{label}" {{
  name                     = "{name or arn.rsplit("/", 1)[-1]}"
  encryption_configuration = {encryption}
}}
{policy_import if import_policy else ""}
resource "aws_s3tables_table_bucket_policy" "{label}" {{
  table_bucket_arn = aws_s3tables_table_bucket.{label}.arn
  resource_policy  = {json.dumps(json.dumps(policy))}
}}
"""


@dataclass
class Stand:
    emu: Emulator
    keys: dict[str, str]
    terraform: Path
    env: dict[str, str]
    root: Path
    arns: dict[str, str] = field(default_factory=dict)  # label -> the existing bucket's ARN

    def s3tables(self) -> Any:
        return boto3.client(
            "s3tables", endpoint_url=self.emu.url, region_name=REGION, aws_access_key_id=self.keys["accessKeyId"],
            aws_secret_access_key=self.keys["secretAccessKey"],
        )  # fmt: skip

    def existing_bucket(self, label: str) -> str:
        """A table bucket made outside Terraform (SSE-S3, the service's default maintenance) with the adopter's
        bucket policy."""
        client = self.s3tables()
        arn = self.arns[label] = str(client.create_table_bucket(name=f"{label}-lake")["arn"])
        doc = {"Version": "2012-10-17", "Statement": [athena_grant(arn)]}
        client.put_table_bucket_policy(tableBucketARN=arn, resourcePolicy=json.dumps(doc))
        return arn

    def account_view(self, arn: str) -> tuple[Any, Any, Any]:
        """What the account holds for the bucket: encryption, maintenance, bucket policy."""
        client = self.s3tables()
        enc = client.get_table_bucket_encryption(tableBucketARN=arn)["encryptionConfiguration"]
        maint = client.get_table_bucket_maintenance_configuration(tableBucketARN=arn)["configuration"]
        policy = json.loads(client.get_table_bucket_policy(tableBucketARN=arn)["resourcePolicy"])
        return enc, maint, policy

    def workdir(self, name: str, *buckets: str) -> Path:
        url = self.emu.url
        provider = f"""
provider "aws" {{
  region                      = "{REGION}"
  access_key                  = "{self.keys["accessKeyId"]}"
  secret_key                  = "{self.keys["secretAccessKey"]}"
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
  endpoints {{
    s3tables = "{url}"
    sts      = "{url}"
    iam      = "{url}"
  }}
}}
"""
        work = self.root / name
        work.mkdir()
        (work / "main.tf").write_text(provider + "".join(buckets))
        return work


@dataclass(frozen=True)
class Refused:
    """The adopting plan of four existing buckets, each configured wrong in its own way, gated and not applied."""

    stand: Stand
    work: Path
    done: GatedApply
    before: dict[str, tuple[Any, Any, Any]]  # label -> the account's view of the bucket before the gate


@pytest.fixture(scope="module")
def stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    terraform, mirror = terraform_toolchain()
    root = tmp_path_factory.mktemp("adoptgate")
    (root / "cache").mkdir()
    (root / "terraform.rc").write_text(cli_config(mirror, root / "cache"))
    with Emulator() as emu:
        keys = emu.control.seed_accounts([ACCOUNT])[ACCOUNT]
        yield Stand(emu, keys, terraform, tf_env(root / "terraform.rc"), root)


@pytest.fixture(scope="module")
def refused(stand: Stand, tmp_path_factory: pytest.TempPathFactory) -> Refused:
    """One real plan (one Terraform run): a different encryption (`enc`: the configuration names a KMS key, the
    bucket has SSE-S3, and the stack sets what the configuration says), a renamed bucket (`renamed`), a policy that
    drops the adopter's grant (`dropped`), a policy created instead of imported (`created`), and a policy that
    restates the adopter's grant, narrowed, under its Sid (`narrowed`: passes)."""
    arns = {label: stand.existing_bucket(label) for label in ("enc", "renamed", "dropped", "created", "narrowed")}
    before = {label: stand.account_view(arn) for label, arn in arns.items()}
    work = stand.workdir(
        "refused",
        bucket_tf("enc", arns["enc"], encryption=SSE_KMS),
        bucket_tf("renamed", arns["renamed"], name="renamed-lake-2"),
        bucket_tf("dropped", arns["dropped"], statements=[kit_deny(arns["dropped"])]),
        bucket_tf("created", arns["created"], import_policy=False),
        bucket_tf("narrowed", arns["narrowed"], statements=[narrowed(arns["narrowed"]), kit_deny(arns["narrowed"])]),
    )
    cfg = config(tmp_path_factory.mktemp("refused-config"), "enc-lake", kms=True)
    done = plan_gate_apply(stand.terraform, work, cfg, apply=True, env=stand.env)
    return Refused(stand, work, done, before)


def config(where: Path, bucket: str, changes: tuple[str, ...] = (), *, kms: bool = False) -> AdoptionIntent:
    """The seed configuration with its source adopting `bucket` (and stating `changes`); with `kms`, its encryption is
    the KMS key `SSE_KMS` names (the bucket has SSE-S3: a wrong setting)."""
    text = (ROOT / "examples" / "seed.toml").read_text()
    stated = f"adopt_changes = {json.dumps(list(changes))}\n" if changes else ""
    text = text.replace('bucket = "demo-source-tablebucket"\n', f'bucket = "{bucket}"\nadopt = true\n{stated}', 1)
    if kms:
        text = text.replace(
            'encryption = { type = "sse-s3" }', f'encryption = {{ type = "kms", kms_key = "{KMS_KEY}" }}', 1
        )
    (where / "kit.toml").write_text(text)
    return AdoptionIntent.of(load_config(where / "kit.toml"))


def refusals(report: AdoptGateReport, label: str) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(r.address, r.rule, r.attributes) for r in report.refused if r.address.endswith(f".{label}")}


def test_a_different_encryption_in_the_configuration_is_refused_before_any_request_changes_the_account(
    refused: Refused, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, stand = refused.done.report, refused.stand
    assert not refused.done.applied
    assert refusals(report, "enc") == {("aws_s3tables_table_bucket.enc", "overwrite", ("encryption_configuration",))}
    text = next(str(r) for r in report.refused if r.address.endswith(".enc"))
    assert 'encryption_configuration.sse_algorithm: "AES256" -> "aws:kms"' in text
    assert f'encryption_configuration.kms_key_arn: null -> "{KMS_KEY}"' in text
    # Its bucket policy keeps the adopter's grant word for word and adds the kit's Deny: a merge, not an overwrite.
    assert "aws_s3tables_table_bucket_policy.enc" in {n.address for n in report.of_kind("policy merged")}
    # Nothing reached the account: every bucket's encryption, maintenance and policy are as they were, no state.
    assert {label: stand.account_view(arn) for label, arn in stand.arns.items() if label in refused.before} == (
        refused.before
    )
    assert refused.before["enc"][0] == {"sseAlgorithm": "AES256"}
    assert not (refused.work / "terraform.tfstate").exists()
    # The same saved plan through the command line: exit 2, a line per refused resource naming the attribute.
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(refused.done.plan))
    config(tmp_path, "enc-lake", kms=True)
    assert adoptgate.main(["--plan-json", str(plan_file), "--config", str(tmp_path / "kit.toml")]) == 2
    err = capsys.readouterr().err
    assert "refused: 5 change(s)" in err
    assert "REFUSED aws_s3tables_table_bucket.enc: imported, and the plan overwrites its encryption" in err


def test_an_encryption_change_the_configuration_states_passes_as_a_stated_change(
    refused: Refused, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(refused.done.plan))
    config(tmp_path, "enc-lake", ("encryption",), kms=True)
    report_file = tmp_path / "report.json"
    args = ["--plan-json", str(plan_file), "--config", str(tmp_path / "kit.toml"), "--report", str(report_file)]
    assert adoptgate.main(args) == 2  # the other three buckets are still refused ...
    capsys.readouterr()
    doc = json.loads(report_file.read_text())["plans"][0]
    assert not [r for r in doc["refused"] if r["address"].endswith(".enc")]  # ... this one is a stated change
    detail = "encryption (encryption_configuration), stated in kit.toml"
    assert doc["stated_changes"] == [{"address": "aws_s3tables_table_bucket.enc", "detail": detail}]
    assert {i["address"] for i in doc["imports"]} >= {
        "aws_s3tables_table_bucket.enc",
        "aws_s3tables_table_bucket_policy.enc",
    }


def test_a_replacement_is_refused_naming_the_attribute_that_forces_it(refused: Refused) -> None:
    report = refused.done.report
    assert refusals(report, "renamed") == {
        ("aws_s3tables_table_bucket.renamed", "replace", ("name",)),
        # the policy names the bucket's ARN, which a new bucket changes
        ("aws_s3tables_table_bucket_policy.renamed", "replace", ("table_bucket_arn",)),
    }
    text = next(str(r) for r in report.refused if r.address == "aws_s3tables_table_bucket.renamed")
    assert "would be replaced (being imported): forced by name" in text


def test_a_policy_that_drops_the_adopters_grant_or_is_created_over_it_is_refused_unless_stated(
    refused: Refused, tmp_path: Path
) -> None:
    report, plan = refused.done.report, refused.done.plan
    assert refusals(report, "dropped") == {
        ("aws_s3tables_table_bucket_policy.dropped", "overwrite", ("resource_policy",))
    }
    text = next(str(r) for r in report.refused if r.address.endswith(".dropped"))
    assert "existing statement(s) AthenaReaders dropped" in text
    # Restated under its Sid (narrowed, as an adopter does when the kit's lint refuses a statement): a merge.
    merged = next(n for n in report.of_kind("policy merged") if n.address.endswith(".narrowed"))
    assert merged.detail == (
        "0 existing statement(s) kept; added DenySourceBucketPolicyChange; rewritten as kit.toml states them: "
        "AthenaReaders"
    )
    assert refusals(report, "narrowed") == set()
    # Not imported: Terraform plans a plain create, which would replace the policy the bucket has.
    created = "aws_s3tables_table_bucket_policy.created"
    assert refusals(report, "created") == {(created, "create over existing", ("bucket_policy",))}
    # A create stated in the configuration passes, listed as the stated change it is.
    stated = gate(plan, config(tmp_path, "created-lake", ("bucket_policy",)))
    assert refusals(stated, "created") == set()
    assert created in {n.address for n in stated.of_kind("stated change")}


def test_a_clean_import_passes_and_exactly_the_saved_plan_is_applied(stand: Stand, tmp_path: Path) -> None:
    arn = stand.existing_bucket("clean")
    _, maintenance, _ = stand.account_view(arn)
    work = stand.workdir("clean", bucket_tf("clean", arn))
    done = plan_gate_apply(stand.terraform, work, config(tmp_path, "clean-lake"), apply=True, env=stand.env)
    assert done.report.passed and done.applied, done.report.summary()
    imports = ["aws_s3tables_table_bucket.clean", "aws_s3tables_table_bucket_policy.clean"]
    assert [n.address for n in done.report.of_kind("import")] == imports
    assert done.report.of_kind("create") == [] and done.report.of_kind("stated change") == []
    enc, maint, policy = stand.account_view(arn)
    assert enc == {"sseAlgorithm": "AES256"} and maint == maintenance
    assert [s["Sid"] for s in policy["Statement"]] == ["AthenaReaders", "DenySourceBucketPolicyChange"]
    again = subprocess.run([str(stand.terraform), "plan", "-detailed-exitcode", "-input=false", "-no-color"],
                           cwd=work, env=stand.env, capture_output=True, text=True, check=False)  # fmt: skip
    assert again.returncode == 0, again.stdout  # the adopted stack re-plans empty
