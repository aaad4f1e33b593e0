"""The simulator's batch (`s3tables_kit.policies.simulate.evaluate`) evaluates requests that differ only in their ids
and in the names of documents with equal content once: what the proofs' mutation variants mostly are."""

from __future__ import annotations

import copy

import pytest

from s3tables_kit.policies import simulate
from s3tables_kit.policies.simulate import EXPLICIT_DENY
from tests import policy_fixtures
from tests.test_policy_proofs import EXPECTED, _split

pytestmark = pytest.mark.node


def test_equal_requests_are_evaluated_once_and_answer_with_their_own_names() -> None:
    """The simulator's batch evaluates requests that differ only in the names of equal documents once
    (`simulate._distinct`): three copies of the documents, one mutated, give the replica cases (bucket and table
    policies merged, whose statement ids carry the document's name) exactly what evaluating every request gives."""
    kit = policy_fixtures.kit_policies(policy_fixtures.load())
    mutated = copy.deepcopy(kit)
    policy_fixtures.drop_exempt_principal(
        mutated[policy_fixtures.BUCKET_POLICY], "DenyReplicaDataWrite", policy_fixtures.PRINCIPALS["repl"]
    )
    variants = {"a": kit, "b": kit, "c": mutated}
    cases = [c for c in EXPECTED if _split(c)[1].startswith("replica-") and _split(c)[0] in ("repl", "admin", "maint")]
    requests = [policy_fixtures.request(*_split(cid), variant=label) for label in variants for cid in cases]
    policies = policy_fixtures.variant_policies(variants)
    once = simulate.evaluate(policies, requests)
    each = simulate.evaluate(policies, requests, distinct=False)
    assert once == each
    assert once["b|repl:replica-table:PutTableData"].granted_by != once["a|repl:replica-table:PutTableData"].granted_by
    assert once["c|repl:replica-table:PutTableData"].decision == EXPLICIT_DENY
