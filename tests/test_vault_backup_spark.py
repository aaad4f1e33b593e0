"""The vault backup on local Spark: a real Iceberg table in a local warehouse (the replica, only read), a vault bucket
with Object Lock in COMPLIANCE mode on the local stand-in, the session SparkSession. A first backup then an
incremental one, a point that round-trips with every file in the vault at its size and CRC32, a kill at every step
then a rerun, two runs of one snapshot at once, and an object the vault holds that is not the file."""

from __future__ import annotations

import io
import json
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from harness.localreplica import file_uri
from harness.world import create_point_key, create_vault_bucket
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec, catalog_conf
from s3tables_kit.jobs.kernel.killpoints import BACKUP, KillPoints
from s3tables_kit.jobs.spark import add_catalogs
from s3tables_kit.jobs.vault.backup import BackupContext, TableBackup, backup_table, load_table, read_snapshot
from s3tables_kit.jobs.vault.cli import parser, request_from_args, run
from s3tables_kit.jobs.vault.layout import BackupPoint, file_key, points_prefix, table_prefix
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.store import VaultTarget
from tests.spark_fixtures import stand_in_credentials

pytestmark = pytest.mark.spark

CAT = "vb_replica"
CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


class Killed(BaseException):
    """What a kill leaves behind: no step of the job catches it."""


@dataclass
class World:
    spark: Any
    s3: Any
    bucket: str
    warehouse: Path
    endpoint: str
    point_key: str

    def sql(self, text: str) -> Any:
        return self.spark.sql(text)

    def backup(self, table: str = "sales.orders", hook: Any = None) -> TableBackup:
        kill = KillPoints(BACKUP.job, BACKUP.points, hook=hook)
        vault = VaultTarget(self.bucket, "us-east-1", 2, endpoint=self.endpoint, point_key=self.point_key)
        ctx = BackupContext(self.spark, CAT, file_uri(self.warehouse), vault, uuid.uuid4().hex[:8], lambda m: None)
        ctx.kill = kill
        return backup_table(ctx, table)

    def prefix(self, table: str = "sales.orders") -> str:
        jt = load_table(self.spark, CAT, table)
        ns, name = table.split(".")
        return table_prefix(ns, name, str(jt.operations().current().uuid()))

    def keys(self, prefix: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=self.bucket, Prefix=prefix):
            for v in page.get("Versions", []):
                out[v["Key"]] = out.get(v["Key"], 0) + 1
        return out

    def points(self, prefix: str) -> list[BackupPoint]:
        keys = sorted(k for k in self.keys(points_prefix(prefix)))
        return [BackupPoint.from_json(self.s3.get_object(Bucket=self.bucket, Key=k)["Body"].read()) for k in keys]

    def assert_consistent(self, prefix: str) -> list[BackupPoint]:
        """Every listed point's files are in the vault at their size, CRC32 and version, each object written once."""
        versions = self.keys(prefix)
        assert set(versions.values()) == {1}, "an object of the vault was written twice"
        points = self.points(prefix)
        key = PointKey(self.point_key, "us-east-1", self.endpoint)
        for p in points:
            assert p.mac and key.verify(p.canonical(), p.mac), "a point not MACed by the point key"
            for f in p.files:
                body = self.s3.get_object(Bucket=self.bucket, Key=f.key(prefix), VersionId=f.version)["Body"].read()
                assert (len(body), zlib.crc32(body)) == (f.size, f.crc32), f.relative
        return points


@pytest.fixture(scope="module")
def world(spark: Any, moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    wh = tmp_path_factory.mktemp("vault-backup") / "replica"
    wh.mkdir()
    add_catalogs(spark, catalog_conf(CatalogSpec(CAT, "hadoop", file_uri(wh))))
    spark.sql(f"CREATE NAMESPACE {CAT}.sales")
    spark.sql(
        f"CREATE TABLE {CAT}.sales.orders (id bigint, v string) USING iceberg PARTITIONED BY (bucket(4, id)) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {CAT}.sales.orders SELECT id, repeat('v', 50) FROM range(0, 20000, 1, 4)")
    spark.sql(f"DELETE FROM {CAT}.sales.orders WHERE id % 97 = 0")
    s3 = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id=CREDS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDS["AWS_SECRET_ACCESS_KEY"],
        config=Config(s3={"addressing_style": "path"}),
    )
    bucket = create_vault_bucket(s3, days=2)
    kms = boto3.client("kms", endpoint_url=moto_endpoint, region_name="us-east-1", aws_access_key_id="testing",
                       aws_secret_access_key="testing")  # fmt: skip
    # the executors' Python workers see the stand-in's credentials (they start with the context's environment)
    with stand_in_credentials(spark, CREDS), pytest.MonkeyPatch.context() as mp:
        for k, v in CREDS.items():
            mp.setenv(k, v)
        yield World(spark, s3, bucket, wh, moto_endpoint, create_point_key(kms))


def _snapshot_files(world: World, table: str = "sales.orders") -> dict[str, int]:
    jt = load_table(world.spark, CAT, table)
    snap, files = read_snapshot(world.spark, jt, table, "x")
    loc = snap.location + "/"
    return {f.path[len(loc) :]: Path(f.path.removeprefix("file:")).stat().st_size for f in files}


def _assert_restorable(world: World, prefix: str, point: BackupPoint) -> None:
    """The rewritten metadata loads as a table (pyiceberg, from the vault alone) at the point's snapshot, and every
    data and delete file its manifests name is in the vault where `content_key` says, at the listed size."""
    from pyiceberg.table import StaticTable

    io = {"s3.endpoint": world.endpoint, "s3.region": "us-east-1", "s3.access-key-id": "testing"}
    io["s3.secret-access-key"] = "testing"
    table = StaticTable.from_metadata(f"s3://{world.bucket}/{prefix}{point.restore_metadata}", io)
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.snapshot_id == point.snapshot_id
    root = f"s3://{world.bucket}/{prefix}{point.restore_location}/"
    sizes = {f.relative: f.size for f in point.files}
    tasks = list(table.scan().plan_files())
    named = {t.file.file_path for t in tasks} | {d.file_path for t in tasks for d in t.delete_files}
    assert any(t.delete_files for t in tasks)  # the merge-on-read deletes are part of the point
    for path in named:
        rel = path.removeprefix(root)
        assert rel != path and point.content_key(rel) == file_key(prefix, rel) and rel in sizes, path
        assert world.s3.head_object(Bucket=world.bucket, Key=file_key(prefix, rel))["ContentLength"] == sizes[rel]


def test_first_backup_then_an_incremental_one_copies_only_the_new_files(world: World) -> None:
    first_files = _snapshot_files(world)
    first = world.backup()
    assert first.status == "backed-up", first.error
    assert first.copied == len(first_files) and first.bytes_copied == sum(first_files.values())
    prefix = world.prefix()
    [point] = world.assert_consistent(prefix)
    assert {f.relative for f in point.files if f.kind != "restorable"} == set(first_files)
    kinds = {f.kind for f in point.files}
    assert {"data", "position-deletes", "manifest", "manifest-list", "metadata", "restorable"} <= kinds
    assert point.content_key(point.metadata) == f"{prefix}{point.restore_metadata}"  # the rewritten copy
    data = next(f.relative for f in point.files if f.kind == "data")
    assert point.content_key(data) == file_key(prefix, data)  # data files are held once, under files/
    restored = world.s3.get_object(Bucket=world.bucket, Key=f"{prefix}{point.restore_metadata}")["Body"].read()
    assert f"s3://{world.bucket}/{prefix}{point.restore_location}/".encode() in restored
    assert str(world.warehouse).encode() not in restored  # every path rewritten away from the replica
    _assert_restorable(world, prefix, point)

    assert world.backup().status == "already-backed-up"

    world.sql(f"INSERT INTO {CAT}.sales.orders VALUES (100000, 'new')")
    second_files = _snapshot_files(world)
    new = {k: v for k, v in second_files.items() if k not in first_files}
    second = world.backup()
    assert second.status == "backed-up", second.error
    assert second.copied == len(new) and second.bytes_copied == sum(new.values())
    assert second.reused == len(second_files) - len(new)
    assert second.extended == second.reused  # every reused file now locked as long as the new point
    assert len(world.assert_consistent(prefix)) == 2


def test_runs_killed_at_each_step_in_turn_list_no_point_until_one_completes(world: World) -> None:
    world.sql(f"INSERT INTO {CAT}.sales.orders VALUES (200000, 'k')")
    prefix = world.prefix()
    before = {p.snapshot_id for p in world.points(prefix)}
    for point in BACKUP.points:  # each run is killed one step later than the one before, and resumes its work

        def kill(at: str, what: str, point: str = point) -> None:
            if at == point:
                raise Killed(at)

        with pytest.raises(Killed):
            world.backup(hook=kill)
        listed = {p.snapshot_id for p in world.assert_consistent(prefix)} - before
        assert len(listed) == (1 if point == "after-point" else 0), point
    rerun = world.backup()
    assert rerun.status == "already-backed-up"  # the last killed run had committed its point


def test_a_rerun_reuses_the_files_a_killed_run_left(world: World) -> None:
    world.sql(f"INSERT INTO {CAT}.sales.orders VALUES (250000, 'k')")
    prefix = world.prefix()

    def kill(at: str, what: str) -> None:
        if at == "after-retention":
            raise Killed(at)

    with pytest.raises(Killed):
        world.backup(hook=kill)
    rerun = world.backup()
    assert rerun.status == "backed-up", rerun.error
    assert rerun.copied == 0 and rerun.digested > 0  # the killed run's files, compared with the replica, reused
    world.assert_consistent(prefix)


def test_two_runs_of_one_snapshot_at_once_give_one_point(world: World) -> None:
    world.sql(f"INSERT INTO {CAT}.sales.orders VALUES (300000, 'c')")
    prefix = world.prefix()
    before = len(world.points(prefix))
    other: list[TableBackup] = []

    def race(at: str, what: str) -> None:
        if at == "after-plan" and not other:  # the other run does all its work between our plan and our copy
            other.append(world.backup())

    mine = world.backup(hook=race)
    assert other[0].status == "backed-up", other[0].error
    assert mine.status == "committed-by-another-run", mine.error
    assert mine.copied == 0 and mine.adopted > 0  # every file the other run wrote: 412, same checksum, kept
    assert len(world.assert_consistent(prefix)) == before + 1


def test_an_object_the_vault_holds_that_is_not_the_file_is_never_overwritten(world: World) -> None:
    world.sql(f"INSERT INTO {CAT}.sales.orders VALUES (400000, 'x')")
    prefix = world.prefix()
    jt = load_table(world.spark, CAT, "sales.orders")
    snap, _ = read_snapshot(world.spark, jt, "sales.orders", "x")
    key = file_key(prefix, snap.metadata_path[len(snap.location) + 1 :])
    world.s3.put_object(Bucket=world.bucket, Key=key, Body=b"not the metadata file", ChecksumAlgorithm="CRC32")
    row = world.backup()
    assert row.status == "failed" and "is not the file" in str(row.error)
    assert world.s3.get_object(Bucket=world.bucket, Key=key)["Body"].read() == b"not the metadata file"
    assert world.keys(key) == {key: 1}
    assert snap.snapshot_id not in {p.snapshot_id for p in world.points(prefix)}


def test_the_command_line_backs_up_reports_and_exits_0(world: World, tmp_path: Path) -> None:
    world.sql(f"INSERT INTO {CAT}.sales.orders VALUES (500000, 'cli')")
    args = ["--replica-warehouse", str(world.warehouse), "--vault-bucket", world.bucket, "--vault-region", "us-east-1"]
    args += ["--retention-days", "2", "--endpoint-url", world.endpoint, "--namespace", "sales"]
    args += ["--point-key", world.point_key]
    req = request_from_args(parser().parse_args([*args, "--report", str(tmp_path)]))
    req = replace(req, replica=replace(req.replica, name=CAT))  # the module's catalog on the session
    out, err = io.StringIO(), io.StringIO()
    code, rows = run(req, lambda conf: world.spark, out, err)
    assert code == 0 and [r.status for r in rows] == ["backed-up"], err.getvalue()
    assert "1 ok, 0 failed" in out.getvalue() and "point" in err.getvalue()
    [report] = tmp_path.glob("*-backup-*/report.json")
    doc = json.loads(report.read_text())
    assert doc["exit_code"] == 0 and doc["tables"][0]["point"] == rows[0].point
    assert (report.parent / "report.md").read_text().startswith("# Backup summary")
