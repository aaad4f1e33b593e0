"""Cleanup of a run (always, and `make live-verify-cleanup RUN=<id>` after a crash): every resource whose name
carries the run's prefix AND whose tags carry the run's id is deleted; anything else is left alone (and a name with
the prefix but without the tag is reported, never touched). Idempotent: a second call finds nothing.
"""

from __future__ import annotations

from typing import Any

from s3tables_kit.infra.live.allowlist_facts import remove_probe_bucket
from s3tables_kit.infra.live.detection_facts import detection_probe_leftovers, remove_detection_probes
from s3tables_kit.infra.live.plan import RUN_TAG, Refused, RunPlan
from s3tables_kit.infra.live.world import LiveTarget


def _swallow_missing(fn: Any, *args: Any, **kw: Any) -> None:
    try:
        fn(*args, **kw)
    except Exception as exc:  # gone already is the goal; anything else is re-raised below
        if "NotFound" not in type(exc).__name__ and "NoSuch" not in type(exc).__name__:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
            if "NotFound" not in code and "NoSuch" not in code:
                raise


def _bucket_tags(client: Any, arn: str) -> dict[str, str]:
    return dict(client.list_tags_for_resource(resourceArn=arn).get("tags", {}))


def leftovers(target: LiveTarget, plan: RunPlan, *, any_run: bool = False) -> list[str]:
    """Table buckets, roles, probe resources and SCPs of this run (or, with `any_run`, of any run of this prefix)
    still there."""
    s = plan.settings
    prefix = f"{s.prefix}-" if any_run else f"{plan.name_prefix}-"
    found: list[str] = []
    for region, account in ((s.source_region, s.account_id), (s.replica_region, s.replica_account_id)):
        c = target.client("s3tables", region, account)
        for b in c.list_table_buckets(prefix=prefix).get("tableBuckets", []):
            if RUN_TAG in _bucket_tags(c, b["arn"]):
                found.append(b["arn"])
    for account in _accounts(plan):
        iam = target.client("iam", "us-east-1", account)
        for r in iam.list_roles().get("Roles", []):
            if r["RoleName"].startswith(prefix):
                found.append(r["Arn"])
    kms = target.client("kms", s.replica_region, s.replica_account_id)
    for alias in kms.list_aliases().get("Aliases", []):
        if alias["AliasName"].removeprefix("alias/").startswith(prefix):
            found.append(f"kms:{alias['AliasName']}")
    found += [f"s3:{b}" for b in _probe_buckets(target, plan, prefix)]
    found += detection_probe_leftovers(target, plan, prefix)
    org = target.client("organizations", "us-east-1", s.management_account_id)
    for p in org.list_policies(Filter="SERVICE_CONTROL_POLICY").get("Policies", []):
        if p["Name"].startswith(prefix):
            found.append(f"scp:{p['Id']}:{p['Name']}")
    return sorted(set(found))


def cleanup(target: LiveTarget, plan: RunPlan) -> list[str]:
    """Delete everything of the run; returns what is left afterwards (empty when clean)."""
    s = plan.settings
    for region, account in ((s.replica_region, s.replica_account_id), (s.source_region, s.account_id)):
        c = target.client("s3tables", region, account)
        for b in c.list_table_buckets(prefix=plan.name_prefix + "-").get("tableBuckets", []):
            plan.require_owned(b["name"], _bucket_tags(c, b["arn"]))
            _delete_bucket(c, b["arn"])
    s3 = target.client("s3", s.replica_region, s.replica_account_id)
    for bucket in _probe_buckets(target, plan, plan.name_prefix + "-"):
        remove_probe_bucket(s3, bucket)
    remove_detection_probes(target, plan)  # U37-U39's group, application and function, before their roles
    _delete_key(_key_admin(target, plan), plan)  # before the roles: the key policy leaves deletion to break-glass
    for account in _accounts(plan):
        _delete_roles(target.client("iam", "us-east-1", account), plan)
    org = target.client("organizations", "us-east-1", s.management_account_id)
    for p in org.list_policies(Filter="SERVICE_CONTROL_POLICY").get("Policies", []):
        if not p["Name"].startswith(plan.name_prefix + "-"):
            continue
        tags = {t["Key"]: t["Value"] for t in org.list_tags_for_resource(ResourceId=p["Id"]).get("Tags", [])}
        plan.require_owned(p["Name"], tags)
        for t in org.list_targets_for_policy(PolicyId=p["Id"]).get("Targets", []):
            org.detach_policy(PolicyId=p["Id"], TargetId=t["TargetId"])
        org.delete_policy(PolicyId=p["Id"])
    return leftovers(target, plan)


def _probe_buckets(target: LiveTarget, plan: RunPlan, prefix: str) -> list[str]:
    """The S3 buckets of the allow-list probes (infra/live/allowlist_facts.py) with `prefix` and the run's tag."""
    s3 = target.client("s3", plan.settings.replica_region, plan.settings.replica_account_id)
    out = []
    for b in s3.list_buckets().get("Buckets", []):
        if not b["Name"].startswith(prefix):
            continue
        try:
            tags = s3.get_bucket_tagging(Bucket=b["Name"]).get("TagSet", [])
        except Exception as exc:  # untagged (NoSuchTagSet) or gone: not the run's
            if "NoSuch" not in str(exc):
                raise
            continue
        if any(t["Key"] == RUN_TAG for t in tags):
            out.append(b["Name"])
    return out


def _accounts(plan: RunPlan) -> list[str]:
    """The accounts the run creates IAM roles in: the source's, and the replica's when it has one of its own."""
    s = plan.settings
    return sorted({s.account_id, s.replica_account_id})


def _delete_roles(iam: Any, plan: RunPlan) -> None:
    for r in iam.list_roles().get("Roles", []):
        name = r["RoleName"]
        if not plan.owned_name(name):
            continue
        tags = {t["Key"]: t["Value"] for t in iam.list_role_tags(RoleName=name).get("Tags", [])}
        plan.require_owned(name, tags)
        for pol in iam.list_attached_role_policies(RoleName=name).get("AttachedPolicies", []):
            iam.detach_role_policy(RoleName=name, PolicyArn=pol["PolicyArn"])
        for pol_name in iam.list_role_policies(RoleName=name).get("PolicyNames", []):
            iam.delete_role_policy(RoleName=name, PolicyName=pol_name)
        iam.delete_role(RoleName=name)
    for pol in iam.list_policies(Scope="Local").get("Policies", []):
        if plan.owned_name(pol["PolicyName"]):
            _swallow_missing(iam.delete_policy, PolicyArn=pol["Arn"])


def _key_admin(target: LiveTarget, plan: RunPlan) -> Any:
    """A KMS client as the run's break-glass role (the kit's key policy denies deleting the key to anyone else), or
    as the account when that role is gone already (a cleanup after a crash before the roles were made)."""
    s = plan.settings
    try:
        return target.as_role(plan.role_arn("break-glass", s.replica_account_id), "kms", s.replica_region)
    except Exception as exc:  # no such role: the account's own credentials
        if "NoSuchEntity" not in str(exc) and "AccessDenied" not in str(exc):
            raise
        return target.client("kms", s.replica_region, s.replica_account_id)


def _delete_key(kms: Any, plan: RunPlan) -> None:
    """The replica bucket's key: its alias deleted, the key scheduled for deletion after KMS's shortest wait (7
    days; it encrypts nothing any more), both only with the run's tag on the key."""
    for alias in kms.list_aliases().get("Aliases", []):
        name = alias["AliasName"].removeprefix("alias/")
        if not plan.owned_name(name) or "TargetKeyId" not in alias:
            continue
        key = alias["TargetKeyId"]
        tags = {t["TagKey"]: t["TagValue"] for t in kms.list_resource_tags(KeyId=key).get("Tags", [])}
        plan.require_owned(name, tags)
        kms.delete_alias(AliasName=alias["AliasName"])
        if kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"] != "PendingDeletion":
            kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)


def _delete_bucket(c: Any, bucket_arn: str) -> None:
    """Replication off, then tables, namespaces, policy and the bucket (the run's own break-glass is not needed:
    the run's caller is the account's administrator, whom the kit's resource policies name only as break-glass
    does not; on AWS the run uses its break-glass role for this step)."""
    try:
        conf = c.get_table_bucket_replication(tableBucketARN=bucket_arn)
        c.delete_table_bucket_replication(tableBucketARN=bucket_arn, versionToken=conf["versionToken"])
    except Exception as exc:  # no configuration is the usual case
        if "NotFound" not in type(exc).__name__:
            raise
    for page in c.get_paginator("list_tables").paginate(tableBucketARN=bucket_arn):
        for t in page["tables"]:
            ns = t["namespace"][0]
            _swallow_missing(c.delete_table_policy, tableBucketARN=bucket_arn, namespace=ns, name=t["name"])
            _swallow_missing(c.delete_table, tableBucketARN=bucket_arn, namespace=ns, name=t["name"])
    for ns in c.list_namespaces(tableBucketARN=bucket_arn).get("namespaces", []):
        _swallow_missing(c.delete_namespace, tableBucketARN=bucket_arn, namespace=ns["namespace"][0])
    _swallow_missing(c.delete_table_bucket_policy, tableBucketARN=bucket_arn)
    _swallow_missing(c.delete_table_bucket, tableBucketARN=bucket_arn)


__all__ = ["Refused", "cleanup", "leftovers"]
