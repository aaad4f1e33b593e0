"""The vault layout contract (jobs/vault/layout.py): keys, the point manifest's round trip and its refusals, the
increment and the choice of a point."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from s3tables_kit.jobs.vault.layout import (
    BackupFile,
    BackupPoint,
    LayoutError,
    choose_point,
    file_key,
    missing_files,
    point_key,
    relative_path,
    snapshot_of_point_key,
    table_prefix,
)

LOC = "s3://abc--table-s3/t1"


def _point(sid: int, ts: int) -> BackupPoint:
    meta = f"metadata/0000{sid}.metadata.json"
    restore = f"restorable/{sid}/r1/metadata/v.metadata.json"
    files = (
        BackupFile("data/a.parquet", "data", 10, 1, "v1"),
        BackupFile(meta, "metadata", 5, 2, "v2"),
        BackupFile(restore, "restorable", 6, 3, "v3"),
    )
    return BackupPoint(
        "sales", "orders", "u-1", sid, ts, meta, restore, LOC, "arn:x", "2026-11-29T00:00:00+00:00", files
    )


def test_keys_separate_files_from_points_and_incarnations() -> None:
    p = table_prefix("sales", "orders", "u-1")
    assert p == "v1/tables/sales/orders/u-1/"
    rel = relative_path(LOC, LOC + "/points/7.json")  # a table file named like a point stays under files/
    assert file_key(p, rel) == "v1/tables/sales/orders/u-1/files/points/7.json"
    assert snapshot_of_point_key(file_key(p, rel)) is None
    assert snapshot_of_point_key(point_key(p, 42)) == 42
    assert table_prefix("sales", "orders", "u-2") != p


@pytest.mark.parametrize("path", ["s3://other/t1/data/a.parquet", LOC + "/", LOC + "/data/../x", LOC + "x/data/a"])
def test_a_file_outside_the_table_location_is_refused(path: str) -> None:
    with pytest.raises(LayoutError):
        relative_path(LOC, path)


def test_a_segment_with_a_slash_is_refused() -> None:
    with pytest.raises(LayoutError, match="namespace"):
        table_prefix("a/b", "t", "u")


def test_point_round_trip_and_refusals() -> None:
    p = _point(7, 1_000)
    assert BackupPoint.from_json(p.to_json()) == p
    assert p.total_bytes == 21
    assert [f.key(p.prefix) for f in p.files][::2] == [
        "v1/tables/sales/orders/u-1/files/data/a.parquet",
        "v1/tables/sales/orders/u-1/restorable/7/r1/metadata/v.metadata.json",
    ]
    assert p.restore_location == "restorable/7/r1"
    assert (
        p.content_key("metadata/v.metadata.json")
        == "v1/tables/sales/orders/u-1/restorable/7/r1/metadata/v.metadata.json"
    )
    assert p.content_key("data/a.parquet") == "v1/tables/sales/orders/u-1/files/data/a.parquet"
    with pytest.raises(LayoutError, match="restorable"):  # a rewritten copy outside the point's own restorable/<id>/
        BackupPoint.from_json(p.to_json().replace("restorable/7/r1", "restorable/8/r1"))
    with pytest.raises(LayoutError, match="restorable"):
        BackupPoint.from_json(p.to_json().replace('"restore_metadata":"restorable/7', '"restore_metadata":"x/7'))
    with pytest.raises(LayoutError, match="format"):  # format 1 had no version ids and no MAC
        BackupPoint.from_json(p.to_json().replace('"format":2', '"format":1'))
    signed = BackupPoint.from_json(replace(p, mac="bWFj").to_json())
    assert signed.mac == "bWFj" and signed.canonical() == p.canonical()  # the MAC covers everything but itself
    assert b'"mac"' not in signed.canonical() and [f.version for f in signed.files] == ["v1", "v2", "v3"]
    with pytest.raises(LayoutError, match="metadata file"):
        BackupPoint.from_json(p.to_json().replace('"metadata":"metadata/00007', '"metadata":"metadata/9'))
    with pytest.raises(LayoutError, match="kind"):
        BackupFile("x", "video", 1, 1)


def test_increment_copies_only_what_the_vault_lacks() -> None:
    files = [BackupFile("data/a", "data", 1, 1), BackupFile("data/b", "data", 2, 2), BackupFile("data/b", "data", 2, 2)]
    assert [f.relative for f in missing_files(files, {"data/a"})] == ["data/b"]
    assert missing_files(files, {"data/a", "data/b"}) == []


def test_choose_point_by_snapshot_time_or_latest() -> None:
    pts = [_point(1, 1_000), _point(2, 2_000), _point(3, 3_000)]
    assert choose_point(pts) == pts[2]
    assert choose_point(pts, snapshot_id=1) == pts[0]
    assert choose_point(pts, as_of=datetime.fromtimestamp(2.5, UTC)) == pts[1]
    assert choose_point(pts, as_of=datetime.fromtimestamp(0.5, UTC)) is None
    assert choose_point(pts, snapshot_id=9) is None
    with pytest.raises(LayoutError):
        choose_point(pts, snapshot_id=1, as_of=datetime.now(UTC))


def test_the_policies_grant_reads_under_the_layout_s_tables_prefix() -> None:
    from s3tables_kit.jobs.vault.layout import LAYOUT_VERSION, tables_prefix
    from s3tables_kit.topology.backup import VAULT_TABLES_PREFIX

    assert f"{LAYOUT_VERSION}/tables/" == VAULT_TABLES_PREFIX
    assert tables_prefix("a", "b").startswith(VAULT_TABLES_PREFIX)
