"""What every tool of the kit shares on its command line: the options that reach AWS (outputs, endpoint, roles,
concurrency, retries) and the exit-code contract (0 ok, 1 unhealthy, 2 refused)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TypedDict

from s3tables_kit.jobs.kernel.clients import Clients, parse_role_arns, resolve_endpoint
from s3tables_kit.jobs.kernel.concurrency import MAX_PROCESSES, PROCESSES_FROM
from s3tables_kit.jobs.kernel.sdk import MAX_ATTEMPTS

EXIT_OK, EXIT_UNHEALTHY, EXIT_REFUSED = 0, 1, 2  # the contract of every tool of the kit
CONCURRENCY = 16  # parallel API calls of a tool's run unless `--concurrency` says otherwise


def refuse(err: Exception) -> int:
    """A set-up error (outputs or configuration missing, unreadable or invalid): its message on stderr, no
    traceback, and exit 2, never 1 (1 means the data or the replication is unhealthy)."""
    print(f"error: {err}", file=sys.stderr)
    return EXIT_REFUSED


def pause_before_second_pass(tool: str, count: int, pause: float, show_progress: bool) -> None:
    """Say (unless quiet) that `count` tables are read again, then give a burst of throttling `pause` seconds."""
    if show_progress:
        print(f"{tool}: {count} table(s) unreadable after retries; reading them again in {pause:g}s", file=sys.stderr)
    time.sleep(pause)


def tool_parser(tool: str, doc: str | None, *, epilog: str | None = None) -> argparse.ArgumentParser:
    """The parser of `s3tables-kit <tool>`: described by the first paragraph of `doc` (the tool's module docstring),
    description and epilog printed as written, so every tool's --help names the command an engineer types."""
    return argparse.ArgumentParser(
        prog=f"s3tables-kit {tool}",
        description=(doc or "").split("\n\n")[0],
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outputs", default="outputs.json", help="outputs contract written after `cdktf deploy`")
    add_client_args(p)


def add_client_args(
    p: argparse.ArgumentParser, *, concurrency: int = CONCURRENCY, json_help: str = "machine-readable output on stdout"
) -> None:
    """The flags of how a tool reaches AWS and reports, for a tool that reads no outputs contract."""
    p.add_argument("--endpoint-url", help="local endpoint (moto/LocalStack); default $AWS_ENDPOINT_URL")
    p.add_argument("--role-name", help="assume this role name in every account")
    p.add_argument("--role-arn", action="append", metavar="ACCOUNT=ARN", help="assume ARN for ACCOUNT (repeatable)")
    p.add_argument("--concurrency", type=int, default=concurrency, help=f"parallel API calls (default {concurrency})")
    p.add_argument(
        "--processes",
        type=int,
        default=None,
        help=f"worker processes sharing the calls (default: 1 below {PROCESSES_FROM} tables, else one per core up "
        f"to {MAX_PROCESSES})",
    )
    p.add_argument(
        "--max-attempts", type=int, default=MAX_ATTEMPTS, help=f"botocore attempts per call (default {MAX_ATTEMPTS})"
    )
    p.add_argument("--page-size", type=int, default=None, help="ListTables page size (1-1000)")
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


class RunOptions(TypedDict, total=False):
    """How a tool's run goes: the keyword arguments status, audit and harden share (each has a default there)."""

    concurrency: int
    page_size: int | None
    show_progress: bool
    processes: int | None


def run_options(args: argparse.Namespace) -> RunOptions:
    """The run options as `add_common_args` took them."""
    return RunOptions(
        concurrency=args.concurrency,
        page_size=args.page_size,
        show_progress=not args.quiet,
        processes=args.processes,
    )


def clients_from_args(args: argparse.Namespace) -> Clients:
    return Clients(
        endpoint_url=resolve_endpoint(args.endpoint_url),
        role_arns=parse_role_arns(args.role_arn),
        role_name=args.role_name,
        max_attempts=args.max_attempts,
        max_pool_connections=max(10, args.concurrency * 2),
    )
