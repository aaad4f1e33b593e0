"""The replication monitor's drift checks (`jobs.ops.drift`), run on every interval beside the status metrics:

| metric | dimensions | value |
|---|---|---|
| `ReplicationConfigurationDrift` | Kit              | findings in the source's replication configurations |
| `ReplicaBucketPolicyDrift`      | Kit, Destination | findings in the replica's bucket policy (reviewed document) |

(the configurations: the bucket level and the table level of every table of the source bucket).

A check that could not be made (AccessDenied, a throttled read out of retries) counts as a finding: never silently
passed. What the checks compare with is the package's `kit_declared.json` (`topology.contract.DECLARED_FILE`, written
at synth), or, from the command line, the outputs (`declared_from_outputs`) and optionally the configuration's
documents. Every finding is in the run's summary (the function's log line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.ops.drift import DeclaredReplication, DriftFinding, policy_drift, replication_drift
from s3tables_kit.jobs.ops.drift_read import read_bucket_policy, read_replication
from s3tables_kit.topology.contract import (
    CONFIG_DRIFT,
    DECLARED_GROUPS,
    DECLARED_POLICIES,
    DECLARED_REPLICATION,
    POLICY_DRIFT,
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

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Declared:
        groups = {k: tuple(v) for k, v in (doc.get(DECLARED_GROUPS) or {}).items()}
        return cls(
            DeclaredReplication.from_json(doc[DECLARED_REPLICATION]), dict(doc.get(DECLARED_POLICIES) or {}), groups
        )

    def to_json(self) -> dict[str, Any]:
        doc = {DECLARED_REPLICATION: self.replication.to_json(), DECLARED_POLICIES: dict(self.replica_bucket_policies)}
        return doc | ({DECLARED_GROUPS: {k: list(v) for k, v in self.groups.items()}} if self.groups else {})


def load_declared(path: Path) -> Declared | None:
    """The package's declared file; None when there is none (a package built without it checks no drift)."""
    if not path.is_file():
        return None
    return Declared.from_json(json.loads(path.read_text(encoding="utf-8")))


def declared_from_outputs(src: SourceOut, policies: Mapping[str, Any] | None = None) -> Declared:
    """The declared replication of one source as its `kit_source` output states it (what the stack deployed)."""
    return Declared(
        DeclaredReplication(
            source_bucket_arn=src.table_bucket_arn,
            mode=src.replication_mode,
            role_arn=src.replication_role_arn,
            destinations=tuple(src.destinations),
            tables=tuple(src.replicated_tables) if src.replication_mode == "tables" else (),
        ),
        dict(policies or {}),
    )


@dataclass
class DriftCheck:
    replication: list[DriftFinding]
    policies: dict[str, list[DriftFinding]]  # replica bucket ARN -> findings

    def data(self, kit: str, ts: datetime) -> list[dict[str, Any]]:
        kit_dim = [{"Name": "Kit", "Value": kit}]
        out = [_datum(CONFIG_DRIFT, len(self.replication), kit_dim, ts)]
        for arn in sorted(self.policies):
            dims = [*kit_dim, {"Name": "Destination", "Value": arn}]
            out.append(_datum(POLICY_DRIFT, len(self.policies[arn]), dims, ts))
        return out

    def to_json(self) -> dict[str, Any]:
        def rows(findings: Sequence[DriftFinding]) -> list[dict[str, str]]:
            return [{"kind": f.kind, "resource": f.resource, "detail": f.detail} for f in findings]

        return {
            "replication_configuration": rows(self.replication),
            "replica_bucket_policies": {arn: rows(f) for arn, f in sorted(self.policies.items())},
        }


def _datum(name: str, value: float, dims: list[dict[str, str]], ts: datetime) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dims, "Value": float(value), "Unit": "Count", "Timestamp": ts}


def check_drift(clients: Clients, declared: Declared, *, concurrency: int = 16) -> DriftCheck:
    """Read the source's replication configurations and each replica's bucket policy; compare."""
    live = read_replication(clients, declared.replication.source_bucket_arn, concurrency=concurrency)
    policies = {
        arn: policy_drift(arn, read_bucket_policy(clients, arn), reviewed)
        for arn, reviewed in declared.replica_bucket_policies.items()
    }
    return DriftCheck(replication_drift(declared.replication, live), policies)


def declared_for(outputs: KitOutputs, config: str | None) -> dict[str, Declared]:
    """The command line's declared state of each source of the outputs (by source bucket ARN): from the
    configuration when given (as `audit` scopes it, with each destination's reviewed bucket policy; a source the
    configuration does not hold is refused), else from the outputs (replication only)."""
    if config is None:
        return {s.table_bucket_arn: declared_from_outputs(s) for s in outputs.sources}
    from s3tables_kit.jobs.ops.audit_scope import default_bucket_policy_builder, scopes_of
    from s3tables_kit.topology.config import load_config

    out = {}
    for scope in scopes_of(load_config(config), default_bucket_policy_builder()):
        dests = {r.bucket_arn for r in scope.destinations}
        policies = {r.bucket_arn: doc for r, doc in scope.bucket_policies if r.bucket_arn in dests}
        out[scope.source.bucket_arn] = Declared(scope.declared, policies)
    missing = [s.table_bucket_arn for s in outputs.sources if s.table_bucket_arn not in out]
    if missing:
        raise SystemExit(f"error: the configuration {config} has no source {', '.join(missing)} of the outputs")
    return out
