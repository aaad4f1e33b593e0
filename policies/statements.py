"""Small named statement builders. Each returns one IAM policy statement (a plain dict) with a descriptive Sid.

Documents (`s3tables_kit.policies.documents`) are assembled only from these builders, so every statement a reviewer
reads in `policies/rendered/` has exactly one place in code. Lists are sorted and de-duplicated: output is
deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from s3tables_kit.policies.actions import (
    GUARDRAIL_DETACH,
    GUARDRAIL_POLICY_TAMPERING,
    KMS_KEY_DESTRUCTION,
    MAINTENANCE_SERVICE,
    PRIVILEGED_ROLE_TAMPERING,
    REPLICATION_SERVICE,
    ProtectionRule,
    level_split,
    s3t,
)

Statement = dict[str, Any]


def _one_or_many(values: Iterable[str]) -> str | list[str]:
    vals = sorted(set(values))
    return vals[0] if len(vals) == 1 else vals


def statement(
    sid: str,
    effect: str,
    actions: Iterable[str],
    resources: Iterable[str],
    *,
    principal: dict[str, Any] | str | None = None,
    condition: dict[str, dict[str, Any]] | None = None,
    not_action: bool = False,
) -> Statement:
    """`not_action`: the statement covers every action but `actions` (an allow-list's Deny, built by
    `s3tables_kit.policies.allowlists`)."""
    if not sid.isalnum():
        raise ValueError(f"Sid {sid!r} must be alphanumeric")
    out: Statement = {"Sid": sid, "Effect": effect}
    if principal is not None:
        out["Principal"] = principal
    out["NotAction" if not_action else "Action"] = _one_or_many(actions)
    out["Resource"] = _one_or_many(resources)
    if condition:
        out["Condition"] = {
            op: {k: (_one_or_many(v) if isinstance(v, list | tuple) else v) for k, v in sorted(kv.items())}
            for op, kv in sorted(condition.items())
        }
    return out


def table_arns(bucket_arn: str) -> str:
    return f"{bucket_arn}/table/*"


# ---------------------------------------------------------------- trust ----


def allow_service_assume_role(sid: str, service: str, *, source_account: str, source_arns: Sequence[str]) -> Statement:
    """Trust a service principal, with confused-deputy conditions (aws:SourceAccount + aws:SourceArn)."""
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": "sts:AssumeRole",
        "Condition": {
            "ArnLike": {"aws:SourceArn": _one_or_many(source_arns)},
            "StringEquals": {"aws:SourceAccount": source_account},
        },
    }


# ---------------------------------------------------------------- allows ----


def allow_actions(sid: str, names: Sequence[str], resources: Iterable[str]) -> Statement:
    return statement(sid, "Allow", s3t(*names), resources)


def allow_principal_actions(sid: str, principal_arn: str, names: Sequence[str], resources: Iterable[str]) -> Statement:
    """Resource-policy grant to one principal (cross-account replication role on a destination bucket)."""
    return statement(sid, "Allow", s3t(*names), resources, principal={"AWS": principal_arn})


def allow_principals_actions(
    sid: str, principal_arns: Sequence[str], names: Sequence[str], resources: Iterable[str]
) -> Statement:
    """Resource-policy grant to several principals (break-glass principals of other accounts)."""
    return statement(sid, "Allow", s3t(*names), resources, principal={"AWS": _one_or_many(principal_arns)})


def allow_kms(
    sid: str, actions: Sequence[str], resources: Iterable[str], condition: dict[str, dict[str, Any]] | None = None
) -> Statement:
    return statement(sid, "Allow", (f"kms:{a}" for a in actions), resources, condition=condition)


def allow_s3(sid: str, actions: Sequence[str], resources: Iterable[str]) -> Statement:
    return statement(sid, "Allow", (f"s3:{a}" for a in actions), resources)


def deny_actions(sid: str, names: Sequence[str], resources: Iterable[str]) -> Statement:
    """Unconditional self-deny in an identity policy (e.g. the recovery role never writes replicas)."""
    return statement(sid, "Deny", s3t(*names), resources)


def deny_actions_outside(sid: str, names: Sequence[str], kept: Sequence[str]) -> Statement:
    """Unconditional self-deny of S3 Tables `names` on every resource but `kept` (`NotResource`): the recovery role
    writes its own bucket and nothing else, whatever the number of replicas, tagged or not."""
    out: Statement = {"Sid": sid, "Effect": "Deny", "Action": _one_or_many(s3t(*names))}
    out["NotResource"] = _one_or_many(list(kept))
    return out


# ---------------------------------------------------------------- protection ----


def exemption_condition(
    rule: ProtectionRule, exempt_arns: Sequence[str], *, resource_policy: bool
) -> dict[str, dict[str, Any]]:
    """Deny applies unless the caller is an exempt principal (aws:PrincipalArn; for an assumed role this is the role's
    ARN) or, in resource policies, the S3 Tables maintenance service principal where the rule allows it.

    ArnNotLike is true when aws:PrincipalArn is absent (service principals), so a service principal is denied unless
    the StringNotEqualsIfExists on aws:PrincipalServiceName exempts it. SCPs never apply to service principals, so
    that clause is omitted there.
    """
    cond: dict[str, dict[str, Any]] = {}
    if exempt_arns:
        cond["ArnNotLike"] = {"aws:PrincipalArn": sorted(set(exempt_arns))}
    if resource_policy and rule.exempt_maintenance_service:
        cond["StringNotEqualsIfExists"] = {"aws:PrincipalServiceName": MAINTENANCE_SERVICE}
    return cond


def protection_statement(
    rule: ProtectionRule,
    *,
    bucket_arns: Sequence[str],
    table_resources: Sequence[str],
    exempt_arns: Sequence[str],
    kind: str,
) -> Statement | None:
    """One protective Deny for `rule`.

    kind: "bucket-policy" | "table-policy" (resource policies, Principal "*"), "identity" | "scp" (no Principal).
    Bucket-level actions are denied on `bucket_arns`, table-level ones on `table_resources`; a table policy carries
    only the table-level actions. Returns None when nothing of the rule applies at that level.
    """
    bucket_names, table_names = level_split(rule.actions)
    names = table_names if kind == "table-policy" else bucket_names + table_names
    if not names:
        return None
    resources: list[str] = list(table_resources)
    if kind != "table-policy" and bucket_names:
        resources += list(bucket_arns)
    resource_policy = kind in ("bucket-policy", "table-policy")
    return statement(
        rule.sid,
        "Deny",
        s3t(*names),
        resources,
        principal="*" if resource_policy else None,
        condition=exemption_condition(rule, exempt_arns, resource_policy=resource_policy),
    )


# ---------------------------------------------------------------- KMS key policies ----


def _account_root(account_id: str, partition: str) -> dict[str, str]:
    return {"AWS": f"arn:{partition}:iam::{account_id}:root"}


def kms_root_administration(account_id: str, partition: str) -> Statement:
    """Key administration for the owning account (IAM policies decide who), without key use or deletion, and without
    `kms:CreateGrant` (a grant hands out key use outside this policy; see `kms_root_service_grants`)."""
    return statement(
        "AllowAccountKeyAdministration",
        "Allow",
        [
            "kms:CancelKeyDeletion", "kms:CreateAlias", "kms:Describe*", "kms:Disable*", "kms:Enable*", "kms:Get*",
            "kms:List*", "kms:Put*", "kms:Revoke*", "kms:TagResource", "kms:UntagResource", "kms:Update*",
        ],
        ["*"],
        principal=_account_root(account_id, partition),
    )  # fmt: skip


def kms_root_service_grants(account_id: str, partition: str) -> Statement:
    """Grants only for AWS services acting for the account (kms:GrantIsForAWSResource), never to a chosen grantee."""
    return statement(
        "AllowAccountGrantsForAwsServicesOnly",
        "Allow",
        ["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"],
        ["*"],
        principal=_account_root(account_id, partition),
        condition={"Bool": {"kms:GrantIsForAWSResource": "true"}},
    )


def kms_allow_key_use(sid: str, principal_arns: Sequence[str], actions: Sequence[str]) -> Statement:
    return statement(
        sid, "Allow", (f"kms:{a}" for a in actions), ["*"], principal={"AWS": _one_or_many(principal_arns)}
    )


def kms_allow_maintenance(bucket_arn: str, account_id: str) -> Statement:
    """S3 Tables maintenance (compaction, snapshot expiry, file removal) must read and write encrypted files."""
    return statement(
        "AllowS3TablesMaintenanceService",
        "Allow",
        ["kms:Decrypt", "kms:GenerateDataKey"],
        ["*"],
        principal={"Service": MAINTENANCE_SERVICE},
        condition={
            "StringEquals": {"aws:SourceAccount": account_id},
            "StringLike": {"kms:EncryptionContext:aws:s3:arn": f"{bucket_arn}/*"},
        },
    )


def kms_deny_key_deletion(exempt_arns: Sequence[str]) -> Statement:
    """Scheduling deletion of a replica's key makes every replica file unreadable: break-glass only."""
    return statement(
        "DenyKeyDeletionExceptBreakGlass",
        "Deny",
        ["kms:DisableKey", "kms:ScheduleKeyDeletion"],
        ["*"],
        principal="*",
        condition=_break_glass_only(exempt_arns),
    )


def kms_deny_key_policy_change(exempt_arns: Sequence[str]) -> Statement:
    """The account-root administration statement grants `kms:Put*`, so without this Deny any administrator in the
    replica account could replace the key policy (dropping the deletion Deny above) and then schedule the key's
    deletion. Only break-glass may replace a replica key's policy: not even the deploy role, which could otherwise
    grant itself the deletion it is denied (the key is created with the policy-lockout check bypassed for that)."""
    return statement(
        "DenyKeyPolicyChangeExceptBreakGlass",
        "Deny",
        ["kms:PutKeyPolicy"],
        ["*"],
        principal="*",
        condition={"ArnNotLike": {"aws:PrincipalArn": sorted(set(exempt_arns))}},
    )


def kms_deny_destruction_except(exempt_arns: Sequence[str]) -> Statement:
    """A source key's or an alarm topic key's own layer: disabling, deleting or re-writing it is for break-glass
    only (the account root's administration statement grants `kms:Disable*` and `kms:Put*`, so without it any
    administrator of the account could stop replication or every alarm delivery; a deploy neither destroys a key nor
    rewrites its reviewed policy once deployed)."""
    return statement(
        "DenyKeyDestructionExceptBreakGlass",
        "Deny",
        KMS_KEY_DESTRUCTION,
        ["*"],
        principal="*",
        condition={"ArnNotLike": {"aws:PrincipalArn": sorted(set(exempt_arns))}},
    )


def kms_deny_protection_tag_removal(tag_key: str, exempt_arns: Sequence[str]) -> Statement:
    """The key policy's own layer against untagging: without its tag the key falls out of the SCP and guardrail
    denies that match replica keys by tag."""
    cond = _break_glass_only(exempt_arns)
    cond["ForAnyValue:StringEquals"] = {"aws:TagKeys": [tag_key]}
    return statement(
        "DenyProtectionTagRemovalExceptBreakGlass", "Deny", ["kms:UntagResource"], ["*"], principal="*", condition=cond
    )


def _break_glass_only(exempt_arns: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Exempt these principals; none (an identity policy attached only to non-exempt roles): unconditional."""
    return {"ArnNotLike": {"aws:PrincipalArn": sorted(set(exempt_arns))}} if exempt_arns else {}


# ---------------------------------------------------------------- identity-side and SCP guards ----


def deny_tagged_key_destruction(sid: str, tag_key: str, exempt_arns: Sequence[str]) -> Statement:
    """Identity / SCP layer for keys the kit created (ARN unknown at synth): matched by the kit's tag on the key."""
    cond = _break_glass_only(exempt_arns)
    cond["Null"] = {f"aws:ResourceTag/{tag_key}": "false"}
    return statement(sid, "Deny", KMS_KEY_DESTRUCTION, ["*"], condition=cond)


def deny_key_destruction(sid: str, key_arns: Sequence[str], exempt_arns: Sequence[str]) -> Statement:
    """Identity / SCP layer for bring-your-own replica keys, named by ARN."""
    return statement(sid, "Deny", KMS_KEY_DESTRUCTION, key_arns, condition=_break_glass_only(exempt_arns))


def deny_key_tag_removal(sid: str, tag_key: str, exempt_arns: Sequence[str]) -> Statement:
    """Without its tag a replica key would fall out of `deny_tagged_key_destruction`."""
    cond = _break_glass_only(exempt_arns)
    cond["ForAnyValue:StringEquals"] = {"aws:TagKeys": [tag_key]}
    return statement(sid, "Deny", ["kms:UntagResource"], ["*"], condition=cond)


def deny_privileged_role_tampering(role_arns: Sequence[str], exempt_arns: Sequence[str]) -> Statement:
    """Whoever can rewrite the trust of (or delete and re-create) a break-glass, deploy or replication role becomes
    that role: every exemption is keyed on the role's ARN."""
    return statement(
        "DenyPrivilegedRoleTampering",
        "Deny",
        PRIVILEGED_ROLE_TAMPERING,
        role_arns,
        condition=_break_glass_only(exempt_arns),
    )


def deny_assume_service_role(sid: str, role_arn: str, exempt_arns: Sequence[str]) -> Statement:
    """The replication role is for the replication service only (SCPs never restrict service principals), so no
    principal of the organisation assumes it, whatever its trust policy says."""
    return statement(sid, "Deny", ["sts:AssumeRole"], [role_arn], condition=_break_glass_only(exempt_arns))


def deny_guardrail_change(policy_arns: Sequence[str], exempt_arns: Sequence[str]) -> Statement:
    return statement(
        "DenyGuardrailChange",
        "Deny",
        GUARDRAIL_POLICY_TAMPERING,
        policy_arns,
        condition=_break_glass_only(exempt_arns),
    )


def deny_guardrail_detach(policy_arns: Sequence[str], exempt_arns: Sequence[str]) -> Statement:
    cond = _break_glass_only(exempt_arns)
    cond["ArnEquals"] = {"iam:PolicyARN": sorted(set(policy_arns))}
    return statement("DenyGuardrailDetach", "Deny", GUARDRAIL_DETACH, ["*"], condition=cond)


# ---------------------------------------------------------------- S3 bucket policies ----


def deny_insecure_transport(bucket_arn: str) -> Statement:
    """TLS only: every request to the bucket or its objects over plain HTTP is denied, whoever makes it."""
    return statement(
        "DenyInsecureTransport",
        "Deny",
        ["s3:*"],
        [bucket_arn, f"{bucket_arn}/*"],
        principal="*",
        condition={"Bool": {"aws:SecureTransport": "false"}},
    )


# ---------------------------------------------------------------- planned failover ----


def deny_writes_during_planned_failover(
    sid: str, names: Sequence[str], bucket_arn: str, exempt_arns: Sequence[str]
) -> Statement:
    """The freeze of a planned failover, a resource-policy Deny on the bucket moved away from: while its replicas
    catch up, nobody but `exempt_arns` (break-glass) writes it. Principal "*" covers writers, engines and service
    principals alike (aws:PrincipalArn is absent for a service, so ArnNotLike holds and the Deny applies). Bucket-level
    actions are denied on the bucket, table-level ones on its tables."""
    bucket_names, table_names = level_split(tuple(names))
    resources = ([bucket_arn] if bucket_names else []) + ([table_arns(bucket_arn)] if table_names else [])
    return statement(sid, "Deny", s3t(*names), resources, principal="*", condition=_break_glass_only(exempt_arns))


# ---------------------------------------------------------------- a source's replication ----

SOURCE_REPLICATION_CHANGE = (
    "PutTableBucketReplication", "DeleteTableBucketReplication", "PutTableReplication", "DeleteTableReplication",
)  # fmt: skip


def deny_source_replication_change(
    sid: str, bucket_arns: Sequence[str], exempt_arns: Sequence[str], *, resource_policy: bool = False
) -> Statement:
    """Adding a destination (in an account the caller controls), replacing the role or deleting the configuration,
    at either level (bucket, table: both can exist for one table): only the sources' deploy roles (the reviewed
    `cdktf deploy`) and break-glass. No condition key names the destinations, so who may call is the only guard."""
    resources = [*bucket_arns, *(table_arns(b) for b in bucket_arns)]
    return statement(
        sid,
        "Deny",
        s3t(*SOURCE_REPLICATION_CHANGE),
        resources,
        principal="*" if resource_policy else None,
        condition=_break_glass_only(exempt_arns),
    )


def _deny_on_bucket(sid: str, actions: Sequence[str], bucket_arn: str, exempt_arns: Sequence[str]) -> Statement:
    """A bucket policy's Deny of S3 Tables `actions` on the bucket itself to everyone but `exempt_arns`."""
    return statement(sid, "Deny", s3t(*actions), [bucket_arn], principal="*", condition=_break_glass_only(exempt_arns))


def deny_source_policy_change(sid: str, bucket_arn: str, exempt_arns: Sequence[str]) -> Statement:
    """The source bucket policy's own guard: nobody but the deploy role and break-glass removes it."""
    return _deny_on_bucket(sid, ("PutTableBucketPolicy", "DeleteTableBucketPolicy"), bucket_arn, exempt_arns)


def deny_pass_other_replication_role(sid: str, kit_role_arns: Sequence[str], exempt_arns: Sequence[str]) -> Statement:
    """`iam:PassRole` to the replication service for any role but the kit's replication roles: a role of the
    caller's own could write to an account the caller controls. Break-glass only (the deploy role passes the kit's
    roles)."""
    cond = _break_glass_only(exempt_arns)
    cond["StringEquals"] = {"iam:PassedToService": REPLICATION_SERVICE}
    out: Statement = {"Sid": sid, "Effect": "Deny", "Action": "iam:PassRole"}
    out["NotResource"] = _one_or_many(kit_role_arns)
    out["Condition"] = {op: kv for op, kv in sorted(cond.items())}
    return out


def deny_bucket_tag_change(sid: str, bucket_arn: str, exempt_arns: Sequence[str]) -> Statement:
    """Tagging or untagging a protected bucket (a resource-policy Deny): only the deploy role, whose `cdktf deploy`
    manages the bucket's tags, and break-glass. Writers of a promoted bucket write data, never its tags."""
    return _deny_on_bucket(sid, ("TagResource", "UntagResource"), bucket_arn, exempt_arns)


# ---------------------------------------------------------------- the pipeline feeding the replicas ----


def deny_except(
    sid: str,
    actions: Sequence[str],
    resources: Sequence[str],
    exempt_arns: Sequence[str],
    condition: dict[str, dict[str, Any]] | None = None,
) -> Statement:
    """An identity-side or SCP Deny of `actions` on `resources` to everyone but `exempt_arns` (none: everyone the
    policy binds), with any further `condition` (a key matched by alias)."""
    return statement(sid, "Deny", actions, resources, condition={**_break_glass_only(exempt_arns), **(condition or {})})


def deny_foreign_metrics(sid: str, namespace: str, publisher_arns: Sequence[str]) -> Statement:
    """Metrics in the kit's namespace only from its publishers (the monitor, the rehearsal): a heartbeat and zero lag
    published by anyone else would hide a frozen replica. `PutMetricData` authorises only Resource "*"."""
    cond = _break_glass_only(publisher_arns)
    cond["StringEquals"] = {"cloudwatch:namespace": namespace}
    return statement(sid, "Deny", ["cloudwatch:PutMetricData"], ["*"], condition=cond)


def deny_pass_role_elsewhere(sid: str, role_arns: Sequence[str], exempt_arns: Sequence[str]) -> Statement:
    """A replication role (by ARN or name pattern) is passed to the replication service only: passed to another
    service (Lambda, EC2, ...) it would act with its write access to the replicas for whoever runs that service."""
    cond = _break_glass_only(exempt_arns)
    cond["StringNotEquals"] = {"iam:PassedToService": REPLICATION_SERVICE}
    return statement(sid, "Deny", ["iam:PassRole"], role_arns, condition=cond)


def rcp_deny_assume_but_service(
    sid: str, role_arns: Sequence[str], service: str, exempt_arns: Sequence[str]
) -> Statement:
    """A resource control policy's Deny (it binds callers of any account, the organisation's outsiders included):
    nobody but `service` (and `exempt_arns`) assumes these roles, whatever their trust policy says, nor through a
    SAML or web identity provider the trust could name. `aws:PrincipalArn` is absent for a service principal
    (ArnNotLike holds), so the service is let through by `aws:PrincipalServiceName`."""
    cond = _break_glass_only(exempt_arns)
    cond["StringNotEqualsIfExists"] = {"aws:PrincipalServiceName": service}
    actions = ["sts:AssumeRole", "sts:AssumeRoleWithSAML", "sts:AssumeRoleWithWebIdentity"]
    return statement(sid, "Deny", actions, role_arns, principal="*", condition=cond)
