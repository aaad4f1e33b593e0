"""The recovery role writes its own bucket and nothing else, with a document of constant size in the number of
replicas (`recovery-role-permissions`, `DenyAllWritesToReplicas` with the recovery bucket as its `NotResource`).

Proven with the IAM simulator on the one-account lake of nine replicas (`examples/lake.toml`): the role's own
document, beside a grant of `s3tables:*` on `*` (a mistaken managed policy), refuses every protected write on its
replicas, on an untagged bucket the configuration never named (a tenth replica added later) and on a source; the same
requests on the recovery bucket and its tables are allowed. The size is the rendered document's, for every example.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3tables_kit.policies import actions, documents
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, SimRequest, principal_context
from s3tables_kit.topology.config import load_config
from tests import policy_fixtures
from tests.test_policy_lint import EXAMPLES, ROOT

pytestmark = pytest.mark.node

GRANT_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3tables:*", "Resource": "*"}]}
UNNAMED = "arn:aws:s3tables:us-west-2:111122223333:bucket/tenth-lake-us-west-2"  # in no configuration
# The rendered document at the nine replicas of the lake (compact JSON; 4,347 when it named every replica).
LAKE_SIZE = 3100


def _table(bucket_arn: str) -> str:
    return f"{bucket_arn}/table/0d5e6f7a-8b9c-4d0e-9f2a-556677889900"


def _kinds(action: str) -> tuple[str, ...]:
    """The resource types the action is authorized on (the simulator refuses any other)."""
    both = action in actions.TABLE_OR_BUCKET_LEVEL
    return (*(("bucket",) if both or action in actions.BUCKET_LEVEL else ()),
            *(("table",) if both or action in actions.TABLE_LEVEL else ()))  # fmt: skip


@pytest.fixture(scope="module")
def results() -> tuple[Any, dict[str, Any]]:
    cfg = load_config(ROOT / "examples" / "lake.toml")
    role = cfg.recovery_role_arn
    docs = {"recovery": documents.recovery_role_permissions(cfg), "grant-all": GRANT_ALL}
    sites = {
        # the first and the last of the nine (the Deny names none of them: any two stand for all)
        **{r.bucket: r.bucket_arn for r in (cfg.replicas[0], cfg.replicas[-1])},
        "unnamed": UNNAMED,
        "source": cfg.sources[0].bucket_arn,
        "recovery": cfg.recovery_bucket_arn,
    }
    reqs = [
        SimRequest(
            id=f"{site}:{kind}:{action}",
            principal=role,
            action=f"s3tables:{action}",
            resource=arn if kind == "bucket" else _table(arn),
            resource_account=arn.split(":")[4],
            context=principal_context(role),
            identity_policies=("recovery", "grant-all"),
        )
        for site, arn in sites.items()
        for action in actions.REPLICA_WRITE_ACTIONS
        for kind in _kinds(action)
    ]
    return cfg, policy_fixtures.evaluate_variants({"": docs}, reqs, world={})[""]


def test_the_recovery_role_writes_its_bucket_and_nothing_else(results: tuple[Any, dict[str, Any]]) -> None:
    cfg, got = results
    assert len(cfg.replicas) == 9
    for cid, res in got.items():
        site = cid.split(":", 1)[0]
        want = ALLOWED if site == "recovery" else EXPLICIT_DENY
        assert res.decision == want, (cid, res.decision)
        if want == EXPLICIT_DENY:
            assert any(d.endswith("#DenyAllWritesToReplicas") for d in res.denied_by), (cid, res.denied_by)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_its_size_does_not_grow_with_the_replicas(example: Any) -> None:
    """One `NotResource` of two ARNs, whatever the number of replicas: the lake's nine give the seed's one's size
    give or take the names (the rendered file is what `SUMMARY.md` lists)."""
    cfg = load_config(example)
    doc = documents.recovery_role_permissions(cfg)
    deny = next(s for s in doc["Statement"] if s["Sid"] == "DenyAllWritesToReplicas")
    assert deny["NotResource"] == [cfg.recovery_bucket_arn, f"{cfg.recovery_bucket_arn}/table/*"]
    assert not any(r.bucket_arn in json.dumps(deny) for r in cfg.replicas)
    if example.stem == "lake":
        assert len(json.dumps(doc, separators=(",", ":"))) == LAKE_SIZE
