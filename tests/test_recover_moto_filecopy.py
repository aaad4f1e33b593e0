"""The file copy mode over an S3 API (issue 12): a `tests.moto_ext` server on loopback whose table storage refuses
CopyObject, ListObjects(V2) and DeleteObject(s), as S3 Tables does; the production catalog path (S3 Tables client
catalog jar + boto3) recovers a table with schema and partition evolution and position deletes over two specs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.spark import REPO_ROOT

pytestmark = pytest.mark.spark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_file_copy_uses_only_the_object_operations_of_table_storage(tmp_path: Path) -> None:
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MOTO_ALLOW_NONEXISTENT_REGION": "true",
    }
    env.pop("AWS_ENDPOINT_URL", None)
    with (tmp_path / "moto.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.moto_ext.server", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        r = subprocess.run(
            [sys.executable, "-m", "tests.recover_moto_filecopy_scenario", endpoint, str(tmp_path / "reports")],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
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
