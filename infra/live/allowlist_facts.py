"""What AWS must honour for the allow-list model (docs/aws-facts.md U31-U34): `NotAction` in a KMS key policy and in
an S3 bucket policy with `Principal "*"`, `s3:if-none-match` on an Object Lock bucket, and
`s3:object-lock-remaining-retention-days` as a retain-until ceiling.

Each probe makes a resource of its own in the replica account (named and tagged as the run's), puts a policy that
binds the run's administrator role only (so the run's own credentials can always remove it), acts as that role, and
removes the resource. The vault's conditional-write and ceiling statements are the kit's own records
(`s3tables_kit.policies.vault`), placed on the probe's bucket. On the stand-in, the S3 bucket policies are evaluated
with the caller's identity (`emulator.bucket_policy`), so U32-U34 run there too; it evaluates no KMS key policy, so
U31 is reported as not probed there, with why.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.infra.live.plan import RUN_TAG, RunPlan
from s3tables_kit.infra.live.probes import Fact, code_of, evidence_of, judge
from s3tables_kit.infra.live.world import LiveTarget
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.vault import VAULT_RULES, ceiling_rule, rule_deny

# What the probe role keeps under its NotAction Deny (the rest of the service is denied to it).
KEY_KEPT = ("kms:Describe*", "kms:Get*", "kms:List*", "kms:ScheduleKeyDeletion", "kms:PutKeyPolicy")
BUCKET_KEPT = ("s3:Get*", "s3:List*", "s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion")
CEILING_DAYS = 2  # the probe's ceiling: a three-day retention is beyond it, a one-day one within
STANDIN_NO_KMS = (
    "the stand-in evaluates no KMS key policy (moto's KMS stores it); a run on AWS settles it (make live-verify AWS=1)"
)
Call = Callable[[], Any]


def _attempt(call: Call) -> tuple[str, str]:
    """("allowed" | the error code, evidence) of one call."""
    try:
        return "allowed", evidence_of(call())
    except ClientError as exc:
        return code_of(exc), evidence_of(exc)


def _denied(code: str) -> bool:
    return code in ("AccessDenied", "AccessDeniedException")


def _only_for(role_arn: str) -> dict[str, dict[str, str]]:
    return {"ArnEquals": {"aws:PrincipalArn": role_arn}}


def _deny_all_but(sid: str, kept: tuple[str, ...], resources: list[str], role_arn: str) -> dict[str, Any]:
    return iam_statements.statement(
        sid, "Deny", kept, resources, principal="*", condition=_only_for(role_arn), not_action=True
    )


def probe_allowlist_facts(facts: dict[str, Fact], target: LiveTarget, plan: RunPlan) -> None:
    """U31-U34 in the replica account, as the run's administrator role; every probe resource removed afterwards."""
    s = plan.settings
    region, account = s.replica_region, s.replica_account_id
    admin = plan.role_arn("admin", account)
    s3, as_admin = target.client("s3", region, account), target.as_role(admin, "s3", region)
    if target.local:
        facts["U31"].observed = STANDIN_NO_KMS
    else:
        _probe_key_not_action(facts["U31"], target.client("kms", region, account), target.as_role(admin, "kms", region),
                              account, admin, plan)  # fmt: skip
    plain, locked = probe_bucket_name(plan, account, "na"), probe_bucket_name(plan, account, "ol")
    try:
        _make_bucket(s3, plain, region, plan, lock=False)
        arn = f"arn:aws:s3:::{plain}"
        policy = {"Version": "2012-10-17", "Statement": [_deny_all_but("ProbeNotAction", BUCKET_KEPT,
                                                                       [arn, f"{arn}/*"], admin)]}  # fmt: skip
        s3.put_bucket_policy(Bucket=plain, Policy=json.dumps(policy))
        _probe_bucket_not_action(facts["U32"], as_admin, plain)
        _make_bucket(s3, locked, region, plan, lock=True)
        conditional = next(r for r in VAULT_RULES if r.sid == "DenyVaultWriteWithoutIfNoneMatch")
        objects = [f"arn:aws:s3:::{locked}/*"]
        stmts = [rule_deny(r, objects, principal="*") for r in (conditional, ceiling_rule(CEILING_DAYS))]
        s3.put_bucket_policy(Bucket=locked, Policy=json.dumps({"Version": "2012-10-17", "Statement": stmts}))
        _probe_if_none_match(facts["U33"], as_admin, locked)
        _probe_ceiling(facts["U34"], as_admin, locked)
    finally:
        for bucket in (plain, locked):
            remove_probe_bucket(s3, bucket)


def probe_bucket_name(plan: RunPlan, account: str, kind: str) -> str:
    return f"{plan.name_prefix}-{kind}-{account}"


def _make_bucket(s3: Any, bucket: str, region: str, plan: RunPlan, *, lock: bool) -> None:
    where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=lock, **where)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": RUN_TAG, "Value": plan.run_id}]})


def remove_probe_bucket(s3: Any, bucket: str) -> None:
    """Every version (a GOVERNANCE retention bypassed: the probe's, never a vault's) and the bucket; gone is fine."""
    try:
        s3.delete_bucket_policy(Bucket=bucket)
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
                s3.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"], BypassGovernanceRetention=True)
        s3.delete_bucket(Bucket=bucket)
    except ClientError as exc:
        if code_of(exc) != "NoSuchBucket":
            raise


def _probe_bucket_not_action(fact: Fact, s3: Any, bucket: str) -> None:
    """U32: a `Deny` with `NotAction` and `Principal "*"` binds the role it names: PutObject (kept) goes through,
    PutObjectTagging (not kept) is refused."""
    key = f"probe-{uuid.uuid4().hex[:8]}"
    put, put_ev = _attempt(lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"u32"))
    tag, tag_ev = _attempt(
        lambda: s3.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    )
    judge(
        fact, "PutObject (kept) allowed; PutObjectTagging (outside the NotAction list) AccessDenied",
        put == "allowed" and _denied(tag), f"PutObject {put}; PutObjectTagging {tag}", f"{put_ev}; {tag_ev}",
        change="write the vault and scripts bucket allow-lists as Deny statements that name every action of the "
        "catalogue outside each list (policies/allowlists.py), or rely on the vault SCP's NotAction (its second layer)",
        endangers="protection",
    )  # fmt: skip


def _probe_if_none_match(fact: Fact, s3: Any, bucket: str) -> None:
    """U33: on an Object Lock bucket (no default retention), the vault's `DenyVaultWriteWithoutIfNoneMatch` refuses a
    write without `If-None-Match`, lets one with it through (a second one fails its precondition), and lets a
    multipart upload's parts through (their completion carries the header)."""
    key = f"probe-{uuid.uuid4().hex[:8]}"
    bare, bare_ev = _attempt(lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"u33", ChecksumAlgorithm="CRC32"))
    once, once_ev = _attempt(
        lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"u33", IfNoneMatch="*", ChecksumAlgorithm="CRC32")
    )
    twice, _ = _attempt(
        lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"u33", IfNoneMatch="*", ChecksumAlgorithm="CRC32")
    )
    parts = _multipart(s3, bucket, f"{key}-mp")
    observed = f"without the header {bare}; with it {once}, again {twice}; multipart {parts}"
    judge(
        fact, "without If-None-Match AccessDenied; with it allowed, a second time PreconditionFailed; a multipart "
        "upload's parts allowed and its completion with the header allowed",
        _denied(bare) and once == "allowed" and twice == "PreconditionFailed" and parts == "allowed",
        observed, f"{bare_ev}; {once_ev}",
        change="DenyVaultWriteWithoutIfNoneMatch refuses the backup's writes on an Object Lock bucket (the key is "
        "absent there): drop the rule and rely on Object Lock and the reader's version ids (docs/decisions/0034)"
        if not _denied(bare) or once != "allowed" else "record the observed answers in docs/aws-facts.md",
        endangers="protection" if not _denied(bare) else "",
    )  # fmt: skip


def _multipart(s3: Any, bucket: str, key: str) -> str:
    """A multipart upload without the header for its creation and part, completed with it: "allowed" or the code."""
    try:
        upload = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
        part = s3.upload_part(
            Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"u33", ChecksumAlgorithm="CRC32"
        )
        done = {"Parts": [{"ETag": part["ETag"], "PartNumber": 1, "ChecksumCRC32": part.get("ChecksumCRC32")}]}
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload=done, IfNoneMatch="*")
    except ClientError as exc:
        return code_of(exc)
    return "allowed"


def _probe_ceiling(fact: Fact, s3: Any, bucket: str) -> None:
    """U34: the vault's ceiling rule (here at two days) refuses a three-day GOVERNANCE retain-until and lets a one-day
    one through; the objects are removed afterwards with `BypassGovernanceRetention`."""
    now = datetime.now(UTC)

    def write(days: float) -> tuple[str, str]:
        return _attempt(
            lambda: s3.put_object(
                Bucket=bucket,
                Key=f"probe-{uuid.uuid4().hex[:8]}",
                Body=b"u34",
                IfNoneMatch="*",
                ObjectLockMode="GOVERNANCE",
                ObjectLockRetainUntilDate=now + timedelta(days=days),
                ChecksumAlgorithm="CRC32",
            )
        )

    beyond, beyond_ev = write(CEILING_DAYS + 1)
    within, within_ev = write(1 - 1 / 24)
    judge(
        fact, f"a retain-until {CEILING_DAYS + 1} days ahead AccessDenied (ceiling {CEILING_DAYS} days); one day ahead "
        "allowed", _denied(beyond) and within == "allowed", f"{CEILING_DAYS + 1} days {beyond}; 1 day {within}",
        f"{beyond_ev}; {within_ev}",
        change="the retain-until ceiling is not enforced by the bucket policy: keep the vault SCP's copy of the rule "
        "and bound the backup role's retain-until in its own code (jobs/vault)",
        endangers="protection" if within == "allowed" else "",
    )  # fmt: skip


def _probe_key_not_action(fact: Fact, kms: Any, as_admin: Any, account: str, admin: str, plan: RunPlan) -> None:
    """U31: a key whose policy denies the run's administrator role every action but its reads, ScheduleKeyDeletion
    and PutKeyPolicy: DescribeKey goes through, EnableKeyRotation is refused; the key is scheduled for deletion."""
    root = {"Sid": "AllowAccountRoot", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
            "Action": "kms:*", "Resource": "*"}  # fmt: skip
    policy = {"Version": "2012-10-17", "Statement": [root, _deny_all_but("ProbeNotAction", KEY_KEPT, ["*"], admin)]}
    try:
        key = kms.create_key(
            Policy=json.dumps(policy), Description=f"{plan.name_prefix} U31 probe",
            Tags=[{"TagKey": RUN_TAG, "TagValue": plan.run_id}],
        )["KeyMetadata"]["KeyId"]  # fmt: skip
    except ClientError as exc:
        judge(
            fact, "the key policy is accepted", False, f"CreateKey refused: {code_of(exc)}", evidence_of(exc),
            change="the vault key's policy cannot carry NotAction: list the key's actions (policies/vault.py) and "
            "rely on the vault SCP's NotAction meanwhile", endangers="protection",
        )  # fmt: skip
        return
    try:
        read, read_ev = _attempt(lambda: as_admin.describe_key(KeyId=key))
        rotate, rotate_ev = _attempt(lambda: as_admin.enable_key_rotation(KeyId=key))
    finally:
        kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)
    judge(
        fact, "DescribeKey (kept) allowed; EnableKeyRotation (outside the NotAction list) AccessDeniedException",
        read == "allowed" and _denied(rotate), f"DescribeKey {read}; EnableKeyRotation {rotate}",
        f"{read_ev}; {rotate_ev}",
        change="the key policy's NotAction is not honoured: name the key's actions in its Denies (policies/vault.py) "
        "and rely on the vault SCP's NotAction meanwhile", endangers="protection",
    )  # fmt: skip
