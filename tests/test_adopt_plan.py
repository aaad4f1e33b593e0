"""The adopt example's source stack, planned and applied by the real Terraform against the emulator, where the lake
already exists: the bucket, its two namespaces and its bucket policy with the adopter's `AthenaReaders` grant.

What is planned is the synthesized stack's own adoption (its import blocks, namespaces and bucket policy, byte for
byte); only the awscc bucket is stood in for by the aws provider's bucket (no awscc binary here, as in `make e2e`).
The plan imports everything that exists and creates none of it, the adoption gate passes it, the apply keeps the
adopter's grant beside the kit's Denies, and the stack re-plans empty."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra.adoptgate import AdoptionIntent, plan_gate_apply
from s3tables_kit.topology.config import load_config
from tests.test_adopt import BUCKET, EXAMPLE, POLICY_FILE, synth_source
from tests.test_adoptgate import Stand, stand  # noqa: F401  (the emulator and Terraform of the gate's tests)

pytestmark = pytest.mark.terraform

AWSCC, AWS = "awscc_s3tables_table_bucket", "aws_s3tables_table_bucket"
ADOPTED = ("aws_s3tables_namespace", "aws_s3tables_table_bucket_policy")


def adoption_of(stack: dict[str, Any]) -> dict[str, Any]:
    """The stack's adopted resources and import blocks as a Terraform JSON configuration, its awscc bucket stood in
    for by the aws provider's (same label, name and encryption; references to its ARN follow)."""
    (label, bucket), *_ = stack["resource"][AWSCC].items()
    resources: dict[str, Any] = {
        AWS: {
            label: {
                "name": bucket["table_bucket_name"],
                "encryption_configuration": {**bucket["encryption_configuration"], "kms_key_arn": None},
                "lifecycle": bucket["lifecycle"],
            }
        }
    }
    resources |= {t: stack["resource"][t] for t in ADOPTED}
    text = json.dumps({"resource": resources, "import": stack["import"]})
    text = re.sub(rf"\$\{{{AWSCC}\.([\w-]+)\.table_bucket_arn\}}", rf"${{{AWS}.\1.arn}}", text)
    doc: dict[str, Any] = json.loads(text.replace(f'"{AWSCC}.', f'"{AWS}.'))
    return doc


def test_the_existing_lake_is_imported_none_of_it_created_and_its_grant_kept(stand: Stand, tmp_path: Path) -> None:  # noqa: F811
    client = stand.s3tables()
    assert client.create_table_bucket(name="sales-lake")["arn"] == BUCKET
    for ns in ("orders", "clickstream"):
        client.create_namespace(tableBucketARN=BUCKET, namespace=[ns])
    client.put_table_bucket_policy(tableBucketARN=BUCKET, resourcePolicy=POLICY_FILE.read_text())
    cfg = load_config(EXAMPLE)
    work = stand.workdir("adopt-example")
    (work / "adopt.tf.json").write_text(json.dumps(adoption_of(synth_source(cfg, tmp_path / "synth")), indent=2))

    done = plan_gate_apply(stand.terraform, work, AdoptionIntent.of(cfg), apply=True, env=stand.env)

    assert done.report.passed and done.applied, done.report.summary()
    changes = {rc["address"]: rc["change"] for rc in done.plan["resource_changes"]}
    assert len(changes) == 4 and all("importing" in c for c in changes.values()), changes
    assert not [a for a, c in changes.items() if c["actions"] != ["no-op"] and c["actions"] != ["update"]]
    updated = [a for a, c in changes.items() if c["actions"] == ["update"]]
    assert [a.split(".")[0] for a in updated] == ["aws_s3tables_table_bucket_policy"]  # only the policy changes
    policy = json.loads(client.get_table_bucket_policy(tableBucketARN=BUCKET)["resourcePolicy"])
    assert [s["Sid"] for s in policy["Statement"]] == [
        "AthenaReaders",
        "IngestWriters",
        "DenySourceReplicationChange",
        "DenySourceBucketPolicyChange",
    ]
    again = subprocess.run([str(stand.terraform), "plan", "-detailed-exitcode", "-input=false", "-no-color"],
                           cwd=work, env=stand.env, capture_output=True, text=True, check=False)  # fmt: skip
    assert again.returncode == 0, again.stdout  # the adopted stack re-plans empty
