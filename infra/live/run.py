"""`make live-verify`: deploy a one-table kit named after the run, commit real Iceberg data, measure replication
latency, probe the unverified facts, attack the replica from the attacker's seat, promote a throwaway replica, watch a
backfill of a table with history (`infra/live/backfill.py`), freeze the source right after a `PutRows` and watch the
service's deferred commit (`infra/live/streaming.py`), clean up, report. `make live-verify-cleanup RUN=<id>`
finishes a run that did not clean up.

    python -m s3tables_kit.infra.live --aws [--yes] [--settings FILE] [--out DIR]
    python -m s3tables_kit.infra.live cleanup --run ID --aws

Against AWS (`--aws`) the environment's credentials are used. The same run against the local stand-in (a fresh
emulator, or a running one) is `python -m harness.live_standin`, which prepares the emulator and calls `run_command`
with its endpoint and control client. Exit 0 when every probed fact holds, every attack is denied, break-glass
works and nothing is left; 1 otherwise (a contradicted fact that endangers protection or replication is printed
first); 2 when refused.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from s3tables_kit.infra.live.allowlist_facts import probe_allowlist_facts
from s3tables_kit.infra.live.attacks import attack_table
from s3tables_kit.infra.live.backfill import probe_backfill_history
from s3tables_kit.infra.live.cleanup import cleanup, leftovers
from s3tables_kit.infra.live.detection_facts import probe_function_read, probe_job_metrics
from s3tables_kit.infra.live.plan import Refused, RunPlan, Settings, confirm, load_settings, new_run_id
from s3tables_kit.infra.live.probes import (
    Observed,
    blank_facts,
    judge_replication,
    note_replica_settings,
    probe_replication_setup,
    probe_rest_load,
    run_probes,
)
from s3tables_kit.infra.live.report import Report
from s3tables_kit.infra.live.streaming import probe_deferred_commit
from s3tables_kit.infra.live.world import LiveTarget, deploy, harden_replica, kit_config
from s3tables_kit.topology import paths

SETTINGS = paths.ROOT / "examples" / "live-verify" / "live-verify.toml"
OUTDIR = paths.ROOT / ".build" / "live-verify"
POLL_S, WAIT_S = 10.0, 600.0  # AWS: poll status every 10 s, give one commit up to 10 minutes


class Crash(Exception):
    """Injected after apply (a test of live-verify-cleanup): the run stops without cleaning up."""


def _say(text: str) -> None:
    print(text, flush=True)


class StandinControl(Protocol):
    """The stand-in's control endpoint, as the run uses it (the harness passes the emulator's client)."""

    def call(self, path: str, body: dict[str, Any] | None = None) -> Any: ...


def _writer(target: LiveTarget, plan: RunPlan, bucket_arn: str) -> tuple[bool, str]:
    """A writer's commit of real Iceberg data to every table of the source (the same writer `make e2e` runs)."""
    s = plan.settings
    env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
    env.update(PYTHONPATH=str(paths.ROOT), AWS_REGION=s.source_region, AWS_DEFAULT_REGION=s.source_region)
    args = [sys.executable, "-m", "s3tables_kit.jobs.failover.writer", "--bucket-arn", bucket_arn]
    if target.endpoint:
        key = target.keys[s.account_id]
        env.update(AWS_ACCESS_KEY_ID=key["accessKeyId"], AWS_SECRET_ACCESS_KEY=key["secretAccessKey"])
        env.update(MOTO_ALLOW_NONEXISTENT_REGION="true", AWS_REQUEST_CHECKSUM_CALCULATION="WHEN_REQUIRED")
        args += ["--endpoint-url", target.endpoint]
    proc = subprocess.run(args, cwd=paths.ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip().splitlines()[-1:][0] if proc.returncode else ""


def _wait_replicated(
    target: LiveTarget, control: StandinControl | None, src: Any, table_arn: str, committed: dt.datetime
) -> tuple[dict[str, Any], float | None]:
    """Poll the source's replication status until the destination reports an update at or after `committed` (or
    FAILED, or the wait ends); returns the destination entry and the latency in seconds."""
    if control is not None:  # the stand-in's replication service takes its turn
        control.call("live/replicate", {"sourceTableArn": table_arn})
    deadline = time.monotonic() + WAIT_S
    while True:
        dest = (src.get_table_replication_status(tableArn=table_arn).get("destinations") or [{}])[0]
        stamp = dest.get("lastSuccessfulReplicatedUpdate", {}).get("timestamp")
        if stamp is not None and stamp >= committed:
            return dest, (stamp - committed).total_seconds()
        if str(dest.get("replicationStatus", "")).lower() == "failed" or time.monotonic() > deadline:
            return dest, None
        time.sleep(0 if control is not None else POLL_S)


Writer = Callable[[str], tuple[bool, str]]  # bucket ARN -> (every table committed, the error's last line)
# -> the world: source, replica, tables {namespace: ARN}; "teardown" (optional): undoes the deploy, returns what failed
Deployer = Callable[[LiveTarget, RunPlan], dict[str, Any]]


def api_deploy(target: LiveTarget, plan: RunPlan) -> dict[str, Any]:
    return deploy(target, plan, kit_config(plan))


def execute(
    target: LiveTarget,
    plan: RunPlan,
    *,
    control: StandinControl | None = None,
    crash_after_apply: bool = False,
    writer: Writer | None = None,
    deployer: Deployer = api_deploy,
    earlier: list[str] | None = None,
) -> Report:
    """One run; `writer` commits to every table of the source (default: the writer subprocess `make e2e` runs; the
    tests pass the same writer function in-process to save a Python start per commit)."""
    t0 = time.monotonic()
    s = plan.settings
    report = Report(plan.run_id, "aws" if not target.local else f"stand-in {target.endpoint}")
    report.estimated_usd = 0.0 if target.local else plan.estimate()[0]
    if earlier is None:  # main() lists them before it asks for confirmation
        earlier = announce_leftovers(target, plan)
    report.earlier_leftovers = earlier
    cfg = kit_config(plan)
    facts = blank_facts()
    world: dict[str, Any] = {}
    try:
        world = deployer(target, plan)
        _say(f"deployed: {world['source']} -> {world['replica']}")
        if crash_after_apply:
            raise Crash(f"injected crash after apply (run {plan.run_id})")
        src = target.client("s3tables", s.source_region, s.account_id)
        src.tag_resource(resourceArn=world["tables"]["throwaway"], tags=plan.tags)  # U1: a tagged source table
        roles = {w: plan.role_arn(w, s.replica_account_id) for w in ("deploy", "admin", "break-glass")}
        as_role = {w: target.as_role(arn, "s3tables", s.replica_region) for w, arn in roles.items()}
        main, throwaway = world["tables"][plan.namespace], world["tables"]["throwaway"]
        statuses: dict[str, dict[str, Any]] = {}
        replicas: dict[str, str] = {}
        writer_ok, tail, detach, detached, first_throwaway = True, "", None, {}, {}
        write = writer or (lambda arn: _writer(target, plan, arn))
        for i in range(s.commits):
            ok, out = write(world["source"])
            writer_ok, tail = writer_ok and ok, tail or out
            committed = _commit_time(target, s.account_id, src, main)
            for arn in (main, throwaway) if i == 0 or detach is not None else (main,):
                statuses[arn], latency = _wait_replicated(target, control, src, arn, committed)
                if arn == main and latency is not None:
                    report.latencies_s.append(latency)
                if i == 0 and statuses[arn].get("destinationTableArn"):
                    replicas[arn] = statuses[arn]["destinationTableArn"]
                if i == 0 and arn == throwaway:
                    first_throwaway = dict(statuses[arn])
            if i == 0 and main in replicas:
                harden_replica(target, plan, cfg, replicas[main])
            if i == 0 and throwaway in replicas:  # the real promotion of a throwaway replica, as break-glass
                detach = _promote(as_role["break-glass"], replicas[throwaway])
        if throwaway in replicas:
            detached = src.get_table_replication_status(tableArn=throwaway)["destinations"][0]
        obs = Observed(statuses, writer_ok, tail, detach, detached, first_throwaway)
        if judge_replication(facts, obs, world, plan.namespace) and main in replicas:
            s3 = target.client("s3", s.source_region, s.account_id)
            run_probes(facts, obs, src, as_role["break-glass"], s3, world, replicas, plan.namespace)
            note_replica_settings(facts["U2"], as_role["break-glass"], replicas[main])
            setup = target.as_role(plan.role_arn("setup"), "s3tables", s.source_region)
            probe_replication_setup(facts["U27"], setup, src, world["source"], s.cross_account)
            replica = as_role["break-glass"].get_table(tableArn=replicas[main])
            where = {"tableBucketARN": world["replica"], "namespace": replica["namespace"][0], "name": replica["name"]}
            policy = as_role["break-glass"].get_table_policy(**where)["resourcePolicy"]
            kept = as_role["break-glass"].get_table_maintenance_configuration(**where)["configuration"]
            report.attacks = attack_table(
                as_role, {**where, "tableARN": replicas[main]}, policy, kept["icebergSnapshotManagement"]
            )
            reader = target.assumed(plan.role_arn("reader", s.replica_account_id), s.replica_region)
            endpoint = str(as_role["break-glass"].meta.endpoint_url)  # the replica Region's S3 Tables endpoint
            probe_rest_load(facts["U25"], endpoint, s.replica_region, reader, replica)  # a speed fact: last
        else:
            report.error = "the table never replicated: no replica to probe or attack"
        turn = None if control is None else lambda arn: control.call("live/replicate", {"sourceTableArn": arn})
        probe_backfill_history(facts["U26"], target, plan, write, turn, facts["U35"])  # its own pair of buckets
        probe_allowlist_facts(facts, target, plan)  # U31-U34: resources of their own, as the run's admin role
        probe_job_metrics(facts, target, plan)  # U37, U38: a schedule group and an application of their own (AWS)
        probe_function_read(facts["U39"], target, plan)  # a function of its own, read from the second account
        if main in replicas:  # the run's main source table has a schema and data: one PutRows row, then the freeze
            glass = cfg.protection.break_glass_principals
            probe_deferred_commit(
                facts["U30"], src, world["source"], main, plan.namespace, plan.table, glass, target.local
            )
    except Crash:
        report.error = "crashed after apply (injected): run make live-verify-cleanup RUN=" + plan.run_id
        report.facts = list(facts.values())
        report.seconds = time.monotonic() - t0
        return report
    except Refused as exc:
        report.error = f"refused: {exc}"
    except Exception as exc:  # any failure is the run's verdict; cleanup still runs
        report.error = f"{type(exc).__name__}: {exc}"
    finally:
        report.facts = list(facts.values())
    try:
        teardown = world.get("teardown")  # a deployer that owns state (Terraform) undoes its own deploy first
        if teardown is not None:
            failed = teardown()
            _say("terraform destroy (KIT_ALLOW_DESTROY=1): " + (f"FAILED for {failed}" if failed else "every stack"))
        report.left_after_cleanup = cleanup(target, plan)
    except Refused as exc:  # what the run may not delete stays, and is listed
        report.error = f"refused: {exc}" + (f" (after: {report.error})" if report.error else "")
        report.left_after_cleanup = leftovers(target, plan)
    report.seconds = time.monotonic() - t0
    return report


def announce_leftovers(target: LiveTarget, plan: RunPlan) -> list[str]:
    found = leftovers(target, plan, any_run=True)
    if found:
        _say("LEFTOVERS OF AN EARLIER RUN (make live-verify-cleanup RUN=<id> for each run id):")
        for x in found:
            _say(f"  {x}")
    return found


def _commit_time(target: LiveTarget, account: str, src: Any, table_arn: str) -> dt.datetime:
    """The commit's own time: `last-updated-ms` of the table's current Iceberg metadata (written by the writer)."""
    import json

    loc = src.get_table(tableArn=table_arn)["metadataLocation"].removeprefix("s3://")
    bucket, _, key = loc.partition("/")
    body = target.client("s3", src.meta.region_name, account).get_object(Bucket=bucket, Key=key)["Body"].read()
    return dt.datetime.fromtimestamp(json.loads(body)["last-updated-ms"] / 1000, dt.UTC)


def _promote(breakglass: Any, replica_arn: str) -> Any:
    from botocore.exceptions import ClientError

    try:
        return breakglass.disassociate_table_replication(tableArn=replica_arn)
    except ClientError as exc:
        return exc


def parser(prog: str = "python -m s3tables_kit.infra.live") -> argparse.ArgumentParser:
    """The options every live-verify run takes; the caller adds where it runs (`--aws`, or the stand-in's)."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs="?", default="run", choices=["run", "cleanup"])
    p.add_argument("--settings", type=Path, default=SETTINGS)
    p.add_argument("--run", help="the run id (cleanup: required; run: default a new one)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation (CI)")
    p.add_argument("--out", type=Path, default=OUTDIR)
    p.add_argument("--crash-after-apply", action="store_true", help=argparse.SUPPRESS)
    return p


def settings_and_plan(ns: argparse.Namespace) -> tuple[Settings, RunPlan]:
    """The run's settings and plan from the parsed options; Refused when they do not load or cleanup lacks --run."""
    settings = load_settings(ns.settings)
    if ns.command == "cleanup" and not ns.run:
        raise Refused("cleanup needs --run <id>")
    return settings, RunPlan(settings, ns.run or new_run_id())


def run_command(
    ns: argparse.Namespace,
    target: LiveTarget,
    plan: RunPlan,
    *,
    control: StandinControl | None = None,
    deployer: Deployer = api_deploy,
    before_deploy: Callable[[], None] | None = None,
) -> int:
    """The run (or the cleanup) of `plan` against `target`, its report written under `ns.out`; the exit code."""
    try:
        if ns.command == "cleanup":
            left = cleanup(target, plan)
            _say(f"cleanup of run {plan.run_id}: " + (f"LEFT {left}" if left else "nothing left"))
            return 1 if left else 0
        earlier = announce_leftovers(target, plan)
        if not confirm(plan, yes=ns.yes or target.local, local=target.local):  # the stand-in: shown, not asked
            print("not confirmed: nothing created", file=sys.stderr)
            return 2
        if before_deploy is not None:
            before_deploy()
        report = execute(
            target, plan, control=control, crash_after_apply=ns.crash_after_apply, deployer=deployer, earlier=earlier
        )
        md, js = report.write(ns.out)
        _say(report.markdown())
        _say(f"report: {md} and {js}")
        return report.exit_code
    except Refused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    p.add_argument("--aws", action="store_true", help="real AWS with the environment's credentials (required)")
    ns = p.parse_args(argv)
    if not ns.aws:
        print("refused: pass --aws; the local stand-in's run is `python -m harness.live_standin`", file=sys.stderr)
        return 2
    try:
        _settings, plan = settings_and_plan(ns)
    except Refused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    role = plan.settings.second_account_role_arn
    return run_command(ns, LiveTarget(account_roles={plan.settings.replica_account_id: role} if role else {}), plan)
