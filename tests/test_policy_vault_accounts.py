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
from s3tables_kit.topology.backup import backup_role_arn
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
    """And the backup role, with a backup vault: it reads what the vault's buckets hold (decision 0034)."""
    both = {"AllowRecoveryRoleReadReplica", "AllowBackupRoleReadReplica"}
    for backups, expected in ((False, {"AllowRecoveryRoleReadReplica"}), (True, both)):
        cfg = shared_vault(2, backups=backups)
        for site in key_sites(cfg):
            if site.bucket in (account_bucket(A), account_bucket(B), "estate-vault-euc1"):
                sids = {s["Sid"] for s in kms_key_policy(cfg, site)["Statement"]}
                assert sids & both == expected, site.bucket


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


def _unconfined(doc: dict[str, Any], cfg: KitConfig, own_role: str) -> dict[str, Any]:
    """The mutation: an account bucket's policy as one bucket for every adopted lake would be, a fan-in vault's
    without its confinement and its account list: the replication roles by pattern, in any account."""
    out = copy.deepcopy(doc)
    pattern = estate.replication_role_pattern(cfg)
    for s in out["Statement"]:
        if s["Effect"] == "Allow" and s.get("Principal") == {"AWS": own_role}:  # a bucket fed by one source
            s["Principal"], s["Condition"] = "*", {"ArnLike": {"aws:PrincipalArn": pattern}}
        s.get("Condition", {}).pop("StringEquals", None)  # a bucket fed by several: its one account's list
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
    """A's bucket is fed by one source (its role named by ARN), B's by two (its roles by pattern, granted in B's
    account only, exempted from the Denies in any account): both forms hold. The backup role of the vault's backups
    (`[vault]`) reads every bucket as the recovery role does, and writes none."""
    cfg = shared_vault(2, second_source=(1,), backups=True)
    docs = {d.name: d.document for d in build(cfg).all()}
    src = {s.id: s for s in cfg.sources}
    role = {k: cfg.replication_role_arn_of(src[i]) for k, i in (("A", "adopted00"), ("B", "adopted01"))}
    role["B2"] = cfg.replication_role_arn_of(src["adopted01-2"])
    buckets = {b: _replica(cfg, b).bucket_arn for b in (account_bucket(A), account_bucket(B), "estate-vault-euc1")}
    kit: dict[str, Any] = {
        "admin": ADMIN,
        "recovery": docs["recovery-role-permissions"],
        "backup": docs["backup-role-permissions"],
    }
    for b in buckets:
        kit[f"bucket:{b}"] = docs[f"replica-bucket-policy--{b}"]
        kit[f"table:{b}"] = docs[f"replica-table-policy--{b}"]
    for k, i in (("A", "adopted00"), ("B", "adopted01"), ("B2", "adopted01-2")):
        kit[f"role{k}"] = policy_documents.replication_role_permissions(cfg, src[i])

    def on(b: str, level: str) -> tuple[str, tuple[str, ...]]:
        arn = buckets[b]
        if level == "TableBucket":
            return arn, (f"bucket:{b}",)
        return f"{arn}/table/0f0e0d0c-0b0a-4909-8807-060504030201", (f"bucket:{b}", f"table:{b}")

    def ask(who: str, arn: str, identity: str, b: str, pairs: list[tuple[str, str]]) -> dict[str, SimRequest]:
        """`who` (`arn`, its identity policy `identity`) asking each (resource level, action) on the bucket `b`."""
        out = {}
        for level, action in pairs:
            resource, policies = on(b, level)
            out[f"{who}>{b}:{action}"] = _request(f"{who}>{b}:{action}", arn, action, resource, identity, policies)
        return out

    writes = [(level, action) for level, names in _catalogue_writes().items() for action in names]
    # attackers holding every s3tables action in their own account: each adopted account's replication role and
    # administrator, B's role name minted in A's account, the estate's sales role, a pattern-named role of an
    # account that feeds nothing; each against the buckets that are not its own
    bucket_a, bucket_b, vault = account_bucket(A), account_bucket(B), "estate-vault-euc1"
    attackers = {
        "roleA": (role["A"], [bucket_b, vault]),
        "adminA": (f"arn:aws:iam::{A}:role/Administrator", [bucket_b, vault]),
        "roleB": (role["B"], [bucket_a, vault]),
        "mintedB": (role["B"].replace(f"::{B}:", f"::{A}:"), [bucket_b]),
        "sales": (cfg.replication_role_arn_of(cfg.sources[0]), [bucket_a, bucket_b]),
        "outsider": (OUTSIDER, [bucket_a, bucket_b]),
    }
    reqs = [r for who, (arn, targets) in attackers.items() for b in targets
            for r in ask(who, arn, "admin", b, writes).values()]  # fmt: skip
    # each adopted role writes its own bucket (the replication it exists for), named `sales` in both accounts
    replicating = [("TableBucket", "CreateTable"), ("Table", "PutTableData"), ("Table", "UpdateTableMetadataLocation")]
    legit = {}
    for who, b in (("A", bucket_a), ("B", bucket_b), ("B2", bucket_b)):
        legit.update(ask(f"role{who}", role[who], f"role{who}", b, replicating))
    # the recovery and backup roles read every bucket of the vault, and write none (every write of the catalogue)
    readers = {"rec": (cfg.recovery_role_arn, "recovery"), "bak": (backup_role_arn(cfg), "backup")}
    reading = [("TableBucket", "ListTables"), ("Table", "GetTableData"), ("Table", "GetTableMetadataLocation")]
    reads, rec_writes = {}, []
    for who, (arn, identity) in readers.items():
        for b in buckets:
            reads.update(ask(who, arn, identity, b, reading))
            rec_writes += ask(who, arn, identity, b, writes).values()
    base = [*reqs, *legit.values(), *reads.values(), *rec_writes]

    shared = copy.deepcopy(kit)
    shared[f"bucket:{bucket_a}"] = _unconfined(kit[f"bucket:{bucket_a}"], cfg, role["A"])
    shared[f"bucket:{bucket_b}"] = _unconfined(kit[f"bucket:{bucket_b}"], cfg, role["B"])
    noreads = copy.deepcopy(kit)
    for identity in ("recovery", "backup"):
        noreads[identity]["Statement"] = [
            s for s in kit[identity]["Statement"] if not s["Sid"].startswith(("ReadVaultAccount", "DecryptVault"))
        ]
    replication = (":PutTableData", ":CreateTable", ":UpdateTableMetadataLocation", ":CreateNamespace")
    crossed = [
        r
        for r in reqs
        if r.id.startswith((f"roleA>{bucket_b}:", f"roleB>{bucket_a}:")) and r.action.endswith(replication)
    ]
    variants = {"base": kit, "shared": shared, "noreads": noreads}
    batch = [labelled(r, "base") for r in base]
    batch += [labelled(r, "shared") for r in crossed]
    batch += [labelled(r, "noreads") for r in reads.values()]
    results = evaluate_variants(variants, batch, {})
    got = results["base"]
    assert [r.id for r in reqs if got[r.id].decision == ALLOWED] == []
    assert len(reqs) >= 11 * 25, len(reqs)  # 11 (attacker, bucket) pairs, each every write of the catalogue (25)
    assert {rid: got[rid].decision for rid in legit} == dict.fromkeys(legit, ALLOWED)
    assert {rid: got[rid].decision for rid in reads} == dict.fromkeys(reads, ALLOWED)
    assert [r.id for r in rec_writes if got[r.id].decision == ALLOWED] == []
    assert len(rec_writes) == 2 * 3 * 25, len(rec_writes)  # the recovery and backup roles, 3 buckets, 25 writes
    # the mutations: the buckets shared without confinement let A create, write and shadow B's `sales` (and B
    # A's); without its reads of the account buckets the recovery role reads the convention vault only
    assert len(crossed) == 8 and all(results["shared"][r.id].decision == ALLOWED for r in crossed), [
        (r.id, results["shared"][r.id].decision) for r in crossed
    ]
    lost = sorted(rid for rid in reads if results["noreads"][rid].decision != ALLOWED)
    assert lost == sorted(rid for rid in reads if vault not in rid), lost
