"""The token probe's world (`python -m harness.e2e.token_probe`): one small replication configuration written for the
real `terraform` and the mirror's provider against the stand-in, what each step observed, and steps 1-7 (what the
provider does with a version token); the takeover's steps 8-12 are `harness.e2e.token_takeover`'s."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.e2e.standins import AWS_SERVICES
from harness.e2e.terraform import Terraform

ACCOUNT = "111122223333"
REGION = "us-east-1"
RESOURCE = "aws_s3tables_table_bucket_replication.probe"
TABLE_RESOURCE = "aws_s3tables_table_replication.probe"
NO_TOKEN = "A version token is not specified"
OWNERS_ROLE = f"arn:aws:iam::{ACCOUNT}:role/owners-replication"  # the role of the configuration made outside Terraform
# The role the probe's configuration names (an ARN: the probe studies the token, not IAM, so it builds with s3tables
# and sts alone; the stand-in checks the ARN's shape as AWS does before the role is used).
KIT_ROLE = f"arn:aws:iam::{ACCOUNT}:role/probe-replication"
Json = dict[str, Any]


@dataclass
class Step:
    name: str
    expected: str
    observed: str = ""
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.expected == self.observed


def configuration(
    endpoint: str,
    key: Json,
    version: str,
    destinations: list[str],
    imports: Mapping[str, str] | None = None,
    table: tuple[str, list[str]] | None = None,
) -> Json:
    """The probe's Terraform JSON: buckets `src`, `dst-a`, `dst-b`, and the replication of `src` (as KIT_ROLE) into
    `destinations` (names among the two); `import {}` blocks (address -> id), as a synthesized adopting stack has
    them; with `table` (its ARN, its destinations), a table-level replication of that table too."""
    provider = {
        "region": REGION,
        "access_key": key["accessKeyId"],
        "secret_key": key["secretAccessKey"],
        "skip_credentials_validation": True,
        "skip_metadata_api_check": True,
        "skip_region_validation": True,
        "endpoints": [{svc: endpoint for svc in AWS_SERVICES}],
    }

    def rule(names: list[str]) -> Json:
        return {"destination": [{"destination_table_bucket_arn": f"${{aws_s3tables_table_bucket.{d}.arn}}"}
                                for d in names]}  # fmt: skip

    replication = {"table_bucket_arn": "${aws_s3tables_table_bucket.src.arn}", "role": KIT_ROLE,
                   "rule": [rule(destinations)]}  # fmt: skip
    doc: Json = {
        "terraform": {"required_providers": {"aws": {"source": "hashicorp/aws", "version": version}}},
        "provider": {"aws": [provider]},
        "resource": {
            "aws_s3tables_table_bucket": {name: {"name": f"probe-{name}"} for name in ("src", "dst-a", "dst-b")},
            "aws_s3tables_table_bucket_replication": {"probe": replication},
        },
    }
    if table is not None:
        doc["resource"]["aws_s3tables_table_replication"] = {"probe": {
            "table_arn": table[0], "role": KIT_ROLE, "rule": [rule(table[1])]}}  # fmt: skip
    if imports:
        doc["import"] = [{"to": address, "id": import_id} for address, import_id in imports.items()]
    return doc


def outcome(proc: Any) -> str:
    """`ok`, or the kind of failure: the missing token, a stale one (409), or another error."""
    return "ok" if proc.returncode == 0 else failure(proc.stdout + proc.stderr)


def failure(output: str) -> str:
    text = " ".join(output.split())  # Terraform wraps its diagnostics
    if NO_TOKEN in text:
        return "refused: no version token"
    if "ConflictException" in text or "StatusCode: 409" in text:
        return "refused: stale version token"
    if "Saved plan is stale" in text:
        return "refused: stale plan"
    return "error"


def plan_outcome(proc: Any) -> str:
    return {0: "no changes", 2: "changes"}.get(proc.returncode, "error")


class Probe:
    def __init__(self, tf: Terraform, workdir: Path, emu: Emulator, version: str) -> None:
        self.tf, self.dir, self.emu, self.version = tf, workdir, emu, version
        self.key = emu.control.seed_accounts([ACCOUNT])[ACCOUNT]
        self.steps: list[Step] = []

    def write(
        self,
        destinations: list[str],
        imports: Mapping[str, str] | None = None,
        table: tuple[str, list[str]] | None = None,
        workdir: Path | None = None,
    ) -> None:
        doc = configuration(self.emu.url, self.key, self.version, destinations, imports, table)
        (workdir or self.dir).joinpath("main.tf.json").write_text(json.dumps(doc, indent=2) + "\n")

    def s3tables(self) -> Any:
        import boto3

        return boto3.client(
            "s3tables", endpoint_url=self.emu.url, region_name=REGION,
            aws_access_key_id=self.key["accessKeyId"], aws_secret_access_key=self.key["secretAccessKey"],
        )  # fmt: skip

    def src_arn(self) -> str:
        return self.arn("src")

    def arn(self, name: str) -> str:
        buckets = self.s3tables().list_table_buckets()["tableBuckets"]
        return next(str(b["arn"]) for b in buckets if b["name"] == f"probe-{name}")

    def live_destinations(self) -> int:
        conf = self.s3tables().get_table_bucket_replication(tableBucketARN=self.src_arn())["configuration"]
        return sum(len(rule["destinations"]) for rule in conf["rules"])

    def step(self, name: str, expected: str, observed: str, detail: str = "") -> Step:
        s = Step(name, expected, observed, detail)
        self.steps.append(s)
        print(f"token probe: {'ok  ' if s.ok else 'DIFF'} {name}: expected {expected!r}, observed {observed!r}"
              + (f" ({detail})" if detail else ""), flush=True)  # fmt: skip
        return s

    def apply(self, log: str = "apply") -> Any:
        return self.tf.run(["apply", "-auto-approve", "-input=false", "-no-color"], self.dir, log=log)

    def plan(self) -> Any:
        return self.tf.run(["plan", "-detailed-exitcode", "-input=false", "-no-color"], self.dir, log="plan")

    def run(self) -> list[Step]:
        self.write(["dst-a"])
        self.tf.checked(["init", "-input=false", "-no-color"], self.dir)
        self.step("1 create", "ok", outcome(self.apply()))
        self.step("1 plan after create", "no changes", plan_outcome(self.plan()))
        self.write(["dst-a", "dst-b"])
        self.step("2 update with the stored token", "ok", outcome(self.apply()), f"{self.live_destinations()} live")
        self.tf.checked(["state", "rm", "-no-color", RESOURCE], self.dir, log="state-rm")
        over = outcome(self.apply("apply-3"))
        self.step("3 create over an existing configuration", "refused: no version token", over)
        args = ["import", "-input=false", "-no-color", RESOURCE, self.src_arn()]
        imported = self.tf.run(args, self.dir, log="import")
        self.step("4 import", "ok", outcome(imported))
        self.step("4 plan after import", "no changes", plan_outcome(self.plan()))
        self.write(["dst-a"])
        self.step("5 update after import", "refused: no version token", outcome(self.apply("apply-5")))
        # 6: a stored token made stale by a change outside Terraform. Start from a configuration Terraform created
        # (its state holds a real token): delete the live one with its token, drop it from the state, create.
        self.reset_configuration()
        self.apply()
        s3t = self.s3tables()
        live = s3t.get_table_bucket_replication(tableBucketARN=self.src_arn())
        s3t.put_table_bucket_replication(
            tableBucketARN=self.src_arn(), configuration=live["configuration"], versionToken=live["versionToken"]
        )
        self.write(["dst-a", "dst-b"])
        self.step("6 update with a stale token", "refused: stale version token", outcome(self.apply("apply-6")))
        self.reset_configuration()
        self.step("7 delete with the live token, then apply", "ok", outcome(self.apply()))
        self.step("7 plan after", "no changes", plan_outcome(self.plan()))
        return self.steps

    def reset_configuration(self) -> None:
        """The documented fix: delete the live configuration with its own token (break-glass, outside Terraform)
        and forget it in the state, so the next apply creates it."""
        s3t = self.s3tables()
        live = s3t.get_table_bucket_replication(tableBucketARN=self.src_arn())
        s3t.delete_table_bucket_replication(tableBucketARN=self.src_arn(), versionToken=live["versionToken"])
        self.tf.run(["state", "rm", "-no-color", RESOURCE], self.dir, log="state-rm")
