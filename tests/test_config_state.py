"""`[state]` in the typed configuration: team state in S3 with locking and encryption that cannot be
turned off; every invalid input names the field and the rule."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
SEED = tomllib.loads((ROOT / "examples/seed.toml").read_text())
S3 = {"backend": "s3", "bucket": "team-tf-state", "region": "eu-west-1"}
KEY = "arn:aws:kms:eu-west-1:111122223333:key/0b5d3e6a-2f4c-4e8b-9a7d-3c1e5f2a4b6d"


def with_state(state: dict[str, Any] | None) -> dict[str, Any]:
    doc = copy.deepcopy(SEED)
    if state is not None:
        doc["state"] = state
    return doc


def test_local_is_the_default_and_s3_keys_are_one_per_stack() -> None:
    seed = load_config(ROOT / "examples/seed.toml")
    assert seed.state.backend == "local"
    cfg = parse_config(with_state(S3))
    assert cfg.state.use_lockfile and cfg.state.encrypt
    assert cfg.state_key("source") == "seed/source.tfstate"
    cfg = parse_config(with_state({**S3, "key_prefix": "platform/seed", "kms_key_arn": KEY}))
    assert cfg.state_key("replica-x") == "platform/seed/replica-x.tfstate"
    multi = load_config(ROOT / "examples/multi-account.toml")
    assert multi.state.backend == "s3" and multi.state.kms_key_arn


@pytest.mark.parametrize(
    ("state", "field", "words"),
    [
        ({"backend": "s3"}, "state.bucket", 'required with backend = "s3"'),
        ({"backend": "s3", "bucket": "b-b-b"}, "state.region", 'required with backend = "s3"'),
        ({**S3, "use_lockfile": False}, "state.use_lockfile", "locking cannot be turned off"),
        ({**S3, "encrypt": False}, "state.encrypt", "encryption cannot be turned off"),
        ({**S3, "bucket": "Team_State"}, "state.bucket", "not an S3 bucket name"),
        ({**S3, "key_prefix": "/abs/"}, "state.key_prefix", "without a leading or trailing '/'"),
        ({**S3, "region": "eu-west-9"}, "state.region", "unknown AWS Region"),
        ({**S3, "kms_key_arn": "alias/state"}, "state.kms_key_arn", "must be a KMS key ARN"),
        # found by `make validate`: Terraform's S3 backend rejects a key id that is not a real UUID
        (
            {**S3, "kms_key_arn": "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
            "state.kms_key_arn",
            "Terraform's S3 backend rejects",
        ),
        ({**S3, "kms_key_arn": KEY.replace("eu-west-1", "us-east-1")}, "state.kms_key_arn", "Region (eu-west-1)"),
        ({"backend": "local", "bucket": "team-tf-state"}, "state.bucket", 'only valid with backend = "s3"'),
        ({"backend": "gcs"}, "state.backend", "'local' or 's3'"),
        ({**S3, "dynamodb_table": "locks"}, "state.dynamodb_table", "unknown key"),
    ],
)
def test_invalid_state_is_rejected_naming_the_field_and_rule(state: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(with_state(state))
    assert any(i.field == field and words in i.rule for i in err.value.issues), err.value


# ---------------------------------------------------------------- tags (`[tags]`) ----


def test_configured_tags_join_the_kit_tags() -> None:
    cfg = parse_config({**copy.deepcopy(SEED), "tags": {"team": "data", "cost-center": "cc-12"}})
    assert cfg.resource_tags == {
        "cost-center": "cc-12", "kit": "seed", "managed-by": "s3tables-replica-kit", "team": "data",
    }  # fmt: skip
    assert load_config(ROOT / "examples/seed.toml").resource_tags == {
        "kit": "seed",
        "managed-by": "s3tables-replica-kit",
    }


@pytest.mark.parametrize(
    ("tags", "words"),
    [
        ({"kit": "other"}, "set by the kit itself"),
        ({"aws:owner": "me"}, "must not start with 'aws:'"),
        ({"bad#key": "x"}, "tag key 'bad#key'"),
        ({"k" * 129: "x"}, "1-128"),
        ({"team": "v" * 257}, "0-256"),
        ({f"t{i}": "x" for i in range(49)}, "at most 48 tags"),
    ],
)
def test_invalid_tags_are_rejected(tags: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({**copy.deepcopy(SEED), "tags": tags})
    assert any(i.field == "tags" and words in i.rule for i in err.value.issues), err.value
