"""A configuration deployed into the local stand-in (`emulator/`) through the public APIs Terraform calls: what
`cdktf deploy` of every stack leaves behind, for the sandbox (`harness.sandbox`), the test worlds and the benchmarks.

Each function takes boto3-shaped clients (an `s3tables` client per Region, an `organizations` client) and creates
one stack's resources of `cfg`:

- `seed_organization_policies`: the organization stack, the kit's two SCPs attached to every target;
- `deploy_replicas`: every replica bucket with its encryption, storage class and bucket policy;
- `deploy_sources`: every source bucket with its encryption, its namespaces and tables with their retention (tables
  are created without metadata, as Terraform creates them: a writer's first commit gives them their schema), and
  its replication configuration at bucket or table level;
- `create_vault_bucket`: a vault-like bucket (Object Lock, a COMPLIANCE default retention), for the backup's tests
  and benchmark;
- `deploy_vault`: the vault stack's bucket of `[vault]`: Object Lock, encryption with the vault key, no public
  access, the bucket policy last.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from s3tables_kit.topology.config import KitConfig, SnapshotRetention, Source

S3TablesFor = Callable[[str], Any]  # a Region -> an s3tables client in it


def create_vault_bucket(s3: Any, *, days: int, bucket: str | None = None, region: str = "us-east-1") -> str:
    """A bucket in `region` (the client's) with Object Lock enabled at creation and a COMPLIANCE default retention of
    `days`, as the vault stack makes it; its name (a fresh one unless given)."""
    name = bucket or f"vault-{uuid.uuid4().hex[:12]}"
    where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True, **where)
    s3.put_object_lock_configuration(
        Bucket=name,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": days}},
        },
    )
    return name


def create_point_key(kms: Any) -> str:
    """The vault's point key as the vault stack makes it: a KMS HMAC key (HMAC_256, GENERATE_VERIFY_MAC); its ARN."""
    meta = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC", Description="vault point key")
    return str(meta["KeyMetadata"]["Arn"])


def deploy_vault(s3: Any, cfg: KitConfig, kms_key_arn: str) -> str:
    """The vault bucket of `cfg` (an `s3` client of the vault's Region) as the vault stack leaves it: Object Lock with
    the configured COMPLIANCE retention (versioning comes with it), SSE-KMS with `kms_key_arn` and a Bucket Key, all
    public access blocked, and the bucket policy applied last (it denies every later settings change but
    break-glass's); the bucket's name."""
    from s3tables_kit.policies import documents, vault

    v = cfg.vault
    if v is None:
        raise ValueError("the configuration has no [vault]")
    name = create_vault_bucket(s3, days=v.retention_days, bucket=v.bucket_name(cfg.kit.name), region=v.region)
    s3.put_bucket_encryption(
        Bucket=name,
        ServerSideEncryptionConfiguration={
            "Rules": [
                {
                    "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": kms_key_arn},
                    "BucketKeyEnabled": True,
                }
            ]
        },
    )
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={k: True for k in PUBLIC_ACCESS_BLOCK},
    )
    s3.put_bucket_policy(Bucket=name, Policy=documents.compact_json(vault.bucket_policy(cfg)))
    return name


PUBLIC_ACCESS_BLOCK = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")


def create_organization_unit(org: Any, name: str = "replicas") -> str:
    """An organization with one OU under its root (the emulator's organizations are per account); the OU's id."""
    org.create_organization(FeatureSet="ALL")
    root = org.list_roots()["Roots"][0]["Id"]
    return str(org.create_organizational_unit(ParentId=root, Name=name)["OrganizationalUnit"]["Id"])


def seed_organization_policies(org: Any, cfg: KitConfig, targets: Sequence[str]) -> dict[str, Any]:
    """The organization stack: the kit's two SCPs, each attached to every target; the stack's outputs
    (`kit_organization`)."""
    from s3tables_kit.policies import documents
    from s3tables_kit.topology.outputs import organization_value

    ids: dict[str, str] = {}
    for key, name, policy in (
        ("policy", cfg.scp_name, documents.service_control_policy(cfg)),
        ("guards_policy", cfg.scp_guards_name, documents.service_control_policy_guards(cfg)),
    ):
        pid = org.create_policy(
            Content=documents.compact_json(policy), Description="kit", Name=name, Type="SERVICE_CONTROL_POLICY"
        )["Policy"]["PolicySummary"]["Id"]
        for target in targets:
            org.attach_policy(PolicyId=pid, TargetId=target)
        ids[key] = pid
    return organization_value(cfg, targets, policy_id=ids["policy"], guards_policy_id=ids["guards_policy"])


def deploy_replicas(s3tables: S3TablesFor, cfg: KitConfig) -> None:
    """Every replica bucket of `cfg`: its encryption, storage class and the kit's bucket policy."""
    from s3tables_kit.policies import documents

    for r in cfg.replicas:
        s3t = s3tables(r.region)
        s3t.create_table_bucket(
            name=r.bucket,
            encryptionConfiguration={"sseAlgorithm": r.encryption.sse_algorithm},
            storageClassConfiguration={"storageClass": r.storage_class},
        )
        s3t.put_table_bucket_policy(
            tableBucketARN=r.bucket_arn, resourcePolicy=documents.compact_json(documents.replica_bucket_policy(cfg, r))
        )


def retention_value(retention: SnapshotRetention) -> dict[str, Any]:
    """The `icebergSnapshotManagement` maintenance configuration of a table with `retention`."""
    settings = {
        "minSnapshotsToKeep": retention.min_snapshots_to_keep,
        "maxSnapshotAgeHours": retention.max_snapshot_age_hours,
    }
    return {"status": "enabled", "settings": {"icebergSnapshotManagement": settings}}


def deploy_sources(s3tables: S3TablesFor, cfg: KitConfig, *, tables: bool = True) -> dict[str, dict[str, str]]:
    """Every source bucket of `cfg` with its encryption and replication configuration; with `tables`, its declared
    namespaces and tables with their retention (without, the caller fills the bucket, e.g. by the emulator's
    bulk seeding, and replication is at bucket level). Returns each source bucket's table ARNs by "namespace.name"."""
    arns: dict[str, dict[str, str]] = {}
    for src in cfg.sources:
        s3t = s3tables(src.region)
        s3t.create_table_bucket(name=src.bucket, encryptionConfiguration={"sseAlgorithm": src.encryption.sse_algorithm})
        arns[src.bucket_arn] = _create_tables(s3t, src) if tables else {}
        put_replication(s3t, cfg, src, arns[src.bucket_arn])
    return arns


def _create_tables(s3t: Any, src: Source) -> dict[str, str]:
    arns: dict[str, str] = {}
    for ns in src.namespaces:
        s3t.create_namespace(tableBucketARN=src.bucket_arn, namespace=[ns.name])
        for t in ns.tables:
            arns[f"{ns.name}.{t.name}"] = s3t.create_table(
                tableBucketARN=src.bucket_arn, namespace=ns.name, name=t.name, format="ICEBERG"
            )["tableARN"]
            s3t.put_table_maintenance_configuration(
                tableBucketARN=src.bucket_arn,
                namespace=ns.name,
                name=t.name,
                type="icebergSnapshotManagement",
                value=retention_value(src.retention_for(t)),
            )
    return arns


def put_replication(s3t: Any, cfg: KitConfig, src: Source, table_arns: dict[str, str]) -> None:
    """The source's replication configuration, with its own role, to each of its replicas: on the bucket, or on
    each replicated table (`table_arns`: "namespace.name" -> ARN)."""
    conf = {
        "role": cfg.replication_role_arn_of(src),
        "rules": [{"destinations": [{"destinationTableBucketARN": r.bucket_arn} for r in cfg.destinations_of(src)]}],
    }
    replication = cfg.replication_of(src)
    if replication.mode == "bucket":
        s3t.put_table_bucket_replication(tableBucketARN=src.bucket_arn, configuration=conf)
    else:
        for name in replication.tables:
            s3t.put_table_replication(tableArn=table_arns[name], configuration=conf)
