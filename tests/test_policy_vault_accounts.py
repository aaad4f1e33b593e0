"""Adopted lakes into a shared vault (`feeding_account`): each adopted account replicates into a bucket of its own in
the vault's account and Region, beside the estate's fan-in vault, whose namespaces follow the convention
(docs/decisions/0035-fan-in-by-account-namespaces.md, "Adopted lakes").

Expectations come from the intent, never from `policies/`: an account writes, creates or shadows nothing in another
account's bucket nor in the convention vault outside its namespaces, whatever its administrator grants its own roles
(an identity policy of `s3tables:*`, every write action of the IAM catalogue); each adopted replication role still
writes its own bucket; the recovery role reads every bucket of the vault and writes none. Two mutations show the
proof can fail: the buckets shared the way a fan-in vault is without its confinement, and the recovery role without
its reads of the account buckets. Sizes: no document of the vault grows with the number of feeding accounts.
Generated from examples/estate.toml (tests/vault_accounts_world.py); one node process.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies import estate, fan_in
from s3tables_kit.policies import lint as policy_lint
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.keys import key_sites, kms_key_policy
from s3tables_kit.policies.lint import lint_documents
from s3tables_kit.policies.simulate import ALLOWED, SimRequest, principal_context
from s3tables_kit.topology.config import KitConfig, parse_config
from s3tables_kit.topology.vault_accounts import recovery_reads
from tests.policy_fixtures import evaluate_variants, labelled
from tests.vault_accounts_world import (
    VAULT_ACCOUNT,
    account_bucket,
    adopted_account,
    estate_data,
    shared_vault,
    with_adopted,
)

A, B = adopted_account(0), adopted_account(1)
ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3tables:*", "Resource": "*"}]}
OUTSIDER = "arn:aws:iam::999999999999:role/estate-minted-s3tables-replication"
WRITES = ("Write", "Permissions management", "Tagging")


def _replica(cfg: KitConfig, bucket: str) -> Any:
    return next(r for r in cfg.replicas if r.bucket == bucket)


def _size(document: dict[str, Any]) -> int:
    return len(policy_documents.compact_json(document))


# ---------------------------------------------------------------- the record and its rules ----


def test_an_adopted_lake_feeds_the_vault_through_a_bucket_of_its_account() -> None:
    """Namespaces named `sales` in two accounts load: each account's bucket takes its sources only, so there is
    nothing to confine by namespace there; the convention vault and its documents stay as the example renders them;
    the recovery role reads every bucket of the vault, its own first."""
    cfg, plain = shared_vault(2), parse_config(estate_data(), "<estate>")
    mine = _replica(cfg, account_bucket(A))
    assert [s.namespaces[0].name for s in cfg.sources_into(mine)] == ["sales"]
    assert fan_in.confinement(cfg, mine) is None and not fan_in.is_fan_in(cfg, mine)
    vault = _replica(cfg, "estate-vault-euc1")
    assert policy_documents.replica_bucket_policy(cfg, vault) == policy_documents.replica_bucket_policy(plain, vault)
    assert [r.bucket for r in recovery_reads(cfg)] == ["estate-vault-euc1", account_bucket(A), account_bucket(B)]
    assert [r.bucket for r in recovery_reads(plain)] == ["estate-vault-euc1"]


def test_the_record_is_refused_where_it_would_not_confine() -> None:
    """Another account's source pointed at an account bucket, an account bucket away from the vault recovery reads,
    and an adopted namespace sent to the convention vault: one line each, naming the field."""
    data = with_adopted(estate_data(), 2)
    data["sources"][0]["replicate_to"].append(account_bucket(A))  # sales (111111111111) into A's bucket
    data["replicas"][-1]["region"] = "eu-west-1"  # B's bucket outside the vault's Region
    data["sources"][3]["replicate_to"].append("estate-vault-euc1")  # A's `sales` into the convention vault
    with pytest.raises(ValueError) as err:
        parse_config(data, "<bad>")
    text = str(err.value)
    assert (
        f"sources[0].replicate_to[2]: '{account_bucket(A)}' is account {A}'s bucket of the vault (feeding_account) "
        "and this source is in account 111111111111" in text
    )
    assert f"replicas[3].feeding_account: '{account_bucket(B)}' is in {VAULT_ACCOUNT}/eu-west-1, the vault " in text
    assert "sources[3].namespaces[0].name: namespace 'sales' must start with 'acct777777770000_'" in text
    assert "replicates into a bucket of its account's own instead (feeding_account)" in text


def test_no_document_of_the_vault_grows_with_its_feeding_accounts() -> None:
    """Each account bucket's bucket, table and key policies and the convention vault's are the same size with one
    feeding account or six, and so are the recovery role's grants on the account buckets; what grows per bucket is
    the recovery role's self-Deny of every replica's writes and the vault account's guardrail (every replica of an
    account, as in any topology). Six adopted accounts lint clean; the tenth table bucket of the vault's account and
    Region is refused by the quota."""
    rows = []
    for n in (1, 2, 4, 6):
        cfg = shared_vault(n)
        docs = {d.name: d.document for d in build(cfg).all()}
        first = account_bucket(A)
        grants = [
            s
            for s in docs["recovery-role-permissions"]["Statement"]
            if s["Sid"].startswith(("ReadVaultAccount", "DecryptVaultAccount"))
        ]
        rows.append(
            (
                n,
                _size(docs[f"replica-bucket-policy--{first}"]),
                _size(docs[f"replica-table-policy--{first}"]),
                _size(docs[f"kms-key-policy--{first}"]),
                _size(docs["replica-bucket-policy--estate-vault-euc1"]),
                len(policy_documents.compact_json({"Statement": grants})),
                _size(docs["recovery-role-permissions"]),
                _size(docs[f"replica-guardrail--{VAULT_ACCOUNT}"]),
            )
        )
        if n == 6:
            assert lint_documents(build(cfg)) == []
    print("\naccounts bucket table key vault recovery-grants recovery-role guardrail-666")
    for row in rows:
        print(" ".join(f"{v:>6}" for v in row))
    assert len({r[1:6] for r in rows}) == 1, rows  # constant whatever the number of feeding accounts
    with pytest.raises(ValueError) as err:
        shared_vault(9)
    assert f"11 table buckets in {VAULT_ACCOUNT}/eu-central-1 exceed the quota of 10" in str(err.value)


def test_the_key_policies_of_the_account_buckets_let_the_recovery_role_decrypt() -> None:
    cfg = shared_vault(2)
    for site in key_sites(cfg):
        if site.bucket in (account_bucket(A), account_bucket(B)):
            sids = [s["Sid"] for s in kms_key_policy(cfg, site)["Statement"]]
            assert "AllowRecoveryRoleReadReplica" in sids, site.bucket


# ---------------------------------------------------------------- the simulator ----


def _catalogue_writes() -> dict[str, list[str]]:
    """Every write-class s3tables action of the IAM catalogue, by the resource type it acts on."""
    actions, _types = policy_lint.service_catalogue("s3tables")
    out: dict[str, list[str]] = {"TableBucket": [], "Table": []}
    for a in actions.values():
        if a["accessLevel"] in WRITES:
            for r in a["resourceTypes"]:
                if r["name"] in out:
                    out[r["name"]].append(a["name"])
    return {k: sorted(v) for k, v in out.items()}


def _shared_like_a_fan_in(doc: dict[str, Any], cfg: KitConfig, own_role: str) -> dict[str, Any]:
    """The mutation: an account bucket's policy as a fan-in vault's without its confinement and account list (the
    replication roles by pattern, any account): what one bucket for every adopted lake would be."""
    out = copy.deepcopy(doc)
    pattern = estate.replication_role_pattern(cfg)
    for s in out["Statement"]:
        if s["Effect"] == "Allow" and s.get("Principal") == {"AWS": own_role}:
            s["Principal"], s["Condition"] = "*", {"ArnLike": {"aws:PrincipalArn": pattern}}
        exempt = s.get("Condition", {}).get("ArnNotLike", {}).get("aws:PrincipalArn")
        if isinstance(exempt, list) and own_role in exempt:
            exempt[exempt.index(own_role)] = pattern
    return out


def _request(rid: str, who: str, action: str, resource: str, identity: str, policies: tuple[str, ...]) -> SimRequest:
    ctx = principal_context(who)
    ctx["s3tables:namespace"] = "sales"
    return SimRequest(
        id=rid,
        principal=who,
        action=f"s3tables:{action}",
        resource=resource,
        resource_account=VAULT_ACCOUNT,
        context=ctx,
        identity_policies=(identity,),
        resource_policies=policies,
    )


@pytest.mark.node
def test_no_account_writes_another_accounts_bucket_and_recovery_reads_them_all() -> None:
    cfg = shared_vault(2)
    docs = {d.name: d.document for d in build(cfg).all()}
    role_a, role_b = (cfg.replication_role_arn_of(s) for s in cfg.sources if s.account_id in (A, B))
    sales_role = cfg.replication_role_arn_of(cfg.sources[0])
    buckets = {b: _replica(cfg, b).bucket_arn for b in (account_bucket(A), account_bucket(B), "estate-vault-euc1")}
    kit: dict[str, Any] = {"admin": ADMIN, "recovery": docs["recovery-role-permissions"]}
    for b in buckets:
        kit[f"bucket:{b}"] = docs[f"replica-bucket-policy--{b}"]
        kit[f"table:{b}"] = docs[f"replica-table-policy--{b}"]
    sources = {s.account_id: s for s in cfg.sources if s.account_id in (A, B)}
    kit["role_a"] = policy_documents.replication_role_permissions(cfg, sources[A])
    kit["role_b"] = policy_documents.replication_role_permissions(cfg, sources[B])

    def on(b: str, level: str) -> tuple[str, tuple[str, ...]]:
        arn = buckets[b]
        if level == "TableBucket":
            return arn, (f"bucket:{b}",)
        return f"{arn}/table/0f0e0d0c-0b0a-4909-8807-060504030201", (f"bucket:{b}", f"table:{b}")

    # attackers with every s3tables action on their side: A's replication role and administrator, another feeding
    # account's replication role, a role named like one in an account that feeds nothing
    attackers = {
        "roleA": role_a,
        "adminA": f"arn:aws:iam::{A}:role/Administrator",
        "sales": sales_role,
        "outsider": OUTSIDER,
    }
    targets = {"roleA": [account_bucket(B), "estate-vault-euc1"], "adminA": [account_bucket(B), "estate-vault-euc1"]}
    targets |= {"sales": [account_bucket(A), account_bucket(B)], "outsider": [account_bucket(A), account_bucket(B)]}
    reqs, must_not = [], []
    for who, arn in attackers.items():
        for b in targets[who]:
            for level, names in _catalogue_writes().items():
                for action in names:
                    resource, policies = on(b, level)
                    rid = f"{who}>{b}:{action}"
                    reqs.append(_request(rid, arn, action, resource, "admin", policies))
                    must_not.append(rid)
    # each adopted role writes its own bucket (the replication it exists for), named `sales` in both accounts
    legit = {}
    for who, arn, b, ident in (
        ("roleA", role_a, account_bucket(A), "role_a"),
        ("roleB", role_b, account_bucket(B), "role_b"),
    ):
        for level, action in (
            ("TableBucket", "CreateTable"),
            ("Table", "PutTableData"),
            ("Table", "UpdateTableMetadataLocation"),
        ):
            resource, policies = on(b, level)
            legit[f"{who}>{b}:{action}"] = _request(f"{who}>{b}:{action}", arn, action, resource, ident, policies)
    rec = cfg.recovery_role_arn
    reads, rec_writes = {}, []
    for b in buckets:
        for level, action in (
            ("TableBucket", "ListTables"),
            ("Table", "GetTableData"),
            ("Table", "GetTableMetadataLocation"),
        ):
            resource, policies = on(b, level)
            reads[f"rec>{b}:{action}"] = _request(f"rec>{b}:{action}", rec, action, resource, "recovery", policies)
        for level, action in (("Table", "PutTableData"), ("TableBucket", "CreateTable")):
            resource, policies = on(b, level)
            rec_writes.append(_request(f"rec>{b}:{action}", rec, action, resource, "recovery", policies))
    base = [*reqs, *legit.values(), *reads.values(), *rec_writes]

    shared = copy.deepcopy(kit)
    shared[f"bucket:{account_bucket(B)}"] = _shared_like_a_fan_in(kit[f"bucket:{account_bucket(B)}"], cfg, role_b)
    noreads = copy.deepcopy(kit)
    noreads["recovery"]["Statement"] = [
        s for s in kit["recovery"]["Statement"] if not s["Sid"].startswith(("ReadVaultAccount", "DecryptVault"))
    ]
    a_into_b = [
        r
        for r in reqs
        if r.id.startswith(f"roleA>{account_bucket(B)}:")
        and r.action.endswith((":PutTableData", ":CreateTable", ":UpdateTableMetadataLocation", ":CreateNamespace"))
    ]
    variants = {"base": kit, "shared": shared, "noreads": noreads}
    batch = [labelled(r, "base") for r in base]
    batch += [labelled(r, "shared") for r in a_into_b]
    batch += [labelled(r, "noreads") for r in reads.values()]
    results = evaluate_variants(variants, batch, {})
    got = results["base"]
    assert [rid for rid in must_not if got[rid].decision == ALLOWED] == []
    assert len(must_not) > 150, len(must_not)  # the catalogue's writes, per attacker and target
    assert {rid: got[rid].decision for rid in legit} == dict.fromkeys(legit, ALLOWED)
    assert {rid: got[rid].decision for rid in reads} == dict.fromkeys(reads, ALLOWED)
    assert [r.id for r in rec_writes if got[r.id].decision == ALLOWED] == []
    # the mutations: one bucket shared without confinement lets A write, create and shadow B's `sales`; without
    # its reads of the account buckets the recovery role reads the convention vault only
    assert {r.id: results["shared"][r.id].decision for r in a_into_b} == dict.fromkeys(
        (r.id for r in a_into_b), ALLOWED
    )
    lost = sorted(rid for rid in reads if results["noreads"][rid].decision != ALLOWED)
    assert lost == sorted(rid for rid in reads if "estate-vault-euc1" not in rid), lost
