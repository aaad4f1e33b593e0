"""Many-table recovery on local Spark with real Iceberg tables on disk: one copy job and one check job for
the files of many tables, one commit per table carrying data, lineage and `verified`, nothing committed when a check
fails; tables that need the per-table path (delete files) still take it in the same run."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from harness.localreplica import file_uri
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.recover import batch
from s3tables_kit.jobs.recover.job import Outcome, RecoveryRequest, run
from s3tables_kit.jobs.recover.model import LINEAGE, PROP_VERIFIED
from s3tables_kit.jobs.spark import add_catalogs

pytestmark = pytest.mark.spark

W, REP, TGT = "bt_writer", "bt_replica", "bt_target"
N = 12


@pytest.fixture(scope="module")
def lake(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("batch")
    (root / "replica").mkdir()
    writer = CatalogSpec(W, "hadoop", file_uri(root / "replica"))
    rep = CatalogSpec(REP, "hadoop", file_uri(root / "replica"))
    add_catalogs(spark, {**catalog_conf(writer), **catalog_conf(rep)})
    spark.sql(f"CREATE NAMESPACE {W}.fleet")
    for i in range(N):
        spark.sql(
            f"CREATE TABLE {W}.fleet.t{i:02d} (id bigint, cat string) USING iceberg PARTITIONED BY (cat) "
            "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', 'team'='fleet')"
        )
        spark.sql(f"INSERT INTO {W}.fleet.t{i:02d} SELECT id, concat('c', id % 3) FROM range(0, {100 + i}, 1, 2)")
        spark.sql(f"INSERT INTO {W}.fleet.t{i:02d} VALUES ({10_000 + i}, 'late')")
    spark.sql(f"DELETE FROM {W}.fleet.t00 WHERE id % 5 = 0")  # position deletes: the per-table path
    return root


def _run(spark: Any, root: Path, target: str) -> tuple[Outcome, str]:
    tgt = CatalogSpec(TGT + target, "hadoop", file_uri(root / target))
    (root / target).mkdir(exist_ok=True)
    add_catalogs(spark, catalog_conf(tgt))
    req = RecoveryRequest(
        CatalogSpec(REP, "hadoop", file_uri(root / "replica")),
        tgt,
        namespaces=["fleet"],
        report_dir=root / "reports",
        parallelism=2,
    )
    out, err = io.StringIO(), io.StringIO()
    return run(req, lambda conf: spark, out, err), out.getvalue() + err.getvalue()


def _metadata_files(root: Path, target: str, table: str) -> list[str]:
    return sorted(p.name for p in (root / target / "fleet" / table / "metadata").glob("*.metadata.json"))


def test_many_tables_one_copy_job_one_commit_each(spark: Any, lake: Path) -> None:
    outcome, text = _run(spark, lake, "one")
    assert outcome.exit_code == 0, text[-3000:]
    by = {r.replica_table: r for r in outcome.results}
    assert all(r.verdict == "verified" for r in by.values()), text[-3000:]
    # one copy job and one check job for the 11 batched tables (t00 has delete files: the per-table path)
    run_id = outcome.report.parent.name.rsplit("-", 1)[-1] if outcome.report else ""
    tracker = spark.sparkContext.statusTracker()
    assert len(tracker.getJobIdsForGroup(f"kit-copy-{run_id}-batch")) == 1
    assert len(tracker.getJobIdsForGroup(f"kit-copy-{run_id}-batch-check")) == 1
    assert "file copy of 11 table(s)" in text
    assert not by["fleet.t00"].phases and by["fleet.t00"].copy_mode == "files"
    for i in range(1, N):
        r, name = by[f"fleet.t{i:02d}"], f"t{i:02d}"
        assert set(r.phases) == {"stage", "copy", "check", "append", "verify", "commit"}
        assert r.rows == 100 + i + 1 and r.verification and r.verification["verified_in_commit"]
        # data, lineage and verified in ONE catalog commit: the table's only metadata file has all of them
        assert _metadata_files(lake, "one", name) == ["v1.metadata.json"]
        doc = json.loads((lake / "one" / "fleet" / name / "metadata" / "v1.metadata.json").read_text())
        assert PROP_VERIFIED in doc["properties"] and doc["properties"]["team"] == "fleet"
        assert doc["properties"][LINEAGE.snapshot_id] == str(r.snapshot_id) and len(doc["snapshots"]) == 1
        diff = spark.sql(
            f"SELECT count(*) FROM ((SELECT * FROM {REP}.fleet.{name} EXCEPT ALL SELECT * FROM {TGT}one.fleet.{name}) "
            f"UNION ALL (SELECT * FROM {TGT}one.fleet.{name} EXCEPT ALL SELECT * FROM {REP}.fleet.{name}))"
        ).first()[0]
        assert diff == 0
    # the per-table path still commits twice (data, then verified)
    assert len(_metadata_files(lake, "one", "t00")) == 2
    # a rerun finds every table verified from the same snapshot: nothing to do
    again, _ = _run(spark, lake, "one")
    assert again.exit_code == 0 and {r.verdict for r in again.results} == {"skipped"}


def test_a_failed_check_commits_nothing_and_the_other_tables_are_recovered(
    spark: Any, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = batch.source_counts

    def off_by_one_for_t03(data: list[Any]) -> dict[Any, list[int]]:
        counts = real(data)
        if any("/t03/" in f.path for f in data):  # the replica's manifests "say" one more record than was committed
            key = sorted(counts)[0]
            counts[key][1] += 1
        return counts

    monkeypatch.setattr(batch, "source_counts", off_by_one_for_t03)
    outcome, _ = _run(spark, lake, "two")
    by = {r.replica_table: r for r in outcome.results}
    assert outcome.exit_code == 1
    bad = by["fleet.t03"]
    assert bad.verdict == "failed" and "nothing committed" in bad.message and "records" in bad.message
    assert not spark.catalog.tableExists(f"{TGT}two.fleet.t03")
    assert bad.leftovers and "next run removes them" in bad.leftover_note
    assert all(r.verdict == "verified" for k, r in by.items() if k != "fleet.t03")
    monkeypatch.setattr(batch, "source_counts", real)
    again, _ = _run(spark, lake, "two")  # the rerun removes the leftovers and recovers t03
    assert again.exit_code == 0
    assert {r.replica_table: r.verdict for r in again.results}["fleet.t03"] == "verified"
