"""`make sandbox ARGS=--brownfield`: the stand-in holding the brownfield lake of `make e2e-adopt`
(harness/e2e/brownfield.py) instead of a deployed example, to rehearse discovery on a lake the kit never saw;
`ARGS="--brownfield one"`: the one-account lake that already replicates (harness/e2e/brownfield_one.py: two Regions,
a replication of its own into a bucket holding its replicas, a KMS bucket, a table fed by `PutRows`).

The emulator serves the fake credentials as the lake's account (111122223333), as `make sandbox` does, so the plain
commands act in it; it serves that one account, so the partner's bucket that receives one table's own replication is
in it too (us-east-2, outside the Region discovered). Nothing of the kit is deployed: the commands printed discover
the lake and review the proposal; the adoption itself (the Terraform apply behind the adoption gate) is
`make e2e-adopt`.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.deploy import FAKE_KEY, client
from harness.e2e import brownfield as lake
from harness.e2e import brownfield_one as one


def start(out: Path, port: int | None, env_extra: dict[str, str], *, world: str = "lake") -> tuple[Emulator, str]:
    """The running emulator holding a brownfield lake (`world`: lake or one), and what to print (the exports and
    commands to try); the caller stops the emulator. `env_extra`: the client settings the emulator needs for Iceberg
    writes."""
    shown = str(out).rstrip("/")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    emu = Emulator(port=port, log=out / "emulator.log", env={"MOTO_ACCOUNT_ID": lake.ACCOUNT}, start_timeout_s=180)
    emu.start()
    try:
        os.environ.update(env_extra)  # pyiceberg's writes in this process
        built, discover = _build_one(emu) if world == "one" else _build_lake(emu)
        env = {"AWS_ENDPOINT_URL": emu.url, "AWS_ACCESS_KEY_ID": FAKE_KEY, "AWS_SECRET_ACCESS_KEY": FAKE_KEY,
               "AWS_REGION": lake.REGION, "AWS_DEFAULT_REGION": lake.REGION, **env_extra}  # fmt: skip
        exports = [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
        (out / "env.sh").write_text("\n".join(["unset AWS_SESSION_TOKEN AWS_PROFILE", *exports]) + "\n")
    except BaseException:
        emu.stop()
        raise
    disc = f"{shown}/discover"
    lines = [
        "",
        f"sandbox: up (brownfield) at {emu.url}: account {lake.ACCOUNT}, a lake the kit never saw",
        *built,
        "",
        f"In another shell, from the repository root: `source {shown}/env.sh`, then try (docs/adoption.md):",
        f'  make discover ARGS="{discover} --out {disc}"',
        f"  cat {disc}/report.txt {disc}/kit.toml",
        f'  # the adoption itself, through the Terraform apply behind the adoption gate: make e2e-adopt ARGS="--world '
        f'{world}"',
        "",
        "Ctrl-C stops the sandbox (everything in it is gone).",
    ]
    return emu, "\n".join(lines)


def _client(endpoint: str, service: str, region: str) -> Any:
    """A client of the stand-in with its fake credentials, the kit's SDK (`PutRows` modelled)."""
    from s3tables_kit.jobs.kernel.sdk import boto3_session

    session = boto3_session(aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_KEY, region_name=region)
    return session.client(service, endpoint_url=endpoint)


def _build_lake(emu: Emulator) -> tuple[list[str], str]:
    """harness/e2e/brownfield.py's lake; what to print of it and the discovery's arguments."""

    def client_of(account: str, service: str, region: str) -> Any:
        return client(emu.url, service, region)  # one account served: the partner's bucket lands in the lake's

    built = lake.build(client_of, emu.url)
    emu.control.replicate(source_bucket_arn=lake.arn(lake.MARKETING))  # the lake's own table-level replication
    return [
        *(f"  {table}: {len(ids)} snapshots" for table, ids in sorted(built.snapshots.items())),
        f"  {lake.SALES}: a bucket policy granting {lake.ANALYTICS_ROLE} read access; "
        f"{'.'.join(lake.MAINTAINED[1:])}: maintenance of its own; "
        f"{'.'.join(lake.SHARED[1:])}: replicated to {built.partner_bucket_arn}",
    ], f"--region {lake.REGION} --replicate-to {lake.REPLICA_REGION}"


def _build_one(emu: Emulator) -> tuple[list[str], str]:
    """harness/e2e/brownfield_one.py's one-account lake; what to print of it and the discovery's arguments."""
    built = one.build(
        lambda _account, service, region: _client(emu.url, service, region),
        emu.url,
        lambda src: emu.control.replicate(source_bucket_arn=src),
        emu.control.putrows,
    )
    return [
        *(f"  {table}: {len(ids)} snapshots" for table, ids in sorted(built.snapshots.items())),
        f"  {one.FINANCE}: SSE-KMS ({built.kms_key_arn}); {'.'.join(one.STREAMED[1:])}: fed through PutRows",
        f"  {one.ORDERS} replicates (bucket level, its owners' configuration) to {one.DR_ARN}, holding its replicas",
    ], f"--region {one.REGION} --region {one.DR_REGION} --replicate-to {one.DR_REGION}"
