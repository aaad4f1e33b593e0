"""Before a deploy: does this Terraform plan change a locked setting? A locked change is a break-glass deploy.

A replica locks at the end of its first deploy (docs/decisions/0028-lock-after-first-deploy.md): its bucket policy
denies everyone but break-glass a change of the bucket policy and settings, and the SCP and the guardrail deny the
rest (deletion, the guardrail, replica keys, the privileged roles' trust). AWS enforces that; its refusal comes in
the middle of an apply, as `AccessDenied ... explicit deny in a resource-based policy`, which cannot say what the
engineer should do instead. This check reads the saved plan (`terraform show -json <plan>`) before the apply and
names every change the applying principal (a deploy role, or the credentials that run `cdktf` where there is none)
would be refused, with the rule that refuses it:

    terraform -chdir=cdktf.out/stacks/<stack> plan -out=tfplan
    terraform -chdir=cdktf.out/stacks/<stack> show -json tfplan > plan.json
    python -m s3tables_kit.infra.lockcheck --config kit.toml plan.json [more plans...]

Exit 0: no locked change, the deploy role applies it. Exit 2: at least one, "this change is a break-glass deploy"
(docs/provisioning.md, "Changing a locked setting: a break-glass deploy"), or the plan or configuration cannot be
read. With `--break-glass` the same list is printed and the exit is 0 (the change is applied with break-glass
credentials, deliberately).

What is classified, from the values in the plan (addresses are not trusted: a bucket is a replica by its name):
- a replica bucket (`[[replicas]]`, the failover topology's new buckets): an update of its encryption, unreferenced-
  file removal, storage class or metrics configuration, or of its protection tag; its deletion or replacement;
- a replica bucket policy updated or deleted (its creation is the first deploy); any table policy of a replica
  table; a replication configuration, namespace or table made on a replica bucket (the promoted bucket of a failover
  topology keeps `PutTableBucketReplication` for its deploy role);
- the guardrail and the pipeline guardrail (every part of each) updated or deleted or detached; a replica key's
  policy, replica tag or deletion; the replication roles' trust or deletion;
- a source's bucket policy updated or deleted, and its replication created, changed or deleted, when that source has
  no deploy role (then only break-glass may: the source guard).
Creation of a replica's resources is never refused: that is the first deploy. The check is a courtesy to the engineer
and a gate for an honest pipeline, not a protection layer: a compromised pipeline skips it and meets AWS's refusal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3tables_kit.policies.actions import PROMOTED_DEPLOY_ACTIONS, PROTECTION_RULES, REPLICA_KEY_TAG
from s3tables_kit.policies.parts import purpose_of
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.rules import PROTECTION_TAG_KEY

Json = dict[str, Any]
GUIDE = 'docs/provisioning.md, "Changing a locked setting: a break-glass deploy"'
BUCKET_TYPES = ("aws_s3tables_table_bucket", "awscc_s3tables_table_bucket")
# A table bucket's arguments (aws and awscc spellings) -> the call that changes them.
BUCKET_SETTINGS = {
    "encryption_configuration": "PutTableBucketEncryption",
    "maintenance_configuration": "PutTableBucketMaintenanceConfiguration",
    "unreferenced_file_removal": "PutTableBucketMaintenanceConfiguration",
    "storage_class_configuration": "PutTableBucketStorageClass",
    "metrics_configuration": "PutTableBucketMetricsConfiguration",
}


@dataclass(frozen=True)
class Locked:
    """One change the applying principal would be refused."""

    address: str
    action: str  # "s3tables:PutTableBucketPolicy", "iam:CreatePolicyVersion", ...
    resource: str  # the bucket ARN or name, the policy or role name
    rule: str  # the Sid that refuses it

    def __str__(self) -> str:
        return f"{self.address}: {self.action} on {self.resource} ({self.rule})"


def _rule_of(action: str) -> str:
    return next(r.sid for r in PROTECTION_RULES if action in r.actions)


def _changes(plan: Json) -> Iterable[tuple[str, str, list[str], Json, Json]]:
    """(address, type, actions, before, after) of each managed resource the plan changes."""
    for rc in plan.get("resource_changes") or []:
        change = rc.get("change") or {}
        actions = list(change.get("actions") or [])
        if rc.get("mode") != "managed" or actions in ([], ["no-op"], ["read"]):
            continue
        yield str(rc["address"]), str(rc["type"]), actions, change.get("before") or {}, change.get("after") or {}


def _tags(body: Json) -> dict[str, str]:
    raw = body.get("tags")
    if isinstance(raw, list):  # awscc: [{key, value}]
        return {str(t.get("key")): str(t.get("value")) for t in raw if isinstance(t, dict)}
    return {str(k): str(v) for k, v in (raw or {}).items()}


class Classifier:
    """What a deploy of this configuration may not change once deployed."""

    def __init__(self, cfg: KitConfig) -> None:
        reps = list(cfg.replicas)
        fo = cfg.failover
        if fo is not None:
            reps += list(fo.new_buckets)
        self.replicas = {r.bucket_arn: r.bucket for r in reps}
        self.replica_names = {r.bucket: r.bucket_arn for r in reps}
        self.promoted = self.replica_names.get(cfg.kind.promoted_bucket or "", "")
        self.guarded_sources = {s.bucket_arn for s in cfg.sources if not s.deploy_role_arn}
        # every part of both managed policies the guardrail's DenyGuardrailChange names (`s3tables_kit.policies.parts`)
        self.guardrails = {cfg.guardrail_policy_name, cfg.pipeline_guardrail_policy_name}
        self.replication_roles = {a.rsplit("/", 1)[-1] for a in cfg.replication_role_arns}

    def locked(self, plan: Json) -> list[Locked]:
        out: list[Locked] = []
        for address, rtype, actions, before, after in _changes(plan):
            out += self._classify(address, rtype, actions, before, after)
        return out

    def _classify(self, address: str, rtype: str, actions: list[str], before: Json, after: Json) -> list[Locked]:
        deleted = "delete" in actions
        updated = actions == ["update"]
        created = actions == ["create"]

        def locked(action: str, resource: str, rule: str | None = None) -> list[Locked]:
            service = action.split(":")[0] if ":" in action else "s3tables"
            name = action.split(":")[-1]
            return [Locked(address, f"{service}:{name}", resource, rule or _rule_of(name))]

        if rtype in BUCKET_TYPES:
            name = before.get("name") or before.get("table_bucket_name")
            arn = self.replica_names.get(str(name)) if name else None
            if arn is None:
                return []
            if deleted:
                return locked("DeleteTableBucket", arn)
            out = [
                f
                for key, action in BUCKET_SETTINGS.items()
                if updated and key in before and before.get(key) != after.get(key)
                for f in locked(action, arn)
            ]
            if updated and _tags(before).get(PROTECTION_TAG_KEY) != _tags(after).get(PROTECTION_TAG_KEY):
                out += locked("TagResource", arn, "DenyProtectionTagChange")
            return out
        bucket_arn = str(before.get("table_bucket_arn") or after.get("table_bucket_arn") or "")
        table_arn = str(before.get("table_arn") or after.get("table_arn") or "")
        bucket_arn = bucket_arn or table_arn.split("/table/")[0]
        on_replica = bucket_arn in self.replicas
        if rtype == "aws_s3tables_table_bucket_policy":
            if on_replica and not created:
                return locked("DeleteTableBucketPolicy" if deleted else "PutTableBucketPolicy", bucket_arn)
            if bucket_arn in self.guarded_sources and not created:
                action = "DeleteTableBucketPolicy" if deleted else "PutTableBucketPolicy"
                return locked(action, bucket_arn, "DenySourceBucketPolicyChange")
            return []
        if rtype == "aws_s3tables_table_policy" and on_replica:
            return locked("DeleteTablePolicy" if deleted else "PutTablePolicy", bucket_arn)
        if rtype in ("aws_s3tables_table_bucket_replication", "aws_s3tables_table_replication"):
            level = "TableBucket" if rtype == "aws_s3tables_table_bucket_replication" else "Table"
            action = f"{'Delete' if deleted else 'Put'}{level}Replication"
            if on_replica and not (bucket_arn == self.promoted and action in PROMOTED_DEPLOY_ACTIONS):
                return locked(action, table_arn or bucket_arn)
            if bucket_arn in self.guarded_sources:
                return locked(action, table_arn or bucket_arn, "DenySourceReplicationChange")
            return []
        if rtype in ("aws_s3tables_namespace", "aws_s3tables_table") and on_replica:
            what = "Namespace" if rtype == "aws_s3tables_namespace" else "Table"
            return locked(f"{'Delete' if deleted else 'Create'}{what}", bucket_arn)
        return self._guards(address, rtype, actions, before, after)

    def _guards(self, address: str, rtype: str, actions: list[str], before: Json, after: Json) -> list[Locked]:
        """What the guards SCP (and the guardrail itself) keep to break-glass: the guardrail, replica keys, the
        replication roles."""
        deleted = "delete" in actions
        if actions == ["create"]:
            return []
        name = str(before.get("name", ""))
        guardrail = rtype == "aws_iam_policy" and self._guardrail(name)
        if guardrail and (deleted or before.get("policy") != after.get("policy")):
            action = "iam:DeletePolicy" if deleted else "iam:CreatePolicyVersion"
            return [Locked(address, action, name, "DenyGuardrailChange")]
        attachment = rtype in ("aws_iam_role_policy_attachment", "aws_iam_policy_attachment")
        attached = str(before.get("policy_arn", "")).rsplit(":policy/", 1)[-1]
        if attachment and deleted and self._guardrail(attached):
            return [Locked(address, "iam:DetachRolePolicy", attached, "DenyGuardrailDetach")]
        if rtype == "aws_kms_key" and REPLICA_KEY_TAG in _tags(before):
            key = str(before.get("arn") or address)
            if deleted:
                return [Locked(address, "kms:ScheduleKeyDeletion", key, "DenyReplicaKeyDestruction")]
            out = []
            if before.get("policy") != after.get("policy"):
                out.append(Locked(address, "kms:PutKeyPolicy", key, "DenyReplicaKeyDestruction"))
            if REPLICA_KEY_TAG not in _tags(after):
                out.append(Locked(address, "kms:UntagResource", key, "DenyReplicaKeyUntag"))
            return out
        if rtype == "aws_iam_role" and before.get("name") in self.replication_roles:
            if deleted:
                return [Locked(address, "iam:DeleteRole", str(before["name"]), "DenyPrivilegedRoleTampering")]
            if before.get("assume_role_policy") != after.get("assume_role_policy"):
                name = str(before["name"])
                return [Locked(address, "iam:UpdateAssumeRolePolicy", name, "DenyPrivilegedRoleTampering")]
        return []

    def _guardrail(self, policy_name: str) -> bool:
        """A part of the guardrail or of the pipeline guardrail (part 1 is the policy's own name)."""
        return purpose_of(policy_name)[0] in self.guardrails


def refusal(found: list[Locked]) -> str:
    """The message of a refused deploy."""
    lines = [f"this change is a break-glass deploy: {len(found)} locked change(s); see {GUIDE}"]
    lines += [f"  {f}" for f in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plans", nargs="+", type=Path, help="`terraform show -json <plan>` output, one per stack")
    parser.add_argument("--config", type=Path, required=True, help="the kit.toml the plans were synthesized from")
    parser.add_argument(
        "--break-glass", action="store_true", help="the plans are applied with break-glass credentials: list only"
    )
    args = parser.parse_args(argv)
    try:
        classifier = Classifier(load_config(args.config))
        found = [f for p in args.plans for f in classifier.locked(json.loads(p.read_text()))]
    except (OSError, ValueError) as exc:
        print(f"lockcheck: {exc}", file=sys.stderr)
        return 2
    if not found:
        print(f"lockcheck: no locked setting changes in {len(args.plans)} plan(s): a deploy-role deploy")
        return 0
    if args.break_glass:
        print(f"lockcheck: {len(found)} locked change(s), applied with break-glass credentials:")
        print("\n".join(f"  {f}" for f in found))
        return 0
    print(refusal(found), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
