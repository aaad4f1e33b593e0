"""Proofs with a real IAM evaluator (@cloud-copilot/iam-simulate, AGPL-3.0, test-only).

Every row of MATRIX below was written by hand from the security intent, never computed from `policies/`:

- nobody but break-glass principals can delete a replica, shorten its retention or remove its protection;
- the replication role (source account) still creates and writes replicas;
- the S3 Tables maintenance service still writes replicas;
- the recovery role reads replicas and writes only the recovery bucket;
- the Terraform deploy role of a replica account may not change a replica's policies or settings once the bucket
  policy exists (the first deploy applies it last; a later change is a break-glass deploy), never delete;
- a source's replication (either level) is changed only by its deploy role and break-glass, and only the kit's
  replication role is passed to the replication service.

Cells: A = Allowed, D = explicitly denied, - = implicitly denied (nothing grants it). Columns: adm = administrator
in the replica account, eng = data engineer, rep = replication role, mnt = maintenance service, rec = recovery role,
bgl = break-glass role, dep = Terraform deploy role, src = a role in the source account, oth = an unrelated account,
sdp = the source account's deploy role.
Who each column is and which policies apply to it: tests/policy_fixtures.py. The whole matrix is one batch (one node
process).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

import pytest

from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, IMPLICIT_DENY, SimResult
from tests import policy_fixtures

pytestmark = pytest.mark.node

# fmt: off
MATRIX = """
# resource        action                                  adm eng rep mnt rec bgl dep src oth sdp
# ---- replica bucket: deletion, protection, replication and settings changes (bucket-level actions) ----
replica-bucket    DeleteTableBucket                       D   D   D   D   D   A   D   D   D   D
replica-bucket    DeleteNamespace                         D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketPolicy                    D   D   D   D   D   A   D   D   D   D
replica-bucket    DeleteTableBucketPolicy                 D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketReplication               D   D   D   D   D   A   D   D   D   D
replica-bucket    DeleteTableBucketReplication            D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketEncryption                D   D   D   D   D   A   D   D   D   D
replica-bucket    DeleteTableBucketEncryption             D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketMaintenanceConfiguration  D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketStorageClass              D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketLogging                   D   D   D   D   D   A   D   D   D   D
replica-bucket    PutTableBucketMetricsConfiguration      D   D   D   D   D   A   D   D   D   D
replica-bucket    DeleteTableBucketMetricsConfiguration   D   D   D   D   D   A   D   D   D   D
# ---- replica bucket: reads ----
replica-bucket    GetTableBucket                          A   A   -   A   A   A   A   -   -   -
replica-bucket    GetNamespace                            A   A   -   A   A   A   A   -   -   -
replica-bucket    ListNamespaces                          A   A   -   A   A   A   A   -   -   -
replica-bucket    ListTables                              A   A   -   A   A   A   A   -   -   -
replica-bucket    GetTableBucketPolicy                    A   A   -   A   -   A   A   -   -   -
replica-bucket    GetTableBucketMaintenanceConfiguration  A   A   -   A   -   A   A   -   -   -
# ---- replica bucket: only replication creates replicas (no name squatting; recovery never writes a replica) ----
replica-bucket    CreateNamespace                         D   D   A   D   D   A   D   D   D   D
replica-bucket    CreateTable                             D   D   A   D   D   A   D   D   D   D
# ---- replica tables: deletion, retention, data writes, protection, replication, settings ----
replica-table     DeleteTable                             D   D   D   D   D   A   D   D   D   D
replica-table     RenameTable                             D   D   D   D   D   A   D   D   D   D
replica-table     PutTableRecordExpirationConfiguration   D   D   D   D   D   A   D   D   D   D
replica-table     PutTableMaintenanceConfiguration        D   D   A   D   D   A   D   D   D   D
replica-table     PutTableData                            D   D   A   A   D   A   D   D   D   D
replica-table     UpdateTableMetadataLocation             D   D   A   A   D   A   D   D   D   D
replica-table     PutTablePolicy                          D   D   D   D   D   A   D   D   D   D
replica-table     DeleteTablePolicy                       D   D   D   D   D   A   D   D   D   D
replica-table     PutTableReplication                     D   D   D   D   D   A   D   D   D   D
replica-table     DeleteTableReplication                  D   D   D   D   D   A   D   D   D   D
replica-table     DisassociateTableReplication            D   D   D   D   D   A   D   D   D   D
replica-table     PutTableEncryption                      D   D   D   D   D   A   D   D   D   D
replica-table     PutTableStorageClass                    D   D   D   D   D   A   D   D   D   D
replica-table     TagResource                             D   D   D   D   D   A   D   D   D   D
replica-table     UntagResource                           D   D   D   D   D   A   D   D   D   D
# ---- replica tables: reads ----
replica-table     GetTable                                A   A   -   A   A   A   A   -   -   -
replica-table     GetTableMetadataLocation                A   A   -   A   A   A   A   -   -   -
replica-table     GetTableData                            A   A   A   A   A   A   A   -   -   -
replica-table     GetTableMaintenanceConfiguration        A   A   -   A   -   A   A   -   -   -
replica-table     GetTablePolicy                          A   A   -   A   -   A   A   -   -   -
replica-table     GetTableReplicationStatus               A   A   -   A   -   A   A   -   -   -
# ---- recovery target bucket: writable, no kit resource policy; the recovery role creates and reads ----
recovery-bucket   CreateNamespace                         A   A   -   A   A   A   A   -   -   -
recovery-bucket   CreateTable                             A   A   -   A   A   A   A   -   -   -
recovery-bucket   GetTableBucket                          A   A   -   A   A   A   A   -   -   -
recovery-bucket   GetNamespace                            A   A   -   A   A   A   A   -   -   -
recovery-bucket   ListNamespaces                          A   A   -   A   A   A   A   -   -   -
recovery-bucket   ListTables                              A   A   -   A   A   A   A   -   -   -
recovery-bucket   DeleteTableBucket                       A   A   -   A   -   A   A   -   -   -
recovery-bucket   DeleteNamespace                         A   A   -   A   -   A   A   -   -   -
recovery-bucket   PutTableBucketPolicy                    A   A   -   A   -   A   A   -   -   -
# ---- recovery target tables: the recovery role writes (and drops its own half-made target) ----
recovery-table    PutTableData                            A   A   -   A   A   A   A   -   -   -
recovery-table    UpdateTableMetadataLocation             A   A   -   A   A   A   A   -   -   -
recovery-table    DeleteTable                             A   A   -   A   A   A   A   -   -   -
recovery-table    GetTable                                A   A   -   A   A   A   A   -   -   -
recovery-table    GetTableMetadataLocation                A   A   -   A   A   A   A   -   -   -
recovery-table    GetTableData                            A   A   -   A   A   A   A   -   -   -
recovery-table    PutTableMaintenanceConfiguration        A   A   -   A   -   A   A   -   -   -
recovery-table    RenameTable                             A   A   -   A   -   A   A   -   -   -
recovery-table    PutTablePolicy                          A   A   -   A   -   A   A   -   -   -
# ---- the replica's KMS key: only named roles and break-glass use it; nobody but break-glass disables it, deletes it
#      or rewrites its policy (not even the deploy role) ----
replica-key       kms:Decrypt                             -   -   A   A   A   A   -   -   -   -
replica-key       kms:GenerateDataKey                     -   -   A   A   -   -   -   -   -   -
replica-key       kms:ScheduleKeyDeletion                 D   D   D   D   D   A   D   D   D   D
replica-key       kms:DisableKey                          D   D   D   D   D   A   D   D   D   D
replica-key       kms:PutKeyPolicy                        D   D   D   D   D   A   D   D   D   D
# ---- the source's replication (either level) and its guard: the source deploy role and break-glass only ----
source-bucket     PutTableBucketReplication               D   D   D   D   D   A   D   D   D   A
source-bucket     DeleteTableBucketReplication            D   D   D   D   D   A   D   D   D   A
source-table      PutTableReplication                     D   D   D   D   D   A   D   D   D   A
source-table      DeleteTableReplication                  D   D   D   D   D   A   D   D   D   A
source-bucket     PutTableBucketPolicy                    D   D   D   D   D   A   D   D   D   A
source-bucket     DeleteTableBucketPolicy                 D   D   D   D   D   A   D   D   D   A
# ---- passing a role to the replication service: only the kit's replication role ----
kit-role          iam:PassRole                            -   -   -   -   -   -   -   A   -   A
own-role          iam:PassRole                            D   D   D   -   D   -   D   D   -   D
"""
# fmt: on


EXPECTED = policy_fixtures.parse_matrix(MATRIX)

# Cases the simulator cannot decide, with the reason; each is proven another way below. The simulator only accepts
# variable context keys of the form `prefix/<name>`, so `kms:EncryptionContext:aws:s3:arn` (the key the S3 Tables
# maintenance grant in the KMS key policy is conditioned on) is dropped as "ignored" and the grant never matches.
SIMULATOR_LIMITS: dict[str, str] = {
    "maint:replica-key:kms:Decrypt": "kms:EncryptionContext:<key> is ignored by iam-simulate 0.1.173",
    "maint:replica-key:kms:GenerateDataKey": "kms:EncryptionContext:<key> is ignored by iam-simulate 0.1.173",
}


def _split(cid: str) -> tuple[str, str, str]:
    principal, resource, action = cid.split(":", 2)
    return principal, resource, action


def run_variants(variants: dict[str, dict[str, Any]], processes: int = 1) -> dict[str, dict[str, SimResult]]:
    """Evaluate the whole matrix against each variant of the documents in one batch."""
    requests = [policy_fixtures.request(*_split(cid), variant=label) for label in variants for cid in EXPECTED]
    return policy_fixtures.evaluate_variants(variants, requests, processes=processes)


def run(kit: dict[str, Any]) -> dict[str, SimResult]:
    return run_variants({"": kit})[""]


def mismatches(results: dict[str, SimResult]) -> dict[str, str]:
    """{case: actual decision} for every case whose decision differs from the hand-written expectation."""
    return {
        cid: results[cid].decision
        for cid, want in EXPECTED.items()
        if cid not in SIMULATOR_LIMITS and results[cid].decision != want
    }


@pytest.fixture(scope="module")
def kit() -> dict[str, Any]:
    return policy_fixtures.kit_policies(policy_fixtures.load())


@pytest.fixture(scope="module")
def baseline(kit: dict[str, Any]) -> dict[str, SimResult]:
    return run(kit)


# ---------------------------------------------------------------- the matrix ----


def test_matrix_is_large_and_covers_every_principal_and_protected_action() -> None:
    from s3tables_kit.policies.actions import PROTECTED_ACTIONS

    assert len(EXPECTED) >= 200
    assert {_split(c)[0] for c in EXPECTED} == set(policy_fixtures.PRINCIPALS)
    replica_actions = {_split(c)[2] for c in EXPECTED if _split(c)[1].startswith("replica-")}
    missing = set(PROTECTED_ACTIONS) - replica_actions
    assert not missing, f"protected actions without a row in MATRIX: {sorted(missing)}"


def test_zero_unexpected_allows(baseline: dict[str, SimResult]) -> None:
    bad = {c: r.decision for c, r in baseline.items() if r.allowed and EXPECTED[c] != ALLOWED}
    assert not bad, f"UNEXPECTED ALLOWS (security hole): {bad}"


def test_zero_broken_legitimate_paths(baseline: dict[str, SimResult]) -> None:
    bad = {
        c: (r.decision, r.denied_by)
        for c, r in baseline.items()
        if EXPECTED[c] == ALLOWED and not r.allowed and c not in SIMULATOR_LIMITS
    }
    assert not bad, f"legitimate paths broken: {bad}"


def test_every_case_matches_the_hand_written_matrix(baseline: dict[str, SimResult]) -> None:
    bad = {
        c: (EXPECTED[c], r.decision, r.denied_by)
        for c, r in baseline.items()
        if r.decision != EXPECTED[c] and c not in SIMULATOR_LIMITS
    }
    assert not bad, f"{len(bad)} of {len(EXPECTED)} cases differ (case: expected, actual, denied by): {bad}"


def test_no_proof_relies_on_a_context_key_the_simulator_ignored(baseline: dict[str, SimResult]) -> None:
    ignored = {c: r.ignored_context_keys for c, r in baseline.items() if r.ignored_context_keys}
    unexplained = {c: keys for c, keys in ignored.items() if c not in SIMULATOR_LIMITS}
    assert not unexplained, f"context keys dropped by the simulator: {unexplained}"
    # If a newer simulator understands the key, these cases must move back into the matrix proper.
    for case in SIMULATOR_LIMITS:
        assert "kms:EncryptionContext:aws:s3:arn" in ignored.get(case, ()), f"{case}: simulator limit is gone"


def test_maintenance_key_grant_matches_the_replica_tables(kit: dict[str, Any]) -> None:
    """The two SIMULATOR_LIMITS cases, proven structurally: the replica key policy lets exactly the maintenance
    service principal use the key for objects of this replica bucket, in this account."""
    import fnmatch

    stmt = policy_fixtures.find(kit[policy_fixtures.REPLICA_KEY_POLICY], "AllowS3TablesMaintenanceService")
    assert stmt["Effect"] == "Allow"
    assert stmt["Principal"] == {"Service": "maintenance.s3tables.amazonaws.com"}
    assert sorted(stmt["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert stmt["Condition"]["StringEquals"] == {"aws:SourceAccount": "222222222222"}
    pattern = stmt["Condition"]["StringLike"]["kms:EncryptionContext:aws:s3:arn"]
    assert fnmatch.fnmatchcase(policy_fixtures.REPLICA_TABLE, pattern)
    assert not fnmatch.fnmatchcase(policy_fixtures.RECOVERY_TABLE, pattern)
    assert not fnmatch.fnmatchcase(policy_fixtures.REPLICA_TABLE.replace("222222222222", "555555555555"), pattern)


@pytest.mark.parametrize(
    "case",
    [
        "repl:replica-bucket:CreateTable",
        "repl:replica-bucket:CreateNamespace",
        "repl:replica-table:PutTableData",
        "repl:replica-table:UpdateTableMetadataLocation",
        "repl:replica-table:PutTableMaintenanceConfiguration",
        "repl:replica-key:kms:GenerateDataKey",
        "maint:replica-table:PutTableData",
        "maint:replica-table:UpdateTableMetadataLocation",
        "recovery:replica-table:GetTableData",
        "recovery:recovery-bucket:CreateTable",
        "recovery:recovery-table:PutTableData",
        "recovery:replica-key:kms:Decrypt",
        "breakglass:replica-table:DeleteTable",
        "breakglass:replica-bucket:DeleteTableBucket",
        "srcdeploy:source-bucket:PutTableBucketReplication",
        "srcdeploy:source-table:PutTableReplication",
        "srcdeploy:kit-role:iam:PassRole",
    ],
)
def test_named_legitimate_path(baseline: dict[str, SimResult], case: str) -> None:
    assert baseline[case].decision == ALLOWED, baseline[case]


def test_denies_name_the_deciding_statement(baseline: dict[str, SimResult]) -> None:
    # The administrator's replica-table delete is stopped by every layer that applies to it.
    denied_by = " ".join(baseline["admin:replica-table:DeleteTable"].denied_by)
    assert "DenyReplicaDeletion" in denied_by  # bucket policy and table policy
    assert "scp:" in denied_by  # and the SCP
    denied_by = " ".join(baseline["engineer:replica-table:DeleteTable"].denied_by)
    assert "identity:" + policy_fixtures.GUARDRAIL in denied_by


# ---------------------------------------------------------------- mutations ----
# Each mutation breaks ONE exemption or removes ONE deny from the built documents; the expected flips are written
# by hand: {case: decision after the mutation}. Any other change, or a missing flip, fails the test.


def _mut_drop_exempt(doc: str, sid: str, principal: str) -> Callable[[dict[str, Any]], None]:
    return lambda kit: policy_fixtures.drop_exempt_principal(kit[doc], sid, policy_fixtures.PRINCIPALS[principal])


def _mut_drop_stmt(doc: str, sid: str) -> Callable[[dict[str, Any]], None]:
    return lambda kit: policy_fixtures.drop_statement(kit[doc], sid)


def _mut_drop_actions(doc: str, sid: str, *actions: str) -> Callable[[dict[str, Any]], None]:
    return lambda kit: policy_fixtures.drop_actions(kit[doc], sid, set(actions))


DISASSOCIATE = "s3tables:DisassociateTableReplication"


def _mut_drop_maintenance_exemption(doc: str, sid: str) -> Callable[[dict[str, Any]], None]:
    def mutate(kit: dict[str, Any]) -> None:
        del policy_fixtures.find(kit[doc], sid)["Condition"]["StringNotEqualsIfExists"]

    return mutate


def _mut_remove_deletion_everywhere(kit: dict[str, Any]) -> None:
    deletion = {
        "s3tables:DeleteTableBucket",
        "s3tables:DeleteNamespace",
        "s3tables:DeleteTable",
        "s3tables:RenameTable",
        "s3tables:PutTableRecordExpirationConfiguration",
    }
    for doc in (policy_fixtures.BUCKET_POLICY, policy_fixtures.TABLE_POLICY):
        policy_fixtures.drop_statement(kit[doc], "DenyReplicaDeletion")
    # The SCP and the guardrail merge rules with the same exemptions into one statement each.
    policy_fixtures.drop_actions(kit[policy_fixtures.SCP], "DenyReplicaDeletionAndReplicationChange", deletion)
    merged = "DenyReplicaDeletionAndRetentionChangeAndDataWriteAndReplicationChangeAndNameSquatting"
    policy_fixtures.drop_actions(kit[policy_fixtures.GUARDRAIL], merged, deletion)


def _mut_drop_repl_from_scp(kit: dict[str, Any]) -> None:
    policy_fixtures.drop_exempt_principal(
        kit[policy_fixtures.SCP],
        "DenyReplicaRetentionChangeAndDataWriteAndNameSquatting",
        policy_fixtures.PRINCIPALS["repl"],
    )


def _mut_detach(doc: str) -> Callable[[dict[str, Any]], None]:
    """A layer gone entirely (an allow-all document in its place keeps the request shape)."""

    def mutate(kit: dict[str, Any]) -> None:
        kit[doc] = {
            "Version": "2012-10-17",
            "Statement": [{"Sid": "Gone", "Effect": "Allow", "Action": "*", "Resource": "*"}],
        }

    return mutate


def _both(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(kit: dict[str, Any]) -> None:
        for m in mutations:
            m(kit)

    return mutate


def _mut_add_exempt(doc: str, sid: str, principal: str) -> Callable[[dict[str, Any]], None]:
    return lambda kit: policy_fixtures.add_exempt_principal(kit[doc], sid, policy_fixtures.PRINCIPALS[principal])


LOCKED_BUCKET_ACTIONS = (
    "PutTableBucketPolicy", "PutTableBucketEncryption", "PutTableBucketMaintenanceConfiguration",
    "PutTableBucketStorageClass", "PutTableBucketLogging", "PutTableBucketMetricsConfiguration",
)  # fmt: skip
LOCKED_TABLE_ACTIONS = ("PutTablePolicy", "PutTableEncryption", "PutTableStorageClass")
# removing a protective setting is a deletion (DenyReplicaDeletion): break-glass only in every layer
SETTING_REMOVAL = {
    "replica-bucket": (
        "DeleteTableBucketPolicy",
        "DeleteTableBucketEncryption",
        "DeleteTableBucketMetricsConfiguration",
    ),
    "replica-table": ("DeleteTablePolicy",),
}
SOURCE_REPLICATION = (
    ("source-bucket", "PutTableBucketReplication"),
    ("source-bucket", "DeleteTableBucketReplication"),
    ("source-table", "PutTableReplication"),
    ("source-table", "DeleteTableReplication"),
)

REPL_WRITES_DENIED = {
    "repl:replica-table:PutTableData": EXPLICIT_DENY,
    "repl:replica-table:UpdateTableMetadataLocation": EXPLICIT_DENY,
    "repl:replica-table:PutTableMaintenanceConfiguration": EXPLICIT_DENY,
}

DELETION_ACTIONS = {
    "replica-bucket": ("DeleteTableBucket", "DeleteNamespace"),
    "replica-table": ("DeleteTable", "RenameTable", "PutTableRecordExpirationConfiguration"),
}

BREAK_GLASS_PROTECTED = {
    "replica-bucket": (
        "DeleteTableBucket",
        "DeleteNamespace",
        "PutTableBucketPolicy",
        "DeleteTableBucketPolicy",
        "PutTableBucketReplication",
        "DeleteTableBucketReplication",
        "PutTableBucketEncryption",
        "DeleteTableBucketEncryption",
        "PutTableBucketMaintenanceConfiguration",
        "PutTableBucketStorageClass",
        "PutTableBucketLogging",
        "PutTableBucketMetricsConfiguration",
        "DeleteTableBucketMetricsConfiguration",
        "CreateNamespace",
        "CreateTable",
    ),
    "replica-table": (
        "DeleteTable",
        "RenameTable",
        "PutTableRecordExpirationConfiguration",
        "PutTableMaintenanceConfiguration",
        "PutTableData",
        "UpdateTableMetadataLocation",
        "PutTablePolicy",
        "DeleteTablePolicy",
        "PutTableReplication",
        "DeleteTableReplication",
        "DisassociateTableReplication",
        "PutTableEncryption",
        "PutTableStorageClass",
        "TagResource",
        "UntagResource",
    ),
}

MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], dict[str, str]]] = {
    # Replication breaks if ANY layer forgets the replication role: each layer is load-bearing on its own.
    "replication role dropped from the bucket-policy exemptions": (
        _both(
            _mut_drop_exempt(policy_fixtures.BUCKET_POLICY, "DenyReplicaDataWrite", "repl"),
            _mut_drop_exempt(policy_fixtures.BUCKET_POLICY, "DenyReplicaRetentionChange", "repl"),
        ),
        REPL_WRITES_DENIED,
    ),
    "replication role dropped from the bucket-policy data-write exemption only": (
        _mut_drop_exempt(policy_fixtures.BUCKET_POLICY, "DenyReplicaDataWrite", "repl"),
        {
            "repl:replica-table:PutTableData": EXPLICIT_DENY,
            "repl:replica-table:UpdateTableMetadataLocation": EXPLICIT_DENY,
        },
    ),
    "replication role dropped from the table-policy exemptions": (
        _both(
            _mut_drop_exempt(policy_fixtures.TABLE_POLICY, "DenyReplicaDataWrite", "repl"),
            _mut_drop_exempt(policy_fixtures.TABLE_POLICY, "DenyReplicaRetentionChange", "repl"),
        ),
        REPL_WRITES_DENIED,
    ),
    "replication role dropped from the SCP exemption": (
        _mut_drop_repl_from_scp,
        {
            **REPL_WRITES_DENIED,
            # the SCP merges name squatting into the same statement
            "repl:replica-bucket:CreateNamespace": EXPLICIT_DENY,
            "repl:replica-bucket:CreateTable": EXPLICIT_DENY,
        },
    ),
    "cross-account grant to the replication role removed from the bucket policy": (
        _mut_drop_stmt(policy_fixtures.BUCKET_POLICY, "AllowSourceReplicationRoleWriteReplicas"),
        {
            "repl:replica-table:PutTableData": IMPLICIT_DENY,
            "repl:replica-table:UpdateTableMetadataLocation": IMPLICIT_DENY,
            "repl:replica-table:PutTableMaintenanceConfiguration": IMPLICIT_DENY,
            "repl:replica-table:GetTableData": IMPLICIT_DENY,
        },
    ),
    "maintenance service exemption removed from the table policy": (
        _mut_drop_maintenance_exemption(policy_fixtures.TABLE_POLICY, "DenyReplicaDataWrite"),
        {
            "maint:replica-table:PutTableData": EXPLICIT_DENY,
            "maint:replica-table:UpdateTableMetadataLocation": EXPLICIT_DENY,
        },
    ),
    # The lock after the first deploy: the bucket policy alone denies the deploy role a policy or settings change
    # (the SCP and the guardrail exempt it for the first deploy); the table policy holds the table-level ones.
    "lock removed: the deploy role exempt again in the bucket policy": (
        _both(
            _mut_add_exempt(policy_fixtures.BUCKET_POLICY, "DenyReplicaProtectionChange", "deploy"),
            _mut_add_exempt(policy_fixtures.BUCKET_POLICY, "DenyReplicaBucketSettingsChange", "deploy"),
        ),
        {f"deploy:replica-bucket:{a}": ALLOWED for a in LOCKED_BUCKET_ACTIONS},
    ),
    "lock removed from the bucket and table policies": (
        _both(
            *(
                _mut_add_exempt(doc, sid, "deploy")
                for doc in (policy_fixtures.BUCKET_POLICY, policy_fixtures.TABLE_POLICY)
                for sid in ("DenyReplicaProtectionChange", "DenyReplicaBucketSettingsChange")
            )
        ),
        {
            **{f"deploy:replica-bucket:{a}": ALLOWED for a in LOCKED_BUCKET_ACTIONS},
            **{f"deploy:replica-table:{a}": ALLOWED for a in LOCKED_TABLE_ACTIONS},
        },
    ),
    # The source's replication: its bucket policy is the layer for principals no SCP reaches (the outside account,
    # a service); the guards SCP and the bucket policy each hold the principals of the organization.
    "source bucket policy's replication deny removed": (
        _mut_drop_stmt(policy_fixtures.SOURCE_BUCKET_POLICY, "DenySourceReplicationChange"),
        {f"{p}:{res}:{a}": IMPLICIT_DENY for p in ("maint", "other") for res, a in SOURCE_REPLICATION},
    ),
    "source replication denies removed from the source bucket policy and the guards SCP": (
        _both(
            _mut_drop_stmt(policy_fixtures.SOURCE_BUCKET_POLICY, "DenySourceReplicationChange"),
            _mut_drop_stmt(policy_fixtures.SCP_GUARDS, "DenySourceReplicationChange"),
        ),
        {
            **{f"source:{res}:{a}": ALLOWED for res, a in SOURCE_REPLICATION},
            # no grant for another account, and the replication role has no such permission: implicit
            **{
                f"{p}:{res}:{a}": IMPLICIT_DENY
                for p in ("admin", "engineer", "repl", "maint", "deploy", "other")
                for res, a in SOURCE_REPLICATION
            },
            # the recovery role: no flip, it denies itself every protected write outside the recovery bucket
        },
    ),
    "pass-role deny removed from the guards SCP": (
        _mut_drop_stmt(policy_fixtures.SCP_GUARDS, "DenyPassOtherReplicationRole"),
        {
            "source:own-role:iam:PassRole": ALLOWED,
            "srcdeploy:own-role:iam:PassRole": ALLOWED,
            **{f"{p}:own-role:iam:PassRole": IMPLICIT_DENY for p in ("admin", "repl", "recovery")},
        },
    ),
    "break-glass dropped from the SCP exemptions": (
        _both(
            *(
                _mut_drop_exempt(policy_fixtures.SCP, sid, "breakglass")
                for sid in (
                    "DenyReplicaDeletionAndReplicationChange",
                    "DenyReplicaRetentionChangeAndDataWriteAndNameSquatting",
                    "DenyReplicaProtectionChangeAndBucketSettingsChange",
                )
            ),
            _mut_drop_exempt(
                policy_fixtures.SCP_GUARDS, "DenyReplicaTagChange", "breakglass"
            ),  # the table-only denies' SCP
        ),
        {f"breakglass:{res}:{a}": EXPLICIT_DENY for res, acts in BREAK_GLASS_PROTECTED.items() for a in acts},
    ),
    # Removing one deny everywhere opens exactly the deletes, for exactly the principals whose IAM allows them.
    "DenyReplicaDeletion removed from every layer": (
        _mut_remove_deletion_everywhere,
        {
            **{
                f"{p}:{res}:{a}": ALLOWED
                for p in ("admin", "engineer", "maint", "deploy")
                for res, acts in DELETION_ACTIONS.items()
                for a in acts
            },
            **{
                f"{p}:{res}:{a}": IMPLICIT_DENY
                for p in ("repl", "source", "other", "srcdeploy")
                for res, acts in DELETION_ACTIONS.items()
                for a in acts
            },
            # recovery: still denied by its own DenyAllWritesToReplicas; break-glass: unchanged (allowed)
            # the removals of protective settings stay in the SCP and the guardrail: only the resource-policy-held
            # principals change
            **{f"maint:{res}:{a}": ALLOWED for res, acts in SETTING_REMOVAL.items() for a in acts},
            **{f"other:{res}:{a}": IMPLICIT_DENY for res, acts in SETTING_REMOVAL.items() for a in acts},
        },
    ),
    # Removing it from the bucket policy alone: the table policy still holds table deletes, the SCP still holds
    # every principal in the replica and source accounts; only the service principal and outside accounts change.
    "DenyReplicaDeletion removed from the bucket policy only": (
        _mut_drop_stmt(policy_fixtures.BUCKET_POLICY, "DenyReplicaDeletion"),
        {
            "maint:replica-bucket:DeleteTableBucket": ALLOWED,
            "maint:replica-bucket:DeleteNamespace": ALLOWED,
            "other:replica-bucket:DeleteTableBucket": IMPLICIT_DENY,
            "other:replica-bucket:DeleteNamespace": IMPLICIT_DENY,
            **{f"maint:replica-bucket:{a}": ALLOWED for a in SETTING_REMOVAL["replica-bucket"]},
            **{f"other:replica-bucket:{a}": IMPLICIT_DENY for a in SETTING_REMOVAL["replica-bucket"]},
        },
    ),
    "DenyReplicaDeletion removed from the bucket policy and the table policy": (
        _both(
            _mut_drop_stmt(policy_fixtures.BUCKET_POLICY, "DenyReplicaDeletion"),
            _mut_drop_stmt(policy_fixtures.TABLE_POLICY, "DenyReplicaDeletion"),
        ),
        {
            **{f"maint:{res}:{a}": ALLOWED for res, acts in DELETION_ACTIONS.items() for a in acts},
            **{f"other:{res}:{a}": IMPLICIT_DENY for res, acts in DELETION_ACTIONS.items() for a in acts},
            **{f"maint:{res}:{a}": ALLOWED for res, acts in SETTING_REMOVAL.items() for a in acts},
            **{f"other:{res}:{a}": IMPLICIT_DENY for res, acts in SETTING_REMOVAL.items() for a in acts},
        },
    ),
    "DenyReplicaRetentionChange removed from the bucket and table policies": (
        _both(
            _mut_drop_stmt(policy_fixtures.BUCKET_POLICY, "DenyReplicaRetentionChange"),
            _mut_drop_stmt(policy_fixtures.TABLE_POLICY, "DenyReplicaRetentionChange"),
        ),
        {
            "maint:replica-table:PutTableMaintenanceConfiguration": ALLOWED,
            "other:replica-table:PutTableMaintenanceConfiguration": IMPLICIT_DENY,
        },
    ),
    # Disassociation: every layer carries it. Removed from the bucket policy alone, the table policy still
    # denies everyone; removed from both resource policies, the maintenance service (held by them alone) is no longer
    # denied and the outside account falls back to the account boundary; removed from the SCP, the engineer and the
    # deploy role still meet the guardrail and everyone the resource policies. tests/test_policy_attacks.py shows
    # that each removal leaves some principal with one layer fewer than the design.
    "DisassociateTableReplication removed from the bucket and table policies": (
        _both(
            _mut_drop_actions(policy_fixtures.BUCKET_POLICY, "DenyReplicaReplicationChange", DISASSOCIATE),
            _mut_drop_actions(policy_fixtures.TABLE_POLICY, "DenyReplicaReplicationChange", DISASSOCIATE),
        ),
        {
            "maint:replica-table:DisassociateTableReplication": ALLOWED,
            "other:replica-table:DisassociateTableReplication": IMPLICIT_DENY,
        },
    ),
    "DisassociateTableReplication removed from the resource policies and the SCP": (
        _both(
            _mut_drop_actions(policy_fixtures.BUCKET_POLICY, "DenyReplicaReplicationChange", DISASSOCIATE),
            _mut_drop_actions(policy_fixtures.TABLE_POLICY, "DenyReplicaReplicationChange", DISASSOCIATE),
            _mut_drop_actions(policy_fixtures.SCP, "DenyReplicaDeletionAndReplicationChange", DISASSOCIATE),
        ),
        {
            # only the guardrail is left: whoever does not carry it (the administrator) and whose IAM allows it
            # gets through; that is why every layer carries the deny
            "admin:replica-table:DisassociateTableReplication": ALLOWED,
            "maint:replica-table:DisassociateTableReplication": ALLOWED,
            "source:replica-table:DisassociateTableReplication": IMPLICIT_DENY,
            "other:replica-table:DisassociateTableReplication": IMPLICIT_DENY,
            "srcdeploy:replica-table:DisassociateTableReplication": IMPLICIT_DENY,
            "repl:replica-table:DisassociateTableReplication": IMPLICIT_DENY,
        },
    ),
    # The key's own denies are backed by the guards SCP (and the guardrail) for every principal in a covered account:
    # removing one changes nothing for them; only the service principal and the outside account go from an explicit
    # to an implicit deny. Before the guards SCP, removing them let the administrator rewrite and disable the key.
    "replica key policy-change deny removed": (
        _mut_drop_stmt(policy_fixtures.REPLICA_KEY_POLICY, "DenyKeyPolicyChangeExceptBreakGlass"),
        {f"{p}:replica-key:kms:PutKeyPolicy": IMPLICIT_DENY for p in ("maint", "other")},
    ),
    "replica key deletion deny removed": (
        _mut_drop_stmt(policy_fixtures.REPLICA_KEY_POLICY, "DenyKeyDeletionExceptBreakGlass"),
        {
            f"{p}:replica-key:kms:{a}": IMPLICIT_DENY
            for p in ("maint", "other")
            for a in ("DisableKey", "ScheduleKeyDeletion")
        },
    ),
    "replica key deletion deny removed and the guards SCP detached": (
        _both(
            _mut_drop_stmt(policy_fixtures.REPLICA_KEY_POLICY, "DenyKeyDeletionExceptBreakGlass"),
            _mut_detach(policy_fixtures.SCP_GUARDS),
            _mut_drop_stmt(
                policy_fixtures.SCP, "DenyKitKeys"
            ),  # the kit's keys' allow-list (by their alias) in the first SCP
        ),
        {
            # the deploy role and the engineer still meet their guardrail; the administrator (no guardrail) gets
            # through: its layers were the key policy and the SCPs, exactly those removed
            "admin:replica-key:kms:DisableKey": ALLOWED,
            **{
                f"{p}:replica-key:kms:{a}": IMPLICIT_DENY
                for p in ("maint", "other", "recovery", "repl", "source", "srcdeploy")
                for a in ("DisableKey", "ScheduleKeyDeletion")
            },
            "admin:replica-key:kms:ScheduleKeyDeletion": IMPLICIT_DENY,
            # the guards SCP also held passing a role of one's own (the guardrail still holds its roles)
            "source:own-role:iam:PassRole": ALLOWED,
            "srcdeploy:own-role:iam:PassRole": ALLOWED,
            **{f"{p}:own-role:iam:PassRole": IMPLICIT_DENY for p in ("admin", "repl", "recovery")},
        },
    ),
}


@pytest.fixture(scope="module")
def mutated_results(kit: dict[str, Any]) -> dict[str, dict[str, SimResult]]:
    """Every mutation's copy of the documents, evaluated against the whole matrix in one batch."""
    variants: dict[str, dict[str, Any]] = {}
    for i, (_name, (mutate, _flips)) in enumerate(MUTATIONS.items()):
        mutated = copy.deepcopy(kit)
        mutate(mutated)
        variants[f"m{i}"] = mutated
    by_label = run_variants(variants, processes=os.cpu_count() or 1)
    return {name: by_label[f"m{i}"] for i, name in enumerate(MUTATIONS)}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_mutation_flips_exactly_the_named_cases(
    baseline: dict[str, SimResult], mutated_results: dict[str, dict[str, SimResult]], name: str
) -> None:
    _mutate, expected_flips = MUTATIONS[name]
    assert expected_flips, "a mutation must name the cases it flips"
    assert set(expected_flips) <= set(EXPECTED), f"unknown cases: {set(expected_flips) - set(EXPECTED)}"
    assert not mismatches(baseline), "baseline must match the matrix before mutating"
    flipped = mismatches(mutated_results[name])
    assert flipped == expected_flips, (
        f"{name}: unexpected flips {sorted(set(flipped.items()) - set(expected_flips.items()))}, "
        f"missing flips {sorted(set(expected_flips.items()) - set(flipped.items()))}"
    )


def test_redundant_layer_removal_flips_nothing(kit: dict[str, Any]) -> None:
    """Defence in depth: the table policy's DenyReplicaDeletion is also carried by the bucket policy (table/*), so
    removing it from the table policy alone changes no decision. (The table policy matters once the bucket policy
    is loosened: see the mutation removing it from both.)"""
    mutated = copy.deepcopy(kit)
    policy_fixtures.drop_statement(mutated[policy_fixtures.TABLE_POLICY], "DenyReplicaDeletion")
    assert mismatches(run(mutated)) == {}
