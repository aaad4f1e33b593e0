"""Drift of what cannot be prevented: a source's live replication configuration and a replica's live bucket policy,
compared with what the kit declares. Pure functions (no AWS calls), used by `audit` and the replication monitor;
`s3tables_kit.jobs.ops.drift_read` reads the live side.

Replication (`replication_drift`): the declared replication of one source (`DeclaredReplication`: its mode, role,
destinations and, in tables mode, its tables) against the bucket-level configuration and the table-level
configuration of EVERY table of the source bucket (table level is defined independently of bucket level: both can
exist for one table, and the table's overrides the bucket's for it). Kinds:

* ``replication-missing``: no bucket-level configuration (bucket mode), no table-level one on a listed table (tables
  mode): the replicas silently stop receiving updates;
* ``replication-role``: a configuration names another role than the kit's replication role;
* ``replication-destination-missing`` / ``replication-destination-unexpected``: a configured destination is absent /
  a destination the configuration does not name (data copied elsewhere);
* ``replication-extra-configuration``: a configuration the kit does not declare: a bucket-level one in tables mode,
  or a table-level one on a table in bucket mode (or on a table not listed in tables mode). In bucket mode a
  table-level configuration naming exactly the kit's role and destinations changes nothing and is not reported (it
  is also what a read of a table-level configuration could return if the service reported the bucket's there);
* ``source-table-missing``: a table listed for replication is not in the source bucket;
* ``unverifiable``: a configuration could not be read (the error is the detail): never silently passed.

Replica retention (`below_configured`): a replica table's snapshot retention against the replica's configured one.

Bucket policy (`policy_drift`): the live document against the reviewed one, statement by statement (by ``Sid``,
canonical form, `s3tables_kit.jobs.ops.cli.canonical`): ``bucket-policy-missing``, ``bucket-policy-statement-missing``,
``bucket-policy-statement-changed``, ``bucket-policy-statement-unexpected`` (a statement the reviewed document does
not hold, e.g. a grant to another account), ``unverifiable``.

Standard library and `s3tables_kit.jobs.ops.cli` only: the monitor's Lambda package ships this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from s3tables_kit.jobs.ops.cli import canonical

BUCKET, TABLES = "bucket", "tables"


@dataclass(frozen=True)
class Unreadable:
    """A live document that could not be read (the error's text)."""

    error: str


# The live side of one configuration: the configuration, None (there is none) or why it could not be read.
Live = dict[str, Any] | Unreadable | None

REPLICATION_KINDS = (
    "replication-missing",
    "replication-role",
    "replication-destination-missing",
    "replication-destination-unexpected",
    "replication-extra-configuration",
    "source-table-missing",
)
POLICY_KINDS = (
    "bucket-policy-missing",
    "bucket-policy-statement-missing",
    "bucket-policy-statement-changed",
    "bucket-policy-statement-unexpected",
)


@dataclass(frozen=True)
class DriftFinding:
    kind: str
    resource: str
    detail: str


@dataclass(frozen=True)
class DeclaredReplication:
    """What one source's replication is declared to be (`replication_of(src)`, or its `kit_source` output)."""

    source_bucket_arn: str
    mode: str  # BUCKET or TABLES
    role_arn: str
    destinations: tuple[str, ...]
    tables: tuple[str, ...] = ()  # `namespace.name` of every replicated table, tables mode only

    def to_json(self) -> dict[str, Any]:
        return {
            "source_bucket_arn": self.source_bucket_arn,
            "mode": self.mode,
            "role_arn": self.role_arn,
            "destinations": list(self.destinations),
            "tables": list(self.tables),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> DeclaredReplication:
        return cls(
            source_bucket_arn=doc["source_bucket_arn"],
            mode=doc["mode"],
            role_arn=doc["role_arn"],
            destinations=tuple(doc["destinations"]),
            tables=tuple(doc.get("tables") or ()),
        )


@dataclass(frozen=True)
class LiveReplication:
    """The live configurations of one source bucket: its bucket-level one and the table-level one of every table
    (`{namespace.name: (table ARN, configuration)}`; `listing`: why the bucket's tables could not be listed)."""

    bucket: Live
    tables: Mapping[str, tuple[str, Live]]
    listing: Unreadable | None = None


def _destinations(conf: Mapping[str, Any]) -> set[str]:
    return {d["destinationTableBucketARN"] for r in conf.get("rules") or [] for d in r.get("destinations") or []}


def _describe(conf: Mapping[str, Any]) -> str:
    return f"role {conf.get('role')!r}, destinations {sorted(_destinations(conf))}"


def compare_configuration(resource: str, conf: Mapping[str, Any], declared: DeclaredReplication) -> list[DriftFinding]:
    """One live configuration against the declared role and destinations."""
    out = []
    if conf.get("role") != declared.role_arn:
        out.append(
            DriftFinding("replication-role", resource, f"role is {conf.get('role')!r}, expected {declared.role_arn!r}")
        )
    live, want = _destinations(conf), set(declared.destinations)
    out += [
        DriftFinding("replication-destination-missing", resource, f"destination {arn} is not configured")
        for arn in sorted(want - live)
    ]
    out += [
        DriftFinding("replication-destination-unexpected", resource, f"destination {arn} is not in the configuration")
        for arn in sorted(live - want)
    ]
    return out


def _matches(conf: Mapping[str, Any], declared: DeclaredReplication) -> bool:
    return conf.get("role") == declared.role_arn and _destinations(conf) == set(declared.destinations)


def replication_drift(declared: DeclaredReplication, live: LiveReplication) -> list[DriftFinding]:
    """Every difference between the declared replication of one source and its live configurations."""
    src = declared.source_bucket_arn
    out: list[DriftFinding] = []
    if isinstance(live.bucket, Unreadable):
        out.append(DriftFinding("unverifiable", src, f"bucket-level replication: {live.bucket.error}"))
    elif declared.mode == BUCKET:
        if live.bucket is None:
            out.append(DriftFinding("replication-missing", src, "no bucket-level replication configuration"))
        else:
            out += compare_configuration(src, live.bucket, declared)
    elif live.bucket is not None:
        out.append(
            DriftFinding(
                "replication-extra-configuration",
                src,
                f"a bucket-level configuration ({_describe(live.bucket)}) beside the declared table-level ones: "
                "it replicates every table of the bucket",
            )
        )
    listed = set(declared.tables) if declared.mode == TABLES else set()
    if live.listing is not None:
        out.append(
            DriftFinding("unverifiable", src, f"table-level replication (tables not listed): {live.listing.error}")
        )
        return out
    for name in sorted(listed - set(live.tables)):
        out.append(
            DriftFinding("source-table-missing", f"{src} {name}", "listed for replication but not in the source bucket")
        )
    for name, (arn, conf) in sorted(live.tables.items()):
        resource = f"{name} ({arn})"
        if isinstance(conf, Unreadable):
            out.append(DriftFinding("unverifiable", resource, f"table-level replication: {conf.error}"))
        elif name in listed:
            if conf is None:
                out.append(DriftFinding("replication-missing", resource, "no table-level replication configuration"))
            else:
                out += compare_configuration(resource, conf, declared)
        elif conf is not None and not (declared.mode == BUCKET and _matches(conf, declared)):
            where = "beside the bucket-level one" if declared.mode == BUCKET else "on a table not listed"
            out.append(
                DriftFinding(
                    "replication-extra-configuration",
                    resource,
                    f"a table-level configuration ({_describe(conf)}) {where}: it overrides the bucket's for the table",
                )
            )
    return out


# ---------------------------------------------------------------------------------------------------- policies ----


def statements(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, str):
        doc = json.loads(doc)
    stmts = (doc or {}).get("Statement", [])
    return [stmts] if isinstance(stmts, dict) else list(stmts)


def _short(stmt: Mapping[str, Any]) -> str:
    return json.dumps(stmt, sort_keys=True)[:120]


def policy_drift(resource: str, live: Any, reviewed: Any) -> list[DriftFinding]:
    """The live bucket policy of `resource` (a document or its JSON text; None: there is none; `Unreadable`: why it
    could not be read) against the reviewed document: every reviewed statement present and equal, no other statement."""
    if isinstance(live, Unreadable):
        return [DriftFinding("unverifiable", resource, f"bucket policy: {live.error}")]
    if live is None:
        return [DriftFinding("bucket-policy-missing", resource, "the bucket has no bucket policy")]
    have, want = statements(live), statements(reviewed)
    have_sid = {s["Sid"]: s for s in have if s.get("Sid")}
    changed = [
        DriftFinding("bucket-policy-statement-changed", resource, f"statement {sid!r} differs from the configuration")
        for sid, stmt in {s["Sid"]: s for s in want if s.get("Sid")}.items()
        if sid in have_sid and canonical(have_sid[sid]) != canonical(stmt)
    ]
    missing = _absent(resource, "bucket-policy-statement-missing", "is missing", want, have)
    unexpected = _absent(resource, "bucket-policy-statement-unexpected", "is not in the configuration", have, want)
    return changed + missing + unexpected


def _absent(
    resource: str, kind: str, phrase: str, stmts: Sequence[Mapping[str, Any]], others: Sequence[Mapping[str, Any]]
) -> list[DriftFinding]:
    """A `kind` finding for each statement of `stmts` that `others` lacks: by ``Sid``, or by content when it has none
    (the same comparison both ways, reviewed against live for missing ones and live against reviewed for extra ones)."""
    other_sids = {s["Sid"] for s in others if s.get("Sid")}
    other_anon = [canonical(s) for s in others if not s.get("Sid")]
    named = dict.fromkeys(s["Sid"] for s in stmts if s.get("Sid"))  # each Sid once, in document order
    out = [DriftFinding(kind, resource, f"statement {sid!r} {phrase}") for sid in named if sid not in other_sids]
    for stmt in (s for s in stmts if not s.get("Sid")):
        if canonical(stmt) not in other_anon:
            out.append(DriftFinding(kind, resource, f"statement {_short(stmt)} {phrase}"))
    return out


# ---------------------------------------------------------------------------------------------------- retention ----

SNAPSHOT = "icebergSnapshotManagement"


def below_configured(replica: Mapping[str, Any], configured: Mapping[str, int]) -> str | None:
    """Why the replica keeps snapshots for less than its configured retention (`configured`: the
    ``icebergSnapshotManagement`` settings `harden` writes), or None. Disabled expiry keeps everything."""
    if replica.get("status") == "disabled":
        return None
    r = (replica.get("settings") or {}).get(SNAPSHOT) or {}
    if not r:
        return "no snapshot retention settings (the service default, not the configured retention)"
    problems = [
        f"{k} {r.get(k)} < configured {configured[k]}"
        for k in ("maxSnapshotAgeHours", "minSnapshotsToKeep")
        if k in configured and (r.get(k) is None or r[k] < configured[k])
    ]
    return "; ".join(problems) or None


def count(findings: Sequence[DriftFinding], kinds: Sequence[str]) -> int:
    """How many findings are of `kinds` or unverifiable (a check that could not be made counts as drift)."""
    return sum(1 for f in findings if f.kind in kinds or f.kind == "unverifiable")
