"""The backup's own vault calls under S3 throttling (no Spark): one in five of each kind answered `SlowDown` (HTTP 503)
by the stand-in (the listing, the retention reads and extensions, the point write; the file copy's writes are the
recovery's, tested with it), while two backups of a table run through the plan and store layers the job uses
(`jobs/vault/plan.py`, `jobs/vault/store.py`) and, in this process, the file copy its executors run. Every call gets
through on the kit's retries and each point is complete: every file at its size and CRC32, locked as long as the
point."""

from __future__ import annotations

import time
import zlib
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest

from harness.world import create_point_key, create_vault_bucket
from s3tables_kit.jobs.kernel.filecopy import CopyItem, copy_partition
from s3tables_kit.jobs.vault import plan as vp
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.reader import VaultReader, list_points
from s3tables_kit.jobs.vault.store import VaultStore, VaultTarget
from tests.ops_fixtures import OpsEnv

REGION = "us-east-1"
SLOW_DOWN = ("SlowDown", 503, "Please reduce your request rate.")
THROTTLED = [  # operation, what the request names, a seed that throttles it at least once here
    ("ListObjectsV2", None, 1),
    ("GetObjectRetention", None, 5),
    ("PutObjectRetention", None, 5),
    ("PutObject", "/points/", 5),
]
CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION}


def _table(root: Path, snapshot_id: int, data_files: int) -> tuple[vp.TableSnapshot, list[vp.SnapshotFile]]:
    """A replica table on the local disk whose snapshot `snapshot_id` has `data_files` data files (the later
    snapshot keeps the earlier one's files and adds its own, as an append does)."""
    loc = "file:" + str(root / "orders")
    files = []
    for name, kind, body in [
        (f"metadata/{snapshot_id:05d}.metadata.json", "metadata", b"{}" * 40),
        (f"metadata/snap-{snapshot_id}.avro", "manifest-list", bytes([snapshot_id]) * 300),
        (f"metadata/m{snapshot_id}.avro", "manifest", bytes([snapshot_id]) * 700),
        *((f"data/d{i:03d}.parquet", "data", bytes([i % 251]) * (2000 + i)) for i in range(data_files)),
    ]:
        path = root / "orders" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        files.append(vp.SnapshotFile(f"{loc}/{name}", kind, -1 if kind in ("metadata", "manifest-list") else len(body)))
    meta = f"{loc}/metadata/{snapshot_id:05d}.metadata.json"
    return vp.TableSnapshot("sales", "orders", "u-1", loc, snapshot_id, snapshot_id * 1000, meta, loc), files


def _backup(store: VaultStore, root: Path, snapshot_id: int, data_files: int) -> tuple[int, int]:
    """One backup as `s3tables_kit.jobs.vault.backup` runs it, the Spark steps done in process: (files written,
    retentions extended)."""
    at = datetime.now(UTC).replace(microsecond=0)
    snap, files = _table(root, snapshot_id, data_files)
    held = store.held_files(snap.prefix)
    plan = vp.plan_backup(snap, store.target.bucket, files, held, store.newest_point(snap.prefix))
    assert not plan.to_digest
    cfg = store.target.store_config(8 * 1024 * 1024)
    written = vp.Written(sizes=dict(plan.known))
    copied, _, _ = vp.record_copies(plan, written, copy_partition(plan.copy_items(), cfg))
    key, uri = vp.restore_root(plan, f"run{snapshot_id}")
    staged = root / f"restorable-{snapshot_id}.metadata.json"
    staged.write_bytes(b'{"rewritten": true}')
    (rewritten,) = copy_partition([CopyItem(str(staged), f"{uri}/metadata/r.json", f"{uri}/metadata/r.json", -1)], cfg)
    assert rewritten["error"] is None
    restore = f"{key[len(plan.prefix) :]}/metadata/r.json"
    until = vp.retain_until(at, store.target.retention_days)
    keys = [f"{plan.prefix}files/{rel}" for rel in sorted(set(plan.files) - written.written)]
    extended = store.lock_until(keys, until, 4)
    restorable = {restore: (rewritten["size"], rewritten["crc32"], rewritten["version"])}
    point = vp.build_point(plan, written, restorable, restore, at)
    assert store.commit_point(point)
    return copied, extended


def test_a_backup_s_vault_calls_survive_one_request_in_five_throttled(
    ops_env: OpsEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in CREDS.items():
        monkeypatch.setenv(k, v)
    s3 = ops_env.clients().s3(REGION)
    bucket = create_vault_bucket(s3, days=3, bucket="vault-throttled")  # named: the same calls throttled every run
    key = create_point_key(boto3.client("kms", region_name=REGION, endpoint_url=ops_env.endpoint))
    store = VaultStore(VaultTarget(bucket, REGION, 3, endpoint=ops_env.endpoint, point_key=key))
    for op, match, seed in THROTTLED:
        ops_env.control.inject_faults(op, -1, *SLOW_DOWN, match=match, share=0.2, seed=seed, service="s3")
    try:
        _backups_then_check(ops_env, store, tmp_path)
    finally:  # the session's stand-in serves later tests: no fault left behind
        ops_env.control.reset()


def _backups_then_check(ops_env: OpsEnv, store: VaultStore, tmp_path: Path) -> None:
    s3, bucket = ops_env.clients().s3(REGION), store.target.bucket
    assert _backup(store, tmp_path, 1, 2) == (5, 0)
    time.sleep(1.1)  # the second point's time, and so its files' retention, is later than the first's
    # the second point reuses the two data files and extends their retention to its own
    assert _backup(store, tmp_path, 2, 3) == (4, 2)
    # read back with other clients (the restore's reader, the kit's control-plane retries)
    key = PointKey(str(store.target.point_key), REGION, ops_env.endpoint)
    reader = VaultReader(f"s3://{bucket}", REGION, ops_env.endpoint, point_key=key)
    scan = list_points(reader, "sales", "orders")
    points = scan.points
    assert not scan.refused
    assert [p.snapshot_id for p in points] == [1, 2]
    # the first point's date is earlier than every file of the second: each extension is refused and read back
    earlier = vp.retain_until(datetime.fromisoformat(points[0].backed_up_at), 3)
    assert store.lock_until([f.key(points[1].prefix) for f in points[1].files], earlier, 4) == 0
    faults = ops_env.control.stats()["faults"]
    assert [f["served"] >= 1 for f in faults] == [True] * len(THROTTLED)  # every kind was answered SlowDown
    until = vp.retain_until(datetime.fromisoformat(points[1].backed_up_at), 3)
    for f in points[1].files:
        data = reader.read_checked(points[1].prefix, f)
        assert len(data) == f.size and zlib.crc32(data) == f.crc32
        retention = s3.get_object_retention(Bucket=bucket, Key=f.key(points[1].prefix))["Retention"]
        assert retention["Mode"] == "COMPLIANCE" and retention["RetainUntilDate"] >= until, f.relative
