"""Allow-lists: for each protected scope, what each principal class may do there; every layer denies the rest.

A scope (`AllowList`) names the services whose actions reach its resources, what any principal may do there
(`everyone`, reads) and what each named principal class may do besides (`classes`: the deploy roles' reviewed set,
the kit's own roles' use, ...). `AllowList.statements` writes one Deny per class with `NotAction` (everything but
the class's list), so an action AWS adds tomorrow is denied until it is classified here, and a document's size
follows the number of classes, never the number of threats (docs/decisions/0028-lock-after-first-deploy.md).
Break-glass (and any class in `exempt`) is denied nothing by a scope.

Reads are the only wildcards: `<service>:Get*`, `List*` and `Describe*` (`READ_PREFIXES`). AWS names reads so;
`tests/test_policy_allowlists.py` fails when the IAM catalogue holds a write under one of these prefixes.

Shared by every scope's builder: the kit's resources here (`KIT_SCOPES`), the vault's in `s3tables_kit.policies.vault`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from s3tables_kit.policies import statements as iam_statements

READ_PREFIXES = ("Describe*", "Get*", "List*")
# The read prefixes each service's actions use (a pattern that matches no action is refused by `KIT-IAM1`).
SERVICE_READ_PREFIXES = {"iam": ("Get*", "List*"), "lambda": ("Get*", "List*"), "scheduler": ("Get*", "List*"),
                         "sns": ("Get*", "List*")}  # fmt: skip
EVERYONE = "everyone"
BREAK_GLASS = "break-glass"
DEPLOY = "deploy"
KIT_ROLES = "kit-roles"
HARDENER = "hardener"


def reads(*services: str) -> tuple[str, ...]:
    """`<service>:Describe*`, `Get*`, `List*` of each service: what anyone may read of a scope."""
    return tuple(f"{s}:{p}" for s in services for p in SERVICE_READ_PREFIXES.get(s, READ_PREFIXES))


@dataclass(frozen=True)
class Allowance:
    """What one principal class may do on a scope besides the scope's `everyone` list, and why."""

    principal_class: str
    actions: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class AllowList:
    """One protected scope: its services (what the catalogue proofs sweep), what anyone may do, what each class may
    do besides, and which classes the scope does not bind at all (break-glass)."""

    scope: str  # the Sid stem of its statements (alphanumeric)
    title: str
    services: tuple[str, ...]
    everyone: tuple[str, ...]
    classes: tuple[Allowance, ...] = ()
    exempt: tuple[str, ...] = (BREAK_GLASS,)
    # Classes held by their own permission policies, which the scope itself guards (a kit role's policies change by
    # a deploy role only): exempt from the scope's Deny for everyone, with no statement of their own (an SCP holds
    # 5,120 characters); the proofs show each such principal stays within its class's list.
    self_bounded: tuple[str, ...] = ()
    risk: str = ""
    notes: tuple[str, ...] = field(default=())

    def allowed(self, principal_class: str) -> tuple[str, ...]:
        """The actions `principal_class` may take on the scope (`("*",)` for an exempt class)."""
        if principal_class in self.exempt:
            return ("*",)
        extra = next((c.actions for c in self.classes if c.principal_class == principal_class), ())
        return tuple(sorted(set(self.everyone) | set(extra)))

    def permits(self, principal_class: str, action: str) -> bool:
        """Whether `action` (`service:Name`) is on `principal_class`'s list (IAM matches case-insensitively)."""
        return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in self.allowed(principal_class))

    def statements(
        self,
        resources: Sequence[str],
        principals: Mapping[str, Sequence[str]],
        *,
        condition: dict[str, dict[str, Any]] | None = None,
        resource_policy: bool = False,
        sid_suffix: str = "",
    ) -> list[iam_statements.Statement]:
        """The scope's Denies on `resources` in one layer. `principals`: the ARNs (or ARN patterns) of each class in
        this layer (a class without principals gets no statement; break-glass is left out of a guardrail, which it
        does not carry). Everyone not named is held to `everyone`; each named class to its own list.
        `condition`: added to every statement (a key matched by alias); `resource_policy`: Principal "*"."""
        if not resources:
            return []
        known = {*self.exempt, *self.self_bounded, *(c.principal_class for c in self.classes)}
        named = sorted({p for c, arns in principals.items() for p in arns if c in known})
        principal = "*" if resource_policy else None
        sid = f"Deny{self.scope}{sid_suffix}"
        out = [_deny_not(sid, self.everyone, resources, principal, {"ArnNotLike": named} if named else {}, condition)]
        for c in self.classes:
            arns = sorted(set(principals.get(c.principal_class, ())))
            if arns and c.principal_class not in (*self.exempt, *self.self_bounded):
                title = "".join(w.title() for w in c.principal_class.split("-"))
                out.append(
                    _deny_not(
                        f"{sid}{title}", self.allowed(c.principal_class), resources, principal, {"ArnLike": arns},
                        condition,
                    )
                )  # fmt: skip
        return out


def _deny_not(
    sid: str,
    allowed: Sequence[str],
    resources: Sequence[str],
    principal: str | None,
    who: dict[str, list[str]],
    condition: dict[str, dict[str, Any]] | None,
) -> iam_statements.Statement:
    """Deny everything but `allowed` on `resources` to the principals `who` selects (`{"ArnNotLike": [...]}`: all
    but those; `{"ArnLike": [...]}`: those; `{}`: everyone)."""
    cond: dict[str, dict[str, Any]] = {op: {"aws:PrincipalArn": arns} for op, arns in who.items()}
    cond.update(condition or {})
    return iam_statements.statement(
        sid, "Deny", allowed, resources, principal=principal, condition=cond, not_action=True
    )


# ---------------------------------------------------------------- the kit's own resources ----
# The replication machinery and the detection path: every alarm, topic (and subscription), function, schedule, log
# group, role and key alias the kit names `<kit>-...`, in any account the layer binds. Matched by that name pattern,
# so a layer's size does not grow with the sources, the replica accounts or the kit's next alarm; the kit's name is
# a reserved prefix in the covered accounts (docs/policy-review.md#how-to-read-an-allow-list).
KIT_SERVICES = ("cloudwatch", "iam", "kms", "lambda", "logs", "scheduler", "sns")


def kit_resources(partition: str, kit: str) -> tuple[str, ...]:
    return (
        f"arn:{partition}:cloudwatch:*:*:alarm:{kit}-*",
        f"arn:{partition}:iam::*:role/{kit}-*",
        f"arn:{partition}:kms:*:*:alias/{kit}-*",
        f"arn:{partition}:lambda:*:*:function:{kit}-*",
        f"arn:{partition}:logs:*:*:log-group:{kit}-*",
        f"arn:{partition}:scheduler:*:*:schedule-group/{kit}-*",  # deleting a group deletes its schedules
        f"arn:{partition}:scheduler:*:*:schedule/*/{kit}-*",
        f"arn:{partition}:sns:*:*:{kit}-*",
    )


def kit_roles(partition: str, kit: str) -> tuple[str, ...]:
    """The kit's roles by name: each is bounded by its own permission policies, which only deploy roles change."""
    return (f"arn:{partition}:iam::*:role/{kit}-*",)


def kit_key_resources(partition: str) -> tuple[str, ...]:
    return (f"arn:{partition}:kms:*:*:key/*",)


def kit_key_condition(kit: str) -> dict[str, dict[str, Any]]:
    """A key the kit created is known by its alias only (its ARN exists after apply)."""
    return {"ForAnyValue:StringLike": {"kms:ResourceAliases": f"alias/{kit}-*"}}


KIT_ROLE_USE = ("iam:PassRole", "lambda:InvokeFunction", "logs:CreateLogStream", "logs:PutLogEvents")
# What `cdktf deploy` of the kit's stacks calls on the kit's resources: create, update in place, tag. Destroying
# one (an alarm, the monitor, a role, a subscription) or re-writing a role's trust is a break-glass deploy.
KIT_DEPLOY = (
    "cloudwatch:PutMetricAlarm", "cloudwatch:TagResource", "cloudwatch:UntagResource",
    "iam:AttachRolePolicy", "iam:CreateRole", "iam:DeleteRolePolicy", "iam:DetachRolePolicy", "iam:PassRole",
    "iam:PutRolePolicy", "iam:TagRole", "iam:UntagRole", "iam:UpdateRole", "iam:UpdateRoleDescription",
    "kms:CreateAlias",
    "lambda:AddPermission", "lambda:CreateFunction", "lambda:InvokeFunction", "lambda:PutFunctionConcurrency",
    "lambda:RemovePermission", "lambda:TagResource", "lambda:UntagResource", "lambda:UpdateFunctionCode",
    "lambda:UpdateFunctionConfiguration",
    "logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:TagResource", "logs:UntagResource",
    "scheduler:CreateSchedule", "scheduler:CreateScheduleGroup",
    "scheduler:TagResource", "scheduler:UntagResource", "scheduler:UpdateSchedule",
    "sns:ConfirmSubscription", "sns:CreateTopic", "sns:SetTopicAttributes", "sns:Subscribe", "sns:TagResource",
    "sns:UntagResource",
)  # fmt: skip
# Use, which each key's own policy decides (the point key's MACs included: `GenerateMac` is the backup role's there).
KIT_KEY_USE = (
    "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:GenerateMac",
    "kms:VerifyMac",
)  # fmt: skip


KIT_RESOURCES = AllowList(
    scope="KitResources",
    title="The replication machinery and the detection path (the kit's roles, functions, schedules, alarms, "
    "topics and subscriptions, log groups, key aliases)",
    services=KIT_SERVICES,
    everyone=(*reads(*KIT_SERVICES), "logs:FilterLogEvents", "logs:StartQuery"),
    classes=(
        Allowance(
            KIT_ROLES,
            KIT_ROLE_USE,
            "A schedule invokes its function or passes the recovery role to a job run; a function writes its own "
            "logs. Each kit role is held by its own permission policies (rendered beside), which only a deploy role "
            "changes: the organization's layer exempts the kit's roles by name and lets their policies decide.",
        ),
        Allowance(
            DEPLOY,
            KIT_DEPLOY,
            "What `cdktf deploy` of the kit's stacks calls on these resources (create, update in place, tag), "
            "reviewed: no deletion, no trust rewritten, no permissions boundary, no mute rule, composite or log "
            "alarm, no alarm state or actions switched off, no subscription filter, delivery or data-protection "
            "policy, no function event configuration, no log subscription, key association or retention removal, "
            "no alias moved or deleted.",
        ),
    ),
    self_bounded=(KIT_ROLES,),
    risk="Deleting, muting or rewriting the monitor, its schedule, alarms, topic or logs silences the page that a "
    "frozen replica would raise; a kit role widened, given a Deny boundary or passed to another function or job "
    "acts for whoever changed it (the replication role writes wherever its editor wants, the recovery role reads "
    "every replica). Only the reads below, the kit's own roles' use and the deploy roles' reviewed set go through.",
)

KIT_KEYS = AllowList(
    scope="KitKeys",
    title="The keys the kit created (source, replica, alarm topic and vault keys, known by their `<kit>-` alias)",
    services=("kms",),
    everyone=(*reads("kms"), *KIT_KEY_USE),
    risk="Disabling a key or scheduling its deletion makes every file it encrypts unreadable (or stops replication, "
    "or every alarm delivery); a grant or a moved alias hands its use elsewhere. Nobody but break-glass administers a "
    "key once it carries the kit's alias: a deploy creates a key, its policy, rotation and tags before the alias "
    "names it; a later change of them is a break-glass deploy.",
)

HARDENER_SERVICES = ("iam", "lambda", "logs", "scheduler")
KIT_HARDENER = AllowList(
    scope="KitHardener",
    title="The scheduled hardener (`[assurance.harden]`): its function, schedule, log group and role",
    services=HARDENER_SERVICES,
    everyone=reads(*HARDENER_SERVICES),
    classes=(
        Allowance(
            KIT_ROLES,
            KIT_ROLE_USE,
            "Its schedule invokes it; it writes its own logs. Held by their own permission policies.",
        ),
    ),
    self_bounded=(KIT_ROLES,),
    risk="The hardener writes replica table policies and retention: whoever changes its code, configuration, "
    "schedule or role acts with that exemption. Break-glass only, the deploy roles included (its first deploy is a "
    "break-glass deploy).",
)

KIT_SCOPES: tuple[AllowList, ...] = (KIT_RESOURCES, KIT_KEYS, KIT_HARDENER)

# The scheduled hardener's class in the replica layers (bucket, table policies, SCP): it writes a replica table's
# policy and retention and nothing else; it is no break-glass principal (no key or vault grant, not in
# `AllowCrossAccountBreakGlass*`). Each layer exempts it from these actions only.
REPLICA_HARDENER = Allowance(
    HARDENER,
    ("s3tables:PutTableMaintenanceConfiguration", "s3tables:PutTablePolicy"),
    "It writes the reviewed table policy and retention of the replica tables the service creates.",
)
