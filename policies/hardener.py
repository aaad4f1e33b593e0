"""Policies of the scheduled hardener (`[assurance.harden]`): the function's role, which may read a replica table's
layers and write its table policy and retention on the source's replica buckets and nothing else, and the schedule's
role, which may invoke that one function. The function's role is a principal class of its own in the replica layers
(`s3tables_kit.policies.allowlists.REPLICA_HARDENER`): they exempt it from the table writes below only, and it is no
break-glass principal (`s3tables_kit.topology.checks.harden_checks`; docs/assurance.md#scheduled-hardening)."""

from __future__ import annotations

from s3tables_kit.policies import allowlists as AL
from s3tables_kit.policies import sites as AS
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, PolicyDoc, doc, role_documents
from s3tables_kit.topology.checks import hardener_principals, hardener_role_arn
from s3tables_kit.topology.config import KitConfig, Replica, Source

HARDEN_BUCKET_READ = ("ListTables",)
HARDEN_TABLE_ACTIONS = (
    "GetTable",
    "GetTablePolicy",
    "GetTableMaintenanceConfiguration",
    *(a.split(":", 1)[1] for a in AL.REPLICA_HARDENER.actions),  # the writes the replica layers exempt it from
)


def hardener_name(cfg: KitConfig, src: Source) -> str:
    """The function, its role and its log group."""
    return hardener_role_arn(cfg, src).rsplit("/", 1)[1]


def hardener_schedule_role_name(cfg: KitConfig, src: Source) -> str:
    return f"{hardener_name(cfg, src)}-schedule"


def hardener_function_arn(cfg: KitConfig, src: Source) -> str:
    return AS.site_of(src).arn("lambda", f"function:{hardener_name(cfg, src)}")


def cross_account_grants(cfg: KitConfig, replica: Replica) -> list[iam_statements.Statement | None]:
    """The scheduled hardener of another account: what it reads and writes on the replica's tables (its own class,
    `AL.REPLICA_HARDENER`; no bucket write)."""
    principals = sorted(p for p in hardener_principals(cfg) if p.split(":")[4] != replica.account_id)
    if not principals:
        return []
    arn = replica.bucket_arn
    return [
        iam_statements.allow_principals_actions(
            "AllowCrossAccountHardenerOnBucket", principals, HARDEN_BUCKET_READ, [arn]
        ),
        iam_statements.allow_principals_actions(
            "AllowCrossAccountHardenerOnTables",
            principals,
            HARDEN_TABLE_ACTIONS,
            [iam_statements.table_arns(arn)],
        ),
    ]


def hardener_role_trust(cfg: KitConfig, src: Source) -> Document:
    site = AS.site_of(src)
    return doc(
        iam_statements.allow_service_assume_role(
            "AllowLambdaServiceForTheHardenerFunction",
            AS.LAMBDA_SERVICE,
            source_account=site.account_id,
            source_arns=[hardener_function_arn(cfg, src)],
        )
    )


def hardener_role_permissions(cfg: KitConfig, src: Source) -> Document:
    buckets = [r.bucket_arn for r in cfg.destinations_of(src)]
    site = AS.site_of(src)
    return doc(
        iam_statements.allow_actions("ListReplicaTables", HARDEN_BUCKET_READ, buckets),
        iam_statements.allow_actions(
            "HardenReplicaTables", HARDEN_TABLE_ACTIONS, [iam_statements.table_arns(b) for b in buckets]
        ),
        iam_statements.statement(
            "WriteHardenerFunctionLogs",
            "Allow",
            ["logs:CreateLogStream", "logs:PutLogEvents"],
            [site.arn("logs", f"log-group:{hardener_name(cfg, src)}:log-stream:*")],
        ),
    )


def hardener_schedule_role_trust(cfg: KitConfig, src: Source) -> Document:
    return doc(
        AS.allow_scheduler_assume_role("AllowSchedulerForTheHardenerSchedule", AS.site_of(src), hardener_name(cfg, src))
    )


def hardener_schedule_role_permissions(cfg: KitConfig, src: Source) -> Document:
    return doc(
        iam_statements.statement(
            "InvokeTheHardenerFunction", "Allow", ["lambda:InvokeFunction"], [hardener_function_arn(cfg, src)]
        )
    )


def documents(cfg: KitConfig, src: Source) -> list[PolicyDoc]:
    if not cfg.assurance.harden.enabled:
        return []
    account = src.account_id
    return [
        *role_documents(
            "hardener-role",
            account,
            hardener_name(cfg, src),
            hardener_role_trust(cfg, src),
            hardener_role_permissions(cfg, src),
        ),
        *role_documents(
            "hardener-schedule-role",
            account,
            hardener_schedule_role_name(cfg, src),
            hardener_schedule_role_trust(cfg, src),
            hardener_schedule_role_permissions(cfg, src),
        ),
    ]


def summary_principals(cfg: KitConfig, src: Source) -> list[tuple[str, list[str], str, list[str]]]:
    """SUMMARY.md's "Who may do what" rows of the hardener's two roles."""
    if not cfg.assurance.harden.enabled:
        return []
    site = AS.site_of(src)
    bound = cfg.assurance.harden.one_layer_bound_minutes
    return [
        (
            "Scheduled hardener function role",
            [hardener_role_arn(cfg, src)],
            f"Assumed only by Lambda for the function `{hardener_name(cfg, src)}` (`hardener-role-trust`). No "
            "break-glass principal: every replica layer exempts it from writing a replica table's policy and "
            "retention only (no deletion, no bucket policy, no key or vault grant); its own policy reads and writes "
            f"those on the replica buckets: new replicas keep one layer at most {bound} min.",
            ["hardener-role-permissions"],
        ),
        (
            "Scheduled hardener schedule role",
            [site.role_arn(hardener_schedule_role_name(cfg, src))],
            "Assumed only by EventBridge Scheduler for the hardener's schedule. Invokes the hardener function.",
            ["hardener-schedule-role-permissions"],
        ),
    ]
