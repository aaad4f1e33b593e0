"""`make e2e-adopt`: the adoption of brownfield lakes, end to end, on the local stand-in with the real Terraform: this
file's world (`--world lake`), then the one-account lake that already replicates (`--world one`,
harness/e2e/adopt_one.py); `--world all` (the default) runs both, each on its own stand-in.

The `lake` world:

1. the brownfield world (harness/e2e/brownfield.py): two table buckets written by pyiceberg, a bucket policy granting
   the analytics role read access, a table-level maintenance setting, a table-level replication of its own;
2. `s3tables-kit discover` of the account, and its proposal completed as the engineer completes it;
3. that configuration through `make e2e`'s own run (harness/e2e/run.ExampleRun): synth with import blocks, each stack
   planned, the adoption gate (`s3tables_kit.infra.adoptgate`) before each adopting apply, the apply, every stack's
   re-plan empty, nothing protected destroyed or replaced, the destroy check (one round; what adoption imported stays
   protected under KIT_ALLOW_DESTROY=1 too), the second deploy and the locked change;
4. what adoption must leave working, checked on the deployed account:
   - the lake as it was: the table-level maintenance and replication settings unchanged;
   - the analytics role's read, by the IAM evaluator (`s3tables_kit.policies.simulate`) on the bucket policy as deployed
     (the adopter's statements and the kit's) and by requests as that role to the stand-in with its authorization on;
   - the backfill: `status --backfill` exits 1 before the replication service runs, and once it has, 1 still with
     every table Completed but the one its own table-level replication bypasses (BYPASSED);
   - a recovery (local Spark) of a table that existed before the kit, from its replica, equal to its source;
5. then the tools of `make e2e` on the outputs (writer, harden, status, audit, recover and failover dry runs).

Exit 0 when every step passes, 1 otherwise, 2 without the toolchain (see `make validate`).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.e2e import brownfield as world
from harness.e2e.run import (
    DESTROY_PLAN,
    PROTECTED_ERROR,
    TOOLS,
    WRITER,
    ExampleRun,
    lift_protection,
)
from harness.e2e.second import LOCK_REFUSAL, SECOND_DEPLOY
from harness.e2e.stackio import client, protected_addresses, write_stack
from harness.e2e.standins import Credentials, Localized
from harness.e2e.terraform import (
    E2eStackResult,
    E2eToolchain,
    Terraform,
    ToolResult,
    _tail,
)
from s3tables_kit.topology.config import KitConfig

BUILT, DISCOVER = "brownfield world", "discover"
KEPT, READ = "lake settings kept", "analytics read"
PENDING, COMPLETED = "status --backfill (before)", "status --backfill"
RECOVERED = "recover + equal to source"
# The audit's findings on the table whose own table-level replication adoption leaves in place (decision 0033).
EXPECTED_DRIFTS = ("replication-extra-configuration", "replica-missing")
# Reads the analytics role's grant allows, and a change the kit's Deny refuses it (the proof that authorization is on).
ALLOWED_READS = ("ListTables", "GetTable", "GetTableMetadataLocation", "GetTableData")


def _say(text: str) -> None:
    print(text, flush=True)


class AdoptRun(ExampleRun):
    """The brownfield world discovered, adopted by the e2e's run of its completed proposal, then checked."""

    def __init__(self, workdir: Path, tf: Terraform, emu: Emulator, chain: E2eToolchain) -> None:
        proposal = workdir / "adopt-discover"
        super().__init__(proposal / "kit.toml", workdir, tf, emu, chain, every_destroy_round=False)
        self.proposal = proposal
        self.name, self.dir = "adopt", workdir / "adopt"
        self.synth_dir, self.outputs_path = self.dir / "synth", self.dir / "outputs.json"
        self.built = world.Brownfield()

    @property
    def expected_tools(self) -> tuple[str, ...]:
        return (BUILT, DISCOVER, SECOND_DEPLOY, LOCK_REFUSAL, KEPT, READ, PENDING, COMPLETED, RECOVERED,
                WRITER, *TOOLS)  # fmt: skip

    def tool(self, name: str, args: list[str], *, account: str | None = None, region: str | None = None) -> str:
        """As the e2e runs a tool; the audit's drifts judged: the lake's own table-level replication is reported
        (it overrides the kit's bucket-level one for its table, which adoption leaves alone) and nothing else."""
        if name != "audit":
            return super().tool(name, args, account=account, region=region)
        out = super().tool(name, [*args, "--json"], account=account, region=region)
        if self.tools[-1].exit_code == 1:
            self.check(name, lambda: only_the_shared_table(json.loads(out)), replace=True)
        return out

    def client_of(self, account: str, service: str, region: str) -> Any:
        return client(self.emu, self.creds[account], service, region)

    def run(self) -> None:
        shutil.rmtree(self.proposal, ignore_errors=True)
        keys = self.emu.control.seed_accounts([world.ACCOUNT, world.PARTNER])
        self.creds = {a: Credentials(k["accessKeyId"], k["secretAccessKey"]) for a, k in keys.items()}
        _say(f"\n== {self.name}: the brownfield world (two table buckets written by pyiceberg, outside Terraform)")
        if not self.check(BUILT, self.build):
            return
        self.tool(DISCOVER, world.discover_args(self.proposal, self.emu.url, self.operator_role(world.ACCOUNT)))
        if not self.tools[-1].ok or not self.check(DISCOVER, self.proposal_completed, replace=True):
            return
        super().run()

    def build(self) -> str:
        self.built = world.build(self.client_of, self.emu.url)
        # The lake's own table-level replication had run before the kit came: the partner's replica exists.
        self.emu.control.replicate(source_bucket_arn=world.arn(world.MARKETING))
        return "\n".join(f"{t}: {len(ids)} snapshots" for t, ids in sorted(self.built.snapshots.items()))

    def proposal_completed(self) -> str:
        return completed_proposal(self.proposal, world.found_in, world.complete)

    def check(self, name: str, step: Callable[[], str], *, replace: bool = False) -> bool:
        """Run a check of this file, recorded like a tool (`replace`: in place of the last result, the tool's own)."""
        t0 = time.monotonic()
        try:
            code, text = 0, step()
        except Exception as exc:  # a failed check is this step's failure, reported in the table
            code, text = 1, f"{type(exc).__name__}: {exc}"
        seconds = round(time.monotonic() - t0, 1)
        if replace:
            seconds = round(seconds + self.tools.pop().seconds, 1)
        self.tools.append(ToolResult(self.name, name, code, seconds, _tail(text, 15)))
        _say(f"   {name}: {'ok' if code == 0 else 'FAILED'} ({seconds} s)\n" + _indent(text))
        return code == 0

    def destroy_check(
        self, stack: str, stack_dir: Path, loc: Localized, loose: Localized, result: E2eStackResult
    ) -> None:
        """The e2e's destroy check, where what adoption imported keeps `prevent_destroy` under KIT_ALLOW_DESTROY=1
        too (decision 0033): that synth's destroy plan must be refused by those resources only, and plans with them
        lifted."""
        kept = protected_addresses(loose.document)
        if kept:
            write_stack(stack_dir, loose.document)
            try:
                proc = self.tf.run(DESTROY_PLAN, stack_dir)
            finally:
                write_stack(stack_dir, loc.document)
            refused = set(PROTECTED_ERROR.findall(proc.stdout + proc.stderr))
            if proc.returncode == 0 or not refused or not refused <= kept:
                result.destroy_check = f"FAILED: KIT_ALLOW_DESTROY=1 refused {sorted(refused)}, adopted {sorted(kept)}"
                raise RuntimeError(result.destroy_check)
            _say(f"   plan -destroy with KIT_ALLOW_DESTROY=1: refused by adopted resources only ({len(refused)})")
            loose = dataclasses.replace(loose, document=lift_protection(loose.document, kept))
        super().destroy_check(stack, stack_dir, loc, loose, result)

    # ---------------------------------------------------------------- after the apply ----

    def run_tools(self, cfg: KitConfig) -> None:
        self.outputs()
        _say(f"-- {self.name}: what the adoption must leave working")
        self.check(KEPT, self.lake_kept)
        self.check(READ, self.analytics_read)
        roles = [f"--role-arn={a}={self.operator_role(a)}" for a in sorted({s.account_id for s in cfg.sources})]
        backfill = ["-m", "s3tables_kit.jobs.ops.status", "--backfill", "--outputs", str(self.outputs_path),
                    "--endpoint-url", self.emu.url, *roles]  # fmt: skip
        self.tool(PENDING, backfill)
        self.check(PENDING, lambda: expect_exit(self.tools[-1], 1, "nothing replicated yet"), replace=True)
        self.replicate(cfg)
        out = self.tool(COMPLETED, backfill)
        self.check(COMPLETED, lambda: copied_but_the_shared_table(self.tools[-1], out), replace=True)
        self.recover(cfg)
        super().run_tools(cfg)

    def lake_kept(self) -> str:
        s3t = self.client_of(world.ACCOUNT, "s3tables", world.REGION)
        bucket, ns, name = world.MAINTAINED
        got = s3t.get_table_maintenance_configuration(tableBucketARN=world.arn(bucket), namespace=ns, name=name)
        kept = got["configuration"]["icebergSnapshotManagement"]
        if kept != world.TABLE_MAINTENANCE:
            raise AssertionError(f"{ns}.{name}: maintenance {kept}, before the kit {world.TABLE_MAINTENANCE}")
        bucket, ns, name = world.SHARED
        table_arn = s3t.get_table(tableBucketARN=world.arn(bucket), namespace=ns, name=name)["tableARN"]
        rules = s3t.get_table_replication(tableArn=table_arn)["configuration"]["rules"]
        dests = [d["destinationTableBucketARN"] for r in rules for d in r["destinations"]]
        if dests != [self.built.partner_bucket_arn]:
            raise AssertionError(f"{ns}.{name}: table-level replication to {dests}, before the kit to the partner")
        return f"{'.'.join(world.MAINTAINED[1:])}: its maintenance as set; {ns}.{name}: replicates to {dests[0]}"

    def analytics_read(self) -> str:
        """The analytics role reads the adopted bucket after the kit deployed its statements beside its grant."""
        from s3tables_kit.policies.simulate import SimRequest, evaluate, principal_context

        s3t = self.client_of(world.ACCOUNT, "s3tables", world.REGION)
        bucket = world.arn(world.SALES)
        policy = json.loads(s3t.get_table_bucket_policy(tableBucketARN=bucket)["resourcePolicy"])
        sids = [s.get("Sid") for s in policy["Statement"]]
        ns, name = world.RECOVERED.split(".")
        table_arn = s3t.get_table(tableBucketARN=bucket, namespace=ns, name=name)["tableARN"]
        who = world.ANALYTICS_ROLE
        asked = {f"s3tables:{a}": (bucket if a == "ListTables" else table_arn) for a in ALLOWED_READS}
        asked["s3tables:PutTableBucketReplication"] = bucket
        requests = [
            SimRequest(action, who, action, resource, world.ACCOUNT, principal_context(who), (),
                       resource_policies=("deployed",))
            for action, resource in asked.items()
        ]  # fmt: skip
        results = evaluate({"deployed": policy}, requests)
        wrong = [a for a, r in results.items() if r.allowed != (a != "s3tables:PutTableBucketReplication")]
        if wrong:
            raise AssertionError(f"IAM evaluator on the deployed policy {sids}: unexpected for {wrong}")
        answers = self.as_analytics(bucket, ns, name)
        if answers["ListTables"] != "allowed" or answers["GetTableMetadataLocation"] != "allowed":
            raise AssertionError(f"as {who} with authorization on: {answers}")
        if "AccessDenied" not in answers["PutTableBucketReplication"]:
            raise AssertionError(f"authorization on, yet the kit's Deny did not refuse {who}: {answers}")
        return (f"deployed policy {sids}: the IAM evaluator allows {', '.join(ALLOWED_READS)} and denies "
                f"PutTableBucketReplication to {who}; on the stand-in with authorization on: {answers}")  # fmt: skip

    def as_analytics(self, bucket: str, ns: str, name: str) -> dict[str, str]:
        """The stand-in's answers to the analytics role's requests, its authorization on."""
        import boto3
        from botocore.exceptions import ClientError

        sts = self.client_of(world.ACCOUNT, "sts", world.REGION)
        creds = sts.assume_role(RoleArn=world.ANALYTICS_ROLE, RoleSessionName="athena")["Credentials"]
        s3t = boto3.session.Session(
            aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"], region_name=world.REGION,
        ).client("s3tables", endpoint_url=self.emu.url)  # fmt: skip
        current = self.client_of(world.ACCOUNT, "s3tables", world.REGION)
        replication = current.get_table_bucket_replication(tableBucketARN=bucket)["configuration"]
        calls: dict[str, Callable[[], Any]] = {
            "ListTables": lambda: s3t.list_tables(tableBucketARN=bucket),
            "GetTableMetadataLocation": lambda: s3t.get_table_metadata_location(
                tableBucketARN=bucket, namespace=ns, name=name
            ),
            "PutTableBucketReplication": lambda: s3t.put_table_bucket_replication(
                tableBucketARN=bucket, configuration=replication
            ),
        }
        answers: dict[str, str] = {}
        self.emu.control.call("live/authz", {"on": True})
        try:
            for op, call in calls.items():
                try:
                    call()
                    answers[op] = "allowed"
                except ClientError as err:
                    answers[op] = err.response["Error"]["Code"]
        finally:
            self.emu.control.call("live/authz", {"on": False})
        return answers

    def replicate(self, cfg: KitConfig) -> None:
        """The replication service: every source replicated, the replicas' paths rewritten for their destination as
        AWS does (the sandbox's replication, which recovery's file copy needs)."""
        from harness.sandbox_replication import rewrite_replicas

        pairs = []
        for src in cfg.sources:
            self.emu.control.replicate(source_bucket_arn=src.bucket_arn)
            pairs += [(src.bucket_arn, r.bucket_arn) for r in cfg.destinations_of(src)]
        copied = rewrite_replicas(self.emu.url, lambda a: a.split(":")[3], self.replica_client, pairs)
        _say(f"   replication simulated: {len(pairs)} source-replica pairs, {copied} files under the replicas")

    def replica_client(self, service: str, region: str) -> Any:
        return self.client_of(world.ACCOUNT, service, region)

    def recover(self, cfg: KitConfig) -> None:
        """A table that existed before the kit, recovered from its replica on local Spark, then compared with its
        source row by row."""
        out = self.dir / "reports" / "recover"
        self.tool(
            RECOVERED,
            ["-m", "s3tables_kit.jobs.recover", "--outputs", str(self.outputs_path), "--endpoint-url", self.emu.url,
             "--table", world.RECOVERED, "--report", str(out)],
            account=cfg.recovery_replica.account_id, region=cfg.recovery_replica.region,
        )  # fmt: skip
        if self.tools[-1].ok:
            self.check(RECOVERED, lambda: self.recovered_equal(cfg), replace=True)

    def recovered_equal(self, cfg: KitConfig) -> str:
        from pyiceberg.table import StaticTable

        from s3tables_kit.jobs.failover.iceberg import io_props
        from s3tables_kit.jobs.kernel.idents import Ident
        from s3tables_kit.jobs.kernel.tables import metadata_location

        def rows(region: str, bucket_arn: str, ident: Ident) -> list[tuple[Any, ...]]:
            s3t = self.client_of(world.ACCOUNT, "s3tables", region)
            got = s3t.get_table_metadata_location(tableBucketARN=bucket_arn, namespace=ident.namespace, name=ident.name)
            location = metadata_location(got)
            if not location:
                raise AssertionError(f"{ident} in {bucket_arn}: no metadata")
            table = StaticTable.from_metadata(location, io_props(s3t, bucket_arn, self.emu.url))
            data = table.scan().to_arrow()
            return sorted(zip(*(data.column(c).to_pylist() for c in data.column_names), strict=True))

        source = rows(world.REGION, world.arn(world.SALES), Ident.parse(world.RECOVERED))
        target = Ident(cfg.recovery.namespace, Ident.parse(world.RECOVERED).name)
        recovered = rows(cfg.recovery_replica.region, cfg.recovery_bucket_arn, target)
        if recovered != source or not source:
            raise AssertionError(f"{target}: {len(recovered)} rows, its source {len(source)}: not equal")
        return f"{target} equals {world.SALES}/{world.RECOVERED}: {len(source)} rows, every value"


def completed_proposal(
    proposal: Path, found_in: Callable[[dict[str, Any]], list[str]], complete: Callable[[Path], Path], seen: str = ""
) -> str:
    """A world's discovery report checked (`found_in`: its problems) and its proposal completed as the engineer
    completes it (`complete`); AssertionError naming every problem. `seen`: what the line says was found besides."""
    report = json.loads((proposal / "discover.json").read_text())
    problems = found_in(report)
    if problems:
        raise AssertionError("; ".join(problems))
    path = complete(proposal)
    found = f" ({seen})" if seen else ""
    return f"{len(report['buckets'])} buckets found as built{found}; the proposal completed: {path}"


def only_the_shared_table(report: dict[str, Any]) -> str:
    """The audit's drifts of the adopted lake: its table-level replication beside the kit's, and that table's replica
    missing from the kit's replica, for the one table that has it; AssertionError on any other drift."""
    bucket, ns, name = world.SHARED
    drifts = report["drifts"]
    other = [d for d in drifts if f"{ns}.{name}" not in d["resource"] or d["kind"] not in EXPECTED_DRIFTS]
    if other or "replication-extra-configuration" not in {d["kind"] for d in drifts}:
        raise AssertionError(f"audit drifts other than {bucket}/{ns}.{name}'s own replication: {other or drifts}")
    return f"exit 1 as expected: {[(d['kind'], d['resource']) for d in drifts]} (the lake's own, left alone)"


def copied_but_the_shared_table(result: ToolResult, out: str) -> str:
    """`status --backfill` once replicated: every table a copy but the one whose own table-level replication bypasses
    the kit's replica (BYPASSED, so exit 1 until its owners remove it or name the kit's destination)."""
    bypassed = [line.split()[0] for line in out.splitlines() if "BYPASSED" in line.split()[2:3]]
    if (
        result.exit_code != 1
        or "0 pending, 0 failed, 1 bypassed" not in out
        or bypassed != [".".join(world.SHARED[1:])]
    ):
        raise AssertionError(f"exit {result.exit_code}, bypassed {bypassed}: expected 1 with only the shared table")
    return f"exit 1 as expected: every table a copy but {bypassed[0]} (its own table-level replication, BYPASSED)"


def expect_exit(result: ToolResult, code: int, why: str) -> str:
    if result.exit_code != code:
        raise AssertionError(f"{result.tool} exited {result.exit_code}, expected {code} ({why})")
    return f"exit {code} as expected ({why})"


def _indent(text: str) -> str:
    return "\n".join(f"      {line}" for line in text.splitlines())
