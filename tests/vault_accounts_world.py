"""The estate example with adopted lakes feeding its vault: each adopted account (namespaces not named after it, as
S3 Tables cannot rename one) replicates into a bucket of its own in the vault's account and Region
(`feeding_account`), beside the estate's fan-in vault whose namespaces follow the convention."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from s3tables_kit.topology.config import KitConfig, parse_config

ROOT = Path(__file__).resolve().parent.parent
VAULT_ACCOUNT, VAULT_REGION = "666666666666", "eu-central-1"


def adopted_account(n: int) -> str:
    return f"77777777{n:04d}"


def account_bucket(account: str) -> str:
    return f"vault-{account}-{VAULT_REGION}"


def estate_data() -> dict[str, Any]:
    return tomllib.loads((ROOT / "examples" / "estate.toml").read_text(encoding="utf-8"))


def with_adopted(data: dict[str, Any], accounts: int, *, second_source: tuple[int, ...] = ()) -> dict[str, Any]:
    """`data` (the estate) with `accounts` adopted lakes, each a source bucket whose namespace is `sales` (the same
    name in every account: the buckets keep them apart) feeding its account's bucket of the vault; the accounts of
    `second_source` also have a second bucket (namespace `web`) feeding it, so that bucket's roles go by pattern."""
    out = copy.deepcopy(data)
    org = out["protection"]["organization"]
    for n in range(accounts):
        acct = adopted_account(n)
        for k, namespace in enumerate(("sales", "web")[: 2 if n in second_source else 1]):
            out["sources"].append(
                {
                    "id": f"adopted{n:02d}" + (f"-{k + 1}" if k else ""),
                    "account_id": acct,
                    "region": "eu-west-1",
                    "bucket": f"lake-{acct}" + (f"-{k + 1}" if k else ""),
                    "adopt": True,
                    "encryption": {"type": "sse-s3"},
                    "snapshot_retention": {"max_snapshot_age_hours": 168, "min_snapshots_to_keep": 5},
                    "replicate_to": [account_bucket(acct)],
                    "replication": {"mode": "bucket"},
                    "namespaces": [{"name": namespace}],
                }
            )
        out["replicas"].append(
            {
                "account_id": VAULT_ACCOUNT,
                "region": VAULT_REGION,
                "bucket": account_bucket(acct),
                "feeding_account": acct,
                "encryption": {"type": "kms", "kms_key": "create"},
                "snapshot_retention": {"max_snapshot_age_hours": 4320, "min_snapshots_to_keep": 10},
            }
        )
        org["ou_accounts"]["ou-ab12-workloads"].append(acct)
    return out


def shared_vault(accounts: int = 1, *, second_source: tuple[int, ...] = (), backups: bool = False) -> KitConfig:
    """`backups`: with a backup vault (`[vault]`, decision 0034) of what the vault's buckets hold, `sales.*`."""
    data = with_adopted(estate_data(), accounts, second_source=second_source)
    if backups:
        data["vault"] = {"account_id": VAULT_ACCOUNT, "region": VAULT_REGION, "retention_days": 365,
                         "tables": ["sales.*"]}  # fmt: skip
    return parse_config(data, f"<estate with {accounts} adopted lake(s)>")
