"""Where a run talks to (AWS, or the local stand-in: only the endpoint and the credentials differ) and what it
deploys: the kit's documents for a one-table topology named after the run, its replica bucket encrypted with a KMS
key of the run's and Intelligent-Tiering (what multi-account and estate replicas use), in a second account when the
settings name one (on AWS the run assumes `second_account_role` there).

`deploy()` creates, through the public APIs, what the stacks leave behind for that topology (the table buckets
tagged with the run, the replica bucket policy, the replication configuration, the roles, the guardrail, the SCPs);
after the first replication the replica's table policy is put the way `make harden` puts it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session

from s3tables_kit.infra.live.plan import NAMESPACE_THROWAWAY, RunPlan
from s3tables_kit.policies import documents
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.keys import key_sites, kms_key_policy
from s3tables_kit.policies.model import kms_alias
from s3tables_kit.policies.parts import part_name
from s3tables_kit.topology.config import KitConfig, parse_config
from s3tables_kit.topology.sdk_models import extended

ALLOW_ALL = {
    "Version": "2012-10-17",
    "Statement": [{"Sid": "AllowAll", "Effect": "Allow", "Action": "*", "Resource": "*"}],
}
ALLOW_S3TABLES = {
    "Version": "2012-10-17",
    "Statement": [{"Sid": "DeployS3Tables", "Effect": "Allow", "Action": ["s3tables:*", "iam:*"], "Resource": "*"}],
}


def _trust(account: str) -> str:
    principal = {"AWS": f"arn:aws:iam::{account}:root"}
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
        }
    )


@dataclass
class LiveTarget:
    """`endpoint` None: AWS with the environment's credentials. Otherwise the stand-in, with one key per account."""

    endpoint: str | None = None
    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    # account id -> the role the run assumes to act there (on AWS, a second account; the others: the run's own)
    account_roles: dict[str, str] = field(default_factory=dict)

    @property
    def local(self) -> bool:
        return self.endpoint is not None

    def __post_init__(self) -> None:
        # one session: botocore loads each service model once, with the kit's model extensions (PutRows, GetChannel)
        self._session = boto3.session.Session(botocore_session=extended(botocore.session.get_session()))
        self._clients: dict[tuple[str, str, str], Any] = {}

    def client(self, service: str, region: str, account: str | None = None) -> Any:
        key = (service, region, account or "")
        if key not in self._clients:
            kw: dict[str, Any] = {"region_name": region}
            if self.endpoint:
                kw["endpoint_url"] = self.endpoint
            if account in self.account_roles:  # the run's own credentials act there through the role
                got = self.client("sts", region).assume_role(
                    RoleArn=self.account_roles[account], RoleSessionName="kit-live-verify"
                )["Credentials"]
                kw.update(
                    aws_access_key_id=got["AccessKeyId"],
                    aws_secret_access_key=got["SecretAccessKey"],
                    aws_session_token=got["SessionToken"],
                )
            elif self.endpoint:
                creds = self.keys.get(account or "") or next(iter(self.keys.values()), None)
                if creds:
                    kw["aws_access_key_id"] = creds["accessKeyId"]
                    kw["aws_secret_access_key"] = creds["secretAccessKey"]
            make: Any = self._session.client  # a service name that is a str, not a literal
            self._clients[key] = make(service, **kw)
        return self._clients[key]

    def assumed(self, role_arn: str, region: str) -> dict[str, str]:
        """The credentials of an `sts:AssumeRole` of `role_arn` (AccessKeyId, SecretAccessKey, SessionToken)."""
        account = role_arn.split(":")[4]
        got = self.client("sts", region, account).assume_role(RoleArn=role_arn, RoleSessionName="kit-live-verify")
        return dict(got["Credentials"])

    def as_role(self, role_arn: str, service: str, region: str) -> Any:
        """A client of `service` with the credentials of an `sts:AssumeRole` of `role_arn` (the attacker's seat)."""
        c = self.assumed(role_arn, region)
        kw: dict[str, Any] = {"region_name": region}
        if self.endpoint:
            kw["endpoint_url"] = self.endpoint
        make: Any = self._session.client
        return make(
            service,
            aws_access_key_id=c["AccessKeyId"],
            aws_secret_access_key=c["SecretAccessKey"],
            aws_session_token=c["SessionToken"],
            **kw,
        )


def kit_config(plan: RunPlan) -> KitConfig:
    """The kit configuration of the run's topology (the one the stacks are synthesized from)."""
    return parse_config(kit_config_doc(plan))


def kit_config_doc(plan: RunPlan) -> dict[str, Any]:
    s = plan.settings
    ns, table = plan.namespace, plan.table
    retention = {"max_snapshot_age_hours": 720, "min_snapshots_to_keep": 1}
    return {
        "kit": {"name": plan.name_prefix},
        "source": {
            "account_id": s.account_id,
            "region": s.source_region,
            "bucket": plan.source_bucket,
            "encryption": {"type": "sse-s3"},
            "deploy_role_arn": plan.role_arn("setup"),
            "snapshot_retention": retention,
            "namespaces": [
                {"name": ns, "tables": [{"name": table, "columns": [{"name": "id", "type": "long"}]}]},
                {
                    "name": NAMESPACE_THROWAWAY,
                    "tables": [{"name": table, "columns": [{"name": "id", "type": "long"}]}],
                },
            ],
        },
        "replicas": [
            {
                "account_id": s.replica_account_id,
                "region": s.replica_region,
                "bucket": plan.replica_bucket,
                "encryption": {"type": "kms", "kms_key": "create"},
                "storage_class": "INTELLIGENT_TIERING",
                "snapshot_retention": {"max_snapshot_age_hours": 2160, "min_snapshots_to_keep": 1},
                "deploy_role_arn": plan.role_arn("deploy", s.replica_account_id),
            }
        ],
        "replication": {"mode": "bucket"},
        "tags": plan.tags,
        "protection": {
            "break_glass_principals": [plan.role_arn("break-glass", s.replica_account_id)],
            "guardrail_attach_roles": [plan.name("admin")],
            "organization": {
                "management_account_id": s.management_account_id,
                "targets": [s.organizational_unit],
                "ou_accounts": {s.organizational_unit: sorted({s.account_id, s.replica_account_id})},
            },
        },
        "recovery": {"replica": plan.replica_bucket, "bucket": plan.name("rec"), "namespace": "recovered"},
    }


def _role(iam: Any, name: str, account: str, tags: dict[str, str], inline: dict[str, Any] | None = None) -> None:
    iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=_trust(account),
        Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )
    if inline is not None:
        iam.put_role_policy(RoleName=name, PolicyName="permissions", PolicyDocument=json.dumps(inline))


def deploy(target: LiveTarget, plan: RunPlan, cfg: KitConfig) -> dict[str, Any]:
    """Create the run's resources; returns their ARNs and ids (what the stacks' outputs name)."""
    s = plan.settings
    src = target.client("s3tables", s.source_region, s.account_id)
    dst = target.client("s3tables", s.replica_region, s.replica_account_id)
    iam = target.client("iam", "us-east-1", s.replica_account_id)
    src_iam = target.client("iam", "us-east-1", s.account_id)
    replica = cfg.replicas[0]
    (source,) = cfg.sources  # the run's configuration (`s3tables_kit.infra.live.plan`): one source, one replica
    tags = plan.tags
    enc = {"sseAlgorithm": "AES256"}
    src_arn = src.create_table_bucket(name=plan.source_bucket, encryptionConfiguration=enc, tags=tags)["arn"]
    key_arn = replica_key(target, plan, cfg)
    dst_arn = dst.create_table_bucket(
        name=plan.replica_bucket,
        encryptionConfiguration={"sseAlgorithm": "aws:kms", "kmsKeyArn": key_arn},
        storageClassConfiguration={"storageClass": "INTELLIGENT_TIERING"},
        tags=tags,
    )["arn"]
    for bucket_arn, client in ((src_arn, src), (dst_arn, dst)):  # the stand-in's moto drops create-time tags
        client.tag_resource(resourceArn=bucket_arn, tags=tags)
    dst.put_table_bucket_policy(
        tableBucketARN=dst_arn, resourcePolicy=json.dumps(documents.replica_bucket_policy(cfg, replica))
    )
    tables: dict[str, str] = {}
    for ns in (plan.namespace, NAMESPACE_THROWAWAY):
        src.create_namespace(tableBucketARN=src_arn, namespace=[ns])
        tables[ns] = src.create_table(tableBucketARN=src_arn, namespace=ns, name=plan.table, format="ICEBERG")[
            "tableARN"
        ]
    _role(src_iam, plan.name("replication"), s.account_id, tags, documents.replication_role_permissions(cfg, source))
    _role(src_iam, plan.name("setup"), s.account_id, tags, setup_role_permissions(plan))
    for who, permissions in RUN_ROLES:
        _role(iam, plan.name(who), s.replica_account_id, tags, permissions)
    guardrail = []  # every part of it, each a managed policy under the quota (`s3tables_kit.policies.parts`)
    for i, part in enumerate(build(cfg).parts("replica-guardrail", s.replica_account_id), 1):
        arn = iam.create_policy(
            PolicyName=part_name(cfg.guardrail_policy_name, i),
            PolicyDocument=json.dumps(part),
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )["Policy"]["Arn"]
        iam.attach_role_policy(RoleName=plan.name("deploy"), PolicyArn=arn)  # the stacks: the deploy role's own
        for name in cfg.protection.guardrail_attach_roles:
            iam.attach_role_policy(RoleName=name, PolicyArn=arn)
        guardrail.append(arn)
    conf = {
        "role": cfg.replication_role_arn_of(source),
        "rules": [{"destinations": [{"destinationTableBucketARN": dst_arn}]}],
    }
    src.put_table_bucket_replication(tableBucketARN=src_arn, configuration=conf)
    org = target.client("organizations", "us-east-1", s.management_account_id)
    scps = []
    for name, doc in (
        (cfg.scp_name, documents.service_control_policy(cfg)),
        (cfg.scp_guards_name, documents.service_control_policy_guards(cfg)),
    ):
        pid = org.create_policy(
            Content=documents.compact_json(doc),
            Description=f"kit live-verify {plan.run_id}",
            Name=name,
            Type="SERVICE_CONTROL_POLICY",
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )["Policy"]["PolicySummary"]["Id"]
        org.attach_policy(PolicyId=pid, TargetId=s.organizational_unit)
        scps.append(pid)
    return {
        "source": src_arn,
        "replica": dst_arn,
        "tables": tables,
        "guardrail": guardrail,
        "scps": scps,
        "replica_key": key_arn,
        "replication": conf,
    }


def replica_key(target: LiveTarget, plan: RunPlan, cfg: KitConfig) -> str:
    """The replica bucket's KMS key as the replica stack creates it (`kms_key = "create"`): the kit's key policy,
    the kit's alias (the replication role's grant names the key by it), the run's tag."""
    s = plan.settings
    kms = target.client("kms", s.replica_region, s.replica_account_id)
    site = next(k for k in key_sites(cfg) if k.bucket == plan.replica_bucket)
    key = kms.create_key(
        Description=f"kit live-verify {plan.run_id}: the replica bucket's key",
        Policy=json.dumps(kms_key_policy(cfg, site)),
        BypassPolicyLockoutSafetyCheck=True,  # the kit's policy denies key changes to all but break-glass
        Tags=[{"TagKey": k, "TagValue": v} for k, v in plan.tags.items()],
    )["KeyMetadata"]
    kms.create_alias(AliasName=kms_alias(cfg, plan.replica_bucket), TargetKeyId=key["KeyId"])
    return str(key["Arn"])


def setup_role_permissions(plan: RunPlan) -> dict[str, Any]:
    """U27's caller, the source's deploy role as the kit deploys it: the replication setup actions on the source and
    `iam:PassRole` of the replication role, and an explicit Deny of what AWS's API reference says setup also needs
    on the destination (the kit's replica layers deny it to deploy roles too)."""
    dst = plan.replica_bucket_arn
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "SetUpReplication",
                "Effect": "Allow",
                "Action": [
                    "s3tables:PutTableBucketReplication",
                    "s3tables:GetTableBucketReplication",
                    "s3tables:PutTableReplication",
                    "s3tables:GetTableReplication",
                ],
                "Resource": [plan.source_bucket_arn, f"{plan.source_bucket_arn}/table/*"],
            },
            {
                "Sid": "PassTheReplicationRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": plan.role_arn("replication"),
                "Condition": {"StringEquals": {"iam:PassedToService": "replication.s3tables.amazonaws.com"}},
            },
            {
                "Sid": "DenyDestinationCreation",
                "Effect": "Deny",
                "Action": [
                    "s3tables:CreateTable",
                    "s3tables:CreateNamespace",
                    "s3tables:PutTableMaintenanceConfiguration",
                ],
                "Resource": [dst, f"{dst}/table/*"],
            },
        ],
    }


def harden_replica(target: LiveTarget, plan: RunPlan, cfg: KitConfig, replica_table_arn: str) -> None:
    """The replica's table policy, the way `make harden` puts it once the service has created the replica."""
    dst = target.client("s3tables", plan.settings.replica_region, plan.settings.replica_account_id)
    doc = documents.replica_table_policy_for(cfg, cfg.replicas[0], replica_table_arn)
    bucket_arn, _, _ = replica_table_arn.partition("/table/")
    table = dst.get_table(tableArn=replica_table_arn)
    dst.put_table_policy(
        tableBucketARN=bucket_arn, namespace=table["namespace"][0], name=table["name"], resourcePolicy=json.dumps(doc)
    )


# The reader holds exactly what `status` reads a replica's window with (U25: the Iceberg REST endpoint's loadTable is
# translated into these two actions).
READ_WINDOWS = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "ReadWindows",
            "Effect": "Allow",
            "Action": ["s3tables:GetTableMetadataLocation", "s3tables:GetTableData"],
            "Resource": "*",
        }
    ],
}
RUN_ROLES = (
    ("deploy", ALLOW_S3TABLES),
    ("admin", ALLOW_ALL),
    ("break-glass", ALLOW_ALL),
    ("reader", READ_WINDOWS),
)


def create_run_roles(target: LiveTarget, plan: RunPlan) -> None:
    """Before a Terraform deploy: the roles the configuration names as prerequisites (deploy, break-glass, the
    guardrail's admin role), created with the run's tag so that cleanup may delete them whatever happens next."""
    s = plan.settings
    iam = target.client("iam", "us-east-1", s.replica_account_id)
    for who, _ in RUN_ROLES:
        _role(iam, plan.name(who), s.replica_account_id, plan.tags)
    _role(target.client("iam", "us-east-1", s.account_id), plan.name("setup"), s.account_id, plan.tags)


def grant_roles(target: LiveTarget, plan: RunPlan) -> None:
    """After a Terraform deploy: the run's roles get their permissions."""
    iam = target.client("iam", "us-east-1", plan.settings.replica_account_id)
    for who, doc in RUN_ROLES:
        iam.put_role_policy(RoleName=plan.name(who), PolicyName="permissions", PolicyDocument=json.dumps(doc))
    target.client("iam", "us-east-1", plan.settings.account_id).put_role_policy(
        RoleName=plan.name("setup"), PolicyName="permissions", PolicyDocument=json.dumps(setup_role_permissions(plan))
    )


def world_of(target: LiveTarget, plan: RunPlan) -> dict[str, Any]:
    """The ARNs `deploy` returns, read back from what Terraform created."""
    s = plan.settings
    src = target.client("s3tables", s.source_region, s.account_id)
    tables = {
        t["namespace"][0]: t["tableARN"]
        for t in src.list_tables(tableBucketARN=plan.source_bucket_arn)["tables"]
        if t["name"] == plan.table
    }
    return {"source": plan.source_bucket_arn, "replica": plan.replica_bucket_arn, "tables": tables}
