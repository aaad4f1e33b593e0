"""Detached replicas are seen: after `DisassociateTableReplication` on a replica (the emulator, through
the kit's own clients and the botocore overlay), `status` shows DETACHED and exits 1, the monitor's
`DetachedReplicas` metric (the alarm's metric) reaches 1, `audit` names the table and `harden` does not treat it as
a replica and says so."""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta

from s3tables_kit.jobs.ops import audit as au
from s3tables_kit.jobs.ops import harden as hd
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops import status as st
from s3tables_kit.jobs.ops.status_rows import DETACHED_MESSAGE_PREFIX, is_detached
from tests.ops_fixtures import SRC_REGION, OpsEnv, World, deploy, put_retention

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
DETACHED_TABLE = "analytics.orders"


def _detach(world: World, qualified: str = DETACHED_TABLE) -> str:
    arn = str(world.replica_table(qualified)["tableARN"])
    world.dst().disassociate_table_replication(tableArn=arn)
    return arn


def _next_replication_attempt(world: World) -> None:
    world.commit(DETACHED_TABLE, NOW - timedelta(minutes=2))
    world.env.control.replicate(source_bucket_arn=world.source_arn, at=NOW - timedelta(minutes=1))


def _rows(report: st.StatusReport, table: str) -> list[st.DestinationStatus]:
    return [r for r in report.rows if r.table == table]


def test_is_detached() -> None:
    assert is_detached("The destination table has been detached from replication.", None)
    assert is_detached(None, False)  # listed without managedByService
    assert not is_detached("Access denied when writing to the destination table bucket", True)
    assert not is_detached(None, None)  # absent from the listing (not replicated yet) or the listing unknown
    assert not is_detached(None, True)


def test_status_sees_a_detachment_before_the_next_replication_attempt(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env)
    last = world.src().get_table_replication_status(tableArn=world.tables[DETACHED_TABLE])["destinations"][0]
    replica_arn = _detach(world)

    report = st.collect_status(world.clients, [world.source_arn], max_lag=timedelta(minutes=30), show_progress=False)
    [row] = _rows(report, DETACHED_TABLE)
    assert row.status == st.DETACHED and row.problem
    assert row.destination_table_arn == replica_arn
    assert row.last_replicated_at == last["lastSuccessfulReplicatedUpdate"]["timestamp"].astimezone(dt.UTC).isoformat()
    assert row.failure_message == st.DETACHED_NOTE
    assert {r.status for r in report.rows if r.table != DETACHED_TABLE} == {st.COMPLETED}
    assert report.exit_code == 1

    # the CLI (`make status`): exit 1, DETACHED in the text and in --json
    out = world.write_outputs(tmp_path)
    cli = ["--outputs", str(out), "--endpoint-url", world.env.endpoint, "--quiet"]
    assert st.main(cli) == 1
    text = capsys.readouterr().out
    assert "DETACHED" in text and DETACHED_TABLE in text and "stopped for good" in text
    assert st.main([*cli, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["detached"] == 1 and doc["counts"]["detached"] == 1 and doc["exit_code"] == 1
    [d] = [r for r in doc["destinations"] if r["status"] == "detached"]
    assert d["table"] == DETACHED_TABLE and d["destination_table_arn"] == replica_arn and d["last_replicated_at"]


def test_status_sees_the_sources_failure_message_without_listing_destinations(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    _detach(world)
    # before the next attempt, without listing the destination, nothing tells: the source still says COMPLETED
    quiet = st.collect_status(world.clients, [world.source_arn], show_progress=False, list_destinations=False)
    assert _rows(quiet, DETACHED_TABLE)[0].status == st.COMPLETED
    _next_replication_attempt(world)
    report = st.collect_status(world.clients, [world.source_arn], show_progress=False, list_destinations=False)
    [row] = _rows(report, DETACHED_TABLE)
    assert row.status == st.DETACHED
    assert (row.failure_message or "").startswith(DETACHED_MESSAGE_PREFIX)
    assert row.last_replicated_at is not None and report.exit_code == 1


def test_replicas_marked_with_another_value_are_not_taken_for_detached(ops_env: OpsEnv) -> None:
    """If the replication service's `managedByService` is not the value the kit assumes (U9, the stand-in's switch),
    a replica is still no detached table: detachment is the value's absence, not a mismatch."""
    world = deploy(ops_env)
    ops_env.control.call("live/switch", {"name": "managed-by-service", "on": True})
    try:
        report = st.collect_status(world.clients, [world.source_arn], show_progress=False)
    finally:
        ops_env.control.call("live/switch", {"name": "managed-by-service", "on": False})
    assert {r.status for r in report.rows} == {st.COMPLETED} and not report.detached


def test_an_ordinary_failure_stays_failed(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    ops_env.control.set_status(
        world.tables[DETACHED_TABLE], world.replica_arn, "failed", failure_message="Access denied (KMS key policy)"
    )
    report = st.collect_status(world.clients, [world.source_arn], show_progress=False)
    assert _rows(report, DETACHED_TABLE)[0].status == st.FAILED and not report.detached


def test_monitor_publishes_detached_replicas_for_the_alarm(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    settings = world.monitor_settings(max_lag=timedelta(minutes=30))

    around = timedelta(seconds=30)

    def peak(when: dt.datetime, **dims: str) -> float | None:
        return max(world.metric_maxima(mon.DETACHED_METRIC, when - around, when + around, **dims), default=None)

    mon.run_monitor(world.clients, settings, region=SRC_REGION, now=NOW)
    assert peak(NOW, Kit="seed", Destination=world.replica_arn) == 0

    _detach(world)
    _next_replication_attempt(world)
    later = NOW + timedelta(minutes=5)
    result = mon.run_monitor(world.clients, settings, region=SRC_REGION, now=later)
    assert result.counts.get(st.DETACHED) == 1
    # the alarm: DetachedReplicas (Kit, Destination), Maximum >= 1
    assert peak(later, Kit="seed", Destination=world.replica_arn) == 1
    assert peak(later, Kit="seed", Destination=world.replica_arn, Table=DETACHED_TABLE) == 1
    # not a transient failure: the FAILED alarm's metric stays 0
    dest = {"Kit": "seed", "Destination": world.replica_arn}
    assert world.metric_maxima(mon.FAILED_METRIC, later - around, later + around, **dest) == [0]


def test_audit_names_the_detached_table(ops_env: OpsEnv, tmp_path, capsys) -> None:
    world = deploy(ops_env, harden_now=True)
    clean = au.audit(world.clients, world.cfg, world.outputs, show_progress=False)
    assert not [d for d in clean.drifts if d.kind in ("replica-detached", "replica-missing")]
    replica_arn = _detach(world)

    report = au.audit(world.clients, world.cfg, world.outputs, show_progress=False)
    [d] = [d for d in report.drifts if d.kind == "replica-detached"]
    assert DETACHED_TABLE in d.resource and replica_arn in d.resource
    assert world.tables[DETACHED_TABLE] in d.detail
    assert not [x for x in report.drifts if x.kind == "replica-missing"]  # reported once, as what it is
    assert report.exit_code == 1

    code = au.main(world.tool_args(tmp_path, "--quiet"))
    assert code == 1 and "replica-detached" in capsys.readouterr().out


def test_harden_never_treats_a_detached_table_as_a_replica(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, harden_now=True)
    _detach(world)
    dst = world.dst()
    # someone rewrites its retention now that it is writable: harden must not "restore" it as a replica's
    put_retention(dst, world.replica_arn, "orders", 24, min_snapshots=None)
    report = hd.harden(world.clients, world.outputs, show_progress=False)
    [r] = [r for r in report.results if r.table == DETACHED_TABLE]
    assert r.outcome == "detached" and not r.changes and r.source_table_arn is None
    assert "DETACHED" in (r.reason or "") and "not a replica" in (r.reason or "")
    assert report.to_json()["counts"]["detached"] == 1
    assert "1 detached" in hd.render(report) and "DETACHED" in hd.render(report)
    got = dst.get_table_maintenance_configuration(
        tableBucketARN=world.replica_arn, namespace="analytics", name="orders"
    )
    assert (
        got["configuration"]["icebergSnapshotManagement"]["settings"]["icebergSnapshotManagement"][
            "maxSnapshotAgeHours"
        ]
        == 24
    )  # untouched
    # the report lists only tables that are not unchanged (harden streams its output): every other replica is counted
    assert [x.table for x in report.results] == [DETACHED_TABLE]
    counts = report.to_json()["counts"]
    assert counts["unchanged"] >= 1 and counts["hardened"] == counts["would-change"] == counts["failed"] == 0


def test_unlistable_destination_is_a_warning(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    _detach(world)
    ops_env.control.inject_faults(
        "ListTables", 100, code="AccessDeniedException", status=403, match=world.replica_arn.split("/")[-1]
    )
    report = st.collect_status(ops_env.clients(max_attempts=1), [world.source_arn], show_progress=False)
    assert any("cannot list its tables" in w for w in report.warnings)
    assert _rows(report, DETACHED_TABLE)[0].status == st.COMPLETED  # unknown until the source reports it
