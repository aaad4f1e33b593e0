"""The live-verify run's Terraform teardown deploys as break-glass: each reviewed stack's providers (aws, its untagged
alias, awscc) assume the break-glass principal the configuration names in the stack's account, and a stack of an
account with none keeps its deploy role. Read on the multi-account example's reviewed stacks (`tests/golden/`),
whose providers come in both shapes Terraform takes (a list of blocks, awscc's single object)."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

from harness.live_standin import as_break_glass

ROOT = Path(__file__).resolve().parents[1]


def _roles(doc: dict) -> list[str]:
    out = []
    for blocks in doc["provider"].values():
        for block in blocks if isinstance(blocks, list) else [blocks]:
            roles = block["assume_role"]
            out += [r["role_arn"] for r in (roles if isinstance(roles, list) else [roles])]
    return out


def test_every_provider_assumes_its_accounts_break_glass_or_keeps_its_deploy_role() -> None:
    glass_arns = tomllib.loads((ROOT / "examples" / "multi-account.toml").read_text())["protection"][
        "break_glass_principals"
    ]
    glass = {arn.split(":")[4]: arn for arn in glass_arns}
    seen = set()
    for path in sorted((ROOT / "tests" / "golden" / "multi-account").glob("*.json")):
        doc = json.loads(path.read_text())
        before = _roles(doc)
        after = _roles(as_break_glass(copy.deepcopy(doc), glass))
        assert len(after) == len(before) >= 1, path.name
        for old, new in zip(before, after, strict=True):
            account = old.split(":")[4]
            assert new == glass.get(account, old), (path.name, old, new)
            seen.add(new == old)
    assert seen == {True, False}  # the source's account names no break-glass: its stack keeps the deploy role
