"""The rehearsal's restore from the vault, its pure parts (which tables, the verdict, the metrics, the schedule's
arguments); the Spark step is in tests/test_recover_vault_spark.py, on a real vault."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from s3tables_kit.infra.constructs.rehearsal import _rehearsal_job_args
from s3tables_kit.jobs import rehearse
from s3tables_kit.jobs.rehearse_vault import NO_POINT, VaultRow, backed_up, vault_metrics, vault_ok
from s3tables_kit.topology.config import load_config

ROOT = Path(__file__).resolve().parents[1]
AT = datetime(2026, 11, 29, tzinfo=UTC)


def _result(*rows: VaultRow, stale: bool = False) -> rehearse.RehearsalResult:
    res = rehearse.RehearsalResult("t", "r1", AT.isoformat(), AT.isoformat(), "rehearsal", ["sales.orders"])
    res.verdicts = {"sales.orders": "verified"}
    res.vault = list(rows)
    res.stale = {"sales.orders": 7200.0} if stale else {}
    return res


def test_the_tables_the_vault_backs_up_are_matched_by_name_or_namespace() -> None:
    tables = ["sales.orders", "sales.returns", "ops.events"]
    assert backed_up(tables, ["sales.*"]) == ["sales.orders", "sales.returns"]
    assert backed_up(tables, ["ops.events", "hr.*"]) == ["ops.events"]
    assert backed_up(tables, []) == []


def test_a_failed_restore_fails_the_rehearsal_and_a_missing_point_is_a_finding() -> None:
    verified = VaultRow("sales.orders", snapshot_id=1, verdict="verified", exit_code=0, seconds=2.5)
    missing = VaultRow("sales.returns", finding=NO_POINT)
    failed = VaultRow("sales.orders", snapshot_id=1, verdict="failed", exit_code=1, error="CRC32 differs")
    assert vault_ok([verified, missing]) and vault_ok([])
    assert not vault_ok([verified, failed])
    # a stale replica point stays a finding only while the vault restores are fine
    assert _result(verified, stale=True).outcome == "STALE"
    assert _result(failed, stale=True).outcome == "FAILED"
    text = rehearse.render(_result(verified, missing, failed))
    assert f"sales.returns: FINDING: {NO_POINT}" in text and "error: CRC32 differs" in text
    rows = _result(verified, failed).to_json()["rows"]
    assert [(r["source"], r["verdict"], r.get("ok")) for r in rows] == [
        ("replica", "verified", None),
        ("vault", "verified", True),
        ("vault", "failed", False),
    ]


def test_the_metrics_keep_their_names_and_add_the_vault_s() -> None:
    rows = [
        VaultRow("sales.orders", verdict="verified", exit_code=0, seconds=2.0),
        VaultRow("sales.returns", finding=NO_POINT, seconds=0.5),
    ]
    base = rehearse.metric_data("t", succeeded=True, seconds=10.0, tables=1, at=AT)
    data = rehearse.metric_data("t", succeeded=True, seconds=10.0, tables=1, at=AT, extra=vault_metrics(rows))
    assert [d["MetricName"] for d in base] == [rehearse.SUCCEEDED, rehearse.RTO, rehearse.TABLES, rehearse.STALE]
    assert data[:4] == base
    assert {d["MetricName"]: (d["Value"], d["Unit"]) for d in data[4:]} == {
        "RehearsalVaultTables": (1.0, "Count"),
        "RehearsedVaultRestoreSeconds": (2.5, "Seconds"),
        "VaultPointsRefused": (0.0, "Count"),
    }
    assert vault_metrics([]) == {}  # no table in the vault: the metrics of a rehearsal without one


def test_the_schedule_passes_the_vault_and_its_tables_and_the_job_reads_them() -> None:
    cfg = load_config(ROOT / "examples/seed.toml")
    assert cfg.vault is not None and cfg.vault.tables
    args = _rehearsal_job_args(cfg)
    ns = rehearse.parser().parse_args(args)
    side = rehearse.vault_side(ns)
    assert side is not None and side.root == f"s3://{cfg.vault.bucket_name(cfg.kit.name)}"
    assert side.region == cfg.vault.region and list(side.tables) == cfg.vault.tables
    assert rehearse.vault_side(rehearse.parser().parse_args(args[: args.index("--vault")])) is None
