"""The lock after the first deploy, enforced by the stand-in (emulator/live.py authorizes by the deployed documents):
on a deployed replica (the kit's own bucket policy, both SCPs attached, the guardrail attached to the deploy role),
the deploy role's rewrite of the bucket policy and its changes of the bucket's settings are refused with AccessDenied
by the resource-based policy, while a non-protective change (a team tag on the bucket) goes through; break-glass
rewrites the policy. The SCP and the guardrail exempt the deploy role from these actions (they cannot tell a first
deploy from a later one): the refusal comes from the bucket policy alone, the case docs/policy-review.md names."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from s3tables_kit.policies import documents
from tests.ops_fixtures import ACCOUNT, BREAK_GLASS, DEPLOY_ROLE, DST_REGION, OpsEnv, deploy

RESOURCE_BASED = "with an explicit deny in a resource-based policy"


def _role(env: OpsEnv, arn: str, guardrail_arn: str | None = None) -> None:
    """The role in moto's IAM with an administrator's identity policy (and the guardrail attached, if given)."""
    iam = env.clients().client("iam", "us-east-1")
    name = arn.rsplit("/", 1)[-1]
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}
    ]}  # fmt: skip
    iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
    admin = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_role_policy(RoleName=name, PolicyName="admin", PolicyDocument=json.dumps(admin))
    if guardrail_arn:
        iam.attach_role_policy(RoleName=name, PolicyArn=guardrail_arn)


def _as(env: OpsEnv, role: str) -> Any:
    return env.clients(role_arns={ACCOUNT: role}).s3tables(DST_REGION, ACCOUNT)


def _refused(call: Any, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as info:
        call(**kwargs)
    err = info.value.response["Error"]
    assert err["Code"] == "AccessDeniedException", err
    return str(err["Message"])


def test_a_deployed_replica_refuses_the_deploy_roles_locked_changes(ops_env: OpsEnv) -> None:
    world = deploy(ops_env, tables=("orders",), replicate=False)
    cfg, bucket = world.cfg, world.replica_arn
    iam = ops_env.clients().client("iam", "us-east-1")
    guardrail = iam.create_policy(
        PolicyName=cfg.guardrail_policy_name,
        PolicyDocument=json.dumps(documents.replica_guardrail(cfg, ACCOUNT)),
    )["Policy"]["Arn"]
    _role(ops_env, DEPLOY_ROLE, guardrail)
    _role(ops_env, BREAK_GLASS)
    opened = documents.replica_bucket_policy(cfg, cfg.replicas[0])
    opened["Statement"] = [s for s in opened["Statement"] if s["Effect"] == "Allow"]  # every deny gone
    ops_env.control.call("live/authz", {"on": True})
    try:
        deployer = _as(ops_env, DEPLOY_ROLE)
        # a non-protective change of the deploy role goes through: it is authorized, not merely unevaluated
        deployer.tag_resource(resourceArn=bucket, tags={"team": "data"})
        message = _refused(deployer.put_table_bucket_policy, tableBucketARN=bucket, resourcePolicy=json.dumps(opened))
        assert message.endswith(RESOURCE_BASED) and DEPLOY_ROLE.rsplit("/", 1)[-1] in message
        settings = {
            deployer.put_table_bucket_encryption: {
                "encryptionConfiguration": {"sseAlgorithm": "aws:kms", "kmsKeyArn": "arn:aws:kms:us-west-2:1:key/x"}
            },
            deployer.put_table_bucket_maintenance_configuration: {
                "type": "icebergUnreferencedFileRemoval",
                "value": {"status": "disabled"},
            },
            deployer.put_table_bucket_storage_class: {"storageClassConfiguration": {"storageClass": "STANDARD"}},
        }
        for call, kwargs in settings.items():
            assert _refused(call, tableBucketARN=bucket, **kwargs).endswith(RESOURCE_BASED)
        _refused(deployer.delete_table_bucket_policy, tableBucketARN=bucket)
        # break-glass may: the lock is the deploy role's, not everyone's
        _as(ops_env, BREAK_GLASS).put_table_bucket_policy(tableBucketARN=bucket, resourcePolicy=json.dumps(opened))
        decisions = ops_env.control.call("live/state")["decisions"]
    finally:
        ops_env.control.call("live/authz", {"on": False})
    denied = {d["action"] for d in decisions if d["principal"] == DEPLOY_ROLE and d["decision"] != "allowed"}
    assert denied == {
        "s3tables:PutTableBucketPolicy", "s3tables:PutTableBucketEncryption", "s3tables:DeleteTableBucketPolicy",
        "s3tables:PutTableBucketMaintenanceConfiguration", "s3tables:PutTableBucketStorageClass",
    }  # fmt: skip
    live = ops_env.clients().s3tables(DST_REGION).get_table_bucket_policy(tableBucketARN=bucket)
    assert json.loads(live["resourcePolicy"]) == opened
