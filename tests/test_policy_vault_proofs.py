"""Proofs with the IAM simulator that only the backup role writes the vault and only break-glass changes its settings
(docs/decisions/0034-backup-vault.md), with the seed topology and a vault beside its replica.

The attackers hold AdministratorAccess in the vault's account (the worst case): an administrator, the recovery role.
The recovery role with its own permissions restores from the vault: it reads, lists and decrypts the backups and
nothing else; each of its grants is needed, and widened to every S3 action it still writes, deletes and changes
nothing (the bucket policy's denies do not exempt it).
Break-glass may change the settings and remove a delete marker, never write a backup. Deleting a locked version or
shortening its retention is not a policy question: break-glass is allowed to *ask*, and Object Lock refuses
(`tests/test_vault_standin.py` proves that part on the stand-in). Each guard is needed: removed from every layer,
its first step goes through; a settings guard removed from the bucket policy alone is still denied by the guards SCP.
One simulator batch for every case of every variant.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from s3tables_kit.policies.docset import build
from s3tables_kit.policies.documents import compact_json
from s3tables_kit.policies.simulate import (
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
from s3tables_kit.topology.config import parse_config
from tests.test_vault_config import VAULT, with_vault

pytestmark = pytest.mark.node

ACCOUNT = "111122223333"
BUCKET = "arn:aws:s3:::seed-backup-vault-111122223333-us-west-2"
OBJECT = f"{BUCKET}/v1/tables/analytics/orders/0f3c/data/00000-0-a.parquet"
KEY = "arn:aws:kms:us-west-2:111122223333:key/5e1f2a3b-0c4d-4e5f-8a9b-0c1d2e3f4a5b"
ADMIN_ACCESS = "world:AdministratorAccess"
FULL_AWS_ACCESS = "world:FullAWSAccess"
WORLD: dict[str, Any] = {
    n: {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    for n in (ADMIN_ACCESS, FULL_AWS_ACCESS)
}
PRINCIPALS = {
    "admin": (f"arn:aws:iam::{ACCOUNT}:role/Administrator", (ADMIN_ACCESS,)),
    "recovery": (f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-recovery", (ADMIN_ACCESS,)),
    "breakglass": (f"arn:aws:iam::{ACCOUNT}:role/s3tables-break-glass", (ADMIN_ACCESS,)),
    "backup": (f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-backup", ("backup-role-permissions",)),
    "restorer": (f"arn:aws:iam::{ACCOUNT}:role/seed-s3tables-recovery", ("recovery-role-permissions",)),
}
SCPS = ("scp-protect-replicas", "scp-protect-replica-guards", "scp-protect-pipeline")
VAULT_SCP, JOBS_SCP = "scp-protect-vault", "scp-protect-scheduled-jobs"  # each attached to its account itself
ACCOUNT_SCPS = (VAULT_SCP, JOBS_SCP)
SETTINGS = (
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutLifecycleConfiguration",
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:PutBucketVersioning",
    "s3:PutEncryptionConfiguration",
    "s3:DeleteBucket",
)
WRITES = ("s3:PutObject", "s3:PutObjectRetention")
OBJECT_CHANGES = ("s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectLegalHold")
Ctx = tuple[tuple[str, str], ...]
TLS: Ctx = (("aws:SecureTransport", "true"),)
# what the backup job sends with every object it writes (`If-None-Match: *`): a first version only
ONCE: Ctx = (("s3:if-none-match", "*"), ("s3:ObjectCreationOperation", "true"))
LISTED: Ctx = (*TLS, ("s3:prefix", "v1/tables/analytics/orders/"))  # what `list_points` asks for


def cases() -> dict[str, tuple[str, str, str, str, Ctx, str]]:
    """{case id: (who, action, resource, wanted decision, context, resource policy)}."""
    out: dict[str, tuple[str, str, str, str, Ctx, str]] = {}
    for who in PRINCIPALS:
        for action in SETTINGS:
            # nobody, break-glass included, changes a setting once the policy is applied
            out[f"{who}:settings:{action}"] = (who, action, BUCKET, EXPLICIT_DENY, TLS, "vault-bucket-policy")
        for action in WRITES:
            want = ALLOWED if who == "backup" else EXPLICIT_DENY
            mode = (("s3:object-lock-mode", "COMPLIANCE"),) if action == "s3:PutObjectRetention" else ONCE
            out[f"{who}:write:{action}"] = (who, action, OBJECT, want, TLS + mode, "vault-bucket-policy")
        for action in OBJECT_CHANGES:
            # a legal hold only keeps a version longer: break-glass's; no delete marker, by anyone
            want = ALLOWED if (who, action) == ("breakglass", "s3:PutObjectLegalHold") else EXPLICIT_DENY
            out[f"{who}:object:{action}"] = (who, action, OBJECT, want, TLS, "vault-bucket-policy")
    out["backup:unconditional:s3:PutObject"] = (
        "backup", "s3:PutObject", OBJECT, EXPLICIT_DENY, (*TLS, ("s3:ObjectCreationOperation", "true")),
        "vault-bucket-policy",
    )  # fmt: skip
    out["backup:multipart-part:s3:PutObject"] = (  # UploadPart takes no condition header
        "backup", "s3:PutObject", OBJECT, ALLOWED, (*TLS, ("s3:ObjectCreationOperation", "false")),
        "vault-bucket-policy",
    )  # fmt: skip
    out["backup:beyond-ceiling:s3:PutObjectRetention"] = (
        "backup", "s3:PutObjectRetention", OBJECT, EXPLICIT_DENY,
        (*TLS, ("s3:object-lock-mode", "COMPLIANCE"), ("s3:object-lock-remaining-retention-days", "3650")),
        "vault-bucket-policy",
    )  # fmt: skip
    weaker = (*TLS, *ONCE, ("s3:object-lock-mode", "GOVERNANCE"))
    out["backup:weaker-lock:s3:PutObject"] = (
        "backup",
        "s3:PutObject",
        OBJECT,
        EXPLICIT_DENY,
        weaker,
        "vault-bucket-policy",
    )
    insecure: Ctx = (("aws:SecureTransport", "false"), *ONCE)
    out["backup:plain-http:s3:PutObject"] = (
        "backup",
        "s3:PutObject",
        OBJECT,
        EXPLICIT_DENY,
        insecure,
        "vault-bucket-policy",
    )
    out["backup:read:s3:GetObject"] = ("backup", "s3:GetObject", OBJECT, ALLOWED, TLS, "vault-bucket-policy")
    out["backup:read-replica:s3tables:PutTableData"] = (
        "backup", "s3tables:PutTableData",
        f"arn:aws:s3tables:us-west-2:{ACCOUNT}:bucket/demo-dest-tablebucket/table/0f3c", EXPLICIT_DENY, (), "",
    )  # fmt: skip
    tagged: Ctx = (("aws:ResourceTag/s3tables-kit-replica-key", "seed"),)
    for who, want in (("admin", EXPLICIT_DENY), ("breakglass", EXPLICIT_DENY)):  # the key outlives everyone
        for action in ("kms:DisableKey", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion"):
            out[f"{who}:key:{action}"] = (who, action, KEY, want, tagged, "kms-key-policy--vault")
    # the recovery role restores: lists the points, reads the objects, decrypts them; it never uses the key otherwise
    out["restorer:restore:s3:GetObject"] = ("restorer", "s3:GetObject", OBJECT, ALLOWED, TLS, "vault-bucket-policy")
    out["restorer:restore:s3:ListBucket"] = (
        "restorer",
        "s3:ListBucket",
        BUCKET,
        ALLOWED,
        LISTED,
        "vault-bucket-policy",
    )
    out["restorer:restore:kms:Decrypt"] = ("restorer", "kms:Decrypt", KEY, ALLOWED, tagged, "kms-key-policy--vault")
    for action, want in (
        ("kms:Encrypt", EXPLICIT_DENY), ("kms:GenerateDataKey", EXPLICIT_DENY), ("kms:PutKeyPolicy", EXPLICIT_DENY),
    ):  # fmt: skip
        out[f"restorer:key:{action}"] = ("restorer", action, KEY, want, tagged, "kms-key-policy--vault")
    out["backup:key:kms:GenerateDataKey"] = (
        "backup",
        "kms:GenerateDataKey",
        KEY,
        ALLOWED,
        tagged,
        "kms-key-policy--vault",
    )
    return out


def request(cid: str, case: tuple[str, str, str, str, Ctx, str], variant: str, docs: dict[str, Any]) -> SimRequest:
    who, action, resource, _want, context, policy = case
    arn, identity = PRINCIPALS[who]
    ctx: dict[str, Any] = {**dict(context), **_aliases(action, ACCOUNT)}
    return vault_request(f"{variant}|{cid}", variant, arn, identity, action, resource, ctx, (policy,) if policy else ())


def vault_request(
    rid: str,
    variant: str,
    arn: str,
    identity: Iterable[str],
    action: str,
    resource: str,
    context: Mapping[str, Any],
    resource_policies: Iterable[str],
) -> SimRequest:
    """A request of `arn` in the vault's account under the seed's SCPs, the kit's documents named `<variant>|<name>`
    (the world's, `world:...`, as they are)."""

    def ns(name: str) -> str:
        return name if name.startswith("world:") else f"{variant}|{name}"

    return SimRequest(
        id=rid,
        principal=arn,
        action=action,
        resource=resource,
        resource_account=ACCOUNT,
        context={**principal_context(arn), **context},
        identity_policies=tuple(ns(n) for n in identity),
        scps=(
            ScpLevel("r-root", (FULL_AWS_ACCESS,)),
            ScpLevel("ou-kit", (FULL_AWS_ACCESS, *(ns(n) for n in SCPS))),
            ScpLevel(ACCOUNT, (FULL_AWS_ACCESS, *(ns(n) for n in ACCOUNT_SCPS))),
        ),
        resource_policies=tuple(ns(n) for n in resource_policies),
    )


Mutation = Callable[[dict[str, Any]], None]


def drop(sid: str, *names: str) -> Mutation:
    """The statement `sid` removed from the documents `names` (every document carrying it when none is named)."""

    def mutate(docs: dict[str, Any]) -> None:
        found = 0
        for name, d in docs.items():
            if names and name not in names:
                continue
            kept = [s for s in d["Statement"] if s.get("Sid") != sid]
            found += len(d["Statement"]) - len(kept)
            d["Statement"] = kept
        assert found, f"no statement {sid} in {names or 'any document'}"

    return mutate


def both(first: Mutation, second: Mutation) -> Mutation:
    def mutate(docs: dict[str, Any]) -> None:
        first(docs)
        second(docs)

    return mutate


def widen(sid: str, name: str) -> Mutation:
    """The grant `sid` of `name` widened to every S3 action on every resource."""

    def mutate(docs: dict[str, Any]) -> None:
        (s,) = [s for s in docs[name]["Statement"] if s.get("Sid") == sid]
        s["Action"], s["Resource"] = "s3:*", "*"
        s.pop("Condition", None)

    return mutate


RESTORER_NEVER = (
    "restorer:write:s3:PutObject",
    "restorer:write:s3:PutObjectRetention",
    "restorer:object:s3:DeleteObjectVersion",
    "restorer:object:s3:PutObjectLegalHold",
    "restorer:settings:s3:PutBucketObjectLockConfiguration",
    "restorer:settings:s3:PutBucketPolicy",
    "restorer:settings:s3:DeleteBucket",
)


# {mutation: (mutation, {case: decision after it})}
MUTATIONS: dict[str, tuple[Mutation, dict[str, str]]] = {
    "everyone's allow-list removed everywhere": (
        drop("DenyVault"),
        {"admin:write:s3:PutObject": ALLOWED, "recovery:object:s3:DeleteObject": ALLOWED},
    ),
    "everyone's allow-list removed from the bucket policy only": (  # the vault SCP still binds them
        drop("DenyVault", "vault-bucket-policy"),
        {
            "admin:settings:s3:PutBucketObjectLockConfiguration": EXPLICIT_DENY,
            "admin:write:s3:PutObject": EXPLICIT_DENY,
        },
    ),
    "break-glass's allow-list removed everywhere": (  # in the seed break-glass deploys the vault
        both(drop("DenyVaultBreakGlass", "vault-bucket-policy"), drop("DenyVaultBreakGlassDeployer")),
        {"breakglass:object:s3:DeleteObject": ALLOWED, "breakglass:settings:s3:PutBucketPolicy": ALLOWED},
    ),
    "break-glass's allow-list removed from the bucket policy only": (  # the SCP leaves it the first deploy's set
        drop("DenyVaultBreakGlass", "vault-bucket-policy"),
        {"breakglass:object:s3:DeleteObject": EXPLICIT_DENY, "breakglass:settings:s3:PutBucketPolicy": ALLOWED},
    ),
    "the backup role's allow-list removed everywhere": (
        drop("DenyVaultBackupRole"),
        {"backup:object:s3:DeleteObjectVersion": IMPLICIT_DENY},  # from an explicit Deny to no grant
    ),
    "lock mode guard removed": (drop("DenyVaultWeakerLockMode"), {"backup:weaker-lock:s3:PutObject": ALLOWED}),
    "conditional write guard removed everywhere": (
        drop("DenyVaultWriteWithoutIfNoneMatch"),
        {"backup:unconditional:s3:PutObject": ALLOWED},
    ),
    "retention ceiling removed everywhere": (
        drop("DenyVaultRetentionBeyondCeiling"),
        {"backup:beyond-ceiling:s3:PutObjectRetention": ALLOWED},
    ),
    "TLS guard removed": (
        drop("DenyInsecureTransport", "vault-bucket-policy"),
        {"backup:plain-http:s3:PutObject": ALLOWED},
    ),
    "key allow-list removed from the key policy only": (
        drop("DenyVaultKey", "kms-key-policy--vault"),
        {"admin:key:kms:DisableKey": EXPLICIT_DENY},
    ),
    "key allow-lists removed everywhere": (
        both(
            both(drop("DenyVaultKey"), drop("DenyVaultKeyBreakGlassDeployer", "kms-key-policy--vault")),
            drop("DenyKitKeys"),  # the kit's keys' allow-list closes the vault key (alias <kit>-*) too
        ),
        {"admin:key:kms:DisableKey": ALLOWED, "breakglass:key:kms:DisableKey": ALLOWED},
    ),
    "recovery role's read grant removed": (
        drop("ReadVaultBackups", "recovery-role-permissions"),
        {"restorer:restore:s3:GetObject": IMPLICIT_DENY, "restorer:restore:s3:ListBucket": ALLOWED},
    ),
    "recovery role's list grant removed": (
        drop("ListVaultBackups", "recovery-role-permissions"),
        {"restorer:restore:s3:ListBucket": IMPLICIT_DENY, "restorer:restore:s3:GetObject": ALLOWED},
    ),
    # in the vault's own account either half of the key grant is enough (the key policy delegates to IAM); across
    # accounts each is needed (test_a_vault_of_its_own_account_...)
    "recovery role's key grants removed": (
        both(
            drop("DecryptVaultBackups", "recovery-role-permissions"),
            drop("AllowRecoveryRoleDecrypt", "kms-key-policy--vault"),
        ),
        {"restorer:restore:kms:Decrypt": IMPLICIT_DENY},
    ),
    "recovery role's read grant widened to s3:*": (
        widen("ReadVaultBackups", "recovery-role-permissions"),
        {cid: EXPLICIT_DENY for cid in RESTORER_NEVER},
    ),
}


def documents(doc: dict[str, Any] | None = None) -> dict[str, Any]:
    ds = build(parse_config(doc or with_vault(VAULT)))
    names = (
        "vault-bucket-policy",
        "kms-key-policy--vault",
        "kms-key-policy--vault-points",
        "backup-role-permissions",
        "monitor-role-permissions",
        "recovery-role-permissions",
        *SCPS,
        *ACCOUNT_SCPS,
    )
    return {n: ds.document(n) for n in names}


# ---------------------------------------------------------------- a vault in an account of its own ----

VAULT_ACCOUNT = "444455556666"
CROSS_BUCKET = f"arn:aws:s3:::seed-backup-vault-{VAULT_ACCOUNT}-us-west-2"
CROSS_OBJECT = f"{CROSS_BUCKET}/v1/tables/analytics/orders/0f3c/points/1.json"
CROSS_KEY = f"arn:aws:kms:us-west-2:{VAULT_ACCOUNT}:key/5e1f2a3b-0c4d-4e5f-8a9b-0c1d2e3f4a5b"
RESTORER = PRINCIPALS["restorer"][0]
MONITOR = "arn:aws:iam::111122223333:role/seed-replication-monitor"
CROSS_CASES = {  # case: (principal, identity policy, action, wanted decision with the grant, without it)
    "backup:write:s3:PutObject": (PRINCIPALS["backup"][0], "backup-role-permissions", "s3:PutObject", ALLOWED),
    "vault-admin:write:s3:PutObject": (
        f"arn:aws:iam::{VAULT_ACCOUNT}:role/Administrator", ADMIN_ACCESS, "s3:PutObject", EXPLICIT_DENY,
    ),
    # the source's replication monitor lists the points (the backup age) and reads no object
    "monitor:list:s3:ListBucket": (MONITOR, "monitor-role-permissions", "s3:ListBucket", ALLOWED),
    "monitor:read:s3:GetObject": (MONITOR, "monitor-role-permissions", "s3:GetObject", IMPLICIT_DENY),
    # the recovery role restores across accounts: a grant on each side, for the bucket and for the key
    "restorer:read:s3:GetObject": (RESTORER, "recovery-role-permissions", "s3:GetObject", ALLOWED),
    "restorer:list:s3:ListBucket": (RESTORER, "recovery-role-permissions", "s3:ListBucket", ALLOWED),
    "restorer:decrypt:kms:Decrypt": (RESTORER, "recovery-role-permissions", "kms:Decrypt", ALLOWED),
    "restorer:write:s3:PutObject": (RESTORER, "recovery-role-permissions", "s3:PutObject", EXPLICIT_DENY),
}  # fmt: skip
CROSS_RESTORE = ("restorer:read:s3:GetObject", "restorer:list:s3:ListBucket", "restorer:decrypt:kms:Decrypt")


def _cross_target(action: str) -> tuple[str, str, Ctx]:
    """(resource, its policy, extra context) of a cross-account request."""
    if action.startswith("kms:"):
        return CROSS_KEY, "kms-key-policy--vault", (("aws:ResourceTag/s3tables-kit-replica-key", "seed"),)
    if action == "s3:ListBucket":
        return CROSS_BUCKET, "vault-bucket-policy", LISTED
    return CROSS_OBJECT, "vault-bucket-policy", TLS


def cross_account_documents() -> dict[str, Any]:
    """The seed with its vault in an account of its own (covered by the SCP): the backup role writes across accounts."""
    doc = with_vault({**VAULT, "account_id": VAULT_ACCOUNT})
    doc["protection"]["organization"]["ou_accounts"]["ou-ab12-replicas1"].append(VAULT_ACCOUNT)
    return documents(doc)


def cross_account_requests(variant: str) -> list[SimRequest]:
    return [
        SimRequest(
            id=f"{variant}|{cid}",
            principal=who,
            action=action,
            resource=_cross_target(action)[0],
            resource_account=VAULT_ACCOUNT,
            context={**principal_context(who), **dict(_cross_target(action)[2]), **_aliases(action, VAULT_ACCOUNT)},
            identity_policies=(identity if identity.startswith("world:") else f"{variant}|{identity}",),
            scps=(
                ScpLevel("r-root", (FULL_AWS_ACCESS,)),
                ScpLevel("ou-kit", (FULL_AWS_ACCESS, *(f"{variant}|{n}" for n in SCPS))),
                ScpLevel(who.split(":")[4], (FULL_AWS_ACCESS, *(f"{variant}|{n}" for n in ACCOUNT_SCPS))),
            ),
            resource_policies=(f"{variant}|{_cross_target(action)[1]}",),
        )
        for cid, (who, identity, action, _) in CROSS_CASES.items()
    ]


def _aliases(action: str, account: str) -> dict[str, list[str]]:
    """The vault key's alias, in the context of a KMS request (the identity grant names the key by it)."""
    alias = f"alias/seed-seed-backup-vault-{account}-us-west-2"
    return {"kms:ResourceAliases": [alias]} if action.startswith("kms:") else {}


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, SimResult]]:
    base = documents()
    variants = {"baseline": base}
    for name, (mutate, _) in MUTATIONS.items():
        docs = copy.deepcopy(base)
        mutate(docs)
        variants[name] = docs
    policies: dict[str, Any] = dict(WORLD)
    reqs = []
    for label, docs in variants.items():
        policies.update({f"{label}|{n}": d for n, d in docs.items()})
        reqs += [request(cid, case, label, docs) for cid, case in cases().items()]
    cross = cross_account_documents()
    ungranted = copy.deepcopy(cross)
    drop("AllowBackupRoleWrite", "vault-bucket-policy")(ungranted)
    drop("AllowReplicationMonitorsListVault", "vault-bucket-policy")(ungranted)
    for sid in ("AllowRecoveryRoleReadVault", "AllowRecoveryRoleListVault"):
        drop(sid, "vault-bucket-policy")(ungranted)
    drop("AllowRecoveryRoleDecrypt", "kms-key-policy--vault")(ungranted)
    unpermitted = copy.deepcopy(cross)  # the recovery role's own half of each cross-account grant removed
    for sid in ("ReadVaultBackups", "ListVaultBackups", "DecryptVaultBackups"):
        drop(sid, "recovery-role-permissions")(unpermitted)
    for label, docs in (
        ("cross-account", cross),
        ("cross-account without the grant", ungranted),
        ("cross-account without the identity grant", unpermitted),
    ):
        policies.update({f"{label}|{n}": d for n, d in docs.items()})
        reqs += cross_account_requests(label)
        variants[label] = docs
    raw = evaluate(policies, reqs)
    errors = errors_of(raw)
    assert not errors, "simulator rejected requests:\n" + "\n".join(errors[:10])
    out: dict[str, dict[str, SimResult]] = {label: {} for label in variants}
    for rid, res in raw.items():
        label, _, cid = rid.partition("|")
        out[label][cid] = res
    return out


def test_only_the_backup_role_writes_and_only_break_glass_changes_the_settings(
    results: dict[str, dict[str, SimResult]],
) -> None:
    wrong = {
        cid: (results["baseline"][cid].decision, want, results["baseline"][cid].denied_by)
        for cid, (_, _, _, want, _, _) in cases().items()
        if results["baseline"][cid].decision != want
    }
    assert not wrong, wrong


def test_the_vault_scps_close_every_scope_on_the_vault_and_recovery_accounts_within_the_quota() -> None:
    """The vault's scopes in the vault SCP, the scheduled jobs' in theirs, each on its account; within 5,120
    characters even with a vault of its own account, deploy roles and three break-glass principals."""
    ds = build(parse_config(with_vault(VAULT)))
    stems = {VAULT_SCP: ("Vault", "VaultKey", "VaultAlias"), JOBS_SCP: ("ScheduledArtifacts", "KitApplication")}
    for name, scopes in stems.items():
        entry = ds.entry(name)
        assert {f"Deny{x}" for x in scopes} <= {s["Sid"] for s in entry.document["Statement"]}
        assert entry.attached_to.endswith(f"on {ACCOUNT}")
    assert "DenyVault" not in {s["Sid"] for s in ds.document("scp-protect-replica-guards")["Statement"]}
    doc = with_vault({**VAULT, "account_id": VAULT_ACCOUNT, "deploy_role_arn": f"arn:aws:iam::{VAULT_ACCOUNT}:role/d"})
    doc["protection"]["organization"]["ou_accounts"]["ou-ab12-replicas1"].append(VAULT_ACCOUNT)
    doc["protection"]["break_glass_principals"] += [
        f"arn:aws:iam::{VAULT_ACCOUNT}:role/s3tables-break-glass-of-the-vault-account",
        "arn:aws:iam::222233334444:role/s3tables-break-glass-of-another-account",
    ]
    doc["replicas"][0]["deploy_role_arn"] = f"arn:aws:iam::{ACCOUNT}:role/kit-recovery-deploy"
    big = build(parse_config(doc))
    sizes = {n: len(compact_json(big.document(n))) for n in ACCOUNT_SCPS}
    assert max(sizes.values()) <= 5120, sizes
    assert big.entry(VAULT_SCP).attached_to.endswith(f"on {VAULT_ACCOUNT}")


def test_a_vault_of_its_own_account_is_written_by_the_backup_role_and_listed_by_the_monitor_through_grants(
    results: dict[str, dict[str, SimResult]],
) -> None:
    got = {cid: results["cross-account"][cid].decision for cid in CROSS_CASES}
    assert got == {cid: case[3] for cid, case in CROSS_CASES.items()}
    # the grant is needed: a cross-account write needs an Allow on both sides
    assert not results["cross-account without the grant"]["backup:write:s3:PutObject"].allowed
    assert not results["cross-account without the grant"]["monitor:list:s3:ListBucket"].allowed
    for cid in CROSS_RESTORE:  # the recovery role's restore needs the vault's grant and its own, each
        assert not results["cross-account without the grant"][cid].allowed, cid
        assert not results["cross-account without the identity grant"][cid].allowed, cid


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_guard_is_needed(results: dict[str, dict[str, SimResult]], mutation: str) -> None:
    _, expected = MUTATIONS[mutation]
    got = {cid: results[mutation][cid].decision for cid in expected}
    assert got == expected
