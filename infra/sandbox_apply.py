"""`make sandbox ARGS="--apply"`: deploy the sandbox's example by the Terraform apply of `make e2e` (`infra/e2e/`)
instead of seeding, onto an emulator the sandbox keeps running afterwards.

Needs what `make e2e` needs: `terraform` and a provider filesystem mirror (`make validate` says where they are looked
for). The apply checks what `make e2e` checks (plan after apply empty, destroy protection) and runs its tools once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from emulator.process import Emulator


class ApplyError(Exception):
    """The apply could not run (no toolchain) or failed."""


def apply_example(emu: Emulator, config: Path, workdir: Path, outputs: Path) -> None:
    """Apply every stack of `config` onto the running `emu` as `make e2e` does; write the stacks' outputs (`terraform
    output`, in the format `npx cdktf output` writes) to `outputs`."""
    from s3tables_kit.infra.e2e.run import EMULATOR_WRITER_ENV, ExampleRun, Terraform, cli_config, toolchain
    from s3tables_kit.infra.validate import find_mirror, find_terraform, tf_env

    binary, mirror = find_terraform(), find_mirror()
    if binary is None or mirror is None:
        raise ApplyError("--apply needs `terraform` and a provider filesystem mirror (see `make validate`)")
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    cache = workdir / "plugin-cache"
    cache.mkdir(exist_ok=True)
    (workdir / "terraform.rc").write_text(cli_config(mirror, cache))
    env = tf_env(workdir / "terraform.rc")
    for k in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(k, None)  # each provider block carries its account's key
    os.environ.update(EMULATOR_WRITER_ENV)  # the e2e tools (children) write Iceberg data
    tf = Terraform(binary, env)
    run = ExampleRun(config, workdir, tf, emu, toolchain(tf, mirror, workdir))
    run.run()
    if not run.ok:
        raise ApplyError(f"the apply of {config.name} failed; logs under {run.dir}")
    shutil.copyfile(run.outputs_path, outputs)
