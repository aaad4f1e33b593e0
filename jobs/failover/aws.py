"""The thin AWS layer of the failover: read the facts, then (confirmed) promote, set the point in time, open to
writers, verify, report. Every decision is made by the pure `model` from the facts read here.

State-changing calls, in the order they are made (nothing before the preflight passes):
  DisassociateTableReplication (per table) -> UpdateTableMetadataLocation (point in time, per table) ->
  PutTablePolicy (per table) -> PutTableBucketPolicy (once) -> UpdateTableMetadataLocation (lineage commit).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.failover import model as failover_model
from s3tables_kit.jobs.failover.iceberg import (
    S3TablesCommitter,
    io_props,
    partition_counts,
    set_current_snapshot,
    set_properties,
)
from s3tables_kit.jobs.failover.outcomes import TableOutcome, summary, worst_rpo, write_report
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.commits import source_commits
from s3tables_kit.jobs.kernel.concurrency import Progress, run_concurrently
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error, error_code
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.kernel.snapshots import TableInfo, iso_ms, table_info_from_metadata
from s3tables_kit.jobs.kernel.tables import TableRef, list_tables, read_table_metadata, table_call
from s3tables_kit.policies.failover import failover_documents
from s3tables_kit.topology.outputs import EstateOutputsError, KitOutputs, ReplicaOut, SourceOut


@dataclass(frozen=True)
class Documents:
    """The failover documents as the compact JSON the tool puts (byte-identical to the failover topology's)."""

    bucket_policy: str
    table_policy: Callable[[str], str]


def render_policy(document: Any) -> str:
    """The JSON text a policy document is deployed as: the stacks' `json.dumps(document, indent=2)`
    (`s3tables_kit.infra.constructs.replica_protection.ReplicaBucketPolicy`), so the tool and Terraform put the same
    bytes."""
    return json.dumps(document, indent=2)


def documents_from_config(cfg: Any, replica_bucket: str) -> Documents:
    """`s3tables_kit.policies.failover.failover_documents` (the one builder the failover topology's stacks use too),
    rendered as the stacks render them. In a failover topology a destination of the promoted source (a new bucket
    included) is promoted like a replica (`s3tables_kit.jobs.failover.promotion`)."""
    from s3tables_kit.jobs.failover.promotion import promotion_config

    docs = failover_documents(promotion_config(cfg, replica_bucket), replica_bucket)
    return Documents(render_policy(docs.bucket_policy), lambda arn: render_policy(docs.table_policy(arn)))


@dataclass(frozen=True)
class Request:
    replica_bucket: str  # name of the replica table bucket to promote
    tables: tuple[Ident, ...] = ()
    namespaces: tuple[str, ...] = ()
    selector: Selector = field(default_factory=Selector)
    confirm: str | None = None  # the typed bucket name; None: plan only
    concurrency: int = 16
    report_dir: Path | None = None
    show_progress: bool = True
    show_documents: bool = False  # a plan prints each document it would put; else one line per document

    def selects(self, ident: Ident) -> bool:
        if not self.tables and not self.namespaces:
            return True
        return ident in self.tables or ident.namespace in self.namespaces


def say(msg: str, enabled: bool = True) -> None:
    if enabled:
        print(f"[failover {datetime.now(UTC):%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------------
# Facts
# ----------------------------------------------------------------------------------------------------


def read_info(clients: Clients, bucket_arn: str, ident: Ident) -> tuple[dict[str, Any], TableInfo | None]:
    """(GetTable response, the table's current Iceberg metadata or None)."""
    got, info, _ = read_info_raw(clients, bucket_arn, ident)
    return got, info


def read_info_raw(
    clients: Clients, bucket_arn: str, ident: Ident
) -> tuple[dict[str, Any], TableInfo | None, bytes | None]:
    """`read_info` and the metadata file's bytes (kept for the verification)."""
    m = read_table_metadata(clients, bucket_arn, ident.namespace, ident.name)
    if m.location is None or m.raw is None:
        return m.table, None, None
    return m.table, table_info_from_metadata(ident, json.loads(m.raw), m.location), m.raw


def source_reachable(clients: Clients, source_bucket_arn: str) -> str | None:
    """None when the source Region answers (one cheap ListTables), else the error."""
    b = BucketRef(source_bucket_arn)
    probe = replace(clients, max_attempts=2)  # a Region that does not answer must not hold the plan up
    try:
        call(probe.s3tables(b.region, b.account).list_tables, tableBucketARN=source_bucket_arn, maxTables=1)
        return None
    except (ClientError, BotoCoreError) as exc:
        return describe_error(exc)


def source_facts(
    clients: Clients, source_bucket_arn: str, ident: Ident, source_arn: str | None
) -> failover_model.SourceFacts:
    b = BucketRef(source_bucket_arn)
    s3t = clients.s3tables(b.region, b.account)
    try:
        if source_arn is None:
            got = call(s3t.get_table, tableBucketARN=source_bucket_arn, namespace=ident.namespace, name=ident.name)
            source_arn = str(got["tableARN"])
        ref = TableRef(source_bucket_arn, ident.namespace, ident.name, source_arn)
        commits, where = source_commits(clients, ref)
        dests: tuple[failover_model.SourceDestination, ...] = ()
        try:
            st = call(s3t.get_table_replication_status, tableArn=source_arn)
            dests = tuple(
                failover_model.SourceDestination(
                    bucket_arn=str(d.get("destinationTableBucketArn")),
                    status=str(d.get("replicationStatus", "")).lower(),
                    table_arn=d.get("destinationTableArn"),
                    last_replicated_at=((d.get("lastSuccessfulReplicatedUpdate") or {}).get("timestamp") or None)
                    and d["lastSuccessfulReplicatedUpdate"]["timestamp"].astimezone(UTC).isoformat(),
                    failure_message=d.get("failureMessage"),
                )
                for d in st.get("destinations", [])
            )
        except ClientError as exc:
            if error_code(exc) != "NotFoundException":
                raise
        return failover_model.SourceFacts(commits=tuple(commits), commits_from=where, destinations=dests)
    except (ClientError, BotoCoreError) as exc:
        return failover_model.SourceFacts(error=describe_error(exc))


def table_facts(
    clients: Clients,
    ref: TableRef,
    outputs: KitOutputs,
    source_error: str | None,
    source: SourceOut,
) -> failover_model.TableFacts:
    """`source`: the source the replica is of (`source_of`)."""
    ident = Ident(ref.namespace, ref.name)
    got, info, raw = read_info_raw(clients, ref.bucket_arn, ident)
    managed_info = (got.get("managedTableInformation") or {}).get("replicationInformation") or {}
    props = info.properties if info else {}
    source_arn = managed_info.get("sourceTableARN") or props.get(failover_model.LINEAGE.source_table_arn)
    src = (
        failover_model.SourceFacts(error=source_error)
        if source_error
        else source_facts(clients, source.table_bucket_arn, ident, source_arn)
    )
    return failover_model.TableFacts(
        ident=ident,
        table_arn=ref.arn,
        managed=bool(managed_info),
        source_table_arn=source_arn,
        info=info,
        source=src,
        expected_replica=str(ident) in set(source.replicated_tables),
        promoted_by_run=props.get(failover_model.LINEAGE.run_id),
        metadata_json=raw,
    )


def caller_identity(clients: Clients, region: str, account: str) -> failover_model.Caller:
    ident = call(clients.client("sts", region, account).get_caller_identity)
    return failover_model.Caller(arn=str(ident["Arn"]), account=str(ident["Account"]))


def live_bucket_policy(clients: Clients, bucket_arn: str) -> str | None:
    b = BucketRef(bucket_arn)
    try:
        r = call(clients.s3tables(b.region, b.account).get_table_bucket_policy, tableBucketARN=bucket_arn)
        return str(r["resourcePolicy"])
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            return None
        raise


def live_table_policy(clients: Clients, bucket_arn: str, ident: Ident) -> str | None:
    try:
        r = table_call(clients, bucket_arn, ident.namespace, ident.name, "get_table_policy")
        return str(r["resourcePolicy"])
    except ClientError as exc:
        if error_code(exc) == "NotFoundException":
            return None
        raise


def source_of(outputs: KitOutputs, replica: ReplicaOut) -> SourceOut:
    """The one source `replica` is a replica of; a fan-in vault (several sources of an estate) is refused: it is
    restored from (s3tables-kit recover), never promoted."""
    try:
        return outputs.source_of(replica)
    except EstateOutputsError as exc:
        raise failover_model.FailoverError(str(exc)) from None


def build_plan(
    clients: Clients, req: Request, outputs: KitOutputs, documents: Documents | None, now: datetime | None = None
) -> failover_model.FailoverPlan:
    """Read-only: every call here is a Get/List (the dry run's guarantee, tested against the emulator)."""
    now = now or datetime.now(UTC)
    replica = next((r for r in outputs.replicas if r.table_bucket_name == req.replica_bucket), None)
    if replica is None:
        names = ", ".join(r.table_bucket_name for r in outputs.replicas)
        raise failover_model.FailoverError(
            f"--replica-bucket {req.replica_bucket!r} is not a replica bucket of the outputs ({names})"
        )
    arn = replica.table_bucket_arn
    source = source_of(outputs, replica)
    caller = caller_identity(clients, replica.region, replica.account_id)
    plan = failover_model.FailoverPlan(
        replica_bucket_arn=arn,
        selector=req.selector,
        caller=caller,
        break_glass=failover_model.is_break_glass(caller, replica.break_glass_principals),
        break_glass_principals=tuple(replica.break_glass_principals),
        generated_at=now.isoformat(),
    )
    refs = [t for t in list_tables(clients, arn) if req.selects(Ident(t.namespace, t.name))]
    missing = [i for i in req.tables if all(Ident(t.namespace, t.name) != i for t in refs)]
    plan.errors.extend(f"{i}: no such table in {req.replica_bucket}" for i in missing)
    if not refs and not missing:
        plan.errors.append(f"no table of {req.replica_bucket} matches the selection")
    source_error = source_reachable(clients, source.table_bucket_arn)
    if source_error:
        say(f"the source Region does not answer ({source_error}): RPO is a lower bound", req.show_progress)
    progress = Progress("plan", len(refs), enabled=req.show_progress and len(refs) > 50)
    facts = run_concurrently(
        lambda r: _facts_or_error(clients, r, outputs, source_error, documents is not None, source),
        refs,
        req.concurrency,
        progress,
    )
    # the other replicas of the same source (an estate's other buckets hold other sources' tables)
    same_source = outputs.replicas_of(source)
    kit_buckets = [r.table_bucket_arn for r in same_source]
    if documents is not None:
        plan.bucket_policy = failover_model.PolicyChange(
            arn, "bucket-policy", live_bucket_policy(clients, arn), documents.bucket_policy
        )
    for item in facts:
        if isinstance(item, str):
            plan.errors.append(item)
            continue
        f, live = item
        tp_change = None
        if documents is not None and f.state is not failover_model.ReplicaState.NOT_REPLICA:
            tp_change = failover_model.PolicyChange(
                f.table_arn, "table-policy", live, documents.table_policy(f.table_arn)
            )
        tp = failover_model.plan_table(
            f, req.selector, now, replica_bucket_arn=arn, kit_replica_buckets=kit_buckets, table_policy=tp_change
        )
        plan.tables.append(_guard_rerun(tp))
    if documents is None:
        plan.errors.append("no failover documents (pass --config with the kit configuration): cannot open to writers")
    return plan


def _facts_or_error(
    clients: Clients,
    ref: TableRef,
    outputs: KitOutputs,
    source_error: str | None,
    with_policy: bool,
    source: SourceOut,
) -> tuple[failover_model.TableFacts, str | None] | str:
    """A table's facts and its live table policy (read in the same worker: one table's reads run concurrently
    with the other tables'), or why they could not be read."""
    try:
        f = table_facts(clients, ref, outputs, source_error, source)
        live = None
        if with_policy and f.state is not failover_model.ReplicaState.NOT_REPLICA:
            live = live_table_policy(clients, ref.bucket_arn, f.ident)
        return f, live
    except (ClientError, BotoCoreError, ValueError) as exc:
        return f"{ref.qualified}: facts unreadable: {describe_error(exc)}"


def _guard_rerun(tp: failover_model.FailoverTablePlan) -> failover_model.FailoverTablePlan:
    """A second run converges; it never sets back a table that writers have committed to since the failover."""
    info, snap = tp.facts.info, tp.snapshot
    if tp.step is not failover_model.FailoverStep.ALREADY or info is None or snap is None:
        return tp
    recorded = info.properties.get(failover_model.LINEAGE.snapshot_id)
    if recorded == str(snap.snapshot_id) or not tp.pit:
        return replace(tp, pit=False)
    if recorded is not None:
        return replace(
            tp,
            problems=(
                *tp.problems,
                f"already promoted (run {info.properties.get(failover_model.LINEAGE.run_id)}) at snapshot {recorded}; "
                "setting it "
                f"to {snap.snapshot_id} now would discard commits made since: refused (use Iceberg's "
                "set_current_snapshot by hand if that is what you want)",
            ),
        )
    return tp


# ----------------------------------------------------------------------------------------------------
# Promotion
# ----------------------------------------------------------------------------------------------------


def disassociate(clients: Clients, bucket_arn: str, tp: failover_model.FailoverTablePlan) -> str:
    """'disassociated' or 'already detached' (recognised, also when a concurrent run won the race)."""
    b = BucketRef(bucket_arn)
    s3t = clients.s3tables(b.region, b.account)
    if tp.step is failover_model.FailoverStep.ALREADY:
        return "already detached"
    try:
        call(s3t.disassociate_table_replication, tableArn=tp.facts.table_arn)
        return "disassociated"
    except ClientError as exc:
        got = call(s3t.get_table, tableBucketARN=bucket_arn, namespace=tp.ident.namespace, name=tp.ident.name)
        if not got.get("managedTableInformation"):
            return "already detached"
        raise exc


def promote(
    clients: Clients,
    req: Request,
    plan: failover_model.FailoverPlan,
    documents: Documents,
    run_id: str,
    t0: float,
) -> list[TableOutcome]:
    arn = plan.replica_bucket_arn
    b = BucketRef(arn)
    s3t = clients.s3tables(b.region, b.account)
    committer = S3TablesCommitter(s3t, arn, io_props(s3t, arn, clients.endpoint_url))
    active = [t for t in plan.tables if t.step is not failover_model.FailoverStep.SKIP]
    outcomes = {str(t.ident): _outcome(t) for t in plan.tables}
    progress = Progress("promote", len(active), enabled=req.show_progress)

    def step(o: TableOutcome, name: str, fn: Callable[[], Any]) -> Any:
        s = time.monotonic()
        try:
            return fn()
        finally:
            o.steps[name] = round(time.monotonic() - s, 3)

    def first(tp: failover_model.FailoverTablePlan) -> None:
        o = outcomes[str(tp.ident)]
        try:
            how = step(o, "disassociate", lambda: disassociate(clients, arn, tp))
            o.verdict = "promoted" if how == "disassociated" else "converged"
            snap_id = tp.snapshot.snapshot_id if tp.snapshot else None
            if tp.pit and snap_id is not None:
                step(
                    o, "point_in_time", lambda: set_current_snapshot(committer, tp.ident, snap_id, _known_metadata(tp))
                )
                o.point_in_time = True
            if tp.table_policy is not None and tp.table_policy.changed:
                after = tp.table_policy.after
                step(
                    o,
                    "table_policy",
                    lambda: call(
                        s3t.put_table_policy,
                        tableBucketARN=arn,
                        namespace=tp.ident.namespace,
                        name=tp.ident.name,
                        resourcePolicy=after,
                    ),
                )
            say(
                f"{tp.ident}: {how}" + (f", current snapshot set to {snap_id}" if o.point_in_time else ""),
                req.show_progress,
            )
        except (ClientError, BotoCoreError, ValueError) as exc:
            o.verdict, o.message = "failed", describe_error(exc)
            say(f"{tp.ident}: FAILED: {o.message}", req.show_progress)
        except Exception as exc:  # pyiceberg's commit errors: reported per table, the others go on
            o.verdict, o.message = "failed", f"{type(exc).__name__}: {exc}"
            say(f"{tp.ident}: FAILED: {o.message}", req.show_progress)

    run_concurrently(first, active, req.concurrency, progress)
    if plan.bucket_policy is not None and plan.bucket_policy.changed and any(outcomes[str(t.ident)].ok for t in active):
        try:
            call(s3t.put_table_bucket_policy, tableBucketARN=arn, resourcePolicy=plan.bucket_policy.after)
            say(f"bucket policy of {plan.bucket_name}: failover document applied", req.show_progress)
        except ClientError as exc:
            for t in active:
                o = outcomes[str(t.ident)]
                if o.ok:
                    o.verdict, o.message = "failed", f"bucket policy not applied: {describe_error(exc)}"

    def second(tp: failover_model.FailoverTablePlan) -> None:
        o = outcomes[str(tp.ident)]
        if not o.ok:
            return
        try:
            step(o, "verify", lambda: verify(committer, tp, o, run_id))
            o.rto_seconds = round(time.monotonic() - t0, 3)
        except Exception as exc:
            o.verdict, o.message = "failed", f"verification: {type(exc).__name__}: {exc}"

    run_concurrently(second, active, req.concurrency, None)
    return [outcomes[str(t.ident)] for t in plan.tables]


def _outcome(tp: failover_model.FailoverTablePlan) -> TableOutcome:
    s = tp.snapshot
    return TableOutcome(
        table=str(tp.ident),
        table_arn=tp.facts.table_arn,
        verdict="skipped" if tp.step is failover_model.FailoverStep.SKIP else "planned",
        source_table_arn=tp.facts.source_table_arn,
        snapshot_id=s.snapshot_id if s else None,
        snapshot_committed_at=s.committed_at if s else None,
        rpo=tp.rpo.describe(),
        rpo_seconds=tp.rpo.seconds,
        protection=protection_text(tp),
        message="not a replica: left alone" if tp.step is failover_model.FailoverStep.SKIP else "",
    )


def protection_text(tp: failover_model.FailoverTablePlan) -> str:
    others = ", ".join(a.rsplit("/", 1)[1] for a in tp.other_replicas)
    text = (
        "failover table + bucket policies (writers allowed; deletion, retention and policy changes: break-glass "
        "only); NOT replicated until the failover topology's replication is deployed ([failover] replicate_to)"
    )
    return text + (f"; stale copies remain in {others}" if others else "; no other replica holds it")


def _known_metadata(tp: failover_model.FailoverTablePlan) -> tuple[str, bytes] | None:
    """The metadata file read at plan time, by location (the committer reuses it when the table still points there)."""
    f = tp.facts
    if f.info is None or f.info.metadata_location is None or f.metadata_json is None:
        return None
    return f.info.metadata_location, f.metadata_json


def verify(committer: S3TablesCommitter, tp: failover_model.FailoverTablePlan, o: TableOutcome, run_id: str) -> None:
    """The table accepts a commit (lineage properties), its current snapshot is the chosen one, and its record counts
    per partition, read from the manifests, add up to the chosen snapshot's record count in the replica's metadata
    as read at plan time."""
    t = time.monotonic()
    table = committer.load(tp.ident, known=_known_metadata(tp))
    current = table.metadata.current_snapshot_id
    chosen = tp.snapshot.snapshot_id if tp.snapshot else None
    if chosen is None or (not tp.pit and tp.step is failover_model.FailoverStep.PROMOTE):
        chosen = current  # latest: whatever the replica had when it was detached (an in-flight commit may land)
    props, managed = table.metadata.properties, tp.facts.source_table_arn if tp.facts.managed else None
    recorded = (
        props.get(failover_model.LINEAGE.snapshot_id)
        if failover_model.own_lineage(props, tp.facts.table_arn, managed)
        else None
    )
    if recorded is not None and recorded != str(chosen) and tp.step is failover_model.FailoverStep.ALREADY:
        chosen = int(recorded)  # converged run: the failover point is the first run's
    if current != chosen and tp.step is failover_model.FailoverStep.PROMOTE:
        raise ValueError(f"current snapshot {current} is not the chosen snapshot {chosen}")
    o.snapshot_id = chosen
    snap = table.metadata.snapshot_by_id(chosen) if chosen is not None else None
    o.snapshot_committed_at = iso_ms(snap.timestamp_ms) if snap else None
    o.steps["verify_load"] = round(time.monotonic() - t, 3)
    t = time.monotonic()
    if recorded is None:
        table = set_properties(
            committer,
            tp.ident,
            {
                failover_model.PROP_PROMOTED_AT: datetime.now(UTC)
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"),
                failover_model.LINEAGE.source_table_arn: tp.facts.source_table_arn or "unknown",
                failover_model.LINEAGE.snapshot_id: str(chosen),
                failover_model.LINEAGE.run_id: run_id,
                failover_model.PROP_TABLE_ARN: tp.facts.table_arn,
                failover_model.PROP_PIT: "true" if o.point_in_time else "false",
            },
            table=table,
        )
        if table.metadata.properties.get(failover_model.LINEAGE.run_id) != run_id:
            raise ValueError("the lineage commit is not visible after it succeeded")
    else:
        o.message = f"verified earlier by run {table.metadata.properties.get(failover_model.LINEAGE.run_id)}"
    o.steps["verify_commit"] = round(time.monotonic() - t, 3)
    t = time.monotonic()
    counts = partition_counts(table, chosen)
    o.steps["verify_counts"] = round(time.monotonic() - t, 3)
    planned = tp.facts.info.snapshot(chosen) if tp.facts.info and chosen is not None else None
    expected = None if planned is None or planned.total_records is None else planned.total_records
    if expected is not None and sum(counts.values()) != expected:
        raise ValueError(
            f"the manifests of snapshot {chosen} count {sum(counts.values())} records, the replica's metadata "
            f"{expected}"
        )
    o.partitions, o.rows = len(counts), sum(counts.values())


# ----------------------------------------------------------------------------------------------------
# Failback plan
# ----------------------------------------------------------------------------------------------------


def failback(clients: Clients, req: Request, outputs: KitOutputs) -> tuple[str, dict[str, Any]]:
    replica = next((r for r in outputs.replicas if r.table_bucket_name == req.replica_bucket), None)
    if replica is None:
        raise failover_model.FailoverError(
            f"--replica-bucket {req.replica_bucket!r} is not a replica bucket of the outputs"
        )
    promoted_arn, original_arn = replica.table_bucket_arn, source_of(outputs, replica).table_bucket_arn
    original_error = source_reachable(clients, original_arn)
    out = []
    for ref in list_tables(clients, promoted_arn):
        ident = Ident(ref.namespace, ref.name)
        if not req.selects(ident):
            continue
        got, info = read_info(clients, promoted_arn, ident)
        if got.get("managedTableInformation") or info is None or failover_model.LINEAGE.run_id not in info.properties:
            continue  # still a replica, or not promoted by the kit
        orig_arn: str | None = info.properties.get(failover_model.LINEAGE.source_table_arn)
        original: TableInfo | None = None
        err = original_error
        if err is None:
            try:
                got_o, original = read_info(clients, original_arn, ident)
                orig_arn = str(got_o.get("tableARN") or orig_arn)
            except ClientError as exc:
                if error_code(exc) == "NotFoundException":
                    orig_arn = None
                else:
                    err = describe_error(exc)
        out.append(failover_model.failback_table(ident, ref.arn, info, orig_arn, original, err))
    return failover_model.render_failback(promoted_arn, original_arn, out), failover_model.failback_dict(
        promoted_arn, original_arn, out
    )


# ----------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    exit_code: int
    plan: failover_model.FailoverPlan | None = None
    outcomes: list[TableOutcome] = field(default_factory=list)
    report: Path | None = None
    rto_seconds: float | None = None
    plan_seconds: float | None = None


def run(
    clients: Clients, req: Request, outputs: KitOutputs, documents: Documents | None, *, as_json: bool = False
) -> RunResult:
    t0 = time.monotonic()
    started = datetime.now(UTC)
    run_id = uuid.uuid4().hex[:12]
    plan = build_plan(clients, req, outputs, documents, started)
    plan_seconds = time.monotonic() - t0
    if req.confirm is None:
        print(
            json.dumps(plan.as_dict(), indent=2, default=str)
            if as_json
            else plan.render(show_documents=req.show_documents)
        )
        if not as_json:
            print("\nDry run: nothing was changed. To promote: --confirm " + plan.bucket_name)
        return RunResult(failover_model.EXIT_REFUSED if plan.refusals else failover_model.EXIT_OK, plan)
    if req.confirm != plan.bucket_name:
        plan.errors.append(f"--confirm {req.confirm!r} does not equal the replica bucket name {plan.bucket_name!r}")
    if plan.refusals or documents is None:
        print(plan.render(show_documents=False))
        print("\nNothing was changed.", file=sys.stderr)
        return RunResult(failover_model.EXIT_REFUSED, plan)
    say(
        f"promoting {sum(t.step is not failover_model.FailoverStep.SKIP for t in plan.tables)} table(s) "
        f"of {plan.bucket_name}",
        req.show_progress,
    )
    outcomes = promote(clients, req, plan, documents, run_id, t0)
    rto = round(time.monotonic() - t0, 3)
    header = {
        "run_id": run_id,
        "started_at": started.isoformat(),
        "replica_bucket_arn": plan.replica_bucket_arn,
        "selector": req.selector.describe(),
        "caller": plan.caller.arn,
        "plan_seconds": round(plan_seconds, 3),
        "rto_seconds": rto,
        "rpo": worst_rpo(plan),
    }
    report = write_report(req.report_dir, started, run_id, header, plan, outcomes) if req.report_dir else None
    print(summary(outcomes, header))
    if report is not None:
        print(f"Report: {report}")
    code = failover_model.EXIT_OK if all(o.ok for o in outcomes) else failover_model.EXIT_FAILED
    return RunResult(code, plan, outcomes, report, rto, round(plan_seconds, 3))
