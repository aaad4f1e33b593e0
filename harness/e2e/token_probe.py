"""What the pinned hashicorp/aws provider does with a replication configuration's version token, checked in practice
(`make e2e-all`, after the stacks; or `python -m harness.e2e.token_probe` on its own).

S3 Tables guards `Put*Replication` and `Delete*Replication` over an existing configuration with its version token
(docs/aws-facts.md). Read in the provider's source, its replication resources send no token on create and `Read`
never refreshes the token (hashicorp/terraform-provider-aws #46675, fix in PR #46688). This probe applies one small
configuration (three table buckets, `aws_s3tables_table_bucket_replication` naming a role ARN) with the real
`terraform` and the mirror's provider to the local stand-in, which answers these calls as AWS does
(emulator/replication.py), and records what each step really does:

1. create, then an unchanged plan (the everyday path);
2. an update of the destinations with the token the create stored (a destination added by a later deploy);
3. the configuration forgotten by the state (`state rm`: a lost state, or one created outside Terraform), then an
   apply: a create over an existing configuration;
4. `terraform import`, then a plan: does the imported resource match;
5. an update after the import;
6. a change made outside Terraform (a new token), then an update with the stored, now stale, token;
7. the break-glass way out of 3-6: the live configuration deleted with its own token, then an apply that creates
   it (a gap of one apply; kept for a configuration the kit cannot take over);
8. the takeover the kit does instead (`s3tables_kit.infra.takeover`, then the plan, the adoption gate and the apply
   of that saved plan: `s3tables-kit adopt-gate --take-over --apply`) of a configuration its owners made outside
   Terraform: first a configuration that drops the owners' destination, refused by the gate with nothing applied;
9. then the one step from an empty state: imported alone, the live token written into the state, planned, gated,
   applied; the re-plan empty, the owners' destination kept, and the configuration never absent (a reader polls it
   through the apply; the stand-in counts no delete and exactly one put);
10. a token made stale between the step and the apply (the owners change it): the apply refused, their
    configuration left in place; the step again, then the apply;
11. two runs from one token with their own states: the first applies, the second is refused (stale token), the
    first's configuration in place; two saved plans of one state: the second is refused (the plan is stale);
12. the same one step for a table-level configuration (`aws_s3tables_table_replication`).

Each step prints `expected` (from the provider's source) and `observed`; the exit code is 0 when every observation
matches the expectation, 1 otherwise, 2 when Terraform or the provider mirror is missing. With a provider older than
6.25 (no replication resources: the machine image's, before `make provider`) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.e2e.standins import AWS_SERVICES
from harness.e2e.terraform import Terraform, cli_config, proxy_env
from s3tables_kit.infra.validate import find_mirror, find_terraform, mirror_providers, tf_env

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
        from harness.e2e.token_takeover import Takeover

        Takeover(self).run()
        return self.steps

    def reset_configuration(self) -> None:
        """The documented fix: delete the live configuration with its own token (break-glass, outside Terraform)
        and forget it in the state, so the next apply creates it."""
        s3t = self.s3tables()
        live = s3t.get_table_bucket_replication(tableBucketARN=self.src_arn())
        s3t.delete_table_bucket_replication(tableBucketARN=self.src_arn(), versionToken=live["versionToken"])
        self.tf.run(["state", "rm", "-no-color", RESOURCE], self.dir, log="state-rm")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None, help="where Terraform runs (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the steps as JSON here")
    args = parser.parse_args(argv)
    binary, mirror = find_terraform(), find_mirror()
    versions = mirror_providers(mirror).get("registry.terraform.io/hashicorp/aws", []) if mirror else []
    if binary is None or mirror is None or not versions:
        print("token probe: needs `terraform` and a provider mirror with hashicorp/aws", file=sys.stderr)
        return 2
    version = versions[0]
    if tuple(int(p) for p in version.split(".")[:2]) < (6, 25):
        print(f"token probe: skipped: hashicorp/aws {version} has no replication resources (>= 6.25; `make provider`)")
        return 0
    with tempfile.TemporaryDirectory(prefix="kit-token-probe-") as tmp:
        workdir = (args.workdir or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "terraform.rc").write_text(cli_config(mirror, workdir / "plugin-cache"))
        (workdir / "plugin-cache").mkdir(exist_ok=True)
        t0 = time.monotonic()
        with Emulator(log=workdir / "emulator.log") as emu:
            tf = Terraform(binary, {**tf_env(workdir / "terraform.rc"), **proxy_env(emu.url)})
            steps = Probe(tf, workdir, emu, version).run()
        ok = all(s.ok for s in steps)
        print(f"token probe: hashicorp/aws {version}: {sum(s.ok for s in steps)}/{len(steps)} as expected "
              f"in {time.monotonic() - t0:.0f} s")  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps({"provider": version, "ok": ok, "steps": [asdict(s) for s in steps]},
                                            indent=2) + "\n")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
