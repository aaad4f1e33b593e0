"""`make sandbox`: the on-call path on a laptop. The local AWS stand-in (`emulator/`) with a deployed example holding
real Iceberg tables, an `outputs.json`, and the commands to practise, running until stopped.

    python -m harness.sandbox [--config examples/seed.toml] [--out sandbox-out] [--port 4566] [--apply] [--once]
    python -m harness.sandbox --brownfield [one] [--out sandbox-out] [--port 4566] [--once]   # sandbox_brownfield.py

  1. the emulator on 127.0.0.1:<port>, serving every request signed with the fake credentials as the configuration's
     account (so the plain commands, with no role flags, act in that account);
  2. the example deployed into it, by default by seeding (seconds): what `cdktf deploy` leaves behind, created through
     the same public APIs Terraform calls (table buckets with their encryption and storage class, namespaces, tables
     with their retention, the replica bucket policies, each source's bucket policy (its layer against changing its
     replication: `put_source_bucket_policies`), the replication configuration, the recovery bucket, the SCPs on the
     organization's targets), and the outputs contract of that deploy (`harness.deploy`);
     with `--apply`, by the real Terraform apply of `make e2e` instead (needs `terraform` and a provider mirror, see
     `make validate`; minutes), whose `terraform output` is the outputs file;
  3. a writer's commits to every source table (real Iceberg data and metadata: `jobs/failover/writer.py`), two
     commits a moment apart so that a point in time lies between them, and the replication service simulated;
  4. `<out>/outputs.json`, `<out>/env.sh` (the exports) and the commands to try, printed; then it waits until Ctrl-C
     or SIGTERM and stops the emulator (`--once`: stop right after printing, for scripts).

Nothing is hardened: `make harden` is one of the commands to practise. Exit 0 after a clean stop, 2 when it cannot
start (the port is taken, a configuration spans several accounts without `--apply`, no Terraform toolchain).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from emulator.process import Emulator
from harness.deploy import FAKE_KEY, DeployError, client, deploy, single_account
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.paths import ROOT

POINT_VARIABLE = "SANDBOX_POINT_IN_TIME"  # an instant between the writer's two commits, exported by env.sh
DEFAULT_CONFIG = Path("examples/seed.toml")
DEFAULT_OUT = Path("sandbox-out")
DEFAULT_PORT = 4566
# pyarrow's S3 uploads (pyiceberg writes: the writer, the failover's verification commit) with trailing checksums are
# stored empty by moto: against the emulator the SDK computes checksums only when required. Not needed on AWS.
EMULATOR_CLIENT_ENV = {"AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED"}


class SandboxError(Exception):
    """The sandbox cannot start (exit 2)."""


@dataclass
class Sandbox:
    """A running sandbox: the emulator, the configuration deployed into it, and the files written for the user."""

    config: Path
    cfg: KitConfig
    out: Path
    emu: Emulator
    mode: str  # "seeded" | "applied"
    outputs: Path
    between_commits: str  # an instant between the writer's two commits (UTC, ISO-8601 with Z)
    tables: list[str] = field(default_factory=list)  # the source tables written, "namespace.name"

    @property
    def endpoint(self) -> str:
        return self.emu.url

    def env(self) -> dict[str, str]:
        """What a shell needs to reach the sandbox: the endpoint, fake credentials, a Region, and the checksum setting
        the emulator needs for Iceberg writes."""
        region = self.cfg.sources[0].region  # the emulator answers in every Region: the first source's
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": FAKE_KEY,
            "AWS_SECRET_ACCESS_KEY": FAKE_KEY,
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            **EMULATOR_CLIENT_ENV,
            POINT_VARIABLE: self.between_commits,  # for the runbooks' point-in-time step
        }

    def env_script(self) -> str:
        lines = [
            "# written by `make sandbox`: source it in the shell you practise in",
            "unset AWS_SESSION_TOKEN AWS_PROFILE",
        ]
        return "\n".join([*lines, *(f"export {k}={shlex.quote(v)}" for k, v in self.env().items())]) + "\n"

    def stop(self) -> None:
        self.emu.stop()


def put_source_bucket_policies(s3tables: Any, cfg: KitConfig) -> None:
    """What each source stack deploys on its bucket besides the replication: the reviewed source bucket policy
    (`s3tables_kit.policies.source_guard.source_bucket_policy` of each source,
    docs/decisions/0028-lock-after-first-deploy.md), so that `audit` on the sandbox meets the layer a real deploy has.
    `s3tables`: a Region -> an s3tables client."""
    from s3tables_kit.policies.documents import compact_json
    from s3tables_kit.policies.source_guard import source_bucket_policy

    for src in cfg.sources:
        policy = compact_json(source_bucket_policy(cfg, src))
        s3tables(src.region).put_table_bucket_policy(tableBucketARN=src.bucket_arn, resourcePolicy=policy)


def write_commit(emu: Emulator, bucket_arn: str, region: str, log: Path) -> list[str]:
    """A writer's commit to every table of a source bucket: `jobs/failover/writer.py` (pyiceberg, real data
    files and metadata through the S3 Tables API), as the writers of the source account run it."""
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE")}
    env |= {"PYTHONPATH": str(ROOT), "AWS_ACCESS_KEY_ID": FAKE_KEY, "AWS_SECRET_ACCESS_KEY": FAKE_KEY}
    env |= {"AWS_REGION": region, "AWS_DEFAULT_REGION": region, **EMULATOR_CLIENT_ENV}
    proc = subprocess.run(
        [sys.executable, "-m", "s3tables_kit.jobs.failover.writer", "--bucket-arn", bucket_arn,
         "--endpoint-url", emu.url],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    with log.open("a", encoding="utf-8") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SandboxError(f"the writer's commit to {bucket_arn} failed:\n{(proc.stdout + proc.stderr)[-2000:]}")
    return [line.removeprefix("committed: ") for line in proc.stdout.splitlines() if line.startswith("committed: ")]


def start(
    config: Path = DEFAULT_CONFIG,
    out: Path = DEFAULT_OUT,
    *,
    port: int | None = DEFAULT_PORT,
    apply: bool = False,
    say: Any = print,
) -> Sandbox:
    """Start the emulator, deploy `config` into it (seeding, or `apply`), write real data and replicate it; the
    running sandbox. The caller stops it (`Sandbox.stop`)."""
    cfg = load_config(config)
    try:
        account = cfg.sources[0].account_id if apply else single_account(cfg)
    except DeployError as e:
        raise SandboxError(str(e)) from None
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("outputs.json", "env.sh", "writer.log"):
        (out / stale).unlink(missing_ok=True)
    emu = Emulator(port=port, log=out / "emulator.log", env={"MOTO_ACCOUNT_ID": account}, start_timeout_s=180)
    try:
        emu.start()
    except RuntimeError as e:
        hint = " (another sandbox running? pass --port N)" if "port is taken" in str(e) else ""
        raise SandboxError(f"{e}{hint}") from None
    try:
        outputs = out / "outputs.json"
        t0 = time.monotonic()
        if apply:
            say(f"sandbox: terraform apply of {config} onto {emu.url} (the `make e2e` path; minutes)")
        try:
            doc = deploy(config.resolve(), emu, "terraform" if apply else "api", workdir=out / "e2e")
        except DeployError as e:
            raise SandboxError(str(e)) from None
        outputs.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        if not apply:  # the Terraform apply deploys the source bucket policy with the source stack
            put_source_bucket_policies(lambda region: client(emu.url, "s3tables", region), cfg)
            say(f"sandbox: {config} deployed into {emu.url} by seeding ({time.monotonic() - t0:.1f} s)")
        tables, between = _commits(emu, cfg, out / "writer.log")
        sandbox = Sandbox(config, cfg, out, emu, "applied" if apply else "seeded", outputs, between, tables)
        (out / "env.sh").write_text(sandbox.env_script(), encoding="utf-8")
        return sandbox
    except BaseException:
        emu.stop()
        raise


def replicate(emu: Emulator, cfg: KitConfig) -> int:
    """The replication service: the emulator's hook creates or updates each replica and marks it COMPLETED, then its
    paths are rewritten for the destination as AWS does (`harness.sandbox_replication`). Returns the files copied."""
    from harness.sandbox_replication import rewrite_replicas

    pairs = []
    for src in cfg.sources:
        emu.control.replicate(source_bucket_arn=src.bucket_arn)
        pairs += [(src.bucket_arn, r.bucket_arn) for r in cfg.destinations_of(src)]
    return rewrite_replicas(emu.url, lambda arn: arn.split(":")[3], lambda s, r: client(emu.url, s, r), pairs)


def _commits(emu: Emulator, cfg: KitConfig, log: Path) -> tuple[list[str], str]:
    """Two writer commits to every source table, a moment apart, each replicated: (tables, an instant between)."""
    tables: list[str] = []
    for src in cfg.sources:
        tables += write_commit(emu, src.bucket_arn, src.region, log)
    replicate(emu, cfg)
    time.sleep(1.1)  # commit times are milliseconds: a point in time strictly between the two commits
    between = datetime.now(UTC).replace(microsecond=0)
    time.sleep(1.1)
    for src in cfg.sources:
        write_commit(emu, src.bucket_arn, src.region, log)
    replicate(emu, cfg)
    return sorted(set(tables)), between.isoformat().replace("+00:00", "Z")


def instructions(sb: Sandbox, config_arg: str, out_arg: str) -> str:
    """What `make sandbox` prints once the sandbox is up: the endpoint, the exports and the commands to try."""
    rep = sb.cfg.recovery_replica
    ns = sb.tables[0].split(".")[0] if sb.tables else "analytics"
    break_glass = next(
        (p for p in sb.cfg.protection.break_glass_principals if p.split(":")[4] == rep.account_id),
        sb.cfg.protection.break_glass_principals[0],
    )
    o = f"{out_arg}/outputs.json"
    exports = "\n".join(f"  export {k}={shlex.quote(v)}" for k, v in sb.env().items())
    bg = f"--role-arn {rep.account_id}={break_glass}"
    rec = f"--outputs {o} --endpoint-url $AWS_ENDPOINT_URL --namespace {ns}"
    fo = f"--config {config_arg} --outputs {o} --replica-bucket {rep.bucket} {bg}"
    commands = [
        ("replication status and lag", f'make status ARGS="--outputs {o} --max-lag 30m"'),
        ("what harden would change, then harden", f'make harden ARGS="--outputs {o} --dry-run"'),
        ("", f'make harden ARGS="--outputs {o}"'),
        ("drift against the configuration", f'make audit ARGS="--config {config_arg} --outputs {o}"'),
        ("recovery plan, then a real recovery", f'make recover ARGS="{rec} --dry-run"'),
        ("", f'make recover ARGS="{rec} --report {out_arg}/reports"'),
        (
            "point in time (between the two commits)",
            f'make recover ARGS="{rec} --as-of ${POINT_VARIABLE} --target-namespace recovered_pit"',
        ),
        ("failover plan, then the promotion (consumes the replica)", f'make failover ARGS="{fo}"'),
        ("", f'make failover ARGS="{fo} --confirm {rep.bucket} --report {out_arg}/reports/failover"'),
    ]
    lines = [
        "",
        f"sandbox: up ({sb.mode}) at {sb.endpoint}: {sb.config} with real Iceberg tables ({', '.join(sb.tables)})",
        f"  outputs: {o}   emulator log: {out_arg}/emulator.log",
        f"  source {', '.join(f'{s.bucket} ({s.region})' for s in sb.cfg.sources)}, "
        f"replica {rep.bucket} ({rep.region}), "
        f"recovery {sb.cfg.recovery.bucket}",
        "",
        f"In another shell, from the repository root: `source {out_arg}/env.sh`, or",
        "  unset AWS_SESSION_TOKEN AWS_PROFILE",
        exports,
        "",
        "then try (docs/assurance.md, docs/recovery.md, docs/failover.md):",
    ]
    for comment, cmd in commands:
        if comment:
            lines.append(f"  # {comment}")
        lines.append(f"  {cmd}")
    lines += ["", "Ctrl-C stops the sandbox (everything in it is gone; `make sandbox` again starts afresh)."]
    return "\n".join(lines)


def wait_until_stopped(stop: threading.Event | None = None) -> None:
    """Block until SIGINT or SIGTERM (or `stop` is set)."""
    event = stop or threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        event.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not event.wait(0.5):
            pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m harness.sandbox",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--config", default=str(DEFAULT_CONFIG), help="the configuration to deploy (default %(default)s)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="where outputs.json, env.sh and logs go (%(default)s)")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="loopback port (default %(default)s; 0: any free)")
    ap.add_argument(
        "--apply", action="store_true", help="deploy by the Terraform apply of `make e2e` (needs a provider mirror)"
    )
    ap.add_argument("--once", action="store_true", help="stop right after printing the commands (scripts, tests)")
    ap.add_argument(
        "--brownfield", nargs="?", const="lake", choices=("lake", "one"),
        help="no example deployed: a lake of `make e2e-adopt` to discover (harness/sandbox_brownfield.py): `lake` "
        "(the default) two buckets and a partner's share, `one` the one-account lake that already replicates",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.brownfield:
        return brownfield(Path(args.out), args.port or None, once=args.once, world=args.brownfield)
    try:
        sb = start(Path(args.config), Path(args.out), port=args.port or None, apply=args.apply)
    except SandboxError as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 2
    try:
        print(instructions(sb, args.config, args.out.rstrip("/")), flush=True)
        if not args.once:
            wait_until_stopped()
            print("\nsandbox: stopping", flush=True)
    finally:
        sb.stop()
    return 0


def brownfield(out: Path, port: int | None, *, once: bool, world: str = "lake") -> int:
    from harness import sandbox_brownfield

    try:
        emu, text = sandbox_brownfield.start(out, port, EMULATOR_CLIENT_ENV, world=world)
    except RuntimeError as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 2
    try:
        print(text, flush=True)
        if not once:
            wait_until_stopped()
    finally:
        emu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
