"""The front half of `make e2e-adopt` on the session's stand-in, without Terraform: the brownfield world written by
pyiceberg (harness/e2e/brownfield.py), discovered as its operator, and the proposal completed into a configuration
that loads with both buckets adopted. The Terraform half is `make e2e-adopt` itself."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.e2e import brownfield as world
from harness.e2e.stackio import client
from harness.e2e.standins import Credentials
from s3tables_kit.jobs.ops import discover
from s3tables_kit.topology.config import load_config
from tests.ops_fixtures import OpsEnv, ops_env  # noqa: F401


class _Endpoint:
    def __init__(self, url: str) -> None:
        self.url = url


def test_the_brownfield_lake_is_discovered_as_built_and_its_proposal_completes(
    ops_env: OpsEnv,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")  # pyiceberg's writes to the emulator
    keys = ops_env.control.seed_accounts([world.ACCOUNT, world.PARTNER])
    creds = {a: Credentials(k["accessKeyId"], k["secretAccessKey"]) for a, k in keys.items()}
    emu: Any = _Endpoint(ops_env.endpoint)

    built = world.build(lambda account, service, region: client(emu, creds[account], service, region), emu.url)

    assert sorted(built.snapshots) == sorted(f"{b}/{ns}.{t}" for b, ns, t, _ in world.TABLES)
    assert all(len(ids) == len(world.COMMITS) == len(set(ids)) for ids in built.snapshots.values())
    assert built.partner_bucket_arn.split(":")[4] == world.PARTNER
    out = tmp_path / "discover-out"
    operator = f"arn:aws:iam::{world.ACCOUNT}:role/operator"
    args = world.discover_args(out, ops_env.endpoint, operator)
    assert args[:2] == ["-m", "s3tables_kit.jobs.ops.discover"]
    assert discover.main(args[2:]) == 0
    assert world.found_in(json.loads((out / "discover.json").read_text())) == []

    cfg = load_config(world.complete(out))

    assert sorted((s.bucket, s.adopt) for s in cfg.sources) == [(world.MARKETING, True), (world.SALES, True)]
    assert sorted(r.bucket for r in cfg.replicas) == [f"{world.MARKETING}-us-west-2", f"{world.SALES}-us-west-2"]
    assert (cfg.recovery_replica.bucket, cfg.recovery.bucket) == (f"{world.SALES}-us-west-2", f"{world.SALES}-recovery")
    kept = {r.bucket: r.snapshot_retention.min_snapshots_to_keep for r in cfg.replicas}
    assert kept == {f"{world.MARKETING}-us-west-2": 1, f"{world.SALES}-us-west-2": 3}  # as its maintained table
    with pytest.raises(ValueError, match="not discovery's proposal"):
        world.complete(out)  # completed once: a second completion is refused
    assert "AWS_ENDPOINT_URL" not in os.environ
