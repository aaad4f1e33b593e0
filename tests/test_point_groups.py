"""Replication point groups as configuration (`[assurance] replication_point_groups`): validated with the topology,
exported through the outputs contract, reported by `status` (the command line's `--group` overriding by name)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.ops import status as st
from s3tables_kit.topology import paths
from s3tables_kit.topology.config import ConfigError, parse_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.outputs import parse_outputs, point_groups_output
from tests.ops_fixtures import OpsEnv, config_dict, deploy

NOW = datetime.now(UTC)
SALES = {"name": "sales", "tables": ["analytics.orders", "analytics.customers"]}


def _cfg(groups: list[dict[str, Any]], mode: str = "tables") -> Any:
    doc = copy.deepcopy(config_dict(mode))
    if mode == "tables":
        doc["replication"]["tables"] = ["analytics.orders", "analytics.customers"]
    doc["assurance"] = {"replication_point_groups": groups}
    return parse_config(doc)


def _issues(groups: list[dict[str, Any]], mode: str = "tables") -> list[str]:
    with pytest.raises(ConfigError) as err:
        _cfg(groups, mode)
    return [str(i) for i in err.value.issues]


# ---------------------------------------------------------------- config ----


def test_compliant_groups_and_their_outputs() -> None:
    cfg = _cfg([SALES, {"name": "all-analytics", "tables": ["analytics.*"]}])
    assert cfg.assurance.point_groups == {
        "sales": ("analytics.orders", "analytics.customers"),
        "all-analytics": ("analytics.*",),
    }
    outputs = parse_outputs(outputs_doc(cfg))
    assert outputs.replication_point_groups == cfg.assurance.point_groups
    # none configured: the key is absent from the output (and so from the synthesized stacks)
    plain = parse_config(config_dict())
    assert point_groups_output(plain) == {} and "replication_point_groups" not in json.dumps(outputs_doc(plain))
    assert parse_outputs(outputs_doc(plain)).replication_point_groups == {}


def test_bucket_mode_accepts_undeclared_tables_by_pattern() -> None:
    """A source replicating its whole bucket replicates tables it does not declare: any well-formed pattern."""
    cfg = _cfg([{"name": "later", "tables": ["marketing.*", "finance.ledger"]}], mode="bucket")
    assert cfg.assurance.point_groups == {"later": ("marketing.*", "finance.ledger")}


@pytest.mark.parametrize(
    ("groups", "field", "words"),
    [
        ([{"name": "x", "tables": ["nope.*"]}], "replication_point_groups[0].tables[0]", "unknown namespace 'nope'"),
        ([{"name": "x", "tables": ["analytics.nope"]}], "replication_point_groups[0].tables[0]", "unknown table"),
        ([{"name": "x", "tables": ["analytics.events"]}], "replication_point_groups[0].tables[0]", "not replicated"),
        ([{"name": "x", "tables": []}], "replication_point_groups[0].tables", "at least 1"),
        ([{"name": "x", "tables": ["analytics"]}], "replication_point_groups[0].tables", "'namespace.*'"),
        ([{"name": "x", "tables": ["analytics.ord*"]}], "replication_point_groups[0].tables", "'namespace.table'"),
        ([{"name": "x", "tables": ["Analytics.orders"]}], "replication_point_groups[0].tables", "lower case"),
        ([{"name": "x", "tables": ["analytics.orders"] * 2}], "replication_point_groups[0].tables", "more than once"),
        ([SALES, {**SALES, "tables": ["analytics.*"]}], "replication_point_groups", "['sales'] appear more than once"),
        ([{"name": "*", "tables": ["analytics.*"]}], "replication_point_groups[0].name", "group name '*'"),
        ([{"name": "a b", "tables": ["analytics.*"]}], "replication_point_groups[0].name", "letters, digits"),
        ([{"name": "x", "tables": ["analytics.*"], "alarm": 1}], "replication_point_groups[0].alarm", "unknown key"),
    ],
)
def test_invalid_groups_name_the_field_and_the_rule(groups: list[dict[str, Any]], field: str, words: str) -> None:
    issues = _issues(groups)
    assert any(i.startswith(f"assurance.{field}") and words in i for i in issues), issues


# ---------------------------------------------------------------- status ----


def test_status_reports_the_configured_groups_and_the_command_line_overrides_by_name(
    ops_env: OpsEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`analytics.events` lacks the commit of 2 h ago: the whole bucket's point is held back by it; the configured
    group `sales` (orders, customers) is complete; `events` (configured) is held back; a `--group events=...` of the
    same name replaces the configured one, and the configured `sales` stays."""
    now = datetime.now(UTC)  # the handler reads the clock itself: not the module's NOW, minutes old in a long run
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.events", now - timedelta(hours=6))
    world.hold_back("analytics.events", now)
    doc = copy.deepcopy(world.cfg_doc)
    doc["assurance"] = {"replication_point_groups": [SALES, {"name": "events", "tables": ["analytics.events"]}]}
    world.outputs_doc["source"]["kit_source"] |= point_groups_output(parse_config(doc))
    out = world.write_outputs(tmp_path)
    base = ["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--quiet"]

    def points(*extra: str) -> dict[str, dict[str, Any]]:
        assert st.main([*base, "--json", "--no-windows", *extra]) == 0
        rows = json.loads(capsys.readouterr().out)["replication_points"]
        return {p["group"]: p for p in rows if p["destination_bucket_arn"] == world.replica_arn}

    got = points()
    assert set(got) == {"*", "sales", "events"}
    assert got["*"]["held_back_by"] == "analytics.events" and got["events"]["held_back_by"] == "analytics.events"
    assert got["sales"]["tables"] == 2 and got["sales"]["held_back_by"] is None
    got = points("--group", "events=analytics.orders")
    assert set(got) == {"*", "sales", "events"} and got["events"]["held_back_by"] is None
    assert got["events"]["tables"] == 1
    assert st.main([*base, "--no-windows"]) == 0
    assert "[group sales, 2 tables]" in capsys.readouterr().out


# ---------------------------------------------------------------- monitor ----


def test_the_monitor_publishes_the_point_of_each_group_its_package_declares(
    ops_env: OpsEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lambda entry point reads the groups from the package's `kit_declared.json` (not the environment, capped at
    4 KB) and publishes `ReplicationPointAgeSeconds` per group (+ `Group`) beside the whole bucket's."""
    from s3tables_kit.jobs.ops import monitor as mon
    from s3tables_kit.jobs.ops.monitor_drift import Declared, declared_from_outputs
    from s3tables_kit.topology.contract import POINT_AGE
    from tests.test_assurance_monitor import KIT, _max, _series

    now = datetime.now(UTC)  # the handler reads the clock itself: not the module's NOW, minutes old in a long run
    world = deploy(ops_env, replicate=False)
    world.commit("analytics.events", now - timedelta(hours=6))
    world.hold_back("analytics.events", now)
    doc = copy.deepcopy(world.cfg_doc)
    groups = [SALES, {"name": "events", "tables": ["analytics.events"]}, {"name": "gone", "tables": ["other.*"]}]
    doc["assurance"] = {"replication_point_groups": groups}
    cfg = parse_config(doc)  # bucket mode: `other.*` (no such namespace yet) is accepted
    declared = Declared(declared_from_outputs(world.outputs.sources[0]).replication, {}, cfg.assurance.point_groups)
    (tmp_path / mon.DECLARED_FILE).write_text(json.dumps(declared.to_json()), encoding="utf-8")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    for key, value in {
        "AWS_ENDPOINT_URL": ops_env.endpoint,
        "AWS_REGION": world.outputs.sources[0].region,
        mon.ENV_KIT: KIT,
        mon.ENV_SOURCES: world.source_arn,
        mon.ENV_DESTINATIONS: world.replica_arn,
    }.items():
        monkeypatch.setenv(key, value)
    summary = mon.handler({}, None)
    assert summary["heartbeat"] and summary["drift"]["replication_configuration"] == []
    dest = {"Kit": KIT, "Destination": world.replica_arn}
    whole = _max(world, POINT_AGE, **dest)  # held back by analytics.events (the handler reads the clock itself)
    assert whole == pytest.approx(7200, abs=120) and _max(world, POINT_AGE, **dest, Group="events") == whole
    assert _max(world, POINT_AGE, **dest, Group="sales") == 0  # orders and customers are complete
    groups_published = {dict(d).get("Group") for m, d in _series(world) if m == POINT_AGE}
    assert groups_published == {None, "sales", "events"}  # a group without a table in the bucket: no series


# ---------------------------------------------------------------- recover / failover ----


def test_recover_and_failover_take_a_configured_groups_point_and_default_to_the_whole_bucket(
    ops_env: OpsEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--group NAME --as-of replication-point`: the group's tables and its point (the request and the plan only, no
    Spark); without `--group` the point of the selection, and the failover's of the whole bucket, held back by the
    lagging table."""
    from s3tables_kit.jobs.failover.cli import main as failover
    from s3tables_kit.jobs.kernel.idents import ArgError
    from s3tables_kit.jobs.kernel.snapshots import iso_ms
    from s3tables_kit.jobs.recover.cli import parser, request_from_args

    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")  # the recovery takes the environment's credentials
    world = deploy(ops_env, replicate=False)
    lacking = world.hold_back("analytics.events", NOW)
    doc = copy.deepcopy(world.cfg_doc)
    doc["assurance"] = {"replication_point_groups": [SALES, {"name": "everything", "tables": ["analytics.*"]}]}
    world.outputs_doc["source"]["kit_source"] |= point_groups_output(parse_config(doc))
    outputs = str(world.write_outputs(tmp_path))
    argv = ["--outputs", outputs, "--endpoint-url", ops_env.endpoint, "--dry-run", "--as-of", "replication-point"]
    lacking_ms = int(lacking.timestamp() * 1000)

    # without --group, the selection's point (a recovery names its tables): every table, held back by events
    whole = request_from_args(parser().parse_args([*argv, "--namespace", "analytics"])).selector.as_of_ms
    assert whole is not None and 0 < lacking_ms - whole <= 2
    sales = request_from_args(parser().parse_args([*argv, "--group", "sales"]))
    assert [str(t) for t in sales.tables] == SALES["tables"] and sales.namespaces == []
    assert sales.selector.as_of_ms is not None and sales.selector.as_of_ms >= int(NOW.timestamp() * 1000)
    everything = request_from_args(parser().parse_args([*argv, "--group", "everything"]))
    assert everything.namespaces == ["analytics"] and everything.selector.as_of_ms == whole
    with pytest.raises(ArgError, match=r"--group nope: no such replication point group \(groups: everything, sales\)"):
        request_from_args(parser().parse_args([*argv, "--group", "nope"]))
    capsys.readouterr()

    bucket = world.replica_arn.rsplit("/", 1)[-1]
    args = ["--outputs", outputs, "--endpoint-url", ops_env.endpoint, "--quiet", "--json", "--dry-run"]
    args += ["--replica-bucket", bucket, "--as-of", "replication-point"]
    for extra in (["--group", "everything"], []):  # the group of every table; the whole bucket by default
        assert failover([*args, *extra]) == 2  # the plan (refused at the end: not break-glass)
        assert json.loads(capsys.readouterr().out)["selector"] == f"as of {iso_ms(whole)}"
    assert failover([*args, "--group", "sales"]) == 2
    plan = json.loads(capsys.readouterr().out)
    assert plan["selector"] != f"as of {iso_ms(whole)}" and {t["table"] for t in plan["tables"]} == set(SALES["tables"])
    assert failover([*args, "--group", "nope"]) == 2 and "no such replication point group" in capsys.readouterr().err
