"""Proofs with the IAM simulator that a replica account's own freshness check is guarded like the source's monitor:
an administrator of the replica account cannot silence it (its alarm, function, schedule, topic, log group, topic
key) nor publish in the kit's namespace in its place; the replica stack's deploy role and break-glass change it;
its role publishes. The bearer of the account's guardrail meets two layers (the guardrail and the pipeline SCP).
Each guard is needed: the check's resources out of every layer, its role out of the publishers.

The world is written by hand from the example configurations (a `[source]` topology by ARN, an estate's vault by
the kit's name patterns); only the documents come from the code under test. The principals and the evaluation are
those of `tests/test_policy_pipeline_proofs.py`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, SimResult
from tests import policy_fixtures
from tests.test_policy_pipeline_proofs import DEPLOY_MAY, NAMESPACE, WORLD, Case, Site, documents
from tests.test_policy_pipeline_proofs import request as sim_request

pytestmark = pytest.mark.node


def _check(example: str, account: str, kit: str, bucket: str) -> tuple[Site, str, str, str]:
    """A replica account holding a check (its first replica in eu-central-1): (site, kit name, a replica bucket of
    that account, its topic key policy); its deploy role, break-glass and engineer by the examples' names."""
    role = f"arn:aws:iam::{account}:role"
    site = Site(
        example, account, "eu-central-1", f"{kit}-freshness", bucket, f"{role}/terraform-deploy", "",
        f"{role}/s3tables-break-glass", "", guardrail=f"replica-guardrail--{account}",
        pipeline_guardrail=f"pipeline-guardrail--{account}", engineer=f"{role}/data-engineer",
        monitor_role=f"{role}/{kit}-freshness",
    )  # fmt: skip
    return site, kit, bucket, f"kms-key-policy--alarm-topic-freshness-{account}"


# A monitor feeding each check's account (read by hand from the examples): the check compares it at every run.
MONITORS = {
    "multi-account": "arn:aws:lambda:eu-west-1:111111111111:function:lakehouse-replication-monitor",
    "estate": "arn:aws:lambda:us-east-1:555555555555:function:estate-ops-use1-replication-monitor",
}

CHECKS = {
    "multi-account": _check("multi-account", "222222222222", "lakehouse", "lakehouse-replica-use1"),
    "estate": _check("estate", "666666666666", "estate", "estate-vault-euc1"),
}


def cases(name: str) -> dict[str, Case]:
    site, kit, bucket, key_policy = CHECKS[name]
    topic = site.arn("sns", f"{kit}-freshness-assurance-alarms")
    silence = {
        "cloudwatch:DisableAlarmActions": site.arn("cloudwatch", f"alarm:{kit}-freshness-replica-stale-{bucket}"),
        "cloudwatch:DeleteAlarms": site.arn("cloudwatch", f"alarm:{kit}-freshness-replica-stale-{bucket}"),
        "lambda:UpdateFunctionCode": site.arn("lambda", f"function:{kit}-freshness-replication-monitor"),
        "scheduler:DeleteSchedule": site.arn("scheduler", f"schedule/default/{kit}-freshness-replication-monitor"),
        "sns:Unsubscribe": topic,
        "logs:DeleteLogGroup": site.arn("logs", f"log-group:{kit}-freshness-replication-monitor"),
    }
    ns = (("cloudwatch:namespace", NAMESPACE),)
    metrics = site.arn("cloudwatch", "dataset/kit")
    alias = (("kms:ResourceAliases", f"alias/{kit}-freshness-assurance-alarms"),)
    key = site.arn("kms", "key/0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e")
    out: dict[str, Case] = {}
    for who in ("admin", "engineer", "deploy", "breakglass"):
        want = EXPLICIT_DENY if who in ("admin", "engineer") else ALLOWED
        for action, resource in silence.items():
            deploy_denied = who == "deploy" and action not in DEPLOY_MAY  # no deletion, no muting
            out[f"{who}:silence:{action}"] = Case(who, action, resource, EXPLICIT_DENY if deploy_denied else want)
        key_want = EXPLICIT_DENY if who == "deploy" else want  # a key is break-glass's once the kit's alias names it
        out[f"{who}:topic-key:kms:DisableKey"] = Case(who, "kms:DisableKey", key, key_want, alias, key_policy)
    for who in ("admin", "engineer"):
        out[f"{who}:heartbeat:cloudwatch:PutMetricData"] = Case(
            who, "cloudwatch:PutMetricData", metrics, EXPLICIT_DENY, ns
        )
    out["monitor:heartbeat:cloudwatch:PutMetricData"] = Case(
        "monitor", "cloudwatch:PutMetricData", metrics, ALLOWED, ns
    )
    # no guard of its account stops the check reading the monitor of a source feeding it (its own grant and the
    # function's resource policy: tests/test_running_record.py)
    out["monitor:reads-the-source-monitor"] = Case(
        "monitor", "lambda:GetFunctionConfiguration", MONITORS[name], ALLOWED
    )
    return out


def _kit_allowlist_dropped(docs: dict[str, Any]) -> None:
    """The kit's resources' allow-list (the check's function, schedule, alarms, topic and log group) out of every
    layer."""
    found = False
    for d in docs.values():
        kept = [s for s in d["Statement"] if s.get("Sid") != "DenyKitResources"]
        found |= kept != d["Statement"]
        d["Statement"] = kept
    assert found


def _publisher_dropped(docs: dict[str, Any]) -> None:
    found = False
    for d in docs.values():
        for stmt in d["Statement"]:
            if stmt.get("Sid") != "DenyKitMetricsFromOthers":
                continue
            cond = stmt["Condition"]["ArnNotLike"]
            arns = cond["aws:PrincipalArn"]
            arns = [arns] if isinstance(arns, str) else arns
            cond["aws:PrincipalArn"] = [
                a for a in arns if not a.endswith(("/lakehouse-freshness", "/estate-freshness"))
            ]
            found |= cond["aws:PrincipalArn"] != arns
    assert found


MUTATIONS = {
    "the kit's resources' allow-list removed": (
        _kit_allowlist_dropped,
        {f"{w}:silence:{a}" for w in ("admin", "engineer") for a in ("cloudwatch:DeleteAlarms", "sns:Unsubscribe")},
    ),
    "check role out of the publishers": (_publisher_dropped, {"monitor:heartbeat:cloudwatch:PutMetricData"}),
}


@pytest.fixture(scope="module", params=list(CHECKS))
def proven(request: pytest.FixtureRequest) -> tuple[str, dict[str, dict[str, SimResult]]]:
    name = str(request.param)
    site = CHECKS[name][0]
    docs = documents(name)
    variants = {"base": docs}
    for i, (mutate, _flipped) in enumerate(MUTATIONS.values()):
        mutated = copy.deepcopy(docs)
        mutate(mutated)
        variants[f"m{i}"] = mutated
    reqs = [
        sim_request(site, cid, case, label, d) for label, d in variants.items() for cid, case in cases(name).items()
    ]
    return name, policy_fixtures.evaluate_variants(variants, reqs, world=WORLD)


def test_the_check_cannot_be_silenced_from_its_own_account(proven: tuple[str, dict[str, dict[str, SimResult]]]) -> None:
    name, results = proven
    base = results["base"]
    want = cases(name)
    bad = {
        cid: (c.want, base[cid].decision, base[cid].denied_by)
        for cid, c in want.items()
        if base[cid].decision != c.want
    }
    assert not bad, f"{name}: {bad}"
    for cid, case in cases(name).items():
        layers = {d.split(":", 1)[0] for d in base[cid].denied_by}
        if case.want == EXPLICIT_DENY and ":topic-key:" in cid:
            assert "resource" in layers, (cid, base[cid].denied_by)  # the key's own policy
        elif case.want == EXPLICIT_DENY and ":heartbeat:" in cid:
            assert "scp" in layers, (cid, base[cid].denied_by)  # the pipeline SCP (and the engineer's guardrail)
        elif case.want == EXPLICIT_DENY and case.who == "engineer":
            assert layers == {"identity", "scp"}, (cid, base[cid].denied_by)  # the guardrail and the pipeline SCP


def test_each_guard_of_the_check_is_needed(proven: tuple[str, dict[str, dict[str, SimResult]]]) -> None:
    name, results = proven
    want = cases(name)
    for i, (label, (_mutate, flipped)) in enumerate(MUTATIONS.items()):
        got = {cid for cid, r in results[f"m{i}"].items() if r.decision != want[cid].want}
        assert flipped <= got, f"{name}: {label}: {sorted(got)}"
