"""`make e2e-adopt ARGS="--world one"`: the second brownfield world (harness/e2e/brownfield_one.py: one account,
buckets in two Regions, an existing bucket-level replication into a bucket holding its replicas, a KMS bucket, a
table fed by `PutRows`) adopted end to end on the local stand-in with the real Terraform, by the commands of
docs/adoption.md's runbook as the page gives them (read from it by harness/e2e/runbook.py, in its order):

1. the world built; the runbook's `discover` line (with this world's second Region, account and endpoint): the
   destination proposed as an adopted replica of its source (never a source), the source's configuration to take over
   (`existing_destinations`), the `PutRows`-fed table reported; the proposal completed as the engineer completes it;
2. the runbook's `policies` line: every adopted bucket's policy rendered for review from the proposal;
3. its `synth` (the e2e's synth of the same kit.toml), its stacks checked against the runbook's names and order, then
   for each stack in that order the loop's lines: `init`, `plan -out=tfplan`, `show -json tfplan > plan.json`,
   `s3tables-kit adopt-gate --plan-json plan.json --config ...`, `apply tfplan`; each applied stack re-planned empty,
   nothing protected destroyed or replaced, the destroy check; then the second deploy and the locked change;
4. at the source stack that imports the existing configuration, the takeover (`take_over_replication`): the gate
   refuses the variant of the plan that drops the existing destination (exit 2); with the provider the kit pins it
   refuses the plan itself too, only for the version token the provider does not read at the import (#46675), so
   the runbook's way out follows: the owners' configuration deleted with its token by break-glass,
   `existing_destinations` removed from kit.toml (the destination stays an adopted replica), the stack synthesized
   again and the loop's lines run again for it: the kit's configuration, the destination kept;
5. the runbook's `outputs` (by `terraform output`, as the e2e writes them) and `status --backfill` lines: 1, then 0
   once replicated; the existing destination kept (the kit's configuration names it; its replicas from before the
   kit stay and receive the next commit); rows sent through `PutRows` after the adoption reach the table's replica;
   the tools of `make e2e`.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from emulator.process import Emulator
from harness.e2e import brownfield_one as world
from harness.e2e import runbook
from harness.e2e.adopt import COMPLETED, DISCOVER, PENDING, AdoptRun, _indent, completed_proposal, expect_exit
from harness.e2e.plans import managed_count, plan_actions
from harness.e2e.run import TOOLS, WRITER, ExampleRun, check_transition, stack_order, synth
from harness.e2e.second import LOCK_REFUSAL, SECOND_DEPLOY
from harness.e2e.stackio import protected_addresses, write_stack
from harness.e2e.standins import STANDIN_TYPE, Credentials, Localized
from harness.e2e.terraform import E2eStackResult, E2eToolchain, Terraform, ToolResult
from s3tables_kit.infra.validate import Json
from s3tables_kit.topology.config import KitConfig, load_config

BUILT, RUNBOOK = "one-account lake", "runbook read (docs/adoption.md)"
POLICIES, STACKS = "policies rendered for review", "stacks in the runbook's order"
TAKEOVER, DROP = "gate: the takeover's plan", "gate refuses the dropped destination"
WAY_OUT, KEPT, STREAMED = "way out (#46675)", "existing destination kept", "PutRows rows replicated"
TOKEN_GAP = "#46675"  # the one refusal the pinned provider causes (infra/adoptgate.py's reason names the issue)
REPLICATION = "aws_s3tables_table_bucket_replication"
STANDIN_PREFIX = f"kit_e2e__{REPLICATION}__"  # harness/e2e/standins.py's name of its API stand-in
# Terraform's flags for a run without a terminal, after the runbook's subcommand.
UNATTENDED = {"init": ["-input=false", "-no-color"], "plan": ["-input=false", "-no-color"],
              "show": ["-no-color"], "apply": ["-input=false", "-no-color"]}  # fmt: skip


class OneAccountRun(AdoptRun):
    """The one-account lake discovered and adopted by the runbook's lines, its replication's takeover gated, then
    checked."""

    def __init__(self, workdir: Path, tf: Terraform, emu: Emulator, chain: E2eToolchain) -> None:
        super().__init__(workdir, tf, emu, chain)
        self.proposal = workdir / "adopt-one-discover"
        self.config = self.proposal / "kit.toml"
        self.name, self.dir = "adopt-one", workdir / "adopt-one"
        self.synth_dir, self.outputs_path = self.dir / "synth", self.dir / "outputs.json"
        self.review = workdir / "adopt-one-review"
        self.one = world.OneAccountLake()
        self.lines: list[runbook.Line] = []
        self.took_over = False
        self.replaced: dict[str, tuple[Localized, Localized]] = {}  # stacks applied from the way out's kit.toml

    @property
    def expected_tools(self) -> tuple[str, ...]:
        return (RUNBOOK, BUILT, DISCOVER, POLICIES, STACKS, DROP, TAKEOVER, WAY_OUT, SECOND_DEPLOY, LOCK_REFUSAL,
                PENDING, COMPLETED, KEPT, STREAMED, WRITER, *TOOLS)  # fmt: skip

    @property
    def values(self) -> dict[str, str]:
        """The runbook's example paths and Regions, as this run has them."""
        regions = {"eu-west-1": world.REGION, "eu-central-1": world.DR_REGION}
        return runbook.example_values(self.proposal, self.review, self.outputs_path, regions)

    def tool(self, name: str, args: list[str], *, account: str | None = None, region: str | None = None) -> str:
        return ExampleRun.tool(self, name, args, account=account, region=region)  # no drift expected: audit exits 0

    def run(self) -> None:
        for done in (self.proposal, self.review):
            shutil.rmtree(done, ignore_errors=True)
        if not self.check(RUNBOOK, self.read_runbook):
            return
        keys = self.emu.control.seed_accounts([world.ACCOUNT])
        self.creds = {a: Credentials(k["accessKeyId"], k["secretAccessKey"]) for a, k in keys.items()}
        print(f"\n== {self.name}: the one-account lake (two Regions, a replication of its own, outside Terraform)")
        if not self.check(BUILT, self.build):
            return
        operator = self.operator_role(world.ACCOUNT)
        self.run_line(DISCOVER, "s3tables-kit discover", world.discover_extra(self.emu.url, operator))
        if not self.tools[-1].ok or not self.check(DISCOVER, self.proposal_completed, replace=True):
            return
        self.run_line(POLICIES, "s3tables-kit policies")
        if not self.tools[-1].ok or not self.check(POLICIES, self.policies_rendered, replace=True):
            return
        ExampleRun.run(self)  # the runbook's `synth` (the e2e's, of the same kit.toml), then its loop (`apply`)

    # ---------------------------------------------------------------- the runbook's lines ----

    def read_runbook(self) -> str:
        """docs/adoption.md's runbook read: its steps in the walk's order, and every line that names the configuration
        naming the proposal discovery writes."""
        self.lines = runbook.read()
        problems = runbook.order_problems(self.lines) + runbook.config_problems(self.lines)
        if problems:
            raise AssertionError("; ".join(problems))
        return "\n".join(f"{line.number}: {line}" for line in self.lines)

    def run_line(self, name: str, step: str, extra: Sequence[str] = (), values: dict[str, str] | None = None) -> str:
        """The runbook's `s3tables-kit` line of this step, its example values replaced, with `extra` (what the
        stand-in needs: endpoint, roles), as `python -m s3tables_kit.cli`; recorded as the tool `name`."""
        line = runbook.line_of(self.lines, step)
        args = runbook.localized(line.args, values or self.values)
        return ExampleRun.tool(self, name, ["-m", "s3tables_kit.cli", line.words[1], *args, *extra])

    def build(self) -> str:
        control = self.emu.control
        self.one = world.build(
            self.client_of, self.emu.url, lambda src: control.replicate(source_bucket_arn=src), control.putrows
        )
        return "\n".join([
            *(f"{t}: {len(ids)} snapshots" for t, ids in sorted(self.one.snapshots.items())),
            f"{world.FINANCE}: SSE-KMS ({self.one.kms_key_arn})",
            f"{'.'.join(world.STREAMED[1:])}: {self.one.streamed_rows} rows through PutRows",
            f"{world.ORDERS} -> {world.ORDERS_DR}: {len(self.one.replicated)} replica(s) made",
        ])  # fmt: skip

    def proposal_completed(self) -> str:
        return completed_proposal(self.proposal, world.found_in, world.complete, f"{world.ORDERS_DR}: replica of "
                                  f"{world.ORDERS}")  # fmt: skip

    def policies_rendered(self) -> str:
        """Every adopted bucket's policy rendered for review from the proposal: each source's and each replica's, the
        kit's Deny statements in each, and the owners' statement of `finance-lake` as it is beside them."""
        cfg = load_config(self.config)
        names = [f"source-bucket-policy--source-{s.id}.json" for s in cfg.sources]
        names += [f"replica-bucket-policy--{r.bucket}.json" for r in cfg.replicas]
        rendered = {p.name: p for p in self.review.rglob("*.json")}
        missing = [n for n in names if n not in rendered]
        if missing:
            raise AssertionError(f"not rendered under {self.review}: {missing}")
        denies = {n: [s.get("Sid") for s in json.loads(rendered[n].read_text())["Statement"]
                      if s.get("Effect") == "Deny"] for n in names}  # fmt: skip
        empty = [n for n, sids in denies.items() if not sids]
        if empty:
            raise AssertionError(f"no Deny statement in {empty}")
        finance = json.loads(rendered[f"source-bucket-policy--source-{world.FINANCE}.json"].read_text())
        owners = [s for s in finance["Statement"] if s.get("Sid") == world.AUDITORS_SID]
        if [(s["Effect"], s["Principal"]) for s in owners] != [("Allow", {"AWS": world.AUDITORS_ROLE})]:
            raise AssertionError(f"{world.FINANCE}: its owners' {world.AUDITORS_SID} not rendered as it is: {owners}")
        kit = "\n".join(f"{n}: {', '.join(map(str, sids))}" for n, sids in denies.items())
        return f"{kit}\nsource-finance-lake: its owners' {world.AUDITORS_SID} beside the kit's"

    def stacks_in_order(self) -> str:
        """The synthesized stacks, in the order the e2e deploys them, against the runbook's names and order."""
        order = stack_order(json.loads((self.synth_dir / "manifest.json").read_text()))
        problems = runbook.stack_problems(runbook.stack_patterns(self.lines), order)
        if problems:
            raise AssertionError("; ".join(problems))
        return f"{' '.join(order)}: as the runbook's `for stack in {' '.join(runbook.stack_patterns(self.lines))}`"

    def apply(self, stack: str, stack_dir: Path, doc: Json, before: Json | None, result: E2eStackResult) -> None:
        """The runbook's loop for this stack; at the source stack that imports the existing configuration, the
        takeover (`take_over_replication`)."""
        if not self.stacks[:-1] and not self.check(STACKS, self.stacks_in_order):
            raise RuntimeError(f"{STACKS}: the synth's stacks differ from the runbook's")
        t0 = time.monotonic()
        print(f"-- {self.name}/{stack}: the runbook's loop (init, plan, show, adopt-gate, apply)")
        if not self.took_over and REPLICATION in json.dumps(doc.get("import") or {}):
            self.took_over = True
            self.take_over_replication(stack, stack_dir, doc, result)
        else:
            gated = self.walk_stack(stack_dir, doc, result)
            if gated is not None:
                raise RuntimeError(f"{stack}: the adoption gate refused (exit {gated.exit_code}):\n{gated.tail}")
        result.apply_s = round(time.monotonic() - t0, 1)

    def walk_stack(self, stack_dir: Path, doc: Json, result: E2eStackResult, *, upto: str = "") -> ToolResult | None:
        """The runbook's loop lines for one stack, in the page's order, up to the step `upto` (all by default): the
        gate's result when it refused (nothing applied after it), else None. The saved plan's `show -json` is
        written as the aws provider shows it (`provider_view`), which is what the gate judges."""
        plan_json = stack_dir / "plan.json"
        for line in runbook.loop_body(self.lines):
            if line.step == upto:
                return None
            if line.step == "s3tables-kit adopt-gate":
                self.run_line("adopt-gate", line.step, ["--report", str(stack_dir / "gate.json")],
                              {**self.values, "plan.json": str(plan_json)})  # fmt: skip
                gated = self.tools.pop()  # the stack's result records it
                print(_indent(gated.tail))
                if gated.exit_code != 0:
                    return gated
                continue
            sub, *rest = line.args
            proc = self.tf.checked([sub, *UNATTENDED.get(sub, []), *rest], stack_dir, log=f"runbook-{sub}")
            if line.step == "terraform show":
                plan = json.loads(proc.stdout)
                plan_json.write_text(json.dumps(provider_view(plan, self.live_replication)))
                check_transition(plan_actions(plan), protected_addresses(doc), result, "plan")
                result.resources = managed_count(plan)
        return None

    # ---------------------------------------------------------------- the takeover ----

    def take_over_replication(self, stack: str, stack_dir: Path, doc: Json, result: E2eStackResult) -> None:
        """The first deploy of the source stack that imports its owners' replication configuration. The gate must
        refuse the plan's variant that drops the existing destination. With the provider the kit pins, it refuses the
        plan itself only for the version token the provider does not read at the import (#46675): the runbook's way
        out follows, and the loop's lines run again for the stack from the edited kit.toml. (With a provider that
        reads the token, the gate passes this plan and its apply takes the replication over in one step.)"""
        gated = self.walk_stack(stack_dir, doc, result, upto="terraform apply")
        plan_json = stack_dir / "plan.json"
        if not self.check(DROP, lambda: self.drop_refused(stack, plan_json)):
            raise RuntimeError(f"{stack}: {DROP} failed")
        if not self.check(TAKEOVER, lambda: self.token_refusal(stack, stack_dir / "gate.json", gated)):
            raise RuntimeError(f"{stack}: {TAKEOVER} failed")
        if not self.check(WAY_OUT, self.way_out):
            raise RuntimeError(f"{stack}: {WAY_OUT} failed")
        loc, loose = self.resynth(stack)
        self.replaced[stack] = (loc, loose)
        write_stack(stack_dir, loc.document)
        again = self.walk_stack(stack_dir, loc.document, result)
        if again is not None:
            raise RuntimeError(f"{stack}: after the way out, the gate refused (exit {again.exit_code}):\n{again.tail}")

    def token_refusal(self, stack: str, report: Path, gated: ToolResult | None) -> str:
        """The runbook's gate on the takeover's plan: with the provider the kit pins, refused (exit 2) only for the
        version token the provider does not read at the import (#46675); nothing applied."""
        if gated is None:
            raise AssertionError(f"{stack}: passed; this run expects the pinned provider's refusal ({TOKEN_GAP})")
        refused = [r for p in json.loads(report.read_text())["plans"] for r in p["refused"]]
        other = [r for r in refused if TOKEN_GAP not in r["why"]]
        if gated.exit_code != 2 or not refused or other:
            raise AssertionError(f"{stack}: exit {gated.exit_code}, refused for more than the provider's token "
                                 f"({TOKEN_GAP}): {other or refused}")  # fmt: skip
        return f"exit 2: {stack} refused only for the version token the provider does not read ({TOKEN_GAP}), " + (
            f"nothing applied: {[r['address'] for r in refused]}"
        )

    def resynth(self, stack: str) -> tuple[Localized, Localized]:
        """The stack synthesized again from the edited kit.toml (localized as the run's), its KIT_ALLOW_DESTROY one too;
        the adoption intent read again."""
        self.__dict__.pop("intent", None)
        docs, _ = synth(self.config, self.dir / "synth-way-out", allow_destroy=False)
        loose, _ = synth(self.config, self.dir / "synth-way-out-allow-destroy", allow_destroy=True)
        return self.localized({stack: docs[stack]}, self.creds)[stack], self.localized(
            {stack: loose[stack]}, self.creds
        )[stack]

    def destroy_check(
        self, stack: str, stack_dir: Path, loc: Localized, loose: Localized, result: E2eStackResult
    ) -> None:
        loc, loose = self.replaced.get(stack, (loc, loose))
        super().destroy_check(stack, stack_dir, loc, loose, result)

    def live_replication(self, bucket_arn: str) -> Json:
        s3t = self.client_of(world.ACCOUNT, "s3tables", bucket_arn.split(":")[3])
        return dict(s3t.get_table_bucket_replication(tableBucketARN=bucket_arn)["configuration"])

    def drop_refused(self, stack: str, plan_path: Path) -> str:
        """The runbook's gate on the takeover's plan without the existing destination: exit 2, the drop named."""
        variant = self.dir / "takeover-plan-dropped.json"
        variant.write_text(json.dumps(world.without_destination(json.loads(plan_path.read_text()), world.DR_ARN)))
        report = self.dir / "takeover-plan-dropped-report.json"
        self.run_line(DROP, "s3tables-kit adopt-gate", ["--report", str(report)],
                      {**self.values, "plan.json": str(variant)})  # fmt: skip
        ran = self.tools.pop()  # check() records this step
        text = report.read_text() if report.is_file() else ran.tail
        if ran.exit_code != 2 or f"drops existing destination(s) {world.DR_ARN}" not in text:
            raise AssertionError(f"adopt-gate on {stack}'s plan without {world.DR_ARN}: exit {ran.exit_code}\n{text}")
        return f"exit 2: {stack}'s plan without {world.DR_ARN} refused for the dropped destination"

    def way_out(self) -> str:
        """docs/adoption.md's way out while the provider reads no token: break-glass deletes the owners' configuration
        with its token, and `existing_destinations` goes from kit.toml (the destination stays an adopted replica)."""
        s3t = self.client_of(world.ACCOUNT, "s3tables", world.REGION)
        token = s3t.get_table_bucket_replication(tableBucketARN=world.arn(world.ORDERS))["versionToken"]
        s3t.delete_table_bucket_replication(tableBucketARN=world.arn(world.ORDERS), versionToken=token)
        line = f'existing_destinations = ["{world.DR_ARN}"]\n'
        text = self.config.read_text()
        if text.count(line) != 1:
            raise AssertionError(f"{self.config}: `{line.strip()}` not there once")
        self.config.write_text(text.replace(line, ""))
        cfg = load_config(self.config)
        kept = [r.bucket for r in cfg.replicas if r.adopt]
        if kept != [world.ORDERS_DR]:
            raise AssertionError(f"adopted replicas {kept}, expected [{world.ORDERS_DR}]")
        return f"{world.ORDERS}'s configuration deleted with its token; {world.ORDERS_DR} stays an adopted replica"

    # ---------------------------------------------------------------- after the apply ----

    def run_tools(self, cfg: KitConfig) -> None:
        self.outputs()  # the runbook's `outputs` line: `terraform output` of each applied stack, as the e2e writes it
        extra = ["--endpoint-url", self.emu.url, f"--role-arn={world.ACCOUNT}={self.operator_role(world.ACCOUNT)}"]
        self.run_line(PENDING, "s3tables-kit status", extra)
        self.check(PENDING, lambda: expect_exit(self.tools[-1], 1, "the new replicas hold nothing yet"), replace=True)
        self.replicate(cfg)
        self.run_line(COMPLETED, "s3tables-kit status", extra)
        self.check(KEPT, self.destination_kept)
        self.check(STREAMED, self.streamed_replicated)
        ExampleRun.run_tools(self, cfg)

    def destination_kept(self) -> str:
        s3t = self.client_of(world.ACCOUNT, "s3tables", world.REGION)
        conf = s3t.get_table_bucket_replication(tableBucketARN=world.arn(world.ORDERS))["configuration"]
        dests = [d["destinationTableBucketARN"] for r in conf["rules"] for d in r["destinations"]]
        if dests != [world.DR_ARN] or conf["role"] == world.OWNERS_ROLE:
            raise AssertionError(
                f"{world.ORDERS} replicates to {dests} as {conf['role']}: not the kit's, to {world.DR_ARN}"
            )
        src, dst = self.rows(world.arn(world.ORDERS), "orders", "daily"), self.rows(world.DR_ARN, "orders", "daily")
        if src != dst:
            raise AssertionError(f"orders.daily: replica at {dst[0]} ({len(dst[1])} snapshots), source {src[0]}")
        return (f"{world.ORDERS} replicates to {world.ORDERS_DR} as {conf['role']}; orders.daily there at the source's "
                f"snapshot {src[0]} ({len(src[1])} snapshots, the owners' replicas' among them)")  # fmt: skip

    def streamed_replicated(self) -> str:
        """A row sent through PutRows after the adoption, committed by the service, reaches the table's replica."""
        bucket, ns, name = world.STREAMED
        s3t = self.client_of(world.ACCOUNT, "s3tables", world.REGION)
        table_arn = s3t.get_table(tableBucketARN=world.arn(bucket), namespace=ns, name=name)["tableARN"]
        s3t.put_rows(tableArn=table_arn, payloadFormat="JSON", payload=b'{"id": 200, "region": "us"}\n')
        self.emu.control.putrows(flush=True)
        self.emu.control.replicate(source_bucket_arn=world.arn(bucket))
        replica = world.arn(f"{bucket}-{world.DR_REGION}", world.DR_REGION)
        src, dst = self.rows(world.arn(bucket), ns, name), self.rows(replica, ns, name)
        if src != dst:
            raise AssertionError(f"{ns}.{name}: replica at {dst[0]}, source at {src[0]}")
        return f"{ns}.{name}: the service's commit of the PutRows row replicated (snapshot {src[0]})"

    def rows(self, bucket_arn: str, ns: str, name: str) -> tuple[int | None, list[int]]:
        """(current snapshot id, every snapshot id) of a table, read from its metadata."""
        from pyiceberg.table import StaticTable

        from s3tables_kit.jobs.failover.iceberg import io_props
        from s3tables_kit.jobs.kernel.tables import metadata_location

        region = bucket_arn.split(":")[3]
        s3t = self.client_of(world.ACCOUNT, "s3tables", region)
        location = metadata_location(
            s3t.get_table_metadata_location(tableBucketARN=bucket_arn, namespace=ns, name=name)
        )
        if not location:
            raise AssertionError(f"{bucket_arn} {ns}.{name}: no metadata")
        meta = StaticTable.from_metadata(location, io_props(s3t, bucket_arn, self.emu.url)).metadata
        return meta.current_snapshot_id, sorted(s.snapshot_id for s in meta.snapshots)


def _provider_attributes(bucket_arn: str, configuration: Json) -> Json:
    """A bucket-level replication configuration as the aws provider's resource holds it (no version token)."""
    rules = [
        {"destination": [{"destination_table_bucket_arn": d["destinationTableBucketARN"]} for d in r["destinations"]]}
        for r in configuration.get("rules") or []
    ]
    return {"table_bucket_arn": bucket_arn, "role": configuration.get("role"), "rule": rules}


def provider_view(plan: Json, live: Callable[[str], Json]) -> Json:
    """The saved plan as the aws provider (>= 6.25) shows it, which the adoption gate judges. With the machine
    image's aws 5.100.0 the e2e applies a bucket-level replication through an API stand-in (a `terraform_data`,
    harness/e2e/standins.py rule 3): its change is shown as `aws_s3tables_table_bucket_replication`, and an imported
    one's `before` as the provider's import reads the live configuration (`live(bucket ARN)`: role and rules, never
    the version token, #46675). A plan of the real resource is returned as it is."""
    out = copy.deepcopy(plan)
    for rc in out.get("resource_changes") or []:
        name = str(rc.get("name", ""))
        if rc.get("type") != STANDIN_TYPE or not name.startswith(STANDIN_PREFIX):
            continue
        change = rc["change"]
        args = ((change.get("after") or {}).get("input") or [{}])[0].get("arguments") or {}
        arn = str(args.get("tableBucketARN"))
        rc.update(
            type=REPLICATION, name=name[len(STANDIN_PREFIX) :], address=f"{REPLICATION}.{name[len(STANDIN_PREFIX) :]}"
        )
        change["after"] = _provider_attributes(arn, args.get("configuration") or {})
        change["after_unknown"] = {}
        if change.get("importing"):
            change["before"] = _provider_attributes(arn, live(arn))
    return out
