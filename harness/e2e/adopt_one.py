"""`make e2e-adopt ARGS="--world one"`: the second brownfield world (harness/e2e/brownfield_one.py: one account,
buckets in two Regions, an existing bucket-level replication into a bucket holding its replicas, a KMS bucket, a
table fed by `PutRows`) adopted end to end, on the local stand-in with the real Terraform, as docs/adoption.md says:

1. the world built; `s3tables-kit discover` of both Regions: the destination proposed as an adopted replica of its
   source (never a source), the source's configuration to take over (`existing_destinations`), the `PutRows`-fed
   table reported; the proposal completed as the engineer completes it;
2. the e2e's run of the completed proposal (harness/e2e/run.ExampleRun): the stacks in the runbook's order, each
   planned, gated (`s3tables_kit.infra.adoptgate`), applied, re-planned empty, nothing protected destroyed or
   replaced, the
   destroy check, then the second deploy and the locked change;
3. at the source stack that imports the existing configuration, its saved plan gated before anything of it is
   applied: the adoption gate refuses the variant of that plan that drops the existing destination (by
   `s3tables-kit adopt-gate`, exit 2); with the provider the kit pins it refuses the plan itself too, only because
   the provider reads no version token at the import (#46675: the update would stop half-way, decision 0036);
4. there, the runbook's way out for that provider (docs/adoption.md): the owners' configuration deleted with its
   token by break-glass, `existing_destinations` removed from kit.toml (the destination stays an adopted replica),
   the stack synthesized again and applied through the gate: the kit's configuration, the destination kept;
5. then on the deployed account: the backfill (`status --backfill` 1, then 0 once replicated); the existing
   destination kept (the kit's configuration names it; its replicas from before the kit stay and receive the next
   commit); rows sent through `PutRows` after the adoption reach the table's replica; the tools of `make e2e`.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.e2e import brownfield_one as world
from harness.e2e.adopt import COMPLETED, DISCOVER, PENDING, AdoptRun, expect_exit
from harness.e2e.run import TOOLS, WRITER, ExampleRun, synth
from harness.e2e.second import LOCK_REFUSAL, SECOND_DEPLOY
from harness.e2e.stackio import write_stack
from harness.e2e.standins import STANDIN_TYPE, Localized
from harness.e2e.terraform import E2eStackResult, E2eToolchain, Terraform
from s3tables_kit.infra.adoptgate import AdoptionIntent, gate
from s3tables_kit.infra.validate import Json
from s3tables_kit.topology.config import KitConfig, load_config

BUILT = "one-account lake"
TAKEOVER, DROP = "gate: the takeover's plan", "gate refuses the dropped destination"
WAY_OUT, KEPT, STREAMED = "way out (#46675)", "existing destination kept", "PutRows rows replicated"
TOKEN_GAP = "#46675"  # the one refusal the pinned provider causes (infra/adoptgate.py's reason names the issue)
REPLICATION = "aws_s3tables_table_bucket_replication"
STANDIN_PREFIX = f"kit_e2e__{REPLICATION}__"  # harness/e2e/standins.py's name of its API stand-in


class OneAccountRun(AdoptRun):
    """The one-account lake discovered, its replication's takeover gated, adopted by the e2e's run, then checked."""

    def __init__(self, workdir: Path, tf: Terraform, emu: Emulator, chain: E2eToolchain) -> None:
        super().__init__(workdir, tf, emu, chain)
        self.proposal = workdir / "adopt-one-discover"
        self.config = self.proposal / "kit.toml"
        self.name, self.dir = "adopt-one", workdir / "adopt-one"
        self.synth_dir, self.outputs_path = self.dir / "synth", self.dir / "outputs.json"
        self.one = world.OneAccountLake()
        self.took_over = False
        self.replaced: dict[str, tuple[Localized, Localized]] = {}  # stacks applied from the way out's kit.toml

    @property
    def expected_tools(self) -> tuple[str, ...]:
        return (BUILT, DISCOVER, TAKEOVER, DROP, WAY_OUT, SECOND_DEPLOY, LOCK_REFUSAL, PENDING, COMPLETED, KEPT,
                STREAMED, WRITER, *TOOLS)  # fmt: skip

    def tool(self, name: str, args: list[str], *, account: str | None = None, region: str | None = None) -> str:
        return ExampleRun.tool(self, name, args, account=account, region=region)  # no drift expected: audit exits 0

    def run(self) -> None:
        shutil.rmtree(self.proposal, ignore_errors=True)
        keys = self.emu.control.seed_accounts([world.ACCOUNT])
        self.creds = {a: self._creds(k) for a, k in keys.items()}
        print(f"\n== {self.name}: the one-account lake (two Regions, a replication of its own, outside Terraform)")
        if not self.check(BUILT, self.build):
            return
        self.tool(DISCOVER, world.discover_args(self.proposal, self.emu.url, self.operator_role(world.ACCOUNT)))
        if not self.tools[-1].ok or not self.check(DISCOVER, self.proposal_completed, replace=True):
            return
        ExampleRun.run(self)

    @staticmethod
    def _creds(k: dict[str, str]) -> Any:
        from harness.e2e.standins import Credentials

        return Credentials(k["accessKeyId"], k["secretAccessKey"])

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
        report = json.loads((self.proposal / "discover.json").read_text())
        problems = world.found_in(report)
        if problems:
            raise AssertionError("; ".join(problems))
        path = world.complete(self.proposal)
        return f"{len(report['buckets'])} buckets found as built ({world.ORDERS_DR}: replica of {world.ORDERS}); {path}"

    # ---------------------------------------------------------------- the takeover's gate ----

    def apply(self, stack: str, stack_dir: Path, doc: Json, before: Json | None, result: E2eStackResult) -> None:
        """The e2e's apply; for the source stack that imports the existing configuration, first the takeover's own
        plan gated (nothing applied), its variant without the destination refused, then the way out and its apply."""
        imports = json.dumps(doc.get("import") or {})
        if self.took_over or REPLICATION not in imports:
            return super().apply(stack, stack_dir, doc, before, result)
        self.took_over = True
        self.tf.checked(["init", "-input=false", "-no-color"], stack_dir)
        self.tf.checked(["plan", "-out=takeover.tfplan", "-input=false", "-no-color"], stack_dir, log="takeover-plan")
        plan_path = self.dir / "takeover-plan.json"
        shown = json.loads(self.tf.checked(["show", "-json", "takeover.tfplan"], stack_dir).stdout)
        plan_path.write_text(json.dumps(provider_view(shown, self.live_replication)))
        gated = self.check(TAKEOVER, lambda: self.takeover_gated(stack, plan_path))
        if not (gated and self.check(DROP, lambda: self.drop_refused(stack, plan_path))):
            raise RuntimeError(f"{stack}: the takeover's gate did not answer as expected ({TAKEOVER}, {DROP})")
        if not self.check(WAY_OUT, self.way_out):
            raise RuntimeError(f"{stack}: {WAY_OUT} failed")
        loc, loose = self.resynth(stack)
        self.replaced[stack] = (loc, loose)
        write_stack(stack_dir, loc.document)
        super().apply(stack, stack_dir, loc.document, before, result)

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

    def takeover_gated(self, stack: str, plan_path: Path) -> str:
        """The takeover's plan: with the provider the kit pins, refused only for the version token it does not read
        at the import (#46675); nothing else of the plan refused."""
        verdict = gate(json.loads(plan_path.read_text()), AdoptionIntent.of(load_config(self.config)), stack)
        if verdict.passed:
            raise AssertionError(
                f"{stack}: passed; this run expects the pinned provider's refusal:\n{verdict.summary()}"
            )
        other = [r for r in verdict.refused if TOKEN_GAP not in r.why]
        if other:
            raise AssertionError(f"{stack}: refused for more than the provider's token (#46675):\n{verdict.summary()}")
        return f"{stack}: refused only for the version token the provider does not read (#46675), nothing applied\n" + (
            verdict.summary()
        )

    def drop_refused(self, stack: str, plan_path: Path) -> str:
        """`s3tables-kit adopt-gate` on the takeover's plan without the existing destination: exit 2, the drop named."""
        variant = self.dir / "takeover-plan-dropped.json"
        variant.write_text(json.dumps(world.without_destination(json.loads(plan_path.read_text()), world.DR_ARN)))
        report = self.dir / "takeover-plan-dropped-report.json"
        args = ["-m", "s3tables_kit.cli", "adopt-gate", "--plan-json", str(variant), "--config", str(self.config),
                "--report", str(report)]  # fmt: skip
        ExampleRun.tool(self, DROP, args)
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
        self.outputs()
        roles = [f"--role-arn={world.ACCOUNT}={self.operator_role(world.ACCOUNT)}"]
        backfill = ["-m", "s3tables_kit.jobs.ops.status", "--backfill", "--outputs", str(self.outputs_path),
                    "--endpoint-url", self.emu.url, *roles]  # fmt: skip
        ExampleRun.tool(self, PENDING, backfill)
        self.check(PENDING, lambda: expect_exit(self.tools[-1], 1, "the new replicas hold nothing yet"), replace=True)
        self.replicate(cfg)
        ExampleRun.tool(self, COMPLETED, backfill)
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
