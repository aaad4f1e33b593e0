"""Managed policies of constant size (`s3tables_kit.policies.parts`): the one-account nine-bucket lake's guardrail is
deployed in parts, each under its quota and attached to the same roles, read whole by the lock check; a guardrail of
any number of buckets keeps every part bounded."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from s3tables_kit.infra.lockcheck import Classifier
from s3tables_kit.policies import documents, parts
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.lint import MANAGED_POLICY_MAX_CHARS, lint_documents
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, SimRequest, principal_context
from s3tables_kit.topology.config import load_config
from tests import policy_fixtures

ROOT = Path(__file__).resolve().parent.parent
LAKE = load_config(ROOT / "examples" / "lake.toml")
ACCOUNT = "111122223333"
STACK = json.loads((ROOT / "tests" / "golden" / "lake" / "replica-sales-lake-us-west-2.json").read_text())


def test_the_lakes_guardrail_is_deployed_in_parts_that_hold_every_statement_once() -> None:
    ds = build(LAKE)
    whole = documents.replica_guardrail(LAKE, ACCOUNT)
    assert parts.size(whole) > MANAGED_POLICY_MAX_CHARS  # one managed policy would never apply
    split = ds.parts("replica-guardrail", ACCOUNT)
    assert len(split) == 2
    assert all(parts.size(p) <= parts.PART_BUDGET for p in split)
    assert [s for p in split for s in p["Statement"]] == whole["Statement"]  # in order, none lost, none twice
    assert lint_documents(ds) == []  # every document of the lake within its quota (KIT-IAM5, 8, 9) and sound


def test_every_part_is_a_managed_policy_attached_to_the_same_roles_part_one_keeps_its_construct() -> None:
    res = STACK["resource"]
    policies = {b["name"]: k for k, b in res["aws_iam_policy"].items()}
    assert policies[LAKE.guardrail_policy_name].startswith("guardrail_policy_")  # construct id `guardrail`, as before
    assert policies[f"{LAKE.guardrail_policy_name}-part2"].startswith("guardrail-part2_policy_")
    attached: dict[str, set[str]] = {}
    for body in res["aws_iam_role_policy_attachment"].values():
        attached.setdefault(body["policy_arn"].split(".")[1], set()).add(body["role"])
    assert attached[policies[LAKE.guardrail_policy_name]] == attached[policies[f"{LAKE.guardrail_policy_name}-part2"]]
    assert attached[policies[LAKE.guardrail_policy_name]] == {"data-engineer"}
    # each part a protection document: Terraform refuses any plan that destroys it (decision 0010)
    assert all(b["lifecycle"]["prevent_destroy"] is True for b in res["aws_iam_policy"].values())


def _plan(rtype: str, name: str, before: dict[str, Any], after: dict[str, Any] | None) -> dict[str, Any]:
    actions = ["delete"] if after is None else ["update"]
    change = {"actions": actions, "before": before, "after": after}
    return {"resource_changes": [{"address": f"{rtype}.{name}", "mode": "managed", "type": rtype, "change": change}]}


def test_the_lock_check_reads_every_part() -> None:
    (name, body), *_ = ((k, b) for k, b in STACK["resource"]["aws_iam_policy"].items() if b["name"].endswith("-part2"))
    rewritten = {**copy.deepcopy(body), "policy": "{}"}
    [changed] = Classifier(LAKE).locked(_plan("aws_iam_policy", name, body, rewritten))
    assert (changed.action, changed.resource, changed.rule) == (
        "iam:CreatePolicyVersion",
        f"{LAKE.guardrail_policy_name}-part2",
        "DenyGuardrailChange",
    )
    arn = f"arn:aws:iam::{ACCOUNT}:policy/{LAKE.guardrail_policy_name}-part2"
    detach = _plan("aws_iam_role_policy_attachment", "a", {"policy_arn": arn, "role": "data-engineer"}, None)
    assert [(f.action, f.rule) for f in Classifier(LAKE).locked(detach)] == [
        ("iam:DetachRolePolicy", "DenyGuardrailDetach")
    ]
    other = {"name": "lake-s3tables-replica-guardrailish", "policy": "{}"}  # not a part: a name that only starts alike
    assert Classifier(LAKE).locked(_plan("aws_iam_policy", "b", other, {**other, "policy": "[]"})) == []


def test_the_guards_name_every_part() -> None:
    """The guardrail's own guards (and the guards SCP's) cover part k by the pattern `<name>*`."""
    ds = build(LAKE)
    guards = [s for p in ds.parts("replica-guardrail", ACCOUNT) for s in p["Statement"]]
    change = next(s for s in guards if s["Sid"] == "DenyGuardrailChange")
    assert f"arn:aws:iam::{ACCOUNT}:policy/{LAKE.guardrail_policy_name}*" in change["Resource"]
    scp = ds.document("scp-protect-replica-guards")
    detach = next(s for s in scp["Statement"] if s["Sid"] == "DenyGuardrailDetach")
    assert f"arn:aws:iam::*:policy/{LAKE.guardrail_policy_name}*" in detach["Condition"]["ArnEquals"]["iam:PolicyARN"]


def test_any_number_of_buckets_keeps_every_part_bounded() -> None:
    """A statement alone over a part is cut along its resources; the parts grow in number, never in size."""
    many = [f"arn:aws:s3tables:us-west-2:{ACCOUNT}:bucket/b{i:03d}-lake-us-west-2" for i in range(200)]
    whole = documents.replica_guardrail(LAKE, ACCOUNT)
    big = copy.deepcopy(whole)
    big["Statement"][0]["Resource"] = many
    split = parts.split(big)
    assert len(split) > 3 and all(parts.size(p) <= parts.PART_BUDGET for p in split)
    first = [s for p in split for s in p["Statement"] if s["Sid"].startswith(whole["Statement"][0]["Sid"])]
    assert [r for s in first for r in s["Resource"]] == many  # every bucket, once, in order
    assert len({s["Sid"] for s in first}) == len(first)  # Sids unique wherever the pieces land
    assert parts.split(whole) == [whole] if parts.size(whole) <= parts.PART_BUDGET else True
    seed = load_config(ROOT / "examples" / "seed.toml")
    assert [d.name for d in build(seed) if parts.part_of(d.name, "replica-guardrail")] == [
        "replica-guardrail--111122223333"
    ]  # one part where one fits: nothing renamed


def test_summary_lists_the_size_of_every_document_with_a_quota() -> None:
    """Every SCP, identity policy (each part of a managed one) and table bucket or table policy each example deploys,
    with its size, in its SUMMARY.md; none over its quota (the rendered files are what `make policies` wrote)."""
    quota = {"scp": 5120, "identity": MANAGED_POLICY_MAX_CHARS, "bucket-policy": 20480, "table-policy": 20480}
    for example in sorted(p.stem for p in (ROOT / "examples").glob("*.toml")):
        summary = (ROOT / "policies" / "rendered" / example / "SUMMARY.md").read_text()
        for d in build(load_config(ROOT / "examples" / f"{example}.toml")):
            if d.kind in quota:
                assert f"`{d.name}` {parts.size(d.document)}" in summary, (example, d.name)
                assert parts.size(d.document) <= quota[d.kind], (example, d.name)


def test_a_role_carrying_every_part_meets_every_guard_and_each_part_is_needed() -> None:
    """The IAM simulator on the lake's deployed parts: the data engineer (AdministratorAccess and the guardrail,
    every part) is denied, by the guardrail alone (no SCP in these requests), deleting a replica (part 1), taking over
    a replication role and rewriting or detaching part 2 (part 2). The same engineer carrying part 1 alone gets the
    role and the policy: part 2 is not decoration."""
    ds = build(LAKE)
    docs = {d.name: d.document for d in ds}
    every = tuple(n for n in docs if parts.part_of(n, "replica-guardrail", ACCOUNT))
    assert len(every) == 2
    engineer = f"arn:aws:iam::{ACCOUNT}:role/data-engineer"
    part2 = f"arn:aws:iam::{ACCOUNT}:policy/{LAKE.guardrail_policy_name}-part2"
    cases = {  # case -> (action, resource, extra context, the part whose statement denies it)
        "delete-replica": ("s3tables:DeleteTableBucket", LAKE.replicas[-1].bucket_arn, {}, 1),
        "take-over-role": (
            "iam:UpdateAssumeRolePolicy",
            LAKE.replication_role_arn_of(LAKE.sources[-1]),
            {},
            2,
        ),
        "rewrite-part2": ("iam:CreatePolicyVersion", part2, {}, 2),
        "detach-part2": ("iam:DetachRolePolicy", engineer, {"iam:PolicyARN": part2}, 2),
    }
    carried = {"every": every, "first": every[:1]}
    reqs = [
        SimRequest(
            id=f"{label}|{case}",
            principal=engineer,
            action=action,
            resource=resource,
            resource_account=ACCOUNT,
            context={**principal_context(engineer), **extra},
            identity_policies=(policy_fixtures.ADMIN_ACCESS, *(f"base|{n}" for n in names)),
        )
        for label, names in carried.items()
        for case, (action, resource, extra, _) in cases.items()
    ]
    results = _decisions(docs, reqs)
    for case, (*_, part) in cases.items():
        assert results[f"every|{case}"] == EXPLICIT_DENY, case
        assert results[f"first|{case}"] == (EXPLICIT_DENY if part == 1 else ALLOWED), case


def _decisions(docs: dict[str, Any], reqs: list[SimRequest]) -> dict[str, str]:
    from s3tables_kit.policies import simulate

    policies = {**policy_fixtures.WORLD_POLICIES, **{f"base|{n}": d for n, d in docs.items()}}
    results = simulate.evaluate(policies, reqs)
    assert not simulate.errors_of(results), simulate.errors_of(results)[:5]
    return {rid: r.decision for rid, r in results.items()}
