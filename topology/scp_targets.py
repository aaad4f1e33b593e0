"""How many of the kit's SCPs each organization target holds: at most three, so that `FullAWSAccess` and one of the
organization's own fit beside them (Organizations takes five SCPs per root, OU or account).

The organization's targets hold the kit's three organization SCPs (replicas, guards, pipeline). Some SCPs guard
resources of one account and are attached to that account alone: the vault's (the vault account), the scheduled
jobs' (the recovery account, with a vault) and, in the failover topology, the promoted bucket's (its account). An
account that is itself one of the targets would add those to the three (decision 0006).
"""

from __future__ import annotations

from collections import Counter

from s3tables_kit.topology.issues import Issue
from s3tables_kit.topology.model import KitConfig
from s3tables_kit.topology.rules import ACCOUNT_RE

MAX_KIT_SCPS = 3
ORGANIZATION_SCPS = 3  # scp-protect-replicas, scp-protect-replica-guards, scp-protect-pipeline


def account_scps(cfg: KitConfig) -> list[tuple[str, str]]:
    """(account, why) of each kit SCP attached to one account directly."""
    out: list[tuple[str, str]] = []
    if cfg.vault is not None:
        out.append((cfg.vault.account_id, "the vault's SCP"))
        if any(r.bucket == cfg.recovery.replica for r in cfg.replicas):
            out.append((cfg.recovery_replica.account_id, "the scheduled jobs' SCP"))
    promoted = next((r for r in cfg.replicas if r.bucket == cfg.kind.promoted_bucket), None)
    if cfg.failover is not None and promoted is None and cfg.kind.promoted_bucket is not None:
        promoted = next((b for b in cfg.failover.new_buckets if b.bucket == cfg.kind.promoted_bucket), None)
    if promoted is not None:
        out.append((promoted.account_id, "the promoted bucket's SCP"))
    return out


def kit_scps_per_target(cfg: KitConfig) -> Counter[str]:
    """The number of kit SCPs attached to each target (root, OU or account) directly."""
    org = cfg.protection.organization
    if org is None:
        return Counter()
    counts: Counter[str] = Counter({t: ORGANIZATION_SCPS for t in org.targets})
    counts.update(acct for acct, _ in account_scps(cfg))
    return counts


def scp_target_checks(cfg: KitConfig) -> list[Issue]:
    """A target over `MAX_KIT_SCPS`, one line per target, naming what is attached there and the fix."""
    org = cfg.protection.organization
    if org is None:
        return []
    out = []
    for target, n in sorted(kit_scps_per_target(cfg).items()):
        if n > MAX_KIT_SCPS and ACCOUNT_RE.match(target):
            whys = ", ".join(why for acct, why in account_scps(cfg) if acct == target)
            out.append(
                Issue(
                    "protection.organization.targets",
                    f"account {target} would hold {n} of the kit's SCPs (the organization's three and {whys}), "
                    f"over {MAX_KIT_SCPS}: list it under protection.organization.ou_accounts for the OU or root "
                    "target it sits in instead of as a target of its own",
                )
            )
    return out
