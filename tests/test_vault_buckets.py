"""The vault's account buckets (`[[replicas]] feeding_account`, docs/decisions/0035-fan-in-by-account-namespaces.md):
two accounts' `sales.orders` are kept apart in the vault by a `bucket=<name>` segment that `[recovery] replica`'s own
points do not have (so the points written before it stay readable where they are), the point's MAC covers its bucket,
and a restore lists and trusts only the points of the bucket it names. On the stand-in: a vault bucket with Object
Lock, the points written by the backup's own commit (`VaultStore.commit_point`, MACed by the stand-in's KMS) and read
by the restore's listing (`list_points`). The backup job and `recover --from-vault --replica` on Spark:
tests/test_recover_vault_spark.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.config import Config

from harness.world import create_point_key, create_vault_bucket
from s3tables_kit.jobs.vault.layout import (
    BackupFile,
    BackupPoint,
    LayoutError,
    choose_point,
    snapshot_of_point_key,
    table_prefix,
    tables_prefix,
)
from s3tables_kit.jobs.vault.mac import PointKey
from s3tables_kit.jobs.vault.points import PointRefused, verify_point
from s3tables_kit.jobs.vault.reader import VaultReader, list_points
from s3tables_kit.jobs.vault.store import VaultStore, VaultTarget
from tests.ops_fixtures import OpsEnv

REGION = "us-east-1"
OWN, ACCOUNT = "", "vault-777777777777-us-east-1"  # [recovery] replica's points, an adopted account's bucket's
T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)


def _point(bucket: str, sid: int, at: datetime, uuid: str) -> BackupPoint:
    meta, restore = f"metadata/{sid}.metadata.json", f"restorable/{sid}/r/metadata/{sid}.metadata.json"
    files = (BackupFile(meta, "metadata", 5, 1, "v1"), BackupFile(restore, "restorable", 6, 2, "v1"))
    source = f"arn:aws:s3tables:{REGION}:666666666666:bucket/{bucket or 'recovery-replica'}"
    return BackupPoint("sales", "orders", uuid, sid, int(at.timestamp() * 1000), meta, restore, f"s3://{sid}/t",
                       source, at.isoformat(timespec="seconds"), files, bucket=bucket)  # fmt: skip


def test_the_layout_keeps_an_account_bucket_s_tables_apart() -> None:
    """The same name in two buckets: two prefixes, neither under the other's listing; the recovery replica's keys
    are the ones the layout always had; a namespace cannot pose as a bucket segment."""
    own, acct = table_prefix("sales", "orders", "u"), table_prefix("sales", "orders", "u", ACCOUNT)
    assert own == "v1/tables/sales/orders/u/"
    assert acct == f"v1/tables/bucket={ACCOUNT}/sales/orders/u/"
    assert not acct.startswith(tables_prefix("sales", "orders")) and not own.startswith(
        tables_prefix("sales", "orders", ACCOUNT)
    )
    assert snapshot_of_point_key(f"{acct}points/7.json") == 7 and snapshot_of_point_key(f"{own}points/7.json") == 7
    with pytest.raises(LayoutError, match="must not start with 'bucket='"):
        table_prefix(f"bucket={ACCOUNT}", "sales", "orders")
    p = _point(ACCOUNT, 1, T0, "u")
    assert BackupPoint.from_json(p.to_json()) == p and p.key == f"{acct}points/1.json"
    assert b'"bucket"' not in _point(OWN, 1, T0, "u").canonical()  # a format-2 point of before: the bytes it MACed


def test_two_accounts_points_are_each_listed_trusted_and_restored_as_their_own(
    ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=ops_env.endpoint,
                      config=Config(s3={"addressing_style": "path"}))  # fmt: skip
    vault = create_vault_bucket(s3, days=1)
    key_arn = create_point_key(boto3.client("kms", region_name=REGION, endpoint_url=ops_env.endpoint))
    store = VaultStore(VaultTarget(vault, REGION, 1, endpoint=ops_env.endpoint, point_key=key_arn))
    # the recovery replica's sales.orders backed up twice; the account's, of another table uuid, once and later
    mine = [_point(OWN, 1, T0, "own-uuid"), _point(OWN, 2, T0 + timedelta(minutes=5), "own-uuid")]
    theirs = _point(ACCOUNT, 9, T0 + timedelta(minutes=30), "acct-uuid")
    for p in (*mine, theirs):
        assert store.commit_point(p)
    reader = VaultReader(
        f"s3://{vault}", REGION, ops_env.endpoint, point_key=PointKey(key_arn, REGION, ops_env.endpoint)
    )
    own, acct = list_points(reader, "sales", "orders"), list_points(reader, "sales", "orders", ACCOUNT)
    assert [p.snapshot_id for p in own.points] == [1, 2] and own.refused == ()
    assert [(p.snapshot_id, p.bucket) for p in acct.points] == [(9, ACCOUNT)] and acct.refused == ()
    # "latest" is each bucket's own: the account's newer point never becomes the replica's, nor the reverse
    assert choose_point(own.points).snapshot_id == 2 and choose_point(acct.points).snapshot_id == 9  # type: ignore[union-attr]

    # the account's genuine point presented as the replica's (its bytes under the replica's keys; only the backup
    # role writes there, so this is what a forger holding that one write could do), and the reverse: refused
    stolen = f"{table_prefix('sales', 'orders', 'acct-uuid')}points/9.json"
    s3.put_object(Bucket=vault, Key=stolen, Body=reader.read(theirs.key), IfNoneMatch="*")
    swapped = f"{table_prefix('sales', 'orders', 'own-uuid', ACCOUNT)}points/2.json"
    s3.put_object(Bucket=vault, Key=swapped, Body=reader.read(mine[1].key), IfNoneMatch="*")
    own, acct = list_points(reader, "sales", "orders"), list_points(reader, "sales", "orders", ACCOUNT)
    assert [p.snapshot_id for p in own.points] == [1, 2] and [p.snapshot_id for p in acct.points] == [9]
    assert [(r.key, r.reason) for r in own.refused] == [
        (stolen, f"it is a point of {ACCOUNT}, not of [recovery] replica")
    ]
    assert [(r.key, r.reason) for r in acct.refused] == [
        (swapped, f"it is a point of [recovery] replica, not of {ACCOUNT}")
    ]
    # the bucket field rewritten to fit, the MAC kept: the MAC covers the bucket
    raw = reader.read(theirs.key)
    moved = replace(BackupPoint.from_json(raw), bucket="")
    with pytest.raises(PointRefused, match="not the vault point key"):
        verify_point(moved.to_json().encode(), moved.key, datetime.now(UTC), reader.mac_check(), versioned=True)
