"""`make e2e`: apply every stack of an example with the real `terraform` binary and the real provider to the local AWS
stand-in, prove the plan after apply is empty and the destroy protection holds, then run the kit's tools on what
Terraform created.

For each configuration (default: the seed example; `make e2e-all` adds the multi-account example and both failover
topologies):

  1. the emulator (`emulator.process.Emulator`) on loopback, seeded as the configuration's organization: the
     management account, the OUs of `[protection.organization]` under their own ids, every account of the
     configuration with an access key of its own (cross-account ARNs are the configuration's, not moto's default);
  2. the production synth (the same `infra.app` the user's `cdktf synth` runs), then a localized copy of each stack
     (`infra/e2e/standins.py`: endpoints, provider version, stand-ins; each change listed);
  3. `terraform init` + `apply` of each stack in dependency order (replica stacks, source, recovery, organization), the
     stacks reading each other through the synthesized remote state (local files, or the s3 backend on the emulator);
  4. `terraform plan -detailed-exitcode` of every stack: 0 (no changes) is the pass mark;
  5. `terraform output -json` of every stack -> `outputs.json` in the format `npx cdktf output` writes; the replication
     service is simulated (the emulator's replicate hook), then harden, status and audit run on those outputs, then the
     recovery plan and the failover plan (dry runs);
  6. `terraform plan -destroy` of each stack must fail on `prevent_destroy` for exactly the protected resources
     (infra/lifecycle.py), and pass with the `KIT_ALLOW_DESTROY=1` synth of the same stack (nothing is destroyed);
  7. one table (stack, resources, stand-ins, seconds, plan after apply, destroy check) printed, and JSON written.

Exit 0 when every check passes, 1 otherwise, 2 when the toolchain is missing (under CI=true a missing toolchain fails).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from infra.e2e.standins import Credentials, Localized, Target, localize, native_rows
from infra.validate import (
    ROOT,
    Json,
    find_mirror,
    find_terraform,
    mirror_providers,
    provider_schemas,
    tf_env,
)
from topology.config import KitConfig, load_config

EXAMPLES = ROOT / "examples"
WORKDIR = ROOT / ".build" / "e2e"
SEED_CONFIGS = (EXAMPLES / "seed.toml",)
ALL_CONFIGS = (
    EXAMPLES / "seed.toml",
    EXAMPLES / "multi-account.toml",
    EXAMPLES / "failover" / "seed.toml",
    EXAMPLES / "failover" / "multi-account.toml",
)
# The README's order for a first deploy; the manifest's dependencies decide, this breaks ties.
ORDER_HINT = ("replica-", "source", "failover", "recovery", "organization")
# The destroy check needs no refresh: prevent_destroy is decided on the configuration and the state.
DESTROY_PLAN = ["plan", "-destroy", "-refresh=false", "-input=false", "-no-color", "-lock=false"]
TOOLS = ("harden", "status", "audit", "recover --dry-run", "failover --dry-run")
PROTECTED_ERROR = re.compile(r"Resource\s+(\S+)\s+has\s+lifecycle\.prevent_destroy\s+set")


def _say(text: str) -> None:
    print(text, flush=True)


# ---------------------------------------------------------------- results ----


@dataclass
class StackResult:
    example: str
    stack: str
    resources: int = 0  # resource instances in the state after apply
    native: int = 0
    standins: list[str] = field(default_factory=list)  # "<address>: <how> (<detail>)"
    apply_s: float = 0.0
    plan_after_apply: str = "not run"  # "empty" | "changes" | "error" | "not run"
    destroy_refused: list[str] = field(default_factory=list)  # addresses refused by prevent_destroy
    destroy_check: str = "not run"  # "ok" | "FAILED: ..." | "not run"
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.plan_after_apply == "empty" and self.destroy_check == "ok"


@dataclass
class ToolResult:
    example: str
    tool: str
    exit_code: int
    seconds: float
    tail: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


# ---------------------------------------------------------------- terraform ----


@dataclass(frozen=True)
class Terraform:
    binary: Path
    env: dict[str, str]

    def run(self, args: list[str], cwd: Path, *, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        """`terraform <args>` in cwd; its output is also kept in cwd/<command>.log for whoever reads a failure."""
        proc = subprocess.run(
            [str(self.binary), *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout,
            check=False,
        )  # fmt: skip
        name = "-".join(a.lstrip("-") for a in args[:2] if a in ("init", "apply", "plan", "-destroy", "output"))
        (cwd / f"{name or args[0]}.log").write_text(f"$ terraform {' '.join(args)}\n{proc.stdout}{proc.stderr}")
        return proc

    def checked(self, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        proc = self.run(args, cwd)
        if proc.returncode != 0:
            raise RuntimeError(f"terraform {' '.join(args)} failed in {cwd}:\n{_tail(proc.stdout + proc.stderr)}")
        return proc


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def cli_config(mirror: Path, cache: Path) -> str:
    """Providers from the local mirror only (no network), linked from one cache instead of copied per stack."""
    return (
        "# written by `make e2e` (infra/e2e/run.py): providers come from the local filesystem mirror only\n"
        f'plugin_cache_dir = "{cache}"\n'
        "plugin_cache_may_break_dependency_lock_file = true\n"
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n'
        "}\n"
    )


# ---------------------------------------------------------------- the emulator's world ----


def accounts_of(cfg: KitConfig, docs: Iterable[Json]) -> list[str]:
    """Every account the stacks deploy into, the organization's management account and the accounts it covers."""
    found: set[str] = set()
    for doc in docs:
        for blocks in doc.get("provider", {}).values():
            for block in blocks if isinstance(blocks, list) else [blocks]:
                found.update(str(a) for a in block.get("allowed_account_ids") or [])
    org = cfg.protection.organization
    if org is not None:
        found.add(org.management_account_id)
        found.update(org.covered_accounts)
    return sorted(found)


def seed_world(emu: Emulator, cfg: KitConfig, accounts: list[str]) -> dict[str, Credentials]:
    """Accounts, organization, and the roles a first deploy expects to exist already (README prerequisites): the
    workload roles the guardrail is attached to, in every replica account."""
    import boto3

    keys = emu.control.seed_accounts(accounts)
    org = cfg.protection.organization
    if org is not None:
        ous = {t: list(org.ou_accounts.get(t, ())) for t in org.targets if t.startswith(("ou-", "r-"))}
        direct = [t for t in org.targets if t.isdigit()]
        emu.control.seed_organization(org.management_account_id, ous, direct)
    creds = {a: Credentials(k["accessKeyId"], k["secretAccessKey"]) for a, k in keys.items()}
    for account, name in sorted(prerequisite_roles(cfg)):
        if account not in creds:
            continue
        key = creds[account]
        iam = boto3.session.Session(
            aws_access_key_id=key.access_key_id, aws_secret_access_key=key.secret_access_key, region_name="us-east-1"
        ).client("iam", endpoint_url=emu.url)
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "sts:AssumeRole"}
        ]}  # fmt: skip
        with contextlib.suppress(iam.exceptions.EntityAlreadyExistsException):
            iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    return creds


def prerequisite_roles(cfg: KitConfig) -> set[tuple[str, str]]:
    """(account, role name) of the roles the configuration names and a first deploy expects to exist: deploy roles,
    break-glass roles, failover writers, and the workload roles the guardrail is attached to in replica accounts."""
    arns = [s.deploy_role_arn for s in (cfg.source, *cfg.replicas) if s.deploy_role_arn]
    org = cfg.protection.organization
    if org is not None and org.deploy_role_arn:
        arns.append(org.deploy_role_arn)
    arns += list(cfg.protection.break_glass_principals)
    if cfg.failover is not None:
        arns += list(cfg.failover.writer_roles)
        arns += [b.deploy_role_arn for b in cfg.failover.new_buckets if b.deploy_role_arn]
    out = {(a.split(":")[4], a.split(":role/", 1)[1].split("/")[-1]) for a in arns if ":role/" in a}
    out |= {(r.account_id, name) for r in cfg.replicas for name in cfg.protection.guardrail_attach_roles}
    return out


def create_state_bucket(emu: Emulator, docs: Iterable[Json], creds: dict[str, Credentials]) -> None:
    """The s3 backend's bucket, which a team creates once before its first deploy (README, "First deploy")."""
    import boto3

    for doc in docs:
        conf = doc.get("terraform", {}).get("backend", {}).get("s3")
        if not conf:
            continue
        bucket = conf["bucket"]
        account = next((a for a in creds if a in bucket), next(iter(creds)))
        c = creds[account]
        s3 = boto3.session.Session(
            aws_access_key_id=c.access_key_id, aws_secret_access_key=c.secret_access_key, region_name=conf["region"]
        ).client("s3", endpoint_url=emu.url)
        try:
            if conf["region"] == "us-east-1":
                s3.create_bucket(Bucket=bucket)
            else:
                s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": conf["region"]})
            s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass


# ---------------------------------------------------------------- one example ----


def stack_order(manifest: Json) -> list[str]:
    """Stacks in dependency order (a stack after those it reads), ties broken by the README's order."""
    stacks = manifest["stacks"]

    def hint(name: str) -> tuple[int, str]:
        rank = next((i for i, p in enumerate(ORDER_HINT) if name.startswith(p)), len(ORDER_HINT))
        return rank, name

    done: list[str] = []
    pending = sorted(stacks, key=hint)
    while pending:
        ready = [s for s in pending if set(stacks[s].get("dependencies") or []) <= set(done)]
        if not ready:
            raise RuntimeError(f"circular stack dependencies among {pending}")
        done.append(ready[0])
        pending.remove(ready[0])
    return done


def synth(config: Path, outdir: Path, *, allow_destroy: bool) -> tuple[dict[str, Json], Json]:
    from infra.app import build_app

    shutil.rmtree(outdir, ignore_errors=True)
    outdir.parent.mkdir(parents=True, exist_ok=True)
    build_app(load_config(config), outdir=str(outdir), allow_destroy=allow_destroy).synth()
    docs = {d.name: json.loads((d / "cdk.tf.json").read_text()) for d in sorted((outdir / "stacks").iterdir())}
    return docs, json.loads((outdir / "manifest.json").read_text())


def write_stack(stack_dir: Path, doc: Json) -> None:
    stack_dir.mkdir(parents=True, exist_ok=True)
    (stack_dir / "main.tf.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def protected_addresses(doc: Json) -> set[str]:
    """Resources of a (localized) stack that carry `prevent_destroy = true`."""
    out = set()
    for rtype, instances in doc.get("resource", {}).items():
        for name, body in instances.items():
            if (body.get("lifecycle") or {}).get("prevent_destroy") is True:
                out.add(f"{rtype}.{name}")
    return out


def break_glass_of(cfg: KitConfig, account: str) -> str:
    """A break-glass principal of `account` (the configuration names at least one per protected account)."""
    for arn in cfg.protection.break_glass_principals:
        if arn.split(":")[4] == account:
            return arn
    raise ValueError(f"no break-glass principal of account {account} in [protection]")


def lift_protection(doc: Json, addresses: set[str]) -> Json:
    """A copy of `doc` with `prevent_destroy = false` on these resources."""
    out = json.loads(json.dumps(doc))
    for address in addresses:
        rtype, name = address.split(".", 1)
        out["resource"][rtype][name].setdefault("lifecycle", {})["prevent_destroy"] = False
    return out


def example_name(config: Path) -> str:
    return config.stem if config.resolve().parent == EXAMPLES else f"{config.resolve().parent.name}-{config.stem}"


class ExampleRun:
    def __init__(self, config: Path, workdir: Path, tf: Terraform, emu: Emulator, toolchain: dict[str, Any]) -> None:
        self.config = config
        self.name = example_name(config)
        self.dir = workdir / self.name
        self.tf = tf
        self.emu = emu
        self.toolchain = toolchain
        self.stacks: list[StackResult] = []
        self.tools: list[ToolResult] = []
        self.creds: dict[str, Credentials] = {}

    def localized(self, docs: dict[str, Json], creds: dict[str, Credentials]) -> dict[str, Localized]:
        target = Target(self.emu.url, creds, sys.executable, str(ROOT))
        return {
            name: localize(
                doc, target, self.toolchain["local"], self.toolchain["schemas"], self.toolchain["local_types"]
            )
            for name, doc in docs.items()
        }

    def run(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        cfg = load_config(self.config)
        _say(f"\n== {self.name}: synth ({self.config.relative_to(ROOT)})")
        docs, manifest = synth(self.config, self.dir / "synth", allow_destroy=False)
        loose, _ = synth(self.config, self.dir / "synth-allow-destroy", allow_destroy=True)
        creds = self.creds = seed_world(self.emu, cfg, accounts_of(cfg, docs.values()))
        create_state_bucket(self.emu, docs.values(), creds)
        applied = self.localized(docs, creds)
        unprotected = self.localized(loose, creds)
        for stack in stack_order(manifest):
            result = StackResult(self.name, stack)
            self.stacks.append(result)
            loc = applied[stack]
            result.standins = [f"{c.address}: {c.how} ({c.detail})" for c in loc.standins]
            result.native = len(native_rows(docs[stack], loc))
            # Same depth as cdktf.out/stacks/<stack>: the synthesized relative state paths resolve inside self.dir.
            stack_dir = self.dir / "apply" / "stacks" / stack
            write_stack(stack_dir, loc.document)
            assets = self.dir / "synth" / "stacks" / stack / "assets"  # the Lambda and job packages, by relative path
            if assets.is_dir():
                shutil.copytree(assets, stack_dir / "assets", dirs_exist_ok=True)
            try:
                self.apply(stack, stack_dir, result)
                self.plan_again(stack_dir, result)
                self.destroy_check(stack, stack_dir, loc, unprotected[stack], result)
            except (RuntimeError, subprocess.TimeoutExpired) as err:
                result.error = str(err)
                _say(f"   {stack}: FAILED\n{_indent(str(err))}")
                break
        if all(r.ok for r in self.stacks):
            self.run_tools(cfg)

    def apply(self, stack: str, stack_dir: Path, result: StackResult) -> None:
        _say(f"-- {self.name}/{stack}: terraform init + apply")
        t0 = time.monotonic()
        self.tf.checked(["init", "-input=false", "-no-color"], stack_dir)
        applied = self.tf.checked(["apply", "-auto-approve", "-input=false", "-no-color"], stack_dir)
        result.apply_s = round(time.monotonic() - t0, 1)
        m = re.search(r"Apply complete! Resources: (\d+) added", applied.stdout)
        result.resources = int(m.group(1)) if m else 0

    def plan_again(self, stack_dir: Path, result: StackResult) -> None:
        proc = self.tf.run(["plan", "-detailed-exitcode", "-input=false", "-no-color", "-lock=false"], stack_dir)
        result.plan_after_apply = {0: "empty", 2: "changes"}.get(proc.returncode, "error")
        _say(f"   plan after apply: {result.plan_after_apply}")
        if proc.returncode != 0:
            raise RuntimeError(f"plan after apply is not empty (exit {proc.returncode}):\n{_plan_summary(proc.stdout)}")

    def destroy_check(self, stack: str, stack_dir: Path, loc: Localized, loose: Localized, result: StackResult) -> None:
        """`plan -destroy` must fail on `prevent_destroy` for every protected resource, and pass with the
        KIT_ALLOW_DESTROY=1 synth of the same stack.

        Terraform stops walking a branch of the destroy graph at the first refused resource, so one plan names only
        the protected resources nothing protected depends on. Rounds: the refused ones are lifted (in a scratch copy)
        and the plan is made again, until it passes; each resource is counted only when its own prevent_destroy
        refused it."""
        want = protected_addresses(loc.document)
        refused: set[str] = set()
        problems: list[str] = []
        try:
            for _ in range(len(want) + 1):
                write_stack(stack_dir, lift_protection(loc.document, refused))
                proc = self.tf.run(DESTROY_PLAN, stack_dir)
                found = set(PROTECTED_ERROR.findall(proc.stdout + proc.stderr))
                if proc.returncode == 0 or not found - refused:
                    if proc.returncode != 0:
                        problems.append(f"plan -destroy failed otherwise: {_tail(proc.stdout + proc.stderr, 8)}")
                    break
                refused |= found
            # The KIT_ALLOW_DESTROY=1 synth of the same stack, against the same state (same providers and backend:
            # the initialised directory serves): the destroy plan goes through.
            write_stack(stack_dir, loose.document)
            allowed = self.tf.run(DESTROY_PLAN, stack_dir)
        finally:
            write_stack(stack_dir, loc.document)
        result.destroy_refused = sorted(refused)
        if refused != want:
            missing, extra = sorted(want - refused), sorted(refused - want)
            problems.append(f"refused {len(refused)} of {len(want)} protected (missing {missing}, unexpected {extra})")
        if allowed.returncode != 0:
            problems.append(f"KIT_ALLOW_DESTROY=1 plan -destroy failed: {_tail(allowed.stdout + allowed.stderr, 8)}")
        result.destroy_check = "ok" if not problems else "FAILED: " + "; ".join(problems)
        _say(f"   plan -destroy: {len(refused)} of {len(want)} protected resources refused; with KIT_ALLOW_DESTROY=1: "
             f"{'planned' if allowed.returncode == 0 else 'FAILED'}")  # fmt: skip
        if problems:
            raise RuntimeError(result.destroy_check)

    # ---------------------------------------------------------------- the tools on the deployed state ----

    def outputs(self) -> Path:
        doc: Json = {}
        for r in self.stacks:
            stack_dir = self.dir / "apply" / "stacks" / r.stack
            raw = json.loads(self.tf.checked(["output", "-json"], stack_dir).stdout or "{}")
            doc[r.stack] = {k: v["value"] for k, v in raw.items() if not k.startswith("cross-stack-output-")}
        path = self.dir / "outputs.json"
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return path

    def run_tools(self, cfg: KitConfig) -> None:
        from topology.outputs import load_outputs

        outputs_path = self.outputs()
        outs = load_outputs(outputs_path)
        _say(
            f"-- {self.name}: outputs.json from terraform output; a commit to every source table; replication simulated"
        )
        # A writer's first commit to each table Terraform created (tables are created without snapshots), then the
        # replication service (the emulator's replicate hook) copies them to every destination.
        layout = self.source_tables(outs.source.table_bucket_arn, outs.source.account_id)
        if layout:
            self.emu.control.seed(outs.source.table_bucket_arn, layout, commit_ms=int(time.time() * 1000) - 60_000)
        self.emu.control.replicate(source_bucket_arn=outs.source.table_bucket_arn)
        roles = [f"--role-arn={a}={self.operator_role(a)}" for a in accounts_of(cfg, [])]
        common = ["--outputs", str(outputs_path), "--endpoint-url", self.emu.url]
        self.tool("harden", ["-m", "jobs.ops.harden", *common, *roles])
        self.tool("status", ["-m", "jobs.ops.status", *common, *roles])
        self.tool("audit", ["-m", "jobs.ops.audit", "--config", str(self.config), *common, *roles])
        # Recovery reads the replica as the recovery account (the job's own credentials, as on EMR).
        rec = outs.recovery
        table = next(iter(self.replica_tables(outs.recovery_replica.table_bucket_arn, rec.account_id)), None)
        if table is None:
            self.tools.append(ToolResult(self.name, "recover --dry-run", 1, 0.0, "no replica table to plan"))
        else:
            self.tool(
                "recover --dry-run",
                ["-m", "jobs.recover", "--outputs", str(outputs_path), "--endpoint", self.emu.url,
                 "--table", table, "--dry-run"],
                account=rec.account_id, region=rec.region,
            )  # fmt: skip
        # The failover plan of the replica recovery reads (a dry run: nothing is promoted), as the on-call engineer runs
        # it: as break-glass in the replica's account (the plan refuses any other caller).
        replica = outs.recovery_replica
        glass = [f"--role-arn={a}={self.operator_role(a)}" for a in accounts_of(cfg, []) if a != replica.account_id]
        glass.append(f"--role-arn={replica.account_id}={break_glass_of(cfg, replica.account_id)}")
        self.tool(
            "failover --dry-run",
            ["-m", "jobs.failover", "--config", str(self.config), *common, *glass,
             "--replica-bucket", replica.table_bucket_name, "--dry-run"],
        )  # fmt: skip

    def replica_tables(self, bucket_arn: str, account: str) -> list[str]:
        return sorted(f"{ns}.{name}" for ns, names in self.source_tables(bucket_arn, account).items() for name in names)

    def source_tables(self, bucket_arn: str, account: str) -> dict[str, list[str]]:
        """{namespace: [table names]} of a table bucket, read as `account`."""
        import boto3

        key = self.creds[account]
        region = bucket_arn.split(":")[3]
        st = boto3.session.Session(
            aws_access_key_id=key.access_key_id, aws_secret_access_key=key.secret_access_key, region_name=region
        ).client("s3tables", endpoint_url=self.emu.url)
        out: dict[str, list[str]] = {}
        for t in st.list_tables(tableBucketARN=bucket_arn)["tables"]:
            out.setdefault(t["namespace"][0], []).append(t["name"])
        return {ns: sorted(names) for ns, names in sorted(out.items())}

    @staticmethod
    def operator_role(account: str) -> str:
        # The emulator evaluates no IAM: any role of the account serves as the operator's (AssumeRole -> that account).
        return f"arn:aws:iam::{account}:role/kit-e2e-operator"

    def tool(self, name: str, args: list[str], *, account: str | None = None, region: str | None = None) -> None:
        """`python <args>` as an operator runs it; with `account`, that account's key in the environment."""
        t0 = time.monotonic()
        env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
        env.update(PYTHONPATH=str(ROOT), MOTO_ALLOW_NONEXISTENT_REGION="true")
        if account is not None:
            key = self.creds[account]
            env.update(AWS_ACCESS_KEY_ID=key.access_key_id, AWS_SECRET_ACCESS_KEY=key.secret_access_key)
            env.update(AWS_REGION=region or "us-east-1", AWS_DEFAULT_REGION=region or "us-east-1")
        proc = subprocess.run(
            [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
        )
        res = ToolResult(self.name, name, proc.returncode, round(time.monotonic() - t0, 1),
                         _tail(proc.stdout + proc.stderr, 15))  # fmt: skip
        self.tools.append(res)
        _say(f"   {name}: exit {proc.returncode} ({res.seconds} s)")
        if not res.ok:
            _say(_indent(res.tail))


def _indent(text: str) -> str:
    return "\n".join(f"      {line}" for line in text.splitlines())


def _plan_summary(stdout: str) -> str:
    keep = [ln for ln in stdout.splitlines() if ln.strip().startswith(("#", "~", "+", "-", "Plan:"))]
    return "\n".join(keep[:60])


# ---------------------------------------------------------------- main ----


def toolchain(tf: Terraform, mirror: Path, workdir: Path, configs: list[Path]) -> dict[str, Any]:
    local = mirror_providers(mirror)
    needed = {}
    for addr in ("registry.terraform.io/hashicorp/aws",):
        if local.get(addr):
            needed[addr] = local[addr][0]
    schemas = provider_schemas(tf.binary, tf.env, mirror, needed, workdir)
    aws = schemas.get("provider_schemas", {}).get("registry.terraform.io/hashicorp/aws", {})
    return {"local": local, "schemas": schemas, "local_types": set(aws.get("resource_schemas", {}))}


def table(stacks: list[StackResult], tools: list[ToolResult]) -> list[str]:
    head = f"{'stack':<50} {'resources':>9} {'native':>6} {'stand-ins':>9} {'apply s':>7}  {'plan after apply':<16}"
    lines = [f"{head} destroy"]
    for r in stacks:
        lines.append(
            f"{r.example + '/' + r.stack:<50} {r.resources:>9} {r.native:>6} {len(r.standins):>9} {r.apply_s:>7}  "
            f"{r.plan_after_apply:<16} {r.destroy_check if not r.error else 'error'}"
        )
    for t in tools:
        lines.append(f"{t.example + '/' + t.tool:<50} exit {t.exit_code} ({t.seconds} s)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", type=Path, help="configurations (default: examples/seed.toml)")
    parser.add_argument("--all", action="store_true", help="both examples and both failover topologies")
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    args = parser.parse_args(argv)
    configs = [c.resolve() for c in args.configs] or list(ALL_CONFIGS if args.all else SEED_CONFIGS)
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")

    binary, mirror = find_terraform(), find_mirror()
    if binary is None or mirror is None:
        print("e2e: needs `terraform` and a provider filesystem mirror (see `make validate`)", file=sys.stderr)
        return 1 if in_ci else 2
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    cache = workdir / "plugin-cache"
    cache.mkdir(exist_ok=True)
    (workdir / "terraform.rc").write_text(cli_config(mirror, cache))
    env = tf_env(workdir / "terraform.rc")
    env.pop("AWS_ENDPOINT_URL", None)
    for k in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(k, None)  # each provider block carries its account's key: nothing may come from the environment
    tf = Terraform(binary, env)
    chain = toolchain(tf, mirror, workdir, configs)
    _say(f"e2e: terraform {binary}; providers {', '.join(f'{a} {v[0]}' for a, v in chain['local'].items())}")

    runs: list[ExampleRun] = []
    t0 = time.monotonic()
    for config in configs:
        with Emulator(log=workdir / f"{example_name(config)}-emulator.log") as emu:
            run = ExampleRun(config, workdir, tf, emu, chain)
            runs.append(run)
            run.run()
    stacks = [s for r in runs for s in r.stacks]
    tools = [t for r in runs for t in r.tools]
    ok = bool(stacks) and all(s.ok for s in stacks) and all(t.ok for t in tools)
    ok = ok and all(len(r.tools) == len(TOOLS) for r in runs)
    _say("\n" + "\n".join(table(stacks, tools)))
    report = {
        "ok": ok,
        "seconds": round(time.monotonic() - t0, 1),
        "stacks": [asdict(s) | {"ok": s.ok} for s in stacks],
        "tools": [asdict(t) | {"ok": t.ok} for t in tools],
    }
    (workdir / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    _say(f"\ne2e: {'PASSED' if ok else 'FAILED'} in {report['seconds']} s; {workdir / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
