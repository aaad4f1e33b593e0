"""Planning at lake scale: hundreds of replica tables planned concurrently on the emulator (`emulator/`,
real HTTP), under throttling; a table that still fails after the retries is a plan error, never a traceback."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from s3tables_kit.jobs.kernel import sdk
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.job import RecoveryRequest, build_plan, plan_one, run
from s3tables_kit.jobs.recover.lakeplan import Listing, bounded_map, build_plan_at_scale, describe_error
from s3tables_kit.jobs.recover.metadata import MetadataSource, S3TablesMetadataSource, metadata_source
from tests.ops_fixtures import DST_REGION, OpsEnv, deploy

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
NAMESPACES = ("sales", "ops", "web")
PER_NS = 100


@pytest.fixture
def lake(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> tuple[OpsEnv, str, str]:
    """300 source tables in 3 namespaces, replicated (the emulator's service) into the replica bucket; an empty
    recovery bucket in the replica's Region."""
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    world = deploy(ops_env, tables=("orders",))
    commit_ms = int((NOW - timedelta(hours=1)).timestamp() * 1000)
    ops_env.control.seed(
        world.source_arn, {ns: [f"t{i:03d}" for i in range(PER_NS)] for ns in NAMESPACES}, commit_ms=commit_ms
    )
    ops_env.control.replicate(source_bucket_arn=world.source_arn)
    _complete_metadata(ops_env, world.replica_arn)
    recovery = world.dst().create_table_bucket(name="recovery-bkt")["arn"]
    return ops_env, world.replica_arn, recovery


SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "day", "required": False, "type": "date"},
    ],
}


def _complete_metadata(env: OpsEnv, bucket_arn: str) -> None:
    """The emulator's seeded metadata documents carry snapshots only; give each replica table a schema, a partition
    spec and a summary, in place (PutObject on table storage, as a writer would)."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    import boto3

    st = env.clients().s3tables(DST_REGION)
    s3 = boto3.client("s3", region_name=DST_REGION, endpoint_url=env.endpoint)
    locations = []
    for ns in NAMESPACES:
        for t in st.list_tables(tableBucketARN=bucket_arn, namespace=ns)["tables"]:
            locations.append(st.get_table(tableBucketARN=bucket_arn, namespace=ns, name=t["name"])["metadataLocation"])

    def fill(loc: str) -> None:
        bucket, key = loc.removeprefix("s3://").split("/", 1)
        doc = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        doc.update(
            {
                "schemas": [SCHEMA],
                "current-schema-id": 0,
                "partition-specs": [
                    {"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "name": "day", "transform": "day"}]}
                ],
                "default-spec-id": 0,
                "sort-orders": [{"order-id": 0, "fields": []}],
                "default-sort-order-id": 0,
                "properties": {"write.format.default": "parquet"},
            }
        )
        for snap in doc["snapshots"]:
            snap["schema-id"] = 0
            snap["summary"].update({"total-records": "10", "total-data-files": "1", "total-files-size": "1000"})
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc).encode())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(fill, locations))


def _request(env: OpsEnv, replica: str, recovery: str, **kw: object) -> RecoveryRequest:
    rep = CatalogSpec("replica", "client", replica, region=DST_REGION, endpoint=env.endpoint)
    tgt = CatalogSpec("recovery", "client", recovery, region=DST_REGION, endpoint=env.endpoint)
    return RecoveryRequest(
        rep, tgt, namespaces=list(NAMESPACES), dry_run=True, now_ms=int(NOW.timestamp() * 1000), **kw
    )  # type: ignore[arg-type]


def _plan(req: RecoveryRequest, concurrency: int = 16, attempts: int | None = None) -> tuple[list[str], list[str]]:
    rep: MetadataSource = metadata_source(req.replica)
    if attempts is not None:  # fewer attempts than the kit's (10) keep a table that is always throttled quick to test
        client = boto3.client(
            "s3tables",
            region_name=DST_REGION,
            endpoint_url=req.replica.endpoint,
            config=sdk.retry_config(attempts),
        )
        rep = S3TablesMetadataSource(req.replica, client)
    p = build_plan_at_scale(req, rep, metadata_source(req.target), plan_one, concurrency, io.StringIO())
    return sorted(str(t.replica) for t in p.tables), p.errors


def test_the_concurrent_plan_equals_the_serial_plan(lake: tuple[OpsEnv, str, str]) -> None:
    env, replica, recovery = lake
    req = _request(env, replica, recovery)
    serial = build_plan(req, metadata_source(req.replica), metadata_source(req.target))
    fast = build_plan_at_scale(
        req, metadata_source(req.replica), metadata_source(req.target), plan_one, 16, io.StringIO()
    )
    assert fast.errors == serial.errors == []
    assert [t.as_dict() for t in fast.tables] == [t.as_dict() for t in serial.tables]
    assert len(fast.tables) == 3 * PER_NS


def test_the_plan_costs_one_get_table_per_table_and_a_listing_per_namespace(lake: tuple[OpsEnv, str, str]) -> None:
    env, replica, recovery = lake
    before = env.control.stats()["calls"]
    tables, errors = _plan(_request(env, replica, recovery))
    assert errors == [] and len(tables) == 3 * PER_NS
    calls = env.control.stats()["calls"]
    delta = {k: calls.get(k, 0) - before.get(k, 0) for k in calls}
    # one GetTable per replica table (location + source ARN), one ListNamespaces per bucket, one ListTables page per
    # namespace of the replica, and no per-table lookup of the targets (their namespaces do not exist)
    assert delta.get("GetTable") == 3 * PER_NS
    assert delta.get("ListNamespaces") == 2
    assert delta.get("ListTables") == len(NAMESPACES)
    assert delta.get("GetTableMetadataLocation", 0) == 0


def test_throttling_is_absorbed_by_the_retry_policy(lake: tuple[OpsEnv, str, str]) -> None:
    env, replica, recovery = lake
    # bursts of 429s on the listing and on the per-table reads, spread over the run (30% of the GetTable calls)
    env.control.inject_faults("ListTables", 4)
    env.control.inject_faults("GetTable", 90)
    env.control.inject_faults("GetTableMetadataLocation", 20)
    before = env.control.stats()["faults"]
    tables, errors = _plan(_request(env, replica, recovery))
    assert errors == []
    assert len(tables) == 3 * PER_NS
    served = {f["operation"]: f["served"] for f in env.control.stats()["faults"]}
    assert served["ListTables"] == 4 and served["GetTable"] == 90, (before, served)


def test_twenty_percent_throttling_of_listing_tables_and_metadata_reads(lake: tuple[OpsEnv, str, str]) -> None:
    env, replica, recovery = lake
    # a seeded 20% of every ListTables / ListNamespaces / GetTable call and of every S3 GetObject (pyarrow, SlowDown)
    for op in ("ListTables", "ListNamespaces", "GetTable"):
        env.control.throttle(op, 0.2)
    env.control.throttle("GetObject", 0.2, service="s3")
    tables, errors = _plan(_request(env, replica, recovery))
    assert errors == []
    assert len(tables) == 3 * PER_NS
    served = {f["operation"]: f["served"] for f in env.control.stats()["faults"]}
    assert served["GetTable"] > 20 and served["GetObject"] > 20, served  # the throttling happened, and was absorbed


def test_a_table_that_keeps_failing_is_a_plan_error_and_the_others_are_planned(
    lake: tuple[OpsEnv, str, str],
) -> None:
    env, replica, recovery = lake
    # web.t007: throttled on every attempt (more than the retries); ops.t042: access denied (not retried)
    env.control.inject_faults("GetTable", 1000, match="namespace=web&name=t007")
    env.control.inject_faults(
        "GetTable", 1000, code="AccessDeniedException", status=403, message="no", match="namespace=ops&name=t042"
    )
    tables, errors = _plan(_request(env, replica, recovery), attempts=3)
    assert len(tables) == 3 * PER_NS - 2
    assert "web.t007" not in tables and "ops.t042" not in tables
    assert len(errors) == 2, errors
    throttled = next(e for e in errors if e.startswith("web.t007"))
    denied = next(e for e in errors if e.startswith("ops.t042"))
    assert "could not be planned: TooManyRequestsException" in throttled and "after 2 retries" in throttled
    assert "could not be planned: AccessDeniedException" in denied


def test_a_namespace_that_cannot_be_listed_is_a_plan_error(lake: tuple[OpsEnv, str, str]) -> None:
    env, replica, recovery = lake
    env.control.inject_faults(
        "ListTables", 1000, code="AccessDeniedException", status=403, message="no", match="namespace=ops"
    )
    tables, errors = _plan(_request(env, replica, recovery))
    assert len(tables) == 2 * PER_NS
    assert any(e.startswith("namespace ops: the tables could not be listed: AccessDeniedException") for e in errors)


def test_the_dry_run_prints_the_plan_and_exits_0_under_throttling(
    lake: tuple[OpsEnv, str, str], tmp_path: Path
) -> None:
    env, replica, recovery = lake
    env.control.inject_faults("GetTable", 60)
    out, err = io.StringIO(), io.StringIO()
    outcome = run(_request(env, replica, recovery, report_dir=tmp_path), lambda conf: None, out, err)  # type: ignore[arg-type,return-value]
    assert outcome.exit_code == 0, out.getvalue()[-2000:]
    assert len(outcome.results) == 3 * PER_NS
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "table(s) resolved" in err.getvalue()  # progress of a long plan


# --- pure parts ---------------------------------------------------------------------------------------------------


def test_bounded_map_keeps_order_across_batches() -> None:
    assert list(bounded_map(lambda x: x * 2, range(25), workers=4, batch=7)) == [x * 2 for x in range(25)]


def test_listing_membership() -> None:
    lst = Listing()
    lst.add("a", ["x", "y"], {})
    assert lst.has(Ident("a", "x")) and not lst.has(Ident("a", "z")) and not lst.has(Ident("b", "x"))


def test_describe_error_names_the_code_and_the_retries() -> None:
    e = ClientError(
        {
            "Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"},
            "ResponseMetadata": {"RetryAttempts": 9},
        },
        "GetTable",
    )
    assert describe_error(e) == "TooManyRequestsException: Rate exceeded after 9 retries"
    assert describe_error(OSError("When reading information for key 'x': AWS Error SLOW_DOWN")) == (
        "OSError: When reading information for key 'x': AWS Error SLOW_DOWN"
    )
