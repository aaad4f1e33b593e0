"""`recover --from-vault` on local Spark: backup points of a real Iceberg table made by the backup job
(`jobs/vault/backup.py`) in a vault bucket with Object Lock on the local stand-in, restored through the recovery's
file copy into a local target.

The table stands in for the replica: backed up (point 1), changed twice (a copy-on-write DELETE rewrites every data
file, then a merge-on-read DELETE adds position deletes), backed up again (point 2), its first two snapshots expired
(the files only they held are deleted) and finally the table dropped. Beside the two points, the vault holds what an
attacker with a write could leave under `points/`: a point MACed by the point key but dated a year ahead, a newer one
not MACed by it, and a malformed object; every restore skips and reports them. Every restore is read back with
pyiceberg from the restored table's own metadata and Parquet files (not through Spark).
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from harness.localreplica import file_uri
from harness.world import create_point_key, create_vault_bucket
from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.jobs.recover.cli import main
from s3tables_kit.jobs.recover.fromvault import VaultRestore, open_point
from s3tables_kit.jobs.recover.metadata import HadoopMetadataSource
from s3tables_kit.jobs.recover.model import LINEAGE, PROP_REPLICA_METADATA, PROP_VERIFIED
from s3tables_kit.jobs.vault.backup import BackupContext, backup_table
from s3tables_kit.jobs.vault.layout import BackupPoint, point_key
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.reader import VaultReader, list_points
from s3tables_kit.jobs.vault.store import VaultTarget
from tests.recover_world import Warehouses, table_metadata
from tests.spark_fixtures import stand_in_credentials

pytestmark = pytest.mark.spark

SRC, TGT = "vr_source", "vr_target"
T = Ident("sales", "orders")
REGION = "us-east-1"
CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}


@dataclass
class World(Warehouses):
    endpoint: str = ""
    s3: Any = None
    bucket: str = ""
    point_key: str = ""
    points: list[BackupPoint] = field(default_factory=list)
    rows: list[list[tuple[Any, ...]]] = field(default_factory=list)  # the table's rows at each point

    @property
    def vault(self) -> str:
        return f"s3://{self.bucket}"


def _rows(spark: Any, relation: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {relation}").collect())


@pytest.fixture(scope="module")
def world(spark: Any, moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("fromvault"), SRC, TGT, endpoint=moto_endpoint)
    w.s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION, aws_access_key_id="testing",
                        aws_secret_access_key="testing", config=Config(s3={"addressing_style": "path"}))  # fmt: skip
    w.bucket = create_vault_bucket(w.s3, days=1)
    kms = boto3.client("kms", endpoint_url=moto_endpoint, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")  # fmt: skip
    w.point_key = create_point_key(kms)
    with stand_in_credentials(spark, CREDS), pytest.MonkeyPatch.context() as mp:
        for k, v in CREDS.items():
            mp.setenv(k, v)
        _build(spark, w)
        yield w


def _build(spark: Any, w: World) -> None:
    sql = w.writer(spark, SRC, w.replica_wh)
    sql(
        f"CREATE TABLE {SRC}.{T} (id bigint NOT NULL, day date, amount double) USING iceberg "
        "PARTITIONED BY (months(day)) TBLPROPERTIES ('format-version'='2', 'team'='sales')"
    )
    sql(
        f"INSERT INTO {SRC}.{T} SELECT id, date_add(DATE '2025-10-01', CAST(id % 60 AS int)), id * 1.5 "
        "FROM range(0, 400)"
    )
    vault = VaultTarget(w.bucket, REGION, retention_days=1, endpoint=w.endpoint, point_key=w.point_key)
    changes = (
        f"DELETE FROM {SRC}.{T} WHERE id % 3 = 0",  # copy-on-write: every data file rewritten
        f"ALTER TABLE {SRC}.{T} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')",
        f"DELETE FROM {SRC}.{T} WHERE id % 5 = 1",  # position deletes
    )
    for todo in ((), changes):
        for change in todo:
            sql(change)
        w.rows.append(_rows(spark, f"{SRC}.{T}"))
        ctx = BackupContext(spark, SRC, file_uri(w.replica_wh), vault, uuid.uuid4().hex[:8], lambda m: None)
        done = backup_table(ctx, str(T))
        assert done.status == "backed-up", done.error
    w.points = list(list_points(_reader(w), T.namespace, T.name).points)
    _plant_refusable_points(w)
    # the replica forgets the earlier snapshots: expiry deletes the data files only they held
    sql(f"CALL {SRC}.system.expire_snapshots(table => '{T}', older_than => TIMESTAMP '2100-01-01', retain_last => 1)")
    assert [r[0] for r in sql(f"SELECT snapshot_id FROM {SRC}.{T}.snapshots").collect()] == [w.points[1].snapshot_id]


def _reader(w: World) -> VaultReader:
    return VaultReader(w.vault, REGION, w.endpoint, point_key=PointKey(w.point_key, REGION, w.endpoint))


def _renumbered(p: BackupPoint, sid: int, **changes: Any) -> BackupPoint:
    """`p` as the point of snapshot `sid` (its restorable keys moved along), with `changes`."""
    old, new = f"restorable/{p.snapshot_id}/", f"restorable/{sid}/"
    files = tuple(replace(f, relative=f.relative.replace(old, new, 1)) for f in p.files)
    return replace(p, snapshot_id=sid, restore_metadata=p.restore_metadata.replace(old, new, 1), files=files, **changes)


FUTURE, FORGED, MALFORMED = 7_000_000_001, 7_000_000_002, 7_000_000_003


def _plant_refusable_points(w: World) -> None:
    """Three point objects no restore may trust, each of which would otherwise be "latest" or break the listing."""
    newest, key = w.points[1], PointKey(w.point_key, REGION, w.endpoint)
    year = 365 * 24 * 3600 * 1000
    future = _renumbered(newest, FUTURE, snapshot_timestamp_ms=newest.snapshot_timestamp_ms + year)
    future = replace(future, mac=key.sign(future.canonical()))  # even MACed: dated after S3 wrote it
    forged = _renumbered(newest, FORGED, snapshot_timestamp_ms=newest.snapshot_timestamp_ms + 1, mac=newest.mac)
    for obj, body in ((future, future.to_json()), (forged, forged.to_json())):
        w.s3.put_object(Bucket=w.bucket, Key=obj.key, Body=body.encode(), IfNoneMatch="*")
    malformed = point_key(newest.prefix, MALFORMED)
    w.s3.put_object(Bucket=w.bucket, Key=malformed, Body=b'{"format": 2, "files": [', IfNoneMatch="*")


def _restore(w: World, *extra: str) -> list[str]:
    return [
        "--from-vault", "--vault", w.vault, "--vault-region", REGION, "--endpoint-url", w.endpoint, "--table", str(T),
        "--vault-point-key", w.point_key, "--target-warehouse", str(w.target_wh), "--report", str(w.root / "reports"),
        *extra,
    ]  # fmt: skip


def _read_back(w: World, target: Ident) -> list[tuple[Any, ...]]:
    """The restored table's current rows, read by pyarrow from the data files its own manifests list."""
    from pyiceberg.table import StaticTable

    location = HadoopMetadataSource(w.target.warehouse).metadata_location(target)
    assert location is not None
    arrow = StaticTable.from_metadata(location).scan().to_arrow()
    return sorted(zip(*(arrow.column(c).to_pylist() for c in ("id", "day", "amount")), strict=True))


def test_points_are_listed_readable_and_as_json(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_restore(world, "--list-points")) == 0
    out = capsys.readouterr().out
    assert "sales.orders: 2 backup point(s)" in out and str(world.points[0].snapshot_id) in out
    assert [line.split(":")[0].rsplit("/", 1)[-1] for line in out.splitlines() if "refused backup point" in line] == [
        f"{sid}.json" for sid in (FUTURE, FORGED, MALFORMED)
    ]
    assert "after S3 wrote its object" in out and "not the vault point key" in out and "malformed" in out
    assert main(_restore(world, "--list-points", "--json")) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [p["snapshot_id"] for p in listed[:2]] == [p.snapshot_id for p in world.points]
    assert len(listed) == 5 and all("refused" in p for p in listed[2:])
    assert listed[0]["files"] == len(world.points[0].files) and listed[0]["bytes"] == world.points[0].total_bytes


def test_the_rehearsal_restores_the_newest_point_from_the_vault_as_a_row_of_its_own(spark: Any, world: World) -> None:
    """Before the table is dropped (a later test drops it): the replica's recovery and the vault's restore, both
    verified and both dropped; a table without a point is a finding, an unreadable vault a failed row."""
    from s3tables_kit.jobs import rehearse
    from s3tables_kit.jobs.rehearse_vault import NO_POINT, VaultSide, rehearse_vault, vault_metrics

    side = VaultSide(world.vault, REGION, ("sales.*",), world.endpoint, world.point_key)
    kw: dict[str, Any] = {"target": world.target, "namespace": "rehearsal", "spark": spark}
    res = rehearse.rehearse(kit="t", replica=world.replica, tables=[str(T)], offset=timedelta(0),
                     report_dir=world.root / "rehearsal", vault=side, **kw)  # fmt: skip
    assert res.succeeded and res.outcome == "SUCCEEDED", rehearse.render(res)
    (row,) = res.vault
    assert (
        row.verified
        and row.snapshot_id == world.points[1].snapshot_id  # the newest verified point, not the planted ones
        and row.target == f"{TGT}.rehearsal.orders_vault"
    )
    assert len(row.refused) == 3 and vault_metrics(res.vault)["VaultPointsRefused"] == (3.0, "Count")
    assert [(r["source"], r["verdict"]) for r in res.to_json()["rows"]] == [
        ("replica", "verified"),
        ("vault", "verified"),
    ]
    assert res.dropped == ["rehearsal.orders", "rehearsal.orders_vault"] and res.leftovers == []
    assert vault_metrics(res.vault)["RehearsalVaultTables"] == (1.0, "Count")
    assert "vault:              sales.orders: verified" in rehearse.render(res)
    (none,) = rehearse_vault(side, ["sales.nothing", "other.t"], report_dir=world.root / "rehearsal", **kw)
    assert none.finding == NO_POINT and none.ok and not none.verified
    gone = VaultSide("s3://no-such-vault-bucket", REGION, ("sales.*",), world.endpoint, world.point_key)
    (failed,) = rehearse_vault(gone, [str(T)], report_dir=world.root / "rehearsal", **kw)
    assert not failed.ok and "cannot list" in (failed.error or "")


ACCOUNT = "vault-777777777777-us-east-1"  # an adopted account's bucket of the vault (feeding_account)


def test_two_accounts_same_named_tables_are_backed_up_and_restored_each_to_its_own(
    spark: Any, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The vault's account bucket of another account holds a `sales.orders` of its own, backed up by the same run of
    the backup's command line after the replica's (whose snapshot already has its point): it goes under the account's
    layout segment, and its point, newer than the replica's, is neither the replica's "latest" nor restored for it;
    `recover --from-vault --replica <bucket>` restores the account's rows (before a later test drops the table)."""
    from s3tables_kit.jobs.vault import cli as backup_cli

    wh = world.root / "account-bucket"
    sql = world.writer(spark, "vr_account", wh)
    sql(f"CREATE TABLE vr_account.{T} (id bigint NOT NULL, day date, amount double) USING iceberg")
    sql(f"INSERT INTO vr_account.{T} SELECT id, DATE '2026-01-01', id * 2.0 FROM range(9000, 9040, 1, 1)")
    theirs = [(i, date(2026, 1, 1), i * 2.0) for i in range(9000, 9040)]  # what the account's table holds
    args = ["--replica-warehouse", str(world.replica_wh), "--account-bucket", f"{ACCOUNT}={wh}", "--table", str(T)]
    args += ["--vault-bucket", world.bucket, "--vault-region", REGION, "--retention-days", "1"]
    args += ["--endpoint-url", world.endpoint, "--point-key", world.point_key, "--report", str(world.root / "bk")]
    req = backup_cli.request_from_args(backup_cli.parser().parse_args(args))
    (acct,) = req.account_buckets
    req = replace(req, replica=replace(req.replica, name=SRC),
                  account_buckets=(replace(acct, catalog=replace(acct.catalog, name="vr_account")),))  # fmt: skip
    code, rows = backup_cli.run(req, lambda conf: spark)
    assert code == 0 and [(r.table, r.status) for r in rows] == [
        (str(T), "already-backed-up"),
        (f"{ACCOUNT}:{T}", "backed-up"),
    ], rows
    assert rows[1].point.startswith(f"v1/tables/bucket={ACCOUNT}/sales/orders/")
    store = _reader(world)
    (point,) = list_points(store, T.namespace, T.name, ACCOUNT).points
    assert point.bucket == ACCOUNT and point.snapshot_timestamp_ms > world.points[1].snapshot_timestamp_ms
    assert list_points(store, T.namespace, T.name).points[-1] == world.points[1]  # the replica's latest, still
    assert main(_restore(world, "--replica", ACCOUNT, "--suffix", "_acct"), spark_factory=lambda conf: spark) == 0, (
        capsys.readouterr()
    )
    assert _read_back(world, Ident("sales", "orders_acct")) == theirs != world.rows[1]


def test_a_snapshot_the_replica_expired_is_restored_verified_and_never_overwritten(
    spark: Any, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first = world.points[0]
    # its data files are gone from the table: only the vault holds them
    assert not any(f.kind == "data" and (world.replica_wh / "sales/orders" / f.relative).exists() for f in first.files)
    args = _restore(world, "--snapshot-id", str(first.snapshot_id), "--suffix", "_first")
    assert main(args, spark_factory=lambda conf: spark) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "VERIFIED" in out or "verified" in out
    target = Ident("sales", "orders_first")
    assert _read_back(world, target) == world.rows[0]
    props = table_metadata(world.target.warehouse, str(target))["properties"]
    assert props[LINEAGE.snapshot_id] == str(first.snapshot_id) and PROP_VERIFIED in props
    assert props[PROP_REPLICA_METADATA].startswith(f"{world.vault}/v1/tables/sales/orders/")
    report = json.loads(next((world.root / "reports").rglob("report.json")).read_text())
    assert "backup point's manifest" in json.dumps(report)
    # the same point again: already restored and verified (skipped); the other point into it: refused, nothing written
    assert main(args, spark_factory=lambda conf: spark) == 0
    assert "skip" in capsys.readouterr().out
    before = sorted(p.name for p in (world.target_wh / "sales/orders_first/metadata").iterdir())
    assert main(_restore(world, "--suffix", "_first"), spark_factory=lambda conf: spark) == 2
    assert "--replace" in capsys.readouterr().out
    assert sorted(p.name for p in (world.target_wh / "sales/orders_first/metadata").iterdir()) == before


def test_a_newer_version_of_a_point_s_file_is_not_what_the_restore_reads(
    spark: Any, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first = world.points[0]
    data = next(f for f in first.files if f.kind == "data")
    key = data.key(first.prefix)
    body = bytearray(world.s3.get_object(Bucket=world.bucket, Key=key)["Body"].read())
    body[len(body) // 2] ^= 0xFF  # same size, other bytes: a newer version, which Object Lock does not prevent
    md5 = base64.b64encode(hashlib.md5(bytes(body)).digest()).decode()
    world.s3.put_object(Bucket=world.bucket, Key=key, Body=bytes(body), ContentMD5=md5)
    args = _restore(world, "--snapshot-id", str(first.snapshot_id), "--suffix", "_tampered")
    assert main(args, spark_factory=lambda conf: spark) == 0, capsys.readouterr()
    assert _read_back(world, Ident("sales", "orders_tampered")) == world.rows[0]  # the version the point recorded


def test_a_table_dropped_everywhere_is_restored_as_of_a_time(
    spark: Any, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    spark.sql(f"DROP TABLE {SRC}.{T} PURGE")
    assert not (world.replica_wh / "sales/orders").exists()
    assert main(_restore(world, "--suffix", "_latest"), spark_factory=lambda conf: spark) == 0  # latest
    assert _read_back(world, Ident("sales", "orders_latest")) == world.rows[1]  # not the planted "newer" points
    assert capsys.readouterr().err.count("FINDING: refused backup point") == 3
    report = max((world.root / "reports").rglob("report.json"), key=lambda p: p.stat().st_mtime)
    assert json.dumps(json.loads(report.read_text())).count("refused backup point") >= 3
    before_first = _iso(world.points[0].snapshot_timestamp_ms - 1)
    assert main(_restore(world, "--as-of", before_first)) == 2
    assert "no backup point" in capsys.readouterr().err


def test_what_a_restore_from_the_vault_refuses(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    for extra, why in (
        (["--copy-mode", "ctas"], "ctas is not offered"),
        (["--verify", "full"], "--verify full"),
        (["--namespace", "sales"], "exactly one --table"),
        (["--as-of", "replication-point"], "replicas' point"),
    ):
        assert main(_restore(world, *extra)) == 2
        assert why in capsys.readouterr().err
    assert main(["--list-points", "--table", str(T), "--vault", world.vault]) == 2
    assert "--from-vault" in capsys.readouterr().err
    # a dry run plans from the point without a JVM and writes nothing
    assert main(_restore(world, "--suffix", "_dry", "--dry-run")) == 0
    assert f"snapshot {world.points[1].snapshot_id}" in capsys.readouterr().out
    assert not (world.target_wh / "sales/orders_dry").exists()


def test_read_from_is_the_layout_s_content_key(world: World, tmp_path: Path) -> None:
    point = world.points[0]
    restore = open_point(VaultReader(world.vault, REGION, world.endpoint), point, tmp_path)
    assert isinstance(restore, VaultRestore)
    names = {f.relative.removeprefix(point.restore_location + "/") if f.kind == "restorable" else f.relative
             for f in point.files}  # fmt: skip
    for rel in names:
        assert restore.read_from(f"{restore.location}/{rel}").uri == restore.store.uri(point.content_key(rel))


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_list_points_reads_every_incarnation(world: World) -> None:
    store = _reader(world)
    scan = list_points(store, "sales", "orders")
    assert [p.snapshot_id for p in scan.points] == [p.snapshot_id for p in world.points] and len(scan.refused) == 3
    assert list_points(store, "sales", "nothing").points == ()
    assert main(_restore(world, "--list-points", "--vault-point-key", "")) == 2  # no key: nothing is trusted


def test_a_newer_version_of_a_rewritten_manifest_refuses_the_restore(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Iceberg reads the rewritten manifests by key: one that is no longer the version the point recorded is refused
    before anything is written (last in this module: it changes point 1 for good)."""
    first = world.points[0]
    manifest = next(f for f in first.files if f.kind == "restorable" and f.relative.endswith(".avro"))
    key = manifest.key(first.prefix)
    world.s3.put_object(Bucket=world.bucket, Key=key, Body=b"a manifest of the attacker's")
    args = _restore(world, "--snapshot-id", str(first.snapshot_id), "--suffix", "_manifest")
    assert main(args) == 2
    assert "not the one backup point" in capsys.readouterr().err
    assert not (world.target_wh / "sales/orders_manifest").exists()
