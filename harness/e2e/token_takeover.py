"""Steps 8-12 of `python -m harness.e2e.token_probe`: the kit's takeover of a replication configuration made outside
Terraform (`s3tables_kit.infra.takeover`, then the plan, the adoption gate and the apply of that saved plan, as
`s3tables-kit adopt-gate --take-over --apply` runs them) with the real provider binary against the stand-in.

What each step observes is read from the stand-in, not from the kit: the live configuration (`Get*Replication`), a
reader polling it from another thread through the apply, and the stand-in's count of the calls it served (a delete
is the only way a configuration is ever absent; each successful put over one replaces it at once, with its token)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from harness.e2e.token_world import KIT_ROLE, OWNERS_ROLE, RESOURCE, TABLE_RESOURCE, Probe, failure, plan_outcome
from s3tables_kit.infra.adoptgate import AdoptionIntent, GatedApply, plan_gate_apply
from s3tables_kit.infra.takeover import live_reader, take_over, terraform_runner

REFUSED = "refused by the gate, nothing applied"


class Watch:
    """Reads the live configuration every 20 ms from another thread until closed: how many reads found none."""

    def __init__(self, read: Callable[[], object]) -> None:
        self.read, self.reads, self.absent = read, 0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.stop.is_set():
            try:
                self.read()
            except Exception as exc:  # a failed read other than "none there" ends the poll, and the step
                if "NotFound" not in type(exc).__name__ and "NotFound" not in str(exc):
                    raise
                self.absent += 1
            self.reads += 1
            self.stop.wait(0.02)

    def __enter__(self) -> Watch:
        self.thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop.set()
        self.thread.join()


class Takeover:
    def __init__(self, probe: Probe) -> None:
        self.p = probe
        self.s3t = probe.s3tables()
        self.src, self.dst_a, self.dst_b = probe.arn("src"), probe.arn("dst-a"), probe.arn("dst-b")
        self.reader = live_reader(lambda region: self.s3t)
        self.imports = {RESOURCE: self.src}

    # ---------------------------------------------------------------- the stand-in, read ----

    def calls(self) -> dict[str, int]:
        return dict(self.p.emu.control.stats()["calls"])

    def live(self, table_arn: str | None = None) -> tuple[str, list[str]] | None:
        """(role, destinations) of the live configuration, or None when there is none."""
        try:
            if table_arn is None:
                conf = self.s3t.get_table_bucket_replication(tableBucketARN=self.src)["configuration"]
            else:
                conf = self.s3t.get_table_replication(tableArn=table_arn)["configuration"]
        except self.s3t.exceptions.NotFoundException:
            return None
        return str(conf["role"]), sorted(
            d["destinationTableBucketARN"] for r in conf["rules"] for d in r["destinations"]
        )

    def owners_configuration(self, table_arn: str | None = None) -> None:
        """The configuration its owners keep outside Terraform: their role, into `dst-a` (over the live one, with its
        token, when there is one)."""
        conf = {"role": OWNERS_ROLE, "rules": [{"destinations": [{"destinationTableBucketARN": self.dst_a}]}]}
        if table_arn is not None:
            self.s3t.put_table_replication(tableArn=table_arn, configuration=conf)
            return
        current = self.live()
        token = self.s3t.get_table_bucket_replication(tableBucketARN=self.src)["versionToken"] if current else None
        self.s3t.put_table_bucket_replication(
            tableBucketARN=self.src, configuration=conf, **({"versionToken": token} if token else {})
        )

    def fresh_start(self) -> None:
        """The owners' configuration live and none in the state: a first deploy of an adopting stack."""
        if self.live() is not None:
            self.p.reset_configuration()
        self.owners_configuration()

    # ---------------------------------------------------------------- the kit's path ----

    def intent(self) -> AdoptionIntent:
        return AdoptionIntent(frozenset({self.src}), frozenset({"probe-src"}), {self.src: frozenset()},
                              replicating={self.src: frozenset({self.dst_a})})  # fmt: skip

    def deploy(self, *, take: bool, workdir: Path | None = None) -> tuple[str, GatedApply | None]:
        """`adopt-gate --stack-dir <dir> [--take-over] --apply`: "ok" (applied), REFUSED, or the failure's kind."""
        try:
            done = plan_gate_apply(self.p.tf.binary, workdir or self.p.dir, self.intent(), apply=True,
                                   env=self.p.tf.env, take_over_with=self.reader if take else None)  # fmt: skip
        except RuntimeError as exc:
            return failure(str(exc)), None
        return ("ok" if done.applied else "refused by the gate"), done

    def take_only(self, workdir: Path) -> None:
        """The takeover step alone (imported, the live token in the state), no plan yet."""
        tf = terraform_runner(self.p.tf.binary, workdir, self.p.tf.env)
        tf("init", "-input=false", "-no-color")
        take_over(tf, workdir, self.reader)

    # ---------------------------------------------------------------- the steps ----

    def run(self) -> None:
        self.dropped()
        self.one_step()
        self.stale()
        self.two_runs()
        self.table_level()

    def dropped(self) -> None:
        self.fresh_start()
        self.p.write(["dst-b"], self.imports)
        before = self.calls().get("PutTableBucketReplication", 0)
        got, done = self.deploy(take=True)
        why = " ".join(r.why for r in done.report.refused) if done else ""
        named = f"drops existing destination(s) {self.dst_a}" in why
        untouched = (
            self.live() == (OWNERS_ROLE, [self.dst_a]) and self.calls().get("PutTableBucketReplication", 0) == before
        )
        observed = REFUSED if got == "refused by the gate" and named and untouched else got
        self.p.step("8 takeover that drops the owners' destination", REFUSED, observed, why[:160])

    def one_step(self) -> None:
        self.p.tf.run(["state", "rm", "-no-color", RESOURCE], self.p.dir, log="state-rm")  # the first deploy's state
        self.p.write(["dst-a", "dst-b"], self.imports)
        calls0 = self.calls()
        with Watch(lambda: self.s3t.get_table_bucket_replication(tableBucketARN=self.src)) as watch:
            got, done = self.deploy(take=True)
        calls1 = self.calls()
        detail = "; ".join([*(str(t) for t in done.taken_over), *(str(n) for n in done.report.notes)]) if done else ""
        self.p.step("9 takeover in one step (import, live token, plan, gate, apply)", "ok", got, detail)
        self.p.step("9 plan after the takeover", "no changes", plan_outcome(self.p.plan()))
        live = self.live()
        kept = live is not None and live[0] == KIT_ROLE and live[1] == sorted([self.dst_a, self.dst_b])
        self.p.step("9 the owners' destination kept", "kept", "kept" if kept else repr(live))
        gap = self.gapless(watch, calls0, calls1, "TableBucket")
        self.p.step("9 never without a configuration", "never absent", gap)

    @staticmethod
    def gapless(watch: Watch, before: dict[str, int], after: dict[str, int], level: str) -> str:
        deletes = after.get(f"Delete{level}Replication", 0) - before.get(f"Delete{level}Replication", 0)
        puts = after.get(f"Put{level}Replication", 0) - before.get(f"Put{level}Replication", 0)
        if watch.absent == 0 and deletes == 0 and puts == 1 and watch.reads > 0:
            return "never absent"
        return f"absent in {watch.absent} of {watch.reads} reads; {deletes} delete(s), {puts} put(s)"

    def stale(self) -> None:
        self.fresh_start()
        self.p.write(["dst-a", "dst-b"], self.imports)
        self.take_only(self.p.dir)
        self.owners_configuration()  # the owners change it after the step: the token in the state is stale
        got, _ = self.deploy(take=False)
        self.p.step("10 apply with a token made stale after the step", "refused: stale version token", got)
        live = self.live()
        self.p.step("10 the owners' configuration left in place", "in place",
                    "in place" if live == (OWNERS_ROLE, [self.dst_a]) else repr(live))  # fmt: skip
        got, _ = self.deploy(take=True)
        self.p.step("10 the step again, then the apply", "ok", got)

    def two_runs(self) -> None:
        """Two runs from one token: their own states (two checkouts), then one state with two saved plans."""
        self.fresh_start()
        other = self.p.dir / "other-run"
        shutil.rmtree(other, ignore_errors=True)
        other.mkdir()
        shutil.copy(self.p.dir / "terraform.tfstate", other / "terraform.tfstate")
        self.p.write(["dst-a"], self.imports)
        self.p.write(["dst-a", "dst-b"], self.imports, workdir=other)
        self.take_only(self.p.dir)
        self.take_only(other)
        first, _ = self.deploy(take=False)
        second, _ = self.deploy(take=False, workdir=other)
        live = self.live()
        both = f"first {first}, second {second}, live {'the first run' if live == (KIT_ROLE, [self.dst_a]) else live}"
        self.p.step("11 two runs, their own states, one token", "first ok, second refused: stale version token, "
                    "live the first run", both)  # fmt: skip
        self.fresh_start()
        self.take_only(self.p.dir)
        self.p.write(["dst-a", "dst-b"], self.imports)
        plans = [self.p.tf.run(["plan", f"-out={n}.tfplan", "-input=false", "-no-color"], self.p.dir, log=f"plan-{n}")
                 for n in ("a", "b")]  # fmt: skip
        applied = [self.p.tf.run(["apply", "-input=false", "-no-color", f"{n}.tfplan"], self.p.dir, log=f"apply-{n}")
                   for n in ("a", "b")]  # fmt: skip
        got = ", ".join(failure(a.stdout + a.stderr) if a.returncode else "ok" for a in applied)
        self.p.step("11 two saved plans of one state", "ok, refused: stale plan",
                    got if all(p.returncode == 0 for p in plans) else "plan error")  # fmt: skip

    def table_level(self) -> None:
        self.s3t.create_namespace(tableBucketARN=self.src, namespace=["probe"])
        table = str(self.s3t.create_table(tableBucketARN=self.src, namespace="probe", name="t", format="ICEBERG")
                    ["tableARN"])  # fmt: skip
        self.owners_configuration(table)
        bucket_level = self.live()  # the bucket's own configuration, left as the state holds it
        self.p.write([d.rsplit("probe-", 1)[-1] for d in bucket_level[1]] if bucket_level else ["dst-a"],
                     {**self.imports, TABLE_RESOURCE: table}, table=(table, ["dst-a", "dst-b"]))  # fmt: skip
        calls0 = self.calls()
        with Watch(lambda: self.s3t.get_table_replication(tableArn=table)) as watch:
            got, done = self.deploy(take=True)
        calls1 = self.calls()
        detail = "; ".join(str(t) for t in done.taken_over) if done else ""
        self.p.step("12 table-level takeover in one step", "ok", got, detail)
        self.p.step("12 plan after", "no changes", plan_outcome(self.p.plan()))
        live = self.live(table)
        kept = live == (KIT_ROLE, sorted([self.dst_a, self.dst_b]))
        self.p.step("12 destination kept, never absent", "kept, never absent",
                    f"{'kept' if kept else repr(live)}, {self.gapless(watch, calls0, calls1, 'Table')}")  # fmt: skip
