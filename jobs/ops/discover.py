"""Discover a live lake, read-only: every table bucket of the named Regions (and accounts) with its namespaces, table
count, bytes and records (each table's current snapshot summary, never a listing of data files), encryption, storage
class, bucket- and table-level maintenance, bucket and table policies and both levels of replication; then a proposed
`kit.toml` that adopts what it found, and a report (readable and JSON) of what the kit would add, change and leave
alone, with the bytes the first backfill copies to each destination.

    s3tables-kit discover --region us-east-1 [--region eu-west-1] \\
        [--account 111122223333 --role-name audit-ro] [--replicate-to us-west-2[:210987654321]] [--out discover-out]
        [--vault eu-central-1:666666666666]   # this lake's own bucket in a vault other accounts feed

Writes `<out>/kit.toml`, `<out>/discover.json`, `<out>/report.txt` and each bucket policy found as
`<out>/bucket-policy-<bucket>.json` (the proposal's `bucket_policy`), all or nothing (a temporary directory beside
`<out>`, renamed at the end). Exit 0 when written; 2 with one line when a permission is refused (the action and the
resource), when a table stays unreadable after the second pass, or on bad input. The reading is
`s3tables_kit.jobs.ops.discover_read`, the plan and the proposal `s3tables_kit.jobs.ops.discover_plan`.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.concurrency import (
    Progress,
    chunks,
    processes_for,
    run_concurrently,
    worker_pool,
)
from s3tables_kit.jobs.kernel.options import (
    EXIT_OK,
    EXIT_REFUSED,
    add_client_args,
    clients_from_args,
    pause_before_second_pass,
    run_options,
)
from s3tables_kit.jobs.kernel.render import dump_json
from s3tables_kit.jobs.kernel.sdk import describe_error, is_transient
from s3tables_kit.jobs.ops.discover_plan import (
    Destination,
    backfill,
    bucket_plan,
    policy_files,
    propose_toml,
    render_report,
    replica_plan,
    replica_sources,
)
from s3tables_kit.jobs.ops.discover_read import (
    BucketFound,
    DiscoverRefused,
    TableFound,
    list_buckets,
    read_bucket,
    read_table,
)
from s3tables_kit.jobs.ops.discover_read import read_chunk as _read_chunk
from s3tables_kit.topology.rules import botocore_version, known_regions

CHUNK = 250  # tables per worker-process job
SECOND_PASS_PAUSE = 5.0


class DiscoverUnreadable(Exception):
    """Tables that still could not be read after the second pass (not a refused permission)."""


@dataclass
class Discovery:
    buckets: list[BucketFound] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    second_pass: int = 0
    seconds: float = 0.0


def discover(
    clients: Clients,
    regions: Sequence[str],
    accounts: Sequence[str | None] = (None,),
    *,
    concurrency: int = 32,
    processes: int | None = None,
    page_size: int | None = None,
    show_progress: bool = True,
    second_pass_pause: float = SECOND_PASS_PAUSE,
) -> Discovery:
    """Read every table bucket of `regions` x `accounts` (None: the credentials' own) and every table in them. Raises
    `DiscoverRefused` for a permission the run lacks, `DiscoverUnreadable` when tables stay unreadable after the
    second pass."""
    t0 = time.perf_counter()
    found = Discovery(regions=list(regions))
    listed = [e for region in regions for account in accounts for e in list_buckets(clients, region, account)]
    entries = list({str(e["arn"]): e for e in listed}.values())  # an account named and also the credentials' own
    found.buckets = run_concurrently(lambda e: read_bucket(clients, e, page_size), entries, min(concurrency, 8))
    total = sum(len(b.listed) for b in found.buckets)
    progress = Progress("discover", total, enabled=show_progress and total > 50)
    procs = processes_for(processes, total)
    results: dict[str, list[TableFound]] = {b.arn: [] for b in found.buckets}
    with worker_pool(clients, procs) as pool:
        if pool is not None:
            threads = max(1, concurrency // procs)
            keyed = [(b.arn, part) for b in found.buckets for part in chunks(b.listed, CHUNK)]
            jobs = [functools.partial(_read_chunk, arn, part, threads) for arn, part in keyed]
            for (arn, _), out in zip(keyed, pool.map(jobs, progress), strict=True):
                results[arn].extend(out)
        else:
            work = [(b.arn, item) for b in found.buckets for item in b.listed]
            for (arn, _), t in zip(
                work,
                run_concurrently(lambda w: read_table(clients, w[0], *w[1]), work, concurrency, progress),
                strict=True,
            ):
                results[arn].append(t)
    _stop_at_refusal(results)
    again = [(arn, i) for arn, ts in results.items() for i, t in enumerate(ts) if t.error]
    found.second_pass = len(again)
    if again:
        # A burst of throttling (or a server error) can outlast every retry: read those tables again after a pause.
        pause_before_second_pass("discover", len(again), second_pass_pause, show_progress)
        redone = run_concurrently(
            lambda ai: read_table(clients, ai[0], *_ident(results[ai[0]][ai[1]])), again, concurrency
        )
        for (arn, i), t in zip(again, redone, strict=True):
            results[arn][i] = t
        _stop_at_refusal(results)
        still = [t for ts in results.values() for t in ts if t.error]
        if still:
            raise DiscoverUnreadable(
                f"{len(still)} table(s) unreadable after the second pass, e.g. {still[0].arn}: {still[0].error}"
            )
    for b in found.buckets:
        b.tables = sorted(results[b.arn], key=lambda t: (t.namespace, t.name))
    found.seconds = time.perf_counter() - t0
    return found


def _ident(t: TableFound) -> tuple[str, str, str]:
    return t.namespace, t.name, t.arn


def _stop_at_refusal(results: dict[str, list[TableFound]]) -> None:
    for ts in results.values():
        for t in ts:
            if t.refused:
                raise DiscoverRefused(*t.refused)


def report_doc(found: Discovery, destinations: Sequence[Destination], kit_name: str) -> dict[str, Any]:
    """The JSON report (`discover.json`) of a discovery."""
    replicas = replica_sources(found.buckets)
    by_arn = {b.arn: b for b in found.buckets}
    plans = [
        replica_plan(b, replicas[b.arn]) if b.arn in replicas else bucket_plan(b, destinations, by_arn)
        for b in sorted(found.buckets, key=lambda b: b.arn)
    ]
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kit": kit_name,
        "regions": found.regions,
        "replicate_to": [
            {"region": d.region, "account": d.account, **({"vault": True} if d.vault else {})} for d in destinations
        ],
        "tables": sum(p["tables"] for p in plans),
        "bytes": sum(p["bytes"] for p in plans),
        "seconds": round(found.seconds, 2),
        "second_pass": found.second_pass,
        "buckets": plans,
        "backfill": backfill(plans),
    }


def write_all(out: Path, files: dict[str, str]) -> None:
    """Write `files` into `out` all at once: into a temporary directory beside it, renamed at the end (an earlier
    discovery's directory is replaced; any other non-empty directory is refused with ValueError)."""
    if out.exists() and any(out.iterdir()) and not (out / "discover.json").exists():
        raise ValueError(f"--out {out} is a non-empty directory that no discovery wrote; choose another")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}-old-", dir=out.parent))
            out.rename(old / out.name)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_regions(regions: Sequence[str], destinations: Sequence[Destination]) -> None:
    """ValueError naming a Region the kit does not know (a typo would otherwise read as "no table bucket there")."""
    known = known_regions()
    flags = [("--region", r) for r in regions]
    flags += [("--vault" if d.vault else "--replicate-to", d.region) for d in destinations]
    for flag, region in flags:
        if region not in known:
            close = difflib.get_close_matches(region, sorted(known), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(
                f"{flag} {region}: unknown AWS Region (botocore {botocore_version()} knows none such){hint}"
            )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="s3tables-kit discover",
        description="Read-only discovery of the table buckets of some Regions and accounts: a proposed kit.toml that "
        "adopts them, and a report of what the kit would add, change and leave alone.",
    )
    p.add_argument("--region", action="append", required=True, help="a Region to look at (repeatable)")
    p.add_argument(
        "--account",
        action="append",
        help="an account to look at (repeatable; with --role-name or --role-arn, its role is assumed); default: the "
        "credentials' own",
    )
    p.add_argument(
        "--replicate-to",
        action="append",
        default=[],
        metavar="REGION[:ACCOUNT]",
        help="propose a replica of every bucket there (repeatable); without it the replicas are a template to fill in",
    )
    p.add_argument(
        "--vault",
        action="append",
        default=[],
        metavar="REGION:ACCOUNT",
        help="propose each account's own bucket in a vault that other accounts feed there (feeding_account): its "
        "namespaces keep their names (repeatable)",
    )
    p.add_argument("--out", default="discover-out", help="directory written (default discover-out/)")
    p.add_argument("--kit-name", default="lake", help="the [kit] name of the proposal (default lake)")
    add_client_args(p, concurrency=32, json_help="print the JSON report on stdout instead of the readable one")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        destinations = [Destination.parse(d) for d in args.replicate_to]
        destinations += [Destination.parse(d, vault=True) for d in args.vault]
        check_regions(args.region, destinations)
        clients = clients_from_args(args)
        found = discover(
            clients,
            args.region,
            args.account or [None],
            **run_options(args),
        )
        doc = report_doc(found, destinations, args.kit_name)
        if not doc["buckets"]:
            raise ValueError(f"no table bucket in {', '.join(args.region)}: nothing to adopt")
        report = render_report(doc)
        import json

        files = {
            "kit.toml": propose_toml(args.kit_name, doc["buckets"]),
            "discover.json": json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n",
            "report.txt": report,
            **policy_files(doc["buckets"]),
        }
        write_all(Path(args.out), files)
    except DiscoverRefused as exc:
        print(f"discover: access denied: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (DiscoverUnreadable, ValueError) as exc:
        print(f"discover: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except (ClientError, BotoCoreError) as exc:
        reason = "transient, try again" if is_transient(describe_error(exc)) else "refused"
        print(f"discover: {describe_error(exc)} ({reason})", file=sys.stderr)
        return EXIT_REFUSED
    if args.json:
        dump_json(doc)
    else:
        sys.stdout.write(report)
        print(f"written: {', '.join(str(Path(args.out) / f) for f in files)}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
