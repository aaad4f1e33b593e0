"""The backup vault seen from the whole topology: the names the vault's stacks, documents and (later) the backup job
agree on, and `[vault]`'s rules across sections (docs/decisions/0034-backup-vault.md). The section's model is
`topology/vault.py`, which `topology/model.py` imports; this module imports the model, so there is no import circle.
"""

from __future__ import annotations

import math

from s3tables_kit.topology.issues import Issue
from s3tables_kit.topology.model import KitConfig, Vault
from s3tables_kit.topology.rules import KMS_KEY_ARN_RE, fan_in_namespace_prefix
from s3tables_kit.topology.vault import check_s3_bucket_name
from s3tables_kit.topology.vault_accounts import vault_account_buckets

VAULT_STACK_ID = "vault"
BACKUP_SCHEDULE = "vault-backup"  # the schedule `<kit>-vault-backup` (`s3tables_kit.policies.assurance.schedule_name`)
# The vault's object layout (`s3tables_kit.jobs.vault.layout.LAYOUT_VERSION`, held equal by tests/test_vault_layout.py):
# every backup of every table lives under `v1/tables/`, the only prefix the recovery role reads and lists
# (policies/vault.py).
VAULT_TABLES_PREFIX = "v1/tables/"


def backup_scheduler_role_name(cfg: KitConfig) -> str:
    return f"{cfg.kit.name}-vault-backup-schedule"


def backup_scheduler_role_arn(cfg: KitConfig) -> str:
    """The backup schedule's role, beside the backup role in the recovery account: the one principal that passes it."""
    return cfg.recovery_replica.role_arn(backup_scheduler_role_name(cfg))


def backup_role_name(cfg: KitConfig) -> str:
    return f"{cfg.kit.name}-s3tables-backup"


def backup_role_arn(cfg: KitConfig) -> str:
    """The backup role lives in the recovery account: the EMR Serverless application it runs in passes only roles of
    its own account (iam:PassRole never crosses accounts)."""
    return cfg.recovery_replica.role_arn(backup_role_name(cfg))


def vault_kms_alias(cfg: KitConfig, vault: Vault) -> str:
    return f"alias/{cfg.kit.name}-{vault.bucket_name(cfg.kit.name)}"


def vault_point_key_alias(cfg: KitConfig) -> str:
    """The alias of the vault's point key (the KMS HMAC key that authenticates backup points)."""
    return f"alias/{cfg.kit.name}-vault-points"


def vault_point_key_alias_arn(cfg: KitConfig, vault: Vault) -> str:
    """Its ARN, known before the deploy: the scheduled jobs name the key by it (a restore by `--outputs` pins the key
    ARN, `kit_vault.point_key_arn`)."""
    return f"arn:{vault.partition}:kms:{vault.region}:{vault.account_id}:{vault_point_key_alias(cfg)}"


def longest_replica_retention_days(cfg: KitConfig) -> int:
    """The longest snapshot age a replica keeps, in whole days (rounded up)."""
    return max(math.ceil(r.snapshot_retention.max_snapshot_age_hours / 24) for r in cfg.replicas)


def vault_checks(cfg: KitConfig) -> list[Issue]:
    """`[vault]`'s rules across sections: a vault that forgets history before a replica does adds nothing; a backup
    budget longer than the interval between backups; its account must be reached by the SCPs (not the management
    account); a key the kit creates (a bring-your-own key is refused)."""
    v = cfg.vault
    if v is None:
        return []
    out: list[Issue] = []
    floor = longest_replica_retention_days(cfg)
    if v.retention_days < floor:
        out.append(
            Issue(
                "vault.retention_days",
                f"{v.retention_days} is shorter than the longest replica snapshot retention ({floor} days): the vault "
                "must keep a backup at least as long as a replica keeps the snapshot, or it protects no history the "
                "replicas do not already hold",
            )
        )
    if v.max_backup_age_hours <= v.interval_hours:
        out.append(
            Issue(
                "vault.max_backup_age_hours",
                f"{v.max_backup_age_hours} must be more than interval_hours ({v.interval_hours}): a backup is that old "
                "just before the next one, so the backup age alarm would fire between every two backups",
            )
        )
    if not v.creates_key:
        m = KMS_KEY_ARN_RE.match(v.kms_key)
        if m and (m.group(2), m.group(3)) != (v.region, v.account_id):
            out.append(Issue("vault.kms_key", "the key must be in the vault's account and Region (SSE-KMS of S3)"))
        else:
            out.append(
                Issue(
                    "vault.kms_key",
                    'must be "create": the vault key\'s policy is written once by the kit so that nobody, break-glass '
                    "included, can disable or delete it; a key of your own has a policy the kit cannot prove",
                )
            )
    has_recovery_replica = any(r.bucket == cfg.recovery.replica for r in cfg.replicas)  # else reported on its own
    if has_recovery_replica and backup_role_arn(cfg) in cfg.protection.break_glass_principals:
        out.append(Issue("protection.break_glass_principals", "the backup role cannot be a break-glass principal"))
    org = cfg.protection.organization
    if org is not None:
        if v.account_id == org.management_account_id:
            out.append(
                Issue(
                    "vault.account_id",
                    f"the vault is in the organization's management account {v.account_id}, where SCPs do not "
                    "apply; put it in a member account",
                )
            )
        elif v.account_id not in org.covered_accounts:
            out.append(
                Issue(
                    "protection.organization.targets",
                    f"account {v.account_id} (the vault) is not covered by the SCP: add it to targets, or list it "
                    "under protection.organization.ou_accounts for the root or OU target it sits in",
                )
            )
    try:
        check_s3_bucket_name(v.bucket_name(cfg.kit.name))
    except ValueError as err:
        out.append(Issue("vault.bucket", str(err)))
    return out + _vault_table_issues(cfg, v)


def _vault_table_issues(cfg: KitConfig, v: Vault) -> list[Issue]:
    """Each of `tables` names a namespace some source replicates into a bucket the backup reads (the recovery replica
    or an account bucket of its vault): a table-level configuration names it, or a bucket-level one carries it (in a
    replica several accounts feed, only the namespaces named after the source's account); one no source carries (its
    source removed) would back up nothing, silently."""
    replica = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    if replica is None:
        return []  # reported on its own
    feeding = [(src, False) for src in cfg.sources_into(replica)]
    confined = cfg.scheme.key == "sources" and len({s.account_id for s, _ in feeding}) > 1
    feeding = [(src, confined) for src, _ in feeding]
    accounts = [b for b in vault_account_buckets(cfg) if b.bucket != replica.bucket]
    where = f"the recovery replica {replica.bucket!r}" + (" or an account bucket of its vault" if accounts else "")
    for account in accounts:  # one account's bucket: its namespaces keep their names
        feeding += [(src, False) for src in cfg.sources_into(account)]

    def carries(ns: str) -> bool:
        for src, by_account in feeding:
            rep = cfg.replication_of(src)
            if rep.mode == "tables" and ns in {t.split(".", 1)[0] for t in rep.tables}:
                return True
            if rep.mode == "bucket" and (not by_account or ns.startswith(fan_in_namespace_prefix(src.account_id))):
                return True
        return False

    return [
        Issue(
            f"vault.tables[{i}]",
            f"namespace {ns!r} reaches {where} from no source (its source removed, or a typo): the backup would hold "
            "nothing of it",
        )
        for i, ns in enumerate(t.split(".", 1)[0] for t in v.tables)
        if not carries(ns)
    ]
