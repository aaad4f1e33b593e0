"""A replica that several sources of an estate feed (fan-in): its bucket, table and key policies keep their size
whatever the number of sources (docs/decisions/0035-fan-in-by-account-namespaces.md).

Each source's namespaces carry the prefix of its account (`s3tables_kit.topology.rules.fan_in_namespace_prefix`, checked
at validation), so one Deny with the policy variable `${aws:PrincipalAccount}` confines every replication role to the
namespaces of its own account, and the grants and exemptions name the replication and monitor roles by their name
pattern (`s3tables_kit.policies.estate`), the grants only in the accounts of the sources that feed the replica. What
still grows is the list of those accounts (`s3tables_kit.topology.rules.MAX_FAN_IN_SOURCE_ACCOUNTS` bounds it at
validation).
"""

from __future__ import annotations

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import assurance, estate
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.topology.config import KitConfig, Replica
from s3tables_kit.topology.rules import FAN_IN_NAMESPACE_PREFIX

CONFINEMENT_SID = "DenyFanInRolesOutsideTheirAccountsNamespaces"
# A replication role's requests that name a namespace (`s3tables:namespace`); `CreateNamespace` carries no such key,
# so a namespace it creates elsewhere stays empty of its tables.
CONFINED_ACTIONS = ("CreateTable", *iam_actions.REPLICATION_DEST_TABLE_WRITE)


def is_fan_in(cfg: KitConfig, replica: Replica) -> bool:
    """An estate's replica fed by several sources: confined by account namespaces, its roles matched by pattern."""
    return cfg.scheme.key == "sources" and len(cfg.sources_into(replica)) > 1


def spans_accounts(cfg: KitConfig, replica: Replica) -> bool:
    """Sources of several accounts feed `replica`: each account's roles are confined to its namespaces there (the
    sources of one account share its deploy role, one trust domain: nothing to confine between them)."""
    return is_fan_in(cfg, replica) and len({s.account_id for s in cfg.sources_into(replica)}) > 1


def namespace_pattern() -> str:
    """The namespaces a replication role writes in a fan-in replica: those of its own account's prefix."""
    return FAN_IN_NAMESPACE_PREFIX.format(account="${aws:PrincipalAccount}") + "*"


def replication_roles_into(cfg: KitConfig, replica: Replica) -> tuple[str, ...]:
    """Who writes `replica`: the feeding sources' replication roles by ARN, or in a fan-in replica by name pattern
    (each one confined to its account's namespaces there, and granted only in the feeding accounts)."""
    if is_fan_in(cfg, replica):
        return (estate.replication_role_pattern(cfg),)
    return cfg.replication_role_arns_into(replica)


def feeding_accounts(cfg: KitConfig, replica: Replica) -> list[str]:
    """The accounts of the sources feeding `replica` other than its own (a grant is needed only across accounts)."""
    return sorted({s.account_id for s in cfg.sources_into(replica) if s.account_id != replica.account_id})


def _grant(
    sid: str, pattern: str, accounts: list[str], names: tuple[str, ...], resource: str
) -> iam_statements.Statement:
    return iam_statements.statement(
        sid,
        "Allow",
        iam_actions.s3t(*names),
        [resource],
        principal="*",
        condition={"ArnLike": {"aws:PrincipalArn": pattern}, "StringEquals": {"aws:PrincipalAccount": accounts}},
    )


def replication_grants(cfg: KitConfig, replica: Replica) -> list[iam_statements.Statement | None]:
    """A fan-in replica's grants to the replication roles (the Sids of the grants by ARN): by name pattern, in the
    feeding accounts of other accounts than the replica's."""
    accounts = feeding_accounts(cfg, replica)
    if not accounts:
        return []
    role, arn = estate.replication_role_pattern(cfg), replica.bucket_arn
    return [
        _grant(
            "AllowSourceReplicationRolesCreateReplicas", role, accounts, iam_actions.REPLICATION_DEST_BUCKET_CREATE, arn
        ),
        _grant(
            "AllowSourceReplicationRolesWriteReplicas",
            role,
            accounts,
            iam_actions.REPLICATION_DEST_TABLE_WRITE,
            iam_statements.table_arns(arn),
        ),
    ]


def key_use_grant(cfg: KitConfig, replica: Replica, sid: str, actions: list[str]) -> iam_statements.Statement:
    """A fan-in replica's key policy lets the replication roles use its key by name pattern, in every feeding account
    (a key policy grants its own account's principals too), so it keeps its size whatever the number of sources."""
    accounts = sorted({s.account_id for s in cfg.sources_into(replica)})
    return iam_statements.statement(
        sid,
        "Allow",
        [f"kms:{a}" for a in actions],
        ["*"],
        principal="*",
        condition={
            "ArnLike": {"aws:PrincipalArn": estate.replication_role_pattern(cfg)},
            "StringEquals": {"aws:PrincipalAccount": accounts},
        },
    )


def monitor_grants(cfg: KitConfig, replica: Replica) -> list[iam_statements.Statement | None]:
    """A fan-in replica's grants to the sources' monitor roles (the drift and layer checks), likewise by pattern."""
    accounts = feeding_accounts(cfg, replica)
    if not accounts or not cfg.assurance.monitor.enabled:
        return []
    role, arn = estate.monitor_role_pattern(cfg), replica.bucket_arn
    return [
        _grant("AllowReplicationMonitorsReadBucketPolicy", role, accounts, assurance.MONITOR_DRIFT_REPLICA_READ, arn),
        _grant(
            "AllowReplicationMonitorsReadTableLayers",
            role,
            accounts,
            assurance.MONITOR_LAYERS_READ,
            iam_statements.table_arns(arn),
        ),
    ]


def confinement(cfg: KitConfig, replica: Replica) -> iam_statements.Statement | None:
    """One Deny for every source: a replication role (by pattern, any account) creates and writes in the replica
    only the namespaces that start with its own account's prefix (the request's `aws:PrincipalAccount`, which the
    caller cannot choose). A source cannot overwrite the copy of another account's tables."""
    if not spans_accounts(cfg, replica):
        return None
    arn = replica.bucket_arn
    return iam_statements.statement(
        CONFINEMENT_SID,
        "Deny",
        iam_actions.s3t(*CONFINED_ACTIONS),
        [arn, iam_statements.table_arns(arn)],
        principal="*",
        condition={
            "ArnLike": {"aws:PrincipalArn": estate.replication_role_pattern(cfg)},
            "StringNotLike": {"s3tables:namespace": namespace_pattern()},
        },
    )
