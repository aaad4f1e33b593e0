"""Policies of the replica-side freshness check (`jobs/ops/freshness.py`, `infra/constructs/freshness.py`): one check
per replica account, deployed by the stack of that account's first replica (the one owning its guardrail), reading
every replica of the account and alarming through its own topic there.

Names are per account (IAM is global, and one check covers the account's replicas), in the source monitors' forms
with the prefix `<kit>-freshness`: the function, its schedule and log group `<kit>-freshness-replication-monitor`, its
topic `<kit>-freshness-assurance-alarms` (key alias the same), each replica's alarm
`<kit>-freshness-replica-stale-<bucket>`. So `s3tables_kit.policies.pipeline.detection_resources` names them, and an
estate's name patterns guard them at no size. The roles are `<kit>-freshness` and
`<kit>-freshness-schedule`: outside the monitor role pattern, whose creation the estate denies in replica
accounts to all but the sources' deploy roles.
Documents are named by account: `freshness-role-{trust,permissions}--<account>`,
`freshness-schedule-role-{trust,permissions}--<account>`, `kms-key-policy--alarm-topic-freshness-<account>`.
"""

from __future__ import annotations

from s3tables_kit.policies import assurance
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, PolicyDoc, doc, role_documents
from s3tables_kit.policies.peers import (  # the check's names, which the monitors' documents read too
    allow_read_checked_functions,
    checks_of,
    function_arn,
    granted_accounts,
    home,
    monitors_checked,
    name,
    prefix,
    replicas_of,
    site,
)
from s3tables_kit.topology.config import KitConfig, Replica
from s3tables_kit.topology.contract import METRIC_NAMESPACE
from s3tables_kit.topology.failover import failover_topology

__all__ = [  # the names of `s3tables_kit.policies.peers` this module's users read here
    "allow_read_checked_functions", "checks_of", "function_arn", "granted_accounts", "home", "monitors_checked",
    "name", "prefix", "replicas_of", "site",
]  # fmt: skip

# What the check reads: the tables of each bucket with their `modifiedAt` (nothing per table, no metadata, no key).
BUCKET_READ = ("ListTables",)


def role_name(cfg: KitConfig, schedule: bool = False) -> str:
    """The function's role, or (`schedule`) the schedule's."""
    return f"{prefix(cfg)}-schedule" if schedule else prefix(cfg)


def alarm_name(cfg: KitConfig, replica: Replica) -> str:
    return f"{prefix(cfg)}-replica-stale-{replica.bucket}"


def topic_stack(account_id: str) -> str:
    """The `AlarmTopic` stack name of an account's check (its key policy is `kms-key-policy--alarm-topic-<this>`)."""
    return f"freshness-{account_id}"


def accounts(cfg: KitConfig) -> list[str]:
    """The replica accounts with a check: every one, when the monitor is on."""
    return sorted({r.account_id for r in cfg.replicas}) if cfg.assurance.monitor.enabled else []


def role_arn(cfg: KitConfig, account_id: str) -> str:
    return site(cfg, account_id).role_arn(role_name(cfg))


def role_arns(cfg: KitConfig) -> list[str]:
    """Every check's role: publishers to the kit's namespace (`s3tables_kit.policies.pipeline`)."""
    return [role_arn(cfg, a) for a in accounts(cfg)]


def sources_of(cfg: KitConfig, account_id: str) -> dict[str, list[str]]:
    """{replica bucket ARN: the source bucket ARNs replicating into it} of the account's replicas: whose tables' last
    change (`modifiedAt` of ListTables) the check compares with, where the account may read them."""
    if cfg.failover is not None and cfg.failover.promoted_bucket is not None:
        # the promoted topology: its destinations follow the promoted bucket, the other replicas nothing
        topo = failover_topology(cfg)
        into = {d.bucket_arn: [topo.promoted.bucket_arn] for d in topo.destinations}
        return {r.bucket_arn: into.get(r.bucket_arn, []) for r in replicas_of(cfg, account_id)}
    return {r.bucket_arn: sorted(s.bucket_arn for s in cfg.sources_into(r)) for r in replicas_of(cfg, account_id)}


def watches(cfg: KitConfig, account_id: str) -> dict[str, str]:
    """What the account's check compares at every run with the deploy's record (`jobs/ops/running.py`): its schedule,
    {name: the function it invokes} (the account runs no other kit function; its own code it cannot vouch for)."""
    return {name(cfg): function_arn(cfg, account_id)}


def role_permissions(cfg: KitConfig, account_id: str) -> Document:
    reps = replicas_of(cfg, account_id)
    sources = sorted({s for arns in sources_of(cfg, account_id).values() for s in arns})
    stmts: list[iam_statements.Statement | None] = [
        iam_statements.allow_actions("ListReplicaTablesToCheck", BUCKET_READ, [r.bucket_arn for r in reps]),
        # the source's last change per table, read where the source's account lets it (else: the budget)
        iam_statements.allow_actions("ListSourceTablesToCompare", BUCKET_READ, sources) if sources else None,
        assurance.allow_put_metric_data("PublishReplicaFreshnessMetrics", METRIC_NAMESPACE),
        assurance.allow_write_function_logs(site(cfg, account_id), name(cfg)),
        *assurance.allow_read_deployed(site(cfg, account_id), (), watches(cfg, account_id)),
        allow_read_checked_functions(
            "ReadTheMonitorsFeedingItsReplicas",
            assurance.monitor_function_patterns(cfg, monitors_checked(cfg, account_id)),
        ),
    ]
    return doc(*stmts)


def documents(cfg: KitConfig) -> list[PolicyDoc]:
    out: list[PolicyDoc] = []
    for acct in accounts(cfg):
        s, n = site(cfg, acct), name(cfg)
        sched = assurance.allow_scheduler_assume_role("AllowSchedulerForTheFreshnessSchedule", s, n)
        out += role_documents(
            "freshness-role",
            acct,
            role_name(cfg),
            doc(assurance.allow_lambda_assume_role(s, n)),
            role_permissions(cfg, acct),
        )
        out += role_documents(
            "freshness-schedule-role",
            acct,
            role_name(cfg, schedule=True),
            doc(sched),
            doc(assurance.allow_invoke_function(s.arn("lambda", f"function:{n}"))),
        )
        out.append(
            PolicyDoc(
                f"kms-key-policy--alarm-topic-{topic_stack(acct)}",
                "kms-key-policy",
                acct,
                f"KMS key {assurance.alarm_key_alias(cfg, topic_stack(acct))} (replica account {acct})",
                assurance.alarm_topic_key_policy(s, assurance.source_key_guardians(cfg)),
            )
        )
    return [_sited(d) for d in out]


def deploy_roles(cfg: KitConfig, account_id: str) -> list[str]:
    """The deploy roles of the replica stacks of the account: with break-glass, who may change the check."""
    return sorted({r.deploy_role_arn for r in replicas_of(cfg, account_id) if r.deploy_role_arn})


def _sited(d: PolicyDoc) -> PolicyDoc:
    """Role documents named `<stem>-trust--<account>` (the site after the purpose, as `DocumentSet` looks them up)."""
    if d.kind in ("trust", "identity") and "--" not in d.name:
        return PolicyDoc(f"{d.name}--{d.account_id}", d.kind, d.account_id, d.attached_to, d.document)
    return d
