"""`explain` (policies/explain.py) on the seed example: the decision, the deciding layer and Sid, the break-glass path.

The Sids expected here are read from the reviewed documents under policies/rendered/seed/ (not from `explain`'s own
code path), by the statement of each document that names the action, so a wrong attribution fails. Every request
is evaluated in one batch of the npm simulator (one node start); the command line is run once more, for its exit
code and its output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import break_glass_runbook, explain
from s3tables_kit.topology.config import KitConfig, load_config
from tests.test_docs import anchors

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "seed.toml"
RENDERED = ROOT / "policies" / "rendered" / "seed"

ACCOUNT = "111122223333"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/Administrator"
BREAK_GLASS = f"arn:aws:iam::{ACCOUNT}:role/s3tables-break-glass"
REPLICATION = f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-replication"
RECOVERY = f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-recovery"
REPLICA_TABLE = f"arn:aws:s3tables:us-west-2:{ACCOUNT}:bucket/demo-dest-tablebucket/table/6f1b2c3d-4e5f-4a6b-9c8d-1122"
RECOVERY_TABLE = f"arn:aws:s3tables:us-west-2:{ACCOUNT}:bucket/demo-recovery-tablebucket/table/0a1b2c3d-aabb"

SCP = "scp-protect-replicas"
BUCKET_POLICY = "replica-bucket-policy--demo-dest-tablebucket"
TABLE_POLICY = "replica-table-policy--demo-dest-tablebucket"


def rendered_sid(document: str, action: str, effect: str) -> str:
    """The Sid of the one statement of a reviewed document with that effect that names the action in its `Action`
    (an allow-list `NotAction` statement names what it leaves alone, not what it decides)."""
    doc = json.loads((RENDERED / f"{document}.json").read_text(encoding="utf-8"))
    sids = [
        s["Sid"]
        for s in doc["Statement"]
        if s["Effect"] == effect and action in ([a] if isinstance(a := s.get("Action", []), str) else a)
    ]
    assert len(sids) == 1, (document, action, sids)
    return sids[0]


@pytest.fixture(scope="module")
def cfg() -> KitConfig:
    return load_config(CONFIG)


QUESTIONS = {
    "admin-delete": (ADMIN, "s3tables:DeleteTable", REPLICA_TABLE),
    "replication-write": (REPLICATION, "s3tables:PutTableData", REPLICA_TABLE),
    "recovery-write": (RECOVERY, "s3tables:PutTableData", RECOVERY_TABLE),
    "recovery-writes-replica": (RECOVERY, "s3tables:PutTableData", REPLICA_TABLE),
    "break-glass-delete": (BREAK_GLASS, "s3tables:DeleteTable", REPLICA_TABLE),
    "recovery-bucket-policy": (RECOVERY, "s3tables:PutTableBucketPolicy", RECOVERY_TABLE.split("/table/")[0]),
}


@pytest.fixture(scope="module")
def answers(cfg: KitConfig) -> dict[str, explain.Explanation]:
    questions = [explain.Question(explain.parse_request(p, a, r, [])) for p, a, r in QUESTIONS.values()]
    return dict(zip(QUESTIONS, explain.explain_all(cfg, questions), strict=True))


@pytest.mark.node
def test_a_protected_action_is_denied_by_the_scp_first_and_names_the_break_glass_path(
    answers: dict[str, explain.Explanation],
) -> None:
    e = answers["admin-delete"]
    assert e.decision == explain.EXPLICIT and e.exit_code == 1
    sid = rendered_sid(SCP, "s3tables:DeleteTable", "Deny")
    assert e.deciding == explain.StatementRef("SCP", SCP, sid)
    assert [(d.document, d.sid) for d in e.denies] == [
        (SCP, sid),
        (BUCKET_POLICY, rendered_sid(BUCKET_POLICY, "s3tables:DeleteTable", "Deny")),
        (TABLE_POLICY, rendered_sid(TABLE_POLICY, "s3tables:DeleteTable", "Deny")),
    ]
    assert e.break_glass is not None
    assert e.break_glass.rules == ("DenyReplicaDeletion",)
    assert e.break_glass.principals == ((BREAK_GLASS, True),)
    text = explain.render(e)
    assert f"decided by: SCP {SCP}, statement {sid}" in text
    assert f"{BREAK_GLASS}: allowed by the same documents" in text
    assert "docs/policy-review.md#protection-rules" in text


@pytest.mark.node
def test_an_allowed_action_names_the_allowing_statement(answers: dict[str, explain.Explanation]) -> None:
    e = answers["replication-write"]
    assert e.decision == explain.ALLOWED and e.exit_code == 0 and e.denies == ()
    assert e.allows == (
        explain.StatementRef(
            "identity policy",
            "replication-role-permissions",
            rendered_sid("replication-role-permissions", "s3tables:PutTableData", "Allow"),
        ),
    )
    assert e.break_glass is not None  # a replica data write: the rule names who else may
    assert e.break_glass.also_exempt == (
        f"replication role {REPLICATION}",
        "service maintenance.s3tables.amazonaws.com",
    )
    recovery = answers["recovery-write"]
    assert recovery.decision == explain.ALLOWED
    sid = rendered_sid("recovery-role-permissions", "s3tables:PutTableData", "Allow")
    assert recovery.deciding == explain.StatementRef("identity policy", "recovery-role-permissions", sid)
    assert recovery.break_glass is None  # the recovery bucket is writable, not protected
    assert "the kit puts no resource policy on the recovery bucket" in recovery.assumptions


@pytest.mark.node
def test_the_recovery_role_is_denied_a_replica_write_by_every_layer_its_own_policy_included(
    answers: dict[str, explain.Explanation],
) -> None:
    e = answers["recovery-writes-replica"]
    assert e.decision == explain.EXPLICIT
    assert [d.document for d in e.denies] == [SCP, "recovery-role-permissions", BUCKET_POLICY, TABLE_POLICY]
    assert e.denies[1].sid == rendered_sid("recovery-role-permissions", "s3tables:PutTableData", "Deny")


@pytest.mark.node
def test_the_same_protected_action_by_break_glass_is_allowed(answers: dict[str, explain.Explanation]) -> None:
    e = answers["break-glass-delete"]
    assert e.decision == explain.ALLOWED and e.denies == ()
    assert e.allows == (explain.StatementRef("identity (assumed)", explain.ASSUMED_GRANT, "AssumedIdentityGrant"),)


@pytest.mark.node
def test_an_implicit_deny_names_the_layer_without_an_allow(answers: dict[str, explain.Explanation]) -> None:
    e = answers["recovery-bucket-policy"]
    assert e.decision == explain.IMPLICIT and e.exit_code == 1 and e.denies == ()
    assert e.missing_allow == ("identity",)


@pytest.mark.node
def test_the_command_exits_1_on_a_denial_and_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--config", str(CONFIG), "--principal", ADMIN, "--action", "s3tables:DeleteTable"]
    assert explain.main([*argv, "--resource", REPLICA_TABLE, "--json"]) == 1
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert out["decision"] == explain.EXPLICIT and out["exit_code"] == 1
    sid = rendered_sid(SCP, "s3tables:DeleteTable", "Deny")
    assert out["deciding"] == {"layer": "SCP", "document": SCP, "sid": sid}
    assert out["break_glass"]["principals"] == [{"principal": BREAK_GLASS, "allowed": True}]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--action", "s3tables:DeleteEverything", "--resource", REPLICA_TABLE], "not in the kit's action catalogue"),
        (["--action", "s3:DeleteObject", "--resource", REPLICA_TABLE], "expected s3tables:<Action>"),
        (["--action", "s3tables:DeleteTable", "--resource", "arn:aws:s3tables:us-west-2:1:bucket/x"], "--resource"),
        (["--action", "s3tables:DeleteTable", "--resource", REPLICA_TABLE.split("/table/")[0]], "on a table"),
        (["--action", "s3tables:DeleteTableBucket", "--resource", REPLICA_TABLE], "on a table bucket"),
        (["--principal", "Administrator", "--action", "s3tables:GetTable", "--resource", REPLICA_TABLE], "--principal"),
        (["--action", "s3tables:GetTable", "--resource", REPLICA_TABLE, "--context", "novalue"], "key=value"),
    ],
)
def test_bad_input_is_refused_with_exit_2_and_one_line(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    principal = [] if "--principal" in args else ["--principal", ADMIN]
    assert explain.main(["--config", str(CONFIG), *principal, *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err, err


def test_a_missing_configuration_is_refused_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--config", "no/such/kit.toml", "--principal", ADMIN, "--action", "s3tables:GetTable"]
    assert explain.main([*argv, "--resource", REPLICA_TABLE]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_an_assumed_role_session_is_evaluated_as_its_role() -> None:
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/Administrator/alice"
    assert explain.parse_request(session, "s3tables:GetTable", REPLICA_TABLE, []).principal == ADMIN


def test_every_runbook_section_the_break_glass_path_cites_exists() -> None:
    for section, _ in break_glass_runbook.RUNBOOK.values():
        page, _, anchor = section.partition("#")
        assert anchor in anchors((ROOT / page).read_text(encoding="utf-8")), section


def test_every_protection_rule_has_a_break_glass_path() -> None:
    from s3tables_kit.policies import actions as iam_actions

    risks = {r.sid.removeprefix("DenyReplica") for r in (*iam_actions.PROTECTION_RULES, *iam_actions.promoted_rules())}
    assert risks - set(break_glass_runbook.RUNBOOK) == set()


def test_without_node_the_command_is_refused_with_one_line_naming_the_setup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "")
    argv = ["--config", str(CONFIG), "--principal", ADMIN, "--action", "s3tables:DeleteTable"]
    assert explain.main([*argv, "--resource", REPLICA_TABLE]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make setup" in err[0], err
