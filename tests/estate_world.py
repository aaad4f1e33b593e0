"""The world the estate's policy proofs run in (examples/estate.toml): who exists, which policies apply to
whom, which resources exist and which carry the protection tag.

Written by hand from the security intent and the example, NOT derived from `policies/`: every ARN and document name
is a literal, and only the documents themselves come from the code under test (`build_documents`). Expected
outcomes live in tests/test_policy_estate_proofs.py.

The estate: sources sales-euw1 and marketing-euw1 in 111111111111, ops-use1 in 555555555555 (both accounts in
ou-ab12-workloads); the vault `estate-vault-euc1` in 666666666666 (ou-ab12-vault0001) receives from all three
(fan-in); `estate-sales-replica-euc1` in 111111111111 receives from sales only. Both SCPs are attached to both OUs.
Both replica buckets carry the tag `kit-protection = estate`: IAM evaluates `s3tables:TableBucketTag/<key>` from
the bucket's tags, which the simulator cannot read, so every request on a tagged bucket (or one of its tables)
carries the key in its request context, and a request on an "untagged" resource (the same ARN after an untag)
does not.

Principals (columns of the matrices):
- adm6  arn:aws:iam::666666666666:role/Administrator        AdministratorAccess, no guardrail; SCP
- eng6  arn:aws:iam::666666666666:role/data-engineer        s3tables:* + kms:Decrypt, guardrail 666; SCP
- dep6  arn:aws:iam::666666666666:role/terraform-deploy     AdministratorAccess + guardrail 666; SCP (vault deploy)
- bg6   arn:aws:iam::666666666666:role/s3tables-break-glass AdministratorAccess; SCP
- adm1  arn:aws:iam::111111111111:role/Administrator        AdministratorAccess, no guardrail; SCP
- dep1  arn:aws:iam::111111111111:role/terraform-deploy     AdministratorAccess + guardrail 111; SCP (deploys the
                                                            sales and marketing sources and the sales replica)
- bg1   arn:aws:iam::111111111111:role/s3tables-break-glass AdministratorAccess; SCP
- rS    sales' replication role (111111111111)              its kit identity policy; SCP
- rM    marketing's replication role (111111111111)         its kit identity policy; SCP
- rO    ops' replication role (555555555555)                its kit identity policy; SCP
- mnt   maintenance.s3tables.amazonaws.com                  harness baseline (s3tables:* on the kit's buckets); no SCP
- rec   the recovery role (666666666666)                    its kit identity policy; SCP
- oth   arn:aws:iam::777777777777:role/Administrator        AdministratorAccess in an unrelated account; no SCP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies.simulate import ScpLevel, SimRequest, principal_context
from s3tables_kit.topology.config import KitConfig, load_config
from tests import policy_fixtures
from tests.policy_fixtures import (
    ADMIN_ACCESS,
    ENGINEER_ACCESS,
    FULL_AWS_ACCESS,
    WORLD_POLICIES,
    case_id,
    maintenance_baseline,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIG_PATH = ROOT / "examples" / "estate.toml"
MAINTENANCE = "maintenance.s3tables.amazonaws.com"

TAG_KEY = "kit-protection"  # the intent: protected buckets carry kit-protection = <kit name>
TAG_CONTEXT = {f"s3tables:TableBucketTag/{TAG_KEY}": "estate"}

VAULT = "arn:aws:s3tables:eu-central-1:666666666666:bucket/estate-vault-euc1"
SALES_REPLICA = "arn:aws:s3tables:eu-central-1:111111111111:bucket/estate-sales-replica-euc1"
RECOVERY = "arn:aws:s3tables:eu-central-1:666666666666:bucket/estate-recovery-euc1"
TABLE_IDS = {  # the one table of each bucket that requests name
    VAULT: "1a2b3c4d-0000-4a6b-9c8d-112233445566",
    SALES_REPLICA: "2a2b3c4d-0000-4a6b-9c8d-112233445566",
    RECOVERY: "3a2b3c4d-0000-4a6b-9c8d-112233445566",
}
SALES_ROLE = "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication"
MARKETING_ROLE = "arn:aws:iam::111111111111:role/estate-marketing-euw1-s3tables-replication"
OPS_ROLE = "arn:aws:iam::555555555555:role/estate-ops-use1-s3tables-replication"
IMPOSTER_ROLE = "arn:aws:iam::111111111111:role/estate-evil-s3tables-replication"  # named like a replication role

# Document names (policies/rendered/estate/*.json): literals, so a rename is a visible test change.
VAULT_BUCKET_POLICY = "replica-bucket-policy--estate-vault-euc1"
VAULT_TABLE_POLICY = "replica-table-policy--estate-vault-euc1"
SALES_REPLICA_BUCKET_POLICY = "replica-bucket-policy--estate-sales-replica-euc1"
SALES_REPLICA_TABLE_POLICY = "replica-table-policy--estate-sales-replica-euc1"
GUARDRAIL_666 = "replica-guardrail--666666666666"
GUARDRAIL_111 = "replica-guardrail--111111111111"
SCP = "scp-protect-replicas"
SCP_GUARDS = "scp-protect-replica-guards"
SALES_TRUST = "replication-role-trust--source-sales-euw1"
MAINTENANCE_BASELINE = "world:MaintenanceServiceBaseline"


@dataclass(frozen=True)
class Principal:
    arn: str
    identity: tuple[str, ...] = ()
    scp: bool = True


def _role(account: str, name: str, *identity: str, scp: bool = True) -> Principal:
    return Principal(f"arn:aws:iam::{account}:role/{name}", tuple(identity), scp)


PRINCIPALS: dict[str, Principal] = {
    "adm6": _role("666666666666", "Administrator", ADMIN_ACCESS),
    "eng6": _role("666666666666", "data-engineer", ENGINEER_ACCESS, GUARDRAIL_666),
    "dep6": _role("666666666666", "terraform-deploy", ADMIN_ACCESS, GUARDRAIL_666),
    "bg6": _role("666666666666", "s3tables-break-glass", ADMIN_ACCESS),
    "adm1": _role("111111111111", "Administrator", ADMIN_ACCESS),
    "dep1": _role("111111111111", "terraform-deploy", ADMIN_ACCESS, GUARDRAIL_111),
    "bg1": _role("111111111111", "s3tables-break-glass", ADMIN_ACCESS),
    "rS": Principal(SALES_ROLE, ("replication-role-permissions--source-sales-euw1",)),
    "rM": Principal(MARKETING_ROLE, ("replication-role-permissions--source-marketing-euw1",)),
    "rO": Principal(OPS_ROLE, ("replication-role-permissions--source-ops-use1",)),
    "mnt": Principal(MAINTENANCE, scp=False),
    "rec": _role("666666666666", "estate-s3tables-recovery", "recovery-role-permissions"),
    "oth": _role("777777777777", "Administrator", ADMIN_ACCESS, scp=False),
}
ORDER = tuple(PRINCIPALS)


@dataclass(frozen=True)
class Resource:
    arn: str
    account: str
    policies: tuple[str, ...]  # resource policies (an S3 Tables table request: bucket AND table policy)
    tagged: bool = False  # its bucket carries kit-protection = estate
    namespace: str | None = None  # s3tables:namespace of the request (a table's, or the one CreateTable names)


# Actions the replication role takes in a replica whose request carries `s3tables:namespace` (the fan-in
# confinement's condition key; the simulator reports a context key an action does not support as ignored).
NAMESPACE_KEYED = frozenset(
    {"CreateTable", "PutTableData", "UpdateTableMetadataLocation", "PutTableMaintenanceConfiguration", "GetTableData"}
)


def table_of(bucket: str) -> str:
    """The ARN of the table of `bucket` that requests name."""
    return f"{bucket}/table/{TABLE_IDS[bucket]}"


@dataclass(frozen=True)
class _Replica:
    bucket: str
    account: str
    bucket_policy: str
    table_policy: str

    def resources(self, name: str, suffix: str = "", **kw: Any) -> dict[str, Resource]:
        """`<name>-bucket<suffix>` and `<name>-table<suffix>` as a request meets them: the bucket's policy (and the
        table's, on the table) and the maintenance baseline; `tagged` and `namespace` as given."""
        bucket_policies = (self.bucket_policy, MAINTENANCE_BASELINE)
        table_policies = (self.bucket_policy, self.table_policy, MAINTENANCE_BASELINE)
        return {
            f"{name}-bucket{suffix}": Resource(self.bucket, self.account, bucket_policies, **kw),
            f"{name}-table{suffix}": Resource(table_of(self.bucket), self.account, table_policies, **kw),
        }


SALES_NS, OPS_NS = "acct111111111111_sales", "acct555555555555_ops"  # named after their accounts (fan-in)
_VAULT = _Replica(VAULT, "666666666666", VAULT_BUCKET_POLICY, VAULT_TABLE_POLICY)
_SALES_REPLICA = _Replica(SALES_REPLICA, "111111111111", SALES_REPLICA_BUCKET_POLICY, SALES_REPLICA_TABLE_POLICY)
RESOURCES: dict[str, Resource] = {
    # the vault's requests name sales' namespace; `-ops` the same bucket and table policies for ops' namespace
    **_VAULT.resources("vault", tagged=True, namespace=SALES_NS),
    **_VAULT.resources("vault", "-ops", tagged=True, namespace=OPS_NS),
    **_SALES_REPLICA.resources("salesrep", tagged=True),
    # the same buckets after their protection tag was removed (step 2 of "untag, then delete")
    **_VAULT.resources("vault", "-untagged", namespace=SALES_NS),
    **_SALES_REPLICA.resources("salesrep", "-untagged"),
    "recovery-bucket": Resource(RECOVERY, "666666666666", (MAINTENANCE_BASELINE,)),
    "recovery-table": Resource(table_of(RECOVERY), "666666666666", (MAINTENANCE_BASELINE,)),
    "sales-role": Resource(SALES_ROLE, "111111111111", ()),
    "sales-role-assume": Resource(SALES_ROLE, "111111111111", (SALES_TRUST,)),  # sts:AssumeRole meets the trust
    "imposter-role": Resource(IMPOSTER_ROLE, "111111111111", ()),
}

SCP_LEVELS: dict[str, tuple[ScpLevel, ...]] = {
    acct: (
        ScpLevel("r-ab12", (FULL_AWS_ACCESS,)),
        ScpLevel(ou, (FULL_AWS_ACCESS, SCP, SCP_GUARDS)),
        ScpLevel(acct, (FULL_AWS_ACCESS,)),
    )
    for acct, ou in (
        ("111111111111", "ou-ab12-workloads"),
        ("555555555555", "ou-ab12-workloads"),
        ("666666666666", "ou-ab12-vault0001"),
    )
}

WORLD: dict[str, Any] = {
    **{k: v for k, v in WORLD_POLICIES.items() if k in (ADMIN_ACCESS, ENGINEER_ACCESS, FULL_AWS_ACCESS)},
    MAINTENANCE_BASELINE: maintenance_baseline([VAULT, SALES_REPLICA, RECOVERY]),
}


def load() -> KitConfig:
    return load_config(CONFIG_PATH)


def kit_documents(cfg: KitConfig) -> dict[str, Any]:
    """Every document of the estate by name, each replica's table policy built for its concrete table."""
    docs = {d.name: d.document for d in policy_documents.build_documents(cfg)}
    for name, bucket_arn in ((VAULT_TABLE_POLICY, VAULT), (SALES_REPLICA_TABLE_POLICY, SALES_REPLICA)):
        replica = next(r for r in cfg.replicas if r.bucket_arn == bucket_arn)
        docs[name] = policy_documents.replica_table_policy_for(cfg, replica, table_of(bucket_arn))
    return docs


def split_action(token: str) -> tuple[str, list[str]]:
    """`TagResource[kit-protection]` -> ("s3tables:TagResource", ["kit-protection"]) (the tag keys of the
    request, `aws:TagKeys`); a token with a service prefix (`iam:CreateRole`) keeps it."""
    name, _, keys = token.partition("[")
    full = name if ":" in name else f"s3tables:{name}"
    return full, [k for k in keys.rstrip("]").split(",") if k]


def request(principal: str, resource: str, action: str, *, variant: str = "") -> SimRequest:
    who, res = PRINCIPALS[principal], RESOURCES[resource]
    full_action, tag_keys = split_action(action)
    ctx = principal_context(who.arn, source_account=res.account)
    if res.tagged:
        ctx.update(TAG_CONTEXT)
    if tag_keys:
        ctx["aws:TagKeys"] = tag_keys
    if res.namespace and full_action.removeprefix("s3tables:") in NAMESPACE_KEYED:
        ctx["s3tables:namespace"] = res.namespace

    def ns(name: str) -> str:
        return name if name.startswith("world:") or not variant else f"{variant}|{name}"

    account = who.arn.split(":")[4] if who.arn.startswith("arn:") else ""
    levels = SCP_LEVELS.get(account, ()) if who.scp else ()
    return SimRequest(
        id=(f"{variant}|" if variant else "") + case_id(principal, resource, action),
        principal=who.arn,
        action=full_action,
        resource=res.arn,
        resource_account=res.account,
        context=ctx,
        identity_policies=tuple(ns(n) for n in who.identity),
        scps=tuple(ScpLevel(lvl.org_identifier, tuple(ns(n) for n in lvl.policies)) for lvl in levels),
        resource_policies=tuple(ns(n) for n in res.policies),
    )


def variant_policies(variants: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The estate's world policies next to every variant of the kit's documents (`policy_fixtures`)."""
    return policy_fixtures.variant_policies(variants, WORLD)
