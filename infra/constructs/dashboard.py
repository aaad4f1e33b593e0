"""The replication dashboard: one CloudWatch dashboard per replication monitor (source stack, and the promoted
source of a failover topology), in the monitor's account and Region, showing what a person looks at first:

- the replication point's age per replica bucket (`ReplicationPointAgeSeconds`), with the alarm threshold, and per
  configured group (`Group`) of each bucket;
- lag (`ReplicationLagSeconds`) and failures (`FailedReplications`) per replica bucket;
- detached replicas (`DetachedReplicas`) per replica bucket;
- the tables still backfilling (`TablesBackfilling`) per replica bucket: after replication is turned on for a lake
  that already holds tables, the line falls to 0 as each replica becomes a copy;
- the recovery rehearsal's RTO (`RehearsedRecoverySeconds`) and outcome (`RehearsalSucceeded`), in the recovery
  Region (and account: a recovery account other than the monitor's needs CloudWatch cross-account observability
  for that widget to show data);
- the states of the monitor's alarms (and of the rehearsal alarm when it is in the same account).

Every metric is the monitor's (`jobs/ops/monitor.py`, names from `s3tables_kit.topology.contract`) or the rehearsal's
(`jobs/rehearse.py`), with the dimensions they publish (`Kit`, `Destination`); tests/test_dashboard_synth.py checks
the synthesized widgets against what that code publishes. `dashboard_body` is pure (no CDKTF).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdktf_cdktf_provider_aws.cloudwatch_dashboard import CloudwatchDashboard
from constructs import Construct

from s3tables_kit.topology import contract
from s3tables_kit.topology.config import KitConfig, Replica, Source

if TYPE_CHECKING:
    from s3tables_kit.infra.constructs.monitor import ReplicationMonitor

WIDTH, HEIGHT = 12, 6  # a 24-column grid: two widgets per row


@dataclass(frozen=True)
class RehearsalSite:
    """Where the recovery rehearsal publishes: its `Kit` dimension, Region and account."""

    kit: str
    region: str
    account_id: str


def rehearsal_site(cfg: KitConfig, among: Sequence[Replica], kit: str | None = None) -> RehearsalSite | None:
    """The rehearsal of `cfg`, shown on a dashboard whose monitor watches the replicas `among` (None when disabled,
    or when the recovery replica is not among them)."""
    if not cfg.assurance.rehearsal.enabled:
        return None
    site = next((r for r in among if r.bucket == cfg.recovery.replica), None)
    return None if site is None else RehearsalSite(kit or cfg.kit.name, site.region, site.account_id)


def _dashboard_name(cfg: KitConfig, src: Source) -> str:
    return f"{cfg.name_prefix_of(src)}-replication"


def _metric_widget(
    title: str, region: str, metrics: list[list[Any]], *, stat: str, period: int, threshold: float | None = None
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "title": title,
        "region": region,
        "view": "timeSeries",
        "stacked": False,
        "stat": stat,
        "period": period,
        "metrics": metrics,
    }
    if threshold is not None:
        props["annotations"] = {"horizontal": [{"label": "alarm threshold", "value": threshold}]}
    return {"type": "metric", "width": WIDTH, "height": HEIGHT, "properties": props}


def dashboard_body(
    cfg: KitConfig,
    src: Source,
    *,
    alarm_arns: Sequence[str],
    rehearsal: RehearsalSite | None,
    namespace: str = contract.METRIC_NAMESPACE,
) -> dict[str, Any]:
    """The dashboard of the monitor of the source `src` (of `[source]`, of an estate, or the promoted bucket)."""
    mon = cfg.assurance.monitor
    kit, region, period = cfg.name_prefix_of(src), src.region, mon.interval_minutes * 60
    destinations = cfg.destinations_of(src)

    def per_destination(
        title: str, metric: str, threshold: float | None = None, extra: Sequence[list[Any]] = ()
    ) -> dict[str, Any]:
        """One line a replica of the monitor's `metric` (its worst value in each interval), then `extra` lines."""
        metrics = [
            [namespace, metric, "Kit", kit, "Destination", r.bucket_arn, {"label": f"{r.bucket} ({r.region})"}]
            for r in destinations
        ]
        return _metric_widget(title, region, [*metrics, *extra], stat="Maximum", period=period, threshold=threshold)

    groups = [  # a configured group's series (its age never exceeds its bucket's: the bucket's alarm covers it)
        [
            namespace,
            contract.POINT_AGE,
            "Kit",
            kit,
            "Destination",
            r.bucket_arn,
            "Group",
            g,
            {"label": f"{r.bucket}: {g}"},
        ]
        for r in destinations
        for g in cfg.assurance.point_groups
    ]
    widgets = [
        per_destination(
            "Replication point age (s): newest instant every table of the replica can be restored to",
            contract.POINT_AGE,
            mon.max_replication_point_age_minutes * 60,
            groups,
        ),
        per_destination("Replication lag (s) per replica", contract.LAG, mon.max_lag_minutes * 60),
        per_destination("Failed replications per replica", contract.FAILED_METRIC),
        per_destination("Detached replicas per replica", contract.DETACHED_METRIC),
        per_destination("Tables still backfilling per replica (0: every replica is a copy)", contract.BACKFILLING),
    ]
    if rehearsal is not None:
        other, right = rehearsal.account_id != src.account_id, {"yAxis": "right"}
        where: dict[str, Any] = {"accountId": rehearsal.account_id} if other else {}
        hours = cfg.assurance.rehearsal.interval_hours
        widgets.append(
            _metric_widget(
                "Recovery rehearsal: rehearsed RTO (s) and outcome (1 succeeded, 0 failed)",
                rehearsal.region,
                [
                    [namespace, contract.REHEARSAL_RTO, "Kit", rehearsal.kit, {"stat": "Maximum", **where}],
                    [
                        namespace,
                        contract.REHEARSAL_SUCCEEDED,
                        "Kit",
                        rehearsal.kit,
                        {"stat": "Minimum", **right, **where},
                    ],
                ],
                stat="Maximum",
                period=hours * 3600,
            )
        )
    widgets.append(
        {
            "type": "alarm",
            "width": WIDTH if rehearsal is not None else 2 * WIDTH,
            "height": HEIGHT,
            "properties": {"title": "Alarms", "alarms": sorted(alarm_arns)},
        }
    )
    for i, w in enumerate(widgets):  # explicit positions: two per row, in order
        w["x"], w["y"] = (i % 2) * WIDTH, (i // 2) * HEIGHT
    return {"widgets": widgets}


def _alarm_arn(src: Source, name: str, region: str | None = None, account_id: str | None = None) -> str:
    return f"arn:{src.partition}:cloudwatch:{region or src.region}:{account_id or src.account_id}:alarm:{name}"


def _rehearsal_alarm_name(kit: str) -> str:
    from s3tables_kit.infra.constructs.rehearsal import not_succeeding_alarm_name

    return not_succeeding_alarm_name(kit)


class _ReplicationDashboard(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: KitConfig,
        src: Source,
        alarm_names: Sequence[str],
        rehearsal: RehearsalSite | None,
    ) -> None:
        super().__init__(scope, id)
        arns = [_alarm_arn(src, n) for n in alarm_names]
        if rehearsal is not None and rehearsal.account_id == src.account_id:
            arns.append(_alarm_arn(src, _rehearsal_alarm_name(rehearsal.kit), rehearsal.region, rehearsal.account_id))
        self.dashboard = CloudwatchDashboard(
            self,
            "dashboard",
            dashboard_name=_dashboard_name(cfg, src),
            dashboard_body=json.dumps(dashboard_body(cfg, src, alarm_arns=arns, rehearsal=rehearsal), indent=2),
        )


def monitor_dashboard(
    scope: Construct, cfg: KitConfig, src: Source, monitor: ReplicationMonitor | None, rehearsal: RehearsalSite | None
) -> _ReplicationDashboard | None:
    """The dashboard of a stack that deploys `monitor` of the source `src` (one hook line in the stack; none without
    a monitor)."""
    if monitor is None:
        return None
    names = [str(a.alarm_name_input) for a in monitor.alarms]
    return _ReplicationDashboard(scope, "dashboard", cfg=cfg, src=src, alarm_names=names, rehearsal=rehearsal)
