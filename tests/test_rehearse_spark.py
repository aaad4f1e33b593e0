"""The recovery rehearsal on real local Iceberg tables (one shared SparkSession): recover, verify, measure, drop."""

from __future__ import annotations

import contextlib
import io
import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.localreplica import file_uri, replicate_table
from s3tables_kit.jobs import rehearse
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.spark import add_catalogs

pytestmark = pytest.mark.spark
SRC, REP, TGT = "rh_source", "rh_replica", "rh_target"


@pytest.fixture(scope="module")
def catalogs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[CatalogSpec, CatalogSpec, Path]:
    root = tmp_path_factory.mktemp("rehearse")
    whs = {k: root / k for k in ("source", "replica", "target")}
    for p in whs.values():
        p.mkdir()
    src = CatalogSpec(SRC, "hadoop", file_uri(whs["source"]))
    rep = CatalogSpec(REP, "hadoop", file_uri(whs["replica"]))
    tgt = CatalogSpec(TGT, "hadoop", file_uri(whs["target"]))
    add_catalogs(spark, {**catalog_conf(src), **catalog_conf(rep), **catalog_conf(tgt)})
    spark.sql(f"CREATE NAMESPACE {SRC}.sales")
    spark.sql(f"CREATE TABLE {SRC}.sales.orders (id int, amount double) USING iceberg")
    spark.sql(f"INSERT INTO {SRC}.sales.orders VALUES (1, 1.0), (2, 2.0)")
    spark.sql(f"INSERT INTO {SRC}.sales.orders VALUES (3, 3.0)")
    replicate_table(spark, SRC, whs["source"], REP, whs["replica"], Ident.parse("sales.orders"))
    time.sleep(0.2)
    return rep, tgt, root


def _rehearse(spark: Any, catalogs: Any, tables: list[str], reports: str, **kw: Any) -> rehearse.RehearsalResult:
    """One rehearsal of `tables` into the namespace `rehearsal`, as of now (`kw`: `now`, `max_lag`)."""
    rep, tgt, root = catalogs
    return rehearse.rehearse(
        kit="t",
        replica=rep,
        target=tgt,
        tables=tables,
        namespace="rehearsal",
        offset=timedelta(0),
        spark=spark,
        report_dir=root / reports,
        **kw,
    )


def test_rehearsal_recovers_verifies_measures_and_drops(spark: Any, catalogs: Any) -> None:
    root = catalogs[2]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {TGT}.rehearsal")
    spark.sql(f"CREATE TABLE {TGT}.rehearsal.stale (x int) USING iceberg")  # an interrupted earlier rehearsal
    res = _rehearse(spark, catalogs, ["sales.orders"], "reports", max_lag=timedelta(hours=1))
    assert res.succeeded and res.outcome == "SUCCEEDED", res
    assert res.stale == {} and res.recovered_points["sales.orders"] is not None  # a fresh point: no finding
    assert res.verdicts == {"sales.orders": "verified"} and res.recovery_exit_code == 0
    assert res.rto_seconds > 0
    assert res.dropped == ["rehearsal.orders"] and res.leftovers == []
    assert spark.sql(f"SHOW TABLES IN {TGT}.rehearsal").count() == 0
    assert spark.sql(f"SELECT count(*) FROM {REP}.sales.orders").first()[0] == 3  # replica untouched
    report = json.loads(rehearse.write_report(res, root / "reports").read_text())
    assert report["succeeded"] is True and report["tables"] == ["sales.orders"]
    assert "rehearsed RTO" in rehearse.render(res)


def test_failed_rehearsal_is_reported_and_leaves_nothing(spark: Any, catalogs: Any) -> None:
    res = _rehearse(spark, catalogs, ["sales.orders", "sales.missing"], "reports-failed")
    assert not res.succeeded
    assert res.recovery_exit_code == 2  # the plan names the missing table; nothing is written
    assert res.leftovers == [] and spark.sql(f"SHOW TABLES IN {TGT}.rehearsal").count() == 0
    data = rehearse.metric_data(
        "t", succeeded=res.succeeded, seconds=res.rto_seconds, tables=2, at=rehearse.datetime.now(rehearse.UTC)
    )
    assert data[0]["MetricName"] == rehearse.SUCCEEDED and data[0]["Value"] == 0.0


def test_rehearsal_of_a_stale_replica_is_a_finding_not_a_success(spark: Any, catalogs: Any) -> None:
    """The replica received its last commit before the lag budget (here 0.1 s: the fixture waits 0.2 s after
    replicating, and a recovery cannot be as of a future instant): "as of now" resolves to that snapshot, which
    recovers and verifies, and the rehearsal reports it STALE, not SUCCEEDED."""
    root = catalogs[2]
    budget = timedelta(milliseconds=100)
    res = _rehearse(spark, catalogs, ["sales.orders"], "reports-stale", max_lag=budget)
    assert res.verdicts == {"sales.orders": "verified"} and res.recovery_exit_code == 0  # it did recover
    assert not res.succeeded and res.outcome == "STALE"
    assert list(res.stale) == ["sales.orders"] and res.stale["sales.orders"] > budget.total_seconds()
    assert "STALE (budget 0s)" in rehearse.render(res) and res.leftovers == []
    assert json.loads(rehearse.write_report(res, root / "reports-stale").read_text())["outcome"] == "STALE"


def test_a_future_dated_commit_fails_the_rehearsal_and_as_of_refuses_it(spark: Any, catalogs: Any) -> None:
    """Last in this module (it changes the replica for good): a commit whose snapshot is dated a day ahead (its log
    entry after the others, as Iceberg's reader requires; a log going back more than a minute is refused by Iceberg
    itself, "Expected sorted snapshot log entries"). Freshness would read its age as 0 for good and `--as-of` would
    trust the log; the rehearsal fails instead, `--as-of` refuses in one line naming the snapshots, and recovery by
    `--snapshot-id` restores the genuine state."""
    from s3tables_kit.jobs.recover.cli import main as recover_main
    from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource

    root = catalogs[2]
    genuine = sorted(spark.sql(f"SELECT * FROM {REP}.sales.orders").collect())
    source_wh, replica_wh = root / "source", root / "replica"
    spark.sql(f"INSERT INTO {SRC}.sales.orders VALUES (666, -1.0)")  # the attacker's commit, replicated
    replicate_table(spark, SRC, source_wh, REP, replica_wh, Ident.parse("sales.orders"))
    meta_dir = replica_wh / "sales/orders/metadata"
    location = HadoopMetadataSource(file_uri(replica_wh)).metadata_location(Ident.parse("sales.orders"))
    assert location is not None
    doc = json.loads(Path(location.removeprefix("file:")).read_text())
    forged = doc["current-snapshot-id"]
    ahead = max(s["timestamp-ms"] for s in doc["snapshots"]) + 86_400_000
    for s in doc["snapshots"]:
        if s["snapshot-id"] == forged:
            s["timestamp-ms"] = ahead
    doc["snapshot-log"][-1]["timestamp-ms"] = doc["last-updated-ms"] = ahead
    version = int((meta_dir / "version-hint.text").read_text()) + 1
    (meta_dir / f"v{version}.metadata.json").write_text(json.dumps(doc))  # a metadata file written by hand
    (meta_dir / "version-hint.text").write_text(str(version))

    res = _rehearse(spark, catalogs, ["sales.orders"], "reports-future")
    assert not res.succeeded and res.outcome == "FAILED" and res.recovery_exit_code == 2 and res.leftovers == []
    args = ["--catalog-mode", "hadoop", "--replica-warehouse", str(replica_wh), "--target-warehouse",
            str(root / "target"), "--table", "sales.orders", "--target-namespace", "genuine",
            "--report", str(root / "reports-genuine")]  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert recover_main([*args, "--as-of", rehearse.datetime.now(rehearse.UTC).isoformat()]) == 2
    (line,) = [x for x in out.getvalue().splitlines() if "refused" in x]  # one line, nothing written
    assert "--snapshot-id" in line and "is dated" in line and str(forged) in line
    good = max((s for s in doc["snapshots"] if s["snapshot-id"] != forged), key=lambda s: s["timestamp-ms"])
    assert recover_main([*args, "--snapshot-id", str(good["snapshot-id"])], lambda conf: spark) == 0
    assert sorted(spark.sql(f"SELECT * FROM {TGT}.genuine.orders").collect()) == genuine
