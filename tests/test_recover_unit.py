"""Unit tests of the recovery job without Spark: planning, timestamps, SQL text, catalogs, arguments, reports, EMR."""

from __future__ import annotations

import copy
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from s3tables_kit.jobs.emr_submit import build_start_job_run, driver_log_location, jobs_zip, remote_args
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.kernel.idents import ArgError, Ident
from s3tables_kit.jobs.kernel.selectors import PlanError, Selector, parse_as_of, resolve_snapshot, to_ms
from s3tables_kit.jobs.kernel.snapshots import IcebergColumn, table_info_from_metadata
from s3tables_kit.jobs.recover import sql
from s3tables_kit.jobs.recover.cli import parser, request_from_args
from s3tables_kit.jobs.recover.guard import write_target_catalog
from s3tables_kit.jobs.recover.model import LINEAGE, PROP_REPLICA_TABLE, PROP_VERIFIED
from s3tables_kit.jobs.recover.planning import Action, TargetState, choose_action, plan_table, target_state
from s3tables_kit.jobs.recover.report import TableResult, summary_table, table_markdown, write_reports
from s3tables_kit.jobs.recover.verify import compare_fingerprints, schema_problems
from s3tables_kit.topology.outputs import parse_outputs

if TYPE_CHECKING:
    from s3tables_kit.jobs.recover.job import Outcome

T0 = 1_764_770_000_000  # 2025-12-03T13:53:20Z


ORDER_ID = {"id": 1, "name": "order_id", "required": True, "type": "string", "doc": "key"}
DAY = {"id": 2, "name": "day", "required": False, "type": "date"}
AMOUNT = {"id": 3, "name": "amount", "required": False, "type": "decimal(12, 2)"}
ZIP = {"id": 6, "name": "zip", "required": False, "type": "int"}
ADDR = {"id": 4, "name": "addr", "required": False, "type": {"type": "struct", "fields": [ZIP]}}


def metadata(**over: Any) -> dict[str, Any]:
    """A v2 metadata document: 3 snapshots 1 min apart, a schema change at the 3rd, spec month + bucket, sort."""
    doc: dict[str, Any] = {
        "format-version": 2,
        "location": "s3://replica-bucket/analytics/orders",
        "current-schema-id": 1,
        "schemas": copy.deepcopy(  # the field dicts are shared module constants
            [
                {"schema-id": 0, "fields": [ORDER_ID, {**DAY, "name": "order_date"}, AMOUNT, ADDR]},
                # the schema change: order_date renamed to day, region added
                {
                    "schema-id": 1,
                    "fields": [
                        ORDER_ID,
                        DAY,
                        AMOUNT,
                        ADDR,
                        {"id": 5, "name": "region", "required": False, "type": "string"},
                    ],
                },
            ]
        ),
        "default-spec-id": 1,
        "partition-specs": [
            {"spec-id": 0, "fields": [{"name": "d", "transform": "day", "source-id": 2, "field-id": 1000}]},
            {
                "spec-id": 1,
                "fields": [
                    {"name": "m", "transform": "month", "source-id": 2, "field-id": 1001},
                    {"name": "b", "transform": "bucket[16]", "source-id": 1, "field-id": 1002},
                    {"name": "z", "transform": "truncate[10]", "source-id": 6, "field-id": 1003},
                    {"name": "d", "transform": "void", "source-id": 2, "field-id": 1000},
                ],
            },
        ],
        "default-sort-order-id": 1,
        "sort-orders": [
            {"order-id": 0, "fields": []},
            {
                "order-id": 1,
                "fields": [
                    {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"},
                    {"transform": "day", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
                ],
            },
        ],
        "properties": {
            "owner": "root",
            "team": "analytics",
            "write.parquet.compression-codec": "zstd",
            "write.data.path": "s3://replica-bucket/data",
            "kit.recovery.replica-snapshot-id": "1",
            "s3tables.something": "x",
        },
        "current-snapshot-id": 30,
        "snapshots": [
            {"snapshot-id": 10, "timestamp-ms": T0, "schema-id": 0, "summary": {"total-records": "5"}},
            {
                "snapshot-id": 20,
                "timestamp-ms": T0 + 60_000,
                "schema-id": 0,
                "summary": {
                    "total-records": "8",
                    "total-position-deletes": "2",
                    "total-data-files": "3",
                    "total-files-size": "999",
                    "total-delete-files": "1",
                },
            },
            {"snapshot-id": 30, "timestamp-ms": T0 + 120_000, "schema-id": 1, "summary": {"total-records": "9"}},
        ],
        "snapshot-log": [
            {"timestamp-ms": T0, "snapshot-id": 10},
            {"timestamp-ms": T0 + 60_000, "snapshot-id": 20},
            {"timestamp-ms": T0 + 120_000, "snapshot-id": 30},
        ],
    }
    doc.update(over)
    return doc


INFO = table_info_from_metadata(Ident("analytics", "orders"), metadata(), "s3://x/metadata/v3.metadata.json")
NOW = T0 + 3_600_000


def run_refused_before_a_jvm(tmp_path: Path, out: io.StringIO, err: io.StringIO) -> Outcome:
    """Recover analytics.orders from the hadoop warehouse `tmp_path/rep` into namespace `rec` of `tmp_path/tgt`,
    with a Spark factory that fails the test if a session is asked for (a plan-time refusal comes before any JVM)."""
    from s3tables_kit.jobs.recover.job import RecoveryRequest, run

    def no_jvm(conf: dict[str, str]) -> Any:
        raise AssertionError("a SparkSession was requested")

    req = RecoveryRequest(
        replica=CatalogSpec("r", "hadoop", str(tmp_path / "rep")),
        target=CatalogSpec("t", "hadoop", str(tmp_path / "tgt")),
        tables=[Ident("analytics", "orders")],
        target_namespace="rec",
        report_dir=tmp_path / "reports",
        now_ms=NOW,
    )
    return run(req, no_jvm, out=out, err=err)


# --- timestamps and snapshot resolution ------------------------------------------------------------------------


def test_parse_as_of_requires_a_zone() -> None:
    assert to_ms(parse_as_of("2025-12-03T13:53:20Z")) == T0
    assert to_ms(parse_as_of("2025-12-03T14:53:20+01:00")) == T0
    with pytest.raises(ArgError, match="has no zone"):
        parse_as_of("2025-12-03T13:53:20")
    with pytest.raises(ArgError, match="not an ISO-8601"):
        parse_as_of("yesterday")


def test_resolve_latest_timestamp_and_id() -> None:
    assert resolve_snapshot(INFO, Selector(), NOW).snapshot_id == 30
    assert resolve_snapshot(INFO, Selector(as_of_ms=T0 + 60_000), NOW).snapshot_id == 20  # at a commit: included
    assert resolve_snapshot(INFO, Selector(as_of_ms=T0 + 59_999), NOW).snapshot_id == 10
    assert resolve_snapshot(INFO, Selector(as_of_ms=T0 + 500_000), NOW).snapshot_id == 30
    assert resolve_snapshot(INFO, Selector(snapshot_id=20), NOW).snapshot_id == 20


def test_before_first_snapshot_lists_nearest_and_window() -> None:
    with pytest.raises(PlanError) as e:
        resolve_snapshot(INFO, Selector(as_of_ms=T0 - 1), NOW)
    msg = str(e.value)
    assert "no snapshot at or before 2025-12-03T13:53:19.999Z" in msg
    assert "10 at 2025-12-03T13:53:20.000Z; 20 at" in msg
    assert "3 snapshot(s) retained, from 10 at 2025-12-03T13:53:20.000Z to 30 at 2025-12-03T13:55:20.000Z" in msg


def test_future_and_unknown_snapshot() -> None:
    with pytest.raises(PlanError, match="is in the future"):
        resolve_snapshot(INFO, Selector(as_of_ms=NOW + 1), NOW)
    with pytest.raises(PlanError, match=r"snapshot 99 does not exist in the replica.*Retained window"):
        resolve_snapshot(INFO, Selector(snapshot_id=99), NOW)


def test_expired_snapshot_in_the_log_is_a_clear_error() -> None:
    doc = metadata()
    doc["snapshots"] = doc["snapshots"][1:]  # 10 expired; the log still names it
    info = table_info_from_metadata(Ident("a", "b"), doc)
    with pytest.raises(PlanError, match="was snapshot 10, which the replica no longer retains"):
        resolve_snapshot(info, Selector(as_of_ms=T0 + 1000), NOW)


def test_selector_exclusive() -> None:
    with pytest.raises(ArgError):
        Selector(as_of_ms=1, snapshot_id=2)


# --- plan: schema of the point, spec, sort, target state ----------------------------------------------------------


def test_plan_uses_the_schema_of_the_snapshot_and_names_in_it() -> None:
    p = plan_table(INFO, Selector(snapshot_id=20), NOW, Ident("recovered", "orders"), None, False)
    assert [c.name for c in p.schema] == ["order_id", "order_date", "amount", "addr"]
    assert p.rows == 6 and p.snapshot.data_files == 3 and p.snapshot.total_bytes == 999
    assert [f.transform for f in p.partition_spec] == ["month", "bucket[16]", "truncate[10]"]  # void dropped
    text = sql.ctas("rec", "rep", p, "run1")
    assert "PARTITIONED BY (months(`order_date`), bucket(16, `order_id`), truncate(10, `addr`.`zip`))" in text
    assert text.endswith("AS SELECT * FROM `rep`.`analytics`.`orders` VERSION AS OF 20")
    order = sql.write_ordered_by("rec", p)
    assert order == (
        "ALTER TABLE `rec`.`recovered`.`orders` WRITE ORDERED BY "
        "`order_id` DESC NULLS LAST, days(`order_date`) ASC NULLS FIRST"
    )


def test_partition_on_a_column_newer_than_the_snapshot_is_left_out() -> None:
    doc = metadata()
    doc["partition-specs"][1]["fields"].append({"name": "r", "transform": "identity", "source-id": 5, "field-id": 1004})
    info = table_info_from_metadata(Ident("a", "b"), doc)
    p = plan_table(info, Selector(snapshot_id=10), NOW, Ident("r", "b"), None, False)
    assert "region" not in sql.ctas("rec", "rep", p, "x") and p.warnings


def test_properties_user_only_plus_lineage_and_format_version() -> None:
    p = plan_table(INFO, Selector(), NOW, Ident("recovered", "orders"), None, False)
    props = sql.target_properties(p, "run1")
    assert props["format-version"] == "2" and props["team"] == "analytics"
    assert props["write.parquet.compression-codec"] == "zstd"
    for k in ("owner", "write.data.path", "s3tables.something"):
        assert k not in props
    assert props[LINEAGE.snapshot_id] == "30" and props[PROP_REPLICA_TABLE] == "analytics.orders"
    assert props["kit.recovery.replica-snapshot-committed-at"] == "2025-12-03T13:55:20.000Z"
    assert props["kit.recovery.replica-metadata-location"] == "s3://x/metadata/v3.metadata.json"
    assert PROP_VERIFIED not in props
    assert "'team'='analytics'" in sql.ctas("rec", "rep", p, "run1")


@pytest.mark.parametrize(
    ("props", "state", "action", "action_replace"),
    [
        (None, TargetState.ABSENT, Action.CREATE, Action.CREATE),
        ({"x": "1"}, TargetState.FOREIGN, Action.REFUSE, Action.REPLACE),
        ({LINEAGE.snapshot_id: "20"}, TargetState.OWN_UNVERIFIED, Action.REDO, Action.REDO),
        ({LINEAGE.snapshot_id: "30"}, TargetState.UNVERIFIED_SAME, Action.VERIFY, Action.REDO),
        ({LINEAGE.snapshot_id: "30", PROP_VERIFIED: "t"}, TargetState.VERIFIED_SAME, Action.SKIP, Action.SKIP),
        ({LINEAGE.snapshot_id: "20", PROP_VERIFIED: "t"}, TargetState.OWN_OTHER, Action.REFUSE, Action.REPLACE),
    ],
)
def test_target_state_and_action(props: Any, state: TargetState, action: Action, action_replace: Action) -> None:
    snap = INFO.snapshot(30)
    assert snap
    assert target_state(props, INFO.ident, snap) is state
    assert choose_action(state, False) is action and choose_action(state, True) is action_replace


# --- SQL text ------------------------------------------------------------------------------------------------------


def test_transforms_and_quoting() -> None:
    assert sql.transform_sql("identity", "a.b") == "`a`.`b`"
    assert sql.transform_sql("year", "d") == "years(`d`)"
    assert sql.transform_sql("hour", "t") == "hours(`t`)"
    assert sql.transform_value_sql("bucket[4]", "id", "c") == "`c`.system.bucket(4, `id`)"
    assert sql.q("we`ird") == "`we``ird`"
    assert sql.lit("it's") == "'it\\'s'"
    with pytest.raises(ValueError):
        sql.transform_sql("zorder", "x")


def test_spark_ddl_types_for_the_create_then_insert_path() -> None:
    assert sql.spark_type("long") == "bigint"
    assert sql.spark_type("decimal(38, 10)") == "decimal(38,10)"
    assert sql.spark_type("timestamptz") == "timestamp" and sql.spark_type("timestamp") == "timestamp_ntz"
    nested = {
        "type": "struct",
        "fields": [
            {
                "id": 1,
                "name": "a",
                "required": True,
                "type": {"type": "list", "element-id": 2, "element": "int"},
                "doc": "d",
            },
            {
                "id": 3,
                "name": "m",
                "type": {"type": "map", "key-id": 4, "key": "string", "value-id": 5, "value": "fixed[16]"},
            },
        ],
    }
    assert sql.spark_type(nested) == "struct<`a`: array<int> NOT NULL COMMENT 'd', `m`: map<string, binary>>"
    p = plan_table(INFO, Selector(), NOW, Ident("recovered", "orders"), None, False)
    ddl = sql.create_table("rec", p, "r")
    assert "`order_id` string NOT NULL COMMENT 'key'" in ddl and "`region` string" in ddl
    assert sql.insert_select("rec", "rep", p) == (
        "INSERT INTO `rec`.`recovered`.`orders` SELECT * FROM `rep`.`analytics`.`orders` VERSION AS OF 30"
    )


def test_fingerprint_one_pass_grouped_by_partition_values() -> None:
    cols = (IcebergColumn(1, "id", "long"), IcebergColumn(2, "m", {"type": "map", "key": "string", "value": "int"}))
    spec = INFO.partition_spec[:0]
    text = sql.fingerprint_sql("t", cols, spec, "c")
    assert text.startswith("SELECT count(*) AS `n`, sum(shiftright(xxhash64(`id`, array_sort(map_entries(`m`))), 32))")
    assert "GROUP BY" not in text
    p = plan_table(INFO, Selector(), NOW, Ident("r", "o"), None, False)
    g = sql.fingerprint_sql("t", p.schema, p.partition_spec, "c")
    assert "GROUP BY `c`.system.months(`day`), `c`.system.bucket(16, `order_id`)" in g
    assert "EXCEPT ALL" in sql.except_all_sql("a", "b", cols, 5)


def test_fingerprint_recombines_the_exact_64_bit_sum_from_its_halves() -> None:
    from s3tables_kit.jobs.recover.verify import fingerprint_from_rows

    values = [-(2**63), 2**63 - 1, -1, 0, 123456789012345, -987654321098765]
    row = {
        "n": len(values),
        "h64hi": sum(v >> 32 for v in values),  # what shiftright(xxhash64(..), 32) sums to
        "h64lo": sum(v & 0xFFFFFFFF for v in values),  # what xxhash64(..) & 4294967295 sums to
        "h32": 7,
    }
    assert fingerprint_from_rows([row], 0) == {(): (len(values), Decimal(sum(values)), Decimal(7))}


def test_compare_fingerprints_and_schema() -> None:
    a = {("p1",): (3, Decimal(10), Decimal(1)), ("p2",): (1, Decimal(5), Decimal(2))}
    assert compare_fingerprints(a, dict(a)) == []
    b = {("p1",): (3, Decimal(11), Decimal(1)), ("p3",): (1, Decimal(5), Decimal(2))}
    problems = compare_fingerprints(a, b)
    assert any("different row contents" in p for p in problems)
    assert any("only in replica" in p for p in problems) and any("only in target" in p for p in problems)
    c1 = (IcebergColumn(1, "id", "long", True, "k"),)
    assert schema_problems(c1, (IcebergColumn(9, "id", "long", True, "k"),)) == []
    assert schema_problems(c1, (IcebergColumn(1, "id", "long", False, None),)) == [
        "column id: required=True became False",
        "column id: doc 'k' became None",
    ]


# --- catalogs ------------------------------------------------------------------------------------------------------

ARN = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"


def test_catalog_confs() -> None:
    client = catalog_conf(CatalogSpec("replica", "client", ARN, region="us-west-2"))
    assert client["spark.sql.catalog.replica.catalog-impl"] == "software.amazon.s3tables.iceberg.S3TablesCatalog"
    assert client["spark.sql.catalog.replica.warehouse"] == ARN
    rest = catalog_conf(CatalogSpec("replica", "rest", ARN, region="us-west-2"))
    assert rest["spark.sql.catalog.replica.uri"] == "https://s3tables.us-west-2.amazonaws.com/iceberg"
    assert rest["spark.sql.catalog.replica.rest.signing-name"] == "s3tables"
    assert rest["spark.sql.catalog.replica.rest.sigv4-enabled"] == "true"
    glue = catalog_conf(CatalogSpec("replica", "glue", ARN, region="us-west-2"))
    assert glue["spark.sql.catalog.replica.glue.id"] == "111122223333:s3tablescatalog/demo-dest-tablebucket"
    assert CatalogSpec("x", "rest", ARN, region="r").staged_ctas is False
    assert CatalogSpec("x", "client", ARN).staged_ctas is True
    hadoop = CatalogSpec("h", "hadoop", "file:///tmp/wh")
    assert hadoop.warehouse == "file:/tmp/wh"  # docs/aws-facts.md#spark-and-iceberg
    assert CatalogSpec("h", "hadoop", "/tmp/wh").warehouse == "file:/tmp/wh"
    jdbc = catalog_conf(CatalogSpec("j", "jdbc", "file:/tmp/wh", uri="jdbc:sqlite:/tmp/c.db"))
    assert jdbc["spark.sql.catalog.j.type"] == "jdbc" and jdbc["spark.sql.catalog.j.uri"] == "jdbc:sqlite:/tmp/c.db"
    for conf in (client, rest, glue):
        assert conf["spark.sql.catalog.replica.use-nullable-query-schema"] == "false"
    with pytest.raises(ValueError):
        CatalogSpec("x", "hive", "w")


# --- arguments -----------------------------------------------------------------------------------------------------


def outputs_doc() -> dict[str, Any]:
    ret = {"max_snapshot_age_hours": 720, "min_snapshots_to_keep": 1}
    enc = {"sse_algorithm": "AES256"}
    return {
        "source": {
            "kit_source": {
                "kit": "seed",
                "account_id": "111122223333",
                "region": "us-east-1",
                "table_bucket_arn": "arn:aws:s3tables:us-east-1:111122223333:bucket/demo-source-tablebucket",
                "table_bucket_name": "demo-source-tablebucket",
                "replication_mode": "tables",
                "replication_role_arn": "arn:aws:iam::111122223333:role/repl",
                "namespaces": {"analytics": ["orders"]},
                "replicated_tables": ["analytics.orders"],
                "snapshot_retention": ret,
                "destinations": [ARN],
                "encryption": enc,
            }
        },
        "replica-demo": {
            "kit_replica": {
                "account_id": "111122223333",
                "region": "us-west-2",
                "table_bucket_arn": ARN,
                "table_bucket_name": "demo-dest-tablebucket",
                "storage_class": "INTELLIGENT_TIERING",
                "encryption": enc,
                "snapshot_retention": ret,
                "source_table_bucket_arn": "arn:aws:s3tables:us-east-1:111122223333:bucket/demo-source-tablebucket",
                "break_glass_principals": [],
                "guardrail_policy_arn": "arn:aws:iam::111122223333:policy/g",
            }
        },
        "recovery": {
            "kit_recovery": {
                "account_id": "111122223333",
                "region": "us-west-2",
                "table_bucket_arn": "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-recovery-tablebucket",
                "table_bucket_name": "demo-recovery-tablebucket",
                "namespace": "recovered",
                "role_arn": "arn:aws:iam::111122223333:role/kit-recovery",
                "emr_application_id": "00abc123",
                "emr_release": "emr-7.12.0",
                "scripts_uri": "s3://kit-scripts-111122223333/recovery/",
                "logs_uri": "s3://kit-logs-111122223333/emr",
                "replica_table_bucket_arn": ARN,
            }
        },
    }


def test_args_from_outputs(tmp_path: Path) -> None:
    f = tmp_path / "outputs.json"
    f.write_text(json.dumps(outputs_doc()))
    req = request_from_args(
        parser().parse_args(["--outputs", str(f), "--namespace", "analytics", "--as-of", "2025-12-03T13:53:20Z"])
    )
    assert req.replica.warehouse == ARN and req.replica.mode == "client" and req.replica.region == "us-west-2"
    assert req.target.warehouse.endswith("bucket/demo-recovery-tablebucket")
    assert req.target_namespace == "recovered" and req.selector.as_of_ms == T0 and req.namespaces == ["analytics"]
    rest = request_from_args(parser().parse_args(["--outputs", str(f), "--table", "a.b", "--catalog-mode", "rest"]))
    assert rest.target.staged_ctas is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replica-warehouse", "/r", "--target-warehouse", "/t"], "nothing to recover"),
        (["--replica-warehouse", "/r", "--table", "a.b"], "--replica-warehouse and --target-warehouse"),
        (["--replica-warehouse", "/r", "--target-warehouse", "/t", "--table", "ab"], "expected <namespace>.<name>"),
        (
            ["--replica-warehouse", "/r", "--target-warehouse", "/t", "--table", "a.b", "--as-of", "2025-12-03 10:00"],
            "has no zone",
        ),
        (
            [
                "--replica-warehouse",
                "/r",
                "--target-warehouse",
                "/t",
                "--table",
                "a.b",
                "--table",
                "a.c",
                "--snapshot-id",
                "1",
            ],
            "exactly one --table",
        ),
        (["--replica-warehouse", "/r", "--target-warehouse", "/t", "--table", "a.b", "--parallelism", "0"], ">= 1"),
        (["--replica-warehouse", ARN, "--target-warehouse", ARN + "x", "--table", "a.b"], "--replica-region"),
        (["--outputs", "/nonexistent/outputs.json", "--table", "a.b"], "outputs file not found"),
    ],
)
def test_bad_arguments(argv: list[str], message: str) -> None:
    with pytest.raises(ArgError, match=message.replace("(", r"\(")):
        request_from_args(parser().parse_args(argv))


def test_as_of_and_snapshot_id_are_exclusive() -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--table", "a.b", "--as-of", "2025-01-01T00:00:00Z", "--snapshot-id", "1"])


# --- guard (plan strings as Spark 3.5's parser prints them) ------------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "cls", "catalog"),
    [
        (
            "'InsertIntoStatement 'UnresolvedRelation [rep, a, t], [__required_write_privileges__=INSERT]",
            "InsertIntoStatement",
            "rep",
        ),
        ("'UpdateTable [assignment('x, 1)]\n+- 'UnresolvedRelation [rep, a, t], []", "UpdateTable", "rep"),
        (
            "'CreateTableAsSelect unresolvedtablespec(None)\n:- 'UnresolvedIdentifier [tgt, a, t]\n"
            "+- 'Project [*]\n   +- 'UnresolvedRelation [rep, a, t]",
            "CreateTableAsSelect",
            "tgt",
        ),
        ("'CallStatement [rep, system, expire_snapshots], [NamedArgument(table,a.t)]", "CallStatement", "rep"),
        ('SetWriteDistributionAndOrdering rep.a.t Some(RANGE) ref(name="x")', "SetWriteDistributionAndOrdering", "rep"),
    ],
)
def test_guard_finds_the_write_target(plan: str, cls: str, catalog: str) -> None:
    assert write_target_catalog(plan, cls) == catalog


# --- reports -------------------------------------------------------------------------------------------------------


def test_reports(tmp_path: Path) -> None:
    ok = TableResult("a.t", "rec.r.t", "verified", 1, "2025-12-03T13:53:20.000Z", 6, 2, 100, 0.1, 1.0, 0.5)
    bad = TableResult("a.u", "rec.r.u", "failed", 2, None, message="boom")
    bad.verification = {
        "source_rows": 2,
        "target_rows": 1,
        "partitions": 1,
        "problems": ["row count: replica 2, target 1"],
        "missing_sample": [{"id": 1}],
        "extra_sample": [],
    }
    md = table_markdown(bad)
    assert "FAILED" in md and "in replica only" in md and "row count" in md
    text = summary_table([ok, bad])
    assert "1 ok, 1 failed" in text
    path = write_reports(tmp_path / "r", [ok, bad], {"selector": "latest"})
    assert path.name == "report.md" and "| a.t | rec.r.t | verified |" in path.read_text()
    assert "# Recovery of `a.u` -> `rec.r.u`" in path.read_text()
    assert json.loads((tmp_path / "r" / "report.json").read_text())["tables"][1]["verdict"] == "failed"
    assert json.loads((tmp_path / "r" / "a.t--rec.r.t.json").read_text())["rows"] == 6


# --- EMR Serverless submission --------------------------------------------------------------------------------------


def test_emr_start_job_run_request() -> None:
    outputs = parse_outputs(outputs_doc())
    req = build_start_job_run(
        outputs, ["--namespace", "analytics", "--as-of", "2025-12-03T13:53:20Z"], ["a.jar", "b.jar"], client_token="t"
    )
    assert req["applicationId"] == "00abc123"
    assert req["executionRoleArn"] == "arn:aws:iam::111122223333:role/kit-recovery"
    drv = req["jobDriver"]["sparkSubmit"]
    assert drv["entryPoint"] == "s3://kit-scripts-111122223333/recovery/recover_entry.py"
    args = drv["entryPointArguments"]
    assert args[:2] == ["--catalog-mode", "client"]
    assert args[args.index("--replica-warehouse") + 1] == ARN
    assert args[args.index("--target-namespace") + 1] == "recovered"
    assert args[-4:] == ["--namespace", "analytics", "--as-of", "2025-12-03T13:53:20Z"]
    params = drv["sparkSubmitParameters"]
    assert (
        "--jars s3://kit-scripts-111122223333/recovery/jars/a.jar,s3://kit-scripts-111122223333/recovery/jars/b.jar"
        in params
    )
    assert "--py-files s3://kit-scripts-111122223333/recovery/jobs.zip" in params
    assert req["configurationOverrides"]["monitoringConfiguration"]["s3MonitoringConfiguration"]["logUri"] == (
        "s3://kit-logs-111122223333/emr/"
    )
    assert (
        driver_log_location("s3://l/emr/", "app", "run")
        == "s3://l/emr/applications/app/jobs/run/SPARK_DRIVER/stdout.gz"
    )
    with pytest.raises(ValueError):
        remote_args(outputs, ["--outputs", "x"])


def test_jobs_zip_has_the_recovery_package() -> None:
    import io
    import zipfile

    names = zipfile.ZipFile(io.BytesIO(jobs_zip())).namelist()
    kit = "s3tables_kit/"
    assert {f"{kit}jobs/recover/cli.py", f"{kit}jobs/spark.py", f"{kit}jobs/recover_entry.py"} <= set(names)
    assert f"{kit}__init__.py" in names and f"{kit}jobs/vault/backup.py" in names  # the scheduled backup's
    # what no entry imports stays out: the failover tool, the on-call tools no job reaches
    assert not any(n.startswith((f"{kit}jobs/failover/", f"{kit}jobs/ops/audit")) for n in names)
    # the contracts the jobs import (s3tables_kit.jobs.rehearse imports s3tables_kit.topology.contract at module level)
    assert {f"{kit}topology/__init__.py", f"{kit}topology/outputs.py", f"{kit}topology/contract.py"} <= set(names)


def test_jobs_zip_imports_alone(tmp_path: Path) -> None:
    """Unzipped as --py-files puts it on the driver: the entry points' modules import from the zip alone (no
    repository on the path), so nothing they import at module level was left out of the package."""
    import io
    import subprocess
    import sys
    import zipfile

    zipfile.ZipFile(io.BytesIO(jobs_zip())).extractall(tmp_path)
    probe = (
        "import sys, os; here = os.getcwd(); "
        "sys.path[:] = [here] + [p for p in sys.path if p and not os.path.isdir(os.path.join(p, 's3tables_kit'))]; "
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__]; "
        "import s3tables_kit.jobs.rehearse, s3tables_kit.jobs.recover.cli; "
        "kit = [m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 's3tables_kit']; "
        "outside = [f for f in kit if f and not f.startswith(here)]; assert not outside, outside; "
        "assert 's3tables_kit.infra' not in sys.modules and 's3tables_kit.policies' not in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
