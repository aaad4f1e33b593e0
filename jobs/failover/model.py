"""The failover plan, pure: facts gathered by `aws.py` in, the plan (per table state, RPO, snapshot, other replicas,
policy changes, steps) and the failback plan out. No I/O, no AWS, no Spark: tested with hand-made facts.

RPO reuses the lag logic `status` reports (`s3tables_kit.jobs.kernel.commits`: `commit_times`, `compute_lag`): the
source commits the replica lacks are the source commit times after the replica's last replicated commit (the replica's
own `last-updated-ms`, a copy of the source's value at that commit); when the source Region does not answer, the RPO is
"at least since" that commit.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from s3tables_kit.jobs.kernel.commits import compute_lag
from s3tables_kit.jobs.kernel.idents import Ident, JobError
from s3tables_kit.jobs.kernel.lineage import Lineage
from s3tables_kit.jobs.kernel.selectors import PlanError, Selector, resolve_snapshot
from s3tables_kit.jobs.kernel.snapshots import Snapshot, TableInfo, iso_ms

# Lineage properties the failover records in every promoted table (the contract for reruns, audits, failback): the
# shared ones (`LINEAGE.source_table_arn`, `.snapshot_id`, `.run_id`) and the failover's own.
LINEAGE = Lineage.of("failover")
PROP_PROMOTED_AT = LINEAGE.key("promoted-at")
PROP_PIT = LINEAGE.key("point-in-time")
PROP_TABLE_ARN = LINEAGE.key("table-arn")  # the promoted table itself: lineage replicated onwards names another


def own_lineage(props: dict[str, str], table_arn: str, managed_source_arn: str | None) -> bool:
    """Were these kit.failover.* properties written on this table, not replicated from a promotion upstream (a
    failback's replicas carry the first failover's)? Lineage without the table's ARN (written before it was
    recorded) is this table's unless the table is still a replica of another source than the one it names."""
    if LINEAGE.snapshot_id not in props:
        return False
    if PROP_TABLE_ARN in props:
        return props[PROP_TABLE_ARN] == table_arn
    return managed_source_arn is None or props.get(LINEAGE.source_table_arn) == managed_source_arn


EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2  # as the recovery job's: all ok / some failed / plan-time refusal
SHOWN_TABLE_DOCUMENTS = 3  # the rendered plan shows this many table policies in full (the JSON plan has all)


class FailoverError(JobError):
    """A refusal at plan time (exit 2): the message is for the on-call engineer, nothing was changed."""


class ReplicaState(Enum):
    REPLICA = "replica"  # managed by the replication service: will be disassociated
    DETACHED = "already detached"  # disassociated earlier (by this tool or by hand): skipped by promote
    NOT_REPLICA = "not a replica"  # never replicated (a table created in the replica bucket): left alone


@dataclass(frozen=True)
class SourceDestination:
    bucket_arn: str
    status: str  # completed | pending | failed (lower case)
    table_arn: str | None = None
    last_replicated_at: str | None = None
    failure_message: str | None = None

    @property
    def detached(self) -> bool:
        return self.status == "failed" and (self.failure_message or "").startswith("The destination table has been det")


@dataclass(frozen=True)
class SourceFacts:
    """What the source Region told about one table; `error` set when it did not answer."""

    error: str | None = None
    commits: tuple[datetime, ...] = ()  # every commit time known to the source's current metadata, ascending
    commits_from: str = "metadata"  # or "modifiedAt (lower bound)"
    destinations: tuple[SourceDestination, ...] = ()

    @property
    def reachable(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class TableFacts:
    ident: Ident
    table_arn: str
    managed: bool  # GetTable returned managedTableInformation (a replica today)
    source_table_arn: str | None  # from managedTableInformation, or the kit's lineage property once detached
    info: TableInfo | None  # the replica's current Iceberg metadata (None: no metadata yet)
    source: SourceFacts
    expected_replica: bool = True  # the outputs say this table is replicated (kit-managed)
    promoted_by_run: str | None = None  # kit.failover.run-id found in its properties
    # the metadata file as read at plan time (immutable: a metadata location names one content), so the
    # verification does not read and parse it again when the table still points at it
    metadata_json: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def state(self) -> ReplicaState:
        if self.managed:
            return ReplicaState.REPLICA
        if self.promoted_by_run or self.expected_replica or any(d.detached for d in self.source.destinations):
            return ReplicaState.DETACHED
        return ReplicaState.NOT_REPLICA


@dataclass(frozen=True)
class Caller:
    arn: str
    account: str


def principal_matches(caller_arn: str, principal: str) -> bool:
    """Is the STS caller identity `caller_arn` the IAM principal `principal`? An assumed-role session
    (`arn:aws:sts::A:assumed-role/NAME/session`) is role NAME of account A; the role's path is not in the session
    ARN, so roles compare by account and name."""
    if caller_arn == principal:
        return True
    c, p = caller_arn.split(":", 5), principal.split(":", 5)
    if len(c) < 6 or len(p) < 6 or c[4] != p[4]:
        return False
    if c[5].startswith("assumed-role/") and p[5].startswith("role/"):
        return c[5].split("/")[1] == p[5].rsplit("/", 1)[1]
    return False


def is_break_glass(caller: Caller, principals: Sequence[str]) -> bool:
    return any(principal_matches(caller.arn, p) for p in principals)


# ----------------------------------------------------------------------------------------------------
# RPO
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rpo:
    lacking_commits: int | None  # None: unknown (source unreachable)
    seconds: float | None  # age of the oldest lacking commit (0: nothing lacking); None when unknown
    at_least_since: str | None  # when unknown: writes after this instant may be lost
    note: str = ""

    def describe(self) -> str:
        return self.short() + (f" ({self.note})" if self.note else "")

    def short(self) -> str:
        """The RPO without its reason (the plan's table column; the reason is printed in full below it)."""
        if self.lacking_commits is None:
            return f"at least since {self.at_least_since or 'unknown'}"
        if self.lacking_commits == 0:
            return "0 (the replica has every source commit)"
        return f"{self.lacking_commits} commit(s) lacking, oldest {format_seconds(self.seconds)} old"


def format_seconds(s: float | None) -> str:
    from s3tables_kit.jobs.kernel.render import format_duration

    return format_duration(s)


def compute_rpo(replica_last_commit_ms: int | None, source: SourceFacts, now: datetime) -> Rpo:
    last = datetime.fromtimestamp(replica_last_commit_ms / 1000, tz=UTC) if replica_last_commit_ms else None
    if not source.reachable:
        return Rpo(None, None, last.isoformat() if last else "the replica's creation", f"source: {source.error}")
    lacking = [c for c in source.commits if last is None or c > last]
    note = "lower bound: source metadata unreadable" if "lower" in source.commits_from else ""
    return Rpo(len(lacking), compute_lag(source.commits, last, now), None, note)


# ----------------------------------------------------------------------------------------------------
# The plan
# ----------------------------------------------------------------------------------------------------


class FailoverStep(Enum):
    SKIP = "skip"  # nothing to do (not a replica)
    PROMOTE = "disassociate"
    ALREADY = "already detached: skip disassociation"


@dataclass(frozen=True)
class PolicyChange:
    resource: str  # bucket ARN or table ARN
    kind: str  # bucket-policy | table-policy
    before: str | None  # live JSON (None: none or unreadable)
    after: str  # the JSON the tool will put (compact, byte-identical to the failover topology's)

    @property
    def changed(self) -> bool:
        if self.before is None:
            return True
        try:
            return bool(json.loads(self.before) != json.loads(self.after))
        except ValueError:
            return True


@dataclass(frozen=True)
class FailoverTablePlan:
    facts: TableFacts
    step: FailoverStep
    rpo: Rpo
    snapshot: Snapshot | None  # the snapshot the promoted table will have as current
    pit: bool  # the snapshot differs from the replica's current one: set_current_snapshot after promotion
    other_replicas: tuple[str, ...]  # other replica bucket ARNs that still hold the table after the promotion
    other_replicas_from: str  # "source replication status" | "outputs (source unreachable)"
    table_policy: PolicyChange | None
    problems: tuple[str, ...] = ()

    @property
    def ident(self) -> Ident:
        return self.facts.ident

    def as_dict(self) -> dict[str, Any]:
        f, s = self.facts, self.snapshot
        return {
            "table": str(f.ident),
            "table_arn": f.table_arn,
            "state": f.state.value,
            "step": self.step.value,
            "source_table_arn": f.source_table_arn,
            "last_replicated_commit": iso_ms(f.info.last_updated_ms) if f.info and f.info.last_updated_ms else None,
            "replica_current_snapshot": f.info.current_snapshot_id if f.info else None,
            "rpo": self.rpo.describe(),
            "rpo_lacking_commits": self.rpo.lacking_commits,
            "rpo_seconds": self.rpo.seconds,
            "rpo_at_least_since": self.rpo.at_least_since,
            "snapshot_id": s.snapshot_id if s else None,
            "snapshot_committed_at": s.committed_at if s else None,
            "point_in_time": self.pit,
            "other_replicas": list(self.other_replicas),
            "other_replicas_from": self.other_replicas_from,
            "table_policy_changes": bool(self.table_policy and self.table_policy.changed),
            "problems": list(self.problems),
        }


@dataclass
class FailoverPlan:
    replica_bucket_arn: str
    selector: Selector
    caller: Caller
    break_glass: bool
    break_glass_principals: tuple[str, ...]
    tables: list[FailoverTablePlan] = field(default_factory=list)
    bucket_policy: PolicyChange | None = None
    errors: list[str] = field(default_factory=list)
    generated_at: str = ""

    @property
    def bucket_name(self) -> str:
        return self.replica_bucket_arn.rsplit("/", 1)[1]

    def steps(self) -> list[str]:
        """The order of the promotion, as the tool runs it."""
        todo = [t for t in self.tables if t.step is FailoverStep.PROMOTE]
        done = [t for t in self.tables if t.step is FailoverStep.ALREADY]
        pit = [t for t in self.tables if t.pit]
        out = [
            "1. preflight: the caller is a break-glass principal of the replica account; the typed confirmation "
            "equals the replica bucket name; every table resolves its snapshot (else exit 2, nothing changed)",
            f"2. disassociate {len(todo)} table(s) from replication (DisassociateTableReplication, permanent); "
            f"{len(done)} already detached are skipped; one table's failure does not stop the others",
        ]
        if pit:
            out.append(
                f"3. point in time: set the current snapshot of {len(pit)} table(s) to the chosen snapshot "
                "(metadata only) BEFORE writers are let in, so no writer commit is discarded"
            )
        else:
            out.append("3. point in time: none (each table keeps its latest replicated snapshot)")
        n_tp = sum(1 for t in self.tables if t.table_policy and t.table_policy.changed)
        out.append(
            f"4. open to writers: replace {n_tp} table polic(ies) of the promoted tables, then the bucket policy "
            "of the promoted bucket, by the failover documents (the SCP and guardrail follow through Terraform: "
            "`cdktf deploy` of the failover topology)"
        )
        out.append(
            "5. verify: each promoted table accepts a commit (kit.failover.* lineage properties) and its record "
            "counts per partition equal the chosen snapshot's; report (Markdown + JSON)"
        )
        return out

    @property
    def refusals(self) -> list[str]:
        out = list(self.errors)
        if not self.break_glass:
            out.append(
                f"the caller {self.caller.arn} is not a break-glass principal of account "
                f"{self.replica_bucket_arn.split(':')[4]} ({', '.join(self.break_glass_principals)}): promotion "
                "would be denied by the replica's protections; run it as break-glass"
            )
        out.extend(f"{t.ident}: {p}" for t in self.tables for p in t.problems)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "generated_at": self.generated_at,
            "replica_bucket_arn": self.replica_bucket_arn,
            "selector": self.selector.describe(),
            "caller": self.caller.arn,
            "caller_is_break_glass": self.break_glass,
            "break_glass_principals": list(self.break_glass_principals),
            "steps": self.steps(),
            "bucket_policy": None
            if self.bucket_policy is None
            else {
                "resource": self.bucket_policy.resource,
                "changed": self.bucket_policy.changed,
                "before": self.bucket_policy.before,
                "after": self.bucket_policy.after,
            },
            "tables": [t.as_dict() for t in self.tables],
            "table_policies": [
                {"resource": t.table_policy.resource, "before": t.table_policy.before, "after": t.table_policy.after}
                for t in self.tables
                if t.table_policy is not None
            ],
            "refusals": self.refusals,
        }

    def render(self, *, show_documents: bool = True) -> str:
        from s3tables_kit.jobs.kernel.render import render_table

        lines = [
            f"Failover plan for table bucket {self.bucket_name} ({self.replica_bucket_arn}), "
            f"{self.selector.describe()}, {len(self.tables)} table(s)",
            f"caller: {self.caller.arn} -> "
            + ("break-glass principal: allowed" if self.break_glass else "NOT a break-glass principal: refused"),
            "",
            render_table(
                ["TABLE", "STATE", "LAST REPLICATED COMMIT", "RPO", "SNAPSHOT", "PIT", "OTHER REPLICAS", "STEP"],
                [
                    (
                        str(t.ident),
                        t.facts.state.value,
                        iso_ms(t.facts.info.last_updated_ms) if t.facts.info and t.facts.info.last_updated_ms else "-",
                        t.rpo.short() + (" *" if t.rpo.note else ""),
                        t.snapshot.snapshot_id if t.snapshot else "-",
                        "yes" if t.pit else "-",
                        ", ".join(a.rsplit("/", 1)[1] for a in t.other_replicas) or "none",
                        t.step.value,
                    )
                    for t in self.tables
                ],
                max_width=70,
            ),
            *_rpo_reasons(self.tables),
            "",
            "Steps:",
            *[f"  {s}" for s in self.steps()],
        ]
        if self.bucket_policy is not None:
            lines += ["", "Policy changes:", f"  bucket policy of {self.bucket_name}: " + _change(self.bucket_policy)]
            if show_documents:
                lines += _documents(self.bucket_policy)
        shown = 0
        for t in self.tables:
            if t.table_policy is not None:
                lines.append(f"  table policy of {t.ident}: " + _change(t.table_policy))
                if show_documents and t.table_policy.changed and shown < SHOWN_TABLE_DOCUMENTS:
                    lines += _documents(t.table_policy)
                    shown += 1
        if not show_documents and (self.bucket_policy is not None or any(t.table_policy for t in self.tables)):
            lines.append("  (each document before and after, in full: --show-documents, or the JSON plan: --json)")
        if shown == SHOWN_TABLE_DOCUMENTS and len(self.tables) > shown:
            lines.append(
                f"  (documents shown for the first {shown} table(s); every table's are in the JSON plan: --json)"
            )
        if any(t.pit for t in self.tables):
            lines += ["", PIT_WARNING]
        for r in self.refusals:
            lines.append(f"REFUSED: {r}")
        return "\n".join(lines)


PIT_WARNING = (
    "Point in time in place: the promoted table's current snapshot is set back (metadata only, seconds). This "
    "CONSUMES the replica as a protected copy: it is no longer replicated, it becomes writable, and the snapshots "
    "after the chosen one remain only until snapshot expiry removes them. Prefer the file copy into the recovery "
    "bucket (`s3tables-kit recover`) when you need the replica to stay a protected, replicated copy (e.g. the "
    "source Region still works and you only need an old state), or when you are not sure which point to choose."
)


def _rpo_reasons(tables: Sequence[FailoverTablePlan]) -> list[str]:
    """`* RPO of <table>: <reason>`, in full and wrapped, for every table whose RPO has one."""
    out: list[str] = []
    for t in tables:
        if t.rpo.note:
            out += textwrap.wrap(
                f"* RPO of {t.ident}: {t.rpo.describe()}", width=110, subsequent_indent="    ", break_long_words=False
            )
    return ["", *out] if out else []


def _pretty(document: str | None) -> list[str]:
    """A policy document as indented JSON lines (the live one as read when it is not JSON)."""
    if document is None:
        return ["none"]
    try:
        return json.dumps(json.loads(document), indent=2, sort_keys=False).splitlines()
    except ValueError:
        return textwrap.wrap(document, width=110) or [""]


def _documents(c: PolicyChange) -> list[str]:
    """The document before and after a policy change, each pretty-printed under its label."""
    before, after = _pretty(c.before), _pretty(c.after)
    return ["    before:", *(f"      {line}" for line in before), "    after:", *(f"      {line}" for line in after)]


def _change(c: PolicyChange) -> str:
    if c.before is None:
        return "none today -> failover document"
    return "replica document -> failover document" if c.changed else "already the failover document (unchanged)"


def plan_table(
    facts: TableFacts,
    selector: Selector,
    now: datetime,
    *,
    replica_bucket_arn: str,
    kit_replica_buckets: Sequence[str],
    table_policy: PolicyChange | None,
) -> FailoverTablePlan:
    state = facts.state
    step = {ReplicaState.REPLICA: FailoverStep.PROMOTE, ReplicaState.DETACHED: FailoverStep.ALREADY}.get(
        state, FailoverStep.SKIP
    )
    problems: list[str] = []
    snap: Snapshot | None = None
    pit = False
    info = facts.info
    if step is not FailoverStep.SKIP:
        if info is None or not info.snapshots:
            if selector.as_of_ms is not None or selector.snapshot_id is not None:
                problems.append("the replica has no snapshot: no point in time to set")
        else:
            try:
                snap = resolve_snapshot(info, selector, int(now.timestamp() * 1000))
            except PlanError as e:
                problems.append(str(e).removeprefix(f"{facts.ident}: "))
            pit = snap is not None and snap.snapshot_id != info.current_snapshot_id
    rpo = compute_rpo(info.last_updated_ms if info else None, facts.source, now)
    if facts.source.reachable and facts.source.destinations:
        others = tuple(
            d.bucket_arn
            for d in facts.source.destinations
            if d.bucket_arn != replica_bucket_arn and not d.detached and d.table_arn
        )
        others_from = "source replication status"
    else:
        others = tuple(b for b in kit_replica_buckets if b != replica_bucket_arn)
        others_from = "outputs (source unreachable: not confirmed)" if not facts.source.reachable else "outputs"
    return FailoverTablePlan(
        facts=facts,
        step=step,
        rpo=rpo,
        snapshot=snap,
        pit=pit,
        other_replicas=others,
        other_replicas_from=others_from,
        table_policy=table_policy if step is not FailoverStep.SKIP else None,
        problems=tuple(problems),
    )


# ----------------------------------------------------------------------------------------------------
# Failback plan
# ----------------------------------------------------------------------------------------------------

UNVERIFIED = "UNVERIFIED (AWS does not document it)"


@dataclass(frozen=True)
class FailbackTable:
    ident: Ident
    promoted_table_arn: str
    original_table_arn: str | None
    promoted_snapshot_id: int | None  # the snapshot the failover recorded (kit.failover.replica-snapshot-id)
    commits_since_failover: int | None  # snapshots committed on the promoted table after it
    original_reachable: bool
    original_last_commit: str | None
    original_commits_after_failover: int | None  # commits on the original after the promotion (split brain)


def failback_table(
    ident: Ident,
    promoted_arn: str,
    promoted: TableInfo | None,
    original_arn: str | None,
    original: TableInfo | None,
    original_error: str | None,
) -> FailbackTable:
    props = promoted.properties if promoted else {}
    sid_text = props.get(LINEAGE.snapshot_id)
    sid = int(sid_text) if sid_text and sid_text.lstrip("-").isdigit() else None
    promoted_at_ms = _parse_iso_ms(props.get(PROP_PROMOTED_AT))
    since: int | None = None
    if promoted and sid is not None:
        since = commits_since(promoted, sid)
    orig_after: int | None = None
    if original is not None and promoted_at_ms is not None:
        orig_after = len([s for s in original.snapshots if s.timestamp_ms > promoted_at_ms])
    return FailbackTable(
        ident=ident,
        promoted_table_arn=promoted_arn,
        original_table_arn=original_arn,
        promoted_snapshot_id=sid,
        commits_since_failover=since,
        original_reachable=original_error is None,
        original_last_commit=iso_ms(original.last_updated_ms) if original and original.last_updated_ms else None,
        original_commits_after_failover=orig_after,
    )


def commits_since(info: TableInfo, snapshot_id: int) -> int | None:
    """Snapshots on the current branch after `snapshot_id` (parent chain from the current snapshot; snapshots a
    point in time set aside are not counted). None when `snapshot_id` is not an ancestor (expired, or replaced)."""
    by_id = {s.snapshot_id: s for s in info.snapshots}
    n, cur = 0, info.current_snapshot_id
    while cur is not None and cur != snapshot_id:
        snap = by_id.get(cur)
        if snap is None:
            return None
        n, cur = n + 1, snap.parent_id
    return n if cur == snapshot_id else None


def _parse_iso_ms(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def failback_steps(promoted_bucket_arn: str, original_bucket_arn: str, tables: Sequence[FailbackTable]) -> list[str]:
    changed = [t for t in tables if t.commits_since_failover]
    stale = [t for t in tables if t.original_table_arn]
    pb, ob = promoted_bucket_arn.rsplit("/", 1)[1], original_bucket_arn.rsplit("/", 1)[1]
    return [
        f"1. freeze: stop writers of the promoted tables in {pb} only at the cut-over (step 5); until then they "
        "keep writing",
        f"2. the {len(stale)} original table(s) in {ob} are stale (their last commit predates the failover, and any "
        "commit made there after it is a split brain to reconcile by hand); keep them read-only: the kit's "
        "protections still apply to them",
        f"3. create a NEW table bucket in the original Region (e.g. {ob}-failback): replication creates its "
        "replicas itself. Replicating into the old bucket, which holds same-named tables, is "
        f"{UNVERIFIED}; the kit does not plan it",
        f"4. replicate the promoted tables back: a `[failover] replicate_to` entry naming the new bucket (bucket-"
        f"level replication from {pb}), `cdktf deploy` of the failover topology; wait for `make status` to show "
        f"COMPLETED with lag 0 for the {len(tables)} table(s) ({len(changed)} changed during the failover)",
        "5. cut over with RPO 0: `s3tables-kit failover --planned --replica-bucket <new bucket> --confirm <new "
        "bucket>` freezes the writers of the promoted tables, waits until the new bucket has caught up, promotes it "
        "and proves the snapshot ids equal (the failover topology's outputs and configuration); that the promotion "
        f"of a replica whose source is itself a promoted replica behaves like the first one is {UNVERIFIED}",
        "6. point writers at the new bucket; make it the kit's source (config), with replication to "
        f"{pb} (re-protected as a replica by a NEW bucket: a promoted table cannot be re-associated) and the "
        "other replicas; `make audit` green",
        f"7. retire the stale original tables in {ob} with break-glass only after the rehearsal of the new "
        "topology passes (they are the last copy of the pre-failover state)",
    ]


def failback_dict(
    promoted_bucket_arn: str, original_bucket_arn: str, tables: Sequence[FailbackTable]
) -> dict[str, Any]:
    return {
        "promoted_bucket_arn": promoted_bucket_arn,
        "original_bucket_arn": original_bucket_arn,
        "tables": [t.__dict__ | {"ident": str(t.ident)} for t in tables],
        "steps": failback_steps(promoted_bucket_arn, original_bucket_arn, tables),
    }


def render_failback(promoted_bucket_arn: str, original_bucket_arn: str, tables: Sequence[FailbackTable]) -> str:
    from s3tables_kit.jobs.kernel.render import render_table

    body = render_table(
        ["TABLE", "COMMITS SINCE FAILOVER", "ORIGINAL", "ORIGINAL LAST COMMIT", "ORIGINAL COMMITS AFTER"],
        [
            (
                str(t.ident),
                "?" if t.commits_since_failover is None else t.commits_since_failover,
                ("stale" if t.original_table_arn else "absent") if t.original_reachable else "unreachable",
                t.original_last_commit or "-",
                "?" if t.original_commits_after_failover is None else t.original_commits_after_failover,
            )
            for t in tables
        ],
    )
    steps = failback_steps(promoted_bucket_arn, original_bucket_arn, tables)
    return "\n".join(
        ["Failback plan (dry run: nothing is changed)", "", body, "", "Steps:", *[f"  {s}" for s in steps]]
    )
