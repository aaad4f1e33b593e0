"""What the ops tools share besides the kernel (`jobs.kernel`): their command-line options, durations, report output,
and the canonical form of IAM documents they compare."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import timedelta
from typing import Any, TextIO, TypedDict

from s3tables_kit.jobs.kernel.clients import Clients, parse_role_arns, resolve_endpoint
from s3tables_kit.jobs.kernel.concurrency import MAX_PROCESSES, PROCESSES_FROM
from s3tables_kit.jobs.kernel.sdk import MAX_ATTEMPTS

# ----------------------------------------------------------------------------------------------------
# Durations
# ----------------------------------------------------------------------------------------------------

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> timedelta:
    """`30m`, `2h`, `1h30m`, `90s`, `1d` -> timedelta. A bare number is minutes."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return timedelta(minutes=float(s))
    pos, total = 0, 0.0
    for m in _DURATION_RE.finditer(s):
        if s[pos : m.start()].strip():
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        raise ValueError(f"duration {text!r} is not like 30m, 2h, 1h30m, 90s or 1d")
    return timedelta(seconds=total)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


# ----------------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------------


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], max_width: int = 60) -> str:
    cells = [[str(h) for h in headers]] + [[_clip(str(c), max_width) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _clip(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def ambiguous_tables(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """The `namespace.name`s that (bucket ARN, namespace.name) `pairs` show in more than one bucket (an estate's
    sources may each hold a table of one name)."""
    buckets: dict[str, set[str]] = {}
    for bucket, table in pairs:
        buckets.setdefault(table, set()).add(bucket)
    return {t for t, b in buckets.items() if len(b) > 1}


def table_label(bucket_arn: str, table: str, ambiguous: Collection[str]) -> str:
    """`namespace.name`, or `bucket/namespace.name` where the report holds that name in two buckets."""
    return f"{bucket_arn.rsplit('/', 1)[-1]}/{table}" if table in ambiguous else table


def mentions_bucket(text: str, bucket_arn: str) -> bool:
    """`text` names the bucket `bucket_arn` or one of its tables (not another bucket whose name it prefixes)."""
    return re.search(re.escape(bucket_arn) + r"(?=$|[/\s),])", text) is not None


def dump_json(doc: Any, stream: TextIO | None = None) -> None:
    json.dump(doc, stream or sys.stdout, indent=2, sort_keys=True, default=str)
    (stream or sys.stdout).write("\n")


def emit(report: Any, *, as_json: bool, render: Callable[[], str]) -> int:
    """Print a report (JSON for machines, the rendered table for people) and return its exit code."""
    if as_json:
        dump_json(report.to_json())
    else:
        print(render())
    return int(report.exit_code)


# ----------------------------------------------------------------------------------------------------
# Policies: canonical form for comparison
# ----------------------------------------------------------------------------------------------------

_LISTY = {"Action", "NotAction", "Resource", "NotResource"}


def canonical(value: Any, key: str | None = None) -> Any:
    """Normalise an IAM policy fragment so that equivalent documents compare equal: a single string and a
    one-element list are the same, list order does not matter, condition values are lists."""
    if isinstance(value, dict):
        return {k: canonical(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        if all(isinstance(i, str | int | float | bool) for i in value):  # as a scalar below: ["a"] is "a"
            return sorted({str(i).lower() if isinstance(i, bool) else str(i) for i in value})
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda i: json.dumps(i, sort_keys=True))
    if isinstance(value, bool | int | float):
        return [str(value).lower() if isinstance(value, bool) else str(value)]
    if isinstance(value, str) and key not in ("Effect", "Sid", "Version"):
        return [value]
    return value


def canonical_policy(doc: Any) -> dict[str, Any]:
    if isinstance(doc, str):
        doc = json.loads(doc)
    stmts = doc.get("Statement", [])
    if isinstance(stmts, dict):
        stmts = [stmts]
    return {
        "Version": doc.get("Version"),
        "Statement": sorted((canonical(s) for s in stmts), key=lambda s: json.dumps(s, sort_keys=True)),
    }


# ----------------------------------------------------------------------------------------------------
# CLI plumbing
# ----------------------------------------------------------------------------------------------------


EXIT_OK, EXIT_UNHEALTHY, EXIT_REFUSED = 0, 1, 2  # the contract of every tool of the kit


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


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outputs", default="outputs.json", help="outputs contract written after `cdktf deploy`")
    add_client_args(p)


def add_client_args(
    p: argparse.ArgumentParser, *, concurrency: int = 16, json_help: str = "machine-readable output on stdout"
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


class RunOptions(TypedDict):
    """How a tool's run goes: the keyword arguments status, audit and harden share."""

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
