"""The world the policy proofs run in: who the principals are, which policies apply to each, which resources exist.

This is written by hand from the security intent and the example topology (examples/multi-account.toml), NOT
derived from `policies/`: ARNs are literals, and only the documents themselves come from the code under test
(`build_documents`). Expected outcomes live in tests/test_policy_proofs.py.

Modelled world (the replica `lakehouse-replica-euc1` in account 222222222222, eu-central-1, and its recovery target):

- admin      arn:aws:iam::222222222222:role/Administrator    AdministratorAccess, NO guardrail attached (the worst
                                                               case: an SSO admin role nobody attached it to); SCP.
- engineer   arn:aws:iam::222222222222:role/data-engineer    s3tables:* + kms:Decrypt, guardrail attached; SCP.
- repl       the source account's replication role           its kit identity policy; SCP too (in the seed the
                                                               source account IS the replica account, so the SCP
                                                               must not break replication).
- maint      maintenance.s3tables.amazonaws.com              no identity policy, no SCP (SCPs never apply to service
                                                               principals); a harness statement stands in for AWS's
                                                               own authorisation of its service: s3tables:* on the
                                                               kit's buckets, so only the kit's denies confine it.
- recovery   the recovery role                               its kit identity policy; SCP.
- breakglass arn:aws:iam::222222222222:role/s3tables-break-glass  AdministratorAccess; SCP.
- deploy     arn:aws:iam::222222222222:role/terraform-deploy AdministratorAccess + the guardrail (the kit attaches it
                                                               to the replica account's deploy role); SCP.
- source     arn:aws:iam::111111111111:role/platform-admin   AdministratorAccess in the source account; SCP (the
                                                               configuration requires the source account under it).
- other      arn:aws:iam::555555555555:role/Administrator    AdministratorAccess in an unrelated account (no SCP).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies import simulate
from s3tables_kit.policies.simulate import ScpLevel, SimRequest, principal_context
from s3tables_kit.topology.config import KitConfig, load_config

ROOT = Path(__file__).resolve().parent.parent
CONFIG_PATH = ROOT / "examples" / "multi-account.toml"

REPLICA_ACCOUNT = "222222222222"
SOURCE_ACCOUNT = "111111111111"
UNRELATED_ACCOUNT = "555555555555"

REPLICA_BUCKET = "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-replica-euc1"
REPLICA_TABLE = REPLICA_BUCKET + "/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
RECOVERY_BUCKET = "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-recovery-euc1"
RECOVERY_TABLE = RECOVERY_BUCKET + "/table/0a1b2c3d-4e5f-4a6b-9c8d-aabbccddeeff"
REPLICA_KEY = "arn:aws:kms:eu-central-1:222222222222:key/1234abcd-12ab-34cd-56ef-1234567890ab"
REPLICA_KEY_ALIAS = "alias/lakehouse-lakehouse-replica-euc1"
REPLICA_KEY_TAG = "s3tables-kit-replica-key"
SOURCE_BUCKET = "arn:aws:s3tables:eu-west-1:111111111111:bucket/lakehouse-prod"
SOURCE_TABLE = SOURCE_BUCKET + "/table/7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"
KIT_REPLICATION_ROLE = "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication"
# a role of the caller's own, passed to the replication service: it could write to an account the caller controls
OWN_ROLE = "arn:aws:iam::111111111111:role/exfiltration-replication"
REPLICATION_SERVICE = "replication.s3tables.amazonaws.com"

MAINTENANCE = "maintenance.s3tables.amazonaws.com"

PRINCIPALS: dict[str, str] = {
    "admin": "arn:aws:iam::222222222222:role/Administrator",
    "engineer": "arn:aws:iam::222222222222:role/data-engineer",
    "repl": "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication",
    "maint": MAINTENANCE,
    "recovery": "arn:aws:iam::222222222222:role/lakehouse-s3tables-recovery",
    "breakglass": "arn:aws:iam::222222222222:role/s3tables-break-glass",
    "deploy": "arn:aws:iam::222222222222:role/terraform-deploy",
    "source": "arn:aws:iam::111111111111:role/platform-admin",
    "other": "arn:aws:iam::555555555555:role/Administrator",
    "srcdeploy": "arn:aws:iam::111111111111:role/terraform-deploy",
}
PRINCIPAL_ORDER = tuple(PRINCIPALS)

RESOURCES: dict[str, tuple[str, str]] = {  # short name -> (ARN, service prefix)
    "replica-bucket": (REPLICA_BUCKET, "s3tables"),
    "replica-table": (REPLICA_TABLE, "s3tables"),
    "recovery-bucket": (RECOVERY_BUCKET, "s3tables"),
    "recovery-table": (RECOVERY_TABLE, "s3tables"),
    "replica-key": (REPLICA_KEY, "kms"),
    "source-bucket": (SOURCE_BUCKET, "s3tables"),
    "source-table": (SOURCE_TABLE, "s3tables"),
    "kit-role": (KIT_REPLICATION_ROLE, "iam"),
    "own-role": (OWN_ROLE, "iam"),
}
RESOURCE_ACCOUNTS = {"source-bucket": SOURCE_ACCOUNT, "source-table": SOURCE_ACCOUNT, "kit-role": SOURCE_ACCOUNT,
                     "own-role": SOURCE_ACCOUNT}  # fmt: skip

# Document names (policies/rendered/multi-account/*.json) — literals, so a rename is a visible test change.
BUCKET_POLICY = "replica-bucket-policy--lakehouse-replica-euc1"
TABLE_POLICY = "replica-table-policy--lakehouse-replica-euc1"
GUARDRAIL = "replica-guardrail--222222222222"
SCP = "scp-protect-replicas"
SCP_GUARDS = "scp-protect-replica-guards"
REPLICATION_PERMISSIONS = "replication-role-permissions"
RECOVERY_PERMISSIONS = "recovery-role-permissions"
REPLICA_KEY_POLICY = "kms-key-policy--lakehouse-replica-euc1"
SOURCE_BUCKET_POLICY = "source-bucket-policy"

ADMIN_ACCESS = "world:AdministratorAccess"
ENGINEER_ACCESS = "world:DataEngineerAccess"
FULL_AWS_ACCESS = "world:FullAWSAccess"
MAINTENANCE_BASELINE = "world:MaintenanceServiceBaseline"


def maintenance_baseline(bucket_arns: list[str]) -> dict[str, Any]:
    """Stand-in for AWS authorising its own maintenance service on the given buckets and their tables: only the
    kit's denies confine it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "HarnessAwsAuthorisesItsMaintenanceService",
                "Effect": "Allow",
                "Principal": {"Service": MAINTENANCE},
                "Action": "s3tables:*",
                "Resource": [r for arn in bucket_arns for r in (arn, arn + "/*")],
            }
        ],
    }


WORLD_POLICIES: dict[str, Any] = {
    ADMIN_ACCESS: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
    ENGINEER_ACCESS: {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Tables", "Effect": "Allow", "Action": "s3tables:*", "Resource": "*"},
            {"Sid": "Decrypt", "Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"},
        ],
    },
    FULL_AWS_ACCESS: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
    MAINTENANCE_BASELINE: maintenance_baseline([REPLICA_BUCKET, RECOVERY_BUCKET]),
}


def _scp_levels() -> tuple[ScpLevel, ...]:
    # Root, the replicas OU (carries the kit's SCP), the account. Every level keeps FullAWSAccess.
    return (
        ScpLevel("r-root", (FULL_AWS_ACCESS,)),
        ScpLevel("ou-ab12-replicas1", (FULL_AWS_ACCESS, SCP, SCP_GUARDS)),
        ScpLevel(REPLICA_ACCOUNT, (FULL_AWS_ACCESS,)),
    )


@dataclass(frozen=True)
class Subject:
    identity: tuple[str, ...]
    scp: bool


SUBJECTS: dict[str, Subject] = {
    "admin": Subject((ADMIN_ACCESS,), scp=True),
    "engineer": Subject((ENGINEER_ACCESS, GUARDRAIL), scp=True),
    "repl": Subject((REPLICATION_PERMISSIONS,), scp=True),
    "maint": Subject((), scp=False),
    "recovery": Subject((RECOVERY_PERMISSIONS,), scp=True),
    "breakglass": Subject((ADMIN_ACCESS,), scp=True),
    "deploy": Subject((ADMIN_ACCESS, GUARDRAIL), scp=True),
    "source": Subject((ADMIN_ACCESS,), scp=True),
    "other": Subject((ADMIN_ACCESS,), scp=False),
    "srcdeploy": Subject((ADMIN_ACCESS,), scp=True),  # the source account's deploy role (no guardrail there)
}

RESOURCE_POLICIES: dict[str, tuple[str, ...]] = {
    # An S3 Tables table request is governed by the bucket policy AND the table policy.
    "replica-bucket": (BUCKET_POLICY, MAINTENANCE_BASELINE),
    "replica-table": (BUCKET_POLICY, TABLE_POLICY, MAINTENANCE_BASELINE),
    "recovery-bucket": (MAINTENANCE_BASELINE,),  # the kit puts no resource policy on the recovery bucket
    "recovery-table": (MAINTENANCE_BASELINE,),
    "replica-key": (REPLICA_KEY_POLICY,),
    "source-bucket": (SOURCE_BUCKET_POLICY,),
    "source-table": (SOURCE_BUCKET_POLICY,),  # the kit puts no table policy on source tables
    "kit-role": (),
    "own-role": (),
}


def load() -> KitConfig:
    return load_config(CONFIG_PATH)


def kit_policies(cfg: KitConfig) -> dict[str, Any]:
    """Every document of the topology by name, with the table policy built for the concrete replica table."""
    docs = {d.name: d.document for d in policy_documents.build_documents(cfg)}
    replica = next(r for r in cfg.replicas if r.bucket_arn == REPLICA_BUCKET)
    docs[TABLE_POLICY] = policy_documents.replica_table_policy_for(cfg, replica, REPLICA_TABLE)
    return docs


def all_policies(kit: Mapping[str, Any]) -> dict[str, Any]:
    return {**copy.deepcopy(dict(kit)), **WORLD_POLICIES}


def case_id(principal: str, resource: str, action: str) -> str:
    return f"{principal}:{resource}:{action}"


def request(principal: str, resource: str, action: str, *, variant: str = "") -> SimRequest:
    """The request of one matrix case. `variant` namespaces the kit's documents (and the id) so that several
    mutated copies of the documents are evaluated in one batch; the world's policies are shared."""
    arn, service = RESOURCES[resource]
    who = PRINCIPALS[principal]
    subject = SUBJECTS[principal]
    ctx = principal_context(who, source_account=REPLICA_ACCOUNT)
    if service == "kms":
        ctx["kms:ResourceAliases"] = [REPLICA_KEY_ALIAS]
        ctx[f"aws:ResourceTag/{REPLICA_KEY_TAG}"] = "lakehouse"  # the tag the kit puts on replica keys
        if principal == "maint" and action in ("kms:Decrypt", "kms:GenerateDataKey"):
            ctx["kms:EncryptionContext:aws:s3:arn"] = REPLICA_TABLE
    if service == "iam":
        ctx["iam:PassedToService"] = REPLICATION_SERVICE
    full_action = action if ":" in action else f"{service}:{action}"

    def ns(name: str) -> str:
        return name if name.startswith("world:") or not variant else f"{variant}|{name}"

    scps = tuple(ScpLevel(lvl.org_identifier, tuple(ns(n) for n in lvl.policies)) for lvl in _scp_levels())
    return SimRequest(
        id=(f"{variant}|" if variant else "") + case_id(principal, resource, action),
        principal=who,
        action=full_action,
        resource=arn,
        resource_account=RESOURCE_ACCOUNTS.get(resource, REPLICA_ACCOUNT),
        context=ctx,
        identity_policies=tuple(ns(n) for n in subject.identity),
        scps=scps if subject.scp else (),
        resource_policies=tuple(ns(n) for n in RESOURCE_POLICIES[resource]),
    )


def own_request(
    cid: str,
    principal: str,
    action: str,
    resource: str,
    account: str,
    identity_policies: tuple[str, ...],
    resource_policies: tuple[str, ...],
    ctx: Mapping[str, Any] | None = None,
) -> SimRequest:
    """One request outside the matrix, no SCP binding it: its context the principal's own (`principal_context`)
    plus the case's keys `ctx`."""
    return SimRequest(
        id=cid,
        principal=principal,
        action=action,
        resource=resource,
        resource_account=account,
        context={**principal_context(principal), **(ctx or {})},
        identity_policies=identity_policies,
        resource_policies=resource_policies,
    )


def variant_policies(
    variants: Mapping[str, Mapping[str, Any]], world: Mapping[str, Any] = WORLD_POLICIES
) -> dict[str, Any]:
    """One policies map for several variants of the kit's documents (see `request(variant=...)`) next to the
    world's policies (shared by every variant)."""
    out: dict[str, Any] = dict(world)
    for label, kit in variants.items():
        for name, doc in kit.items():
            out[f"{label}|{name}" if label else name] = copy.deepcopy(doc)
    return out


def labelled(req: SimRequest, variant: str) -> SimRequest:
    """`req` of one variant of the documents (see `variant_policies`): its id and every kit document it names
    prefixed with the variant's label (the world's policies are shared)."""

    def ns(name: str) -> str:
        return name if name.startswith("world:") else f"{variant}|{name}"

    return dataclasses.replace(
        req,
        id=f"{variant}|{req.id}",
        identity_policies=tuple(ns(n) for n in req.identity_policies),
        scps=tuple(ScpLevel(s.org_identifier, tuple(ns(n) for n in s.policies)) for s in req.scps),
        resource_policies=tuple(ns(n) for n in req.resource_policies),
        rcps=tuple(ScpLevel(s.org_identifier, tuple(ns(n) for n in s.policies)) for s in req.rcps),
    )


def evaluate_variants(
    variants: Mapping[str, Mapping[str, Any]],
    requests: Sequence[SimRequest],
    world: Mapping[str, Any] = WORLD_POLICIES,
    processes: int = 1,
) -> dict[str, dict[str, simulate.SimResult]]:
    """Evaluate the requests of every variant of the documents in one batch (the simulator rejecting none):
    {variant label: {case id: result}}."""
    results = simulate.evaluate(variant_policies(variants, world), list(requests), processes=processes)
    errors = simulate.errors_of(results)
    assert not errors, "simulator rejected requests:\n" + "\n".join(errors[:20])
    out: dict[str, dict[str, simulate.SimResult]] = {label: {} for label in variants}
    for rid, res in results.items():
        label, _, cid = rid.rpartition("|") if "|" in rid else ("", "", rid)
        out[label][cid] = res
    return out


# ---------------------------------------------------------------- hand-written decision matrices ----

CELL = {"A": simulate.ALLOWED, "D": simulate.EXPLICIT_DENY, "-": simulate.IMPLICIT_DENY}


def parse_matrix(
    text: str, order: Sequence[str] = PRINCIPAL_ORDER, groups: Mapping[str, Sequence[str]] | None = None
) -> dict[str, str]:
    """{case id: expected decision} of a hand-written matrix: a row per resource and action, a cell per principal of
    `order` (A allowed, D explicitly denied, - implicitly denied); blank and `#` lines are skipped. A row whose
    resource names one of `groups` stands for a row of each resource of that group."""
    expected: dict[str, str] = {}
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        row, action, *cells = line.split()
        assert len(cells) == len(order), f"row {row} {action}: {len(cells)} cells"
        for resource in (groups or {}).get(row, (row,)):
            for principal, cell in zip(order, cells, strict=True):
                cid = case_id(principal, resource, action)
                assert cid not in expected, f"duplicate row {resource} {action}"
                expected[cid] = CELL[cell]
    return expected


# ---------------------------------------------------------------- mutations of the built documents ----

Mutation = Callable[[dict[str, Any]], None]


def statements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["Statement"]  # type: ignore[no-any-return]


def drop_statement(doc: dict[str, Any], sid: str) -> None:
    before = len(doc["Statement"])
    doc["Statement"] = [s for s in doc["Statement"] if s.get("Sid") != sid]
    assert len(doc["Statement"]) == before - 1, f"no statement {sid} to drop"


def find(doc: dict[str, Any], sid: str) -> dict[str, Any]:
    return next(s for s in doc["Statement"] if s.get("Sid") == sid)


def drop_actions(doc: dict[str, Any], sid: str, actions: set[str]) -> None:
    stmt = find(doc, sid)
    acts = stmt["Action"] if isinstance(stmt["Action"], list) else [stmt["Action"]]
    kept = [a for a in acts if a not in actions]
    assert len(kept) < len(acts), f"{sid} carries none of {actions}"
    stmt["Action"] = kept


def drop_exempt_principal(doc: dict[str, Any], sid: str, arn: str) -> None:
    stmt = find(doc, sid)
    arns = stmt["Condition"]["ArnNotLike"]["aws:PrincipalArn"]
    arns = [arns] if isinstance(arns, str) else list(arns)
    assert arn in arns, f"{arn} is not exempt in {sid}"
    arns.remove(arn)
    stmt["Condition"]["ArnNotLike"]["aws:PrincipalArn"] = arns


def add_exempt_principal(doc: dict[str, Any], sid: str, arn: str) -> None:
    """The mutation that undoes a lock: `arn` exempt from `sid` again."""
    cond = find(doc, sid)["Condition"]["ArnNotLike"]
    arns = cond["aws:PrincipalArn"]
    cond["aws:PrincipalArn"] = sorted({*([arns] if isinstance(arns, str) else arns), arn})
