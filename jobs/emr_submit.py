"""Submit the recovery job to the provisioned EMR Serverless application (`make recover-emr ARGS=...`).

    s3tables-kit recover-emr --outputs outputs.json --namespace analytics --as-of 2025-12-03T14:05:00Z

Every argument this tool does not declare is the recovery job's (`s3tables-kit recover --help`); a `--` ends this
tool's own arguments where a job argument shares a name with one of them.

1. uploads `jobs/recover_entry.py`, a zip of the modules the jobs import and the pinned catalog jars under the
   provisioned `scripts_uri` (outputs `kit_recovery.scripts_uri`);
2. `StartJobRun` on `emr_application_id` with the recovery role `role_arn`, logs to `logs_uri`; the job gets explicit
   catalog arguments (replica and recovery table bucket ARNs, regions, recovery namespace), so the remote side needs
   no outputs file and no pydantic;
3. polls `GetJobRun` and prints the state and where the driver log is, until the run ends (`--no-wait` to skip).

The request is built by pure functions (`build_start_job_run`), unit-tested without AWS.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.jars import JarsUnavailable, kit_jars
from s3tables_kit.jobs.kernel import sdk
from s3tables_kit.topology import paths
from s3tables_kit.topology.contract import BACKUP_ENTRY, REHEARSAL_ENTRY
from s3tables_kit.topology.outputs import KitOutputs, OutputsError, ReplicaOut, load_outputs
from s3tables_kit.topology.shipping import shipped_modules

TERMINAL = {"SUCCESS", "FAILED", "CANCELLED"}
ENTRY = "recover_entry.py"
JOBS_ZIP = "jobs.zip"


def split_s3(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise ValueError(f"{uri!r} is not an s3:// URI")
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key.rstrip("/")


def join_s3(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


def remote_args(outputs: KitOutputs, job_args: list[str], mode: str = "client") -> list[str]:
    """The job's arguments on EMR: the outputs become explicit catalog arguments. With `--from-vault` the source is
    the vault of the outputs (`--vault`, `--vault-region`), never the replica (the job refuses a replica there)."""
    if "--outputs" in job_args:
        raise ValueError("pass --outputs to emr_submit, not to the job: it is translated for the remote side")
    rep, job_args = replica_of(outputs, job_args)
    rec = outputs.recovery
    args = ["--catalog-mode", mode]
    if "--from-vault" in job_args:
        args += vault_source_args(outputs, job_args)
        if rep.table_bucket_arn != rec.replica_table_bucket_arn:  # an account bucket's backups: its layout segment
            args += ["--replica", rep.table_bucket_name]
    else:
        args += ["--replica-warehouse", rep.table_bucket_arn, "--replica-region", rep.region]
    args += ["--target-warehouse", rec.table_bucket_arn, "--target-region", rec.region]
    if "--target-namespace" not in job_args:
        args += ["--target-namespace", rec.namespace]
    if "--report" not in job_args:
        args += ["--report", "/tmp/kit-recovery-report"]  # driver-local; the summary is in the driver's stdout log
    return args + list(job_args)


def replica_of(outputs: KitOutputs, job_args: list[str]) -> tuple[ReplicaOut, list[str]]:
    """The replica the job reads (`--replica <bucket>`, a bucket of the vault recovery reads, else the recovery
    replica) and the job's arguments without that option: the remote side gets its warehouse instead."""
    for i, arg in enumerate(job_args):
        if arg == "--replica" or arg.startswith("--replica="):
            name = arg.partition("=")[2] or (job_args[i + 1] if i + 1 < len(job_args) else "")
            try:
                rep = outputs.recovery_replica_named(name)
            except KeyError as err:
                raise ValueError(f"--replica {name}: {err.args[0]}") from None
            return rep, job_args[:i] + job_args[i + (1 if "=" in arg else 2) :]
    return outputs.recovery_replica, job_args


def vault_source_args(outputs: KitOutputs, job_args: list[str]) -> list[str]:
    """`--vault`, `--vault-region` and `--vault-point-key` of the outputs' vault, unless the job's arguments name
    them."""
    vault = outputs.vault
    if vault is None and "--vault" not in job_args:
        raise ValueError(
            "--from-vault: the outputs have no kit_vault (a deployment with [vault]); pass --vault s3://BUCKET"
        )
    args = []
    if "--vault" not in job_args and vault is not None:
        args += ["--vault", f"s3://{vault.bucket_name}"]
    if "--vault-region" not in job_args and vault is not None:
        args += ["--vault-region", vault.region]
    if "--vault-point-key" not in job_args and vault is not None and vault.point_key_arn:
        args += ["--vault-point-key", vault.point_key_arn]
    return args


def spark_submit_parameters(jar_uris: list[str], py_files_uri: str, extra_conf: dict[str, str] | None = None) -> str:
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.session.timeZone": "UTC",
        **(extra_conf or {}),
    }
    parts = [f"--jars {','.join(jar_uris)}", f"--py-files {py_files_uri}"]
    parts += [f"--conf {k}={v}" for k, v in conf.items()]
    return " ".join(parts)


def build_start_job_run(
    outputs: KitOutputs,
    job_args: list[str],
    jar_names: list[str],
    *,
    name: str | None = None,
    mode: str = "client",
    client_token: str | None = None,
) -> dict[str, Any]:
    """The `emr-serverless` StartJobRun request (kwargs for boto3)."""
    rec = outputs.recovery
    base = rec.scripts_uri
    return {
        "applicationId": rec.emr_application_id,
        "clientToken": client_token or uuid.uuid4().hex,
        "executionRoleArn": rec.role_arn,
        "name": name or "kit-recovery",
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": join_s3(base, ENTRY),
                "entryPointArguments": remote_args(outputs, job_args, mode),
                "sparkSubmitParameters": spark_submit_parameters(
                    [join_s3(base, "jars", j) for j in jar_names], join_s3(base, JOBS_ZIP)
                ),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {"s3MonitoringConfiguration": {"logUri": rec.logs_uri.rstrip("/") + "/"}}
        },
        "tags": {"kit": "s3tables-replica-kit", "purpose": "recovery"},
    }


def driver_log_location(logs_uri: str, application_id: str, job_run_id: str) -> str:
    """Where EMR Serverless writes the driver's stdout (S3 monitoring configuration layout)."""
    return join_s3(logs_uri, "applications", application_id, "jobs", job_run_id, "SPARK_DRIVER", "stdout.gz")


def jobs_zip() -> bytes:
    """The kit modules the EMR entries (recovery, rehearsal, vault backup) can import, importable from --py-files:
    derived from their imports (`topology/shipping.py`), the job's own dependencies left to its runtime."""
    entries = [f"jobs/{e}" for e in (ENTRY, REHEARSAL_ENTRY, BACKUP_ENTRY)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for rel in shipped_modules(entries, runtime=None):
            z.write(paths.PACKAGE / rel, f"s3tables_kit/{rel}")
        z.writestr("s3tables_kit/__init__.py", "")
    return buf.getvalue()


def upload(s3: Any, outputs: KitOutputs, jars: list[Path], base: str | None = None) -> None:
    """The entry, the jobs zip and the jars under `base` (default: the on-demand runs' `scripts_uri`)."""
    base = base or outputs.recovery.scripts_uri
    bucket, key = split_s3(join_s3(base, ENTRY))
    s3.upload_file(str(paths.PACKAGE / "jobs" / ENTRY), bucket, key)
    bucket, key = split_s3(join_s3(base, JOBS_ZIP))
    s3.put_object(Bucket=bucket, Key=key, Body=jobs_zip())
    for j in jars:
        bucket, key = split_s3(join_s3(base, "jars", j.name))
        s3.upload_file(str(j), bucket, key)


def wait(emr: Any, application_id: str, job_run_id: str, logs_uri: str, poll: float = 15.0) -> str:
    last = None
    while True:
        run = emr.get_job_run(applicationId=application_id, jobRunId=job_run_id)["jobRun"]
        state = run["state"]
        if state != last:
            print(f"{time.strftime('%H:%M:%S')} {job_run_id}: {state} {run.get('stateDetails', '')}", flush=True)
            last = state
        if state in TERMINAL:
            print(f"driver log: {driver_log_location(logs_uri, application_id, job_run_id)}")
            return str(state)
        time.sleep(poll)


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """This tool's arguments and the recovery job's: the ones it does not declare, then everything after `--`."""
    ap = argparse.ArgumentParser(
        prog="s3tables-kit recover-emr",
        description=__doc__.splitlines()[0] if __doc__ else "",
        allow_abbrev=False,  # `--name` must not swallow the job's `--namespace`
        epilog="any other argument (and everything after --) goes to the recovery job: s3tables-kit recover --help",
    )
    ap.add_argument("--outputs", required=True, help="the cdktf outputs JSON")
    ap.add_argument("--catalog-mode", default="client", choices=("client", "rest", "glue"))
    ap.add_argument("--name", default=None)
    ap.add_argument("--no-wait", action="store_true")
    ap.add_argument("--print-request", action="store_true", help="print the StartJobRun request and stop")
    args = list(sys.argv[1:] if argv is None else argv)
    own, after = (args[: args.index("--")], args[args.index("--") + 1 :]) if "--" in args else (args, [])
    ns, unknown = ap.parse_known_args(own)
    return ns, unknown + after


def main(argv: list[str] | None = None) -> int:
    ns, job_args = parse_args(argv)
    try:
        outputs = load_outputs(ns.outputs)
    except OutputsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        jars = kit_jars()
    except JarsUnavailable as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        request = build_start_job_run(outputs, job_args, [j.name for j in jars], name=ns.name, mode=ns.catalog_mode)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if ns.print_request:
        import json

        print(json.dumps(request, indent=2))
        return 0
    region = outputs.recovery.region
    upload(sdk.client("s3", region), outputs, jars)
    emr = sdk.client("emr-serverless", region)
    job_run_id = emr.start_job_run(**request)["jobRunId"]
    print(f"started job run {job_run_id} on application {outputs.recovery.emr_application_id}")
    if ns.no_wait:
        print(f"driver log: {driver_log_location(outputs.recovery.logs_uri, request['applicationId'], job_run_id)}")
        return 0
    state = wait(emr, request["applicationId"], job_run_id, outputs.recovery.logs_uri)
    return 0 if state == "SUCCESS" else 1


if __name__ == "__main__":
    sys.exit(main())
