"""Recovery rehearsal: run the recovery job for real, measure it, report it, and leave nothing behind.

    make rehearse                                   # on the local drill warehouses (demo-out/, built if missing)
    spark-submit jobs/rehearse_entry.py ...         # on EMR Serverless, started by the rehearsal schedule

One rehearsal = (1) choose the tables: the configured ones, or a rotating sample of the replicated tables (a
different slice each day, so every table is rehearsed in turn); (2) drop leftovers of an earlier, interrupted
rehearsal in the rehearsal namespace; (3) recover them with the recovery job's own `run` (plan, copy, verify) as of
`offset` before now into the rehearsal namespace, and compare each recovered point (the commit time of the replica
snapshot it resolved to) with the lag budget: older is a finding (STALE: the replica stopped receiving updates, and
"as of N hours ago" resolved to its last snapshot), not a success; (4) measure the wall-clock time of (3): the
rehearsed recovery time objective (RTO); (5) drop every table the rehearsal created and check the namespace is
empty; (6) write the rehearsal report (and the recovery job's per-table reports) next to each other — on AWS under
`s3://<scripts bucket>/reports/rehearsals/`; (7) publish `RehearsalSucceeded` (1/0), `RehearsedRecoverySeconds`,
`RehearsalTables` and `RehearsalStaleTables` (dimension `Kit`) to CloudWatch (namespace `S3TablesReplicaKit`).

With a vault (`--vault`, `--vault-table`: `[vault]` and its tables), (3) also restores each rehearsed table the vault
backs up from its newest backup point, as `recover --from-vault` does, reported as rows of their own (source: vault,
`jobs/rehearse_vault.py`) and published as `RehearsalVaultTables` and `RehearsedVaultRestoreSeconds`; a failed restore
from the vault fails the rehearsal.

The recovery job is used only through its public API (`RecoveryRequest`, `run`, `CatalogSpec`); nothing in
`jobs/recover` is specific to rehearsals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from s3tables_kit.jobs.kernel import preflight
from s3tables_kit.jobs.kernel.catalogs import CatalogSpec
from s3tables_kit.jobs.kernel.idents import Ident, JobError
from s3tables_kit.jobs.kernel.render import format_duration
from s3tables_kit.jobs.kernel.selectors import Selector, to_ms
from s3tables_kit.jobs.recover.job import RecoveryRequest, run
from s3tables_kit.jobs.rehearse_vault import (
    VaultRow,
    VaultSide,
    rehearse_vault,
    render_rows,
    row_json,
    vault_metrics,
    vault_ok,
)

# names the rehearsal schedule and its alarm (infra/constructs/rehearsal.py) use
from s3tables_kit.topology import paths
from s3tables_kit.topology.contract import (
    BACKUP_ENTRY,
    METRIC_NAMESPACE,
    REHEARSAL_ENTRY,
    REHEARSAL_RTO,
    REHEARSAL_STALE,
    REHEARSAL_SUCCEEDED,
    REHEARSAL_TABLES,
    SCHEDULED_ARTIFACTS_PREFIX,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

SUCCEEDED, RTO, TABLES, STALE = REHEARSAL_SUCCEEDED, REHEARSAL_RTO, REHEARSAL_TABLES, REHEARSAL_STALE
ENTRY = REHEARSAL_ENTRY


# ----------------------------------------------------------------------------------------------------
# Pure parts
# ----------------------------------------------------------------------------------------------------


def choose_tables(candidates: Sequence[str], sample: int, day: int) -> list[str]:
    """A rotating, deterministic slice of `sample` tables: day d takes the slice starting at d * sample (mod n),
    so over ceil(n / sample) days every candidate is rehearsed."""
    names = sorted(dict.fromkeys(candidates))
    if sample >= len(names):
        return names
    start = (day * sample) % len(names)
    return [names[(start + i) % len(names)] for i in range(sample)]


def stale_points(recovered: dict[str, str | None], as_of: datetime, max_lag: timedelta | None) -> dict[str, float]:
    """The tables whose recovered point (their replica snapshot's commit time, ISO) is older than `as_of` by more
    than the lag budget, with how much older (seconds): the replica had stopped receiving updates by then. A table
    without a recovered point has nothing to compare (its verdict says why); no budget, no finding."""
    if max_lag is None:
        return {}
    out = {}
    for table, committed in sorted(recovered.items()):
        if committed:
            behind = (as_of - datetime.fromisoformat(committed)).total_seconds()
            if behind > max_lag.total_seconds():
                out[table] = round(behind, 3)
    return out


def metric_data(
    kit: str,
    *,
    succeeded: bool,
    seconds: float,
    tables: int,
    at: datetime,
    stale: int = 0,
    extra: dict[str, tuple[float, str]] | None = None,
) -> list[dict[str, Any]]:
    """The rehearsal's metrics; `extra`: more of them, {name: (value, unit)} (the vault's restores)."""
    dims = [{"Name": "Kit", "Value": kit}]

    def datum(name: str, value: float, unit: str) -> dict[str, Any]:
        return {"MetricName": name, "Dimensions": dims, "Value": value, "Unit": unit, "Timestamp": at}

    return [
        datum(SUCCEEDED, 1.0 if succeeded else 0.0, "Count"),
        datum(RTO, round(seconds, 3), "Seconds"),
        datum(TABLES, float(tables), "Count"),
        datum(STALE, float(stale), "Count"),
        *(datum(name, value, unit) for name, (value, unit) in (extra or {}).items()),
    ]


# ----------------------------------------------------------------------------------------------------
# The rehearsal
# ----------------------------------------------------------------------------------------------------


@dataclass
class RehearsalResult:
    kit: str
    run_id: str
    started_at: str
    as_of: str
    namespace: str
    tables: list[str]
    succeeded: bool = False
    rto_seconds: float = 0.0
    recovery_exit_code: int | None = None
    verdicts: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    recovery_report: str | None = None
    error: str | None = None
    max_lag_seconds: float | None = None  # the lag budget the recovered points are held to
    recovered_points: dict[str, str | None] = field(default_factory=dict)  # table -> its snapshot's commit time
    stale: dict[str, float] = field(default_factory=dict)  # tables recovered older than the budget (seconds behind)
    vault: list[VaultRow] = field(default_factory=list)  # the restores from the vault, one row per table

    def rows(self) -> list[dict[str, Any]]:
        """One row per restore: each rehearsed table from the replica, then each from the vault."""
        replica = [{"table": t, "source": "replica", "verdict": v} for t, v in self.verdicts.items()]
        return replica + [row_json(r) for r in self.vault]

    @property
    def outcome(self) -> str:
        """SUCCEEDED, STALE (recovered and verified, but to a point older than the lag budget: a finding) or FAILED."""
        if self.succeeded:
            return "SUCCEEDED"
        finding = self.stale and self.error is None and not self.leftovers and vault_ok(self.vault)
        return "STALE" if finding else "FAILED"

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"outcome": self.outcome, "rows": self.rows()}


def _tables_in(spark: SparkSession, catalog: str, namespace: str) -> list[str]:
    try:
        rows = spark.sql(f"SHOW TABLES IN {catalog}.`{namespace}`").collect()
    except Exception:  # no such namespace yet: nothing in it
        return []
    return sorted(str(r["tableName"]) for r in rows)


def _drop_all(spark: SparkSession, catalog: str, namespace: str) -> list[str]:
    dropped = []
    for name in _tables_in(spark, catalog, namespace):
        spark.sql(f"DROP TABLE IF EXISTS {catalog}.`{namespace}`.`{name}` PURGE")
        dropped.append(f"{namespace}.{name}")
    return dropped


def rehearse(
    *,
    kit: str,
    replica: CatalogSpec,
    target: CatalogSpec,
    tables: Sequence[str],
    namespace: str,
    offset: timedelta,
    spark: SparkSession,
    report_dir: Path,
    now: datetime | None = None,
    max_lag: timedelta | None = None,
    vault: VaultSide | None = None,
) -> RehearsalResult:
    """One rehearsal on an existing SparkSession whose conf registers both catalogs. Never raises for a failed
    recovery: the result says what happened (and the tables are dropped in any case). `max_lag`: the lag budget; a
    table recovered to a point older than `as_of` by more than that makes the rehearsal STALE, not a success.
    `vault`: also restore the tables it backs up from their newest backup point."""
    started = now or datetime.now(UTC)
    as_of = started - offset
    run_id = uuid.uuid4().hex[:12]
    res = RehearsalResult(
        kit, run_id, started.isoformat(timespec="seconds"), as_of.isoformat(), namespace, list(tables)
    )
    res.max_lag_seconds = max_lag.total_seconds() if max_lag is not None else None
    if namespace == "":
        raise ValueError("the rehearsal namespace must not be empty")
    try:
        leftovers = _drop_all(spark, target.name, namespace)
        if leftovers:
            print(f"rehearsal: dropped leftovers of an interrupted rehearsal: {leftovers}", file=sys.stderr)
        req = RecoveryRequest(
            replica=replica,
            target=target,
            tables=[Ident.parse(t) for t in tables],
            selector=Selector(as_of_ms=to_ms(as_of)),
            target_namespace=namespace,
            report_dir=report_dir,
        )
        t0 = time.monotonic()
        outcome = run(req, lambda conf: spark)
        res.rto_seconds = time.monotonic() - t0
        res.recovery_exit_code = outcome.exit_code
        res.verdicts = {r.replica_table: r.verdict for r in outcome.results}
        res.recovery_report = str(outcome.report) if outcome.report else None
        res.recovered_points = {r.replica_table: r.snapshot_committed_at for r in outcome.results}
        res.stale = stale_points(res.recovered_points, as_of, max_lag)
        all_verified = all(v == "verified" for v in res.verdicts.values())
        complete = outcome.exit_code == 0 and len(outcome.results) == len(tables) and all_verified
        if vault is not None:
            res.vault = rehearse_vault(
                vault, tables, target=target, namespace=namespace, spark=spark, report_dir=report_dir
            )
        res.succeeded = complete and not res.stale and vault_ok(res.vault)
    except Exception as exc:  # a rehearsal reports every failure as a failed rehearsal
        res.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:500] if str(exc) else ''}"
    finally:
        res.dropped = _drop_all(spark, target.name, namespace)
        res.leftovers = [f"{namespace}.{t}" for t in _tables_in(spark, target.name, namespace)]
        if res.leftovers:
            res.succeeded = False
            res.error = (res.error or "") + f" tables left behind: {res.leftovers}"
    return res


def render(res: RehearsalResult) -> str:
    verdicts = ", ".join(f"{t}: {v}" for t, v in res.verdicts.items()) or "-"
    lines = [
        f"Recovery rehearsal {res.run_id} ({res.kit}): {res.outcome}",
        f"  tables:             {', '.join(res.tables)} as of {res.as_of}",
        f"  verdicts:           {verdicts}",
        f"  rehearsed RTO:      {res.rto_seconds:.1f} s (plan + copy + verify, end to end)",
        *render_rows(res.vault),
        f"  dropped afterwards: {', '.join(res.dropped) or '-'}; left behind: {', '.join(res.leftovers) or 'none'}",
    ]
    if res.stale:
        budget = format_duration(res.max_lag_seconds or 0)
        behind = ", ".join(f"{t}: {format_duration(s)} before {res.as_of}" for t, s in res.stale.items())
        lines.append(f"  STALE (budget {budget}): recovered points {behind}: replication into the replica stopped")
        lines.append("  (docs/assurance.md#replica-side-freshness)")
    if res.error:
        lines.append(f"  error:              {res.error}")
    return "\n".join(lines)


def write_report(res: RehearsalResult, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "rehearsal.json"
    path.write_text(json.dumps(res.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------
# AWS side (EMR Serverless): upload of the report, metrics
# ----------------------------------------------------------------------------------------------------


def upload_reports(s3: Any, local_dir: Path, bucket: str, prefix: str) -> list[str]:
    keys = []
    for p in sorted(local_dir.rglob("*")):
        if p.is_file():
            key = f"{prefix.rstrip('/')}/{p.relative_to(local_dir).as_posix()}"
            s3.put_object(Bucket=bucket, Key=key, Body=p.read_bytes())
            keys.append(key)
    return keys


def publish(cloudwatch: Any, data: list[dict[str, Any]], namespace: str = METRIC_NAMESPACE) -> None:
    """One PutMetricData (three metrics); botocore's standard retry mode handles throttling."""
    cloudwatch.put_metric_data(Namespace=namespace, MetricData=data)


# ----------------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    from s3tables_kit.jobs.kernel.options import tool_parser

    p = tool_parser("rehearse", __doc__)
    p.add_argument("--local", action="store_true", help="rehearse on the local drill warehouses (make rehearse)")
    p.add_argument("--upload", metavar="OUTPUTS", help="upload the scheduled job's artifacts (make rehearse-upload)")
    p.add_argument("--out", default=str(paths.ROOT / "demo-out"), help="local: the drill's output directory")
    p.add_argument("--kit", default="seed")
    p.add_argument("--table", action="append", default=[], metavar="NS.NAME", help="tables to rehearse (repeatable)")
    p.add_argument("--candidate", action="append", default=[], metavar="NS.NAME", help="sample from these")
    p.add_argument("--sample", type=int, default=1, help="with --candidate: tables per rehearsal (default 1)")
    p.add_argument("--namespace", default="rehearsal", help="the rehearsal namespace in the recovery catalog")
    p.add_argument("--offset-hours", type=float, default=0.0, help="recover the state this long before now")
    p.add_argument(
        "--max-lag-minutes", type=float, help="the lag budget: a table recovered to an older point is a finding"
    )
    p.add_argument("--replica-warehouse")
    p.add_argument("--replica-region")
    p.add_argument("--target-warehouse")
    p.add_argument("--target-region")
    p.add_argument("--catalog-mode", default="client", choices=("client", "rest", "glue"))
    p.add_argument("--report-uri", help="s3://bucket/prefix for the reports (AWS)")
    p.add_argument("--metrics-region", help="publish the metrics to CloudWatch in this Region (AWS)")
    p.add_argument("--endpoint-url", help="local endpoint for S3/CloudWatch (moto)")
    preflight.add_arguments(p)
    p.add_argument(
        "--vault", metavar="s3://BUCKET|DIR", help="also restore from this backup vault (with --vault-table)"
    )
    p.add_argument("--vault-region", help="the vault's Region")
    p.add_argument("--vault-point-key", metavar="ARN", help="the vault's point key, which verifies every point")
    p.add_argument(
        "--vault-table", action="append", default=[], metavar="NS.NAME|NS.*", help="the tables the vault backs up"
    )
    return p


def vault_side(ns: argparse.Namespace) -> VaultSide | None:
    """The vault the rehearsal also restores from, or None (no --vault or no --vault-table)."""
    if not (ns.vault and ns.vault_table):
        return None
    return VaultSide(ns.vault, ns.vault_region, tuple(ns.vault_table), ns.endpoint_url or None, ns.vault_point_key)


def _local(ns: argparse.Namespace) -> int:
    from s3tables_kit.jobs.kernel.catalogs import catalog_conf, file_uri
    from s3tables_kit.jobs.spark import build_session

    out = Path(ns.out).resolve()
    wh = {k: out / "warehouses" / k for k in ("replica", "recovered")}
    if not (wh["replica"] / "analytics" / "orders").is_dir():
        print(f"rehearsal: no drill replica under {wh['replica']}: run the drill first (make demo)", file=sys.stderr)
        return 2
    replica = CatalogSpec("replica", "hadoop", file_uri(wh["replica"]))
    target = CatalogSpec("recovery", "hadoop", file_uri(wh["recovered"]))
    tables = ns.table or ["analytics.orders"]
    try:
        spark = build_session({**catalog_conf(replica), **catalog_conf(target)}, app_name="kit-rehearsal")
    except JobError as err:  # the pinned jars missing and not fetchable: one line, before any JVM
        print(f"rehearsal: {err}", file=sys.stderr)
        return 2
    try:
        res = _rehearse_and_report(ns, replica, target, tables, spark, out / "rehearsals")
        res_dir = out / "rehearsals"
    finally:
        spark.stop()
    print(render(res))
    print(f"  report:             {res_dir}")
    return 0 if res.succeeded else 1


def _rehearse_and_report(
    ns: argparse.Namespace,
    replica: CatalogSpec,
    target: CatalogSpec,
    tables: list[str],
    spark: SparkSession,
    report_root: Path,
) -> RehearsalResult:
    started = datetime.now(UTC)
    report_dir = report_root / f"{started:%Y%m%dT%H%M%SZ}"
    res = rehearse(
        kit=ns.kit,
        replica=replica,
        target=target,
        tables=tables,
        namespace=ns.namespace,
        offset=timedelta(hours=ns.offset_hours),
        spark=spark,
        report_dir=report_dir,
        now=started,
        max_lag=timedelta(minutes=ns.max_lag_minutes) if ns.max_lag_minutes else None,
        vault=vault_side(ns),
    )
    write_report(res, report_dir)
    data = metric_data(
        ns.kit, succeeded=res.succeeded, seconds=res.rto_seconds, tables=len(tables), at=started,
        stale=len(res.stale), extra=vault_metrics(res.vault),
    )  # fmt: skip
    if ns.report_uri:
        from s3tables_kit.jobs.kernel.sdk import split_s3_uri

        bucket, prefix = split_s3_uri(ns.report_uri)
        s3 = _client(ns, "s3", ns.target_region or ns.replica_region)
        upload_reports(s3, report_dir, bucket, f"{prefix}/{report_dir.name}")
    if ns.metrics_region:
        publish(_client(ns, "cloudwatch", ns.metrics_region), data)
    else:
        print("rehearsal metrics (not published: no --metrics-region): " + ", ".join(
            f"{d['MetricName']}={d['Value']}" for d in data
        ))  # fmt: skip
    return res


def upload_artifacts(outputs_path: str) -> int:
    """`make rehearse-upload`: what the scheduled job runs need under the scripts bucket's `scheduled/` prefix: the
    jobs zip and the jars (as `make recover-emr` uploads them under `scripts/`) plus `rehearse_entry.py` and the vault
    backup's `backup_entry.py`. Run once after deploy and after upgrades, with the recovery stack's deploy role or
    break-glass (nobody else may write there)."""
    from s3tables_kit.jobs.emr_submit import join_s3, split_s3, upload
    from s3tables_kit.jobs.jars import kit_jars
    from s3tables_kit.jobs.kernel.options import refuse
    from s3tables_kit.topology.outputs import OutputsError, load_outputs

    try:
        outputs = load_outputs(outputs_path)
    except OutputsError as err:
        return refuse(err)
    try:
        jars = kit_jars()  # every jar of jars/pom.xml, which the schedule names
    except JobError as err:
        return refuse(err)
    from s3tables_kit.jobs.kernel import sdk

    s3 = sdk.client("s3", outputs.recovery.region)
    base = scheduled_uri(outputs.recovery.scripts_uri)
    upload(s3, outputs, jars, base)
    for entry in (ENTRY, BACKUP_ENTRY):
        bucket, key = split_s3(join_s3(base, entry))
        s3.upload_file(str(paths.PACKAGE / "jobs" / entry), bucket, key)
    print(f"uploaded {ENTRY}, {BACKUP_ENTRY}, jobs.zip and {len(jars)} jars under {base}")
    return 0


def scheduled_uri(scripts_uri: str) -> str:
    """Where the scheduled job runs read their artifacts: the scripts bucket's deploy-time prefix, which only the
    recovery stack's deploy role and break-glass may write (the pipeline SCP)."""
    from s3tables_kit.jobs.emr_submit import split_s3

    bucket, _ = split_s3(scripts_uri)
    return f"s3://{bucket}/{SCHEDULED_ARTIFACTS_PREFIX}"


def _client(ns: argparse.Namespace, service: str, region: str) -> Any:
    """A plain boto3 client (the job's zip on EMR carries no jobs/ops) with the kit's retry policy."""
    import boto3

    from s3tables_kit.jobs.kernel.sdk import retry_config

    config = retry_config()
    session = boto3.session.Session(region_name=region)
    return session.client(service, endpoint_url=ns.endpoint_url or None, config=config)  # type: ignore[call-overload]


def main(
    argv: Sequence[str] | None = None, spark_factory: Callable[[dict[str, str]], SparkSession] | None = None
) -> int:
    ns = parser().parse_args(argv)
    if ns.upload:
        return upload_artifacts(ns.upload)
    if ns.local:
        return _local(ns)
    if not (ns.replica_warehouse and ns.target_warehouse and ns.replica_region):
        print("error: pass --local, or --replica-warehouse/--replica-region/--target-warehouse", file=sys.stderr)
        return 2
    region = ns.target_region or ns.replica_region
    if preflight.refused(ns, lambda: _client(ns, "emr-serverless", region), sys.stderr):
        return 1  # a FAILED job run: the rehearsal's liveness alarm (AWS/EMRServerless)
    tables = list(ns.table) or choose_tables(ns.candidate, ns.sample, datetime.now(UTC).toordinal())
    if not tables:
        print("error: nothing to rehearse: pass --table or --candidate", file=sys.stderr)
        return 2
    replica = CatalogSpec("replica", ns.catalog_mode, ns.replica_warehouse, region=ns.replica_region)
    target = CatalogSpec("recovery", ns.catalog_mode, ns.target_warehouse, region=ns.target_region or ns.replica_region)
    from s3tables_kit.jobs.kernel.catalogs import catalog_conf

    if spark_factory is None:
        from s3tables_kit.jobs.recover.cli import submitted_spark_factory

        spark_factory = submitted_spark_factory
    # Distribution and copy settings are per table inside the recovery job (CTAS or file copy), not per session.
    spark = spark_factory({**catalog_conf(replica), **catalog_conf(target)})
    res = _rehearse_and_report(ns, replica, target, tables, spark, Path("/tmp/kit-rehearsal"))
    print(render(res))
    return 0 if res.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
