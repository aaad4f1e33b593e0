"""Fan-in vaults at estate scale: fifty sources feeding two vaults (and one vault taking all fifty) render every
document within its size limit; the one confinement statement holds in the IAM simulator on the generated estate
(and is needed: a mutation drops it), and so does the grants' account list; validation refuses a fan-in namespace
not named after its account and more feeding accounts than the bucket policy holds, naming the rule or the limit.

Generated configurations (`bench.estate_scp.estate_config`), pure Python but one node process.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from bench.estate_scp import estate_config
from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies import fan_in
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.keys import key_sites, kms_key_policy
from s3tables_kit.policies.lint import lint_documents
from s3tables_kit.policies.simulate import ALLOWED, EXPLICIT_DENY, IMPLICIT_DENY, SimRequest, principal_context
from s3tables_kit.topology.config import KitConfig, parse_config
from s3tables_kit.topology.rules import MAX_FAN_IN_SOURCE_ACCOUNTS, fan_in_namespace_prefix
from tests.policy_fixtures import drop_statement, evaluate_variants, find

LIMIT = 20480  # a table bucket policy's characters (compact JSON)


def _estate(n: int, **kw: Any) -> KitConfig:
    return parse_config(estate_config(n, **kw), f"<estate of {n}>")


@pytest.fixture(scope="module")
def two_vaults() -> KitConfig:
    return _estate(50, sources_per_vault=25)


def _vaults(cfg: KitConfig) -> list[Any]:
    return [r for r in cfg.replicas if len(cfg.sources_into(r)) > 1]


def test_fifty_sources_into_two_vaults_render_every_document_within_its_limit(two_vaults: KitConfig) -> None:
    """Every document of the estate passes the kit's lint (its size rules: SCP 5,120, identity 6,144, table bucket
    and table policy 20,480), each vault has one confinement statement, and a vault's bucket and key policies are
    the same size whether 25 or 30 sources of the same accounts feed it."""
    vaults = _vaults(two_vaults)
    assert [len(two_vaults.sources_into(v)) for v in vaults] == [25, 25]
    docs = build(two_vaults)
    assert lint_documents(docs) == []
    for v in vaults:
        sids = [s["Sid"] for s in policy_documents.replica_bucket_policy(two_vaults, v)["Statement"]]
        assert sids.count(fan_in.CONFINEMENT_SID) == 1 and not any(s.startswith("DenyFanInRole1") for s in sids)
    more = _estate(30, sources_per_vault=30)  # 30 sources of the same three accounts as the first vault's 25
    first = more.replicas[0]
    assert {s.account_id for s in more.sources_into(first)} == {
        s.account_id for s in two_vaults.sources_into(vaults[0])
    }
    size = len(policy_documents.compact_json(policy_documents.replica_bucket_policy(two_vaults, vaults[0])))
    assert size == len(policy_documents.compact_json(policy_documents.replica_bucket_policy(more, first))) < LIMIT
    assert _key_policy_size(two_vaults, vaults[0]) == _key_policy_size(more, first)  # the vault key's policy too


def _key_policy_size(cfg: KitConfig, replica: Any) -> int:
    site = next(s for s in key_sites(cfg) if s.bucket == replica.bucket)
    return len(policy_documents.compact_json(kms_key_policy(cfg, site)))


def test_one_vault_takes_fifty_sources_of_fifty_accounts() -> None:
    cfg = _estate(50, sources_per_vault=50, sources_per_account=1)
    assert [len(cfg.sources_into(v)) for v in _vaults(cfg)] == [50]
    assert lint_documents(build(cfg)) == []


def _long_names(data: dict[str, Any]) -> dict[str, Any]:
    """The vault renamed to the longest bucket name AWS allows, the kit to the longest name its source ids allow."""
    old, new = data["replicas"][0]["bucket"], "v" * 63
    data["replicas"][0]["bucket"] = new
    data["recovery"]["replica"] = new
    for s in data["sources"]:
        s["replicate_to"] = [new if b == old else b for b in s["replicate_to"]]
    data["kit"]["name"] = "k" * 15  # `<kit>-<id>` is at most 24 characters, the ids are `sNN-euw1`
    return data


def test_the_feeding_accounts_bound_fits_the_bucket_policy_and_one_more_is_refused() -> None:
    n = MAX_FAN_IN_SOURCE_ACCOUNTS
    cfg = parse_config(_long_names(estate_config(n, sources_per_vault=n, sources_per_account=1)), "<max>")
    assert len(policy_documents.compact_json(policy_documents.replica_bucket_policy(cfg, cfg.replicas[0]))) <= LIMIT
    with pytest.raises(ValueError) as err:
        parse_config(estate_config(n + 1, sources_per_vault=n + 1, sources_per_account=1), "<max+1>")
    assert f"replicas[0]: 'estate-vault00-euc1' receives from sources of {n + 1} other accounts" in str(err.value)
    assert "holds at most 20,480 characters" in str(err.value)


def test_a_fan_in_namespace_not_named_after_its_account_is_refused() -> None:
    data = estate_config(20, sources_per_vault=20)
    data["sources"][3]["namespaces"][0]["name"] = "orders_ns03"
    data["sources"][12]["replication"] = {"mode": "tables", "tables": ["acct100000000001_ns12.orders"]}
    with pytest.raises(ValueError) as err:
        parse_config(data, "<bad>")
    text = str(err.value)
    assert "sources[3].namespaces[0].name: namespace 'orders_ns03' must start with 'acct100000000001_'" in text
    # the source's own namespace is declared, but the table it replicates names another account's prefix
    assert "sources[12].replication.tables[0]: namespace 'acct100000000001_ns12' must start with " in text
    # sources of one account only: one trust domain, no convention
    one = estate_config(10, sources_per_vault=10)
    for s in one["sources"]:
        s["namespaces"][0]["name"] = s["namespaces"][0]["name"].split("_", 1)[1]
    cfg = parse_config(one, "<one account>")
    assert fan_in.confinement(cfg, cfg.replicas[0]) is None
    assert fan_in.replication_roles_into(cfg, cfg.replicas[0]) == ("arn:aws:iam::*:role/estate-*-s3tables-replication",)


# ---------------------------------------------------------------- the simulator on the generated estate ----

ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3tables:*", "Resource": "*"}]}
OUTSIDER = "arn:aws:iam::999999999999:role/estate-minted-s3tables-replication"


def _requests(cfg: KitConfig, vault: Any) -> tuple[dict[str, Any], list[SimRequest], dict[str, str]]:
    """Who writes which namespace of `vault`: `<writer>><namespace owner>:<action>` -> the expected decision."""
    feeding = cfg.sources_into(vault)
    s0, s1, other = feeding[0], feeding[1], next(s for s in feeding if s.account_id != feeding[0].account_id)
    assert s0.account_id == s1.account_id
    policies = {"vault": policy_documents.replica_bucket_policy(cfg, vault), "admin": ADMIN}
    writers = {"s0": cfg.replication_role_arn_of(s0), "s1": cfg.replication_role_arn_of(s1)}
    writers["other"], writers["outsider"] = cfg.replication_role_arn_of(other), OUTSIDER
    owners = {"s0": s0.namespaces[0].name, "other": other.namespaces[0].name}
    owners["outsider"] = fan_in_namespace_prefix("999999999999") + "x"
    for who, arn in writers.items():
        if who != "outsider":
            src = next(s for s in feeding if cfg.replication_role_arn_of(s) == arn)
            policies[who] = policy_documents.replication_role_permissions(cfg, src)
    expected = {
        "s0>s0": ALLOWED, "s1>s0": ALLOWED,  # one account, one trust domain
        "s0>other": EXPLICIT_DENY, "other>s0": EXPLICIT_DENY,  # the confinement statement
        "other>other": ALLOWED,
        "outsider>outsider": IMPLICIT_DENY,  # a pattern role of an account that feeds nothing: no grant
    }  # fmt: skip
    reqs = []
    for case in expected:
        who, owner = case.split(">")
        for action, resource in (("CreateTable", vault.bucket_arn), ("PutTableData", f"{vault.bucket_arn}/table/t")):
            ctx = principal_context(writers[who], source_account=vault.account_id)
            ctx["s3tables:namespace"] = owners[owner]
            reqs.append(
                SimRequest(
                    id=f"{case}:{action}",
                    principal=writers[who],
                    action=f"s3tables:{action}",
                    resource=resource,
                    resource_account=vault.account_id,
                    context=ctx,
                    identity_policies=("admin" if who == "outsider" else who,),
                    resource_policies=("vault",),
                )
            )
    return policies, reqs, expected


@pytest.mark.node
def test_the_one_statement_confines_every_account_of_the_generated_estate(two_vaults: KitConfig) -> None:
    vault = _vaults(two_vaults)[0]
    kit, reqs, expected = _requests(two_vaults, vault)
    unconfined, unlisted = copy.deepcopy(kit), copy.deepcopy(kit)
    drop_statement(unconfined["vault"], fan_in.CONFINEMENT_SID)
    for sid in ("AllowSourceReplicationRolesCreateReplicas", "AllowSourceReplicationRolesWriteReplicas"):
        del find(unlisted["vault"], sid)["Condition"]["StringEquals"]  # the pattern in any account
    variants = {"base": kit, "unconfined": unconfined, "unlisted": unlisted}
    requests = [
        dataclasses.replace(
            r,
            id=f"{v}|{r.id}",
            identity_policies=tuple(f"{v}|{p}" for p in r.identity_policies),
            resource_policies=tuple(f"{v}|{p}" for p in r.resource_policies),
        )
        for v in variants
        for r in reqs
    ]
    results = evaluate_variants(variants, requests, {})
    for case, want in expected.items():
        for action in ("CreateTable", "PutTableData"):
            base = results["base"][f"{case}:{action}"]
            assert base.decision == want, (case, action, base.denied_by)
            if want == EXPLICIT_DENY:
                assert any(d.endswith(fan_in.CONFINEMENT_SID) for d in base.denied_by), base.denied_by
                assert results["unconfined"][f"{case}:{action}"].decision == ALLOWED, case
    # without the account list, a replication-named role minted in any account is granted the vault
    assert results["unlisted"]["outsider>outsider:PutTableData"].decision == ALLOWED
