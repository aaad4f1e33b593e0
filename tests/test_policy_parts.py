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
from s3tables_kit.topology.config import load_config

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
