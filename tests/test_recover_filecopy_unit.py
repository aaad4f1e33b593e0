"""Unit tests of the file copy mode without Spark: mode decisions, field-id and spec rules, properties as of the
recovery point, the streamed copy and its checks on local files and on an S3 API (moto in-process)."""

from __future__ import annotations

import base64
import io
import json
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from s3tables_kit.jobs.kernel.executors import bins
from s3tables_kit.jobs.kernel.filecopy import (
    CopyItem,
    StoreConfig,
    alt_name,
    check_written,
    composite_crc,
    copy_one,
    relocate,
)
from s3tables_kit.jobs.kernel.idents import ArgError, Ident
from s3tables_kit.jobs.kernel.selectors import Selector
from s3tables_kit.jobs.kernel.snapshots import IcebergColumn, IcebergPartitionField, table_info_from_metadata
from s3tables_kit.jobs.recover.cli import parser, request_from_args
from s3tables_kit.jobs.recover.fastpath import compare_counts
from s3tables_kit.jobs.recover.job import copy_time_warning
from s3tables_kit.jobs.recover.modes import (
    CopyMode,
    Layout,
    ctas_distribution,
    decide,
    fresh_id_order,
    fresh_ids_reproduce,
    parse_layout,
)
from s3tables_kit.jobs.recover.planning import plan_table, properties_point, property_changes
from s3tables_kit.jobs.recover.report import TableResult, summary_table, table_markdown
from tests.test_recover_unit import NOW, T0, metadata, run_refused_before_a_jvm

# --- field ids ---------------------------------------------------------------------------------------------------


def col(i: int, name: str, t: Any = "int") -> IcebergColumn:
    return IcebergColumn(i, name, t)


def test_fresh_ids_follow_icebergs_assignment_order() -> None:
    # a struct's own fields first, then nested types depth first; list element, map key + value
    s = (
        col(1, "a"),
        col(2, "s", {"type": "struct", "fields": [{"id": 5, "name": "x", "type": "int"}]}),
        col(3, "l", {"type": "list", "element-id": 6, "element": "string", "element-required": False}),
        col(4, "m", {"type": "map", "key-id": 7, "key": "string", "value-id": 8, "value": "long"}),
    )
    assert fresh_id_order(s) == [1, 2, 3, 4, 5, 6, 7, 8] and fresh_ids_reproduce(s)
    # a column added later to a flat table gets the next id: still what a new table assigns
    assert fresh_ids_reproduce((col(1, "a"), col(2, "b"), col(3, "added")))
    # added after nested types, a new table would number it before the nested fields: renumbered
    assert not fresh_ids_reproduce((*s, col(9, "added")))
    # a nested field added after a later top-level column, or a dropped column (gap): a new table renumbers
    nested_later = (
        col(1, "a"),
        col(2, "s", {"type": "struct", "fields": [{"id": 4, "name": "x", "type": "int"}]}),
        col(3, "b"),
    )
    assert fresh_id_order(nested_later) == [1, 2, 3, 4] and fresh_ids_reproduce(nested_later)
    added_nested = (
        col(1, "a"),
        col(
            2,
            "s",
            {
                "type": "struct",
                "fields": [{"id": 3, "name": "x", "type": "int"}, {"id": 5, "name": "y", "type": "int"}],
            },
        ),
        col(4, "b"),
    )
    assert not fresh_ids_reproduce(added_nested)
    assert not fresh_ids_reproduce((col(1, "a"), col(3, "c")))


# --- mode decisions ----------------------------------------------------------------------------------------------


def info(**over: Any) -> Any:
    return table_info_from_metadata(Ident("analytics", "orders"), metadata(**over), "s3://x/metadata/v3.metadata.json")


def plan(requested: CopyMode, layout: Layout | None, staged: bool = True, **over: Any) -> Any:
    inf = info(**over)
    return plan_table(
        inf,
        Selector(),
        NOW,
        Ident("rec", "orders"),
        None,
        False,
        decide_mode=lambda snap, schema, spec: decide(requested, inf, snap, schema, spec, layout, staged),
    )


BOTH = Layout(frozenset({0, 1}), frozenset({1}))


def test_files_when_provable_with_the_specs_the_files_use() -> None:
    tp = plan(CopyMode.AUTO, BOTH)
    assert tp.copy_mode is CopyMode.FILES
    assert tp.mode.spec_ids == (0, 1) and tp.mode.default_spec_id == 1
    assert "partition specs [0, 1] kept" in tp.mode.reason
    assert tp.as_dict()["copy_mode"] == "files"


@pytest.mark.parametrize(
    ("over", "layout", "staged", "reason"),
    [
        ({}, BOTH, False, "no staged create"),
        ({"format-version": 3}, BOTH, True, "format v3"),
        ({"partition-statistics": [{"snapshot-id": 30, "statistics-path": "p", "file-size-in-bytes": 1}]},
         BOTH, True, "partition statistics"),
        ({}, Layout(frozenset({0, 5}), frozenset()), True, "missing from the metadata"),
        ({}, None, True, "manifest list was not read"),
    ],
)  # fmt: skip
def test_ctas_where_the_copy_cannot_be_proven(over: dict[str, Any], layout: Any, staged: bool, reason: str) -> None:
    tp = plan(CopyMode.AUTO, layout, staged, **over)
    assert tp.copy_mode is CopyMode.CTAS and reason in tp.mode.reason


def test_equality_deletes_and_field_id_gaps_go_to_ctas() -> None:
    doc = metadata()
    doc["snapshots"][2]["summary"]["total-equality-deletes"] = "4"
    inf = table_info_from_metadata(Ident("a", "t"), doc)
    snap = inf.snapshot(30)
    d = decide(CopyMode.AUTO, inf, snap, inf.schema_at(snap), inf.partition_spec, BOTH)
    assert d.mode is CopyMode.CTAS and "equality" in d.reason and "sequence number" in d.reason
    # snapshot 20 has schema 0: ids 1,2,3,4 + nested 6 (5 was added later at the top level) -> renumbered
    snap20 = inf.snapshot(20)
    d = decide(CopyMode.AUTO, inf, snap20, inf.schema_at(snap20), (), BOTH)
    assert d.mode is CopyMode.CTAS and "field ids" in d.reason


def test_specs_on_columns_missing_from_the_snapshot_cannot_keep_their_ids() -> None:
    doc = metadata()
    doc["partition-specs"][0]["fields"][0]["source-id"] = 99  # spec 0 on a column the snapshot does not have
    inf = table_info_from_metadata(Ident("a", "t"), doc)
    snap = inf.snapshot(30)
    d = decide(CopyMode.FILES, inf, snap, inf.schema_at(snap), inf.partition_spec, BOTH)
    assert d.mode is CopyMode.CTAS and "spec(s) [0]" in d.reason


def test_ctas_distribution_none_only_when_every_file_has_the_target_spec() -> None:
    inf = info()
    target = inf.partition_spec  # current spec (1) without its void field
    assert ctas_distribution(inf, target, Layout(frozenset({1}), frozenset())) == (
        True,
        "every data file was written with the target's spec",
    )
    none, why = ctas_distribution(inf, target, BOTH)
    assert not none and "spec(s) [0]" in why and "partition evolution" in why
    none, why = ctas_distribution(inf, target, None)
    assert not none and "manifest list" in why
    single = table_info_from_metadata(
        Ident("a", "t"), {**metadata(), "partition-specs": [metadata()["partition-specs"][1]]}
    )
    assert ctas_distribution(single, single.partition_spec, None)[0]
    tp = plan(CopyMode.CTAS, BOTH)
    assert tp.copy_mode is CopyMode.CTAS and "write distribution hash" in tp.mode.describe()


def test_manifest_list_layout() -> None:
    lay = parse_layout(
        [
            {"content": 0, "partition_spec_id": 0, "added_files_count": 0, "existing_files_count": 0},
            {"content": 0, "partition_spec_id": 1, "added_files_count": 2, "existing_files_count": 0},
            {"content": 1, "partition_spec_id": 0, "added_files_count": None, "existing_files_count": None},
        ]
    )
    assert lay == Layout(frozenset({1}), frozenset({0}), 2, 1)


# --- properties as of the recovery point ------------------------------------------------------------------------


def test_properties_point() -> None:
    log = [
        {"timestamp-ms": T0, "metadata-file": "s3://x/metadata/00001.metadata.json"},
        {"timestamp-ms": T0 + 60_000, "metadata-file": "s3://x/metadata/00002.metadata.json"},
        {"timestamp-ms": T0 + 90_000, "metadata-file": "s3://x/metadata/00003.metadata.json"},  # property change
        {"timestamp-ms": T0 + 120_000, "metadata-file": "s3://x/metadata/00004.metadata.json"},
    ]
    inf = info(**{"metadata-log": log, "last-updated-ms": T0 + 200_000})
    s20, s30 = inf.snapshot(20), inf.snapshot(30)
    assert properties_point(inf, s30, Selector())[0] is None
    loc, note = properties_point(inf, s20, Selector(as_of_ms=T0 + 95_000))
    assert loc and loc.endswith("00003.metadata.json") and "as of" in note
    loc, note = properties_point(inf, s20, Selector(snapshot_id=20))
    assert loc and loc.endswith("00003.metadata.json") and "while snapshot 20 was current" in note
    assert properties_point(inf, s30, Selector(as_of_ms=T0 + 300_000))[0] is None  # no change after the point
    assert property_changes({"a": "1", "kit.recovery.run-id": "x"}, {"a": "2", "b": "3"}) == ["a", "b"]


# --- the copy on local files --------------------------------------------------------------------------------------


def _crc(b: bytes) -> int:
    return zlib.crc32(b)


def test_copy_is_byte_for_byte_and_checked(tmp_path: Path) -> None:
    src = tmp_path / "rep" / "data" / "a.parquet"
    src.parent.mkdir(parents=True)
    payload = bytes(range(256)) * 40_000
    src.write_bytes(payload)
    dst = relocate("file:" + str(src), "file:" + str(tmp_path / "rep"), "file:" + str(tmp_path / "tgt"))
    assert dst == "file:" + str(tmp_path / "tgt" / "data" / "a.parquet")
    item = CopyItem("file:" + str(src), dst, alt_name(dst, "run1"), len(payload))
    cfg = StoreConfig()
    r = copy_one(item, cfg)
    assert r.error is None and r.size == r.source_size == len(payload) and r.crc32 == _crc(payload)
    assert Path(dst[5:]).read_bytes() == payload
    ok = check_written(r.as_dict(), len(payload), cfg)
    assert ok["ok"] and ok["method"] == "re-read (local file)"
    # a rerun finds the same bytes: re-used, not rewritten
    again = copy_one(item, cfg)
    assert again.reused and again.dst == dst and again.error is None
    # a tampered object is caught; the manifest's size is checked too
    Path(dst[5:]).write_bytes(payload[:-1] + b"\x00")
    bad = check_written(r.as_dict(), len(payload), cfg)
    assert not bad["ok"] and "CRC32" in bad["detail"]
    assert "manifest says" in check_written(r.as_dict(), len(payload) + 1, cfg)["detail"]
    # a name taken by other bytes: the copy goes to the alternative name, nothing is overwritten
    other = copy_one(item, cfg)
    assert other.dst == item.alt_dst and not other.reused and Path(item.alt_dst[5:]).read_bytes() == payload
    assert Path(dst[5:]).read_bytes() != payload


def test_copy_error_is_reported_per_file(tmp_path: Path) -> None:
    r = copy_one(CopyItem(f"file:{tmp_path}/missing", f"file:{tmp_path}/t/x", f"file:{tmp_path}/t/y", 1), StoreConfig())
    assert r.error and "FileNotFoundError" in r.error
    with pytest.raises(ValueError, match="not under the table location"):
        relocate("s3://other/data/x.parquet", "s3://rep", "s3://tgt")


def _deletes_file(path: Path, paths: list[str]) -> None:
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    pq.write_table(pa.table({"file_path": paths, "pos": list(range(len(paths)))}, schema=schema), path)


def test_position_deletes_are_rewritten_for_the_new_location(tmp_path: Path) -> None:
    rep, tgt = f"file:{tmp_path}/rep", f"file:{tmp_path}/tgt"
    src = tmp_path / "rep" / "data" / "d-deletes.parquet"
    src.parent.mkdir(parents=True)
    paths = [f"{rep}/data/a.parquet"] * 3 + [f"{rep}/data/b.parquet"] * 2
    _deletes_file(src, paths)
    dst = relocate("file:" + str(src), rep, tgt)
    item = CopyItem("file:" + str(src), dst, alt_name(dst, "r"), src.stat().st_size, "position-deletes", rep, tgt)
    r = copy_one(item, StoreConfig())
    assert r.error is None and r.records == 5
    out = pq.read_table(dst[5:])
    assert out.column("file_path").to_pylist() == [p.replace(rep, tgt) for p in paths]
    assert out.column("pos").to_pylist() == list(range(5))
    assert out.schema.field("file_path").metadata[b"PARQUET:field_id"] == b"2147483546"
    assert check_written(r.as_dict(), None, StoreConfig())["ok"]
    # a delete naming a file outside the table location is refused
    _deletes_file(src, ["s3://elsewhere/x.parquet"])
    bad = copy_one(CopyItem("file:" + str(src), dst + "2", dst + "3", 1, "position-deletes", rep, tgt), StoreConfig())
    assert bad.error and "outside the table location" in bad.error


def test_multipart_copy_over_an_s3_api_and_its_checksums(tmp_path: Path) -> None:
    moto = pytest.importorskip("moto")
    import boto3

    part = 5 * 1024 * 1024
    payload = (bytes(range(256)) * (2 * part // 256 + 10))[: 2 * part + 1234]
    with moto.mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        for b in ("rep-bkt", "tgt-bkt"):
            s3.create_bucket(Bucket=b)
        s3.put_object(Bucket="rep-bkt", Key="data/a.parquet", Body=payload)
        cfg = StoreConfig(region="us-east-1", part_size=part)
        from s3tables_kit.jobs.kernel import filecopy

        filecopy._CLIENTS.clear()
        item = CopyItem("s3://rep-bkt/data/a.parquet", "s3://tgt-bkt/data/a.parquet", "s3://tgt-bkt/data/a-r1.parquet",
                        len(payload))  # fmt: skip
        r = copy_one(item, cfg)
        assert r.error is None and len(r.part_crcs) == 3 and r.crc32 == _crc(payload)
        assert s3.get_object(Bucket="tgt-bkt", Key="data/a.parquet")["Body"].read() == payload
        check = check_written(r.as_dict(), len(payload), cfg)
        assert check["ok"], check
        # S3's composite checksum of a multipart object: CRC32 over the parts' binary CRC32s
        stored = s3.head_object(Bucket="tgt-bkt", Key="data/a.parquet", ChecksumMode="ENABLED").get("ChecksumCRC32")
        if stored:
            assert stored.split("-")[0] == base64.b64encode(composite_crc(r.part_crcs).to_bytes(4, "big")).decode()
        # If-None-Match: a second attempt never overwrites; the same bytes are re-used
        again = copy_one(item, cfg)
        assert again.reused and again.error is None
        filecopy._CLIENTS.clear()


def test_bins_balance_by_size() -> None:
    groups = bins(list(range(1, 11)), 3, lambda x: x)
    loads = sorted(sum(g) for g in groups)
    assert len(groups) == 3 and loads[-1] - loads[0] <= 2 and sorted(x for g in groups for x in g) == list(range(1, 11))
    assert bins([5], 8, lambda x: x) == [[5]]


def test_compare_counts_per_partition_and_total() -> None:
    src = {("data", 0, "d=1"): [2, 10], ("data", 1, "m=1"): [1, 5], ("deletes", 1, "m=1"): [1, 2]}
    assert compare_counts(src, {k: list(v) for k, v in src.items()}) == []
    dst = {("data", 0, "d=1"): [2, 9], ("data", 1, "m=1"): [1, 5]}
    problems = compare_counts(src, dst)
    assert "data records in total: replica 15, target 14" in problems
    assert "deletes records in total: replica 2, target 0" in problems
    assert any("partition d=1" in p for p in problems)


def test_copy_time_warning_against_the_unreferenced_window() -> None:
    assert copy_time_warning(10**12, 64, 3) is None  # 1 TB on 64 cores at 50 MB/s: minutes
    w = copy_time_warning(10**15, 4, 3)
    assert w and "unreferenced-file window (3 days)" in w


def test_cli_copy_mode_and_verify() -> None:
    base = ["--replica-warehouse", "/r", "--target-warehouse", "/t", "--table", "a.b"]
    req = request_from_args(parser().parse_args(base))
    assert req.copy_mode is CopyMode.AUTO and req.verify == "auto"
    req = request_from_args(parser().parse_args([*base, "--copy-mode", "files", "--verify", "full"]))
    assert req.copy_mode is CopyMode.FILES and req.verify == "full"
    with pytest.raises(ArgError, match="5 MiB"):
        request_from_args(parser().parse_args([*base, "--part-size-mb", "1"]))
    with pytest.raises(SystemExit):
        parser().parse_args([*base, "--copy-mode", "fast"])


def test_report_shows_mode_verification_and_leftovers() -> None:
    r = TableResult("a.t", "rec.a.t", "failed", 1, copy_mode="files", copy_mode_reason="files: copy",
                    leftovers=["s3://t/data/x.parquet"], leftover_note="collected after 3 + 10 days")  # fmt: skip
    md = table_markdown(r)
    assert "| copy mode | files" in md and "s3://t/data/x.parquet" in md and "3 + 10 days" in md
    assert " files " in summary_table([r])
    _ = IcebergPartitionField  # re-exported type used by the planner


def _hadoop_table(wh: Path, ns: str, name: str, doc: dict[str, Any]) -> None:
    meta = wh / ns / name / "metadata"
    meta.mkdir(parents=True)
    (meta / "v1.metadata.json").write_text(json.dumps(doc))
    (meta / "version-hint.text").write_text("1")


def test_plan_time_refusal_exits_2_before_a_jvm_starts(tmp_path: Path) -> None:
    """An existing target without --replace is a plan error: exit 2, no Spark session asked for, no result rows."""
    _hadoop_table(tmp_path / "rep", "analytics", "orders", metadata())
    taken = {**metadata(), "properties": {"someone": "else"}, "location": str(tmp_path / "tgt" / "rec" / "orders")}
    _hadoop_table(tmp_path / "tgt", "rec", "orders", taken)

    out = io.StringIO()
    res = run_refused_before_a_jvm(tmp_path, out, io.StringIO())
    assert res.exit_code == 2 and res.results == [] and res.report is None
    assert "pass --replace to overwrite it" in out.getvalue() and "Nothing was written" in out.getvalue()
    # the plan still says which mode the table would get, and why
    assert "mode: ctas" in out.getvalue() and "manifest list" in out.getvalue()
