"""The stand-in's one policy evaluator (emulator/authz.py, used by emulator/live.py and emulator/resource_policy.py)
on the kit's real rendered documents: the replica table policy's and bucket policy's Deny statements hold for
everyone but their exemptions, an Allow needs a matching principal, condition operators behave as IAM's do for
missing keys, and an operator the stand-in does not evaluate fails loudly instead of allowing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulator import authz, live

RENDERED = Path(__file__).resolve().parent.parent / "policies" / "rendered" / "seed"
TABLE = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket/table/<table-uuid>"
BREAK_GLASS = "arn:aws:iam::111122223333:role/s3tables-break-glass"
REPLICATION = "arn:aws:iam::111122223333:role/seed-s3tables-replication"
ADMIN = "arn:aws:iam::111122223333:role/Admin"


def doc(name: str) -> dict[str, Any]:
    return dict(json.loads((RENDERED / name).read_text()))


def deny(document: dict[str, Any], who: str, action: str, resource: str = TABLE) -> str:
    ctx = {"aws:PrincipalArn": who, "aws:PrincipalAccount": who.split(":")[4]}
    return authz.explicit_deny(document, action, resource, ctx, principal=who, resource_policy=True)


def test_the_rendered_table_policy_denies_all_but_its_exemptions() -> None:
    table_policy = doc("replica-table-policy--demo-dest-tablebucket.json")
    assert deny(table_policy, ADMIN, "s3tables:DeleteTable") == "DenyReplicaDeletion"
    assert deny(table_policy, ADMIN, "s3tables:DisassociateTableReplication") == "DenyReplicaReplicationChange"
    assert deny(table_policy, BREAK_GLASS, "s3tables:DeleteTable") == ""
    # the replication role writes replicas and sets their maintenance, but is not exempt from tag changes
    assert deny(table_policy, REPLICATION, "s3tables:PutTableData") == ""
    assert deny(table_policy, REPLICATION, "s3tables:TagResource") == "DenyReplicaTagChange"
    assert deny(table_policy, ADMIN, "s3tables:GetTable") == ""


def test_the_rendered_bucket_policy_denies_the_createtable_dependents_to_the_replication_role() -> None:
    bucket_policy = doc("replica-bucket-policy--demo-dest-tablebucket.json")
    bucket_tables = TABLE.replace("<table-uuid>", "0f0e")
    for action in live.DEPENDENT_ACTIONS:
        assert deny(bucket_policy, REPLICATION, action, bucket_tables), action


def test_condition_operators_and_missing_keys() -> None:
    ctx = {"aws:PrincipalArn": ADMIN}
    assert authz.conditions({"ArnNotLike": {"aws:PrincipalArn": BREAK_GLASS}}, ctx)
    assert not authz.conditions({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/s3tables-*"}}, ctx)
    # a missing key fails a positive operator, passes a negated one and an ...IfExists one
    assert not authz.conditions({"StringEquals": {"aws:SourceAccount": "111122223333"}}, ctx)
    assert authz.conditions({"StringNotEquals": {"aws:SourceAccount": "111122223333"}}, ctx)
    assert authz.conditions({"StringEqualsIfExists": {"aws:SourceAccount": "111122223333"}}, ctx)
    assert authz.conditions({"Null": {"aws:SourceAccount": "true"}}, ctx)
    days = {**ctx, "s3:object-lock-remaining-retention-days": "3"}  # numeric operators compare numbers, not strings
    assert authz.conditions({"NumericLessThan": {"s3:object-lock-remaining-retention-days": "10"}}, days)
    assert not authz.conditions({"NumericGreaterThan": {"s3:object-lock-remaining-retention-days": "10"}}, days)
    with pytest.raises(ValueError, match="DateLessThan"):  # an operator the stand-in does not evaluate is refused
        authz.conditions({"DateLessThan": {"aws:CurrentTime": "2026-01-01T00:00:00Z"}}, {"aws:CurrentTime": "x"})


def test_a_resource_policy_allow_needs_a_matching_principal() -> None:
    allow = {
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": BREAK_GLASS}, "Action": "s3tables:*", "Resource": "*"}]
    }
    assert authz.allows(allow, "s3tables:GetTable", TABLE, {}, principal=BREAK_GLASS, resource_policy=True)
    assert not authz.allows(allow, "s3tables:GetTable", TABLE, {}, principal=ADMIN, resource_policy=True)
    account = {"Statement": [{**allow["Statement"][0], "Principal": {"AWS": "arn:aws:iam::111122223333:root"}}]}
    assert authz.allows(account, "s3tables:GetTable", TABLE, {}, principal=ADMIN, resource_policy=True)
