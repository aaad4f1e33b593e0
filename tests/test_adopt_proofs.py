"""The adopted bucket policy of examples/adopt.toml, evaluated by the real IAM evaluator (@cloud-copilot/iam-simulate):
the analytics role's existing grant still reads after adoption, and the kit's protections still deny.

Written by hand from the intent, never computed from `policies/`: ARNs are literals; only the documents come from the
code under test (`docset.build`). Cells: A = allowed, D = explicitly denied, - = implicitly denied. Columns: ath = the
adopter's Athena role (no identity policy: the bucket policy's `AthenaReaders` is its only grant), adm = an
administrator of the source account (AdministratorAccess), bgl = break-glass (AdministratorAccess), rep = the kit's
replication role (its kit identity policy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import docset
from s3tables_kit.policies.simulate import IMPLICIT_DENY, SimRequest, evaluate
from s3tables_kit.topology.config import load_config
from tests import policy_fixtures

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parents[1]
ACCOUNT = "111122223333"
BUCKET = "arn:aws:s3tables:us-east-1:111122223333:bucket/sales-lake"
TABLE = BUCKET + "/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
PRINCIPALS = {
    "ath": "arn:aws:iam::111122223333:role/analytics-athena",
    "adm": "arn:aws:iam::111122223333:role/Administrator",
    "bgl": "arn:aws:iam::111122223333:role/s3tables-break-glass",
    "rep": "arn:aws:iam::111122223333:role/sales-s3tables-replication",
}
ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
IDENTITY = {"ath": (), "adm": ("world:Admin",), "bgl": ("world:Admin",), "rep": ("replication-role-permissions",)}

# fmt: off
MATRIX = """
# resource  action                            ath adm bgl rep
bucket      ListTables                        A   A   A   A
bucket      GetNamespace                      A   A   A   -
table       GetTable                          A   A   A   A
table       GetTableData                      A   A   A   A
table       GetTableMetadataLocation          A   A   A   A
table       DeleteTable                       -   A   A   -
bucket      PutTableBucketReplication         D   D   A   D
bucket      DeleteTableBucketReplication      D   D   A   D
table       PutTableReplication               D   D   A   D
bucket      PutTableBucketPolicy              D   D   A   D
bucket      DeleteTableBucketPolicy           D   D   A   D
"""
# fmt: on


def cases() -> list[tuple[str, str, str, str]]:
    out = []
    for line in MATRIX.strip().splitlines():
        if line.startswith("#"):
            continue
        resource, action, *cells = line.split()
        out += [(who, resource, action, cell) for who, cell in zip(PRINCIPALS, cells, strict=True)]
    return out


def request(who: str, resource: str, action: str, policy: str) -> SimRequest:
    arn = BUCKET if resource == "bucket" else TABLE
    cid = f"{policy}:{who}:{resource}:{action}"
    return policy_fixtures.own_request(
        cid, PRINCIPALS[who], f"s3tables:{action}", arn, ACCOUNT, IDENTITY[who], (policy,)
    )


@pytest.fixture(scope="module")
def policies() -> dict[str, Any]:
    docs = docset.build(load_config(ROOT / "examples" / "adopt.toml"))
    merged = docs.document("source-bucket-policy")
    kit_only = {
        **merged,
        "Statement": [s for s in merged["Statement"] if s["Sid"] not in ("AthenaReaders", "IngestWriters")],
    }
    return {
        "merged": merged,
        "kit-only": kit_only,
        "replication-role-permissions": docs.document("replication-role-permissions"),
        "world:Admin": ADMIN,
    }


def test_the_analytics_grant_still_reads_and_the_protections_still_deny(policies: dict[str, Any]) -> None:
    reqs = [request(who, resource, action, "merged") for who, resource, action, _ in cases()]
    results = evaluate(policies, reqs)
    wrong = [
        f"{who} {action} on {resource}: expected {cell}, got {results[r.id].decision} {results[r.id].denied_by}"
        for (who, resource, action, cell), r in zip(cases(), reqs, strict=True)
        if results[r.id].decision != policy_fixtures.CELL[cell]
    ]
    assert not wrong, "\n".join(wrong)
    read = results[request("ath", "table", "GetTableData", "merged").id]
    assert any(g.endswith("AthenaReaders") for g in read.granted_by), read.granted_by


def test_without_the_kept_statements_the_analytics_role_reads_nothing(policies: dict[str, Any]) -> None:
    """What the issue saw after a plain import: the kit's Deny statements alone, and the Athena grant gone."""
    reqs = [request("ath", r, a, "kit-only") for r, a in (("table", "GetTableData"), ("bucket", "ListTables"))]
    assert {res.decision for res in evaluate(policies, reqs).values()} == {IMPLICIT_DENY}
