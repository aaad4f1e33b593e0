"""`make sandbox ARGS=--brownfield`: the stand-in holding the brownfield lake of `make e2e-adopt`
(harness/e2e/brownfield.py) instead of a deployed example, to rehearse discovery on a lake the kit never saw.

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
from harness.e2e import brownfield as world


def start(out: Path, port: int | None, env_extra: dict[str, str]) -> tuple[Emulator, str]:
    """The running emulator holding the brownfield lake, and what to print (the exports and commands to try); the
    caller stops the emulator. `env_extra`: the client settings the emulator needs for Iceberg writes."""
    shown = str(out).rstrip("/")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    emu = Emulator(port=port, log=out / "emulator.log", env={"MOTO_ACCOUNT_ID": world.ACCOUNT}, start_timeout_s=180)
    emu.start()
    try:
        os.environ.update(env_extra)  # pyiceberg's writes in this process

        def client_of(account: str, service: str, region: str) -> Any:
            return client(emu.url, service, region)  # one account served: the partner's bucket lands in the lake's

        built = world.build(client_of, emu.url)
        emu.control.replicate(source_bucket_arn=world.arn(world.MARKETING))  # the lake's own table-level replication
        env = {"AWS_ENDPOINT_URL": emu.url, "AWS_ACCESS_KEY_ID": FAKE_KEY, "AWS_SECRET_ACCESS_KEY": FAKE_KEY,
               "AWS_REGION": world.REGION, "AWS_DEFAULT_REGION": world.REGION, **env_extra}  # fmt: skip
        exports = [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
        (out / "env.sh").write_text("\n".join(["unset AWS_SESSION_TOKEN AWS_PROFILE", *exports]) + "\n")
    except BaseException:
        emu.stop()
        raise
    disc = f"{shown}/discover"
    lines = [
        "",
        f"sandbox: up (brownfield) at {emu.url}: account {world.ACCOUNT}, {world.REGION}, a lake the kit never saw",
        *(f"  {table}: {len(ids)} snapshots" for table, ids in sorted(built.snapshots.items())),
        f"  {world.SALES}: a bucket policy granting {world.ANALYTICS_ROLE} read access; "
        f"{'.'.join(world.MAINTAINED[1:])}: maintenance of its own; "
        f"{'.'.join(world.SHARED[1:])}: replicated to {built.partner_bucket_arn}",
        "",
        f"In another shell, from the repository root: `source {shown}/env.sh`, then try (docs/adoption.md):",
        f'  make discover ARGS="--region {world.REGION} --replicate-to {world.REPLICA_REGION} --out {disc}"',
        f"  cat {disc}/report.txt {disc}/kit.toml",
        "  # the adoption itself, through the Terraform apply behind the adoption gate: make e2e-adopt",
        "",
        "Ctrl-C stops the sandbox (everything in it is gone).",
    ]
    return emu, "\n".join(lines)
