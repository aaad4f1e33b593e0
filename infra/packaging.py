"""The replication monitor's Lambda package, built at synth from the kit's own `jobs/ops` code (no second copy).

`monitor_zip()` returns the bytes of a deterministic zip (sorted entries, fixed timestamps and permissions), so the
same sources always give the same archive, hash and synthesised Terraform, on any machine and in any directory:

    jobs/__init__.py, jobs/ops/{__init__,clients,common,status,monitor}.py   the status logic and the handler
    jobs/aws_overlay/__init__.py, jobs/aws_overlay/models/**/*.json           the kit's botocore model overlay
    botocore_data/s3tables/<version>/*                                        the pinned botocore's S3 Tables model

The Lambda Python runtime bundles its own boto3/botocore, which can predate the S3 Tables replication operations
(boto3 >= 1.42.1, REFERENCE §1). botocore reads extra service models from the directories named by the
`AWS_DATA_PATH` environment variable before its own, so the function sets `AWS_DATA_PATH=/var/task/botocore_data`
and gets the model of the kit's pinned botocore without shipping the whole SDK; the kit's clients add the overlay
(`jobs/aws_overlay`, operations newer than the pinned botocore) on top, as everywhere else. This module imports no
CDKTF code.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import botocore

REPO = Path(__file__).resolve().parent.parent
HANDLER = "jobs.ops.monitor.handler"
DATA_DIR = "botocore_data"
LAMBDA_TASK_ROOT = "/var/task"
MODULES = (
    "jobs/__init__.py",
    "jobs/ops/__init__.py",
    "jobs/ops/clients.py",
    "jobs/ops/common.py",
    "jobs/ops/status.py",
    "jobs/ops/monitor.py",
    "jobs/aws_overlay/__init__.py",
)
OVERLAY_MODELS = "jobs/aws_overlay/models"
BUNDLED_MODELS = ("s3tables",)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def _entries() -> list[tuple[str, bytes]]:
    out = [(rel, (REPO / rel).read_bytes()) for rel in MODULES]
    for f in sorted((REPO / OVERLAY_MODELS).rglob("*.json")):
        out.append((f.relative_to(REPO).as_posix(), f.read_bytes()))
    data = Path(botocore.__file__).resolve().parent / "data"
    for service in BUNDLED_MODELS:
        for f in sorted((data / service).rglob("*")):
            if f.is_file():
                out.append((f"{DATA_DIR}/{f.relative_to(data).as_posix()}", f.read_bytes()))
    return sorted(out)


def monitor_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in _entries():
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, content, compresslevel=9)
    return buf.getvalue()


def sha256_base64(data: bytes) -> str:
    """Terraform's `source_code_hash` form (base64 of the SHA-256)."""
    import base64

    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def write_monitor_zip(directory: Path) -> Path:
    """Write the package as `<directory>/replication-monitor.zip` (content-addressed by the asset that copies it)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "replication-monitor.zip"
    path.write_bytes(monitor_zip())
    return path
