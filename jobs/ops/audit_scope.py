"""What `s3tables_kit.jobs.ops.audit` compares the live state with (`Scope`: one per source of the configuration, or the
failover topology once promoted) and what it reports (`AuditReport`, a list of `Drift`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.sdk import BucketRef
from s3tables_kit.jobs.ops.cli import canonical_policy
from s3tables_kit.jobs.ops.drift import DeclaredReplication, DriftFinding
from s3tables_kit.topology.config import KitConfig, Replica, Source

BucketPolicyBuilder = Callable[[KitConfig, Replica], dict[str, Any]]
TablePolicy = Callable[[str], dict[str, Any]]  # the wanted table policy of one table, by table ARN


def default_bucket_policy_builder() -> BucketPolicyBuilder:
    """`s3tables_kit.policies.documents.replica_bucket_policy(cfg, replica)`, imported lazily."""
    from s3tables_kit.policies.documents import replica_bucket_policy

    return replica_bucket_policy  # type: ignore[no-any-return,unused-ignore]


def reviewed_source_bucket_policy(cfg: KitConfig, src: Source) -> dict[str, Any]:
    """The source bucket policy the source's stack deploys (`s3tables_kit.policies.source_guard.source_bucket_policy`,
    docs/decisions/0028-lock-after-first-deploy.md), imported lazily."""
    from s3tables_kit.policies.source_guard import source_bucket_policy

    return source_bucket_policy(cfg, src)  # type: ignore[no-any-return,unused-ignore]


class TablePolicyCheck:
    """Whether a live table policy is `want`'s document for one table, compared by meaning
    (`s3tables_kit.jobs.ops.cli.canonical_policy`). The document is the same for every table but its ARN, so the JSON
    text `harden` puts (``json.dumps``) is made once with a stand-in for the ARN: a live text equal to it with the
    table's ARN put back is that document without building or normalising anything; any other text is compared by
    meaning with the document built for that table. Building and normalising two documents per replica was a third
    of the audit's CPU at 30,000 replicas. The stand-in's text is used only if the document built for the first
    table checked is that text with its ARN in the stand-in's place (else every text is compared by meaning)."""

    STAND_IN = "arn:aws:s3tables:kit-stand-in:000000000000:bucket/kit-stand-in/table/kit-stand-in"

    def __init__(self, want: TablePolicy) -> None:
        self.want = want
        self._text: str | None = None
        self._checked = False

    def _expected_text(self, table_arn: str) -> str | None:
        if not self._checked:
            text = json.dumps(self.want(self.STAND_IN))
            same = self.STAND_IN not in table_arn and json.dumps(self.want(table_arn)) == text.replace(
                self.STAND_IN, table_arn
            )
            self._text, self._checked = (text if same else None), True
        return None if self._text is None else self._text.replace(self.STAND_IN, table_arn)

    def matches(self, live: str, table_arn: str) -> bool:
        """Whether `live` (the policy's JSON text) is the wanted document of the table `table_arn`."""
        if live == self._expected_text(table_arn):
            return True
        return canonical_policy(live) == canonical_policy(self.want(table_arn))


def replica_table_policy_of(cfg: KitConfig, replica: Replica) -> TablePolicy:
    """The table policy `harden` puts on every replica table of `replica` (a fan-in vault's exempts every feeding
    source's replication role), by table ARN."""
    from s3tables_kit.policies.documents import replica_table_policy_for

    return functools.partial(replica_table_policy_for, cfg, replica)  # type: ignore[no-any-return,unused-ignore]


@dataclass(frozen=True)
class Scope:
    """What the audit compares the live state with: the configured topology (`normal_scope`) or, once
    ``[failover] promoted_bucket`` is set, the failover topology whose source is the promoted bucket
    (`failover_scope`)."""

    source: Source | Replica
    mode: str  # "bucket" or "tables"
    tables: tuple[str, ...]  # replicated tables in "tables" mode
    replication_role_arn: str
    destinations: tuple[Replica, ...]  # the source's replicas: coverage, retention, table policies
    bucket_policies: tuple[tuple[Replica, dict[str, Any]], ...]  # every replica bucket's policy, its document
    replica_sites: tuple[Replica, ...]  # buckets whose encryption and storage class are checked besides the source
    # The wanted table policy of a destination's replica table (None: table policies not checked).
    destination_table_policy: Callable[[Replica], TablePolicy] | None = None
    promoted_table_policy: TablePolicy | None = None  # failover only: every promoted table's table policy
    # The source bucket's reviewed policy (the promoted bucket's on a failover topology; None: not checked).
    source_bucket_policy: dict[str, Any] | None = None

    @property
    def declared(self) -> DeclaredReplication:
        """The source's declared replication, as `s3tables_kit.jobs.ops.drift` compares it."""
        return DeclaredReplication(
            source_bucket_arn=self.source.bucket_arn,
            mode=self.mode,
            role_arn=self.replication_role_arn,
            destinations=tuple(r.bucket_arn for r in self.destinations),
            tables=self.tables,
        )


def normal_scope(cfg: KitConfig, builder: BucketPolicyBuilder, src: Source) -> Scope:
    """The source `src` with its own replication and destinations: its own bucket policy, and the replica bucket
    and table policies of the whole configuration (a fan-in vault grants and exempts every source)."""
    rep, dests = cfg.replication_of(src), cfg.destinations_of(src)
    return Scope(
        source=src,
        mode=rep.mode,
        tables=tuple(rep.tables),
        replication_role_arn=cfg.replication_role_arn_of(src),
        destinations=dests,
        bucket_policies=tuple((r, builder(cfg, r)) for r in dests),
        replica_sites=dests,
        destination_table_policy=functools.partial(replica_table_policy_of, cfg),
        source_bucket_policy=reviewed_source_bucket_policy(cfg, src),
    )


def failover_scope(cfg: KitConfig, builder: BucketPolicyBuilder) -> Scope:
    """The promoted topology (`s3tables_kit.topology.failover.failover_topology`) with the documents of
    `s3tables_kit.policies.failover`."""
    from s3tables_kit.policies import failover as failover_policies
    from s3tables_kit.topology.failover import failover_topology

    topo = failover_topology(cfg)
    policies = [(d, failover_policies.destination_bucket_policy(cfg, topo, d)) for d in topo.destinations]
    policies += [(r, builder(cfg, r)) for r in topo.retained]  # unchanged documents
    return Scope(
        source=topo.promoted,
        mode="bucket",  # the failover topology replicates at bucket level (infra/stacks/failover_outputs.py)
        tables=(),
        replication_role_arn=topo.replication_role_arn,
        destinations=topo.destinations,
        bucket_policies=tuple(policies),
        replica_sites=topo.destinations + topo.retained,
        destination_table_policy=functools.partial(_destination_table_policy, cfg, topo),
        promoted_table_policy=functools.partial(failover_policies.promoted_table_policy, cfg, topo),
        source_bucket_policy=failover_policies.promoted_bucket_policy(cfg, topo),
    )


def _destination_table_policy(cfg: KitConfig, topo: Any, dest: Replica) -> TablePolicy:
    from s3tables_kit.policies import failover as failover_policies

    return functools.partial(failover_policies.destination_table_policy, cfg, topo, dest)  # type: ignore[no-any-return,unused-ignore]


def scopes_of(cfg: KitConfig, builder: BucketPolicyBuilder) -> tuple[Scope, ...]:
    """One scope per source of the estate (one for `[source]`); the failover topology's once promoted."""
    if cfg.kind.promoted:
        return (failover_scope(cfg, builder),)
    return tuple(normal_scope(cfg, builder, src) for src in cfg.sources)


Drift = DriftFinding  # one drift: its kind, the resource and a detail (`s3tables_kit.jobs.ops.drift`)


@dataclass
class AuditReport:
    drifts: list[Drift] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    # An estate's audit (several sources) names every bucket it audited: (role, bucket ARN).
    estate: bool = False
    buckets: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, resource: str, detail: str) -> None:
        self.drifts.append(Drift(kind, resource, detail))

    def count(self, what: str, n: int = 1) -> None:
        self.checked[what] = self.checked.get(what, 0) + n

    def kinds(self) -> set[str]:
        return {d.kind for d in self.drifts}

    @property
    def exit_code(self) -> int:
        return 1 if self.drifts else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "drift": bool(self.drifts),
            "checked": self.checked,
            "drifts": [asdict(d) for d in self.drifts],
            "exit_code": self.exit_code,
        } | ({"buckets": [{"role": role, "bucket_arn": arn} for role, arn in self.buckets]} if self.estate else {})


def s3tables_of(clients: Clients, bucket_arn: str) -> Any:
    b = BucketRef(bucket_arn)
    return clients.s3tables(b.region, b.account)
