"""Named attacks on the protections, one chain each, through the real IAM evaluator and the attack engine of
tests/test_policy_attacks.py: each stops at its first step."""

from __future__ import annotations

from tests import attack_world
from tests.test_policy_attacks import State, attack, layers, request, run, targets_of


def test_deploy_role_cannot_crypto_shred_or_strip_and_delete() -> None:
    """The attacks on the protections, by name: the deploy role tries to rewrite the bucket and table policies
    (to grant an account outside the organization, which then deletes) and then the key and the delete. The chain
    stops at its first step: the locked bucket policy (and the table policy) deny the deploy role every policy
    rewrite, so the outsider meets the kit's own bucket policy; key and delete stay denied by the layers the deploy
    role cannot touch."""
    world = attack_world.WORLDS["multi-account"]
    state = attack(world, "deploy222", State(world.kit_documents()))
    assert state.steps == [], state.steps  # blocked at step 1: no policy of any kind was replaced
    who = world.principals["deploy222"]
    outsider = world.principals["other555"]
    site = world.replicas[0]
    t = targets_of(site)
    reqs = {
        "rewrite bucket policy": request(world, "x", state, who, "PutTableBucketPolicy", t["bucket"], rid="bp"),
        "rewrite table policy": request(world, "x", state, who, "PutTablePolicy", t["table"], rid="tp"),
        "change encryption": request(world, "x", state, who, "PutTableBucketEncryption", t["bucket"], rid="enc"),
        "shorten retention": request(
            world, "x", state, who, "PutTableBucketMaintenanceConfiguration", t["bucket"], rid="ret"
        ),
        "delete": request(world, "x", state, who, "DeleteTable", t["table"], rid="delete"),
        "shred": request(world, "x", state, who, "kms:ScheduleKeyDeletion", t["key"], rid="shred"),
        "disable": request(world, "x", state, who, "kms:DisableKey", t["key"], rid="disable"),
        "outsider deletes": request(world, "x", state, outsider, "DeleteTable", t["table"], rid="out-delete"),
        "outsider drops the bucket": request(
            world, "x", state, outsider, "DeleteTableBucket", t["bucket"], rid="out-bucket"
        ),
    }
    results = run(world, {"x": state}, list(reqs.values()))
    for name, req in reqs.items():
        assert not results[req.id].allowed, name
    for name in ("rewrite bucket policy", "change encryption", "shorten retention"):
        assert "bucket policy" in layers(results[reqs[name].id], who, t["bucket"]), (name, results[reqs[name].id])
    for name in ("delete", "shred", "disable"):
        res = results[reqs[name].id]
        assert {"guardrail", "scp"} <= layers(res, who, t["table"]), (name, res.denied_by)
    assert "bucket policy" in layers(results[reqs["outsider deletes"].id], outsider, t["table"])


def test_name_squatting_is_denied_to_replica_account_admins() -> None:
    world = attack_world.WORLDS["multi-account"]
    state = State(world.kit_documents())
    t = targets_of(world.replicas[0])
    reqs = [
        request(world, "base", state, world.principals[k], a, t["bucket"], rid=f"{k}|{a}")
        for k in ("admin222", "engineer222", "deploy222")
        for a in ("CreateNamespace", "CreateTable")
    ]
    results = run(world, {"base": state}, reqs)
    assert all(not r.allowed for r in results.values()), results
