"""The file copy mode over an S3 API: an emulator (`emulator/`) on loopback whose table storage refuses
CopyObject, ListObjects(V2) and DeleteObject(s), as S3 Tables does; the production catalog path (S3 Tables client
catalog jar + boto3) recovers a table with schema and partition evolution and position deletes over two specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.moto_scenario import run_scenario

pytestmark = pytest.mark.spark


def test_file_copy_uses_only_the_object_operations_of_table_storage(tmp_path: Path) -> None:
    r = run_scenario("tests.recover_moto_filecopy_scenario", tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    # the stand-in refuses what S3 Tables refuses ...
    assert res["probes"] == {
        k: "MethodNotAllowed" for k in ("CopyObject", "ListObjectsV2", "DeleteObject", "DeleteObjects")
    }
    # ... and the recovery never needed any of it
    assert res["refused_during_recovery"] == []
    assert res["dry"] == 0 and res["real"] == 0, r.stderr[-5000:]
    assert res["rows"] == res["expected"] and res["diff"] == [0, 0]
    assert res["delete_files"] >= 4 and res["specs"] == [0, 1] and res["biggest_file"] > 5 * 1024 * 1024
    # reads only from the replica's storage; the target's own storage gets every object, the big one in parts
    assert set(res["replica_storage_ops"]) <= {"GetObject", "HeadObject", "HeadBucket"}, res["replica_storage_ops"]
    assert {"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"} <= set(
        res["target_storage_ops"]
    ), res["target_storage_ops"]
    assert res["target_paths_in_own_storage"]
    assert "mode: files" in r.stdout and "VERIFIED (files)" in r.stderr
