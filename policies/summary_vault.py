"""The backup vault's section of the rendered SUMMARY.md (`s3tables_kit.policies.vault` builds the documents): each
scope's allow-list by principal class, the Denies that bind everyone, and each Deny's risk by Sid."""

from __future__ import annotations

from s3tables_kit.policies import scopes
from s3tables_kit.policies.vault import (
    JOBS_SCP,
    VAULT_SCP,
    bucket_name,
    bucket_scope,
    key_scope,
    point_key_scope,
    rules,
    scp_scopes,
)
from s3tables_kit.topology.backup import backup_role_arn, backup_scheduler_role_name
from s3tables_kit.topology.config import KitConfig


def summary_lines(cfg: KitConfig) -> list[str]:
    """The vault's section of the rendered SUMMARY.md: each scope's allow-list by principal class, and the Denies
    that bind everyone."""
    if cfg.vault is None:
        return []
    v = cfg.vault
    lines = [
        "## The backup vault",
        "",
        f"S3 bucket `{bucket_name(cfg)}` ({v.account_id}, {v.region}): Object Lock in COMPLIANCE mode for "
        f"{v.retention_days} days (no version is deleted, and no retention shortened, before then by anyone, "
        f"break-glass and root included: S3 enforces it), storage class {v.storage_class}. Written only by "
        f"`{backup_role_arn(cfg)}`, each object once (`If-None-Match`). Its policy and its key's policy are written "
        "once: nobody, break-glass included, changes a setting of the bucket or disables, deletes or re-writes the "
        "key after the first deploy.",
        "",
        *(
            [
                f"Backed up every {v.interval_hours} h ({', '.join(f'`{t}`' for t in v.tables)}): the schedule's role "
                f"`{backup_scheduler_role_name(cfg)}` starts job runs on the kit's EMR Serverless application and "
                "passes them the backup role, nothing else (`backup-schedule-role-permissions`).",
                "",
            ]
            if v.tables
            else []
        ),
        "Allow-lists (bucket policy and key policy; the vault SCP `scp-protect-vault` the same, with the first "
        "deploy's settings for the deployer and the key's list as one; the scripts bucket policy and the "
        "scheduled jobs' SCP `scp-protect-scheduled-jobs` on `scheduled/` and the kit's application):",
        "",
        *scopes.summary_lines(
            [
                bucket_scope(cfg, kind="resource-policy"),
                key_scope(cfg, kind="resource-policy"),
                point_key_scope(cfg, kind="resource-policy"),
                *scp_scopes(cfg, JOBS_SCP),
            ]
        ),
        "",
        "| Rule (binds everyone) | Actions | Layers |",
        "|---|---|---|",
    ]
    for r in rules(cfg):
        layers = "bucket policy, vault SCP" if r.in_scp else "bucket policy"
        lines.append(f"| `{r.sid}` | {', '.join(f'`{a}`' for a in r.actions)} | {layers} |")
    return [*lines, ""]


def risks(cfg: KitConfig) -> dict[str, str]:
    """The risk of each of the vault's Denies, by Sid, for the rendered SUMMARY.md."""
    if cfg.vault is None:
        return {}
    placed = [
        bucket_scope(cfg, kind="scp"),
        key_scope(cfg, kind="resource-policy"),
        point_key_scope(cfg, kind="resource-policy"),
        *scp_scopes(cfg, VAULT_SCP),
    ]
    return scopes.risks([*placed, *scp_scopes(cfg, JOBS_SCP)]) | {r.sid: r.risk for r in rules(cfg)}
