"""What the source monitors and the replica accounts' freshness checks name of each other: the check's function by
account (its names, `s3tables_kit.policies.freshness`'s), which checks a monitor reads and which monitors a check
reads at every run (`s3tables_kit.jobs.ops.running`; docs/decisions/0039, addendum). Below both the monitor's
documents (`s3tables_kit.policies.assurance`) and the check's (`s3tables_kit.policies.freshness`), which read it."""

from __future__ import annotations

from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.sites import Site
from s3tables_kit.topology.config import KitConfig, Replica, Source


def prefix(cfg: KitConfig) -> str:
    """The monitors' `<prefix>` of the check's resource names (guarded by
    `s3tables_kit.policies.pipeline.detection_resources`)."""
    return f"{cfg.kit.name}-freshness"


def name(cfg: KitConfig) -> str:
    """The function, its schedule and its log group (one per replica account)."""
    return f"{prefix(cfg)}-replication-monitor"


def replicas_of(cfg: KitConfig, account_id: str) -> list[Replica]:
    return [r for r in cfg.replicas if r.account_id == account_id]


def home(cfg: KitConfig, account_id: str) -> Replica:
    """The replica whose stack deploys the account's check (the first of the account, which owns its guardrail)."""
    return replicas_of(cfg, account_id)[0]


def site(cfg: KitConfig, account_id: str) -> Site:
    r = home(cfg, account_id)
    return Site(r.partition, r.account_id, r.region)


def function_arn(cfg: KitConfig, account_id: str) -> str:
    return site(cfg, account_id).arn("lambda", f"function:{name(cfg)}")


def _cross_checked(cfg: KitConfig) -> bool:
    """Whether the monitors and the checks read each other's functions: with the monitor, outside the promoted
    topology (whose monitor is built from a configuration of its own, `Kind.failover_monitor`, not the one the
    checks are built from)."""
    return cfg.assurance.monitor.enabled and not cfg.kind.promoted and not cfg.kind.failover_monitor


def monitors_checked(cfg: KitConfig, account_id: str) -> list[Source]:
    """The sources whose monitor the account's check compares with the deploy's record at every run (those
    replicating into its replicas): a principal other than the monitor, in another account where they differ."""
    if not _cross_checked(cfg):
        return []
    return [s for s in cfg.sources if any(r.account_id == account_id for r in cfg.destinations_of(s))]


def granted_accounts(cfg: KitConfig, account_id: str) -> list[str]:
    """The other accounts whose monitor the account's check grants the read of its function (its resource policy):
    those of the sources replicating into it, the promoted topology's too, so that a failover's plan drops nothing
    (the grant lets read a configuration, nothing else)."""
    if not cfg.assurance.monitor.enabled:
        return []
    into = {s.account_id for s in cfg.sources if any(r.account_id == account_id for r in cfg.destinations_of(s))}
    return sorted(into - {account_id})


def checks_of(cfg: KitConfig, src: Source) -> list[str]:
    """The replica accounts whose check the monitor of `src` compares with its record at every run."""
    return sorted({r.account_id for r in cfg.destinations_of(src)}) if _cross_checked(cfg) else []


def allow_read_checked_functions(sid: str, arns: list[str]) -> iam_statements.Statement | None:
    """The other side's function, by ARN (granted on that side by the function's resource policy)."""
    return iam_statements.statement(sid, "Allow", ["lambda:GetFunctionConfiguration"], arns) if arns else None
