"""`explain` (policies/explain.py) on assuming a replication role, in the estate example: the resource control
policy is evaluated, and for a caller outside the organization (whom no SCP binds) it is the deciding layer.

The Sid expected is read from the reviewed RCP under policies/rendered/estate/, not from `explain`'s code path. Each
configuration's questions are one batch of the npm simulator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import explain
from s3tables_kit.topology.config import KitConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "estate.toml"
RCP = "rcp-protect-replication-roles"
RCP_SID = json.loads((ROOT / "policies" / "rendered" / "estate" / f"{RCP}.json").read_text())["Statement"][0]["Sid"]

OUTSIDER = "arn:aws:iam::123456789012:role/Administrator"  # an account outside the organization
SERVICE = "replication.s3tables.amazonaws.com"
# a role minted under the replication name pattern in the vault's account, its trust naming the outsider
MINTED = "arn:aws:iam::666666666666:role/estate-x-s3tables-replication"
KIT_ROLE = "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication"
SOURCE_ARN = "aws:SourceArn=arn:aws:s3tables:eu-west-1:111111111111:bucket/estate-sales-euw1"

QUESTIONS: dict[str, tuple[str, str, str, list[str]]] = {
    "outsider-minted": (OUTSIDER, "sts:AssumeRole", MINTED, []),
    "outsider-web-identity": (OUTSIDER, "sts:AssumeRoleWithWebIdentity", MINTED, []),
    "outsider-kit-role": (OUTSIDER, "sts:AssumeRole", KIT_ROLE, []),
    "service-kit-role": (SERVICE, "sts:AssumeRole", KIT_ROLE, [SOURCE_ARN]),
}


def ask(cfg: KitConfig) -> dict[str, explain.Explanation]:
    questions = [explain.Question(explain.parse_request(p, a, r, c)) for p, a, r, c in QUESTIONS.values()]
    return dict(zip(QUESTIONS, explain.explain_all(cfg, questions), strict=True))


@pytest.fixture(scope="module")
def cfg() -> KitConfig:
    return load_config(CONFIG)


@pytest.fixture(scope="module")
def answers(cfg: KitConfig) -> dict[str, explain.Explanation]:
    return ask(cfg)


@pytest.mark.node
@pytest.mark.parametrize("question", ["outsider-minted", "outsider-web-identity", "outsider-kit-role"])
def test_an_outsider_assuming_a_replication_role_is_denied_by_the_rcp(
    question: str, answers: dict[str, explain.Explanation]
) -> None:
    e = answers[question]
    assert e.decision == explain.EXPLICIT and e.exit_code == 1
    assert e.deciding == explain.StatementRef("RCP", RCP, RCP_SID)
    assert [d.layer for d in e.denies] == ["RCP"]  # no SCP binds a caller outside the organization
    assert not any(x.layer == "SCP" for x in e.layers)


@pytest.mark.node
def test_a_minted_role_is_evaluated_with_a_trust_that_names_the_caller(answers: dict[str, explain.Explanation]) -> None:
    e = answers["outsider-minted"]
    assert [x.document for x in e.layers if x.position == "resource"] == ["assumed:trust-names-the-caller"]
    assert any("trust policy is assumed to name the caller" in a for a in e.assumptions)
    kit = answers["outsider-kit-role"]
    assert [x.document for x in kit.layers if x.position == "resource"] == ["replication-role-trust--source-sales-euw1"]


@pytest.mark.node
def test_the_replication_service_assumes_its_role(answers: dict[str, explain.Explanation]) -> None:
    e = answers["service-kit-role"]
    assert e.decision == explain.ALLOWED, e.to_json()
    assert e.allows == (
        explain.StatementRef(
            "trust policy", "replication-role-trust--source-sales-euw1", "AllowS3TablesReplicationService"
        ),
    )
    assert any(x.document == RCP for x in e.layers)  # evaluated, and it lets the service through


@pytest.mark.node
def test_without_the_rcp_the_outsider_assumes_the_minted_role(cfg: KitConfig) -> None:
    """The mutation: an organization without the kit's policies (no RCP) lets the outsider in."""
    bare = cfg.model_copy(update={"protection": cfg.protection.model_copy(update={"organization": None})})
    answers = ask(bare)
    assert answers["outsider-minted"].decision == explain.ALLOWED
    assert not any(d.layer == "RCP" for e in answers.values() for d in e.denies)


def test_a_role_resource_is_checked_and_the_sts_catalogue_is_closed(capsys: pytest.CaptureFixture[str]) -> None:
    argv: list[Any] = ["--config", str(CONFIG), "--principal", OUTSIDER]
    assert explain.main([*argv, "--action", "sts:AssumeRole", "--resource", "arn:aws:iam::1:role/x"]) == 2
    assert "arn:aws:iam::<account>:role/<name>" in capsys.readouterr().err
    assert explain.main([*argv, "--action", "sts:GetCallerIdentity", "--resource", MINTED]) == 2
    assert "not in the kit's action catalogue" in capsys.readouterr().err
