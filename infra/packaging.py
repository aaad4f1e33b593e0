"""What the provisioned topology runs, packaged by path: the kit's code is read as files and never imported here.

The replication monitor's Lambda package is built at synth from the kit's own `jobs/ops` files (no second copy).
`monitor_zip()` returns the bytes of a deterministic zip (sorted entries, fixed timestamps and permissions), so the
same sources always give the same archive, hash and synthesised Terraform, on any machine and in any directory:

    s3tables_kit/<module>                       `monitor_modules()`: what the handler (`MONITOR_MODULE`) can import in
                                                the Lambda runtime, derived from the imports (`topology/shipping.py`)
    botocore_data/s3tables/<version>/*          the pinned botocore's S3 Tables model
    kit_declared.json (`DECLARED_FILE`)         what the drift checks compare with

The same package runs the replica freshness check (the handler's `MODE_FRESHNESS`); the scheduled hardener's adds the
modules its entry (`HARDENER_ENTRY`) imports beyond the monitor's.

The code is the same for every stack; `kit_declared.json` is one source's: its declared replication and the reviewed
bucket policy of each of its replicas, written at synth from the configuration and the policy documents (so a change
of either is a change of the package, deployed like code: nothing at run time can swap what the monitor trusts).

The Lambda Python runtime bundles its own boto3/botocore, which can predate the S3 Tables replication operations
(boto3 >= 1.42.1, docs/aws-facts.md#replication). botocore reads extra service models from the directories named by the
`AWS_DATA_PATH` environment variable before its own, so the function sets `AWS_DATA_PATH=/var/task/botocore_data`
and gets the model of the kit's pinned botocore (>= 1.44.7: every S3 Tables operation the kit calls) without
shipping the whole SDK.

The recovery rehearsal runs `jobs/<REHEARSAL_ENTRY>` with the jobs zip and the pinned jars that `make rehearse-upload`
puts under the scripts bucket; `start_job_run_input` is the request its schedule sends. This module imports no CDKTF
code and nothing of `jobs/`.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import botocore

from s3tables_kit.topology import paths, shipping
from s3tables_kit.topology.contract import DECLARED_FILE, MONITOR_MODULE, REHEARSAL_ENTRY

PACKAGE = shipping.PACKAGE  # the modules sit under the kit's distribution package, as they import each other


def handler_of(module: str) -> str:
    """The Lambda handler string of the function `handler` of `module` (a path under the kit, as `MONITOR_MODULE`)."""
    return f"{PACKAGE}." + module.removesuffix(".py").replace("/", ".") + ".handler"


HANDLER = handler_of(MONITOR_MODULE)
DATA_DIR = "botocore_data"
LAMBDA_TASK_ROOT = "/var/task"
HARDENER_ENTRY = "jobs/ops/harden_scheduled.py"  # the scheduled hardener's handler


@functools.cache
def monitor_modules() -> tuple[str, ...]:
    """The kit modules of the monitor's package (paths under the kit), derived from its handler's imports."""
    return shipping.shipped_modules([MONITOR_MODULE], shipping.LAMBDA_RUNTIME, command_lines=False)


@functools.cache
def hardener_modules() -> tuple[str, ...]:
    """The modules the hardener's package adds to the monitor's (which it ships whole: one kernel in both packages)."""
    own = shipping.shipped_modules([HARDENER_ENTRY], shipping.LAMBDA_RUNTIME, command_lines=False)
    return tuple(m for m in own if m not in monitor_modules())


BUNDLED_MODELS = ("s3tables",)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def declared_bytes(declared: Any) -> bytes:
    """`kit_declared.json` as the package holds it: deterministic JSON (sorted keys, compact)."""
    return json.dumps(declared, sort_keys=True, separators=(",", ":")).encode()


def _entries(declared: bytes | None, extra: Sequence[tuple[str, bytes]] = ()) -> list[tuple[str, bytes]]:
    out = [(f"{PACKAGE}/__init__.py", b"")]  # the package's own __init__ holds only its docstring
    out += [(f"{PACKAGE}/{rel}", (paths.PACKAGE / rel).read_bytes()) for rel in monitor_modules()]
    out += extra
    if declared is not None:
        out.append((DECLARED_FILE, declared))
    data = Path(botocore.__file__).resolve().parent / "data"
    for service in BUNDLED_MODELS:
        for f in sorted((data / service).rglob("*")):
            if f.is_file():
                out.append((f"{DATA_DIR}/{f.relative_to(data).as_posix()}", f.read_bytes()))
    return sorted(out)


def monitor_zip(declared: bytes | None = None) -> bytes:
    """The package; `declared`: the `kit_declared.json` of one source (`declared_bytes`), none without it."""
    return _zip(_entries(declared))


def hardener_zip(plan: tuple[str, bytes]) -> bytes:
    """The scheduled hardener's package: the monitor's modules (its kernel), `hardener_modules()` and `plan`, (file
    name, content) of its plan file."""
    own = [(f"{PACKAGE}/{rel}", (paths.PACKAGE / rel).read_bytes()) for rel in hardener_modules()]
    return _zip(_entries(None, [*own, plan]))


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in entries:
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, content, compresslevel=9)
    return buf.getvalue()


def sha256_base64(data: bytes) -> str:
    """Terraform's `source_code_hash` form (base64 of the SHA-256)."""
    import base64

    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def write_monitor_zip(directory: Path, zip_bytes: bytes | None = None) -> Path:
    """Write the package (default: without a declared file) as `<directory>/replication-monitor.zip`
    (content-addressed by the asset that copies it)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "replication-monitor.zip"
    path.write_bytes(monitor_zip() if zip_bytes is None else zip_bytes)
    return path


def start_job_run_input(
    *,
    application_id: str,
    execution_role_arn: str,
    scripts_uri: str,
    logs_uri: str,
    job_args: Sequence[str],
    jar_names: Sequence[str],
    client_token: str = "<aws.scheduler.execution-id>",
    entry: str = REHEARSAL_ENTRY,
    name: str = "kit-recovery-rehearsal",
) -> dict[str, Any]:
    """The EMR Serverless StartJobRun request (API member names) a schedule (the rehearsal's, the vault backup's:
    `entry` under `scripts_uri`, the run's `name`) sends through the universal target
    `arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun`. The client token is the scheduler's execution id (a
    context attribute replaced per invocation), so a retried invocation never starts a second run."""
    base = scripts_uri.rstrip("/")
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.session.timeZone": "UTC",
    }
    params = [f"--jars {','.join(f'{base}/jars/{j}' for j in jar_names)}", f"--py-files {base}/jobs.zip"]
    params += [f"--conf {k}={v}" for k, v in conf.items()]
    return {
        "applicationId": application_id,
        "clientToken": client_token,
        "executionRoleArn": execution_role_arn,
        "name": name,
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": f"{base}/{entry}",
                "entryPointArguments": list(job_args),
                "sparkSubmitParameters": " ".join(params),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {"s3MonitoringConfiguration": {"logUri": logs_uri.rstrip("/") + "/"}}
        },
    }
