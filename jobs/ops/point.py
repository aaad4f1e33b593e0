"""The replication point: per replica bucket and group of tables, the newest instant to which EVERY table of the
group can be restored from that replica (pure: computed from the rows of a `status` report, no I/O).

A table's own instant on a destination is how far its replica is complete:

- COMPLETED (or no source commit lacking: lag 0): the replica has the source's current state, so the table is
  complete up to the time of the status read (`generated_at`); an idle table never holds the point back;
- otherwise (pending, failed, detached), with the source's commit times read from its metadata: the millisecond
  before the oldest source commit the replica lacks (`now - lag`): until then the source's state is the replica's;
- otherwise (the lag is only a lower bound, or unknown): its last replicated update
  (`lastSuccessfulReplicatedUpdate`), the newest instant the replica is known to hold every source commit of;
- never replicated, or status unreadable: no instant, so the group has none (`point` None) and that table is named.
  For a table never replicated the age is still that of its oldest commit (its lag), so the alarm sees it.

The group's point is the minimum over its tables, and `held_back_by` names the table holding it (the first in
name order on a tie). Its age (`now - point`) is what the monitor publishes (`s3tables_kit.topology.contract.POINT_AGE`,
`point_metric_data`) and alarms on; `s3tables-kit recover --as-of replication-point` recovers to it.

Groups: the whole bucket (`WHOLE_BUCKET`) always, plus named groups of table patterns (`namespace.name`,
`namespace.*`): those configured (`[assurance] replication_point_groups`, exported in the outputs and the monitor's
`kit_declared.json`) and `status --group NAME=PATTERN[,PATTERN...]`. The whole bucket is the default; the monitor
publishes it and every configured group's (dimension `Group`); `recover` / `failover --group NAME` take a group's.
On an estate, a fan-in bucket's point covers the tables of every source in the report (the monitor of each source
publishes the point of that source's tables, under its own `Kit`).

Standard library only: the monitor's Lambda package ships this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any, Protocol

from s3tables_kit.jobs.kernel.render import format_duration
from s3tables_kit.topology.contract import AS_OF_REPLICATION_POINT, POINT_AGE

WHOLE_BUCKET = "*"
COMPLETED, ERROR, UNCONFIGURED = "completed", "error", "unconfigured"  # `s3tables_kit.jobs.ops.status`'s statuses


class Row(Protocol):
    """What the point reads of a `s3tables_kit.jobs.ops.status.DestinationStatus`."""

    @property
    def source_bucket_arn(self) -> str: ...
    @property
    def table(self) -> str: ...
    @property
    def destination_bucket_arn(self) -> str | None: ...
    @property
    def status(self) -> str: ...
    @property
    def last_replicated_at(self) -> str | None: ...
    @property
    def lag_seconds(self) -> float | None: ...
    @property
    def lag_source(self) -> str | None: ...


@dataclass(frozen=True)
class ReplicationPoint:
    destination_bucket_arn: str
    group: str  # WHOLE_BUCKET or a configured group's name
    tables: int
    point: str | None  # ISO 8601 UTC; None: some table of the group has no restorable instant
    age_seconds: float | None  # now - point; without a point, the oldest lacking commit's age if known
    held_back_by: str | None  # the table holding the point (None: every table is up to date)
    reason: str  # why that table holds it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def table_instant(row: Row, now: datetime) -> tuple[datetime | None, str]:
    """(the newest instant the replica of this row holds completely, why); None when there is none."""
    if row.status == ERROR:
        return None, "replication status unreadable"
    if row.status == COMPLETED or row.lag_seconds == 0.0:
        return now, "up to date"
    if row.last_replicated_at and row.lag_seconds is not None and row.lag_source == "metadata":
        return now - timedelta(seconds=row.lag_seconds, milliseconds=1), f"{row.status.upper()}: lacks commits since"
    if row.last_replicated_at:
        at = datetime.fromisoformat(row.last_replicated_at.replace("Z", "+00:00")).astimezone(UTC)
        return at, f"{row.status.upper()}: last replicated commit"
    return None, f"{row.status.upper()}: never replicated"


def parse_group(spec: str) -> dict[str, tuple[str, ...]]:
    """`NAME=PATTERN[,PATTERN...]` (patterns `namespace.name` or `namespace.*`) -> {name: patterns}."""
    name, sep, patterns = spec.partition("=")
    pats = tuple(p.strip() for p in patterns.split(",") if p.strip())
    if not sep or not name.strip() or not pats or name.strip() == WHOLE_BUCKET:
        raise ValueError(f"group {spec!r}: expected NAME=PATTERN[,PATTERN...] (e.g. sales=sales.*,ops.incidents)")
    return {name.strip(): pats}


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def replication_points(
    rows: Sequence[Row],
    now: datetime,
    groups: Mapping[str, Sequence[str]] | None = None,
    label: Any = None,
) -> list[ReplicationPoint]:
    """The point of every destination bucket (whole bucket, then each group with at least one table), sorted by
    bucket. A row unreadable for the whole table (no destination) counts in every destination of its source bucket.
    `label(row)` names a table (default `namespace.name`)."""
    name = label or (lambda r: r.table)
    dests_of: dict[str, set[str]] = {}
    for r in rows:
        if r.destination_bucket_arn:
            dests_of.setdefault(r.source_bucket_arn, set()).add(r.destination_bucket_arn)
    per_dest: dict[str, list[Row]] = {}
    for r in rows:
        if r.status == UNCONFIGURED:
            continue  # not replicated at all: in no replica's point
        own = r.destination_bucket_arn
        dests = [own] if own else sorted(dests_of.get(r.source_bucket_arn, ()))
        for dest in dests:
            per_dest.setdefault(dest, []).append(r)
    out: list[ReplicationPoint] = []
    for dest in sorted(per_dest):
        selections = [(WHOLE_BUCKET, per_dest[dest])]
        for group, patterns in (groups or {}).items():
            chosen = [r for r in per_dest[dest] if any(fnmatchcase(r.table, p) for p in patterns)]
            if chosen:
                selections.append((group, chosen))
        for group, chosen in selections:
            out.append(_point(dest, group, chosen, now, name))
    return out


def _point(dest: str, group: str, rows: Sequence[Row], now: datetime, name: Any) -> ReplicationPoint:
    instants = sorted(((table_instant(r, now), str(name(r))) for r in rows), key=lambda x: x[1])
    missing = [(why, t) for (at, why), t in instants if at is None]
    tables = len({t for _, t in instants})
    if missing:
        why, table = missing[0]
        # never replicated: the age of its oldest commit (the lag) is a lower bound of the missing point's age
        lags = [r.lag_seconds for r in rows if r.lag_seconds is not None and table_instant(r, now)[0] is None]
        return ReplicationPoint(dest, group, tables, None, max(lags) if lags else None, table, why)
    (at, why), table = min(instants, key=lambda x: x[0][0] or now)
    assert at is not None
    if at >= now:
        return ReplicationPoint(dest, group, tables, _iso(now), 0.0, None, "every table up to date")
    return ReplicationPoint(dest, group, tables, _iso(at), (now - at).total_seconds(), table, why)


def render_points(points: Sequence[ReplicationPoint]) -> str:
    """The text summary's lines (nothing without points)."""
    if not points:
        return ""
    lines = ["", "replication point (the newest instant every table of the group can be restored to):"]
    for p in points:
        bucket = p.destination_bucket_arn.rsplit("/", 1)[-1] + "@" + p.destination_bucket_arn.split(":")[3]
        where = f"  {bucket} [{'whole bucket' if p.group == WHOLE_BUCKET else 'group ' + p.group}, {p.tables} tables]"
        if p.point is None:
            lines.append(f"{where}: NONE, held back by {p.held_back_by} ({p.reason})")
        elif p.reason.endswith("since"):
            lines.append(
                f"{where}: {p.point} (age {format_duration(p.age_seconds)}), held back by {p.held_back_by} "
                f"({p.reason} then)"
            )
        elif p.held_back_by is None:
            lines.append(f"{where}: {p.point} (every table up to date)")
        else:
            lines.append(
                f"{where}: {p.point} (age {format_duration(p.age_seconds)}), held back by {p.held_back_by} ({p.reason})"
            )
    return "\n".join(lines)


def point_metric_data(
    rows: Sequence[Row],
    now: datetime,
    *,
    kit: str,
    destinations: Sequence[str] = (),
    groups: Mapping[str, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """The monitor's `POINT_AGE` data of every destination bucket: the whole bucket's (dimensions `Kit`,
    `Destination`), then each configured group's with a table in it (+ `Group`). A configured destination without
    tables has its point at the read (age 0); a point whose age is unknown (a status unreadable) gets no datum (the
    heartbeat alarm covers that run)."""
    ages = {(p.destination_bucket_arn, p.group): p.age_seconds for p in replication_points(rows, now, groups)}
    keys = {(d, WHOLE_BUCKET) for d in destinations} | set(ages)
    out = []
    for dest, group in sorted(keys, key=lambda k: (k[0], k[1] != WHOLE_BUCKET, k[1])):
        age = ages.get((dest, group), 0.0)
        if age is not None:
            dims = [{"Name": "Kit", "Value": kit}, {"Name": "Destination", "Value": dest}]
            dims += [{"Name": "Group", "Value": group}] if group != WHOLE_BUCKET else []
            out.append({"MetricName": POINT_AGE, "Dimensions": dims, "Value": float(age), "Unit": "Seconds",
                        "Timestamp": now})  # fmt: skip
    return out


def group_selection(groups: Mapping[str, Sequence[str]], name: str) -> tuple[list[str], list[str]]:
    """`--group NAME` of `s3tables_kit.jobs.recover` / `s3tables_kit.jobs.failover`: the configured group's (`--table`s,
    `--namespace`s), the selection whose replication point `--as-of replication-point` then takes; ValueError for an
    unknown group."""
    if name not in groups:
        known = ", ".join(sorted(groups)) or "none are configured ([assurance] replication_point_groups)"
        raise ValueError(f"--group {name}: no such replication point group (groups: {known})")
    patterns = groups[name]
    return [p for p in patterns if not p.endswith(".*")], [p[:-2] for p in patterns if p.endswith(".*")]


# ---- `--as-of replication-point` (s3tables_kit.jobs.recover, s3tables_kit.jobs.failover)
# -------------------------------------------------

AS_OF_KEYWORD = AS_OF_REPLICATION_POINT  # `--as-of replication-point`: the live replication point
SELECTION = "selection"  # the group of the tables a recovery or failover selects


def selection_patterns(tables: Sequence[str] = (), namespaces: Sequence[str] = ()) -> tuple[str, ...]:
    """The group of a run's `--table ns.name` and `--namespace ns` selection (empty: the whole bucket)."""
    return (*tables, *(f"{ns}.*" for ns in namespaces))


def resolve_point(points: Sequence[ReplicationPoint], bucket_arn: str, patterns: Sequence[str] = ()) -> datetime:
    """The instant `--as-of replication-point` stands for: the point of `bucket_arn` (over the selection when
    `patterns`), or ValueError naming why there is none."""
    group = SELECTION if patterns else WHOLE_BUCKET
    bucket = bucket_arn.rsplit("/", 1)[-1]
    found = next((p for p in points if p.destination_bucket_arn == bucket_arn and p.group == group), None)
    if found is None:
        raise ValueError(
            f"--as-of {AS_OF_KEYWORD}: no replicated table of {bucket}"
            + (f" matches the selection ({', '.join(patterns)})" if patterns else "")
            + " in the sources' replication status"
        )
    if found.point is None:
        raise ValueError(
            f"--as-of {AS_OF_KEYWORD}: {bucket} has no replication point: {found.held_back_by} holds it back "
            f"({found.reason}); choose an instant with --as-of, or leave that table out"
        )
    return datetime.fromisoformat(found.point.replace("Z", "+00:00"))
