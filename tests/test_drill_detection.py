"""The detection drill's core (`harness/drills/detection.py`, `make drill-detection`) on a small world: the seed's
drill topology (two tables, bucket-level replication) deployed into the stand-in through the public APIs, judged by
the seed's reviewed stacks (tests/golden/seed: the alarms and the functions' environments as synthesized). Every
technique is caught within two runs with a quiet baseline; the same runs judged with one alarm fewer report a miss."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.process import Emulator
from harness.deploy import deploy, single_account
from harness.drills import detection
from harness.drills.alarms import alarm_rules
from harness.drills.seed import SEED, drill_doc, write_config
from s3tables_kit.topology.config import load_config

GOLDEN = Path(__file__).resolve().parent / "golden" / "seed"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[detection.Drill, detection.Runs, list[str]]]:
    out = tmp_path_factory.mktemp("detection")
    cfg = load_config(write_config(drill_doc(SEED), out / "kit.toml"))
    stacks = {p.stem: json.loads(p.read_text()) for p in GOLDEN.glob("*.json")}
    said: list[str] = []
    with Emulator(log=out / "emulator.log", env={"MOTO_ACCOUNT_ID": single_account(cfg)}) as emu:
        world = detection.World(emu.url, cfg, deploy(cfg, emu), stacks)
        saved = dict(os.environ)
        os.environ.update(world.env())
        try:
            d, runs = detection.drill(world, said.append)
            yield d, runs, said
        finally:
            os.environ.clear()
            os.environ.update(saved)


def test_every_technique_is_caught_within_two_runs_and_the_baseline_is_quiet(
    ran: tuple[detection.Drill, detection.Runs, list[str]],
) -> None:
    d, runs, said = ran
    noisy, outcomes = detection.judge(d, runs, d.rules)
    assert noisy == []
    got = {o.technique.key: (o.verdict, o.caught) for o in outcomes}
    assert {k: v for k, (v, _) in got.items()} == dict.fromkeys(("g", "c", "d", "e", "f", "a", "b", "b'"), "CAUGHT")
    assert got["a"][1]["seed-replication-status-unreadable"] == 1  # the blinded run's own datum
    assert got["a"][1]["seed-replication-monitor-failing"] == 2  # AWS/Lambda Errors in two runs
    assert got["a"][1]["seed-freshness-replica-stale-demo-dest-tablebucket"] == 2  # the replica account's check
    assert got["b'"][1]["seed-replication-monitor-not-reporting"] == 2
    forged = next(o for o in outcomes if o.technique.key == "b'")
    assert not forged.decoy_fired  # the forged heartbeat held the former heartbeat alarm OK: the forgery took
    assert got["g"][1] == {"deployed-application-changed": 1, "application-not-as-deployed": 1}
    assert got["c"][1] == {"snapshot-time-untrusted": 1}  # audit, on the replica the commit reached
    assert got["d"][1] == {"snapshot-time-untrusted": 1, "as-of-refused": 1}  # and the rehearsal's --as-of plan
    assert got["e"][1] == got["f"][1] == {"point-refused": 1}  # skipped and reported; the listing did not fail
    assert detection.verdict(d, runs) == 0
    assert "drill-detection: every technique caught" in said[-1]
    assert all(r.period == 300 for r in d.rules) and "seed-recovery-rehearsal-not-succeeding" in said[0]


def test_the_drill_fails_when_one_alarm_is_removed(ran: tuple[detection.Drill, detection.Runs, list[str]]) -> None:
    d, runs, said = ran
    minus = [r for r in d.rules if r.name != "seed-replication-monitor-not-reporting"]
    assert len(minus) == len(d.rules) - 1
    assert detection.verdict(d, runs, minus) == 1
    table = said[-2]
    assert "b' the monitor stopped too" in table and "NOT fired: seed-replication-monitor-not-reporting" in table
    _, outcomes = detection.judge(d, runs, [r for r in minus if "stale" not in r.name])
    assert next(o for o in outcomes if o.technique.key == "b'").verdict == "MISSED"  # nothing else catches it
    assert [r.name for r in alarm_rules({"x": {"provider": {"aws": [{"region": "r"}]}}})] == []
