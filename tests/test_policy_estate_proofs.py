"""Proofs over the estate (examples/estate.toml) with the IAM simulator (@cloud-copilot/iam-simulate).

Every row of MATRIX was written by hand from the intent, never computed from `policies/`:

- for EVERY protected bucket (the fan-in vault and the sales replica) and its tables, only break-glass deletes,
  shortens retention, disassociates, changes replication, changes bucket or table policies and settings (locked
  after the first deploy: not even the bucket's deploy role, decision 0028), or tags/untags the protection tag;
- fan-in confinement: in the vault each source's role creates and writes only the namespaces named after its own
  account (`acct<account id>_`): sales and marketing (one account, one deploy role: one trust domain) write each
  other's, ops writes neither and they do not write ops';
- each source's replication role creates and writes replicas in its own destinations only: all three in the vault,
  only sales in the sales replica. A fan-in grant does not let marketing's role (same account as the sales replica)
  or ops' role (another account) write where only sales replicates (design: docs/decisions/0026-estate.md);
- the maintenance service still writes; the recovery role reads the vault and writes only the recovery bucket;
- the SCPs match protected buckets by their tag: the simulator cannot read a bucket's tags, so a request on a tagged
  bucket carries `s3tables:TableBucketTag/kit-protection` in its request context (tests/estate_world.py), and the
  `*-untagged` resources are the same ARNs after the tag is gone: "untag, then delete" is denied at step 1 to all but
  break-glass, and step 2 would still be denied by the bucket, table and identity layers (and disassociation by the
  SCP's ARN pattern);
- a role named like a replication role is created only by break-glass and the sources' deploy roles; nobody but
  break-glass rewrites, deletes or assumes a replication role.

Cells: A allowed, D explicitly denied, - implicitly denied. Columns: tests/estate_world.py. One node process.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from s3tables_kit.policies import fan_in, simulate
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, SimResult
from tests import estate_world
from tests.policy_fixtures import drop_statement, evaluate_variants, parse_matrix

pytestmark = pytest.mark.node

# fmt: off
MATRIX = """
# resource              action                                  adm6 eng6 dep6 bg6 adm1 dep1 bg1 rS rM rO mnt rec oth
# ---- every protected site: each `protected-*` row stands for the vault's and the sales replica's bucket or table ----
protected-bucket        DeleteTableBucket                       D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        DeleteNamespace                         D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        PutTableBucketPolicy                    D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        DeleteTableBucketPolicy                 D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        PutTableBucketReplication               D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        DeleteTableBucketReplication            D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        PutTableBucketEncryption                D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        PutTableBucketMaintenanceConfiguration  D    D    D    A   D    D    A   D  D  D  D   D   D
# a fan-in replication row on the vault: sales and marketing share account 111111111111, so both write its namespaces
vault-bucket            CreateTable                             D    D    D    A   D    D    A   A  A  D  D   D   D
salesrep-bucket         CreateTable                             D    D    D    A   D    D    A   A  D  D  D   D   D
protected-bucket        TagResource[kit-protection]             D    D    D    A   D    D    A   D  D  D  D   D   D
protected-bucket        UntagResource[kit-protection]           D    D    D    A   D    D    A   D  D  D  D   D   D
protected-table         DeleteTable                             D    D    D    A   D    D    A   D  D  D  D   D   D
protected-table         RenameTable                             D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             PutTableMaintenanceConfiguration        D    D    D    A   D    D    A   A  A  D  D   D   D
salesrep-table          PutTableMaintenanceConfiguration        D    D    D    A   D    D    A   A  D  D  D   D   D
vault-table             PutTableData                            D    D    D    A   D    D    A   A  A  D  A   D   D
salesrep-table          PutTableData                            D    D    D    A   D    D    A   A  D  D  A   D   D
vault-table             UpdateTableMetadataLocation             D    D    D    A   D    D    A   A  A  D  A   D   D
salesrep-table          UpdateTableMetadataLocation             D    D    D    A   D    D    A   A  D  D  A   D   D
protected-table         PutTablePolicy                          D    D    D    A   D    D    A   D  D  D  D   D   D
protected-table         DeleteTableReplication                  D    D    D    A   D    D    A   D  D  D  D   D   D
protected-table         DisassociateTableReplication            D    D    D    A   D    D    A   D  D  D  D   D   D
protected-table         TagResource                             D    D    D    A   D    D    A   D  D  D  D   D   D
# ---- the vault (666666666666, fan-in from all three sources, tagged) ----
vault-bucket            DeleteTableBucketEncryption             D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket            PutTableBucketStorageClass              D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket            PutTableBucketLogging                   D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket            PutTableBucketMetricsConfiguration      D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket            DeleteTableBucketMetricsConfiguration   D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket            CreateNamespace                         D    D    D    A   D    D    A   A  A  A  D   D   D
# other tags of a protected bucket stay the deployment's business (not protected)
vault-bucket            TagResource[cost-center]                A    A    A    A   -    -    A   -  -  -  A   D   -
vault-bucket            GetTableBucket                          A    A    A    A   -    -    A   -  -  -  A   A   -
vault-bucket            ListTables                              A    A    A    A   -    -    A   -  -  -  A   A   -
vault-table             PutTableRecordExpirationConfiguration   D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             DeleteTablePolicy                       D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             PutTableReplication                     D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             PutTableEncryption                      D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             PutTableStorageClass                    D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             UntagResource                           D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table             GetTable                                A    A    A    A   -    -    A   -  -  -  A   A   -
vault-table             GetTableData                            A    A    A    A   -    -    A   A  A  D  A   A   -
# ---- fan-in confinement: a request for ops' namespace (555555555555's) in the vault: only ops' role writes it ----
vault-bucket-ops        CreateTable                             D    D    D    A   D    D    A   D  D  A  D   D   D
vault-table-ops         PutTableData                            D    D    D    A   D    D    A   D  D  A  A   D   D
vault-table-ops         UpdateTableMetadataLocation             D    D    D    A   D    D    A   D  D  A  A   D   D
vault-table-ops         PutTableMaintenanceConfiguration        D    D    D    A   D    D    A   D  D  A  D   D   D
# ---- the sales replica (111111111111, fed by sales only, tagged) ----
salesrep-bucket         CreateNamespace                         D    D    D    A   D    D    A   A  D  D  D   D   D
salesrep-bucket         GetTableBucket                          -    -    -    A   A    A    A   -  -  -  A   -   -
salesrep-table          GetTableData                            -    -    -    A   A    A    A   A  -  -  A   -   -
# ---- step 2 of "untag, then delete": the same buckets without their tag (`protected-untagged`: both sites) ----
vault-bucket-untagged   DeleteTableBucket                       D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket-untagged   PutTableBucketPolicy                    D    D    D    A   D    D    A   D  D  D  D   D   D
vault-bucket-untagged   CreateTable                             D    D    D    A   D    D    A   A  A  D  D   D   D
protected-untagged      DeleteTable                             D    D    D    A   D    D    A   D  D  D  D   D   D
vault-table-untagged    PutTableMaintenanceConfiguration        D    D    D    A   D    D    A   A  A  D  D   D   D
protected-untagged      DisassociateTableReplication            D    D    D    A   D    D    A   D  D  D  D   D   D
# ---- the recovery bucket (666666666666): writable, untagged, no kit resource policy ----
recovery-bucket         CreateTable                             A    A    A    A   -    -    -   -  -  -  A   A   -
recovery-table          PutTableData                            A    A    A    A   -    -    -   -  -  -  A   A   -
# ---- the replication roles: created only on the deploy path; never rewritten, deleted or assumed ----
imposter-role           iam:CreateRole                          D    D    -    -   D    A    A   D  D  D  -   D   -
sales-role              iam:UpdateAssumeRolePolicy              D    D    D    -   D    D    A   D  D  D  -   D   -
sales-role              iam:DeleteRole                          D    D    D    -   D    D    A   D  D  D  -   D   -
sales-role-assume       sts:AssumeRole                          D    D    D    -   D    D    -   D  D  D  -   D   -
"""
# fmt: on

PROTECTED_SITES = ("vault", "salesrep")
PROTECTED_ROWS = {  # a row of MATRIX naming one of these stands for a row of each protected site
    "protected-bucket": tuple(f"{site}-bucket" for site in PROTECTED_SITES),
    "protected-table": tuple(f"{site}-table" for site in PROTECTED_SITES),
    "protected-untagged": tuple(f"{site}-table-untagged" for site in PROTECTED_SITES),
}
EXPECTED = parse_matrix(MATRIX, estate_world.ORDER, PROTECTED_ROWS)


def _split(cid: str) -> tuple[str, str, str]:
    principal, resource, action = cid.split(":", 2)
    return principal, resource, action


def run_variants(variants: dict[str, dict[str, Any]]) -> dict[str, dict[str, SimResult]]:
    return run_cases(variants, list(EXPECTED))


def run_cases(variants: dict[str, dict[str, Any]], cases: list[str]) -> dict[str, dict[str, SimResult]]:
    requests = [estate_world.request(*_split(cid), variant=label) for label in variants for cid in cases]
    return evaluate_variants(variants, requests, estate_world.WORLD)


def mismatches(results: dict[str, SimResult]) -> dict[str, str]:
    return {cid: results[cid].decision for cid, want in EXPECTED.items() if results[cid].decision != want}


@pytest.fixture(scope="module")
def kit() -> dict[str, Any]:
    return estate_world.kit_documents(estate_world.load())


@pytest.fixture(scope="module")
def baseline(kit: dict[str, Any]) -> dict[str, SimResult]:
    return run_variants({"": kit})[""]


# ---------------------------------------------------------------- the matrix ----


def test_matrix_covers_every_protected_site_and_action() -> None:
    from s3tables_kit.policies.actions import BUCKET_LEVEL, PROTECTED_ACTIONS

    rows = {tuple(cid.split(":", 2)[1:]) for cid in EXPECTED}
    assert {p for p in estate_world.ORDER} == {cid.split(":", 1)[0] for cid in EXPECTED}
    vault_actions = {estate_world.split_action(a)[0].split(":", 1)[1] for r, a in rows if r.startswith("vault-")}
    assert set(PROTECTED_ACTIONS) <= vault_actions, sorted(set(PROTECTED_ACTIONS) - vault_actions)
    for site in PROTECTED_SITES:  # deletion, retention, disassociation, policy change, tag change on every site
        acts = {a for r, a in rows if r.startswith(site + "-")}
        for a in ("DeleteTableBucket", "DeleteTable", "PutTableMaintenanceConfiguration",
                  "DisassociateTableReplication", "PutTableBucketPolicy", "PutTablePolicy",
                  "UntagResource[kit-protection]", "TagResource[kit-protection]"):  # fmt: skip
            assert a in acts, (site, a)
    assert "DeleteTableBucket" in BUCKET_LEVEL and len(EXPECTED) >= 900


def test_every_case_matches_the_hand_written_matrix(baseline: dict[str, SimResult]) -> None:
    bad = mismatches(baseline)
    assert not bad, "\n".join(f"{cid}: expected {EXPECTED[cid]}, got {got}" for cid, got in sorted(bad.items()))


def test_no_proof_relies_on_a_context_key_the_simulator_ignored(baseline: dict[str, SimResult]) -> None:
    """The tag condition key is supplied as request context: the simulator must evaluate it, not drop it."""
    ignored = {cid: r.ignored_context_keys for cid, r in baseline.items() if r.ignored_context_keys}
    assert not ignored, ignored


def test_the_tag_matched_scp_denies_each_protected_site(baseline: dict[str, SimResult]) -> None:
    """The SCP layer really comes from the tag: an administrator's deletion on each tagged site is denied by the
    tag-matched SCP statement, and on the untagged copy it is not (other layers hold there)."""
    scp = f"scp:{estate_world.SCP}#DenyReplicaDeletionAndReplicationChange"
    for resource in ("vault-table", "salesrep-table"):
        assert scp in baseline[estate_world.case_id("adm6", resource, "DeleteTable")].denied_by
        assert scp not in baseline[estate_world.case_id("adm6", resource + "-untagged", "DeleteTable")].denied_by


def test_untagged_disassociation_is_still_denied_by_the_scps_arn_pattern(baseline: dict[str, SimResult]) -> None:
    """Whether AWS evaluates `s3tables:TableBucketTag` for DisassociateTableReplication is unverified: without the
    tag in the context the SCP's ARN-pattern statement denies it, for principals of both replica accounts."""
    by_arn = f"scp:{estate_world.SCP}#DenyReplicaDisassociationByAccount"
    for who in ("adm6", "dep6", "adm1", "dep1"):
        for resource in ("vault-table-untagged", "salesrep-table-untagged"):
            assert by_arn in baseline[estate_world.case_id(who, resource, "DisassociateTableReplication")].denied_by


def test_untagging_is_denied_by_two_layers(baseline: dict[str, SimResult]) -> None:
    """Step 1 of "untag, then delete": the guards SCP and the bucket's own policy each deny it."""
    for who, resource in (("adm6", "vault-bucket"), ("dep6", "vault-bucket"), ("dep1", "salesrep-bucket")):
        denied_by = set(baseline[estate_world.case_id(who, resource, "UntagResource[kit-protection]")].denied_by)
        assert f"scp:{estate_world.SCP_GUARDS}#DenyProtectionTagChange" in denied_by
        # resource policies are merged into one by the evaluator, which mangles their Sids: `<policy>X<Sid>`
        assert any(d.startswith("resource:") and d.endswith("DenyProtectionTagChange") for d in denied_by), denied_by


# ---------------------------------------------------------------- mutations: the proofs can fail ----


def _drop(doc: str, sid: str) -> Callable[[dict[str, Any]], None]:
    return lambda kit: drop_statement(kit[doc], sid)


def _all(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(kit: dict[str, Any]) -> None:
        for m in mutations:
            m(kit)

    return apply


MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    # one layer of two against untagging: nothing flips
    "scp-tag-guard-only": _drop(estate_world.SCP_GUARDS, "DenyProtectionTagChange"),
    # both layers against untagging
    "every-tag-guard": _all(
        _drop(estate_world.SCP_GUARDS, "DenyProtectionTagChange"),
        _drop(estate_world.VAULT_BUCKET_POLICY, "DenyProtectionTagChange"),
        _drop(estate_world.SALES_REPLICA_BUCKET_POLICY, "DenyProtectionTagChange"),
    ),
    # the tag-matched SCP statement alone: the bucket, table and identity layers still deny every deletion
    "scp-tag-statement": _drop(estate_world.SCP, "DenyReplicaDeletionAndReplicationChange"),
    # the vault's own deletion denies gone: the tag-matched SCP is then what stands, and only while the tag is there
    "vault-resource-deletion-denies": _all(
        _drop(estate_world.VAULT_BUCKET_POLICY, "DenyReplicaDeletion"),
        _drop(estate_world.VAULT_TABLE_POLICY, "DenyReplicaDeletion"),
    ),
    "role-creation-guard": _drop(estate_world.SCP_GUARDS, "DenyReplicationRoleCreation"),
}


@pytest.fixture(scope="module")
def mutated(kit: dict[str, Any]) -> dict[str, dict[str, str]]:
    variants: dict[str, dict[str, Any]] = {}
    for label, mutate in MUTATIONS.items():
        docs = copy.deepcopy(kit)
        mutate(docs)
        variants[label] = docs
    return {label: mismatches(results) for label, results in run_variants(variants).items()}


def test_a_redundant_layer_removed_flips_nothing(mutated: dict[str, dict[str, str]]) -> None:
    assert mutated["scp-tag-guard-only"] == {}
    assert mutated["scp-tag-statement"] == {}


def test_without_both_tag_guards_an_administrator_untags(mutated: dict[str, dict[str, str]]) -> None:
    flips = mutated["every-tag-guard"]
    assert flips[estate_world.case_id("adm6", "vault-bucket", "UntagResource[kit-protection]")] == ALLOWED
    assert flips[estate_world.case_id("dep6", "vault-bucket", "TagResource[kit-protection]")] == ALLOWED
    assert flips[estate_world.case_id("adm1", "salesrep-bucket", "UntagResource[kit-protection]")] == ALLOWED
    assert {cid.split(":", 2)[2] for cid in flips} == {"TagResource[kit-protection]", "UntagResource[kit-protection]"}


def test_without_its_own_denies_the_vault_rests_on_its_tag(mutated: dict[str, dict[str, str]]) -> None:
    """With the vault's bucket and table deletion denies gone, an administrator without the guardrail deletes only
    once the tag is gone: the tag-matched SCP denies the tagged vault, nothing denies the untagged one (which is why
    untagging is denied by two layers, and why the bucket and table policies stay)."""
    flips = mutated["vault-resource-deletion-denies"]
    assert estate_world.case_id("adm6", "vault-table", "DeleteTable") not in flips
    assert flips[estate_world.case_id("adm6", "vault-table-untagged", "DeleteTable")] == ALLOWED
    assert flips[estate_world.case_id("adm6", "vault-bucket-untagged", "DeleteTableBucket")] == ALLOWED
    # every other flip is on an untagged copy, or by a principal no SCP binds (maintenance, another organisation)
    no_scp = {"mnt", "oth"}
    assert all(r.endswith("-untagged") or p in no_scp for p, r, _ in map(_split, flips)), sorted(flips)


def test_without_the_creation_guard_an_administrator_creates_a_replication_named_role(
    mutated: dict[str, dict[str, str]],
) -> None:
    flips = mutated["role-creation-guard"]
    assert flips[estate_world.case_id("adm1", "imposter-role", "iam:CreateRole")] == ALLOWED
    assert {cid.split(":", 2)[1] for cid in flips} == {"imposter-role"}


def test_without_the_fan_in_statement_a_source_writes_another_accounts_namespaces(kit: dict[str, Any]) -> None:
    """The vault's one confinement statement is what keeps each account's sources out of the other's namespaces:
    without it sales' and marketing's roles write ops' namespace and ops' role writes sales', and nothing else
    flips (only the replication roles' requests on the vault are evaluated: nobody else meets the statement)."""
    docs = copy.deepcopy(kit)
    drop_statement(docs[estate_world.VAULT_BUCKET_POLICY], fan_in.CONFINEMENT_SID)
    cases = [cid for cid in EXPECTED if _split(cid)[0] in ("rS", "rM", "rO") and _split(cid)[1].startswith("vault-")]
    results = run_cases({"unconfined": docs}, cases)["unconfined"]
    flips = {cid: results[cid].decision for cid in cases if results[cid].decision != EXPECTED[cid]}
    writes = {"CreateTable", "PutTableData", "UpdateTableMetadataLocation", "PutTableMaintenanceConfiguration"}
    for who in ("rS", "rM"):
        assert all(flips[estate_world.case_id(who, f"vault-{k}-ops", a)] == ALLOWED for k, a in _OPS_WRITES), (
            who,
            flips,
        )
    assert flips[estate_world.case_id("rO", "vault-table", "PutTableData")] == ALLOWED
    assert flips[estate_world.case_id("rO", "vault-bucket", "CreateTable")] == ALLOWED
    for p, r, a in map(_split, flips):
        assert p in ("rS", "rM", "rO") and r.startswith("vault-") and (r.endswith("-ops") != (p == "rO")), (p, r, a)
        assert a in writes | {"GetTableData"}, (p, r, a)


_OPS_WRITES = (("bucket", "CreateTable"), ("table", "PutTableData"), ("table", "UpdateTableMetadataLocation"))


# ---------------------------------------------------------------- a chain through what a deploy role may change ----


def _allow_all(principal: str, bucket_arn: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Sid": "AttackerAllowsItself", "Effect": "Allow", "Principal": {"AWS": principal},
                       "Action": "s3tables:*", "Resource": [bucket_arn, bucket_arn + "/*"]}],
    }  # fmt: skip


CHAIN = (  # (who, the bucket policy it replaced at step 1, its steps 2 and 3 on the same site)
    ("dep6", estate_world.VAULT_BUCKET_POLICY, estate_world.VAULT, "vault"),
    ("dep1", estate_world.SALES_REPLICA_BUCKET_POLICY, estate_world.SALES_REPLICA, "salesrep"),
)


def test_a_deploy_role_cannot_rewrite_its_bucket_policy_nor_untag_or_delete_had_it(kit: dict[str, Any]) -> None:
    """Step 1, the deploy role replaces a protected bucket's policy with one allowing itself everything: denied by
    the bucket policy itself (locked after the first deploy, decision 0028), so the chain stops there. Had it been
    replaced anyway (a break-glass mistake): step 2, untag, the guards SCP still denies it; step 3, delete, denied by
    the tag-matched SCP, the table policy and its guardrail on the tagged bucket, and still by the table policy and
    the guardrail had the tag gone."""
    step1 = [estate_world.request(who, f"{site}-bucket", "PutTableBucketPolicy") for who, _, _, site in CHAIN]
    first = simulate.evaluate(estate_world.variant_policies({"": kit}), step1)
    assert all(r.decision == EXPLICIT_DENY for r in first.values()), first
    assert all(any(d.endswith("DenyReplicaProtectionChange") for d in r.denied_by) for r in first.values()), first
    variants: dict[str, dict[str, Any]] = {}
    requests: list[Any] = []
    for who, policy, bucket_arn, site in CHAIN:
        docs = copy.deepcopy(kit)
        docs[policy] = _allow_all(estate_world.PRINCIPALS[who].arn, bucket_arn)
        variants[who] = docs
        requests += [
            estate_world.request(who, f"{site}-bucket", "UntagResource[kit-protection]", variant=who),
            estate_world.request(who, f"{site}-table", "DeleteTable", variant=who),
            estate_world.request(who, f"{site}-table-untagged", "DeleteTable", variant=who),
            estate_world.request(who, f"{site}-table-untagged", "DisassociateTableReplication", variant=who),
        ]
    results = simulate.evaluate(estate_world.variant_policies(variants), requests)
    for who, _, _, site in CHAIN:
        untag = results[f"{who}|" + estate_world.case_id(who, f"{site}-bucket", "UntagResource[kit-protection]")]
        assert untag.decision == EXPLICIT_DENY and untag.denied_by == (
            f"scp:{who}|{estate_world.SCP_GUARDS}#DenyProtectionTagChange",
        )
        for resource, action, must in (
            (f"{site}-table", "DeleteTable", {"scp", "table policy", "guardrail"}),
            (f"{site}-table-untagged", "DeleteTable", {"table policy", "guardrail"}),
            (f"{site}-table-untagged", "DisassociateTableReplication", {"scp", "table policy", "guardrail"}),
        ):
            res = results[f"{who}|" + estate_world.case_id(who, resource, action)]
            assert res.decision == EXPLICIT_DENY, (who, resource, action)
            assert must <= _layers(res), (who, resource, action, res.denied_by)


def _layers(result: SimResult) -> set[str]:
    out = set()
    for entry in result.denied_by:
        kind, _, rest = entry.partition(":")
        if kind == "scp":
            out.add("scp")
        elif kind == "identity" and "replica-guardrail--" in rest:
            out.add("guardrail")
        elif "replicatablepolicy" in rest.replace("-", "").replace("|", ""):
            out.add("table policy")
        elif "replicabucketpolicy" in rest.replace("-", "").replace("|", ""):
            out.add("bucket policy")
    return out
