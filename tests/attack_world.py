"""Worlds for the multi-step attack proofs (tests/test_policy_attacks.py): who exists, which policies apply to whom,
and what a protected action is, for both examples.

Written by hand from the security intent and the example topologies, NOT derived from `policies/`: every ARN is a
literal, the protected actions and each principal's legitimate exemptions are listed here from the intent, and only
the kit's documents themselves come from the code under test (`build_documents`). The attack model (what an actor
can replace once a request succeeds) lives in the test module.

Intent, as the proofs read it:
- Destructive actions on a replica (delete, rename, expire records, shorten retention, write data, change replication,
  change encryption or storage, replace or delete its policies, create names the service will need, disable or
  delete its key or rewrite the key policy) are denied to every principal but break-glass, by at least two layers
  (table policy, bucket policy, IAM guardrail, SCP, key policy), and no principal but break-glass can remove enough
  layers, in any order of requests, to get one through.
- Legitimate paths keep working: the replication role (cross-account) creates and writes replicas and sets their
  maintenance; the maintenance service writes; the recovery role reads; a replica account's deploy role changes
  policies and bucket settings only before the bucket policy exists (the first deploy applies it last: from then
  on such a change is a break-glass deploy), and nothing destructive ever; break-glass of any account can do
  everything, including `make harden` / `make audit` from the automation account.
- The organization's management account is trusted (SCPs do not apply there; whoever controls it controls the
  organization); it holds no replica and no source (the configuration refuses that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies.simulate import ScpLevel
from s3tables_kit.topology.config import KitConfig, load_config
from tests.policy_fixtures import (
    ADMIN_ACCESS,
    ENGINEER_ACCESS,
    FULL_AWS_ACCESS,
    WORLD_POLICIES,
    maintenance_baseline,
)

ROOT = Path(__file__).resolve().parent.parent
MAINTENANCE = "maintenance.s3tables.amazonaws.com"
REPLICATION_SERVICE = "replication.s3tables.amazonaws.com"
KEY_TAG = "s3tables-kit-replica-key"  # the tag the intent says replica keys carry (docs/policy-review.md, SUMMARY.md)


# ---------------------------------------------------------------- protected actions, from the intent ----

BUCKET_DESTRUCTIVE = ("DeleteTableBucket", "DeleteNamespace")
BUCKET_REPLICATION = ("PutTableBucketReplication", "DeleteTableBucketReplication")
BUCKET_POLICY_CHANGE = ("PutTableBucketPolicy", "DeleteTableBucketPolicy")
BUCKET_SETTINGS = (
    "PutTableBucketEncryption",
    "DeleteTableBucketEncryption",
    "PutTableBucketMaintenanceConfiguration",
    "PutTableBucketStorageClass",
    "PutTableBucketLogging",  # switching access logging off hides who touched the replica
    "PutTableBucketMetricsConfiguration",
    "DeleteTableBucketMetricsConfiguration",
)
BUCKET_NAMES = ("CreateNamespace", "CreateTable")
TABLE_DESTRUCTIVE = ("DeleteTable", "RenameTable", "PutTableRecordExpirationConfiguration")
TABLE_RETENTION = ("PutTableMaintenanceConfiguration",)
TABLE_WRITE = ("PutTableData", "UpdateTableMetadataLocation")
# disassociation turns a replica into a writable standalone table, permanently
TABLE_REPLICATION = ("PutTableReplication", "DeleteTableReplication", "DisassociateTableReplication")
TABLE_POLICY_CHANGE = ("PutTablePolicy", "DeleteTablePolicy")
TABLE_SETTINGS = ("PutTableEncryption", "PutTableStorageClass")
# replication does not support tables with tags (AWS resource tags might count): replica tables stay untagged
TABLE_TAGS = ("TagResource", "UntagResource")
KEY_DESTRUCTIVE = ("kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:PutKeyPolicy")

PROTECTED_BUCKET = BUCKET_DESTRUCTIVE + BUCKET_REPLICATION + BUCKET_POLICY_CHANGE + BUCKET_SETTINGS + BUCKET_NAMES
PROTECTED_TABLE = (
    TABLE_DESTRUCTIVE
    + TABLE_RETENTION
    + TABLE_WRITE
    + TABLE_REPLICATION
    + TABLE_POLICY_CHANGE
    + TABLE_SETTINGS
    + TABLE_TAGS
)

# Legitimate exemptions by role (break-glass: everything). Service-only roles are exempt where the service path
# needs it; a deploy role where the reviewed deployment changes settings. Nothing destructive is on any list.
LEGIT: dict[str, frozenset[str]] = {
    "replication": frozenset(TABLE_WRITE + TABLE_RETENTION + BUCKET_NAMES),
    "maintenance": frozenset(TABLE_WRITE),
    # Locked after the first deploy: once a replica's bucket policy exists, a policy or settings change is a
    # break-glass deploy, so the deploy role has no exemption left on a deployed replica.
    "deploy": frozenset(),
}

# Locked after the first deploy (docs/decisions/0028-lock-after-first-deploy.md): a deploy role's bucket-level
# policy and settings changes are held by the replica's bucket policy alone, which denies its own replacement and
# removal to the deploy role (removal is a deletion: every layer). The SCP and the guardrail exempt the deploy role
# for the first deploy, which they cannot tell from a later one. The intent names these cases, one layer each.
LOCKED_BY_BUCKET_POLICY = frozenset(
    {
        "PutTableBucketPolicy",
        "PutTableBucketEncryption",
        "PutTableBucketMaintenanceConfiguration",
        "PutTableBucketStorageClass",
        "PutTableBucketLogging",
        "PutTableBucketMetricsConfiguration",
    }
)
# Their table-level counterparts meet the bucket and the table policy.
LOCKED_BY_RESOURCE_POLICIES = LOCKED_BY_BUCKET_POLICY | {"PutTablePolicy", "PutTableEncryption", "PutTableStorageClass"}


def locked_by_resource_policies_only(principal: Principal, action: str) -> bool:
    """A deploy role's locked change: the resource policies hold it, the SCP and the guardrail do not."""
    return principal.kind == "deploy" and action in LOCKED_BY_RESOURCE_POLICIES


# A table-migration role in a replica account (user guide "Setting up table migration": the role that
# migration.s3tables.amazonaws.com assumes needs these on the destination). Migration creates its target with the
# role's CreateTable and fills it with UpdateTableMetadataLocation/PutTableData, so in a replica bucket it must meet
# the same denies as name squatting and data writes.
MIGRATION_ROLE_ACCESS = "world:MigrationRoleAccess"
MIGRATION_DESTINATION = (
    "CreateTable", "GetTable", "GetTableMetadataLocation", "UpdateTableMetadataLocation", "GetTableData",
    "PutTableData",
)  # fmt: skip
MIGRATION_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "MigrationDestination", "Effect": "Allow", "Action": [f"s3tables:{a}" for a in MIGRATION_DESTINATION],
         "Resource": "*"}
    ],
}  # fmt: skip

# What `make harden` and `make audit` call on a replica (jobs/ops/harden.py, jobs/ops/audit.py).
HARDEN_AUDIT_BUCKET = (
    "ListNamespaces",
    "ListTables",
    "GetTableBucketPolicy",
    "GetTableBucketEncryption",
    "GetTableBucketStorageClass",
    "GetTableBucketReplication",
)
HARDEN_AUDIT_TABLE = (
    "GetTable",
    "GetTableMetadataLocation",
    "GetTablePolicy",
    "PutTablePolicy",
    "GetTableMaintenanceConfiguration",
    "PutTableMaintenanceConfiguration",
)


@dataclass(frozen=True)
class Principal:
    key: str
    arn: str  # IAM role ARN, or a service principal
    account: str
    identity: tuple[str, ...] = ()  # world policy names or kit document names
    scp: bool = True  # is its account under the kit's SCP
    kind: str = "human"  # human | deploy | breakglass | replication | maintenance | recovery | migration
    guardrail: str | None = None  # the guardrail document attached to it, if any

    @property
    def is_service(self) -> bool:
        return self.kind == "maintenance"


@dataclass(frozen=True)
class ReplicaSite:
    key: str
    account: str
    bucket_arn: str
    table_arn: str
    bucket_policy: str  # document names
    table_policy: str
    key_arn: str | None = None
    key_policy: str | None = None
    key_alias: str | None = None


@dataclass(frozen=True)
class World:
    example: str
    principals: Mapping[str, Principal]
    replicas: tuple[ReplicaSite, ...]
    scp_levels: Mapping[str, tuple[ScpLevel, ...]]  # by account
    guardrail_arns: Mapping[str, str]  # guardrail document name -> policy ARN
    replication_role: str  # principal key
    replication_trust: str  # document name
    extra_world_policies: Mapping[str, Any] = field(default_factory=dict)

    def config(self) -> KitConfig:
        return load_config(ROOT / "examples" / f"{self.example}.toml")

    def legit(self, principal: Principal) -> frozenset[str]:
        return LEGIT.get(principal.kind, frozenset())

    def kit_documents(self) -> dict[str, Any]:
        """The kit's documents by name, with each replica's table policy built for its concrete table."""
        cfg = self.config()
        docs = {d.name: d.document for d in policy_documents.build_documents(cfg)}
        for site in self.replicas:
            replica = next(r for r in cfg.replicas if r.bucket_arn == site.bucket_arn)
            docs[site.table_policy] = policy_documents.replica_table_policy_for(cfg, replica, site.table_arn)
        return docs

    def world_policies(self) -> dict[str, Any]:
        return {
            # The same AdministratorAccess / data-engineer / FullAWSAccess documents as the matrix proofs' world.
            **{k: v for k, v in WORLD_POLICIES.items() if k in (ADMIN_ACCESS, ENGINEER_ACCESS, FULL_AWS_ACCESS)},
            "world:MaintenanceServiceBaseline": maintenance_baseline([site.bucket_arn for site in self.replicas]),
            **self.extra_world_policies,
        }


def _levels(*levels: tuple[str, tuple[str, ...]]) -> tuple[ScpLevel, ...]:
    return tuple(ScpLevel(org_id, policies) for org_id, policies in levels)


SCPS = ("scp-protect-replicas", "scp-protect-replica-guards")

# ---------------------------------------------------------------- examples/multi-account.toml ----


def _site(key: str, account: str, region: str, bucket: str, table_id: str, key_id: str = "") -> ReplicaSite:
    """A replica site with the kit's names for its documents and, given `key_id`, for its KMS key."""
    arn = f"arn:aws:s3tables:{region}:{account}:bucket/{bucket}"
    kms = (
        (f"arn:aws:kms:{region}:{account}:key/{key_id}", f"kms-key-policy--{bucket}", f"alias/lakehouse-{bucket}")
        if key_id
        else (None, None, None)
    )
    return ReplicaSite(
        key, account, arn, f"{arn}/table/{table_id}",
        f"replica-bucket-policy--{bucket}", f"replica-table-policy--{bucket}", *kms,
    )  # fmt: skip


def _multi() -> World:
    def p(key: str, account: str, name: str, **kw: Any) -> Principal:
        return Principal(key, f"arn:aws:iam::{account}:role/{name}", account, **kw)

    g222, g333 = "replica-guardrail--222222222222", "replica-guardrail--333333333333"
    principals = [
        p("admin222", "222222222222", "Administrator", identity=(ADMIN_ACCESS,)),  # SSO admin, no guardrail
        p("engineer222", "222222222222", "data-engineer", identity=(ENGINEER_ACCESS, g222), guardrail=g222),
        p("deploy222", "222222222222", "terraform-deploy", identity=(ADMIN_ACCESS, g222), kind="deploy",
          guardrail=g222),
        p("breakglass222", "222222222222", "s3tables-break-glass", identity=(ADMIN_ACCESS,), kind="breakglass"),
        p("admin333", "333333333333", "Administrator", identity=(ADMIN_ACCESS,)),
        p("deploy333", "333333333333", "terraform-deploy", identity=(ADMIN_ACCESS, g333), kind="deploy",
          guardrail=g333),
        p("breakglass333", "333333333333", "s3tables-break-glass", identity=(ADMIN_ACCESS,), kind="breakglass"),
        # The automation account is the organization's management account here: no SCP applies to it.
        p("automation444", "444444444444", "replica-guardian-automation", identity=(ADMIN_ACCESS,), scp=False,
          kind="breakglass"),
        p("repl", "111111111111", "lakehouse-s3tables-replication", identity=("replication-role-permissions",),
          kind="replication"),
        p("source111", "111111111111", "platform-admin", identity=(ADMIN_ACCESS,)),
        p("recovery", "222222222222", "lakehouse-s3tables-recovery", identity=("recovery-role-permissions",),
          kind="recovery"),
        Principal("maint", MAINTENANCE, "", scp=False, kind="maintenance"),
        p("other555", "555555555555", "Administrator", identity=(ADMIN_ACCESS,), scp=False),
        p("migration222", "222222222222", "s3tables-migration", identity=(MIGRATION_ROLE_ACCESS,), kind="migration"),
    ]  # fmt: skip

    root = ("r-ab12", (FULL_AWS_ACCESS,))
    return World(
        example="multi-account",
        principals={x.key: x for x in principals},
        replicas=(
            _site(
                "euc1",
                "222222222222",
                "eu-central-1",
                "lakehouse-replica-euc1",
                "6f1b2c3d-4e5f-4a6b-9c8d-112233445566",
                "1234abcd-12ab-34cd-56ef-1234567890ab",
            ),
            _site(
                "use1",
                "222222222222",
                "us-east-1",
                "lakehouse-replica-use1",
                "7a1b2c3d-4e5f-4a6b-9c8d-112233445566",
                "2234abcd-12ab-34cd-56ef-1234567890ab",
            ),
            _site(
                "apse2",
                "333333333333",
                "ap-southeast-2",
                "lakehouse-replica-apse2",
                "8b1b2c3d-4e5f-4a6b-9c8d-112233445566",
                "3234abcd-12ab-34cd-56ef-1234567890ab",
            ),
        ),
        scp_levels={
            "222222222222": _levels(
                root, ("ou-ab12-replicas1", (FULL_AWS_ACCESS, *SCPS)), ("222222222222", (FULL_AWS_ACCESS,))
            ),
            "111111111111": _levels(
                root, ("ou-ab12-workloads", (FULL_AWS_ACCESS, *SCPS)), ("111111111111", (FULL_AWS_ACCESS,))
            ),
            "333333333333": _levels(
                root, ("ou-ab12-shared00", (FULL_AWS_ACCESS,)), ("333333333333", (FULL_AWS_ACCESS, *SCPS))
            ),
        },
        guardrail_arns={
            g222: "arn:aws:iam::222222222222:policy/lakehouse-s3tables-replica-guardrail",
            g333: "arn:aws:iam::333333333333:policy/lakehouse-s3tables-replica-guardrail",
        },
        replication_role="repl",
        replication_trust="replication-role-trust",
        extra_world_policies={MIGRATION_ROLE_ACCESS: MIGRATION_POLICY},
    )


# ---------------------------------------------------------------- examples/seed.toml ----


def _seed() -> World:
    acct = "111122223333"

    def p(key: str, name: str, **kw: Any) -> Principal:
        return Principal(key, f"arn:aws:iam::{acct}:role/{name}", acct, **kw)

    principals = [
        # No deploy role in the seed: Terraform runs as an administrator, which the denies bind like anyone else.
        p("admin", "Administrator", identity=(ADMIN_ACCESS,)),
        p("breakglass", "s3tables-break-glass", identity=(ADMIN_ACCESS,), kind="breakglass"),
        p("repl", "seed-s3tables-replication", identity=("replication-role-permissions",), kind="replication"),
        p("recovery", "seed-s3tables-recovery", identity=("recovery-role-permissions",), kind="recovery"),
        Principal("maint", MAINTENANCE, "", scp=False, kind="maintenance"),
        Principal("other", "arn:aws:iam::555555555555:role/Administrator", "555555555555", identity=(ADMIN_ACCESS,),
                  scp=False),
    ]  # fmt: skip
    return World(
        example="seed",
        principals={x.key: x for x in principals},
        replicas=(_site("dest", acct, "us-west-2", "demo-dest-tablebucket", "0a0b0c0d-1e2f-4a6b-9c8d-112233445566"),),
        scp_levels={
            acct: _levels(
                ("r-ab12", (FULL_AWS_ACCESS,)),
                ("ou-ab12-replicas1", (FULL_AWS_ACCESS, *SCPS)),
                (acct, (FULL_AWS_ACCESS,)),
            )
        },
        guardrail_arns={
            "replica-guardrail--111122223333": "arn:aws:iam::111122223333:policy/seed-s3tables-replica-guardrail"
        },
        replication_role="repl",
        replication_trust="replication-role-trust",
    )


WORLDS: dict[str, World] = {"multi-account": _multi(), "seed": _seed()}
