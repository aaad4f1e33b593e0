"""What the validator says to a person writing `kit.toml`: no false problems, a hint where TOML bit them, every
problem in one round, and a warning (not a refusal) when the alarms would reach nobody. Pure: no synth, no AWS."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import ConfigError, parse_config

ROOT = Path(__file__).resolve().parents[1]
SEED = (ROOT / "examples/seed.toml").read_text(encoding="utf-8")


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(tomllib.loads(text), "<kit.toml>")
    return [str(i) for i in info.value.issues]


def _seed(**replace: str) -> str:
    text = SEED
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def test_a_mistake_inside_the_only_replica_does_not_claim_there_are_no_replicas() -> None:
    """Guards: any mistake inside the only `[[replicas]]` entry added `replicas: needs at least 1 item(s), got 0`."""
    problems = _problems(_seed(**{'bucket = "demo-dest-tablebucket"': 'bucket = "demo_dest"'}))
    assert [p.split(":")[0] for p in problems] == ["replicas[0].bucket"], problems
    doc = tomllib.loads(SEED) | {"replicas": []}  # an empty list is still too short
    with pytest.raises(ConfigError, match=r"replicas: needs at least 1 item\(s\), got 0"):
        parse_config(doc)


def test_an_unquoted_account_id_gets_a_quoting_hint() -> None:
    """Guards: `account_id = 111122223333` (unquoted) answered `Input should be a valid string`, with no hint."""
    problems = _problems(_seed(**{'account_id = "111122223333"\nregion = "us-east-1"': "account_id = 111122223333\n"
                                  'region = "us-east-1"'}))  # fmt: skip
    assert problems == ['source.account_id: account ids are 12-digit strings: quote them in TOML: "111122223333"']
    # A leading zero lost by the unquoted number is given back in the hint.
    zero = _problems(_seed(**{'management_account_id = "999988887777"': "management_account_id = 12345678901"}))
    assert zero == [
        "protection.organization.management_account_id: account ids are 12-digit strings: quote them in TOML: "
        '"012345678901"'
    ]


def test_every_problem_of_a_name_comes_at_once() -> None:
    """Guards: `Demo Source` was refused for its upper case, and only after that fix for its space."""
    (problem,) = _problems(_seed(**{'bucket = "demo-source-tablebucket"': 'bucket = "Demo Source"'}))
    assert problem.startswith("source.bucket: table bucket name 'Demo Source' must be lower case")
    assert "may contain only lowercase letters, digits and hyphens" in problem
    (table,) = _problems(_seed(**{'name = "orders"': 'name = "Ord ers"'}))
    assert "must be lower case" in table and "may contain only lowercase letters, digits and underscores" in table


def test_field_and_cross_field_problems_come_in_one_round() -> None:
    """Guards: schema errors came first and the cross-field ones only after they were fixed (two rounds)."""
    problems = _problems(
        _seed(**{
            'account_id = "111122223333"\nregion = "us-east-1"': 'account_id = 111122223333\nregion = "us-east-1"',
            'replica = "demo-dest-tablebucket"': 'replica = "demo-vault"',
        })
    )  # fmt: skip
    fields = [p.split(":")[0] for p in problems]
    assert fields == ["source.account_id", "recovery.replica"], problems
    # A repair that is only a reading aid never invents a problem: the upper-case bucket is still the recovery replica.
    upper = _problems(_seed(**{'bucket = "demo-dest-tablebucket"': 'bucket = "Demo-Dest-Tablebucket"'}))
    assert [p.split(":")[0] for p in upper] == ["replicas[0].bucket"], upper
    # A field error without an obvious repair: the field errors alone, as before.
    only = _problems(
        _seed(**{'region = "us-west-2"': 'region = "mars-1"', 'replica = "demo-dest-tablebucket"': 'replica = "x"'})
    )
    assert [p.split(":")[0] for p in only] == ["replicas[0].region"], only


def _without_subscriptions() -> dict[str, Any]:
    doc = tomllib.loads(SEED)
    doc["assurance"].pop("alarm_subscriptions")
    return doc


def test_empty_alarm_subscriptions_warn_but_do_not_refuse(tmp_path: Path) -> None:
    """Guards: with `alarm_subscriptions` empty the alarms reached nobody and neither validation nor `make summary`
    said a word."""
    from s3tables_kit.topology.config import config_warnings

    assert config_warnings(parse_config(tomllib.loads(SEED))) == []
    (warning,) = config_warnings(parse_config(_without_subscriptions()))
    assert str(warning).startswith("assurance.alarm_subscriptions: empty: the kit's alarms")
    # The entry point of `make synth`/`make summary`/`cdktf deploy` prints it and goes on.
    cfg = tmp_path / "kit.toml"
    cfg.write_text(SEED.replace('alarm_subscriptions = [{ protocol = "email", endpoint = "oncall@example.com" }]', ""))
    code = "import sys; from s3tables_kit.infra.env import read_env_config; sys.exit(0 if read_env_config() else 2)"
    env = {"KIT_CONFIG": str(cfg), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and f"warning: {cfg}: assurance.alarm_subscriptions: empty" in out.stderr
    table = (ROOT / "docs/provisioning.md").read_text(encoding="utf-8")
    for key in (
        "`[assurance]`",
        "`[assurance.monitor]`",
        "`timeout_seconds`",
        "`concurrency`",
        "`[assurance.rehearsal]`",
    ):
        assert key in table, key
