"""`make e2e`: apply every stack of an example with the real `terraform` binary and the real provider to the local AWS
stand-in, prove the plan after apply is empty and the destroy protection holds, then run the kit's tools on what
Terraform created.

For each configuration (default: the seed example; `make e2e-all` runs the seed, then its failover topology on top of
it, then the multi-account example and its failover topology on top of that):

  1. the emulator (`emulator.process.Emulator`) on loopback, seeded as the configuration's organization: the
     management account, the OUs of `[protection.organization]` under their own ids, every account of the
     configuration with an access key of its own (cross-account ARNs are the configuration's, not moto's default);
  2. the production synth (the same `s3tables_kit.infra.app` the user's `cdktf synth` runs), then a localized copy of
     each stack (`harness/e2e/standins.py`: endpoints, provider version, stand-ins; each change listed);
  3. `terraform init` + `plan -out` + `apply` of that plan, each stack in dependency order (replica stacks, source,
     recovery, organization), the stacks reading each other through the synthesized remote state (local files, or the
     s3 backend on the emulator); the saved plan (`terraform show -json`) must destroy or replace no resource that
     `prevent_destroy` guards (before or after), and a plan that imports (an adopting stack) must pass the adoption
     gate (`s3tables_kit.infra.adoptgate`) before it is applied. A first apply into an empty state without imports can
     only create: one `apply -json`, its planned changes read from the machine-readable output;
  4. `terraform plan -detailed-exitcode` of every stack: 0 (no changes) is the pass mark; once every stack passed
     (a normal topology): the second deploy, a non-protective configuration change applied (it changes at least one
     resource; no locked change; the plan after it empty), and a locked change refused before apply by
     `s3tables_kit.infra.lockcheck` and by the stand-in's authorization if applied anyway (harness/e2e/second.py);
  5. `terraform output -json` of every stack -> `outputs.json` in the format `npx cdktf output` writes; a writer's
     commit (real Iceberg data, pyiceberg) to every table of the source, the replication service simulated (the
     emulator's replicate hook), then harden, status and audit run on those outputs, then the recovery plan and the
     failover plan (dry runs);
  6. `terraform plan -destroy` of each stack must fail on `prevent_destroy` for protected resources only
     (infra/lifecycle.py): the first of each dependency chain, or with `--all`/`--every-destroy-round` every one by
     its own flag; and pass with the `KIT_ALLOW_DESTROY=1` synth of the same stack (nothing is destroyed; in one
     round for the example's first protected stack only);
  7. one table (stack, resources, stand-ins, seconds, plan after apply, destroy check) printed, and JSON written.

A failover topology (`[failover] promoted_bucket`; examples/failover/<name>.toml) is tested the way it happens: on the
emulator and in the working directories (Terraform state) of its normal topology (examples/<name>.toml), once that
has passed, the replica is promoted by the real failover tool (`s3tables-kit failover --confirm`, as break-glass,
as docs/failover.md says), then steps 2-7 run for the failover topology over the same state: its plan may add and
update, and must destroy or replace nothing protected; the source stack (the failed Region) is left as it is. Its
tools run on the failover outputs: the writers commit to the promoted source, which replicates to its destinations;
recovery plans from the replica of the new source it reads, and the failover dry run plans the promotion of that
replica (a failover of the promoted source).

Exit 0 when every check passes, 1 otherwise, 2 when the toolchain is missing (under CI=true a missing toolchain fails).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.e2e.plans import (
    chains_of,
    managed_count,
    plan_actions,
    planned_summary,
    stream_actions,
    stream_errors,
    transition_problems,
)
from harness.e2e.second import LOCK_REFUSAL, SECOND_DEPLOY, LaterDeploys, timed
from harness.e2e.stackio import client, protected_addresses, synth_config, write_stack
from harness.e2e.standins import Credentials, Localized, Target, localize, native_rows
from harness.e2e.terraform import (
    E2eStackResult,
    E2eToolchain,
    Terraform,
    ToolResult,
    _tail,
    cli_config,
    cpu_summary,
    proxy_env,
    table,
    toolchain,
)
from s3tables_kit.infra.adoptgate import AdoptionIntent, applies_to, gate
from s3tables_kit.infra.build_state import keyed_dir, terraform_inputs
from s3tables_kit.infra.provider_cache import VERIFIED_MARK, current_mirror
from s3tables_kit.infra.validate import (
    Json,
    checked_with,
    find_mirror,
    find_terraform,
    mirror_origin,
    mirror_providers,
    tf_env,
)
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.paths import ROOT

EXAMPLES = ROOT / "examples"
WORKDIR = ROOT / ".build" / "e2e"
SEED_CONFIGS = (EXAMPLES / "seed.toml",)
# A failover topology runs after (and on top of) its normal topology: seed, failover seed, multi-account, failover
# multi-account; then the estate (`[[sources]]`: three sources, a fan-in vault) and the one-account lake.
ALL_CONFIGS = tuple(EXAMPLES / p for p in ("seed.toml", "failover/seed.toml", "multi-account.toml",
                                           "failover/multi-account.toml", "estate.toml", "lake.toml"))  # fmt: skip
# The lake's stacks repeat the estate's nine times: one destroy round under `--all` (the others prove every round).
ONE_DESTROY_ROUND = frozenset({(EXAMPLES / "lake.toml").resolve()})
# The README's order for a first deploy; the manifest's dependencies decide, this breaks ties.
ORDER_HINT = ("replica-", "source", "failover", "recovery", "organization")
# The destroy check needs no refresh: prevent_destroy is decided on the configuration and the state.
DESTROY_PLAN = ["plan", "-destroy", "-refresh=false", "-input=false", "-no-color", "-lock=false"]
TOOLS = ("harden", "status", "audit", "recover --dry-run", "failover --dry-run")
PROMOTION = "failover --confirm"  # before a failover topology's stacks: the promotion its deploy follows
WRITER = "writer commit"  # before the tools: a writer's commit to every source table (jobs/failover/writer.py)
# pyarrow's S3 uploads (pyiceberg writes) with trailing checksums are stored empty by moto 5.2.5: against the emulator
# the SDK computes checksums only when required (tests/failover_world.py, harness/drills/seed.py). Not needed on AWS.
EMULATOR_WRITER_ENV = {"AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED"}
PROTECTED_ERROR = re.compile(r"Resource\s+(\S+)\s+has\s+lifecycle\.prevent_destroy\s+set")


def _say(text: str) -> None:
    print(text, flush=True)


# ---------------------------------------------------------------- the emulator's world ----


def ran_as_expected(ran: Sequence[str], expected: Sequence[str]) -> bool:
    """The tools ran in the expected order; the writer once or more in a row (once per source of an estate)."""
    once = [name for i, name in enumerate(ran) if not (name == WRITER and i and ran[i - 1] == WRITER)]
    return once == list(expected)


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
    workload roles the guardrail is attached to, in every replica account. Idempotent (the emulator keeps one key per
    account): a failover topology seeds what it adds to its normal topology's world."""
    keys = emu.control.seed_accounts(accounts)
    org = cfg.protection.organization
    if org is not None:
        ous = {t: list(org.ou_accounts.get(t, ())) for t in org.targets if t.startswith(("ou-", "r-"))}
        direct = [t for t in org.targets if t.isdigit()]
        emu.control.seed_organization(org.management_account_id, ous, direct)
    creds = {a: Credentials(k["accessKeyId"], k["secretAccessKey"]) for a, k in keys.items()}
    roles = sorted((account, name) for account, name in prerequisite_roles(cfg) if account in creds)
    iam = {account: client(emu, creds[account], "iam", "us-east-1") for account in sorted({a for a, _ in roles})}
    for account, name in roles:
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "sts:AssumeRole"}
        ]}  # fmt: skip
        with contextlib.suppress(iam[account].exceptions.EntityAlreadyExistsException):
            iam[account].create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    return creds


def prerequisite_roles(cfg: KitConfig) -> set[tuple[str, str]]:
    """(account, role name) of the roles the configuration names and a first deploy expects to exist: deploy roles,
    break-glass roles, failover writers, and the workload roles the guardrail is attached to in replica accounts."""
    arns = [s.deploy_role_arn for s in (*cfg.sources, *cfg.replicas) if s.deploy_role_arn]
    org = cfg.protection.organization
    if org is not None and org.deploy_role_arn:
        arns.append(org.deploy_role_arn)
    arns += list(cfg.protection.break_glass_principals)
    if cfg.failover is not None:
        arns += list(cfg.failover.writer_roles)
        arns += [b.deploy_role_arn for b in cfg.failover.new_buckets if b.deploy_role_arn]
    out = {(a.split(":")[4], a.split(":role/", 1)[1].split("/")[-1]) for a in arns if ":role/" in a}
    out |= {(r.account_id, name) for r in cfg.replicas for name in cfg.protection.guardrail_attach_roles}
    out |= {(a, name) for a in cfg.pipeline_guardrail_accounts for name in cfg.protection.source_guardrail_attach_roles}
    return out


def create_state_bucket(emu: Emulator, docs: Iterable[Json], creds: dict[str, Credentials]) -> None:
    """The s3 backend's bucket, which a team creates once before its first deploy (README, "First deploy")."""
    for doc in docs:
        conf = doc.get("terraform", {}).get("backend", {}).get("s3")
        if not conf:
            continue
        bucket = conf["bucket"]
        account = next((a for a in creds if a in bucket), next(iter(creds)))
        s3 = client(emu, creds[account], "s3", conf["region"])
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
    docs = synth_config(load_config(config), outdir, allow_destroy=allow_destroy)
    return docs, json.loads((outdir / "manifest.json").read_text())


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


# ---------------------------------------------------------------- one example ----


class ExampleRun:
    """One configuration applied to the emulator. With `base` (a failover topology): after the promotion, over the
    working directories, Terraform state and emulator of `base`, its normal topology."""

    def __init__(
        self, config: Path, workdir: Path, tf: Terraform, emu: Emulator, chain: E2eToolchain,
        base: ExampleRun | None = None, every_destroy_round: bool = True,
    ) -> None:  # fmt: skip
        self.config = config
        self.every_destroy_round = every_destroy_round
        self.allowed_on: str | None = None  # the stack whose KIT_ALLOW_DESTROY=1 destroy plan was made (one round)
        self.name = example_name(config)
        self.base = base
        self.dir: Path = base.dir if base is not None else workdir / self.name
        self.synth_dir = self.dir / ("synth" if base is None else "synth-failover")
        self.outputs_path = self.dir / ("outputs.json" if base is None else "outputs-failover.json")
        self.tf = tf
        self.emu = emu
        self.toolchain = chain
        self.stacks: list[E2eStackResult] = []
        self.tools: list[ToolResult] = []
        self.creds: dict[str, Credentials] = {}
        self.applied: dict[str, Localized] = {}
        self._s3tables: dict[tuple[str, str], Any] = {}

    @functools.cached_property
    def intent(self) -> AdoptionIntent:
        """The adopted buckets, whose first apply waits for the gate (read late: discovery may write the file)."""
        return AdoptionIntent.of(load_config(self.config))

    @property
    def expected_tools(self) -> tuple[str, ...]:
        return (PROMOTION, WRITER, *TOOLS) if self.base is not None else (SECOND_DEPLOY, LOCK_REFUSAL, WRITER, *TOOLS)

    @property
    def ok(self) -> bool:
        return (
            bool(self.stacks)
            and all(s.ok for s in self.stacks)
            and ran_as_expected([t.tool for t in self.tools], self.expected_tools)
            and all(t.ok for t in self.tools)
        )

    def localized(self, docs: dict[str, Json], creds: dict[str, Credentials]) -> dict[str, Localized]:
        target = Target(self.emu.url, creds, sys.executable, str(ROOT))
        chain = self.toolchain
        return {
            name: localize(doc, target, chain.local, chain.schemas, set(chain.local_types))
            for name, doc in docs.items()
        }

    def run(self) -> None:
        if self.base is None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir.mkdir(parents=True)
        cfg = load_config(self.config)
        on = f", over the state of {self.base.name}" if self.base is not None else ""
        _say(f"\n== {self.name}: synth ({os.path.relpath(self.config, ROOT)}){on}")  # a config may be anywhere
        docs, manifest = synth(self.config, self.synth_dir, allow_destroy=False)
        loose, _ = synth(
            self.config, self.synth_dir.with_name(f"{self.synth_dir.name}-allow-destroy"), allow_destroy=True
        )
        creds = self.creds = seed_world(self.emu, cfg, accounts_of(cfg, docs.values()))
        create_state_bucket(self.emu, docs.values(), creds)
        applied = self.applied = self.localized(docs, creds)
        unprotected = self.localized(loose, creds)
        if self.base is not None:
            if not self.promote(cfg):
                return
            left = sorted(set(self.base.applied) - set(applied))
            _say(f"   not planned (the failed Region's; state left as it is): {', '.join(left) or 'none'}")
        for stack in stack_order(manifest):
            result = E2eStackResult(self.name, stack, provider=checked_with(docs[stack], self.toolchain.local))
            self.stacks.append(result)
            loc = applied[stack]
            result.standins = [f"{c.address}: {c.how} ({c.detail})" for c in loc.standins]
            result.native = len(native_rows(docs[stack], loc))
            # Same depth as cdktf.out/stacks/<stack>: the synthesized relative state paths resolve inside self.dir.
            stack_dir = self.dir / "apply" / "stacks" / stack
            write_stack(stack_dir, loc.document)
            assets = self.synth_dir / "stacks" / stack / "assets"  # the Lambda and job packages, by relative path
            if assets.is_dir():
                shutil.copytree(assets, stack_dir / "assets", dirs_exist_ok=True)
            before = self.base.applied.get(stack) if self.base is not None else None
            try:
                self.apply(stack, stack_dir, loc.document, before.document if before else None, result)
                self.plan_again(stack_dir, result)
                self.destroy_check(stack, stack_dir, loc, unprotected[stack], result)
            except (RuntimeError, subprocess.TimeoutExpired) as err:
                result.error = str(err)
                _say(f"   {stack}: FAILED\n{_indent(str(err))}")
                break
        if all(r.ok for r in self.stacks):
            if self.base is None:
                self.later_deploys(cfg)
            self.run_tools(cfg)

    def later_deploys(self, cfg: KitConfig) -> None:
        """The second deploy (a non-protective change) and a locked change refused (harness/e2e/second.py)."""
        later = LaterDeploys(self, cfg)
        for name, step in ((SECOND_DEPLOY, later.second_deploy), (LOCK_REFUSAL, later.locked_change)):
            _say(f"-- {self.name}: {name}")
            code, text, seconds = timed(step)
            self.tools.append(ToolResult(self.name, name, code, seconds, _tail(text, 15)))
            _say(f"   {name}: exit {code} ({seconds} s)\n{_indent(text)}")

    def apply(self, stack: str, stack_dir: Path, doc: Json, before: Json | None, result: E2eStackResult) -> None:
        """init, plan to a file, check that plan, apply exactly it. `before`: the document applied last in this
        directory (the normal topology's, under a failover topology)."""
        t0 = time.monotonic()
        new_state = before is None and not doc.get("import")
        how = "init + apply (a new state: it can only create)" if new_state else "init + plan + apply"
        _say(f"-- {self.name}/{stack}: terraform {how}" + (" (over the applied state)" if before is not None else ""))
        self.tf.checked(["init", "-input=false", "-no-color"], stack_dir)
        if new_state:
            self.apply_new(stack_dir, doc, result)
            result.apply_s = round(time.monotonic() - t0, 1)
            return
        self.tf.checked(["plan", "-out=apply.tfplan", "-input=false", "-no-color"], stack_dir, log="plan-to-apply")
        plan = json.loads(self.tf.checked(["show", "-json", "apply.tfplan"], stack_dir, log="show-plan").stdout)
        check_transition(
            plan_actions(plan), protected_addresses(doc) | protected_addresses(before or {}), result, "plan"
        )
        if applies_to(plan, self.intent, first_apply=before is None):
            verdict = gate(plan, self.intent, stack)
            _say(_indent(verdict.summary()))
            if not verdict.passed:
                result.transition_check = f"FAILED: adopt-gate refused {len(verdict.refused)} change(s)"
                raise RuntimeError(verdict.summary())
        self.tf.checked(["apply", "-input=false", "-no-color", "apply.tfplan"], stack_dir)
        result.apply_s = round(time.monotonic() - t0, 1)
        result.resources = managed_count(plan)

    def apply_new(self, stack_dir: Path, doc: Json, result: E2eStackResult) -> None:
        """A stack's first apply into an empty state, without an adoption: one `apply -json`, whose planned changes
        are read from its machine-readable output (a saved plan, its `show` and its apply would start the 700 MB
        provider twice more to find only creates)."""
        proc = self.tf.run(["apply", "-auto-approve", "-json", "-input=false"], stack_dir, log="apply")
        lines = proc.stdout.splitlines()
        if proc.returncode != 0:
            detail = "\n".join(stream_errors(lines)[-10:]) or _tail(proc.stdout + proc.stderr)
            raise RuntimeError(f"terraform apply failed in {stack_dir}:\n{detail}")
        actions = stream_actions(lines)
        result.resources = sum(1 for a in actions.values() if a == ["create"])
        check_transition(actions, protected_addresses(doc), result, "applied")

    def plan_again(self, stack_dir: Path, result: E2eStackResult) -> None:
        proc = self.tf.run(["plan", "-detailed-exitcode", "-input=false", "-no-color", "-lock=false"], stack_dir)
        result.plan_after_apply = {0: "empty", 2: "changes"}.get(proc.returncode, "error")
        _say(f"   plan after apply: {result.plan_after_apply}")
        if proc.returncode != 0:
            raise RuntimeError(f"plan after apply is not empty (exit {proc.returncode}):\n{_plan_summary(proc.stdout)}")

    def destroy_check(
        self, stack: str, stack_dir: Path, loc: Localized, loose: Localized, result: E2eStackResult
    ) -> None:
        """`plan -destroy` must fail on `prevent_destroy`, refusing protected resources only, and pass with the
        KIT_ALLOW_DESTROY=1 synth of the same stack.

        Terraform stops walking a branch of the destroy graph at the first refused resource, so one plan names only
        the protected resources nothing protected depends on. With `every_destroy_round` (`make e2e-all`, or
        `--every-destroy-round`): rounds, the refused ones lifted (in a scratch copy) and the plan made again, until
        every protected one was refused (or a plan passes), each counted only when its own prevent_destroy refused it.
        Without (CI's `make e2e`): the first round, whose refusals are the first protected resource of each chain;
        the flag on the others is the same configuration attribute, checked in the synthesized documents."""
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
                if want <= refused or not self.every_destroy_round:  # every one lifted: the allowed plan below
                    break
            # The KIT_ALLOW_DESTROY=1 synth of the same stack, against the same state (same providers and backend:
            # the initialised directory serves): the destroy plan goes through. One round (CI) plans it for the
            # example's first protected stack only: the flag is the same attribute on every stack (synth tests).
            allowed: subprocess.CompletedProcess[str] | None = None
            if self.every_destroy_round or self.allowed_on is None:
                write_stack(stack_dir, loose.document)
                allowed = self.tf.run(DESTROY_PLAN, stack_dir)
                self.allowed_on = stack
        finally:
            write_stack(stack_dir, loc.document)
        result.destroy_refused = sorted(refused)
        missing, extra = sorted(want - refused), sorted(refused - want)
        if extra or (missing and self.every_destroy_round) or (want and not refused):
            problems.append(f"refused {len(refused)} of {len(want)} protected (missing {missing}, unexpected {extra})")
        if allowed is not None and allowed.returncode != 0:
            problems.append(f"KIT_ALLOW_DESTROY=1 plan -destroy failed: {_tail(allowed.stdout + allowed.stderr, 8)}")
        result.destroy_check = "ok" if not problems else "FAILED: " + "; ".join(problems)
        depth = "" if self.every_destroy_round or refused == want else " (the first of each chain: one round)"
        flag = (
            f"planned on {self.allowed_on}" if allowed is None else "planned" if allowed.returncode == 0 else "FAILED"
        )
        _say(f"   plan -destroy: {len(refused)} of {len(want)} protected resources refused{depth}; with "
             f"KIT_ALLOW_DESTROY=1: {flag}")  # fmt: skip
        if problems:
            raise RuntimeError(result.destroy_check)

    # ---------------------------------------------------------------- the tools on the deployed state ----

    def outputs(self) -> Path:
        doc: Json = {}
        for r in self.stacks:
            stack_dir = self.dir / "apply" / "stacks" / r.stack
            raw = json.loads(self.tf.checked(["output", "-json"], stack_dir).stdout or "{}")
            doc[r.stack] = {k: v["value"] for k, v in raw.items() if not k.startswith("cross-stack-output-")}
        self.outputs_path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return self.outputs_path

    def promote(self, cfg: KitConfig) -> bool:
        """The promotion a failover topology's deploy follows, as the on-call engineer runs it (docs/failover.md):
        the real failover tool, as break-glass of the promoted bucket's account, with the normal topology's
        configuration and outputs. True when it promoted every table."""
        from s3tables_kit.topology.outputs import load_outputs

        bucket = cfg.kind.promoted_bucket
        assert self.base is not None and bucket is not None
        replica = next(r for r in load_outputs(self.base.outputs_path).replicas if r.table_bucket_name == bucket)
        _say(f"-- {self.name}: promote {bucket} (s3tables-kit failover --confirm, break-glass) on {self.base.name}")
        self.tool(
            PROMOTION,
            ["-m", "s3tables_kit.jobs.failover", "--config", str(self.base.config),
             "--outputs", str(self.base.outputs_path), "--endpoint-url", self.emu.url,
             *self.break_glass_roles(cfg, replica.account_id),
             "--replica-bucket", bucket, "--confirm", bucket, "--report", str(self.dir / "reports" / "failover")],
        )  # fmt: skip
        return self.tools[-1].ok

    def run_tools(self, cfg: KitConfig) -> None:
        from s3tables_kit.topology.outputs import load_outputs

        outputs_path = self.outputs()
        outs = load_outputs(outputs_path)
        # A writer's commit to each table of the source (the first creates its metadata; after a failover: the promoted
        # source), then the replication service (the emulator's replicate hook) copies them to every destination.
        names = ", ".join(s.table_bucket_name for s in outs.sources)
        _say(f"-- {self.name}: outputs.json from terraform output; a writer's commit to every table of "
             f"{names}; replication simulated")  # fmt: skip
        for src in outs.sources:  # each source; one with no table (other services make them) gets one, as they do
            if not self.source_tables(src.table_bucket_arn, src.account_id):
                api, arn = self.s3tables(src.account_id, src.region), src.table_bucket_arn
                api.create_namespace(tableBucketARN=arn, namespace=["e2e"])
                api.create_table(tableBucketARN=arn, namespace="e2e", name="events", format="ICEBERG")
            self.tool(
                WRITER,
                ["-m", "s3tables_kit.jobs.failover.writer", "--bucket-arn", src.table_bucket_arn,
                 "--endpoint-url", self.emu.url],
                account=src.account_id, region=src.region,
            )  # fmt: skip
            self.emu.control.replicate(source_bucket_arn=src.table_bucket_arn)
        roles = [f"--role-arn={a}={self.operator_role(a)}" for a in accounts_of(cfg, [])]
        common = ["--outputs", str(outputs_path), "--endpoint-url", self.emu.url]
        self.tool("harden", ["-m", "s3tables_kit.jobs.ops.harden", *common, *roles])
        self.tool("status", ["-m", "s3tables_kit.jobs.ops.status", *common, *roles])
        self.tool("audit", ["-m", "s3tables_kit.jobs.ops.audit", "--config", str(self.config), *common, *roles])
        # Recovery reads the replica as the recovery account (the job's own credentials, as on EMR). In a failover
        # topology that replica is a replica of the promoted source.
        rec = outs.recovery
        table = next(iter(self.replica_tables(outs.recovery_replica.table_bucket_arn, rec.account_id)), None)
        if table is None:
            self.tools.append(ToolResult(self.name, "recover --dry-run", 1, 0.0, "no replica table to plan"))
        else:
            self.tool(
                "recover --dry-run",
                ["-m", "s3tables_kit.jobs.recover", "--outputs", str(outputs_path), "--endpoint", self.emu.url,
                 "--table", table, "--dry-run"],
                account=rec.account_id, region=rec.region,
            )  # fmt: skip
        # The failover plan of the replica recovery reads (a dry run: nothing is promoted), as the on-call engineer runs
        # it: as break-glass in the replica's account (the plan refuses any other caller). In a failover topology: the
        # promotion of a replica of the promoted source (a new bucket of [failover], or a remaining replica).
        # An estate's recovery replica may be a fan-in vault, which is never promoted: then the first replica of one
        # source is planned instead.
        replica = outs.recovery_replica
        if len(outs.sources_into(replica)) > 1:
            replica = next((r for r in outs.replicas if len(outs.sources_into(r)) == 1), replica)
        self.tool(
            "failover --dry-run",
            ["-m", "s3tables_kit.jobs.failover", "--config", str(self.config), *common,
             *self.break_glass_roles(cfg, replica.account_id), "--replica-bucket", replica.table_bucket_name,
             "--dry-run"],
        )  # fmt: skip

    def break_glass_roles(self, cfg: KitConfig, account: str) -> list[str]:
        """`--role-arn` of every account: the operator's, but break-glass in `account`."""
        roles = [f"--role-arn={a}={self.operator_role(a)}" for a in accounts_of(cfg, []) if a != account]
        return [*roles, f"--role-arn={account}={break_glass_of(cfg, account)}"]

    def replica_tables(self, bucket_arn: str, account: str) -> list[str]:
        return sorted(f"{ns}.{name}" for ns, names in self.source_tables(bucket_arn, account).items() for name in names)

    def source_tables(self, bucket_arn: str, account: str) -> dict[str, list[str]]:
        """{namespace: [table names]} of a table bucket, read as `account`."""
        out: dict[str, list[str]] = {}
        for t in self.s3tables(account, bucket_arn.split(":")[3]).list_tables(tableBucketARN=bucket_arn)["tables"]:
            out.setdefault(t["namespace"][0], []).append(t["name"])
        return {ns: sorted(names) for ns, names in sorted(out.items())}

    def s3tables(self, account: str, region: str) -> Any:
        """The S3 Tables client of `account` in `region` (one per account and Region for the run)."""
        if (account, region) not in self._s3tables:
            self._s3tables[account, region] = client(self.emu, self.creds[account], "s3tables", region)
        return self._s3tables[account, region]

    @staticmethod
    def operator_role(account: str) -> str:
        # The emulator evaluates no IAM: any role of the account serves as the operator's (AssumeRole -> that account).
        return f"arn:aws:iam::{account}:role/kit-e2e-operator"

    def tool(self, name: str, args: list[str], *, account: str | None = None, region: str | None = None,
             env_of: Mapping[str, str] | None = None) -> str:  # fmt: skip
        """`python <args>` as an operator runs it (its stdout); with `account`, that account's key in the env; with
        `env_of`, that environment (e.g. Terraform's, for a tool that runs it) instead of this process's."""
        t0 = time.monotonic()
        env = {k: v for k, v in (env_of or os.environ).items() if k != "AWS_ENDPOINT_URL"}
        env.update(PYTHONPATH=str(ROOT), MOTO_ALLOW_NONEXISTENT_REGION="true")
        if account is not None:
            env.update(AWS_ACCESS_KEY_ID=self.creds[account].access_key_id,
                       AWS_SECRET_ACCESS_KEY=self.creds[account].secret_access_key)  # fmt: skip
            env.update(AWS_REGION=region or "us-east-1", AWS_DEFAULT_REGION=region or "us-east-1")
        proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=900, check=False)  # fmt: skip
        res = ToolResult(self.name, name, proc.returncode, round(time.monotonic() - t0, 1),
                         _tail(proc.stdout + proc.stderr, 15))  # fmt: skip
        self.tools.append(res)
        _say(f"   {name}: exit {proc.returncode} ({res.seconds} s)")
        if not res.ok:
            _say(_indent(res.tail))
        return proc.stdout


def check_transition(actions: dict[str, list[str]], protected: set[str], result: E2eStackResult, what: str) -> None:
    """Record and print what a plan (or an applied plan) does; raise if it destroys or replaces anything protected."""
    result.planned = planned_summary(actions)
    problems = transition_problems(actions, protected)
    result.transition_check = "ok" if not problems else "FAILED: " + "; ".join(problems)
    _say(f"   {what}: {result.planned}; " + ("nothing protected destroyed or replaced" if not problems else
         result.transition_check))  # fmt: skip
    if problems:
        raise RuntimeError(result.transition_check)


def _indent(text: str) -> str:
    return "\n".join(f"      {line}" for line in text.splitlines())


def _plan_summary(stdout: str) -> str:
    keep = [ln for ln in stdout.splitlines() if ln.strip().startswith(("#", "~", "+", "-", "Plan:"))]
    return "\n".join(keep[:60])


def terraform_setup(workdir: Path) -> tuple[Terraform, Path] | None:
    """Terraform as `make e2e` runs it, its CLI configuration under `workdir` (absolute: terraform runs in other
    directories), no AWS credentials from the environment (each provider block carries its account's key), and the
    children's Iceberg writes set up; with the provider mirror. None without `terraform` or a mirror."""
    binary, mirror = find_terraform(), find_mirror()
    if binary is None or mirror is None:
        return None
    workdir.mkdir(parents=True, exist_ok=True)
    cache = keyed_dir(workdir / "plugin-cache", terraform_inputs(binary, mirror, mirror_providers(mirror)))
    (workdir / "terraform.rc").write_text(cli_config(mirror, cache))
    env = tf_env(workdir / "terraform.rc")
    for k in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(k, None)
    os.environ.update(EMULATOR_WRITER_ENV)  # the writer and the failover tool (children) write Iceberg data
    return Terraform(binary, env), mirror


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "configs", nargs="*", type=Path,
        help="configurations (default: examples/seed.toml); a failover topology runs on top of its normal one",
    )  # fmt: skip
    parser.add_argument(
        "--all", action="store_true", help="both examples, their failover topologies, the estate and the lake"
    )
    parser.add_argument(
        "--every-destroy-round", action="store_true",
        help="the destroy check lifts each refusal and plans again until every protected resource was refused by its "
        "own flag (always with --all; else one round: the first protected resource of each dependency chain)",
    )  # fmt: skip
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    args = parser.parse_args(argv)
    configs = [c.resolve() for c in args.configs] or list(ALL_CONFIGS if args.all else SEED_CONFIGS)
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")

    workdir: Path = args.workdir.resolve()
    found = terraform_setup(workdir)
    if found is None:
        print("e2e: needs `terraform` and a provider filesystem mirror (see `make validate`)", file=sys.stderr)
        return 1 if in_ci else 2
    tf, mirror = found
    chain = toolchain(tf, mirror, workdir)
    _say(f"e2e: terraform {tf.binary}; providers {', '.join(f'{a} {v[0]}' for a, v in chain.local.items())}")
    _say(f"e2e: provider mirror {mirror} ({mirror_origin(mirror)})")

    runs: list[ExampleRun] = []
    t0 = time.monotonic()
    chains = chains_of(configs)
    for configs_on_one_state in chains:
        first = configs_on_one_state[0]
        with Emulator(log=workdir / f"{example_name(first)}-emulator.log") as emu:
            base: ExampleRun | None = None
            tf_here = Terraform(tf.binary, {**tf.env, **proxy_env(emu.url)})
            for config in configs_on_one_state:
                every_round = args.every_destroy_round or (args.all and config.resolve() not in ONE_DESTROY_ROUND)
                run = ExampleRun(config, workdir, tf_here, emu, chain, base=base, every_destroy_round=every_round)
                runs.append(run)
                run.run()
                if not run.ok:
                    break  # a failover topology is applied on top of a normal topology that passed
                base = base or run
    stacks = [s for r in runs for s in r.stacks]
    tools = [t for r in runs for t in r.tools]
    ok = len(runs) == sum(len(c) for c in chains) and all(r.ok for r in runs)
    _say("\n" + "\n".join(table(stacks, tools)))
    report = {
        "ok": ok,
        "seconds": round(time.monotonic() - t0, 1),
        "stacks": [asdict(s) | {"ok": s.ok} for s in stacks],
        "tools": [asdict(t) | {"ok": t.ok} for t in tools],
    }
    (workdir / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    if ok and mirror.resolve() == current_mirror():
        (mirror / VERIFIED_MARK).write_text(f"make e2e passed with this provider: {', '.join(map(str, configs))}\n")
    _say(cpu_summary())
    _say(f"\ne2e: {'PASSED' if ok else 'FAILED'} in {report['seconds']} s; {workdir / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
