"""`make e2e`'s later deploys, on a normal topology once its first deploy has passed (the lock after the first
deploy: docs/decisions/0028-lock-after-first-deploy.md):

1. **The second deploy**, a change a platform engineer makes on a running kit and that touches nothing protective:
   `[assurance.monitor] max_replication_point_age_minutes` doubled (the point alarm fires too early). The changed
   configuration is synthesized; every stack whose applied document changes (the source stack: the point alarm's
   threshold and the dashboard's line) is planned to a file, the plan must change at least one resource and
   destroy nothing, `s3tables_kit.infra.lockcheck` must find no locked change in it, then it is applied and the plan
   after it (refreshing the changed resources and what they depend on) must be empty. The other stacks' documents are
   unchanged: their plan is the empty plan already proven. The stand-in records the provider's calls of this deploy
   by resource (`emulator.served`, phase `second deploy`): a write on a resource the kit's allow-lists match by
   name, outside the deploy roles' reviewed set, fails the step (`harness.drills.deploy_actions`).
2. **The refusal of a locked change**: the first replica's noncurrent files removed sooner
   (`unreferenced_file_removal.noncurrent_days` halved: a bucket maintenance setting, one resource of one stack).
   The replica stack is planned with it (not applied; its applied document is restored): `s3tables_kit.infra.lockcheck`
   must refuse the plan ("this change is a break-glass deploy", naming `PutTableBucketMaintenanceConfiguration` on the
   replica), and the stand-in, authorizing by the deployed documents (`emulator/live.py`), must refuse the same call
   with AccessDenied to the replica's deploy role (to a non-break-glass role of the replica's account where the
   configuration names none: there the credentials that run `cdktf`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from emulator.process import Emulator
from harness.drills import deploy_actions
from harness.e2e.plans import plan_actions, planned_summary, transition_problems
from harness.e2e.stackio import client, protected_addresses, synth_config, write_stack
from harness.e2e.standins import Credentials, Localized
from harness.e2e.terraform import Terraform
from s3tables_kit.infra.lockcheck import Classifier, Locked, refusal
from s3tables_kit.infra.validate import Json
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.loader import parse_config


class ExampleRunView(Protocol):
    """What the later deploys use of `harness.e2e.run.ExampleRun` (its run of one normal topology)."""

    config: Path
    dir: Path
    tf: Terraform
    emu: Emulator
    creds: dict[str, Credentials]
    applied: dict[str, Localized]

    def localized(self, docs: dict[str, Json], creds: dict[str, Credentials]) -> dict[str, Localized]: ...


SECOND_DEPLOY = "second deploy"
AFTER_SECOND_DEPLOY = "after the second deploy"  # the tools' and the locked change's calls, not a deploy's
LOCK_REFUSAL = "locked change refused"
STANDIN_DEPLOYER = "kit-e2e-deploy"  # the non-break-glass role of a replica account whose configuration names none
POINT_DEFAULT_MINUTES = 60  # s3tables_kit.topology.assurance.Monitor's default
NONCURRENT_DEFAULT_DAYS = 10  # s3tables_kit.topology.model.UnreferencedFileRemoval's default


def non_protective(data: dict[str, Any]) -> str:
    """The second deploy's change, made to the configuration's data in place; its description."""
    monitor = data.setdefault("assurance", {}).setdefault("monitor", {})
    old = int(monitor.get("max_replication_point_age_minutes", POINT_DEFAULT_MINUTES))
    monitor["max_replication_point_age_minutes"] = 2 * old
    return f"[assurance.monitor] max_replication_point_age_minutes {old} -> {2 * old}"


def protective(data: dict[str, Any], cfg: KitConfig) -> str:
    """A locked change: the first replica's noncurrent files removed sooner (unreferenced-file removal, a bucket
    maintenance setting: storage saved, the window to read an older snapshot's files shortened)."""
    bucket = cfg.replicas[0].bucket
    site = next(r for r in data["replicas"] if r["bucket"] == bucket)
    removal = dict(site.get("unreferenced_file_removal") or {})
    old = int(removal.get("noncurrent_days", NONCURRENT_DEFAULT_DAYS))
    site["unreferenced_file_removal"] = {**removal, "noncurrent_days": max(1, old // 2)}
    return f"[[replicas]] {bucket}: unreferenced_file_removal.noncurrent_days {old} -> {max(1, old // 2)}"


def changed_config(config: Path, change: Callable[[dict[str, Any]], str]) -> tuple[KitConfig, str]:
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    what = change(data)
    return parse_config(data, f"{config} ({what})", base_dir=config.parent), what  # an adopter's policy file beside it


class LaterDeploys:
    """The second deploy and the refused locked change of one normal topology's run."""

    def __init__(self, run: ExampleRunView, cfg: KitConfig) -> None:
        self.run = run
        self.cfg = cfg

    def _stack_dir(self, stack: str) -> Path:
        return self.run.dir / "apply" / "stacks" / stack

    def _synth(self, cfg: KitConfig, name: str) -> tuple[dict[str, Json], dict[str, Any]]:

        docs = synth_config(cfg, self.run.dir / name)
        return docs, self.run.localized(docs, self.run.creds)

    def _plan(self, stack_dir: Path, out: str, *extra: str) -> Json:
        tf = self.run.tf
        args = ["plan", f"-out={out}", "-input=false", "-no-color", "-lock=false", *extra]
        tf.checked(args, stack_dir, log=f"plan-{out}")
        return json.loads(tf.checked(["show", "-json", out], stack_dir, log=f"show-{out}").stdout)

    # ---------------------------------------------------------------- 1. the second deploy ----

    def second_deploy(self) -> tuple[int, str]:
        """(exit code, what happened) of the second deploy."""

        cfg2, what = changed_config(self.run.config, non_protective)
        _, localized = self._synth(cfg2, "synth-second")
        changed = [s for s, loc in localized.items() if loc.document != self.run.applied[s].document]
        lines = [f"change: {what}; stacks whose document changed: {', '.join(changed) or 'none'}"]
        if not changed:
            return 1, "\n".join([*lines, "the change changed no stack"])
        record, started = self._record(SECOND_DEPLOY)  # what the provider calls from here on, by resource
        try:
            code = self._apply_each(changed, localized, cfg2, lines)
        finally:  # the tools' and the locked change's calls are not a deploy's
            self.run.emu.control.call("served", {"phase": AFTER_SECOND_DEPLOY, **({"path": ""} if started else {})})
        if code:
            return code, "\n".join(lines)
        served = json.loads(record.read_text()).get(SECOND_DEPLOY, {})  # this phase only (a chain shares the server)
        calls = deploy_actions.check({SECOND_DEPLOY: served}, [self.cfg.kit.name])
        lines += deploy_actions.lines(calls)
        return (1 if calls.failing else 0), "\n".join(lines)

    def _apply_each(self, changed: list[str], localized: dict[str, Any], cfg2: KitConfig, lines: list[str]) -> int:
        """Plan, check and apply each changed stack, then plan it again; 1 at the first that fails (`lines` says
        why)."""
        for stack in changed:
            stack_dir = self._stack_dir(stack)
            loc = localized[stack]
            write_stack(stack_dir, loc.document)
            assets = self.run.dir / "synth-second" / "stacks" / stack / "assets"
            if assets.is_dir():
                shutil.copytree(assets, stack_dir / "assets", dirs_exist_ok=True)
            plan = self._plan(stack_dir, "second.tfplan")
            actions = plan_actions(plan)
            before = self.run.applied[stack].document
            problems = transition_problems(actions, protected_addresses(loc.document) | protected_addresses(before))
            locked = Classifier(cfg2).locked(plan)
            lines.append(f"{stack}: plan {planned_summary(actions)}: {', '.join(sorted(actions)) or 'nothing'}")
            if not actions or problems or locked:
                why = "changes nothing" if not actions else "; ".join(problems) or refusal(locked)
                lines.append(f"{stack}: {why}")
                return 1
            self.run.tf.checked(["apply", "-input=false", "-no-color", "second.tfplan"], stack_dir, log="apply-second")
            self.run.applied[stack] = loc
            # The plan after it, refreshing what the apply changed (and what that depends on): the apply of a saved
            # plan touches nothing else, and the rest of the stack's empty refreshed plan was proven after the first
            # deploy. Refreshing the whole stack again would double the step's time.
            targets = [f"-target={a}" for a in sorted(actions)]
            again = ["plan", "-detailed-exitcode", "-input=false", "-no-color", "-lock=false", *targets]
            after = self.run.tf.run(again, stack_dir, log="plan-after-second")
            verdict = {0: "empty", 2: "changes"}.get(after.returncode, "error")
            lines.append(f"{stack}: applied; no locked change (s3tables_kit.infra.lockcheck); plan after apply, "
                f"refreshing the "
                         f"{len(actions)} changed: {verdict}")  # fmt: skip
            if after.returncode != 0:
                return 1
        return 0

    def _record(self, phase: str) -> tuple[Path, bool]:
        """The stand-in's record of served calls (`emulator.served`), switched to `phase`: the file it writes (one
        beside the run when none was started with the server: then True, for the caller to stop it)."""
        path = str(self.run.emu.control.call("served", {"phase": phase})["path"])
        if path:
            return Path(path), False
        path = str(self.run.dir / "served.json")
        self.run.emu.control.call("served", {"path": path})
        return Path(path), True

    # ---------------------------------------------------------------- 2. the refused locked change ----

    def locked_change(self) -> tuple[int, str]:
        """(exit code, what happened) of the locked change: 0 when both the check and the stand-in refuse it."""

        rep = self.cfg.replicas[0]
        stack = f"replica-{rep.bucket}"
        cfg3, what = changed_config(self.run.config, lambda d: protective(d, self.cfg))
        _, localized = self._synth(cfg3, "synth-locked")
        stack_dir = self._stack_dir(stack)
        try:
            write_stack(stack_dir, localized[stack].document)
            # Never applied: what it would change is the configuration against the state, no refresh needed.
            plan = self._plan(stack_dir, "locked.tfplan", "-refresh=false")
        finally:
            write_stack(stack_dir, self.run.applied[stack].document)
        found = Classifier(cfg3).locked(plan)
        lines = [f"change: {what}; {stack}: plan {planned_summary(plan_actions(plan))}", refusal(found)]
        value = _planned_removal(plan, rep.bucket)
        wanted = "s3tables:PutTableBucketMaintenanceConfiguration"
        if value is None or not any(f.action == wanted and f.resource == rep.bucket_arn for f in found):
            return 1, "\n".join([*lines, "the check did not refuse the maintenance configuration's change"])
        role = rep.deploy_role_arn or rep.role_arn(STANDIN_DEPLOYER)
        call = {"tableBucketARN": rep.bucket_arn, "type": "icebergUnreferencedFileRemoval", "value": value}
        answer = self._applied_anyway(role, rep.account_id, rep.region, call)
        lines.append(f"applied anyway as {role}: {answer}")
        return (0 if "AccessDenied" in answer else 1), "\n".join(lines)

    def _applied_anyway(self, role: str, account: str, region: str, call: dict[str, Any]) -> str:
        """The stand-in's answer to the plan's `PutTableBucketMaintenanceConfiguration` made by `role`, with its
        authorization on."""

        emu, key = self.run.emu, self.run.creds[account]
        iam = client(emu, key, "iam", "us-east-1")
        with contextlib.suppress(iam.exceptions.EntityAlreadyExistsException):
            trust = {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"}, "Action": "sts:AssumeRole"}
            ]}  # fmt: skip
            iam.create_role(RoleName=role.rsplit("/", 1)[-1], AssumeRolePolicyDocument=json.dumps(trust))
        session = client(emu, key, "sts", region).assume_role(RoleArn=role, RoleSessionName="kit-e2e-deploy")
        creds = session["Credentials"]
        import boto3
        from botocore.exceptions import ClientError

        s3tables = boto3.session.Session(
            aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"], region_name=region,
        ).client("s3tables", endpoint_url=emu.url)  # fmt: skip
        emu.control.call("live/authz", {"on": True})
        try:
            s3tables.put_table_bucket_maintenance_configuration(**call)
            return "applied (NOT refused)"
        except ClientError as err:
            return f"{err.response['Error']['Code']}: {err.response['Error'].get('Message', '')}"
        finally:
            emu.control.call("live/authz", {"on": False})


def _planned_removal(plan: Json, bucket: str) -> dict[str, Any] | None:
    """The `icebergUnreferencedFileRemoval` value the plan would write on the table bucket named `bucket` (the aws
    resource's `maintenance_configuration` or the awscc one's `unreferenced_file_removal`)."""
    for rc in plan.get("resource_changes") or []:
        change = rc.get("change") or {}
        before, after = change.get("before") or {}, change.get("after") or {}
        if bucket not in (before.get("name"), before.get("table_bucket_name")):
            continue
        status: Any
        unreferenced: Any
        noncurrent: Any
        ufr = (after.get("maintenance_configuration") or {}).get("iceberg_unreferenced_file_removal")
        if ufr:
            days: Json = ufr.get("settings") or {}
            status, unreferenced, noncurrent = (
                ufr.get("status"),
                days.get("unreferenced_days"),
                days.get("non_current_days"),
            )
        elif after.get("unreferenced_file_removal"):
            ufr = after["unreferenced_file_removal"]
            status, unreferenced, noncurrent = (
                ufr.get("status"),
                ufr.get("unreferenced_days"),
                ufr.get("noncurrent_days"),
            )
        else:
            continue
        settings = {"unreferencedDays": int(unreferenced), "nonCurrentDays": int(noncurrent)}
        return {"status": str(status).lower(), "settings": {"icebergUnreferencedFileRemoval": settings}}
    return None


def timed(step: Callable[[], tuple[int, str]]) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        code, text = step()
    except Exception as exc:  # a failed terraform command or API call is this step's failure, reported in the table
        code, text = 1, f"{type(exc).__name__}: {exc}"
    return code, text, round(time.monotonic() - t0, 1)


__all__ = ["LOCK_REFUSAL", "SECOND_DEPLOY", "LaterDeploys", "Locked", "timed"]
