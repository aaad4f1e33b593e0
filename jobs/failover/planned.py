"""The planned failover (`s3tables-kit failover --planned`): freeze the writers on the source, wait until every
replica has caught up, promote through the emergency path's steps (`s3tables_kit.jobs.failover.aws.promote`), prove RPO
0 and lift the freeze. The same run in the other direction, once the original Region answers, is the failback.

State-changing calls, in order (nothing before the preflight passes):
  PutTableBucketPolicy on the source (the freeze, merged into its policy; journal first) -> the promotion's calls
  (`s3tables_kit.jobs.failover.aws`) -> PutTableBucketPolicy / DeleteTableBucketPolicy on the source (its policy as it
  was).

One run at a time: before the freeze the run takes the leases of the source and the promoted bucket
(`s3tables_kit.jobs.failover.planned_lease`); a second run while they are held is refused (exit 2) and changes nothing.

Rerunnable: the freeze is found again by its Sid in the source's policy, and the original policy in the journal
(`<report dir>/.planned-freeze-<source bucket>.json`, written before the freeze); a rerun continues a killed run
(the promotion converges table by table) and lifts the freeze at its end. Every run that ends lifts it: on a
timeout, an error before the promotion, a refusal (then nothing is promoted), and after the promotion.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.failover import aws
from s3tables_kit.jobs.failover import model as failover_model
from s3tables_kit.jobs.failover import planned_lease as PL
from s3tables_kit.jobs.failover import planned_model as PM
from s3tables_kit.jobs.kernel import channels as channel_reads
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.killpoints import PLANNED_FAILOVER
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error
from s3tables_kit.jobs.kernel.snapshots import Snapshot
from s3tables_kit.jobs.kernel.tables import read_table_metadata
from s3tables_kit.policies import freeze as policy_freeze
from s3tables_kit.topology import channels
from s3tables_kit.topology.outputs import KitOutputs, SourceOut


@dataclass(frozen=True)
class Freeze:
    """The reviewed freeze statement and the merge rules of `s3tables_kit.policies.freeze`."""

    statement: dict[str, Any]

    @property
    def sid(self) -> str:
        return str(self.statement["Sid"])

    def is_frozen(self, text: str | None) -> bool:
        return text is not None and bool(policy_freeze.is_frozen(json.loads(text)))

    def frozen(self, text: str | None) -> str:
        return str(
            policy_freeze.render(policy_freeze.frozen_policy(json.loads(text) if text else None, self.statement))
        )

    def thawed(self, text: str) -> str | None:
        left = policy_freeze.thawed(json.loads(text))
        return None if left is None else str(policy_freeze.render(left))


def freeze_from_config(cfg: Any, source_bucket_arn: str) -> Freeze:
    return Freeze(policy_freeze.freeze_statement(tuple(cfg.protection.break_glass_principals), source_bucket_arn))


@dataclass(frozen=True)
class Options:
    timeout_s: float = PM.DEFAULT_TIMEOUT_S
    poll_s: float = PM.DEFAULT_POLL_S
    settle_s: float = PM.DEFAULT_SETTLE_S
    unfreeze: bool = False  # only lift a freeze a killed run left (no promotion)
    lease_dir: str | None = None  # the run's leases (`s3tables_kit.jobs.failover.planned_lease`); None: the report dir
    lease_ttl_s: float = PL.DEFAULT_TTL_S
    drain_timeout_s: float = PM.DEFAULT_DRAIN_TIMEOUT_S  # a streaming channel still holding rows then refuses
    commit_interval_s: float = channels.COMMIT_INTERVAL_S  # waited once every channel reads 0 (an approximate count)


@dataclass
class PlannedResult:
    exit_code: int
    report: PM.PlannedReport | None = None
    report_path: Path | None = None


def say(msg: str, enabled: bool) -> None:
    aws.say(msg, enabled)


# ----------------------------------------------------------------------------------------------------
# Reads
# ----------------------------------------------------------------------------------------------------


def source_head(clients: Clients, source_arn: str, ident: Ident) -> PM.Head:
    m = read_table_metadata(clients, source_arn, ident.namespace, ident.name)
    return PM.Head.of(json.loads(m.raw) if m.raw else None)


def catch_up(
    clients: Clients, source_arn: str, tp: failover_model.FailoverTablePlan
) -> tuple[PM.CatchUp, failover_model.FailoverTablePlan]:
    """One table's catch-up state, and its plan with the replica's metadata as read now (the promotion's input)."""
    ident = tp.ident
    try:
        src = source_head(clients, source_arn, ident)
        got, info, raw = aws.read_info_raw(clients, tp.facts.table_arn.split("/table/")[0], ident)
        detached = not got.get("managedTableInformation")
        own = info is not None and detached and failover_model.own_lineage(info.properties, tp.facts.table_arn, None)
        recorded = info.properties.get(failover_model.LINEAGE.snapshot_id) if info is not None and own else None
        state = PM.CatchUp(str(ident), src, PM.Head.of_info(info, recorded), detached=detached)
        if info is None:
            return state, tp
        snap: Snapshot | None = info.snapshot(info.current_snapshot_id) if info.current_snapshot_id else None
        facts = replace(tp.facts, info=info, metadata_json=raw, managed=not detached)
        step = failover_model.FailoverStep.PROMOTE if not detached else failover_model.FailoverStep.ALREADY
        rpo = failover_model.Rpo(0, 0.0, None) if state.caught_up else tp.rpo
        return state, replace(tp, facts=facts, snapshot=snap, pit=False, step=step, rpo=rpo)
    except (ClientError, BotoCoreError, ValueError) as exc:
        return PM.CatchUp(str(ident), PM.Head(None, None), PM.Head(None, None), error=describe_error(exc)), tp


def wait_caught_up(
    clients: Clients,
    source_arn: str,
    tables: Sequence[failover_model.FailoverTablePlan],
    opts: Options,
    concurrency: int,
    show: bool,
) -> tuple[bool, dict[str, PM.CatchUp], dict[str, failover_model.FailoverTablePlan], dict[str, float]]:
    """Poll the tables not yet caught up until all are, or the timeout. (all caught up, last state per table, the
    refreshed plans, seconds each took)."""
    t0 = time.monotonic()
    states: dict[str, PM.CatchUp] = {}
    plans = {str(t.ident): t for t in tables}
    took: dict[str, float] = {}
    todo = list(tables)
    while True:
        for state, tp in run_concurrently(lambda t: catch_up(clients, source_arn, t), todo, concurrency):
            states[state.table], plans[state.table] = state, tp
            if state.caught_up and state.table not in took:
                took[state.table] = round(time.monotonic() - t0, 3)
                if len(tables) <= 50:
                    say(f"{state.table}: {state.describe()} after {took[state.table]:.1f}s", show)
        waited = time.monotonic() - t0
        todo = [plans[n] for n, s in states.items() if not s.caught_up]
        if not todo:
            # a final pass over every table: a commit that landed while the freeze took effect moved a source on
            again = run_concurrently(lambda t: catch_up(clients, source_arn, t), list(plans.values()), concurrency)
            for state, tp in again:
                states[state.table], plans[state.table] = state, tp
            todo = [plans[n] for n, s in states.items() if not s.caught_up]
            if not todo:
                say(PM.progress_line(list(states.values()), waited), show)
                return True, states, plans, took
        say(PM.progress_line(list(states.values()), waited), show)
        if waited + opts.poll_s > opts.timeout_s:
            return False, states, plans, took
        time.sleep(opts.poll_s)


def channel_of(clients: Clients, source_arn: str, tp: failover_model.FailoverTablePlan) -> channels.Channel | None:
    """The source table's streaming channel (None: never written through `PutRows`)."""
    b = BucketRef(source_arn)
    got = call(
        clients.s3tables(b.region, b.account).get_table,
        tableBucketARN=source_arn,
        namespace=tp.ident.namespace,
        name=tp.ident.name,
    )
    return channel_reads.read(clients.channels(b.region, b.account), str(got["tableARN"]))


def drain(
    clients: Clients,
    source_arn: str,
    tables: Sequence[failover_model.FailoverTablePlan],
    opts: Options,
    concurrency: int,
    show: bool,
) -> list[str]:
    """Wait, writers frozen, until no table's streaming channel holds rows, then one commit interval (a channel can
    read 0 before its rows are committed); the tables still holding rows after `opts.drain_timeout_s` (empty: drained).
    No wait at all when no table has a channel."""
    t0, todo, seen = time.monotonic(), list(tables), False
    while True:
        found = run_concurrently(lambda t: (str(t.ident), t, channel_of(clients, source_arn, t)), todo, concurrency)
        seen = seen or any(ch is not None for _, _, ch in found)
        held = [(name, tp, ch) for name, tp, ch in found if ch is not None and not ch.drained]
        if not held:
            break
        if time.monotonic() - t0 + opts.poll_s > opts.drain_timeout_s:
            return [f"{name}: {ch.describe()}" for name, _, ch in held]
        todo = [tp for _, tp, _ in held]
        time.sleep(opts.poll_s)
    if seen:
        say(f"streaming channels drained; waiting one commit interval ({opts.commit_interval_s:.0f}s)", show)
        time.sleep(opts.commit_interval_s)
    return []


# ----------------------------------------------------------------------------------------------------
# The freeze
# ----------------------------------------------------------------------------------------------------


def _put_policy(clients: Clients, bucket_arn: str, text: str | None) -> None:
    b = BucketRef(bucket_arn)
    s3t = clients.s3tables(b.region, b.account)
    if text is None:
        call(s3t.delete_table_bucket_policy, tableBucketARN=bucket_arn)
    else:
        call(s3t.put_table_bucket_policy, tableBucketARN=bucket_arn, resourcePolicy=text)


def apply_freeze(
    clients: Clients, freeze: Freeze, source_arn: str, journal_file: Path, run_id: str, show: bool
) -> PM.Journal:
    """Freeze the source's writers, or find the freeze a killed run left (then its journal says since when)."""
    live = aws.live_bucket_policy(clients, source_arn)
    journal = PM.Journal.read(journal_file, source_arn)
    if freeze.is_frozen(live):
        assert live is not None
        if journal is None:  # the journal is lost: the original is the live policy without the freeze
            journal = PM.Journal(source_arn, freeze.thawed(live), datetime.now(UTC).isoformat(), run_id)
            journal.write(journal_file)
        say(f"the source's writers are frozen since {journal.frozen_at} (run {journal.run_id}): continuing", show)
        return journal
    journal = PM.Journal(source_arn, live, datetime.now(UTC).isoformat(), run_id)
    journal.write(journal_file)  # before the freeze: a kill right after it still knows what to put back
    _put_policy(clients, source_arn, freeze.frozen(live))
    say(f"writers frozen on {source_arn.rsplit('/', 1)[1]} ({freeze.sid} merged into its bucket policy)", show)
    return journal


def lift_freeze(clients: Clients, freeze: Freeze, source_arn: str, journal_file: Path, show: bool) -> bool:
    """Put the source's policy back as it was; True when a freeze was lifted. Safe to repeat."""
    live = aws.live_bucket_policy(clients, source_arn)
    journal = PM.Journal.read(journal_file, source_arn)
    if not freeze.is_frozen(live):
        journal_file.unlink(missing_ok=True)
        return False
    assert live is not None
    original = journal.original_policy if journal is not None else freeze.thawed(live)
    _put_policy(clients, source_arn, original)
    journal_file.unlink(missing_ok=True)
    say(f"freeze lifted: the bucket policy of {source_arn.rsplit('/', 1)[1]} is as it was", show)
    return True


# ----------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------


def _seconds_since(iso: str) -> float:
    return (datetime.now(UTC) - datetime.fromisoformat(iso)).total_seconds()


def preflight(plan: failover_model.FailoverPlan, req: aws.Request, source_error: str | None) -> list[str]:
    out = list(plan.refusals)
    if req.selector.as_of_ms is not None or req.selector.snapshot_id is not None:
        out.append("--planned promotes the latest state (RPO 0): --as-of / --snapshot-id do not apply")
    if source_error:
        out.append(f"the source does not answer ({source_error}): a planned failover needs it; use the emergency path")
    return out


def run(
    clients: Clients,
    req: aws.Request,
    outputs: KitOutputs,
    documents: aws.Documents | None,
    freeze: Freeze | None,
    opts: Options | None = None,
    *,
    as_json: bool = False,
    source: SourceOut | None = None,
) -> PlannedResult:
    t0 = time.monotonic()
    started = datetime.now(UTC)
    run_id = uuid.uuid4().hex[:12]
    show = req.show_progress
    opts = opts or Options()
    replica = next((r for r in outputs.replicas if r.table_bucket_name == req.replica_bucket), None)
    if replica is None:
        raise failover_model.FailoverError(
            f"--replica-bucket {req.replica_bucket!r} is not a replica bucket of the outputs"
        )
    source = source or aws.source_of(outputs, replica)
    src_arn = source.table_bucket_arn
    report_dir = req.report_dir or Path("reports/failover")
    journal_file = PM.journal_path(report_dir, src_arn.rsplit("/", 1)[1])
    rep = PM.PlannedReport(run_id, src_arn, replica.table_bucket_arn, "refused", started.isoformat())

    lease_dir = opts.lease_dir or str(report_dir)
    buckets = (src_arn, replica.table_bucket_arn)

    def leased() -> Any:
        return PL.held(lease_dir, buckets, run_id, started.isoformat(timespec="seconds"), show, opts.lease_ttl_s)

    def finish(code: int, outcome: str) -> PlannedResult:
        rep.outcome = outcome
        path = rep.write(report_dir) if req.confirm else None
        print(json.dumps(rep.as_dict(), indent=2, default=str) if as_json else rep.render(PM.SHOWN_ROWS))
        if path is not None and not as_json:
            print(f"Report: {path}")
        return PlannedResult(code, rep, path)

    if freeze is None:
        raise failover_model.FailoverError(
            "--planned needs --config (the freeze is built from its break-glass principals)"
        )
    if opts.unfreeze:
        try:
            with leased():
                was_frozen = lift_freeze(clients, freeze, src_arn, journal_file, show)
        except PL.LeaseRefused as exc:
            print(f"REFUSED: {exc}")
            return PlannedResult(failover_model.EXIT_REFUSED)
        print("freeze lifted" if was_frozen else "no freeze in place: nothing to do")
        return PlannedResult(failover_model.EXIT_OK)
    plan = aws.build_plan(clients, req, outputs, documents, started)
    source_error = aws.source_reachable(clients, src_arn)
    refusals = preflight(plan, req, source_error)
    if req.confirm is not None and req.confirm != plan.bucket_name:
        refusals.append(f"--confirm {req.confirm!r} does not equal the replica bucket name {plan.bucket_name!r}")
    if documents is None:
        refusals.append("no failover documents (pass --config with the kit configuration)")
    live = None if source_error else aws.live_bucket_policy(clients, src_arn)
    already = freeze.is_frozen(live)
    active = [t for t in plan.tables if t.step is not failover_model.FailoverStep.SKIP]
    if req.confirm is None:
        now = [catch_up(clients, src_arn, t)[0] for t in active] if not source_error else []
        print(
            json.dumps(plan.as_dict(), indent=2, default=str)
            if as_json
            else plan.render(show_documents=req.show_documents)
        )
        running = PL.live_holder(lease_dir, buckets)
        print(render_planned(freeze, src_arn, live, now, opts, already, refusals, running))
        return PlannedResult(failover_model.EXIT_REFUSED if refusals else failover_model.EXIT_OK)
    if refusals and not already:
        rep.messages += refusals
        return finish(failover_model.EXIT_REFUSED, "refused (nothing was changed)")
    try:
        with leased() as leases:
            return _confirmed(clients, req, plan, documents, freeze, opts, rep, finish, refusals, leases, t0)
    except PL.LeaseRefused as exc:
        rep.messages.append(str(exc))
        return finish(failover_model.EXIT_REFUSED, "refused (another run holds the lease: nothing was changed)")


def _confirmed(
    clients: Clients,
    req: aws.Request,
    plan: failover_model.FailoverPlan,
    documents: aws.Documents | None,
    freeze: Freeze,
    opts: Options,
    rep: PM.PlannedReport,
    finish: Callable[[int, str], PlannedResult],
    refusals: list[str],
    leases: PL.Leases,
    t0: float,
) -> PlannedResult:
    """The confirmed run, under the leases: freeze, wait, promote, prove, lift."""
    show, run_id, src_arn = req.show_progress, rep.run_id, rep.source_bucket_arn
    journal_file = PM.journal_path(req.report_dir or Path("reports/failover"), src_arn.rsplit("/", 1)[1])
    active = [t for t in plan.tables if t.step is not failover_model.FailoverStep.SKIP]
    if refusals:  # the source answers and a killed run's freeze is in place: writers are not left frozen
        rep.messages += refusals
        if lift_freeze(clients, freeze, src_arn, journal_file, show):
            rep.messages.append("the freeze a killed run left was lifted")
        return finish(failover_model.EXIT_REFUSED, "refused")

    assert documents is not None
    try:
        journal = apply_freeze(clients, freeze, src_arn, journal_file, run_id, show)
    except (ClientError, BotoCoreError) as exc:
        lift_freeze(clients, freeze, src_arn, journal_file, show)
        rep.messages.append(f"the freeze could not be applied: {describe_error(exc)}")
        return finish(failover_model.EXIT_FAILED, "failed before promotion")
    rep.frozen_at = journal.frozen_at
    if journal.run_id != run_id:
        rep.continued_from = journal.run_id
    PLANNED_FAILOVER.at("after-freeze", src_arn)

    def lifted(outcome: str, code: int) -> PlannedResult:
        lost = PL.lost(leases)
        if lost:  # another run took the leases over (this one stalled past their time to live): the freeze is its
            rep.messages.append(f"{lost}: this run leaves the freeze to that run")
            return finish(code, f"{outcome}; lease lost")
        lift_freeze(clients, freeze, src_arn, journal_file, show)
        rep.lifted_at = datetime.now(UTC).isoformat()
        rep.write_outage_seconds = round(_seconds_since(journal.frozen_at), 3)
        return finish(code, outcome)

    try:
        if opts.settle_s and not rep.continued_from:
            time.sleep(opts.settle_s)
        t_wait = time.monotonic()
        held = drain(clients, src_arn, active, opts, req.concurrency, show)
        if held:  # rows accepted before the freeze and not committed: promoting now would leave them behind
            rep.messages.append(
                f"streaming rows not committed after {opts.drain_timeout_s:.0f}s (nothing promoted): {'; '.join(held)}"
            )
            return lifted(
                "refused: a streaming channel did not drain (nothing was promoted)", failover_model.EXIT_REFUSED
            )
        ok, states, plans, took = wait_caught_up(clients, src_arn, active, opts, req.concurrency, show)
        rep.catch_up_seconds = round(time.monotonic() - t_wait, 3)
    except Exception as exc:  # any error before the promotion: writers back, nothing promoted
        rep.messages.append(f"before promotion: {type(exc).__name__}: {exc}")
        return lifted("failed before promotion (nothing was promoted)", failover_model.EXIT_FAILED)
    if not ok:
        rep.behind = [s.table for s in PM.slowest(list(states.values()), len(states))]
        rep.tables = [
            PM.TableProof(n, "not promoted", s.source.snapshot_id, None, took.get(n), s.describe())
            for n, s in states.items()
        ]
        rep.messages.append(f"timed out after {opts.timeout_s:.0f}s waiting for the replicas to catch up")
        return lifted("timed out (nothing was promoted)", failover_model.EXIT_FAILED)
    PLANNED_FAILOVER.at("caught-up", src_arn)
    if PL.lost(leases):  # another run took the leases over (this one stalled past their time to live)
        return lifted("stopped before the promotion (nothing was promoted by this run)", failover_model.EXIT_FAILED)

    t_caught = time.monotonic()
    plan.tables = [plans.get(str(t.ident), t) for t in plan.tables]
    b = BucketRef(plan.replica_bucket_arn)
    PLANNED_FAILOVER.watch(clients.s3tables(b.region, b.account), plan.replica_bucket_arn)
    try:
        outcomes = aws.promote(clients, req, plan, documents, run_id, t0)
    except Exception as exc:
        rep.messages.append(f"promotion: {type(exc).__name__}: {exc}")
        return lifted("promotion failed", failover_model.EXIT_FAILED)
    rep.writable_after_caught_up_seconds = round(time.monotonic() - t_caught, 3)
    rep.rto_seconds = round(time.monotonic() - t0, 3)
    rep.tables = prove(clients, src_arn, plan, outcomes, took, req.concurrency)
    PLANNED_FAILOVER.at("before-lift", src_arn)
    code = failover_model.EXIT_OK if rep.rpo_zero and all(o.ok for o in outcomes) else failover_model.EXIT_FAILED
    return lifted("promoted", code)


def prove(
    clients: Clients,
    source_arn: str,
    plan: failover_model.FailoverPlan,
    outcomes: Sequence[aws.TableOutcome],
    took: dict[str, float],
    concurrency: int,
) -> list[PM.TableProof]:
    """Per table: the source's current snapshot, read again now (still frozen), and the promoted table's."""
    by = {str(t.ident): t for t in plan.tables}

    def one(o: aws.TableOutcome) -> PM.TableProof:
        p = PM.TableProof(o.table, o.verdict, None, o.snapshot_id, took.get(o.table), o.message)
        if o.verdict == "skipped":
            return p
        try:
            p.source_snapshot_id = source_head(clients, source_arn, by[o.table].ident).snapshot_id
        except (ClientError, BotoCoreError, ValueError) as exc:
            p.message = f"source unreadable: {describe_error(exc)}"
        return p

    return [p for p in run_concurrently(one, list(outcomes), concurrency) if p.verdict != "skipped"]


def render_planned(
    freeze: Freeze,
    source_arn: str,
    live: str | None,
    states: Sequence[PM.CatchUp],
    opts: Options,
    already: bool,
    refusals: Sequence[str],
    running: tuple[str, Any] | None = None,
) -> str:
    name = source_arn.rsplit("/", 1)[1]
    lines = [
        "",
        "Planned failover (RPO 0):",
        f"  1. freeze: merge {freeze.sid} into the bucket policy of {name} (data writes denied to all but "
        "break-glass); the original policy is kept in the journal and put back at the end",
        f"  2. drain: wait (bound {opts.drain_timeout_s:.0f}s) until no table's PutRows channel holds rows, then one "
        f"commit interval ({opts.commit_interval_s:.0f}s); a channel that does not drain refuses the failover",
        f"     then wait (timeout {opts.timeout_s:.0f}s) until every replica has the source's current snapshot",
        "  3. promote (the steps above); 4. prove: source and promoted snapshot ids equal per table; lift the freeze",
        "",
        f"  bucket policy of {name} now: {live if live is not None else 'none'}",
        f"  while frozen: {freeze.frozen(live if not already else freeze.thawed(live or '{}'))}",
    ]
    if running is not None:
        lines.append(f"  A PLANNED FAILOVER RUNS NOW: {running[1].describe()} holds the lease of {running[0]}")
    elif already:
        lines.append("  WRITERS ARE FROZEN NOW (a run was killed): --confirm continues it, --unfreeze lifts the freeze")
    if states:
        lines += ["", "  " + PM.progress_line(states, 0.0)]
    lines += [f"REFUSED: {r}" for r in refusals]
    return "\n".join(lines)
