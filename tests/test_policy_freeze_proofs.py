"""Proofs of the planned failover's freeze with the real IAM evaluator (@cloud-copilot/iam-simulate).

The world is examples/seed.toml during a planned failover: the source bucket's policy is the rendered freeze
(`planned-failover-freeze--demo-source-tablebucket`), and, on the way back, the promoted replica's policy is its
failover bucket policy with the freeze merged in (`planned-failover-freeze--demo-dest-tablebucket`). Every expected
cell is written by hand from the intent: writers (and an administrator, and the maintenance service) are denied every
data write by the freeze; break-glass still writes; the replication role reads the source as before; reads are
untouched.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3tables_kit.policies.render import EXAMPLES_DIR, RENDERED_DIR
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, SimRequest, errors_of, evaluate, principal_context

pytestmark = pytest.mark.node

ACCOUNT = "111122223333"
SOURCE = f"arn:aws:s3tables:us-east-1:{ACCOUNT}:bucket/demo-source-tablebucket"
SOURCE_TABLE = SOURCE + "/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
PROMOTED = f"arn:aws:s3tables:us-west-2:{ACCOUNT}:bucket/demo-dest-tablebucket"
PROMOTED_TABLE = PROMOTED + "/table/7a2b3c4d-5e6f-4a7b-8c9d-223344556677"
PRINCIPALS = {
    "writer": f"arn:aws:iam::{ACCOUNT}:role/demo-writer",
    "admin": f"arn:aws:iam::{ACCOUNT}:role/Administrator",
    "breakglass": f"arn:aws:iam::{ACCOUNT}:role/s3tables-break-glass",
    "repl": f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-replication",
    "maint": "maintenance.s3tables.amazonaws.com",
}
ALL_S3TABLES = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3tables:*", "Resource": "*"}]}
D, A = EXPLICIT_DENY, ALLOWED

# (who, resource, action) -> expected, by hand. Source: the freeze alone is the bucket's policy.
CASES: dict[tuple[str, str, str], str] = {
    ("writer", "source-table", "UpdateTableMetadataLocation"): D,
    ("writer", "source-table", "PutTableData"): D,
    ("writer", "source", "CreateTable"): D,
    ("writer", "source-table", "DeleteTable"): D,
    ("writer", "source-table", "RenameTable"): D,
    ("writer", "source-table", "GetTableData"): A,
    ("writer", "source-table", "GetTableMetadataLocation"): A,
    ("admin", "source-table", "UpdateTableMetadataLocation"): D,
    ("admin", "source-table", "PutTableData"): D,
    ("maint", "source-table", "UpdateTableMetadataLocation"): D,
    ("maint", "source-table", "PutTableData"): D,
    ("breakglass", "source-table", "UpdateTableMetadataLocation"): A,
    ("breakglass", "source-table", "PutTableData"): A,
    ("breakglass", "source", "CreateTable"): A,
    ("breakglass", "source", "PutTableBucketPolicy"): A,  # lifting the freeze
    ("repl", "source-table", "GetTable"): A,
    ("repl", "source-table", "GetTableMetadataLocation"): A,
    ("repl", "source-table", "GetTableMaintenanceConfiguration"): A,
    ("repl", "source-table", "GetTableData"): A,
    ("repl", "source", "ListTables"): A,
    # the failback: the promoted bucket's failover policy + the freeze (writers are exempt from the former only)
    ("writer", "promoted-table", "UpdateTableMetadataLocation"): D,
    ("writer", "promoted-table", "PutTableData"): D,
    ("writer", "promoted", "CreateNamespace"): D,
    ("writer", "promoted-table", "GetTableData"): A,
    ("breakglass", "promoted-table", "UpdateTableMetadataLocation"): A,
    ("breakglass", "promoted-table", "PutTableData"): A,
}
RESOURCES = {
    "source": (SOURCE, "planned-failover-freeze--demo-source-tablebucket"),
    "source-table": (SOURCE_TABLE, "planned-failover-freeze--demo-source-tablebucket"),
    "promoted": (PROMOTED, "planned-failover-freeze--demo-dest-tablebucket"),
    "promoted-table": (PROMOTED_TABLE, "planned-failover-freeze--demo-dest-tablebucket"),
}


def test_the_replication_role_is_the_seed_s() -> None:
    from s3tables_kit.topology.config import load_config

    cfg = load_config(EXAMPLES_DIR / "seed.toml")
    assert cfg.replication_role_arn_of(cfg.sources[0]) == PRINCIPALS["repl"]


def _policies() -> dict[str, Any]:
    out: dict[str, Any] = {"world:AllS3Tables": ALL_S3TABLES}
    for _, name in RESOURCES.values():
        out[name] = json.loads((RENDERED_DIR / "seed" / f"{name}.json").read_text())
    out["replication-role-permissions"] = json.loads(
        (RENDERED_DIR / "seed" / "replication-role-permissions.json").read_text()
    )
    return out


def _request(who: str, resource: str, action: str) -> SimRequest:
    arn, policy = RESOURCES[resource]
    principal = PRINCIPALS[who]
    identity: tuple[str, ...] = ()
    if who == "repl":
        identity = ("replication-role-permissions",)
    elif who != "maint":
        identity = ("world:AllS3Tables",)
    return SimRequest(
        id=f"{who}:{resource}:{action}",
        principal=principal,
        action=f"s3tables:{action}",
        resource=arn,
        resource_account=ACCOUNT,
        context=principal_context(principal, source_account=ACCOUNT),
        identity_policies=identity,
        resource_policies=(policy,),
    )


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return evaluate(_policies(), [_request(*case) for case in CASES])


def test_writers_are_denied_break_glass_writes_and_replication_reads(results: dict[str, Any]) -> None:
    assert not errors_of(results)
    got = {case: results[":".join(case)].decision for case in CASES}
    assert got == CASES
    for case, expected in CASES.items():
        if expected == D:
            assert any("DenyDataWritesDuringPlannedFailover" in d for d in results[":".join(case)].denied_by), case


def test_the_freeze_carries_no_context_key_the_evaluator_ignored(results: dict[str, Any]) -> None:
    assert not [r.id for r in results.values() if r.ignored_context_keys and r.decision == D]
