"""A source's replication guard (docs/decisions/0028-lock-after-first-deploy.md): who may change a source's
replication configuration (either level) and pass a role to the replication service, in the source bucket's policy,
the guards SCP and the guardrail. `s3tables_kit.policies.documents` assembles them into those documents."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from s3tables_kit.policies import adopted, estate, protection
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, doc
from s3tables_kit.topology.config import KitConfig, Source


def source_deploy_roles(cfg: KitConfig) -> list[str]:
    return sorted({s.deploy_role_arn for s in cfg.sources if s.deploy_role_arn})


def source_guards(
    cfg: KitConfig, *, exempt: Sequence[str], break_glass: Sequence[str] = (), account_id: str | None = None
) -> list[iam_statements.Statement | None]:
    """Who may change a source's replication (either level) and pass a role to the replication service: `exempt`
    (the sources' deploy roles and break-glass) change it, and nobody but `break_glass` passes any role but the
    kit's replication roles (docs/decisions/0028-lock-after-first-deploy.md). `account_id`: only that account's
    sources (a guardrail, attached to neither break-glass nor a replication role)."""
    return _SOURCE_GUARDS[cfg.scheme.key](cfg, exempt=exempt, break_glass=break_glass, account_id=account_id)


def _source_guards_by_arn(
    cfg: KitConfig, *, exempt: Sequence[str], break_glass: Sequence[str], account_id: str | None
) -> list[iam_statements.Statement | None]:
    buckets = [s.bucket_arn for s in cfg.sources if account_id is None or s.account_id == account_id]
    return [
        iam_statements.deny_source_replication_change("DenySourceReplicationChange", buckets, exempt)
        if buckets
        else None,
        iam_statements.deny_pass_other_replication_role(
            "DenyPassOtherReplicationRole", cfg.replication_role_arns, break_glass
        ),
    ]


# Each scheme's guards: an estate's by pattern, as its SCP (`s3tables_kit.policies.estate.source_guards`), of constant
# size.
_SOURCE_GUARDS: dict[str, Callable[..., list[iam_statements.Statement | None]]] = {
    "source": _source_guards_by_arn,
    "sources": estate.source_guards,
}


def source_bucket_policy(cfg: KitConfig, src: Source) -> Document:
    """The source bucket's own layer against changing its replication (the guards SCP and, where the source shares
    an account with a replica, the guardrail are the others): break-glass and the source's deploy role only, and
    the policy itself changes only through them. An adopted bucket's statements come first, kept as they are
    (`s3tables_kit.policies.adopted.merge`, which refuses one that defeats these)."""
    bg = list(cfg.protection.break_glass_principals)
    deploy = [src.deploy_role_arn] if src.deploy_role_arn else []
    others = sorted({p for p in cfg.protection.break_glass_principals if p.split(":")[4] != src.account_id})
    kit = doc(
        iam_statements.allow_principals_actions(
            "AllowCrossAccountBreakGlassSourceReplication",
            others,
            (
                "PutTableBucketReplication",
                "DeleteTableBucketReplication",
                "GetTableBucketReplication",
                "PutTableBucketPolicy",
                "DeleteTableBucketPolicy",
                "GetTableBucketPolicy",
            ),
            [src.bucket_arn],
        )
        if others
        else None,
        iam_statements.allow_principals_actions(
            "AllowCrossAccountBreakGlassSourceTableReplication",
            others,
            ("PutTableReplication", "DeleteTableReplication", "GetTableReplication"),
            [iam_statements.table_arns(src.bucket_arn)],
        )
        if others
        else None,
        iam_statements.deny_source_replication_change(
            "DenySourceReplicationChange",
            [src.bucket_arn],
            [*bg, *protection.replication_setup_roles(cfg, deploy)],
            resource_policy=True,
        ),
        iam_statements.deny_source_policy_change("DenySourceBucketPolicyChange", src.bucket_arn, [*bg, *deploy]),
    )
    return adopted.merge(cfg, src, kit)
