"""Failover tool: the pure plan, then the tool against the S3 Tables emulator over real HTTP with real
Iceberg tables (pyiceberg writes; `tests/failover_world.py`)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.exceptions import ValidationError

from s3tables_kit.jobs.failover import aws
from s3tables_kit.jobs.failover import model as failover_model
from s3tables_kit.jobs.failover.iceberg import partition_counts
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.kernel.snapshots import Snapshot, TableInfo
from tests.failover_world import FailoverWorld, batch, build, lose_source_region
from tests.ops_fixtures import ACCOUNT, BREAK_GLASS, DST_BUCKET, OpsEnv

NOW = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)


def _ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


def _info(
    snaps: list[tuple[int, dt.datetime]], current: int | None = None, props: dict[str, str] | None = None
) -> TableInfo:
    s = tuple(Snapshot(i, _ms(t), parent_id=snaps[k - 1][0] if k else None) for k, (i, t) in enumerate(snaps))
    return TableInfo(
        ident=Ident("analytics", "orders"),
        location="s3://x",
        format_version=2,
        current_snapshot_id=current if current is not None else (s[-1].snapshot_id if s else None),
        snapshots=s,
        snapshot_log=tuple((x.timestamp_ms, x.snapshot_id) for x in s),
        schemas={0: ()},
        current_schema_id=0,
        partition_spec=(),
        sort_order=(),
        properties=props or {},
        last_updated_ms=s[-1].timestamp_ms if s else None,
    )


# ----------------------------------------------------------------------------------------------------
# Pure
# ----------------------------------------------------------------------------------------------------


def test_rpo_counts_the_source_commits_the_replica_lacks() -> None:
    t1, t2, t3 = (NOW - dt.timedelta(minutes=m) for m in (30, 20, 10))
    src = failover_model.SourceFacts(commits=(t1, t2, t3))
    rpo = failover_model.compute_rpo(_ms(t1), src, NOW)
    assert (rpo.lacking_commits, rpo.seconds) == (2, 1200.0)
    assert failover_model.compute_rpo(_ms(t3), src, NOW).lacking_commits == 0


def test_rpo_is_a_lower_bound_when_the_source_does_not_answer() -> None:
    t1 = NOW - dt.timedelta(minutes=30)
    rpo = failover_model.compute_rpo(_ms(t1), failover_model.SourceFacts(error="GetTable: 503"), NOW)
    assert rpo.lacking_commits is None and rpo.at_least_since == t1.isoformat()
    assert rpo.describe().startswith(f"at least since {t1.isoformat()}")


@pytest.mark.parametrize(
    ("caller", "principal", "ok"),
    [
        ("arn:aws:sts::111122223333:assumed-role/breakglass/s", "arn:aws:iam::111122223333:role/ops/breakglass", True),
        ("arn:aws:sts::111122223333:assumed-role/breakglass/s", "arn:aws:iam::444455556666:role/breakglass", False),
        ("arn:aws:sts::111122223333:assumed-role/admin/s", "arn:aws:iam::111122223333:role/breakglass", False),
        ("arn:aws:iam::111122223333:user/alice", "arn:aws:iam::111122223333:user/alice", True),
    ],
)
def test_break_glass_matching(caller: str, principal: str, ok: bool) -> None:
    assert failover_model.principal_matches(caller, principal) is ok


def _facts(info: TableInfo | None, *, managed: bool = True, **kw: Any) -> failover_model.TableFacts:
    return failover_model.TableFacts(
        ident=Ident("analytics", "orders"),
        table_arn="arn:aws:s3tables:us-west-2:1:bucket/r/table/u",
        managed=managed,
        source_table_arn="arn:src",
        info=info,
        source=kw.pop("source", failover_model.SourceFacts()),
        **kw,
    )


def test_plan_resolves_the_point_in_time_with_the_recovery_planner() -> None:
    t1, t2 = NOW - dt.timedelta(hours=2), NOW - dt.timedelta(hours=1)
    info = _info([(1, t1), (2, t2)])
    kw: dict[str, Any] = {
        "replica_bucket_arn": "arn:r",
        "kit_replica_buckets": ["arn:r", "arn:other"],
        "table_policy": None,
    }
    latest = failover_model.plan_table(_facts(info), Selector(), NOW, **kw)
    assert (
        latest.step is failover_model.FailoverStep.PROMOTE
        and latest.snapshot
        and latest.snapshot.snapshot_id == 2
        and not latest.pit
    )
    pit = failover_model.plan_table(_facts(info), Selector(as_of_ms=_ms(t1 + dt.timedelta(minutes=1))), NOW, **kw)
    assert pit.snapshot and pit.snapshot.snapshot_id == 1 and pit.pit
    too_early = failover_model.plan_table(_facts(info), Selector(as_of_ms=_ms(t1 - dt.timedelta(minutes=1))), NOW, **kw)
    assert too_early.problems and "no snapshot at or before" in too_early.problems[0]
    assert latest.other_replicas == ("arn:other",) and latest.other_replicas_from == "outputs"


def test_states_replica_detached_not_a_replica() -> None:
    info = _info([(1, NOW)])
    assert _facts(info).state is failover_model.ReplicaState.REPLICA
    assert (
        _facts(info, managed=False).state is failover_model.ReplicaState.DETACHED
    )  # the outputs list it as replicated
    assert _facts(info, managed=False, expected_replica=False).state is failover_model.ReplicaState.NOT_REPLICA
    detached = failover_model.SourceFacts(
        destinations=(
            failover_model.SourceDestination("arn:r", "failed", "t", None, "The destination table has been detached"),
        )
    )
    assert (
        _facts(info, managed=False, expected_replica=False, source=detached).state
        is failover_model.ReplicaState.DETACHED
    )


def test_failback_counts_commits_since_the_failover_and_names_unverified_steps() -> None:
    t1, t2, t3 = (NOW - dt.timedelta(hours=h) for h in (3, 2, 1))
    props = {
        failover_model.LINEAGE.snapshot_id: "1",
        failover_model.PROP_PROMOTED_AT: t1.isoformat(),
        failover_model.LINEAGE.run_id: "r",
    }
    promoted = _info([(1, t1), (2, t2), (3, t3)], props=props)
    original = _info([(1, t1 - dt.timedelta(minutes=5))])
    fb = failover_model.failback_table(Ident("analytics", "orders"), "arn:p", promoted, "arn:o", original, None)
    assert (fb.commits_since_failover, fb.original_commits_after_failover) == (2, 0)
    # a point in time set the current snapshot back to 1, then one writer commit (4, child of 1): 3 is set aside
    pit = _info([(1, t1), (2, t2), (3, t3), (4, NOW)], props=props)
    pit = replace(pit, snapshots=(*pit.snapshots[:3], Snapshot(4, _ms(NOW), parent_id=1)))
    assert failover_model.commits_since(pit, 1) == 1
    steps = failover_model.failback_steps("arn:aws:s3tables:r:1:bucket/p", "arn:aws:s3tables:r:1:bucket/o", [fb])
    assert sum(failover_model.UNVERIFIED in s for s in steps) == 2


# ----------------------------------------------------------------------------------------------------
# Against the emulator
# ----------------------------------------------------------------------------------------------------


def documents(fw: FailoverWorld) -> aws.Documents:
    """The failover documents of the world's configuration, as the tool builds them
    (`s3tables_kit.policies.failover`)."""
    return aws.documents_from_config(fw.world.cfg, DST_BUCKET)


def expected_json(fw: FailoverWorld, table_arn: str | None = None) -> str:
    """The builder's document as the stacks render it (`test_failover_synth` shows the stacks deploy these bytes)."""
    from s3tables_kit.policies.failover import failover_documents

    docs = failover_documents(fw.world.cfg, DST_BUCKET)
    return json.dumps(docs.bucket_policy if table_arn is None else docs.table_policy(table_arn), indent=2)


@pytest.fixture
def fw(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> FailoverWorld:
    return build(ops_env, monkeypatch)


def _req(**kw: Any) -> aws.Request:
    return aws.Request(replica_bucket=DST_BUCKET, show_progress=False, **kw)


def _writes(stats: dict[str, Any]) -> dict[str, int]:
    reads = ("Get", "List", "Head")
    return {op: n for op, n in stats["calls"].items() if not op.startswith(reads)} | {
        k: n for k, n in stats["s3_calls"].items() if not k.split(" ")[1].startswith(reads)
    }


def test_dry_run_plans_and_writes_nothing(fw: FailoverWorld, tmp_path: Path) -> None:
    before = fw.env.control.stats()
    result = aws.run(fw.clients(), _req(report_dir=tmp_path), fw.world.outputs, documents(fw))
    after = fw.env.control.stats()
    assert result.exit_code == 0 and result.plan is not None
    assert _writes(after) == _writes(before)  # not one state-changing call, data plane included
    by = {str(t.ident): t for t in result.plan.tables}
    assert by["analytics.orders"].rpo.lacking_commits == 1 and by["analytics.customers"].rpo.lacking_commits == 0
    assert all(t.step is failover_model.FailoverStep.PROMOTE for t in by.values())
    assert result.plan.break_glass and result.plan.bucket_policy and result.plan.bucket_policy.changed
    assert by["analytics.orders"].snapshot.snapshot_id == fw.snapshots["analytics.orders"][1]  # type: ignore[union-attr]
    assert not list(tmp_path.iterdir())


def test_not_break_glass_is_refused_before_any_change(fw: FailoverWorld) -> None:
    before = fw.env.control.stats()
    result = aws.run(fw.clients(break_glass=False), _req(confirm=DST_BUCKET), fw.world.outputs, documents(fw))
    assert result.exit_code == failover_model.EXIT_REFUSED
    assert result.plan is not None and any("not a break-glass principal" in r for r in result.plan.refusals)
    assert _writes(fw.env.control.stats()) == _writes(before)


def test_wrong_confirmation_is_refused(fw: FailoverWorld) -> None:
    result = aws.run(fw.clients(), _req(confirm="demo-source-tablebucket"), fw.world.outputs, documents(fw))
    assert result.exit_code == failover_model.EXIT_REFUSED
    assert fw.world.replica_table("analytics.orders").get("managedTableInformation")


def test_source_region_lost_gives_rpo_at_least_since(fw: FailoverWorld) -> None:
    lose_source_region(fw.env)
    fast = Clients(endpoint_url=fw.env.endpoint, role_arns={ACCOUNT: BREAK_GLASS}, max_attempts=1)
    result = aws.run(fast, _req(), fw.world.outputs, documents(fw))
    assert result.plan is not None
    for t in result.plan.tables:
        assert t.rpo.lacking_commits is None and t.rpo.at_least_since
        assert t.other_replicas_from.startswith("outputs (source unreachable")


def _promote(fw: FailoverWorld, tmp_path: Path, **kw: Any) -> aws.RunResult:
    return aws.run(fw.clients(), _req(confirm=DST_BUCKET, report_dir=tmp_path, **kw), fw.world.outputs, documents(fw))


def test_promote_opens_verifies_reports_and_a_second_run_converges(fw: FailoverWorld, tmp_path: Path) -> None:
    first = _promote(fw, tmp_path)
    assert first.exit_code == 0, [o.message for o in first.outcomes]
    assert {o.verdict for o in first.outcomes} == {"promoted"}
    dst = fw.world.dst()
    for o in first.outcomes:
        ns, name = o.table.split(".")
        assert not fw.world.replica_table(o.table).get("managedTableInformation")
        live = dst.get_table_policy(tableBucketARN=fw.world.replica_arn, namespace=ns, name=name)["resourcePolicy"]
        assert live == expected_json(fw, o.table_arn)  # byte-identical to the builder's output
    assert dst.get_table_bucket_policy(tableBucketARN=fw.world.replica_arn)["resourcePolicy"] == expected_json(fw)
    table = fw.replica_committer().load(Ident("analytics", "orders"))
    props = table.metadata.properties
    assert props[failover_model.LINEAGE.snapshot_id] == str(fw.snapshots["analytics.orders"][1])
    assert props[failover_model.LINEAGE.source_table_arn] == fw.world.tables["analytics.orders"]
    orders = next(o for o in first.outcomes if o.table == "analytics.orders")
    assert (orders.rows, orders.partitions) == (5, 2)
    report = json.loads(first.report.with_suffix(".json").read_text())  # type: ignore[union-attr]
    assert report["rto_seconds"] > 0 and report["tables"][0]["rpo"]
    calls_before = fw.env.control.stats()["calls"]
    second = _promote(fw, tmp_path)
    assert second.exit_code == 0 and {o.verdict for o in second.outcomes} == {"converged"}
    calls_after = fw.env.control.stats()["calls"]
    for op in ("DisassociateTableReplication", "PutTablePolicy", "PutTableBucketPolicy", "UpdateTableMetadataLocation"):
        assert calls_after.get(op, 0) == calls_before.get(op, 0), op


def test_a_failure_on_one_table_does_not_stop_the_others(fw: FailoverWorld, tmp_path: Path) -> None:
    orders_arn = fw.world.dst().get_table(tableBucketARN=fw.world.replica_arn, namespace="analytics", name="orders")[
        "tableARN"
    ]
    fw.env.control.inject_faults(
        "DisassociateTableReplication", 100, code="InternalServerErrorException", status=500, match=orders_arn
    )
    result = aws.run(
        Clients(endpoint_url=fw.env.endpoint, role_arns={ACCOUNT: BREAK_GLASS}, max_attempts=1),
        _req(confirm=DST_BUCKET, report_dir=tmp_path),
        fw.world.outputs,
        documents(fw),
    )
    verdicts = {o.table: o.verdict for o in result.outcomes}
    assert result.exit_code == failover_model.EXIT_FAILED
    assert verdicts == {"analytics.orders": "failed", "analytics.customers": "promoted"}
    assert fw.world.replica_table("analytics.orders").get("managedTableInformation")  # untouched, still protected


def test_point_in_time_sets_the_chosen_snapshot(fw: FailoverWorld, tmp_path: Path) -> None:
    first_snapshot = fw.snapshots["analytics.customers"][0]
    committer = fw.source_committer()
    ts = committer.load(Ident("analytics", "customers")).metadata.snapshot_by_id(first_snapshot).timestamp_ms  # type: ignore[union-attr]
    as_of = Selector(as_of_ms=ts + 1)
    result = _promote(fw, tmp_path, selector=as_of, tables=(Ident("analytics", "customers"),))
    assert result.exit_code == 0, [o.message for o in result.outcomes]
    (o,) = result.outcomes
    assert o.point_in_time and o.snapshot_id == first_snapshot and o.rows == 3
    table = fw.replica_committer().load(Ident("analytics", "customers"))
    assert table.metadata.current_snapshot_id == first_snapshot
    assert partition_counts(table, first_snapshot) == {"[('region', 'eu')]": 3}
    assert table.metadata.properties[failover_model.PROP_PIT] == "true"


def test_bench_failover_comparisons() -> None:
    from bench.failover import comparisons
    from bench.report import Results

    res = Results("small", machine={})
    res.extra["failover"] = {
        "tables": 1000,
        "one_small": {"seconds": 2.0},
        "one_big": {"seconds": 2.5},
        "fleet": {"seconds": 50.0},
        "planned_fleet": {"seconds": 70.0},
    }
    by = {c.name: c for c in comparisons(res, 100.0, 10.0)}
    assert by["failover of 1000 small tables: time to writable"].met is True
    assert by["planned failover of 1000 tables: time to writable after the caught-up check"].met is False
    assert by["failover vs kit file copy, the large table"].value == 4.0
    assert by["failover vs default Spark CTAS, the large table"].value == 40.0
    assert by["failover time: large / small table (independent of size)"].value == 1.25
    res.extra["failover"] = None  # the section did not run: n/a, not a crash
    assert all(c.value is None for c in comparisons(res, 100.0, 10.0))


def test_failback_plan_after_a_failover(fw: FailoverWorld, tmp_path: Path) -> None:
    assert _promote(fw, tmp_path).exit_code == 0
    promoted = fw.replica_committer().load(Ident("analytics", "orders"))
    promoted.append(batch(range(100, 102), "us"))  # a writer commits to the promoted table
    before = _writes(fw.env.control.stats())
    text, doc = aws.failback(fw.clients(), _req(), fw.world.outputs)
    assert _writes(fw.env.control.stats()) == before  # a plan only
    by = {t["ident"]: t for t in doc["tables"]}
    assert by["analytics.orders"]["commits_since_failover"] == 1
    assert by["analytics.customers"]["commits_since_failover"] == 0
    assert by["analytics.orders"]["original_table_arn"] == fw.world.tables["analytics.orders"]
    assert by["analytics.orders"]["original_commits_after_failover"] == 0
    assert "UNVERIFIED" in text and "stale" in text


# ----------------------------------------------------------------------------------------------------
# Concurrency (tables promoted and verified in parallel)
# ----------------------------------------------------------------------------------------------------

MANY = ("orders", "customers", "events", "items", "users", "stores")


def test_concurrent_failures_stay_on_their_table_and_a_second_run_completes(
    ops_env: OpsEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six tables, four at a time: one table's table policy cannot be put, another's verification commit fails; each
    outcome stays with its own table, the others are promoted and verified with their own counts, and a second run
    finishes the two failed ones while converging (no write) on the others. (The faults hit the first matching call
    only; the clients make one attempt, so each failure is exactly one call.)"""
    fw = build(ops_env, monkeypatch, tables=MANY)
    fw.env.control.inject_faults("PutTablePolicy", 1, code="InternalServerErrorException", status=500, match="users")
    fw.env.control.inject_faults(
        "UpdateTableMetadataLocation", 1, code="InternalServerErrorException", status=500, match="stores"
    )
    fast = Clients(endpoint_url=fw.env.endpoint, role_arns={ACCOUNT: BREAK_GLASS}, max_attempts=1)
    docs = documents(fw)
    first = aws.run(fast, _req(confirm=DST_BUCKET, report_dir=tmp_path, concurrency=4), fw.world.outputs, docs)
    by = {o.table: o for o in first.outcomes}
    assert first.exit_code == failover_model.EXIT_FAILED
    assert [o.table for o in first.outcomes] == [str(t.ident) for t in first.plan.tables]  # type: ignore[union-attr]
    assert by["analytics.users"].verdict == "failed" and "InternalServerError" in by["analytics.users"].message
    assert by["analytics.stores"].verdict == "failed" and by["analytics.stores"].message.startswith("verification")
    ok = [t for t in by if t not in ("analytics.users", "analytics.stores")]
    assert {by[t].verdict for t in ok} == {"promoted"}
    for t in ok:  # each table's own snapshot and counts (orders' replica lacks the source's third commit)
        assert by[t].snapshot_id == fw.snapshots[t][1] and (by[t].rows, by[t].partitions) == (5, 2)
        assert fw.replica_committer().load(Ident.parse(t)).metadata.properties[failover_model.LINEAGE.run_id]
    report = json.loads(first.report.with_suffix(".json").read_text())  # type: ignore[union-attr]
    assert {t["table"]: t["verdict"] for t in report["tables"]} == {t: o.verdict for t, o in by.items()}

    calls_before = fw.env.control.stats()["calls"]
    second = aws.run(fast, _req(confirm=DST_BUCKET, report_dir=tmp_path, concurrency=4), fw.world.outputs, docs)
    by2 = {o.table: o for o in second.outcomes}
    assert second.exit_code == 0, [o.message for o in second.outcomes]
    assert {by2[t].verdict for t in ok} == {"converged"}
    assert by2["analytics.users"].rows == 5 and by2["analytics.stores"].rows == 5
    calls = {op: n - calls_before.get(op, 0) for op, n in fw.env.control.stats()["calls"].items()}
    assert calls.get("PutTablePolicy", 0) == 1  # users only: the others already have the document
    assert calls.get("UpdateTableMetadataLocation", 0) == 2  # the lineage commits of users and stores only
    assert calls.get("DisassociateTableReplication", 0) == 0  # all six were detached by the first run


def test_committer_reuses_known_metadata_only_while_the_table_points_at_it(fw: FailoverWorld) -> None:
    """The verification's load reuses the metadata file read at plan time, never a stale one."""
    cm = fw.source_committer()  # the same committer class; a replica is read-only until it is promoted
    ident = Ident("analytics", "orders")
    t = cm.load(ident)
    loc = t.metadata_location
    bucket, _, key = loc.removeprefix("s3://").partition("/")
    raw = fw.env.clients().s3(fw.world.source_arn.split(":")[3]).get_object(Bucket=bucket, Key=key)["Body"].read()
    assert cm.load(ident, known=(loc, raw)).metadata == t.metadata
    with pytest.raises(ValidationError):  # proof that the known bytes are what is parsed for that location
        cm.load(ident, known=(loc, b"{}"))
    t.append(batch(range(10, 11), "eu"))  # the table moves on: the known file is stale and must not be used
    again = cm.load(ident, known=(loc, raw))
    assert again.metadata_location != loc and again.metadata.current_snapshot_id == t.metadata.current_snapshot_id


def test_partition_counts_agree_with_pyiceberg_inspect(fw: FailoverWorld) -> None:
    t = fw.source_committer().load(Ident("analytics", "orders"))
    for snap in t.metadata.snapshots:
        rows = t.inspect.partitions(snapshot_id=snap.snapshot_id).to_pylist()
        counts = partition_counts(t, snap.snapshot_id)
        assert len(counts) == len(rows) and sum(counts.values()) == sum(r["record_count"] for r in rows)
    assert partition_counts(t, t.metadata.current_snapshot_id) == {"[('region', 'eu')]": 4, "[('region', 'us')]": 2}
