"""A vault several accounts feed, confined by bucket: each feeding account whose namespaces do not follow the fan-in
convention (an adopted lake: S3 Tables cannot rename a namespace) gets a replica bucket of its own in the vault's
account and Region, named by `feeding_account` (docs/decisions/0035-fan-in-by-account-namespaces.md).

    [[replicas]]
    account_id = "666666666666"             # the vault's account and Region: those of `[recovery] replica`
    region = "eu-central-1"
    bucket = "vault-777777777777-eu-central-1"
    feeding_account = "777777777777"        # only sources of this account replicate into it

Such a bucket is an ordinary replica fed by one account, so its policies grant that account's replication roles
only and carry no namespace convention; confinement is the bucket, and no document grows with the number of feeding
accounts. The recovery role reads every bucket of the vault (`recovery_reads`). This module holds the record's rules;
its field is `s3tables_kit.topology.feeding` (mixed into `s3tables_kit.topology.model.Replica`, which imports it).
"""

from __future__ import annotations

from s3tables_kit.topology.issues import Issue
from s3tables_kit.topology.model import KitConfig, Replica


def vault_account_buckets(cfg: KitConfig) -> tuple[Replica, ...]:
    """The replicas that are one feeding account's bucket of a shared vault, in configuration order."""
    return tuple(r for r in cfg.replicas if r.feeding_account is not None)


def recovery_reads(cfg: KitConfig) -> tuple[Replica, ...]:
    """Every replica the recovery role reads: `[recovery] replica`, then the account buckets of its vault (validation
    keeps them in its account and Region)."""
    rep = cfg.recovery_replica
    return (rep, *(r for r in vault_account_buckets(cfg) if r.bucket != rep.bucket))


def vault_account_checks(cfg: KitConfig) -> list[Issue]:
    """An account bucket takes sources of its account only (another account's source would need the namespace
    convention there, which the bucket exists to avoid) and lives where the recovery role reads it."""
    out: list[Issue] = []
    rec = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    for r_i, rep in enumerate(cfg.replicas):
        acct = rep.feeding_account
        if acct is None:
            continue
        for src in cfg.sources_into(rep):
            if src.account_id != acct:
                where = f"replicas[{r_i}].feeding_account"  # `[source]` replicates to every replica
                if rep.bucket in src.replicate_to:
                    where = f"{cfg.path_of(src)}.replicate_to[{src.replicate_to.index(rep.bucket)}]"
                out.append(
                    Issue(
                        where,
                        f"{rep.bucket!r} is account {acct}'s bucket of the vault (feeding_account) and this source is "
                        f"in account {src.account_id}: replicate into that account's own bucket, or into a replica "
                        "whose namespaces follow the fan-in convention",
                    )
                )
        if rec is not None and (rep.account_id, rep.region) != (rec.account_id, rec.region):
            out.append(
                Issue(
                    f"replicas[{r_i}].feeding_account",
                    f"{rep.bucket!r} is in {rep.account_id}/{rep.region}, the vault recovery reads is in "
                    f"{rec.account_id}/{rec.region} ([recovery] replica): a vault's account buckets live beside it, "
                    "where the recovery role reads them",
                )
            )
    return out
