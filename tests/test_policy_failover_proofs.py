"""Proofs of the failover documents with the real IAM evaluator (@cloud-copilot/iam-simulate).

The world is examples/failover/multi-account.toml after promoting `lakehouse-replica-euc1` (222222222222,
eu-central-1): it replicates to the remaining replica `lakehouse-replica-use1` (same account, us-east-1) and to a new
bucket; `lakehouse-replica-apse2` (333333333333) stays a replica of the failed source. Every row of MATRIX is written
by hand from the intent, never computed from `policies/`:

- writers (`lakehouse-writer`) write the promoted tables and create namespaces and tables; everything else the
  replica rules deny (deletion, retention, encryption, replication changes, disassociation, tags, policy rewrites)
  is break-glass only on the promoted bucket, in every layer: it holds the only writable copy of the data.
  The deploy role keeps one action there, creating the replication from it (`PutTableBucketReplication`), and the
  failed source's replication role keeps nothing (no exemption, no grant);
- a table of the promoted bucket that was NOT promoted is still a protected replica (writers cannot write it, and
  nor can the failed source's replication role any more);
- the destinations are protected replicas written only by the failover replication role (the failed source's role
  can no longer write them); the retained replica keeps its protection and its (old) replication role.

Cells: A = Allowed, D = explicitly denied, - = implicitly denied. Columns: adm = administrator (no guardrail), eng =
data engineer (guardrail), wri = writer role (no guardrail), frp = failover replication role, rep = the failed
source's replication role, mnt = maintenance service, bgl = break-glass, dep = deploy role (guardrail), oth = an
unrelated account.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies import failover as FO
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.parts import with_parts
from s3tables_kit.policies.simulate import (
    ALLOWED,
    EXPLICIT_DENY,
    IMPLICIT_DENY,
    ScpLevel,
    SimRequest,
    SimResult,
    principal_context,
)
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.failover import failover_topology
from tests import policy_fixtures

pytestmark = pytest.mark.node

CONFIG = policy_fixtures.ROOT / "examples" / "failover" / "multi-account.toml"
# the promotion's documents: a guardrail is carried with every part it is deployed in (`s3tables_kit.policies.parts`)
CANDIDATES = frozenset(d.name for d in build(load_config(CONFIG)).all())
PROMOTED_ACCOUNT = "222222222222"
RETAINED_ACCOUNT = "333333333333"
PROMOTED_BUCKET = "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-replica-euc1"
PROMOTED_TABLE = PROMOTED_BUCKET + "/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
UNPROMOTED_TABLE = PROMOTED_BUCKET + "/table/7a2b3c4d-5e6f-4a7b-8c9d-223344556677"
DEST_BUCKET = "arn:aws:s3tables:us-east-1:222222222222:bucket/lakehouse-replica-use1"
DEST_TABLE = DEST_BUCKET + "/table/8b3c4d5e-6f7a-4b8c-9d0e-334455667788"
NEW_BUCKET = "arn:aws:s3tables:ap-southeast-2:333333333333:bucket/lakehouse-failover-apse2"
NEW_TABLE = NEW_BUCKET + "/table/0d5e6f7a-8b9c-4d0e-9f2a-556677889900"
RETAINED_BUCKET = "arn:aws:s3tables:ap-southeast-2:333333333333:bucket/lakehouse-replica-apse2"
RETAINED_TABLE = RETAINED_BUCKET + "/table/9c4d5e6f-7a8b-4c9d-8e1f-445566778899"

PRINCIPALS: dict[str, str] = {
    "admin": "arn:aws:iam::222222222222:role/Administrator",
    "engineer": "arn:aws:iam::222222222222:role/data-engineer",
    "writer": "arn:aws:iam::222222222222:role/lakehouse-writer",
    "frepl": "arn:aws:iam::222222222222:role/lakehouse-fo-s3tables-replication",
    "repl": "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication",
    "maint": policy_fixtures.MAINTENANCE,
    "breakglass": "arn:aws:iam::222222222222:role/s3tables-break-glass",
    "deploy": "arn:aws:iam::222222222222:role/terraform-deploy",
    "other": "arn:aws:iam::555555555555:role/Administrator",
    # not a matrix column: the deploy role of the new bucket's account (multi-step proofs below)
    "deploy3": "arn:aws:iam::333333333333:role/terraform-deploy",
}
ORDER = ("admin", "engineer", "writer", "frepl", "repl", "maint", "breakglass", "deploy", "other")

# Document names: literals (policies/rendered/multi-account/failover--lakehouse-replica-euc1--*.json).
P = "failover--lakehouse-replica-euc1--"
PROMOTED_POLICY = P + "bucket-policy"
PROMOTED_TABLE_POLICY = P + "table-policy"
UNPROMOTED_TABLE_POLICY = "replica-table-policy--lakehouse-replica-euc1"
DEST_POLICY = P + "replica-bucket-policy--lakehouse-replica-use1"
DEST_TABLE_POLICY = P + "replica-table-policy--lakehouse-replica-use1"
NEW_POLICY = P + "replica-bucket-policy--lakehouse-failover-apse2"
NEW_TABLE_POLICY = P + "replica-table-policy--lakehouse-failover-apse2"
RETAINED_POLICY = "replica-bucket-policy--lakehouse-replica-apse2"
RETAINED_TABLE_POLICY = "replica-table-policy--lakehouse-replica-apse2"
GUARDRAIL = P + "replica-guardrail--222222222222"
GUARDRAIL3 = P + "replica-guardrail--333333333333"
# the promotion's documents: a guardrail is carried with every part it is deployed in (`s3tables_kit.policies.parts`)
SCP = P + "scp-protect-replicas"
SCP_PROMOTED = P + "scp-protect-promoted"
SCP_GUARDS = P + "scp-protect-replica-guards"
FREPL_PERMISSIONS = P + "replication-role-permissions"
REPL_PERMISSIONS = "replication-role-permissions"

ENGINEER = policy_fixtures.ENGINEER_ACCESS
ADMIN = policy_fixtures.ADMIN_ACCESS
MAINT_BASELINE = "world:FailoverMaintenanceBaseline"
WORLD = {
    **policy_fixtures.WORLD_POLICIES,
    MAINT_BASELINE: policy_fixtures.maintenance_baseline([PROMOTED_BUCKET, DEST_BUCKET, NEW_BUCKET, RETAINED_BUCKET]),
}
IDENTITY: dict[str, tuple[str, ...]] = {
    "admin": (ADMIN,),
    "engineer": (ENGINEER, GUARDRAIL),
    "writer": (ENGINEER,),
    "frepl": (FREPL_PERMISSIONS,),
    "repl": (REPL_PERMISSIONS,),
    "maint": (),
    "breakglass": (ADMIN,),
    "deploy": (ADMIN, GUARDRAIL),
    "other": (ADMIN,),
    "deploy3": (ADMIN, GUARDRAIL3),
}
RESOURCES: dict[str, tuple[str, str, tuple[str, ...]]] = {  # name -> (ARN, account, resource policies)
    "promoted-bucket": (PROMOTED_BUCKET, PROMOTED_ACCOUNT, (PROMOTED_POLICY, MAINT_BASELINE)),
    "promoted-table": (PROMOTED_TABLE, PROMOTED_ACCOUNT, (PROMOTED_POLICY, PROMOTED_TABLE_POLICY, MAINT_BASELINE)),
    "unpromoted-table": (
        UNPROMOTED_TABLE,
        PROMOTED_ACCOUNT,
        (PROMOTED_POLICY, UNPROMOTED_TABLE_POLICY, MAINT_BASELINE),
    ),
    "dest-bucket": (DEST_BUCKET, PROMOTED_ACCOUNT, (DEST_POLICY, MAINT_BASELINE)),
    "dest-table": (DEST_TABLE, PROMOTED_ACCOUNT, (DEST_POLICY, DEST_TABLE_POLICY, MAINT_BASELINE)),
    "new-bucket": (NEW_BUCKET, RETAINED_ACCOUNT, (NEW_POLICY, MAINT_BASELINE)),
    "new-table": (NEW_TABLE, RETAINED_ACCOUNT, (NEW_POLICY, NEW_TABLE_POLICY, MAINT_BASELINE)),
    "retained-table": (
        RETAINED_TABLE,
        RETAINED_ACCOUNT,
        (RETAINED_POLICY, RETAINED_TABLE_POLICY, MAINT_BASELINE),
    ),
}
# fmt: off
MATRIX = """
# resource          action                                  adm eng wri frp rep mnt bgl dep oth
# ---- promoted tables: writers write; everything else break-glass only (the deploy role too) ----
promoted-table      PutTableData                            D   D   A   D   D   A   A   D   D
promoted-table      UpdateTableMetadataLocation             D   D   A   D   D   A   A   D   D
promoted-table      DeleteTable                             D   D   D   D   D   D   A   D   D
promoted-table      RenameTable                             D   D   D   D   D   D   A   D   D
promoted-table      PutTableRecordExpirationConfiguration   D   D   D   D   D   D   A   D   D
promoted-table      PutTableMaintenanceConfiguration        D   D   D   D   D   D   A   D   D
promoted-table      PutTablePolicy                          D   D   D   D   D   D   A   D   D
promoted-table      DeleteTablePolicy                       D   D   D   D   D   D   A   D   D
promoted-table      PutTableReplication                     D   D   D   D   D   D   A   D   D
promoted-table      DeleteTableReplication                  D   D   D   D   D   D   A   D   D
promoted-table      DisassociateTableReplication            D   D   D   D   D   D   A   D   D
promoted-table      PutTableEncryption                      D   D   D   D   D   D   A   D   D
promoted-table      PutTableStorageClass                    D   D   D   D   D   D   A   D   D
promoted-table      TagResource                             D   D   D   D   D   D   A   D   D
promoted-table      UntagResource                           D   D   D   D   D   D   A   D   D
promoted-table      GetTableData                            A   A   A   A   -   A   A   A   -
promoted-table      GetTable                                A   A   A   A   -   A   A   A   -
# ---- promoted bucket: writers create; the deploy role only creates the replication from it; rest break-glass ----
promoted-bucket     CreateTable                             D   D   A   D   D   D   A   D   D
promoted-bucket     CreateNamespace                         D   D   A   D   D   D   A   D   D
promoted-bucket     PutTableBucketReplication               D   D   D   D   D   D   A   A   D
promoted-bucket     DeleteTableBucketReplication            D   D   D   D   D   D   A   D   D
promoted-bucket     DeleteTableBucket                       D   D   D   D   D   D   A   D   D
promoted-bucket     DeleteNamespace                         D   D   D   D   D   D   A   D   D
promoted-bucket     PutTableBucketPolicy                    D   D   D   D   D   D   A   D   D
promoted-bucket     DeleteTableBucketPolicy                 D   D   D   D   D   D   A   D   D
promoted-bucket     PutTableBucketMaintenanceConfiguration  D   D   D   D   D   D   A   D   D
promoted-bucket     PutTableBucketEncryption                D   D   D   D   D   D   A   D   D
promoted-bucket     DeleteTableBucketEncryption             D   D   D   D   D   D   A   D   D
promoted-bucket     PutTableBucketStorageClass              D   D   D   D   D   D   A   D   D
promoted-bucket     PutTableBucketLogging                   D   D   D   D   D   D   A   D   D
# writers write data, never the promoted bucket's tags (the deploy role manages them)
promoted-bucket     TagResource                             D   D   D   D   D   D   A   A   D
promoted-bucket     ListTables                              A   A   A   A   -   A   A   A   -
# ---- a table of the promoted bucket that was not promoted: still a protected replica, no longer written ----
unpromoted-table    PutTableData                            D   D   D   D   D   A   A   D   D
unpromoted-table    UpdateTableMetadataLocation             D   D   D   D   D   A   A   D   D
unpromoted-table    DeleteTable                             D   D   D   D   D   D   A   D   D
unpromoted-table    PutTableMaintenanceConfiguration        D   D   D   D   D   D   A   D   D
unpromoted-table    DisassociateTableReplication            D   D   D   D   D   D   A   D   D
# ---- destination of the promoted source: written by the failover replication role only ----
dest-table          PutTableData                            D   D   D   A   D   A   A   D   D
dest-table          UpdateTableMetadataLocation             D   D   D   A   D   A   A   D   D
dest-table          PutTableMaintenanceConfiguration        D   D   D   A   D   D   A   D   D
dest-table          DeleteTable                             D   D   D   D   D   D   A   D   D
dest-table          RenameTable                             D   D   D   D   D   D   A   D   D
dest-table          PutTablePolicy                          D   D   D   D   D   D   A   D   D
dest-table          DisassociateTableReplication            D   D   D   D   D   D   A   D   D
dest-table          TagResource                             D   D   D   D   D   D   A   D   D
dest-table          GetTableData                            A   A   A   A   -   A   A   A   -
dest-bucket         CreateTable                             D   D   D   A   D   D   A   D   D
dest-bucket         CreateNamespace                         D   D   D   A   D   D   A   D   D
dest-bucket         DeleteTableBucket                       D   D   D   D   D   D   A   D   D
dest-bucket         PutTableBucketReplication               D   D   D   D   D   D   A   D   D
# locked after the first deploy (decision 0028): a destination's policy and settings are break-glass only
dest-bucket         PutTableBucketPolicy                    D   D   D   D   D   D   A   D   D
dest-bucket         PutTableBucketEncryption                D   D   D   D   D   D   A   D   D
dest-bucket         PutTableBucketMetricsConfiguration      D   D   D   D   D   D   A   D   D
dest-bucket         TagResource                             A   A   A   -   -   A   A   A   -
# ---- the retained replica (another account): unchanged protection, still written by the failed source's role ----
retained-table      PutTableData                            D   D   D   D   A   A   A   D   D
retained-table      DeleteTable                             D   D   D   D   D   D   A   D   D
retained-table      PutTableMaintenanceConfiguration        D   D   D   D   A   D   A   D   D
"""
# fmt: on


EXPECTED = policy_fixtures.parse_matrix(MATRIX, ORDER)


def load() -> KitConfig:
    return load_config(CONFIG)


def documents(cfg: KitConfig) -> dict[str, Any]:
    """The failover topology's documents (named as rendered) plus the unchanged replica documents they sit next to,
    with table policies built for the concrete tables of this world."""
    topo = failover_topology(cfg)
    by = {r.bucket: r for r in (*cfg.replicas, *topo.new_buckets)}
    docs = {d.name: d.document for d in policy_documents.build_documents(cfg)}
    docs.update({d.name: d.document for d in FO.failover_policy_docs(cfg, "lakehouse-replica-euc1")})
    fo = FO.failover_documents(cfg, "lakehouse-replica-euc1")
    docs[PROMOTED_TABLE_POLICY] = fo.table_policy(PROMOTED_TABLE)
    docs[UNPROMOTED_TABLE_POLICY] = policy_documents.replica_table_policy_for(
        cfg, by["lakehouse-replica-euc1"], UNPROMOTED_TABLE
    )
    docs[DEST_TABLE_POLICY] = FO.destination_table_policy(cfg, topo, by["lakehouse-replica-use1"], DEST_TABLE)
    docs[NEW_TABLE_POLICY] = FO.destination_table_policy(cfg, topo, by["lakehouse-failover-apse2"], NEW_TABLE)
    docs[RETAINED_TABLE_POLICY] = policy_documents.replica_table_policy_for(
        cfg, by["lakehouse-replica-apse2"], RETAINED_TABLE
    )
    return docs


def request(who: str, resource: str, action: str, variant: str = "") -> SimRequest:
    arn, account, resource_policies = RESOURCES[resource]

    def ns(name: str) -> str:
        return name if name.startswith("world:") or not variant else f"{variant}|{name}"

    own = PRINCIPALS[who].split(":")[4] if ":" in PRINCIPALS[who] else account
    # the promoted bucket's SCP is attached to its account alone; the others meet `DenyPromotedToOtherAccounts`
    promoted_scp = (ns(SCP_PROMOTED),) if own == PROMOTED_ACCOUNT else ()
    scps = (
        ScpLevel("r-root", (policy_fixtures.FULL_AWS_ACCESS,)),
        ScpLevel("ou-ab12-replicas1", (policy_fixtures.FULL_AWS_ACCESS, ns(SCP), ns(SCP_GUARDS))),
        ScpLevel(own, (policy_fixtures.FULL_AWS_ACCESS, *promoted_scp)),
    )
    return SimRequest(
        id=(f"{variant}|" if variant else "") + f"{who}:{resource}:{action}",
        principal=PRINCIPALS[who],
        action=f"s3tables:{action}",
        resource=arn,
        resource_account=account,
        context=principal_context(PRINCIPALS[who], source_account=account),
        identity_policies=tuple(ns(p) for n in IDENTITY[who] for p in with_parts(n, CANDIDATES)),
        scps=scps if who not in ("maint", "other") else (),
        resource_policies=tuple(ns(n) for n in resource_policies),
    )


def run(variants: dict[str, dict[str, Any]]) -> dict[str, dict[str, SimResult]]:
    reqs = [request(*cid.split(":", 2), variant=label) for label in variants for cid in EXPECTED]
    return policy_fixtures.evaluate_variants(variants, reqs, world=WORLD)


@pytest.fixture(scope="module")
def docs() -> dict[str, Any]:
    return documents(load())


@pytest.fixture(scope="module")
def baseline(docs: dict[str, Any]) -> dict[str, SimResult]:
    return run({"": docs})[""]


def test_every_case_matches_the_hand_written_matrix(baseline: dict[str, SimResult]) -> None:
    bad = {c: (EXPECTED[c], r.decision, r.denied_by) for c, r in baseline.items() if r.decision != EXPECTED[c]}
    assert not bad, f"{len(bad)} of {len(EXPECTED)} cases differ (case: expected, actual, denied by): {bad}"


def test_no_context_key_was_ignored(baseline: dict[str, SimResult]) -> None:
    assert not {c: r.ignored_context_keys for c, r in baseline.items() if r.ignored_context_keys}


def test_promoted_table_deletion_and_retention_are_denied_by_at_least_two_layers(
    baseline: dict[str, SimResult],
) -> None:
    for who in ("admin", "engineer", "writer", "deploy"):
        for action in ("DeleteTable", "PutTableMaintenanceConfiguration"):
            layers = {d.split(":", 1)[0] for d in baseline[f"{who}:promoted-table:{action}"].denied_by}
            assert len(layers) >= 2, (who, action, baseline[f"{who}:promoted-table:{action}"].denied_by)


def test_every_protected_action_has_a_promoted_row() -> None:
    from s3tables_kit.policies.actions import PROTECTION_RULES, TABLE_LEVEL

    covered = {c.split(":", 2)[2] for c in EXPECTED if ":promoted-" in c}
    rules = {r.sid: set(r.actions) for r in PROTECTION_RULES}
    for sid, actions in rules.items():
        assert actions & covered, f"{sid}: no promoted row"
    assert {"DeleteTable", "PutTableMaintenanceConfiguration", "PutTableData"} <= covered & TABLE_LEVEL


# ---------------------------------------------------------------- mutations ----
# Each breaks one statement of the failover documents; the flips are written by hand. A proof that still passes
# after its statement is removed would prove nothing.


def _drop_exempt(doc: str, sid: str, who: str) -> Callable[[dict[str, Any]], None]:
    return lambda docs: policy_fixtures.drop_exempt_principal(docs[doc], sid, PRINCIPALS[who])


def _drop(doc: str, sid: str) -> Callable[[dict[str, Any]], None]:
    return lambda docs: policy_fixtures.drop_statement(docs[doc], sid)


def _both(*ms: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(docs: dict[str, Any]) -> None:
        for m in ms:
            m(docs)

    return mutate


WRITER_WRITES = {f"writer:promoted-table:{a}" for a in ("PutTableData", "UpdateTableMetadataLocation")}

MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], dict[str, str]]] = {
    # Writers need every layer's exemption: each one alone stops them.
    "writer dropped from the promoted table policy": (
        _drop_exempt(PROMOTED_TABLE_POLICY, "DenyPromotedDataWrite", "writer"),
        dict.fromkeys(WRITER_WRITES, EXPLICIT_DENY),
    ),
    "writer dropped from the promoted bucket policy": (
        _drop_exempt(PROMOTED_POLICY, "DenyPromotedDataWrite", "writer"),
        {
            **dict.fromkeys(WRITER_WRITES, EXPLICIT_DENY),
        },
    ),
    "writer dropped from the promoted SCP": (
        _drop_exempt(SCP_PROMOTED, "DenyPromotedDataWriteAndNameSquatting", "writer"),
        {
            **dict.fromkeys(WRITER_WRITES, EXPLICIT_DENY),
            "writer:promoted-bucket:CreateTable": EXPLICIT_DENY,
            "writer:promoted-bucket:CreateNamespace": EXPLICIT_DENY,
        },
    ),
    # Deletion of a promoted table: with the table policy's deny gone, the bucket policy and the SCP still hold.
    "promoted table policy deletion deny removed": (_drop(PROMOTED_TABLE_POLICY, "DenyPromotedDeletion"), {}),
    # With the bucket and table policies' denies gone, the SCP holds everyone in the organisation; only the
    # service principal and the outside account change (as for replicas).
    "promoted deletion deny removed from the bucket and table policies": (
        _both(_drop(PROMOTED_POLICY, "DenyPromotedDeletion"), _drop(PROMOTED_TABLE_POLICY, "DenyPromotedDeletion")),
        {
            "maint:promoted-table:DeleteTable": ALLOWED,
            "maint:promoted-table:RenameTable": ALLOWED,
            "maint:promoted-table:PutTableRecordExpirationConfiguration": ALLOWED,
            "maint:promoted-bucket:DeleteTableBucket": ALLOWED,
            "maint:promoted-bucket:DeleteNamespace": ALLOWED,
            "other:promoted-table:DeleteTable": IMPLICIT_DENY,
            "other:promoted-table:RenameTable": IMPLICIT_DENY,
            "other:promoted-table:PutTableRecordExpirationConfiguration": IMPLICIT_DENY,
            "other:promoted-bucket:DeleteTableBucket": IMPLICIT_DENY,
            "other:promoted-bucket:DeleteNamespace": IMPLICIT_DENY,
            # removing a protective setting is a deletion (decision 0028)
            "maint:promoted-table:DeleteTablePolicy": ALLOWED,
            "maint:promoted-bucket:DeleteTableBucketPolicy": ALLOWED,
            "maint:promoted-bucket:DeleteTableBucketEncryption": ALLOWED,
            "other:promoted-table:DeleteTablePolicy": IMPLICIT_DENY,
            "other:promoted-bucket:DeleteTableBucketPolicy": IMPLICIT_DENY,
            "other:promoted-bucket:DeleteTableBucketEncryption": IMPLICIT_DENY,
        },
    ),
    # The failover replication role needs the destination's exemptions.
    "failover replication role dropped from the destination table policy": (
        _drop_exempt(DEST_TABLE_POLICY, "DenyReplicaDataWrite", "frepl"),
        {
            "frepl:dest-table:PutTableData": EXPLICIT_DENY,
            "frepl:dest-table:UpdateTableMetadataLocation": EXPLICIT_DENY,
        },
    ),
}


@pytest.fixture(scope="module")
def mutated(docs: dict[str, Any]) -> dict[str, dict[str, SimResult]]:
    variants: dict[str, dict[str, Any]] = {}
    for i, (mutate, _) in enumerate(MUTATIONS.values()):
        d = copy.deepcopy(docs)
        mutate(d)
        variants[f"m{i}"] = d
    return run(variants)


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_mutation_flips_exactly_the_expected_cases(
    name: str, mutated: dict[str, dict[str, SimResult]], baseline: dict[str, SimResult]
) -> None:
    i = list(MUTATIONS).index(name)
    _, flips = MUTATIONS[name]
    want = {**{c: baseline[c].decision for c in EXPECTED}, **flips}
    got = {c: r.decision for c, r in mutated[f"m{i}"].items()}
    diff = {c: (want[c], got[c]) for c in EXPECTED if got[c] != want[c]}
    assert not diff, f"{name}: (expected, actual) {diff}"


# ---------------------------------------------------------------- break-glass only: every layer, every step ----
# After a failover the promoted bucket holds the only writable copy: its retention, encryption, replication and
# policies change with break-glass only, in EVERY layer that applies to a principal; the deploy role keeps nothing
# there but creating the replication from it. Written from that intent, not from the documents.

ISSUE26_TABLE = (
    "PutTableMaintenanceConfiguration", "PutTableEncryption", "PutTableReplication", "DeleteTableReplication",
    "DisassociateTableReplication", "PutTablePolicy", "DeleteTablePolicy",
)  # fmt: skip
ISSUE26_BUCKET = (
    "PutTableBucketMaintenanceConfiguration", "PutTableBucketEncryption", "DeleteTableBucketEncryption",
    "PutTableBucketReplication", "DeleteTableBucketReplication", "PutTableBucketPolicy", "DeleteTableBucketPolicy",
)  # fmt: skip
DEPLOY_KEEPS = {("deploy", "promoted-bucket", "PutTableBucketReplication")}  # `cdktf deploy` creates the replication
IN_ORG = ("admin", "engineer", "writer", "frepl", "repl", "deploy")  # every principal the SCP binds
GUARDRAIL_CARRIERS = {"engineer": GUARDRAIL, "deploy": GUARDRAIL, "deploy3": GUARDRAIL3}
OTHER_ACCOUNTS_SID = "DenyPromotedToOtherAccounts"  # in `SCP`: the promoted bucket, read-only to other accounts
LAYER_OF_DOCUMENT = {  # layer -> the document holding it for the promoted bucket's own account
    "bucket policy": PROMOTED_POLICY,
    "table policy": PROMOTED_TABLE_POLICY,
    "guardrail": GUARDRAIL,
    "scp": SCP_PROMOTED,
}


def _flat(name: str) -> str:
    return "".join(ch for ch in name if ch.isalnum())


def layers_of(result: SimResult) -> set[str]:
    """The layers that explicitly denied a request, named from the deciding statements (`<type>:<policy>#<Sid>`;
    the simulator flattens resource-policy names)."""
    out: set[str] = set()
    for entry in result.denied_by:
        kind, _, rest = entry.partition(":")
        if kind == "scp":
            out.add("scp")
        elif kind == "identity":
            out.add("guardrail" if "replica-guardrail" in rest else "own policy")  # any part of it
        elif _flat(PROMOTED_TABLE_POLICY) in _flat(rest):
            out.add("table policy")
        elif _flat(PROMOTED_POLICY) in _flat(rest):
            out.add("bucket policy")
        else:
            out.add(entry)
    return out


def promised_layers(who: str, resource: str) -> set[str]:
    out = {"bucket policy", "scp"} | ({"table policy"} if resource.endswith("-table") else set())
    return out | ({"guardrail"} if who in GUARDRAIL_CARRIERS else set())


def issue26_cases() -> list[tuple[str, str, str]]:
    cases = [(who, "promoted-table", a) for who in IN_ORG for a in ISSUE26_TABLE]
    cases += [(who, "promoted-bucket", a) for who in IN_ORG for a in ISSUE26_BUCKET]
    return [c for c in cases if c not in DEPLOY_KEEPS]


def evaluate_cases(
    variants: dict[str, dict[str, Any]], cases: list[tuple[str, str, str]]
) -> dict[str, dict[str, SimResult]]:
    """{variant: {"<who>:<resource>:<action>": result}} for the same cases under each variant of the documents."""
    return policy_fixtures.evaluate_variants(
        variants, [request(*c, variant=label) for label in variants for c in cases], world=WORLD
    )


def missing_layers(results: dict[str, SimResult]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for who, resource, action in issue26_cases():
        res = results[f"{who}:{resource}:{action}"]
        gap = promised_layers(who, resource) - layers_of(res)
        if gap or res.decision != EXPLICIT_DENY:
            out[f"{who}:{resource}:{action}"] = sorted(gap) or [res.decision]
    return out


def without_issue26_actions(docs: dict[str, Any], layer: str) -> dict[str, Any]:
    """The documents with the break-glass-only actions dropped from every statement of one layer's promoted document (a
    statement left without actions goes)."""
    cut = copy.deepcopy(docs)
    doc = cut[LAYER_OF_DOCUMENT[layer]]
    names = {f"s3tables:{a}" for a in ISSUE26_TABLE + ISSUE26_BUCKET}
    kept, removed = [], 0
    for stmt in doc["Statement"]:
        if "Action" not in stmt:  # an allow-list (NotAction) of the kit's own resources: none of these actions
            kept.append(stmt)
            continue
        acts = stmt["Action"] if isinstance(stmt["Action"], list) else [stmt["Action"]]
        if stmt["Effect"] == "Deny" and names & set(acts):
            stmt["Action"] = [a for a in acts if a not in names]
            removed += len(acts) - len(stmt["Action"])
            if not stmt["Action"]:
                continue
        kept.append(stmt)
    assert removed, f"{layer}: no deploy-role deny to remove"
    doc["Statement"] = kept
    if layer == "scp":  # the organization's layer for the principals of the other accounts
        policy_fixtures.drop_statement(cut[SCP], OTHER_ACCOUNTS_SID)
    return cut


@pytest.fixture(scope="module")
def layered(docs: dict[str, Any]) -> dict[str, dict[str, SimResult]]:
    variants = {"base": docs} | {
        layer.replace(" ", "-"): without_issue26_actions(docs, layer) for layer in LAYER_OF_DOCUMENT
    }
    return evaluate_cases(variants, issue26_cases())


def test_promoted_retention_encryption_replication_and_policies_are_denied_by_every_layer(
    layered: dict[str, dict[str, SimResult]],
) -> None:
    """Every principal of the organisation but break-glass, the deploy role included, meets an explicit
    deny from every layer that applies to it for each of these actions on the promoted bucket and its tables."""
    assert len(issue26_cases()) == len(IN_ORG) * (len(ISSUE26_TABLE) + len(ISSUE26_BUCKET)) - len(DEPLOY_KEEPS)
    assert missing_layers(layered["base"]) == {}


@pytest.mark.parametrize("layer", sorted(LAYER_OF_DOCUMENT))
def test_removing_the_promoted_deny_from_one_layer_fails_the_proof(
    layered: dict[str, dict[str, SimResult]], layer: str
) -> None:
    """The proof above is not vacuous: without these actions in ONE layer's promoted document, it names exactly that
    layer as missing, for every principal that layer binds (and every action it carried)."""
    gaps = missing_layers(layered[layer.replace(" ", "-")])
    assert gaps, f"removing the deploy-role denies from the {layer} went unnoticed"
    assert {g for gap in gaps.values() for g in gap} == {layer}
    bound = {who for who in IN_ORG if layer in promised_layers(who, "promoted-table")}
    assert {c.split(":")[0] for c in gaps} == bound
    if layer != "table policy":  # the table policy holds table actions only
        assert {c.split(":")[1] for c in gaps} == {"promoted-bucket", "promoted-table"}


# ---- multi-step: rewrite a policy (step 1), then a destructive call (step 2) ----

REWRITES = {  # document -> (resource, the request that replaces it)
    PROMOTED_POLICY: ("promoted-bucket", "PutTableBucketPolicy"),
    PROMOTED_TABLE_POLICY: ("promoted-table", "PutTablePolicy"),
    DEST_POLICY: ("dest-bucket", "PutTableBucketPolicy"),
    DEST_TABLE_POLICY: ("dest-table", "PutTablePolicy"),
    NEW_POLICY: ("new-bucket", "PutTableBucketPolicy"),
    NEW_TABLE_POLICY: ("new-table", "PutTablePolicy"),
}
# From the intent: once deployed, no replica's policies are a deploy role's to rewrite (decision 0028: the bucket
# policy locks after the first deploy; the failover topology's new destination policies are a break-glass deploy),
# and never the promoted bucket's (the failover tool applies those as break-glass).
REWRITERS: dict[str, str] = {}
ATTACKERS = ("admin", "engineer", "writer", "deploy", "deploy3")
DESTRUCTIVE_TABLE = (
    "DeleteTable", "RenameTable", "PutTableRecordExpirationConfiguration", "PutTableMaintenanceConfiguration",
    "PutTableData", "UpdateTableMetadataLocation", "PutTableReplication", "DeleteTableReplication",
    "DisassociateTableReplication", "TagResource",
)  # fmt: skip
DESTRUCTIVE_BUCKET = ("DeleteTableBucket", "DeleteNamespace", "DeleteTableBucketReplication", "CreateTable")
PROMOTED_ONLY = {  # destructive on the promoted bucket, deploy-managed settings on a replica
    "promoted-table": ("PutTableEncryption",),
    "promoted-bucket": ("PutTableBucketMaintenanceConfiguration", "PutTableBucketEncryption",
                        "DeleteTableBucketEncryption", "PutTableBucketReplication"),
}  # fmt: skip
LEGIT = {  # what an attacker may do anyway: writers write and grow the promoted bucket; the deploy keeps its one
    ("writer", "promoted-table", "PutTableData"),
    ("writer", "promoted-table", "UpdateTableMetadataLocation"),
    ("writer", "promoted-bucket", "CreateTable"),
    *DEPLOY_KEEPS,
}


def destructive_cases(who: str) -> list[tuple[str, str, str]]:
    out = []
    for resource in ("promoted-table", "dest-table", "new-table"):
        out += [(who, resource, a) for a in DESTRUCTIVE_TABLE + PROMOTED_ONLY.get(resource, ())]
    for resource in ("promoted-bucket", "dest-bucket", "new-bucket"):
        out += [(who, resource, a) for a in DESTRUCTIVE_BUCKET + PROMOTED_ONLY.get(resource, ())]
    return [c for c in out if c not in LEGIT]


def allow_all_for(who: str, resource: str) -> dict[str, Any]:
    arn = RESOURCES[resource][0]
    bucket = arn.split("/table/")[0]
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": "AttackerAllowsItself", "Effect": "Allow", "Principal": {"AWS": PRINCIPALS[who]},
                       "Action": "s3tables:*", "Resource": [bucket, bucket + "/*"]}],
    }  # fmt: skip


def test_step_one_only_the_deploy_role_of_a_replica_rewrites_its_policies(docs: dict[str, Any]) -> None:
    """Nobody but break-glass rewrites the promoted bucket's or tables' policies: the deploy role is denied at the
    first step, explicitly; a destination's (existing or new) are locked after its first deploy (decision 0028)."""
    cases = [(who, *REWRITES[name]) for who in ATTACKERS for name in REWRITES]
    results = evaluate_cases({"s1": docs}, cases)["s1"]
    got = {(who, r, a): results[f"{who}:{r}:{a}"].decision for who, r, a in cases}
    want = {
        (who, *REWRITES[name]): ALLOWED if REWRITERS.get(name) == who else EXPLICIT_DENY
        for who in ATTACKERS
        for name in REWRITES
    }
    assert got == want
    for who in ATTACKERS:
        for name in (PROMOTED_POLICY, PROMOTED_TABLE_POLICY):
            res = results[f"{who}:{REWRITES[name][0]}:{REWRITES[name][1]}"]
            assert {"bucket policy", "scp"} <= layers_of(res), (who, name, res.denied_by)


def test_no_rewrite_an_actor_can_make_enables_a_destructive_step_two(docs: dict[str, Any]) -> None:
    """Each actor replaces every policy step 1 lets it replace with one granting itself everything; then every
    destructive call on the promoted bucket, the destination and the new bucket is still denied."""
    step1 = evaluate_cases({"s1": docs}, [(who, *REWRITES[name]) for who in ATTACKERS for name in REWRITES])["s1"]
    variants: dict[str, dict[str, Any]] = {}
    for who in ATTACKERS:
        mine = copy.deepcopy(docs)
        for name, (resource, action) in REWRITES.items():
            if step1[f"{who}:{resource}:{action}"].allowed:
                mine[name] = allow_all_for(who, resource)
        variants[who] = mine
    # blocked at step 1: no deploy role replaces any policy (the outsider chain never starts)
    assert all(variants[who] == docs for who in ATTACKERS)
    reqs = [request(*c, variant=who) for who in ATTACKERS for c in destructive_cases(who)]
    results = policy_fixtures.evaluate_variants(variants, reqs, world=WORLD)
    through = sorted(f"{who}|{cid}" for who, by_case in results.items() for cid, r in by_case.items() if r.allowed)
    assert not through, f"destructive calls allowed after a rewrite: {through}"


def test_even_a_rewritten_promoted_policy_leaves_the_deploy_role_two_layers() -> None:
    """Drift or a mistake: had the deploy role's rewrite of the promoted policies gone through, its guardrail and the
    promoted SCP still deny every break-glass-only call on the promoted bucket."""
    docs = documents(load())
    docs[PROMOTED_POLICY] = allow_all_for("deploy", "promoted-bucket")
    docs[PROMOTED_TABLE_POLICY] = allow_all_for("deploy", "promoted-table")
    cases = [c for c in destructive_cases("deploy") if c[1].startswith("promoted-")]
    results = evaluate_cases({"drift": docs}, cases)["drift"]
    for who, resource, action in cases:
        res = results[f"{who}:{resource}:{action}"]
        assert res.decision == EXPLICIT_DENY and {"guardrail", "scp"} <= layers_of(res), (resource, action, res)
