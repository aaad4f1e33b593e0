"""`[vault]` in the typed configuration: optional (a configuration without it builds the same documents), every
invalid input names the field and the rule, and the outputs contract carries what the backup job reads."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies.docset import build
from s3tables_kit.topology.backup import backup_role_arn
from s3tables_kit.topology.config import ConfigError, parse_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.outputs import OUTPUT_VAULT, parse_outputs, vault_value

ROOT = Path(__file__).resolve().parents[1]
SEED = tomllib.loads((ROOT / "examples/seed.toml").read_text())
VAULT = {"account_id": "111122223333", "region": "us-west-2", "retention_days": 365, "storage_class": "GLACIER_IR"}
KEY = "arn:aws:kms:us-west-2:111122223333:key/0b5d3e6a-2f4c-4e8b-9a7d-3c1e5f2a4b6d"


def with_vault(vault: dict[str, Any] | None) -> dict[str, Any]:
    doc = copy.deepcopy(SEED)
    doc.pop("vault", None)
    if vault is not None:
        doc["vault"] = vault
    return doc


def test_a_vault_is_typed_with_its_defaults_and_derived_names() -> None:
    cfg = parse_config(with_vault(VAULT))
    v = cfg.vault
    assert v is not None
    assert (v.retention_days, v.storage_class, v.kms_key, v.creates_key) == (365, "GLACIER_IR", "create", True)
    assert v.bucket_name("seed") == "seed-backup-vault-111122223333-us-west-2"
    assert v.bucket_arn("seed") == "arn:aws:s3:::seed-backup-vault-111122223333-us-west-2"
    assert v.transition_days == 0
    # the backup role runs in the Spark application's account: the recovery replica's
    assert backup_role_arn(cfg) == "arn:aws:iam::111122223333:role/seed-s3tables-backup"
    assert parse_config(with_vault({**VAULT, "storage_class": "STANDARD_IA"})).vault.transition_days == 30  # type: ignore[union-attr]
    assert parse_config(with_vault({**VAULT, "storage_class": "STANDARD"})).vault.transition_days is None  # type: ignore[union-attr]


def test_without_a_vault_nothing_changes() -> None:
    plain = parse_config(with_vault(None))
    assert plain.vault is None
    names = build(plain).names()
    assert not [n for n in names if "vault" in n or "backup" in n]
    guards = build(plain).document("scp-protect-replica-guards")
    assert not [s for s in guards["Statement"] if "Vault" in s["Sid"]]
    assert "vault" not in outputs_doc(plain)


@pytest.mark.parametrize(
    ("vault", "field", "words"),
    [
        ({**VAULT, "retention_days": 0}, "vault.retention_days", "greater than or equal to 1"),
        ({**VAULT, "retention_days": 36501}, "vault.retention_days", "less than or equal to 36500"),
        # the replica keeps 90 days (2,160 hours): a vault forgetting sooner protects no older history
        ({**VAULT, "retention_days": 89}, "vault.retention_days", "shorter than the longest replica snapshot"),
        ({**VAULT, "storage_class": "GLACIER"}, "vault.storage_class", "'GLACIER_IR'"),
        ({**VAULT, "storage_class": "ONEZONE_IA"}, "vault.storage_class", "'STANDARD_IA'"),
        ({**VAULT, "kms_key": "alias/vault"}, "vault.kms_key", 'must be "create" or a KMS key ARN'),
        ({**VAULT, "kms_key": KEY.replace("us-west-2", "us-east-1")}, "vault.kms_key", "vault's account and Region"),
        # a key of one's own: its policy is not the kit's, so nothing proves it cannot be disabled or deleted
        ({**VAULT, "kms_key": KEY}, "vault.kms_key", 'must be "create"'),
        ({**VAULT, "account_id": 111122223333}, "vault.account_id", "quote them in TOML"),
        ({**VAULT, "region": "us-west-9"}, "vault.region", "unknown AWS Region"),
        ({**VAULT, "bucket": "Vault_Bucket"}, "vault.bucket", "lower case letters, digits and hyphens"),
        ({**VAULT, "bucket": "my-vault-s3alias"}, "vault.bucket", "must not end with"),
        ({**VAULT, "deploy_role_arn": "terraform"}, "vault.deploy_role_arn", "must be an IAM role ARN"),
        ({**VAULT, "retention": 30}, "vault.retention", "unknown key"),
        ({**VAULT, "max_backup_age_hours": 24}, "vault.max_backup_age_hours", "more than interval_hours (24)"),
        ({**VAULT, "interval_hours": 169}, "vault.interval_hours", "less than or equal to 168"),
        ({k: v for k, v in VAULT.items() if k != "retention_days"}, "vault.retention_days", "required field"),
        ({**VAULT, "account_id": "999988887777"}, "vault.account_id", "management account"),
        ({**VAULT, "account_id": "444455556666"}, "protection.organization.targets", "(the vault) is not covered"),
    ],
)
def test_bad_vault_input_names_the_field_and_the_rule(vault: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(with_vault(vault))
    found = [str(i) for i in err.value.issues if i.field == field]
    assert found, f"no issue on {field}: {err.value}"
    assert any(words in f for f in found), found


def test_the_backup_role_is_never_break_glass() -> None:
    doc = with_vault(VAULT)
    doc["protection"]["break_glass_principals"] = ["arn:aws:iam::111122223333:role/seed-s3tables-backup"]
    with pytest.raises(ConfigError, match="the backup role cannot be a break-glass principal"):
        parse_config(doc)


def test_the_outputs_contract_carries_the_vault() -> None:
    cfg = parse_config(with_vault(VAULT))
    doc = outputs_doc(cfg)  # what the stand-in's deployer writes, as `cdktf output` after a deploy
    key = doc["vault"][OUTPUT_VAULT]["kms_key_arn"]  # the created key's, as the stand-in's deployer reports it
    points = doc["vault"][OUTPUT_VAULT]["point_key_arn"]  # the point key the vault stack creates (its id: apply's)
    assert points.startswith("arn:aws:kms:us-west-2:111122223333:key/") and points != key
    assert doc["vault"] == {
        OUTPUT_VAULT: vault_value(cfg, bucket_arn=cfg.vault.bucket_arn("seed"), kms_key_arn=key, point_key_arn=points)  # type: ignore[union-attr]
    }
    out = parse_outputs(doc)
    assert out.vault is not None
    assert out.vault.bucket_name == "seed-backup-vault-111122223333-us-west-2"
    assert (out.vault.kms_key_arn, out.vault.retention_days, out.vault.storage_class) == (key, 365, "GLACIER_IR")
    assert out.vault.backup_role_arn == backup_role_arn(cfg)
    assert parse_outputs(outputs_doc(parse_config(with_vault(None)))).vault is None  # no vault stack, no vault
