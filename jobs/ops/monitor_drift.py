"""The replication monitor's drift checks (`s3tables_kit.jobs.ops.drift`), run on every interval beside the status
metrics:

| metric | dimensions | value |
|---|---|---|
| `ReplicationConfigurationDrift` | Kit              | findings in the source's replication configurations |
| `ReplicaBucketPolicyDrift`      | Kit, Destination | findings in the replica's bucket policy (reviewed document) |
| `SourceBucketPolicyDrift`       | Kit              | findings in the source's bucket policy (reviewed document) |
| `ReplicaLayersMissing`          | Kit, Destination | sampled replica tables without their table policy |
| `RetentionBelowConfigured`      | Kit, Destination | sampled replica tables with a retention below the configured |

(the configurations: the bucket level and the table level of every table of the source bucket).

The replica tables' layers cost two requests per table (`GetTablePolicy`, `GetTableMaintenanceConfiguration`), so a
run reads a bounded sample per destination (`LAYER_SAMPLE` tables, `sample_tables`): the replicas this warm function
has not yet seen with both layers first (a replica created since its previous run, in a warm container), then a window
of the tables in name order that moves by the sample's size every run, so every replica is read at least once every
ceil(tables / LAYER_SAMPLE) runs (the summary's `layers.cycle_runs`). Only a replica the status shows to exist (a
successful replicated update, not DETACHED) is read.

A check that could not be made (AccessDenied, a throttled read out of retries) counts as a finding: never silently
passed. What the checks compare with is the package's `kit_declared.json`
(`s3tables_kit.topology.contract.DECLARED_FILE`, written at synth), or, from the command line, the outputs
(`declared_from_outputs`) and optionally the configuration's documents. Every finding is in the run's summary (the
function's log line).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import run_concurrently
from s3tables_kit.jobs.kernel.sdk import BucketRef, call, describe_error
from s3tables_kit.jobs.ops.drift import (
    DeclaredReplication,
    DriftFinding,
    Unreadable,
    below_configured,
    policy_drift,
    replication_drift,
)
from s3tables_kit.jobs.ops.drift_read import read_bucket_policy, read_live, read_replication
from s3tables_kit.topology.contract import (
    CONFIG_DRIFT,
    DECLARED_GROUPS,
    DECLARED_INTERVAL,
    DECLARED_POLICIES,
    DECLARED_REPLICATION,
    DECLARED_RETENTION,
    DECLARED_SOURCE_POLICY,
    LAYER_SAMPLE,
    LAYERS_MISSING,
    POLICY_DRIFT,
    RETENTION_BELOW,
    SOURCE_POLICY_DRIFT,
)

if TYPE_CHECKING:  # the Lambda package ships no pydantic
    from s3tables_kit.topology.outputs import KitOutputs, SourceOut


@dataclass(frozen=True)
class Declared:
    """What one source's monitor compares the live state with."""

    replication: DeclaredReplication
    replica_bucket_policies: Mapping[str, Any] = field(default_factory=dict)  # bucket ARN -> reviewed document
    # not compared: the replication point groups whose age the monitor publishes (name -> table patterns)
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source_bucket_policy: Any = None  # the source bucket's reviewed document (None: not compared)
    # replica bucket ARN -> its configured icebergSnapshotManagement settings (the replicas whose layers are read)
    replica_retention: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    interval_seconds: int = 300  # between runs: which window of the replica tables a run samples

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Declared:
        groups = {k: tuple(v) for k, v in (doc.get(DECLARED_GROUPS) or {}).items()}
        return cls(
            DeclaredReplication.from_json(doc[DECLARED_REPLICATION]),
            dict(doc.get(DECLARED_POLICIES) or {}),
            groups,
            doc.get(DECLARED_SOURCE_POLICY),
            {k: dict(v) for k, v in (doc.get(DECLARED_RETENTION) or {}).items()},
            int(doc.get(DECLARED_INTERVAL) or 300),
        )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            DECLARED_REPLICATION: self.replication.to_json(),
            DECLARED_POLICIES: dict(self.replica_bucket_policies),
        }
        if self.source_bucket_policy is not None:
            doc[DECLARED_SOURCE_POLICY] = self.source_bucket_policy
        if self.replica_retention:
            doc[DECLARED_RETENTION] = {k: dict(v) for k, v in self.replica_retention.items()}
            doc[DECLARED_INTERVAL] = self.interval_seconds
        return doc | ({DECLARED_GROUPS: {k: list(v) for k, v in self.groups.items()}} if self.groups else {})


def load_declared(path: Path) -> Declared | None:
    """The package's declared file; None when there is none (a package built without it checks no drift)."""
    if not path.is_file():
        return None
    return Declared.from_json(json.loads(path.read_text(encoding="utf-8")))


def retention_settings(max_snapshot_age_hours: int, min_snapshots_to_keep: int) -> dict[str, int]:
    """A configured snapshot retention as the ``icebergSnapshotManagement`` settings `harden` writes."""
    return {"maxSnapshotAgeHours": max_snapshot_age_hours, "minSnapshotsToKeep": min_snapshots_to_keep}


def declared_from_outputs(
    src: SourceOut, policies: Mapping[str, Any] | None = None, retention: Mapping[str, Mapping[str, int]] | None = None
) -> Declared:
    """The declared replication of one source as its `kit_source` output states it (what the stack deployed), and the
    configured retention of its replicas (`retention`: by bucket ARN)."""
    return Declared(
        DeclaredReplication(
            source_bucket_arn=src.table_bucket_arn,
            mode=src.replication_mode,
            role_arn=src.replication_role_arn,
            destinations=tuple(src.destinations),
            tables=tuple(src.replicated_tables) if src.replication_mode == "tables" else (),
        ),
        dict(policies or {}),
        replica_retention=dict(retention or {}),
    )


# ---------------------------------------------------------------------------------------------------- layers ----


@dataclass
class LayerCheck:
    """The sampled replica tables of each destination: those without their table policy, those whose retention is
    below the configured one (a read that failed counts in both: never silently passed)."""

    missing: dict[str, list[DriftFinding]] = field(default_factory=dict)  # destination ARN -> findings
    retention: dict[str, list[DriftFinding]] = field(default_factory=dict)
    sampled: dict[str, int] = field(default_factory=dict)  # destination ARN -> tables read this run
    tables: dict[str, int] = field(default_factory=dict)  # destination ARN -> replica tables known to exist

    @property
    def cycle_runs(self) -> int:
        """Runs after which every replica table has been read at least once."""
        return max((math.ceil(n / LAYER_SAMPLE) for n in self.tables.values()), default=0)


# Replica table ARNs this warm function found with both layers: a replica not among them is read first.
_SEEN_WHOLE: set[str] = set()


def sample_tables(names: Iterable[str], run: int, size: int = LAYER_SAMPLE, seen: Iterable[str] = ()) -> list[str]:
    """At most `size` of `names` (sorted): the ones not in `seen` first, then a window moving by `size` every `run`,
    so that every name is in some run's window within ceil(len / size) runs."""
    ordered = sorted(set(names))
    if len(ordered) <= size:
        return ordered
    known = set(seen)
    out = [n for n in ordered if n not in known][:size]
    start = (run * size) % len(ordered)
    for i in range(len(ordered)):
        if len(out) >= size:
            break
        name = ordered[(start + i) % len(ordered)]
        if name not in out:
            out.append(name)
    return out


def _read_layers(
    clients: Clients, bucket_arn: str, table: str, configured: Mapping[str, int]
) -> tuple[DriftFinding | None, DriftFinding | None]:
    """(table policy finding, retention finding) of one replica table: two requests."""
    b = BucketRef(bucket_arn)
    s3t = clients.s3tables(b.region, b.account)
    namespace, name = table.split(".", 1)
    ident: dict[str, Any] = {"tableBucketARN": bucket_arn, "namespace": namespace, "name": name}
    resource = f"{table} in {b.name}"
    policy: DriftFinding | None = None
    got = read_live(s3t.get_table_policy, **ident)
    if got is None:
        policy = DriftFinding("table-policy-missing", resource, "the table has no table policy")
    elif isinstance(got, Unreadable):
        policy = DriftFinding("unverifiable", resource, got.error)
    try:
        conf = call(s3t.get_table_maintenance_configuration, **ident)["configuration"]
        why = below_configured(dict(conf.get("icebergSnapshotManagement") or {}), configured)
        retention = DriftFinding("retention-below-configured", resource, why) if why else None
    except (ClientError, BotoCoreError) as exc:
        retention = DriftFinding("unverifiable", resource, describe_error(exc))
    return policy, retention


def _read_layers_of(
    clients: Clients, bucket_arn: str, configured: Mapping[str, int], table: str
) -> tuple[str, DriftFinding | None, DriftFinding | None]:
    return (table, *_read_layers(clients, bucket_arn, table, configured))


def check_layers(
    clients: Clients,
    declared: Declared,
    replicas: Mapping[str, Sequence[str]],
    ts: datetime,
    *,
    concurrency: int = 16,
) -> LayerCheck:
    """Read the layers of a sample of each destination's replica tables (`replicas`: destination ARN -> the
    `namespace.name` of the tables replicated to it). Destinations without a configured retention are not read."""
    run = int(ts.timestamp() // max(1, declared.interval_seconds))
    out = LayerCheck()
    for dest, configured in sorted(declared.replica_retention.items()):
        names = list(replicas.get(dest, ()))
        seen = {n for n in names if f"{dest}/{n}" in _SEEN_WHOLE}
        sample = sample_tables(names, run, LAYER_SAMPLE, seen)
        results = run_concurrently(functools.partial(_read_layers_of, clients, dest, configured), sample, concurrency)
        out.tables[dest], out.sampled[dest] = len(set(names)), len(sample)
        out.missing[dest] = [p for _, p, _ in results if p is not None]
        out.retention[dest] = [r for _, _, r in results if r is not None]
        for table, p, r in results:
            (_SEEN_WHOLE.add if p is None and r is None else _SEEN_WHOLE.discard)(f"{dest}/{table}")
    return out


# ---------------------------------------------------------------------------------------------------- drift ----


@dataclass
class DriftCheck:
    replication: list[DriftFinding]
    policies: dict[str, list[DriftFinding]]  # replica bucket ARN -> findings
    source_policy: list[DriftFinding] | None = None  # None: no reviewed source bucket policy to compare with
    layers: LayerCheck | None = None

    def data(self, kit: str, ts: datetime) -> list[dict[str, Any]]:
        kit_dim = [{"Name": "Kit", "Value": kit}]
        out = [_datum(CONFIG_DRIFT, len(self.replication), kit_dim, ts)]
        for arn in sorted(self.policies):
            dims = [*kit_dim, {"Name": "Destination", "Value": arn}]
            out.append(_datum(POLICY_DRIFT, len(self.policies[arn]), dims, ts))
        if self.source_policy is not None:
            out.append(_datum(SOURCE_POLICY_DRIFT, len(self.source_policy), kit_dim, ts))
        if self.layers is not None:
            for arn in sorted(self.layers.sampled):
                dims = [*kit_dim, {"Name": "Destination", "Value": arn}]
                out.append(_datum(LAYERS_MISSING, len(self.layers.missing[arn]), dims, ts))
                out.append(_datum(RETENTION_BELOW, len(self.layers.retention[arn]), dims, ts))
        return out

    def to_json(self) -> dict[str, Any]:
        def rows(findings: Sequence[DriftFinding]) -> list[dict[str, str]]:
            return [{"kind": f.kind, "resource": f.resource, "detail": f.detail} for f in findings]

        out: dict[str, Any] = {
            "replication_configuration": rows(self.replication),
            "replica_bucket_policies": {arn: rows(f) for arn, f in sorted(self.policies.items())},
        }
        if self.source_policy is not None:
            out["source_bucket_policy"] = rows(self.source_policy)
        if self.layers is not None:
            lay = self.layers
            out["replica_layers"] = {
                "cycle_runs": lay.cycle_runs,
                "destinations": {
                    arn: {
                        "tables": lay.tables[arn],
                        "sampled": lay.sampled[arn],
                        "table_policy_missing": rows(lay.missing[arn]),
                        "retention_below_configured": rows(lay.retention[arn]),
                    }
                    for arn in sorted(lay.sampled)
                },
            }
        return out


def _datum(name: str, value: float, dims: list[dict[str, str]], ts: datetime) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dims, "Value": float(value), "Unit": "Count", "Timestamp": ts}


def check_drift(
    clients: Clients,
    declared: Declared,
    *,
    concurrency: int = 16,
    replicas: Mapping[str, Sequence[str]] | None = None,
    ts: datetime | None = None,
) -> DriftCheck:
    """Read the source's replication configurations, its bucket policy and each replica's bucket policy; compare.
    With `replicas` (destination ARN -> the tables the status shows replicated there) and `ts` (the run's time), also
    the layers of a sample of those replica tables (`check_layers`)."""
    src = declared.replication.source_bucket_arn
    live = read_replication(clients, src, concurrency=concurrency)
    policies = {
        arn: policy_drift(arn, read_bucket_policy(clients, arn), reviewed)
        for arn, reviewed in declared.replica_bucket_policies.items()
    }
    source_policy = None
    if declared.source_bucket_policy is not None:
        source_policy = policy_drift(src, read_bucket_policy(clients, src), declared.source_bucket_policy)
    layers = None
    if replicas is not None and ts is not None and declared.replica_retention:
        layers = check_layers(clients, declared, replicas, ts, concurrency=concurrency)
    return DriftCheck(replication_drift(declared.replication, live), policies, source_policy, layers)


def declared_for(outputs: KitOutputs, config: str | None) -> dict[str, Declared]:
    """The command line's declared state of each source of the outputs (by source bucket ARN): from the
    configuration when given (as `audit` scopes it, with each destination's reviewed bucket policy and the source's),
    else from the outputs (replication and the replicas' configured retention only); the replicas' configured
    retention from the outputs either way. A source the configuration does not hold is refused."""
    retention = {
        r.table_bucket_arn: retention_settings(
            r.snapshot_retention.max_snapshot_age_hours, r.snapshot_retention.min_snapshots_to_keep
        )
        for r in outputs.replicas
    }

    def of(src: SourceOut) -> dict[str, Mapping[str, int]]:
        return {arn: v for arn, v in retention.items() if arn in src.destinations}

    if config is None:
        return {s.table_bucket_arn: declared_from_outputs(s, retention=of(s)) for s in outputs.sources}
    from s3tables_kit.jobs.ops.audit_scope import default_bucket_policy_builder, scopes_of
    from s3tables_kit.topology.config import load_config

    out = {}
    by_arn = {s.table_bucket_arn: s for s in outputs.sources}
    for scope in scopes_of(load_config(config), default_bucket_policy_builder()):
        dests = {r.bucket_arn for r in scope.destinations}
        policies = {r.bucket_arn: doc for r, doc in scope.bucket_policies if r.bucket_arn in dests}
        own = of(by_arn[scope.source.bucket_arn]) if scope.source.bucket_arn in by_arn else {}
        out[scope.source.bucket_arn] = Declared(
            scope.declared, policies, source_bucket_policy=scope.source_bucket_policy, replica_retention=own
        )
    missing = [s.table_bucket_arn for s in outputs.sources if s.table_bucket_arn not in out]
    if missing:
        raise SystemExit(f"error: the configuration {config} has no source {', '.join(missing)} of the outputs")
    return out
