"""The backup's planning without Spark (jobs/vault/plan.py) and its command line's refusals (jobs/vault/cli.py): what
is copied, what is reused and how its checksum is known, what of RewriteTablePath's output is uploaded, retention
forwards only, the point's assembly, and bad arguments refused with exit 2 before a JVM starts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from s3tables_kit.jobs.kernel.idents import ArgError
from s3tables_kit.jobs.vault import plan as vp
from s3tables_kit.jobs.vault.cli import main, parser, request_from_args
from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint
from s3tables_kit.jobs.vault.plan import SnapshotFile, TableSnapshot

ROOT = Path(__file__).resolve().parents[1]
LOC = "s3://abc--table-s3/orders"
SNAP = TableSnapshot("sales", "orders", "u-1", LOC, 42, 1_000, f"{LOC}/metadata/00002.metadata.json", "arn:replica")
FILES = [
    SnapshotFile(f"{LOC}/metadata/00002.metadata.json", "metadata"),
    SnapshotFile(f"{LOC}/metadata/snap-42.avro", "manifest-list"),
    SnapshotFile(f"{LOC}/metadata/m1.avro", "manifest", 300),
    SnapshotFile(f"{LOC}/data/a.parquet", "data", 1000),
    SnapshotFile(f"{LOC}/data/b.parquet", "data", 2000),
    SnapshotFile(f"{LOC}/data/b.parquet", "data", 2000),  # named by two manifests: held once
    SnapshotFile(f"{LOC}/data/d-deletes.parquet", "position-deletes", 50),
]


def _point(files: list[BackupFile]) -> BackupPoint:
    restore = "restorable/41/r0/metadata/00001.metadata.json"
    files = [
        *files,
        BackupFile("metadata/00001.metadata.json", "metadata", 9, 9),
        BackupFile(restore, "restorable", 1, 1),
    ]
    return BackupPoint(
        "sales",
        "orders",
        "u-1",
        41,
        900,
        "metadata/00001.metadata.json",
        restore,
        LOC,
        "arn:replica",
        "t",
        tuple(files),
    )


def test_a_first_backup_copies_every_file_once() -> None:
    plan = vp.plan_backup(SNAP, "vault", FILES, {}, None)
    assert plan.to_copy == sorted({f.path[len(LOC) + 1 :] for f in FILES})
    items = plan.copy_items()
    assert len(items) == 6 and plan.bytes_to_copy() == 3350
    item = next(i for i in items if i.src.endswith("/data/a.parquet"))
    assert item.dst == item.alt_dst == "s3://vault/v1/tables/sales/orders/u-1/files/data/a.parquet"
    assert item.kind == "data" and item.size == 1000  # byte for byte, a taken key never written elsewhere


def test_held_files_are_reused_trusting_the_newest_point_only_at_the_same_size() -> None:
    newest = _point(
        [BackupFile("data/a.parquet", "data", 1000, 7, "va"), BackupFile("metadata/m1.avro", "manifest", 300, 8, "vm")]
    )
    held = {"data/a.parquet": 1000, "metadata/m1.avro": 300, "data/d-deletes.parquet": 50}
    plan = vp.plan_backup(SNAP, "vault", FILES, held, newest)
    assert plan.known == {"data/a.parquet": (1000, 7, "va"), "metadata/m1.avro": (300, 8, "vm")}
    assert plan.to_digest == ["data/d-deletes.parquet"]  # a killed run's: compared with the replica before use
    assert plan.to_copy == ["data/b.parquet", "metadata/00002.metadata.json", "metadata/snap-42.avro"]


def test_a_held_object_of_another_size_is_refused_not_overwritten() -> None:
    with pytest.raises(vp.BackupRefused, match="never overwritten"):
        vp.plan_backup(SNAP, "vault", FILES, {"data/b.parquet": 1999}, None)
    with pytest.raises(vp.BackupRefused, match="not under the table location"):
        vp.plan_backup(SNAP, "vault", [SnapshotFile("s3://elsewhere/x.parquet", "data", 1)], {}, None)


def test_only_rewritten_metadata_is_uploaded_under_the_run_s_restore_location() -> None:
    plan = vp.plan_backup(SNAP, "vault", FILES, {}, None)
    key, uri = vp.restore_root(plan, "r1")
    assert key == "v1/tables/sales/orders/u-1/restorable/42/r1"
    assert uri == f"s3://vault/{key}"
    stage = "file:/tmp/stage"
    rows = [
        (f"{stage}/metadata/00002.metadata.json", f"{uri}/metadata/00002.metadata.json"),
        (f"{stage}/metadata/m1.avro", f"{uri}/metadata/m1.avro"),
        (f"{stage}/data/d-deletes.parquet", f"{uri}/data/d-deletes.parquet"),  # rewritten deletes: originals used
        (f"{LOC}/data/a.parquet", f"{uri}/data/a.parquet"),  # a table file: held under files/
    ]
    up = vp.restorable_uploads(rows, stage, uri, key, ["data/d-deletes.parquet"])
    assert up == [
        (f"{stage}/metadata/00002.metadata.json", f"{key}/metadata/00002.metadata.json"),
        (f"{stage}/metadata/m1.avro", f"{key}/metadata/m1.avro"),
    ]
    with pytest.raises(vp.BackupRefused, match="outside the restore location"):
        vp.restorable_uploads([(f"{stage}/x.avro", "s3://vault/other/x.avro")], stage, uri, key)


def test_the_restorable_metadata_holds_the_point_s_snapshot_only() -> None:
    snap = {"snapshot-id": 42, "timestamp-ms": 2_000, "manifest-list": f"{LOC}/metadata/snap-42.avro"}
    old = {"snapshot-id": 41, "timestamp-ms": 1_000, "manifest-list": f"{LOC}/metadata/snap-41.avro"}
    doc = {
        "format-version": 2,
        "location": LOC,
        "current-snapshot-id": 42,
        "schemas": [{"schema-id": 0}, {"schema-id": 1}],
        "partition-specs": [{"spec-id": 0}, {"spec-id": 1}],
        "snapshots": [old, snap],
        "snapshot-log": [{"timestamp-ms": 1_000, "snapshot-id": 41}, {"timestamp-ms": 2_000, "snapshot-id": 42}],
        "metadata-log": [{"timestamp-ms": 900, "metadata-file": f"{LOC}/metadata/00001.metadata.json"}],
        "refs": {"main": {"snapshot-id": 42, "type": "branch"}, "audit": {"snapshot-id": 41, "type": "tag"}},
        "statistics": [{"snapshot-id": 41, "statistics-path": "a"}, {"snapshot-id": 42, "statistics-path": "b"}],
    }
    out = vp.trim_metadata(doc, 42)
    assert out["snapshots"] == [snap] and out["metadata-log"] == [] and out["refs"] == {"main": doc["refs"]["main"]}
    assert out["snapshot-log"] == [{"timestamp-ms": 2_000, "snapshot-id": 42}]
    assert out["statistics"] == [{"snapshot-id": 42, "statistics-path": "b"}] and out["partition-statistics"] == []
    assert out["schemas"] == doc["schemas"] and out["partition-specs"] == doc["partition-specs"]
    assert doc["snapshots"] == [old, snap]  # the input is not changed
    with pytest.raises(vp.BackupRefused, match="current snapshot is 42, not 41"):
        vp.trim_metadata(doc, 41)


def test_retention_moves_forwards_only() -> None:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    until = vp.retain_until(at, 365)
    assert until == at + timedelta(days=365)
    assert vp.needs_extension(None, until) and vp.needs_extension(until - timedelta(seconds=1), until)
    assert not vp.needs_extension(until, until) and not vp.needs_extension(until + timedelta(days=1), until)


def test_the_point_lists_every_file_and_refuses_a_missing_one() -> None:
    plan = vp.plan_backup(SNAP, "vault", FILES, {}, None)
    sizes = {rel: (max(f.size, 5), 11, f"v-{rel}") for rel, f in plan.files.items()}
    restore = "restorable/42/r1/metadata/00002.metadata.json"
    at = datetime(2026, 11, 29, 1, 2, 3, tzinfo=UTC)
    point = vp.build_point(plan, vp.Written(sizes), {restore: (77, 12, "v-r")}, restore, at)
    assert BackupPoint.from_json(point.to_json()) == point
    assert {f.relative: f.version for f in point.files}["data/a.parquet"] == "v-data/a.parquet"
    assert point.metadata == "metadata/00002.metadata.json" and point.backed_up_at == "2026-11-29T01:02:03+00:00"
    assert {f.kind for f in point.files} == {
        "metadata",
        "manifest-list",
        "manifest",
        "data",
        "position-deletes",
        "restorable",
    }
    with pytest.raises(vp.BackupRefused, match="without an S3 version id"):  # a restore reads exactly these versions
        vp.build_point(plan, vp.Written(sizes), {restore: (77, 12, "")}, restore, at)
    del sizes["data/a.parquet"]
    with pytest.raises(vp.BackupRefused, match="not in the vault"):
        vp.build_point(plan, vp.Written(sizes), {restore: (77, 12, "v-r")}, restore, at)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--replica-warehouse", "/w", "--vault-bucket", "v", "--retention-days", "1"], "name what to back up"),
        (["--table", "a.b"], "--retention-days"),
        (["--table", "a.b", "--replica-warehouse", "/w", "--vault-bucket", "v", "--retention-days", "0"], "at least 1"),
        (["--table", "a.b", "--outputs", "o.json", "--vault-bucket", "v"], "not both"),
        (["--table", "a.b", "--part-size-mb", "4"], "at least 5"),
    ],
)
def test_bad_arguments_are_refused_before_a_jvm(args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    def no_spark(conf: dict[str, str]) -> object:
        raise AssertionError("no Spark session for refused arguments")

    assert main(args, no_spark) == 2  # type: ignore[arg-type]
    assert says in capsys.readouterr().err


def test_outputs_without_a_vault_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--table", "a.b", "--outputs", str(tmp_path / "missing.json")]) == 2
    assert "error:" in capsys.readouterr().err


def test_the_configured_tables_are_backed_up_when_none_are_named(tmp_path: Path) -> None:
    seed = "\n".join(  # the seed's own selection replaced by each case's
        line for line in (ROOT / "examples/seed.toml").read_text().splitlines() if "# backed up every" not in line
    )
    config = tmp_path / "kit.toml"
    config.write_text(seed.replace("[vault]\n", '[vault]\ntables = ["analytics.orders", "analytics.*"]\n', 1))
    local = ["--replica-warehouse", str(tmp_path), "--vault-bucket", "v", "--retention-days", "1", "--point-key", "k"]
    req = request_from_args(parser().parse_args([*local, "--config", str(config)]))
    assert req.selection == (("analytics.orders",), ("analytics",))
    named = request_from_args(parser().parse_args([*local, "--config", str(config), "--table", "a.b"]))
    assert named.selection == (("a.b",), ())  # named tables win over the configured ones
    config.write_text(seed.replace("[vault]\n", '[vault]\ntables = ["analytics"]\n', 1))
    with pytest.raises(ArgError, match=r"namespace\.name"):
        request_from_args(parser().parse_args([*local, "--config", str(config)]))


def test_the_outputs_name_the_vault_and_the_recovery_replica(tmp_path: Path) -> None:
    import json

    from s3tables_kit.topology.config import load_config
    from s3tables_kit.topology.outputs import outputs_doc, parse_outputs

    cfg = load_config(ROOT / "examples/seed.toml")
    doc = outputs_doc(cfg)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(doc))
    req = request_from_args(parser().parse_args(["--outputs", str(outputs), "--namespace", "analytics"]))
    assert req.vault.point_key == doc["vault"]["kit_vault"]["point_key_arn"]  # the vault stack's point key
    del doc["vault"]["kit_vault"]["point_key_arn"]
    outputs.write_text(json.dumps(doc))
    with pytest.raises(ArgError, match="point key"):  # a point nobody can verify is never written
        request_from_args(parser().parse_args(["--outputs", str(outputs), "--namespace", "analytics"]))
    doc["vault"]["kit_vault"]["point_key_arn"] = "arn:aws:kms:us-west-2:111122223333:key/points"
    outputs.write_text(json.dumps(doc))
    req = request_from_args(parser().parse_args(["--outputs", str(outputs), "--namespace", "analytics"]))
    parsed = parse_outputs(doc)
    assert parsed.vault is not None and req.vault.bucket == parsed.vault.bucket_name
    assert (req.vault.region, req.vault.retention_days, req.vault.storage_class) == ("us-west-2", 365, "GLACIER_IR")
    assert req.replica.warehouse == parsed.recovery_replica.table_bucket_arn and req.replica.mode == "client"
    assert req.replica.extra == {"io-impl": "org.apache.iceberg.io.ResolvingFileIO"}  # staging on the driver's disk
    assert req.selection == ((), ("analytics",))
    del doc["vault"]
    outputs.write_text(json.dumps(doc))
    with pytest.raises(ArgError, match="no kit_vault"):
        request_from_args(parser().parse_args(["--outputs", str(outputs), "--namespace", "analytics"]))
