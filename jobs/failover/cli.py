"""Command line of the failover tool (`s3tables-kit failover`, `make failover ARGS=...`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EPILOG = """what it does (in this order; nothing before the preflight passes):
  plan (default, --dry-run)  per table: replica state, last replicated commit, RPO, the snapshot it will have, which
                             other replicas still hold it; whether you are break-glass; the policy changes; the steps
  --confirm <bucket name>    promote: DisassociateTableReplication per table (PERMANENT: the table is never again a
                             replica), point in time if asked, the failover table and bucket policies (writers in;
                             deletion, retention and policy changes still break-glass only), a verification commit
                             (kit.failover.* properties) and per-partition counts; report (Markdown + JSON)
  --failback --dry-run       the way back once the original Region answers (plan only)
  --planned                  RPO 0, the source still answering: freeze the source's writers (a reviewed Deny merged
                             into its bucket policy), wait until every replica has the source's current snapshot
                             (--timeout), promote as above, prove the snapshot ids equal, put the policy back.
                             On a timeout or an error before the promotion: writers back, nothing promoted (exit 1).
                             A rerun continues a killed run; --unfreeze only lifts a freeze a killed run left.
                             One run at a time: a run takes leases on the source and the promoted bucket before
                             the freeze (--lease-dir); while a live run holds them another is refused (exit 2).
                             The failback is the same run on the failover topology's outputs, promoting the new
                             bucket in the original Region.

point in time without a copy (--as-of / --snapshot-id):
  sets each promoted table's current snapshot to the one the consistent cut chose (metadata only, seconds). It
  CONSUMES the replica as a protected copy. Prefer the file copy into the recovery bucket (s3tables-kit recover)
  when the source Region still works and you only need an old state, when the replica must stay protected, or when
  you are not sure of the point in time.

examples:
  s3tables-kit failover --config kit.toml --outputs outputs.json --replica-bucket acme-replica-euw1
  s3tables-kit failover --config kit.toml --outputs outputs.json --replica-bucket acme-replica-euw1 \\
      --namespace analytics --as-of 2026-11-24T03:10:00Z --confirm acme-replica-euw1 --report reports/
  s3tables-kit failover --outputs outputs.json --replica-bucket acme-replica-euw1 --failback --dry-run

exit codes: 0 every table promoted (or already promoted) and verified (--planned: and RPO 0 proven); 1 some table
failed (the others went on), or --planned timed out or failed (writers back, the report names the tables behind);
2 refused at plan time (not break-glass, wrong confirmation, unresolvable point in time, bad arguments): nothing
changed."""


def parser() -> argparse.ArgumentParser:
    from s3tables_kit.jobs.kernel.options import add_common_args, tool_parser
    from s3tables_kit.jobs.kernel.selectors import add_selection_args

    p = tool_parser("failover", "Fail over to a kit-protected S3 Tables replica in place, safely.", epilog=EPILOG)
    add_common_args(p)
    p.add_argument("--config", help="the kit configuration (kit.toml): builds the failover documents")
    p.add_argument("--replica-bucket", help="the replica table bucket to promote (default: [failover] promoted_bucket)")
    add_selection_args(
        p,
        table_help="repeatable (default: all)",
        namespace_help="repeatable (default: all)",
        as_of_help="point in time WITH zone (consistent cut over the tables), or replication-point: the newest "
        "instant every selected table of the replica holds (read now from the source's replication status)",
        snapshot_help="a snapshot id (exactly one --table)",
    )
    p.add_argument("--group", metavar="NAME", help="the tables of a configured replication point group (+ --table)")
    act = p.add_mutually_exclusive_group()
    act.add_argument("--dry-run", action="store_true", help="plan only (the default without --confirm)")
    act.add_argument("--confirm", metavar="BUCKET", help="promote: type the replica bucket's name (irreversible)")
    p.add_argument("--failback", action="store_true", help="with --dry-run: the failback plan")
    p.add_argument("--report", metavar="DIR", help="report directory (default reports/failover)")
    p.add_argument("--planned", action="store_true", help="planned failover: freeze, wait, promote, RPO 0 proven")
    p.add_argument("--timeout", type=float, default=900.0, metavar="S", help="--planned: catch-up timeout (900)")
    p.add_argument("--poll", type=float, default=5.0, metavar="S", help="--planned: seconds between checks (5)")
    p.add_argument("--settle", type=float, default=5.0, metavar="S", help="--planned: wait after the freeze (5)")
    p.add_argument(
        "--drain-timeout", type=float, default=300.0, metavar="S", help="--planned: PutRows channels' drain bound (300)"
    )
    p.add_argument(
        "--commit-interval", type=float, default=60.0, metavar="S", help="--planned: wait after channels drain (60)"
    )
    p.add_argument("--unfreeze", action="store_true", help="--planned: only lift a freeze a killed run left")
    p.add_argument(
        "--show-documents",
        action="store_true",
        help="a plan prints every policy document it would put in full (default: one line per document)",
    )
    p.add_argument(
        "--lease-dir",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="--planned: where the run's leases live, one place shared by everyone who may run it (a shared "
        "directory, or a general purpose bucket: conditional writes). Default: the report directory",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from s3tables_kit.jobs.failover import aws
    from s3tables_kit.jobs.failover.model import EXIT_REFUSED, FailoverError
    from s3tables_kit.jobs.kernel.idents import ArgError, Ident
    from s3tables_kit.jobs.kernel.options import clients_from_args
    from s3tables_kit.jobs.kernel.selectors import Selector, selector_from_args
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    ns = parser().parse_args(argv)
    try:
        if ns.group:
            from s3tables_kit.jobs.ops.point_live import with_group

            ns.table, ns.namespace = with_group(ns.outputs, ns.group, ns.table, ns.namespace)
        tables = tuple(Ident.parse(t) for t in ns.table)
        if ns.snapshot_id is not None and len(tables) != 1:
            raise ArgError("--snapshot-id applies to exactly one --table (snapshot ids are per table)")
        if ns.failback and ns.confirm:
            raise ArgError("--failback is a plan only (--dry-run); it never changes anything")
        selector, live = selector_from_args(ns.as_of, ns.snapshot_id)  # live: resolved once the bucket is known
        outputs = load_outputs(ns.outputs)
        cfg = None
        if ns.config:
            from s3tables_kit.topology.config import load_config

            cfg = load_config(ns.config)
        bucket = ns.replica_bucket or (cfg.kind.promoted_bucket if cfg is not None else None)
        if not bucket:
            raise ArgError("--replica-bucket is required (or [failover] promoted_bucket in --config)")
        clients = clients_from_args(ns)
        if live:
            selector = Selector(as_of_ms=replication_point_ms(clients, outputs, bucket, ns.table, ns.namespace))
        req = aws.Request(
            replica_bucket=bucket,
            tables=tables,
            namespaces=tuple(ns.namespace),
            selector=selector,
            confirm=ns.confirm,
            concurrency=ns.concurrency,
            report_dir=Path(ns.report or "reports/failover"),
            show_progress=not ns.quiet,
            show_documents=ns.show_documents,
        )
        if ns.failback:
            text, doc = aws.failback(clients, req, outputs)
            print(json.dumps(doc, indent=2, default=str) if ns.json else text)
            return 0
        documents = aws.documents_from_config(cfg, bucket) if cfg is not None else None
        if ns.planned or ns.unfreeze:
            return _planned(ns, clients, req, outputs, documents, cfg)
        return aws.run(clients, req, outputs, documents, as_json=ns.json).exit_code
    except (ArgError, FailoverError, OutputsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED


def _planned(ns: argparse.Namespace, clients: Any, req: Any, outputs: Any, documents: Any, cfg: Any) -> int:
    from s3tables_kit.jobs.failover import aws, planned

    replica = next((r for r in outputs.replicas if r.table_bucket_name == req.replica_bucket), None)
    freeze = None
    if cfg is not None and replica is not None:
        freeze = planned.freeze_from_config(cfg, aws.source_of(outputs, replica).table_bucket_arn)
    opts = planned.Options(
        timeout_s=ns.timeout,
        poll_s=ns.poll,
        settle_s=ns.settle,
        unfreeze=ns.unfreeze,
        lease_dir=ns.lease_dir,
        drain_timeout_s=ns.drain_timeout,
        commit_interval_s=ns.commit_interval,
    )
    return planned.run(clients, req, outputs, documents, freeze, opts, as_json=ns.json).exit_code


def replication_point_ms(
    clients: Any, outputs: Any, bucket: str, tables: Sequence[str], namespaces: Sequence[str]
) -> int:
    """`--as-of replication-point`: the live replication point of the replica to promote over the selected tables
    (`s3tables_kit.jobs.ops.point`); refused (exit 2) when the source's status cannot give one (a source Region that
    does not answer leaves the tables without a point: choose an instant with --as-of)."""
    from s3tables_kit.jobs.kernel.selectors import selection_patterns, to_ms
    from s3tables_kit.jobs.ops.point_live import live_point

    replica = outputs.replica_by_name(bucket)
    sources = [s.table_bucket_arn for s in (outputs.sources_into(replica) or outputs.sources)]
    at = live_point(clients, sources, replica.table_bucket_arn, selection_patterns(tables, namespaces))
    print(f"--as-of replication-point: {at.isoformat(timespec='milliseconds')}", file=sys.stderr)
    return to_ms(at)


if __name__ == "__main__":
    sys.exit(main())
