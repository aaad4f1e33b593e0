"""The front half of `make e2e-adopt ARGS="--world one"` on the session's stand-in, without Terraform: the one-account
lake (harness/e2e/brownfield_one.py: two buckets in us-east-1, one replicating at bucket level into a bucket of
us-west-2 that holds its replicas, the other KMS-encrypted with a table fed by PutRows) discovered as its operator, and
the proposal completed into a configuration that loads: the destination adopted as a replica of its source, never a
source, its replication taken over. Then the adoption gate on a plan that keeps the destination and on the variant that
drops it."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.e2e import brownfield_one as world
from harness.e2e.stackio import client
from harness.e2e.standins import Credentials
from s3tables_kit.infra.adoptgate import AdoptionIntent, gate
from s3tables_kit.jobs.ops import discover
from s3tables_kit.topology.config import load_config
from tests.ops_fixtures import OpsEnv, ops_env  # noqa: F401


class _Endpoint:
    def __init__(self, url: str) -> None:
        self.url = url


def _replication_import(before: list[str], after: list[str]) -> dict[str, Any]:
    """The saved plan's change of the source's imported bucket-level configuration (as the pinned provider's
    `show -json` writes it, with the version token a provider carrying the fix reads at the import)."""

    def rule(dests: list[str]) -> list[dict[str, Any]]:
        return [{"destination": [{"destination_table_bucket_arn": d} for d in dests]}]

    return {
        "address": "aws_s3tables_table_bucket_replication.replication_bucket_1A2B3C4D",
        "mode": "managed",
        "type": "aws_s3tables_table_bucket_replication",
        "name": "replication_bucket_1A2B3C4D",
        "change": {
            "actions": ["update"],
            "before": {
                "table_bucket_arn": world.arn(world.ORDERS),
                "role": world.OWNERS_ROLE,
                "rule": rule(before),
                "version_token": "token-1",
            },
            "after": {
                "table_bucket_arn": world.arn(world.ORDERS),
                "role": "arn:aws:iam::111122223333:role/kit",
                "rule": rule(after),
            },
            "after_unknown": {},
            "importing": {"id": world.arn(world.ORDERS)},
        },
    }


def test_the_one_account_lake_is_discovered_as_it_is_and_the_gate_refuses_a_dropped_destination(
    ops_env: OpsEnv,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")  # pyiceberg's writes to the emulator
    keys = ops_env.control.seed_accounts([world.ACCOUNT])
    creds = {a: Credentials(k["accessKeyId"], k["secretAccessKey"]) for a, k in keys.items()}
    emu: Any = _Endpoint(ops_env.endpoint)

    built = world.build(
        lambda account, service, region: client(emu, creds[account], service, region),
        emu.url,
        lambda source: ops_env.control.replicate(source_bucket_arn=source),
        ops_env.control.putrows,
    )

    assert (
        built.streamed_rows == 3 and len(built.snapshots[f"{world.FINANCE}/ledger.payments"]) == 1
    )  # the service's commit
    assert len(built.replicated) == 1  # orders.daily's replica in the existing destination
    out = tmp_path / "discover-out"
    args = world.discover_args(out, ops_env.endpoint, f"arn:aws:iam::{world.ACCOUNT}:role/operator")
    assert discover.main(args[2:]) == 0
    report = json.loads((out / "discover.json").read_text())
    assert world.found_in(report) == []
    text = (out / "report.txt").read_text()
    assert f"## {world.DR_ARN} (replica of {world.arn(world.ORDERS)})" in text
    assert "table ledger.payments: fed through a PutRows channel" in text

    cfg = load_config(world.complete(out))

    assert sorted(s.bucket for s in cfg.sources) == sorted(world.SOURCES)  # the replica is never a source
    orders = next(s for s in cfg.sources if s.bucket == world.ORDERS)
    assert orders.existing_destinations == (world.DR_ARN,) and orders.replicate_to == (world.ORDERS_DR,)
    dr = next(r for r in cfg.replicas if r.bucket == world.ORDERS_DR)
    assert dr.adopt and dr.region == world.DR_REGION
    assert [r.bucket for r in cfg.replicas if not r.adopt] == [f"{world.FINANCE}-us-west-2"]
    assert next(s for s in cfg.sources if s.bucket == world.FINANCE).encryption.type == "kms"
    with pytest.raises(ValueError, match="not discovery's proposal"):
        world.complete(out)

    intent = AdoptionIntent.of(cfg)
    kept = {"format_version": "1.2", "resource_changes": [_replication_import([world.DR_ARN], [world.DR_ARN])]}
    taken_over = gate(kept, intent, "source-orders")
    assert taken_over.passed and [n.kind for n in taken_over.notes] == ["import"]
    tokenless = copy.deepcopy(kept)  # as the pinned provider imports it: the role changes, the token is not read
    del tokenless["resource_changes"][0]["change"]["before"]["version_token"]
    assert [r.attributes for r in gate(tokenless, intent, "source-orders").refused] == [("version_token",)]
    dropped = gate(world.without_destination(kept, world.DR_ARN), intent, "source-orders")
    assert not dropped.passed
    assert [r.rule for r in dropped.refused] == ["overwrite"]
    assert f"drops existing destination(s) {world.DR_ARN}" in dropped.refused[0].why
    assert "AWS_ENDPOINT_URL" not in os.environ
