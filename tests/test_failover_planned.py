"""Planned failover (`s3tables-kit failover --planned`): the pure catch-up rules, then the run against the S3 Tables
emulator over real HTTP with real Iceberg tables (`tests/failover_world.py`). The emulator evaluates the freeze's
Deny on the source's commit path (`emulator.resource_policy`, enforced on the source bucket here). A kill is an
exception no step of the tool catches, raised at a named point (`s3tables_kit.jobs.kernel.killpoints.PLANNED_FAILOVER`):
what SIGKILL leaves behind (the freeze in place, the journal, a half-done promotion)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from s3tables_kit.jobs.failover import aws, planned
from s3tables_kit.jobs.failover import planned_model as PM
from s3tables_kit.jobs.failover.planned_lease import lease_key
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.killpoints import PLANNED_FAILOVER
from s3tables_kit.jobs.kernel.leases import Holder
from s3tables_kit.policies.actions import FREEZE_SID
from tests.failover_world import FailoverWorld, batch, build
from tests.ops_fixtures import DST_BUCKET, OpsEnv

# The source's own bucket policy before the run, in a form no JSON library writes: put back byte for byte.
ORIGINAL = (
    '{"Version":"2012-10-17","Statement":[ {"Sid":"AllowAuditRead","Effect":"Allow",'
    '"Principal":{"AWS":"arn:aws:iam::123456789012:role/auditor"},"Action":"s3tables:GetTable",'
    '"Resource":"arn:aws:s3tables:us-east-1:123456789012:bucket/demo-source-tablebucket/table/*"}]}'
)


class Killed(BaseException):
    """SIGKILL at a point: nothing of the tool runs after it (no `except Exception`, no lift)."""


# ----------------------------------------------------------------------------------------------------
# Pure
# ----------------------------------------------------------------------------------------------------


def test_caught_up_needs_the_same_snapshot_and_the_source_s_last_update() -> None:
    src = PM.Head(7, 2_000)
    assert PM.CatchUp("a.t", src, PM.Head(7, 2_000)).caught_up
    assert not PM.CatchUp("a.t", src, PM.Head(6, 1_000)).caught_up  # a commit lacking
    assert not PM.CatchUp("a.t", src, PM.Head(7, 1_500)).caught_up  # a metadata-only update lacking
    assert PM.CatchUp("a.t", src, PM.Head(7, 9_000), detached=True).caught_up  # its lineage commit moved it on
    assert not PM.CatchUp("a.t", src, PM.Head(7, 2_000), error="503").caught_up
    behind = [PM.CatchUp("a.x", src, PM.Head(6, 1_500)), PM.CatchUp("a.y", src, PM.Head(5, 500))]
    assert [s.table for s in PM.slowest([*behind, PM.CatchUp("a.z", src, src)])] == ["a.y", "a.x"]
    assert "caught up 1/3" in PM.progress_line([*behind, PM.CatchUp("a.z", src, src)], 1.0)


def test_lineage_replicated_from_an_upstream_promotion_is_not_the_table_s_own() -> None:
    from s3tables_kit.jobs.failover import model as failover_model

    mine = {
        failover_model.LINEAGE.snapshot_id: "7",
        failover_model.PROP_TABLE_ARN: "arn:t/back",
        failover_model.LINEAGE.source_table_arn: "arn:t/src",
    }
    assert failover_model.own_lineage(mine, "arn:t/back", None)
    assert not failover_model.own_lineage(mine, "arn:t/failback-replica", None)  # the failback's replica carries it
    legacy = {failover_model.LINEAGE.snapshot_id: "7", failover_model.LINEAGE.source_table_arn: "arn:t/src"}
    assert failover_model.own_lineage(legacy, "arn:t/x", None) and failover_model.own_lineage(
        legacy, "arn:t/x", "arn:t/src"
    )
    assert not failover_model.own_lineage(legacy, "arn:t/x", "arn:t/promoted")  # still a replica of the promoted table
    assert not failover_model.own_lineage({}, "arn:t/x", None)


# ----------------------------------------------------------------------------------------------------
# Against the emulator
# ----------------------------------------------------------------------------------------------------


@pytest.fixture
def fw(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> FailoverWorld:
    world = build(ops_env, monkeypatch)
    world.world.src().put_table_bucket_policy(tableBucketARN=world.world.source_arn, resourcePolicy=ORIGINAL)
    ops_env.control.enforce_policies([world.world.source_arn])
    return world


@pytest.fixture
def bg(fw: FailoverWorld) -> Clients:
    """Break-glass clients, one set per test: creating botocore clients costs more than a run on the emulator."""
    return fw.clients()


def _source_policy(fw: FailoverWorld) -> str:
    return str(fw.world.src().get_table_bucket_policy(tableBucketARN=fw.world.source_arn)["resourcePolicy"])


def _run(
    fw: FailoverWorld,
    bg: Clients,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    hook: Callable[[str, str], None] | None = None,
    timeout: float = 30.0,
    **options: float,
) -> planned.PlannedResult:
    monkeypatch.setattr(PLANNED_FAILOVER, "hook", hook)
    req = aws.Request(
        replica_bucket=DST_BUCKET, confirm=DST_BUCKET, report_dir=tmp_path, show_progress=False, concurrency=1
    )
    docs = aws.documents_from_config(fw.world.cfg, DST_BUCKET)
    freeze = planned.freeze_from_config(fw.world.cfg, fw.world.source_arn)
    opts = planned.Options(timeout_s=timeout, poll_s=0.02, settle_s=0.0, **options)
    try:
        return planned.run(bg, req, fw.world.outputs, docs, freeze, opts)
    finally:
        monkeypatch.setattr(PLANNED_FAILOVER, "hook", None)


def _replicate_after_freeze(fw: FailoverWorld, seen: dict[str, Any]) -> Callable[[str, str], None]:
    """The replication service catches up once writers are frozen; a writer tries to commit meanwhile."""

    def hook(point: str, _: str) -> None:
        if point != "after-freeze":
            return
        assert FREEZE_SID in _source_policy(fw)
        try:
            fw.append("analytics.customers", range(100, 101), "eu")
            seen["write"] = "accepted"
        except ClientError as exc:
            seen["write"] = exc.response["Error"]["Code"]
        fw.env.control.replicate(source_bucket_arn=fw.world.source_arn)

    return hook


def _current(committer: Any, qualified: str) -> int | None:
    return committer.load(Ident.parse(qualified)).metadata.current_snapshot_id  # type: ignore[no-any-return]


def test_planned_failover_freezes_waits_promotes_and_proves_rpo_zero(
    fw: FailoverWorld, bg: Clients, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    result = _run(fw, bg, tmp_path, monkeypatch, _replicate_after_freeze(fw, seen))
    rep = result.report
    assert rep is not None and result.exit_code == 0, rep and rep.render()
    assert seen["write"] == "AccessDeniedException"  # the writer's commit during the freeze was refused
    assert rep.outcome == "promoted" and rep.rpo_zero
    src, dst = fw.source_committer(), fw.replica_committer()
    for t in rep.tables:
        assert t.source_snapshot_id == t.promoted_snapshot_id == _current(src, t.table) == _current(dst, t.table)
        assert not fw.world.replica_table(t.table).get("managedTableInformation")
    assert _current(src, "analytics.orders") == fw.snapshots["analytics.orders"][-1]  # the unreplicated commit too
    assert rep.write_outage_seconds is not None and rep.write_outage_seconds > 0
    assert rep.writable_after_caught_up_seconds is not None and rep.rto_seconds
    assert _source_policy(fw) == ORIGINAL  # put back byte for byte
    assert not list(tmp_path.glob(".planned-freeze-*"))
    doc = json.loads(result.report_path.with_suffix(".json").read_text())  # type: ignore[union-attr]
    assert doc["rpo_zero"] and doc["write_outage_seconds"] > 0
    # after the run, writers write the promoted side
    before = _current(dst, "analytics.orders")
    dst.load(Ident.parse("analytics.orders")).append(batch(range(200, 202), "us"))
    assert _current(dst, "analytics.orders") != before


def test_a_table_that_never_catches_up_times_out_lifts_the_freeze_and_promotes_nothing(
    fw: FailoverWorld, bg: Clients, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    req = aws.Request(replica_bucket=DST_BUCKET, confirm=DST_BUCKET, report_dir=tmp_path, show_progress=False)
    docs = aws.documents_from_config(fw.world.cfg, DST_BUCKET)
    freeze = planned.freeze_from_config(fw.world.cfg, fw.world.source_arn)
    refused = planned.run(fw.clients(break_glass=False), req, fw.world.outputs, docs, freeze)
    assert refused.exit_code == 2 and _source_policy(fw) == ORIGINAL  # not break-glass: nothing changes
    result = _run(fw, bg, tmp_path, monkeypatch, None, timeout=0.2)  # nobody replicates orders' last commit
    rep = result.report
    assert result.exit_code == 1 and rep is not None
    assert rep.outcome.startswith("timed out") and rep.behind == ["analytics.orders"]
    assert "analytics.orders" in rep.render() and "nothing was promoted" in rep.render()
    for t in ("analytics.orders", "analytics.customers"):
        assert fw.world.replica_table(t).get("managedTableInformation")  # still replicas
    assert _source_policy(fw) == ORIGINAL
    fw.append("analytics.orders", range(300, 301), "eu")  # writers are back on the source


def _leases(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "planned-failover").glob("*.kit-lease.json"))


def _lose_holder(tmp_path: Path) -> None:
    """What SIGKILL leaves of the run's leases: held by a process that no longer exists (a real, finished one)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    for path in _leases(tmp_path):
        path.write_text(json.dumps({**json.loads(path.read_text()), "pid": gone.pid}))


@pytest.fixture
def throttled(fw: FailoverWorld, monkeypatch: pytest.MonkeyPatch) -> FailoverWorld:
    """One request in five of every S3 Tables operation and of S3 GetObject throttled (seeded). botocore's own
    retries answer them as on AWS; only its throttling backoff's scale (1 s) is shortened so that the test stays
    cheap: the retry decisions, attempts and quota are botocore's."""
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    fw.env.control.throttle("*", 0.2, seed=33, service="s3tables")
    fw.env.control.throttle("GetObject", 0.2, seed=34, service="s3")
    return fw


KILL_POINTS = list(PLANNED_FAILOVER.points)


def test_killed_at_every_step_each_rerun_continues_and_the_last_converges_and_lifts_the_freeze(
    throttled: FailoverWorld, bg: Clients, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Run k is killed at the k-th point (in the order a run reaches them) and run k+1 continues it, so every step
    is the last one done before a kill once; the last run converges. Every run takes over the leases the killed one
    left (its process is gone), and one request in five is throttled throughout. After the first kill, a dry run
    says writers are frozen and `--unfreeze` lifts the freeze (nothing promoted); the next run freezes again."""
    fw = throttled
    seen: dict[str, Any] = {}
    replicate = _replicate_after_freeze(fw, seen)
    for i, point in enumerate(KILL_POINTS):

        def kill(at: str, what: str, point: str = point) -> None:
            replicate(at, what)
            if at == point:
                assert len(_leases(tmp_path)) == 2, at  # the source's and the promoted bucket's, held
                _lose_holder(tmp_path)
                raise Killed(at)

        with pytest.raises(Killed):
            _run(fw, bg, tmp_path, monkeypatch, kill)
        assert FREEZE_SID in _source_policy(fw), point  # what a kill leaves: writers frozen ...
        assert list(tmp_path.glob(".planned-freeze-*")), point  # ... and the journal that says what to put back
        assert len(_leases(tmp_path)) == 2, point  # ... and the leases of a process that is gone
        if i == 0:
            freeze = planned.freeze_from_config(fw.world.cfg, fw.world.source_arn)
            docs = aws.documents_from_config(fw.world.cfg, DST_BUCKET)
            req = aws.Request(replica_bucket=DST_BUCKET, report_dir=tmp_path, show_progress=False)
            capsys.readouterr()
            assert planned.run(bg, req, fw.world.outputs, docs, freeze).exit_code == 0
            assert "WRITERS ARE FROZEN NOW" in capsys.readouterr().out
            opts = planned.Options(unfreeze=True)
            assert planned.run(bg, req, fw.world.outputs, None, freeze, opts).exit_code == 0
            assert _source_policy(fw) == ORIGINAL and not list(tmp_path.glob(".planned-freeze-*"))
            assert fw.world.replica_table("analytics.orders").get("managedTableInformation")  # nothing promoted
    rerun = _run(fw, bg, tmp_path, monkeypatch, None)
    rep = rerun.report
    assert rerun.exit_code == 0 and rep is not None, rep and rep.render()
    assert rep.rpo_zero and rep.continued_from is not None
    assert _source_policy(fw) == ORIGINAL  # writers are not left frozen once the run ends
    assert {t.verdict for t in rep.tables} == {"converged"}
    assert seen["write"] == "AccessDeniedException"
    assert not _leases(tmp_path)  # released at the end
    throttles = sum(f["served"] for f in fw.env.control.stats()["faults"])
    assert throttles > 20, throttles  # the run really was throttled, often
    src, dst = fw.source_committer(), fw.replica_committer()
    for t in ("analytics.orders", "analytics.customers"):
        assert _current(src, t) == _current(dst, t)
        props = dst.load(Ident.parse(t)).metadata.properties
        assert props["kit.failover.replica-snapshot-id"] == str(_current(src, t))


def test_a_second_run_while_one_runs_is_refused_and_changes_nothing(
    fw: FailoverWorld, bg: Clients, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """While a run waits for the replicas (writers frozen), a second confirmed run, `--unfreeze` and a plan start:
    the two first are refused (exit 2) naming the running run and change nothing, the plan says a run is going on.
    A lease held on another host is respected while its heartbeat is fresh and taken over once it is stale; a run
    whose lease was taken over meanwhile stops before the promotion and leaves the freeze to the new holder."""
    seen: dict[str, Any] = {}
    replicate = _replicate_after_freeze(fw, seen)
    docs = aws.documents_from_config(fw.world.cfg, DST_BUCKET)
    freeze = planned.freeze_from_config(fw.world.cfg, fw.world.source_arn)
    req = aws.Request(replica_bucket=DST_BUCKET, confirm=DST_BUCKET, report_dir=tmp_path, show_progress=False)
    second: dict[str, Any] = {}

    def meanwhile(at: str, what: str) -> None:
        if at != "after-freeze" or second:
            return
        journal = (tmp_path / f".planned-freeze-{fw.world.source_arn.rsplit('/', 1)[1]}.json").read_text()
        second["run"] = planned.run(bg, req, fw.world.outputs, docs, freeze)
        unfreeze = planned.Options(unfreeze=True)
        second["unfreeze"] = planned.run(bg, req, fw.world.outputs, None, freeze, unfreeze).exit_code
        capsys.readouterr()
        planned.run(bg, replace(req, confirm=None), fw.world.outputs, docs, freeze)
        second["plan"] = capsys.readouterr().out
        assert FREEZE_SID in _source_policy(fw)  # the first run's freeze and journal are untouched
        assert (tmp_path / f".planned-freeze-{fw.world.source_arn.rsplit('/', 1)[1]}.json").read_text() == journal
        replicate(at, what)

    first = _run(fw, bg, tmp_path, monkeypatch, meanwhile)
    assert first.exit_code == 0 and first.report is not None and first.report.rpo_zero
    refused = second["run"]
    assert refused.exit_code == 2 and refused.report is not None
    assert refused.report.outcome.startswith("refused (another run holds the lease")
    assert f"run {first.report.run_id}" in " ".join(refused.report.messages)
    assert second["unfreeze"] == 2
    assert f"A PLANNED FAILOVER RUNS NOW: run {first.report.run_id}" in second["plan"]
    assert _source_policy(fw) == ORIGINAL and not _leases(tmp_path)

    # a run on another host: its lease is live while it heartbeats, whatever this host's processes are
    key = Path(lease_key(str(tmp_path), fw.world.source_arn))
    key.parent.mkdir(parents=True, exist_ok=True)
    other = Holder("otherhost0001", "other-host", 1, "2026-11-27T00:00:00+00:00", fw.world.source_arn, time.time(), 60)
    key.write_bytes(other.body())
    again = planned.run(bg, req, fw.world.outputs, docs, freeze)
    assert again.exit_code == 2 and "run otherhost0001 (host other-host" in " ".join(again.report.messages)  # type: ignore[union-attr]
    assert _source_policy(fw) == ORIGINAL
    key.write_bytes(replace(other, heartbeat_at=time.time() - 61).body())  # no heartbeat for its time to live

    def usurped(at: str, _: str) -> None:  # this run stalls past the time to live: the other host's run takes over
        if at == "after-freeze":
            key.write_bytes(replace(other, heartbeat_at=time.time()).body())

    stopped = _run(fw, bg, tmp_path, monkeypatch, usurped)  # the stale lease is taken over, then lost
    assert stopped.exit_code == 1 and stopped.report is not None
    assert stopped.report.outcome.endswith("lease lost") and "taken over by run otherhost0001" in " ".join(
        stopped.report.messages
    )
    assert FREEZE_SID in _source_policy(fw)  # the freeze is left to the run that holds the lease now
    key.write_bytes(replace(other, heartbeat_at=time.time() - 61).body())
    rerun = _run(fw, bg, tmp_path, monkeypatch)
    assert rerun.exit_code == 0, rerun.report and rerun.report.render()  # taken over; every table already promoted
    assert rerun.report is not None and rerun.report.continued_from == stopped.report.run_id
    assert _source_policy(fw) == ORIGINAL and not _leases(tmp_path)


# ----------------------------------------------------------------------------------------------------
# Streaming writers (PutRows): accepted rows the service commits later (`emulator.streaming`)
# ----------------------------------------------------------------------------------------------------


def _source_table_arn(fw: FailoverWorld, qualified: str) -> str:
    ident = Ident.parse(qualified)
    got = fw.world.src().get_table(tableBucketARN=fw.world.source_arn, namespace=ident.namespace, name=ident.name)
    return str(got["tableARN"])


def _put_rows(fw: FailoverWorld, qualified: str, rows: bytes) -> str:
    """A streaming writer's PutRows of two rows to a source table (accepted: the service commits them later)."""
    arn = _source_table_arn(fw, qualified)
    assert fw.world.src().put_rows(tableArn=arn, payloadFormat="JSON", payload=rows)["acceptedRows"] == 2
    return arn


def _ids(committer: Any, qualified: str) -> set[int]:
    """The table's rows as any Iceberg reader sees them: its current metadata file read alone, its data scanned."""
    from pyiceberg.table import StaticTable

    location = committer.load(Ident.parse(qualified)).metadata_location
    table = StaticTable.from_metadata(location, properties=committer.io_props)
    return set(table.scan().to_arrow()["id"].to_pylist())


def test_a_putrows_table_fails_over_only_once_its_channel_drained_with_every_accepted_row(
    fw: FailoverWorld, bg: Clients, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service commits accepted rows during the freeze (`emulator.streaming`, flushed by the hook).
    1. If the freeze's Deny also stops that commit (unverified: the stand-in's switch), the channel keeps the rows: the
       run refuses in one line (exit 2), promotes nothing and lifts the freeze; the service's next attempt commits.
    2. The channel reads 0 while it still holds the rows (AWS warns it can): only the commit interval the drain waits
       after reading 0 brings them into the promoted replica (without the drain the promotion runs at once)."""
    import threading

    from s3tables_kit.jobs.kernel import channels

    seen: dict[str, Any] = {}
    replicate = _replicate_after_freeze(fw, seen)

    def hook(point: str, what: str) -> None:
        replicate(point, what)
        if point == "after-freeze":  # the service's own commit, half a second into the freeze
            threading.Timer(0.5, lambda: fw.env.control.putrows(flush=True)).start()

    fw.env.control.putrows(commitDelayS=60, replicate=True)
    fw.env.control.call("live/switch", {"name": "putrows-commit-denied", "on": True})
    assert channels.read(fw.world.src(), _source_table_arn(fw, "analytics.orders")) is None  # never streamed to
    arn = _put_rows(fw, "analytics.customers", b'{"id": 900, "region": "eu"}\n{"id": 901, "region": "us"}\n')
    refused = _run(fw, bg, tmp_path, monkeypatch, hook, drain_timeout_s=1.0)
    rep = refused.report
    assert rep is not None and refused.exit_code == 2 and rep.outcome.startswith("refused"), rep and rep.render()
    (line,) = [m for m in rep.messages if "streaming" in m]
    assert "analytics.customers: ~2 buffered row(s), channel failing (AccessDenied" in line and "\n" not in line
    assert fw.world.replica_table("analytics.customers").get("managedTableInformation")  # nothing promoted
    assert _source_policy(fw) == ORIGINAL
    fw.env.control.putrows(commitDelayS=0.05, flush=True)  # the freeze is gone: the service's next attempt commits
    assert fw.env.control.putrows()[arn] == {"buffered": 0, "committed": 2}
    assert {900, 901} <= _ids(fw.source_committer(), "analytics.customers")

    fw.env.control.call("live/switch", {"name": "putrows-commit-denied", "on": False})
    fw.env.control.putrows(commitDelayS=60, readsZero=True)
    _put_rows(fw, "analytics.customers", b'{"id": 902, "region": "eu"}\n{"id": 903, "region": "eu"}\n')
    got = channels.read(fw.world.src(), arn)
    assert got is not None and got.buffered_rows == 0 and got.drained  # the approximate count reads 0 ...
    assert fw.env.control.putrows()[arn] == {"buffered": 2, "committed": 2}  # ... with both rows still buffered
    result = _run(fw, bg, tmp_path, monkeypatch, hook, commit_interval_s=1.5)
    rep = result.report
    assert rep is not None and result.exit_code == 0 and rep.rpo_zero, rep and rep.render()
    assert fw.env.control.putrows()[arn] == {"buffered": 0, "committed": 4}
    promoted = _ids(fw.replica_committer(), "analytics.customers")
    assert {900, 901, 902, 903} <= promoted == _ids(fw.source_committer(), "analytics.customers")
