"""The run's deploy through Terraform (`--apply terraform`): the same code path as `make e2e` (infra/e2e.run's
ExampleRun: the production synth of the run's configuration, `terraform apply` of every stack in order, `plan
-detailed-exitcode` empty, the `prevent_destroy` check, then a writer's commit and harden, status, audit, recover
--dry-run and failover --dry-run on what Terraform created), on the stand-in with the e2e localization (endpoints,
keys, the reviewed stand-ins of infra/e2e/standins.py). Afterwards every stack is destroyed with its
KIT_ALLOW_DESTROY=1 synth, in reverse order; the run's cleanup then sweeps by prefix and tag.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emulator.control import Control
from s3tables_kit.infra.e2e.run import (
    EMULATOR_WRITER_ENV,
    ExampleRun,
    Terraform,
    cli_config,
    proxy_env,
    stack_order,
    synth,
    toolchain,
    write_stack,
)
from s3tables_kit.infra.live.plan import Refused, RunPlan
from s3tables_kit.infra.validate import find_mirror, find_terraform, tf_env


def toml_text(doc: dict[str, Any]) -> str:
    """A configuration dict as TOML: every top-level key an inline table or value (enough for kit_config_doc)."""

    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return str(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list | tuple):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(str(k))} = {val(x)}" for k, x in v.items()) + " }"
        raise TypeError(f"not expressible here: {v!r}")

    return "".join(f"{json.dumps(k)} = {val(v)}\n" for k, v in doc.items())


class _Emu:
    """What ExampleRun reads of an emulator (its URL and control client), for an emulator the run did not start."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.control = Control(url)


def apply(endpoint: str, plan: RunPlan, cfg_doc: dict[str, Any], workdir: Path) -> ExampleRun:
    """Apply the run's configuration to the stand-in at `endpoint` the way `make e2e` does; raises RuntimeError when
    a stack or a tool failed (the e2e log under `workdir` says which)."""
    import os

    binary, mirror = find_terraform(), find_mirror()
    if binary is None or mirror is None:
        raise Refused("--apply terraform needs `terraform` and a provider filesystem mirror (see `make validate`)")
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / f"{plan.name_prefix}.toml"
    config.write_text(toml_text(cfg_doc))
    cache = workdir / "plugin-cache"
    cache.mkdir(exist_ok=True)
    (workdir / "terraform.rc").write_text(cli_config(mirror, cache))
    env = tf_env(workdir / "terraform.rc")
    for k in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(k, None)
    os.environ.update(EMULATOR_WRITER_ENV)
    tf = Terraform(binary, {**env, **proxy_env(endpoint)})  # S3 Control's account-prefixed host, as make e2e
    run = ExampleRun(config, workdir, tf, _Emu(endpoint), toolchain(tf, mirror, workdir))  # type: ignore[arg-type]
    run.run()
    if not run.ok:
        bad = [f"{s.stack}: {s.error or s.plan_after_apply}" for s in run.stacks if not s.ok]
        bad += [f"{t.tool}: exit {t.exit_code} {t.tail[-300:]}" for t in run.tools if not t.ok]
        raise RuntimeError("terraform path failed: " + "; ".join(bad or ["no stack applied"]))
    return run


def destroy(run: ExampleRun) -> list[str]:
    """`terraform destroy` of every stack with its KIT_ALLOW_DESTROY=1 synth, last applied first; the stacks whose
    destroy failed (cleanup's sweep then deletes what the run owns)."""
    loose, manifest = synth(run.config, run.synth_dir.with_name("synth-destroy"), allow_destroy=True)
    localized = run.localized(loose, run.creds)
    failed = []
    for stack in reversed(stack_order(manifest)):
        stack_dir = run.dir / "apply" / "stacks" / stack
        if not stack_dir.is_dir():
            continue
        write_stack(stack_dir, localized[stack].document)
        proc = run.tf.run(["destroy", "-auto-approve", "-input=false", "-no-color", "-lock=false"], stack_dir)
        if proc.returncode != 0:
            failed.append(stack)
    return failed
