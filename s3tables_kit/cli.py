"""`s3tables-kit`: one command for every tool an engineer runs, each a subcommand with the tool's own `--help`.

    s3tables-kit status --outputs outputs.json --problems-only
    s3tables-kit recover --outputs outputs.json --table analytics.orders --as-of 2026-11-20T09:00:00Z --dry-run

A subcommand is a row of `COMMANDS`: the module whose `main(argv) -> int` runs it, the group `--help` lists it under,
and the extra its packages come from. The tool's exit code is the command's (0 healthy, 1 unhealthy, 2 refused).
A missing extra is one line naming it; a tool of the harness (the local stand-in, the drills, the proofs) runs from a
checkout of the kit and says so when the wheel does not hold it. Nothing is imported before a subcommand is chosen,
so `--help` and the on-call tools start without Spark, jsii or the CDKTF bindings.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from s3tables_kit.topology import paths

DISTRIBUTION = "s3tables-replica-kit"
EXIT_REFUSED = 2


@dataclass(frozen=True)
class Command:
    name: str
    module: str  # whose `main(argv) -> int` runs it: a product module (`s3tables_kit.<package>...`) or a harness one
    summary: str
    group: str  # a key of GROUPS
    extra: str = ""  # the extra whose packages it imports ("" for the base install)
    checkout: bool = False  # part of the harness: runs from a checkout of the kit, not shipped in the wheel
    make_target: str = ""  # the checkout's make target that runs it, where it is not the command's name


GROUPS = {
    "on-call": "On call (base install)",
    "recover": "Recovery on Spark ([spark] extra; the jars are fetched on first use)",
    "deploy": "Provision and review",
    "practise": "Practise and prove (from a checkout of the kit)",
}

COMMANDS: tuple[Command, ...] = (
    Command(
        "status", "s3tables_kit.jobs.ops.status", "replication status, lag, recovery windows; --backfill", "on-call"
    ),
    Command("audit", "s3tables_kit.jobs.ops.audit", "compare live protections with the configuration", "on-call"),
    Command("harden", "s3tables_kit.jobs.ops.harden", "table policies and retention on new replicas", "on-call"),
    Command("discover", "s3tables_kit.jobs.ops.discover", "an existing lake read: a kit.toml to adopt it", "on-call"),
    Command("failover", "s3tables_kit.jobs.failover.cli", "promote a replica bucket in place (plan first)", "on-call"),
    Command(
        "explain", "s3tables_kit.policies.explain", "why a request is allowed or denied, by layer and Sid", "on-call"
    ),
    Command("recover-emr", "s3tables_kit.jobs.emr_submit", "submit recovery to EMR Serverless", "on-call"),
    Command(
        "recover",
        "s3tables_kit.jobs.recover.cli",
        "writable, verified copy of a replica or of a backup",
        "recover",
        "spark",
    ),
    Command("rehearse", "s3tables_kit.jobs.rehearse", "recovery rehearsal with a measured RTO", "recover", "spark"),
    Command(
        "backup",
        "s3tables_kit.jobs.vault.cli",
        "incremental backup of replica tables into the vault",
        "recover",
        "spark",
    ),
    Command("fetch-jars", "s3tables_kit.jobs.jars", "download the pinned Iceberg jars (SHA-256 checked)", "recover"),
    Command("summary", "s3tables_kit.infra.summary", "what `cdktf deploy` of a configuration creates", "deploy"),
    Command("outputs", "s3tables_kit.infra.write_outputs", "write outputs.json after `cdktf deploy`", "deploy"),
    Command("policies", "s3tables_kit.policies.render", "render the policy documents for review", "deploy"),
    Command(
        "lockcheck", "s3tables_kit.infra.lockcheck", "refuse a saved plan that changes a locked protection", "deploy"
    ),
    Command(
        "adopt-gate", "s3tables_kit.infra.adoptgate", "refuse a saved plan that overwrites an adopted bucket", "deploy"
    ),
    Command("live-verify", "s3tables_kit.infra.live.run", "prove the kit's AWS assumptions on a sandbox", "deploy"),
    Command("sandbox", "harness.sandbox", "the example deployed into the local stand-in", "practise", checkout=True),
    Command(
        "drill", "harness.drills.demo", "the replica-recovery drill on local Spark", "practise", "spark", True, "demo"
    ),
    Command("failover-drill", "harness.drills.failover", "failover drill on the stand-in", "practise", checkout=True),
    Command(
        "vault-drill",
        "harness.drills.vault",
        "restore from the vault on the stand-in",
        "practise",
        "spark",
        True,
        "drill-vault",
    ),
    Command("proofs", "harness.proofs", "the IAM proofs and attack sequences", "practise", checkout=True),
)
BY_NAME = {c.name: c for c in COMMANDS}

# The first module of each extra that a missing install fails on.
EXTRA_OF_MODULE = {
    "pyspark": "spark",
    "py4j": "spark",
    "cdktf": "infra",
    "cdktf_cdktf_provider_aws": "infra",
    "jsii": "infra",
    "constructs": "infra",
    "moto": "standin",
    "cbor2": "standin",
}
EXTRA_PROBE = {"spark": "pyspark", "infra": "cdktf", "standin": "moto"}  # one module that proves each extra
HARNESS_MODULES = frozenset({"harness", "emulator", "bench", "tests"})


def usage() -> str:
    lines = [
        "usage: s3tables-kit <command> [args...]   (s3tables-kit <command> --help for its arguments; --version)",
        "",
    ]
    for group, title in GROUPS.items():
        lines.append(f"{title}:")
        lines += [f"  {c.name:<15} {c.summary}" for c in COMMANDS if c.group == group]
        lines.append("")
    lines.append(
        "Exit codes: 0 healthy or done, 1 unhealthy (a table failed, a replica lags), 2 refused or set-up wrong."
    )
    return "\n".join(lines)


def missing_dependency(cmd: Command, err: ModuleNotFoundError) -> str | None:
    """The one line for a subcommand whose packages are not installed; None when `err` is not about them."""
    top = (err.name or "").split(".")[0]
    if top in HARNESS_MODULES or (cmd.checkout and top == cmd.module.split(".")[0]):
        return (
            f"s3tables-kit {cmd.name} runs from a checkout of the kit (the local stand-in and the drills are not in "
            f"the wheel): clone the repository and run `make {cmd.make_target or cmd.name}` there"
        )
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return f"s3tables-kit {cmd.name} needs the [{extra}] extra: pip install '{DISTRIBUTION}[{extra}]' (missing: {top})"


def extra_missing(cmd: Command) -> str | None:
    """The one line for a subcommand whose extra is not installed, checked before it runs (its `--help` needs none)."""
    probe = EXTRA_PROBE.get(cmd.extra)
    if probe is None or importlib.util.find_spec(probe) is not None:
        return None
    return missing_dependency(cmd, ModuleNotFoundError(name=probe))


def load(cmd: Command) -> Callable[[list[str]], int]:
    root = paths.checkout() if cmd.checkout else None
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))  # the harness runs from a checkout: its packages sit beside s3tables_kit/
    module = importlib.import_module(cmd.module)
    entry: Callable[[list[str]], int] = module.main
    return entry


def installed_version() -> str:
    """The installed distribution's version (a checkout that is not installed says so)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed: a checkout)"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else EXIT_REFUSED
    if args[0] in ("--version", "-V"):
        print(f"s3tables-kit {installed_version()}")
        return 0
    cmd = BY_NAME.get(args[0])
    if cmd is None:
        print(f"s3tables-kit: unknown command {args[0]!r}; `s3tables-kit --help` lists them", file=sys.stderr)
        return EXIT_REFUSED
    wants_help = any(a in ("-h", "--help") for a in args[1:])
    line = None if wants_help else extra_missing(cmd)
    if line is not None:
        print(line, file=sys.stderr)
        return EXIT_REFUSED
    try:
        entry = load(cmd)
    except ModuleNotFoundError as err:
        line = missing_dependency(cmd, err)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return EXIT_REFUSED
    try:
        return entry(args[1:])
    except ValueError as err:
        from s3tables_kit.topology.issues import KitRefusal  # here, not at start: `--help` imports nothing

        if not isinstance(err, KitRefusal):
            raise
        print(f"s3tables-kit {cmd.name}: {err}", file=sys.stderr)  # input the kit refuses: its lines, no traceback
        return EXIT_REFUSED
    except ModuleNotFoundError as err:  # a tool that imports an extra only once it knows it needs it
        line = missing_dependency(cmd, err)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())
