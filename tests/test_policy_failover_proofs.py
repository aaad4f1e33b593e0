"""Proofs of the failover documents (issue 17) with the real IAM evaluator (@cloud-copilot/iam-simulate).

The world is examples/failover/multi-account.toml after promoting `lakehouse-replica-euc1` (222222222222,
eu-central-1): it replicates to the remaining replica `lakehouse-replica-use1` (same account, us-east-1) and to a new
bucket; `lakehouse-replica-apse2` (333333333333) stays a replica of the failed source. Every row of MATRIX is written
by hand from the intent, never computed from `policies/`:

- writers (`lakehouse-writer`) write the promoted tables; nobody but break-glass deletes them or changes their
  retention; the deploy role keeps policy/settings changes and now configures replication from the promoted bucket;
- a table of the promoted bucket that was NOT promoted is still a protected replica (writers cannot write it);
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

from policies import documents as D
from policies import failover as FO
from policies.simulate import (
    ALLOWED,
    EXPLICIT_DENY,
    IMPLICIT_DENY,
    ScpLevel,
    SimRequest,
    SimResult,
    errors_of,
    evaluate,
    principal_context,
)
from tests import policy_fixtures as W
from topology.config import KitConfig, load_config
from topology.failover import failover_topology

pytestmark = pytest.mark.node

CONFIG = W.ROOT / "examples" / "failover" / "multi-account.toml"
PROMOTED_ACCOUNT = "222222222222"
RETAINED_ACCOUNT = "333333333333"
PROMOTED_BUCKET = "arn:aws:s3tables:eu-central-1:222222222222:bucket/lakehouse-replica-euc1"
PROMOTED_TABLE = PROMOTED_BUCKET + "/table/6f1b2c3d-4e5f-4a6b-9c8d-112233445566"
UNPROMOTED_TABLE = PROMOTED_BUCKET + "/table/7a2b3c4d-5e6f-4a7b-8c9d-223344556677"
DEST_BUCKET = "arn:aws:s3tables:us-east-1:222222222222:bucket/lakehouse-replica-use1"
DEST_TABLE = DEST_BUCKET + "/table/8b3c4d5e-6f7a-4b8c-9d0e-334455667788"
RETAINED_BUCKET = "arn:aws:s3tables:ap-southeast-2:333333333333:bucket/lakehouse-replica-apse2"
RETAINED_TABLE = RETAINED_BUCKET + "/table/9c4d5e6f-7a8b-4c9d-8e1f-445566778899"

PRINCIPALS: dict[str, str] = {
    "admin": "arn:aws:iam::222222222222:role/Administrator",
    "engineer": "arn:aws:iam::222222222222:role/data-engineer",
    "writer": "arn:aws:iam::222222222222:role/lakehouse-writer",
    "frepl": "arn:aws:iam::222222222222:role/lakehouse-fo-s3tables-replication",
    "repl": "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication",
    "maint": W.MAINTENANCE,
    "breakglass": "arn:aws:iam::222222222222:role/s3tables-break-glass",
    "deploy": "arn:aws:iam::222222222222:role/terraform-deploy",
    "other": "arn:aws:iam::555555555555:role/Administrator",
}
ORDER = tuple(PRINCIPALS)

# Document names: literals (policies/rendered/multi-account/failover--lakehouse-replica-euc1--*.json).
P = "failover--lakehouse-replica-euc1--"
PROMOTED_POLICY = P + "bucket-policy"
PROMOTED_TABLE_POLICY = P + "table-policy"
UNPROMOTED_TABLE_POLICY = "replica-table-policy--lakehouse-replica-euc1"
DEST_POLICY = P + "replica-bucket-policy--lakehouse-replica-use1"
DEST_TABLE_POLICY = P + "replica-table-policy--lakehouse-replica-use1"
RETAINED_POLICY = "replica-bucket-policy--lakehouse-replica-apse2"
RETAINED_TABLE_POLICY = "replica-table-policy--lakehouse-replica-apse2"
GUARDRAIL = P + "replica-guardrail--222222222222"
SCP = P + "scp-protect-replicas"
SCP_PROMOTED = P + "scp-protect-promoted"
SCP_GUARDS = P + "scp-protect-replica-guards"
FREPL_PERMISSIONS = P + "replication-role-permissions"
REPL_PERMISSIONS = "replication-role-permissions"

ENGINEER = W.ENGINEER_ACCESS
ADMIN = W.ADMIN_ACCESS
MAINT_BASELINE = "world:FailoverMaintenanceBaseline"
WORLD = {
    **W.WORLD_POLICIES,
    MAINT_BASELINE: W.maintenance_baseline([PROMOTED_BUCKET, DEST_BUCKET, RETAINED_BUCKET]),
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
    "retained-table": (
        RETAINED_TABLE,
        RETAINED_ACCOUNT,
        (RETAINED_POLICY, RETAINED_TABLE_POLICY, MAINT_BASELINE),
    ),
}
CELL = {"A": ALLOWED, "D": EXPLICIT_DENY, "-": IMPLICIT_DENY}

# fmt: off
MATRIX = """
# resource          action                                  adm eng wri frp rep mnt bgl dep oth
# ---- promoted tables: writers write; deletion and retention stay break-glass only ----
promoted-table      PutTableData                            D   D   A   D   D   A   A   D   D
promoted-table      UpdateTableMetadataLocation             D   D   A   D   D   A   A   D   D
promoted-table      DeleteTable                             D   D   D   D   D   D   A   D   D
promoted-table      RenameTable                             D   D   D   D   D   D   A   D   D
promoted-table      PutTableRecordExpirationConfiguration   D   D   D   D   D   D   A   D   D
promoted-table      PutTableMaintenanceConfiguration        D   D   D   D   D   D   A   D   D
promoted-table      PutTablePolicy                          D   D   D   D   D   D   A   A   D
promoted-table      DeleteTablePolicy                       D   D   D   D   D   D   A   A   D
promoted-table      PutTableReplication                     D   D   D   D   D   D   A   A   D
promoted-table      PutTableEncryption                      D   D   D   D   D   D   A   A   D
promoted-table      TagResource                             D   D   D   D   D   D   A   D   D
promoted-table      UntagResource                           D   D   D   D   D   D   A   D   D
promoted-table      GetTableData                            A   A   A   A   A   A   A   A   -
promoted-table      GetTable                                A   A   A   A   -   A   A   A   -
# ---- promoted bucket: writers create tables; replication from it is the deploy role's; deletion break-glass ----
promoted-bucket     CreateTable                             D   D   A   D   A   D   A   D   D
promoted-bucket     CreateNamespace                         D   D   A   D   A   D   A   D   D
promoted-bucket     PutTableBucketReplication               D   D   D   D   D   D   A   A   D
promoted-bucket     DeleteTableBucketReplication            D   D   D   D   D   D   A   A   D
promoted-bucket     DeleteTableBucket                       D   D   D   D   D   D   A   D   D
promoted-bucket     DeleteNamespace                         D   D   D   D   D   D   A   D   D
promoted-bucket     PutTableBucketPolicy                    D   D   D   D   D   D   A   A   D
promoted-bucket     PutTableBucketMaintenanceConfiguration  D   D   D   D   D   D   A   A   D
promoted-bucket     PutTableBucketLogging                   D   D   D   D   D   D   A   A   D
promoted-bucket     ListTables                              A   A   A   A   -   A   A   A   -
# ---- a table of the promoted bucket that was not promoted: still a protected replica ----
unpromoted-table    PutTableData                            D   D   D   D   A   A   A   D   D
unpromoted-table    UpdateTableMetadataLocation             D   D   D   D   A   A   A   D   D
unpromoted-table    DeleteTable                             D   D   D   D   D   D   A   D   D
unpromoted-table    PutTableMaintenanceConfiguration        D   D   D   D   A   D   A   D   D
unpromoted-table    DisassociateTableReplication            D   D   D   D   D   D   A   D   D
# ---- destination of the promoted source: written by the failover replication role only ----
dest-table          PutTableData                            D   D   D   A   D   A   A   D   D
dest-table          UpdateTableMetadataLocation             D   D   D   A   D   A   A   D   D
dest-table          PutTableMaintenanceConfiguration        D   D   D   A   D   D   A   D   D
dest-table          DeleteTable                             D   D   D   D   D   D   A   D   D
dest-table          RenameTable                             D   D   D   D   D   D   A   D   D
dest-table          PutTablePolicy                          D   D   D   D   D   D   A   A   D
dest-table          DisassociateTableReplication            D   D   D   D   D   D   A   D   D
dest-table          TagResource                             D   D   D   D   D   D   A   D   D
dest-table          GetTableData                            A   A   A   A   -   A   A   A   -
dest-bucket         CreateTable                             D   D   D   A   D   D   A   D   D
dest-bucket         CreateNamespace                         D   D   D   A   D   D   A   D   D
dest-bucket         DeleteTableBucket                       D   D   D   D   D   D   A   D   D
dest-bucket         PutTableBucketReplication               D   D   D   D   D   D   A   D   D
# ---- the retained replica (another account): unchanged protection, still written by the failed source's role ----
retained-table      PutTableData                            D   D   D   D   A   A   A   D   D
retained-table      DeleteTable                             D   D   D   D   D   D   A   D   D
retained-table      PutTableMaintenanceConfiguration        D   D   D   D   A   D   A   D   D
"""
# fmt: on


def parse(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        resource, action, *cells = line.split()
        assert len(cells) == len(ORDER), f"row {resource} {action}"
        for who, cell in zip(ORDER, cells, strict=True):
            cid = f"{who}:{resource}:{action}"
            assert cid not in out, cid
            out[cid] = CELL[cell]
    return out


EXPECTED = parse(MATRIX)


def load() -> KitConfig:
    return load_config(CONFIG)


def documents(cfg: KitConfig) -> dict[str, Any]:
    """The failover topology's documents (named as rendered) plus the unchanged replica documents they sit next to,
    with table policies built for the concrete tables of this world."""
    topo = failover_topology(cfg)
    by = {r.bucket: r for r in (*cfg.replicas, *topo.new_buckets)}
    docs = {d.name: d.document for d in D.build_documents(cfg)}
    docs.update({d.name: d.document for d in FO.failover_policy_docs(cfg, "lakehouse-replica-euc1")})
    fo = FO.failover_documents(cfg, "lakehouse-replica-euc1")
    docs[PROMOTED_TABLE_POLICY] = fo.table_policy(PROMOTED_TABLE)
    docs[UNPROMOTED_TABLE_POLICY] = D.replica_table_policy_for(cfg, by["lakehouse-replica-euc1"], UNPROMOTED_TABLE)
    docs[DEST_TABLE_POLICY] = FO.destination_table_policy(cfg, topo, by["lakehouse-replica-use1"], DEST_TABLE)
    docs[RETAINED_TABLE_POLICY] = D.replica_table_policy_for(cfg, by["lakehouse-replica-apse2"], RETAINED_TABLE)
    return docs


def request(who: str, resource: str, action: str, variant: str = "") -> SimRequest:
    arn, account, resource_policies = RESOURCES[resource]

    def ns(name: str) -> str:
        return name if name.startswith("world:") or not variant else f"{variant}|{name}"

    scps = (
        ScpLevel("r-root", (W.FULL_AWS_ACCESS,)),
        ScpLevel("ou-ab12-replicas1", (W.FULL_AWS_ACCESS, ns(SCP), ns(SCP_PROMOTED), ns(SCP_GUARDS))),
        ScpLevel(PRINCIPALS[who].split(":")[4] if ":" in PRINCIPALS[who] else account, (W.FULL_AWS_ACCESS,)),
    )
    return SimRequest(
        id=(f"{variant}|" if variant else "") + f"{who}:{resource}:{action}",
        principal=PRINCIPALS[who],
        action=f"s3tables:{action}",
        resource=arn,
        resource_account=account,
        context=principal_context(PRINCIPALS[who], source_account=account),
        identity_policies=tuple(ns(n) for n in IDENTITY[who]),
        scps=scps if who not in ("maint", "other") else (),
        resource_policies=tuple(ns(n) for n in resource_policies),
    )


def run(variants: dict[str, dict[str, Any]]) -> dict[str, dict[str, SimResult]]:
    policies: dict[str, Any] = dict(WORLD)
    for label, docs in variants.items():
        for name, d in docs.items():
            policies[f"{label}|{name}" if label else name] = copy.deepcopy(d)
    reqs = [request(*cid.split(":", 2), variant=label) for label in variants for cid in EXPECTED]
    results = evaluate(policies, reqs)
    errors = errors_of(results)
    assert not errors, "simulator rejected requests:\n" + "\n".join(errors[:20])
    out: dict[str, dict[str, SimResult]] = {label: {} for label in variants}
    for rid, res in results.items():
        label, _, cid = rid.rpartition("|") if "|" in rid else ("", "", rid)
        out[label][cid] = res
    return out


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
    from policies.actions import PROTECTION_RULES, TABLE_LEVEL

    covered = {c.split(":", 2)[2] for c in EXPECTED if ":promoted-" in c}
    rules = {r.sid: set(r.actions) for r in PROTECTION_RULES}
    for sid, actions in rules.items():
        assert actions & covered, f"{sid}: no promoted row"
    assert {"DeleteTable", "PutTableMaintenanceConfiguration", "PutTableData"} <= covered & TABLE_LEVEL


# ---------------------------------------------------------------- mutations ----
# Each breaks one statement of the failover documents; the flips are written by hand. A proof that still passes
# after its statement is removed would prove nothing.


def _drop_exempt(doc: str, sid: str, who: str) -> Callable[[dict[str, Any]], None]:
    return lambda docs: W.drop_exempt_principal(docs[doc], sid, PRINCIPALS[who])


def _drop(doc: str, sid: str) -> Callable[[dict[str, Any]], None]:
    return lambda docs: W.drop_statement(docs[doc], sid)


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
