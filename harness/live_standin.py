"""`make live-verify` on the local stand-in: live-verify's run (`s3tables_kit.infra.live`) against a fresh emulator,
or a running one (`--endpoint`), prepared as the sandbox is (the run's accounts, the organization with the run's OU,
authorization on, a simulated replication delay); `make live-verify-cleanup RUN=<id>` without AWS=1 too.

    python -m harness.live_standin [--endpoint URL] [--apply api|terraform] [--yes] [--settings FILE] [--out DIR]
    python -m harness.live_standin cleanup --run ID [--endpoint URL]

`--apply terraform` deploys the run's configuration through the `make e2e` code path (`harness.deploy.terraform_apply`:
the production synth of the run's configuration, `terraform apply` of every stack in order, `plan -detailed-exitcode`
empty, the `prevent_destroy` check, then a writer's commit and harden, status, audit, recover --dry-run and failover
--dry-run on what Terraform created). Afterwards every stack is destroyed with its KIT_ALLOW_DESTROY=1 synth, as
break-glass (a break-glass deploy: `as_break_glass`), in reverse order; the run's cleanup then sweeps by prefix
and tag. Exit codes as `python -m s3tables_kit.infra.live`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.control import Control
from emulator.process import Emulator
from harness.deploy import DeployError, RunningStandin, terraform_apply, toml_text
from s3tables_kit.infra.live.plan import Refused, RunPlan, Settings
from s3tables_kit.infra.live.run import Deployer, api_deploy, parser, run_command, settings_and_plan
from s3tables_kit.infra.live.world import LiveTarget, create_run_roles, grant_roles, kit_config_doc, world_of

if TYPE_CHECKING:
    from harness.e2e.run import ExampleRun

STANDIN_DELAY_S = 2.5  # the stand-in's simulated replication latency


def prepare_standin(target: LiveTarget, control: Control, s: Settings, *, authz: bool = True) -> None:
    """The stand-in as the sandbox: the accounts, the organization with the run's OU, authorization on (for a
    Terraform deploy: once the e2e tools have run, as they assume roles the run does not give permissions), the
    replication service's delay."""
    target.keys = control.seed_accounts(sorted({s.account_id, s.replica_account_id, s.management_account_id}))
    control.seed_organization(
        s.management_account_id, {s.organizational_unit: sorted({s.account_id, s.replica_account_id})}
    )
    control.call("live/authz", {"on": authz})
    control.call("live/replication-delay", {"seconds": STANDIN_DELAY_S})


def as_break_glass(doc: dict[str, Any], glass: dict[str, str]) -> dict[str, Any]:
    """The stack's providers assume their account's break-glass principal instead of its deploy role, where the
    configuration names one (a stack without a deploy role keeps the caller's credentials). Tearing a replica down is
    a break-glass deploy: its own bucket policy refuses the deploy role every protected delete."""
    for blocks in doc.get("provider", {}).values():
        for block in blocks if isinstance(blocks, list) else [blocks]:
            roles = block.get("assume_role") or []
            for role in roles if isinstance(roles, list) else [roles]:
                role["role_arn"] = glass.get(role["role_arn"].split(":")[4], role["role_arn"])
    return doc


def destroy(run: ExampleRun) -> list[str]:
    """`terraform destroy` of every stack with its KIT_ALLOW_DESTROY=1 synth, as break-glass, last applied first;
    the stacks whose destroy failed (cleanup's sweep then deletes what the run owns)."""
    from harness.e2e.run import stack_order, synth, write_stack
    from s3tables_kit.topology.config import load_config

    glass: dict[str, str] = {}
    for arn in load_config(run.config).protection.break_glass_principals:
        glass.setdefault(arn.split(":")[4], arn)
    loose, manifest = synth(run.config, run.synth_dir.with_name("synth-destroy"), allow_destroy=True)
    localized = run.localized(loose, run.creds)
    failed = []
    for stack in reversed(stack_order(manifest)):
        stack_dir = run.dir / "apply" / "stacks" / stack
        if not stack_dir.is_dir():
            continue
        write_stack(stack_dir, as_break_glass(localized[stack].document, glass))
        proc = run.tf.run(["destroy", "-auto-approve", "-input=false", "-no-color", "-lock=false"], stack_dir)
        if proc.returncode != 0:
            failed.append(stack)
    return failed


def terraform_deployer(control: Control, workdir: Path) -> Deployer:
    """The run's deploy through the e2e code path, on the stand-in; its world's teardown destroys every stack."""

    def deploy_with_terraform(target: LiveTarget, plan: RunPlan) -> dict[str, Any]:
        if target.endpoint is None:
            raise Refused("--apply terraform runs against the stand-in only (on AWS the run deploys through the APIs)")
        create_run_roles(target, plan)
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir.resolve() / f"{plan.name_prefix}.toml"
        config.write_text(toml_text(kit_config_doc(plan)))
        try:
            run = terraform_apply(config, RunningStandin(target.endpoint), workdir)
        except DeployError as exc:
            if "needs `terraform`" in str(exc):
                raise Refused(str(exc)) from None
            raise RuntimeError(f"terraform path failed: {exc}") from None
        print(
            f"terraform: {len(run.stacks)} stacks applied, plans after apply empty, destroy protection holds; "
            f"tools: {', '.join(f'{t.tool} {t.exit_code}' for t in run.tools)}",
            flush=True,
        )
        grant_roles(target, plan)
        control.call("live/authz", {"on": True})
        return {**world_of(target, plan), "teardown": lambda: destroy(run)}

    return deploy_with_terraform


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("python -m harness.live_standin")
    p.description = __doc__
    p.add_argument("--stand-in", action="store_true", help="a fresh local emulator (the default)")
    p.add_argument("--endpoint", help="a running emulator's URL")
    p.add_argument(
        "--apply", choices=["api", "terraform"], default="api",
        help="deploy through the public APIs (default) or through Terraform as make e2e does",
    )  # fmt: skip
    ns = p.parse_args(argv)
    try:
        settings, plan = settings_and_plan(ns)
    except Refused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    emu = None if ns.endpoint else Emulator().start()
    try:
        target = LiveTarget(endpoint=ns.endpoint or (emu.url if emu else None))
        control = Control(str(target.endpoint))
        prepare_standin(target, control, settings)
        terraform = ns.apply == "terraform"
        return run_command(
            ns,
            target,
            plan,
            control=control,
            deployer=terraform_deployer(control, ns.out / "terraform") if terraform else api_deploy,
            before_deploy=(lambda: control.call("live/authz", {"on": False})) if terraform else None,
        )
    finally:
        if emu is not None:
            emu.stop()


if __name__ == "__main__":
    sys.exit(main())
