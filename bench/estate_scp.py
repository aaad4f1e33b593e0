"""The organization layer of an estate at any size: SCP count per target and the largest minified SCP for
estates of 1, 5, 20 and 50 source buckets.

`estate_config(n)` generates the configuration dict in code (validated by `s3tables_kit.topology.config.parse_config`,
like `bench.synthscale`): `n` source buckets, ten per source account (the per-Region quota), each replicating its own
namespace into a vault bucket of the vault account (ten sources per vault: fan-in), and one regional replica of the
first source in its own account. The measurement builds the estate's documents (`s3tables_kit.policies.docset.build`)
and counts the SCPs attached to each organization target and the compact-JSON size of each
(`s3tables_kit.policies.documents.compact_json`, the form deployed; the limit is 5,120 characters). Pure Python, well
under a second per estate.

`replica_accounts` spreads the vaults over that many accounts instead of one: what an estate's SCPs still list
grows with the replica accounts (their deploy roles and the disassociation ARN pattern), never with buckets or
sources; the extra row measures that increment.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from bench.sites import KMS_CREATED, SSE_S3, deploy_role, site
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.documents import compact_json
from s3tables_kit.topology.config import KitConfig, parse_config
from s3tables_kit.topology.rules import fan_in_namespace_prefix

SIZES = (1, 5, 20, 50)
SCP_LIMIT = 5120
# The kit's SCPs per target: replica protection, its guards, the pipeline (docs/decisions/0032-pipeline-guards.md);
# with FullAWSAccess and a failover's promoted-bucket SCP that is the five a target takes.
MAX_KIT_SCPS = 3
BUCKET_POLICY_LIMIT = 20480  # PutTableBucketPolicy resourcePolicy (KIT-IAM9)
SOURCES_PER_ACCOUNT = 10  # table buckets per account per Region
SOURCES_PER_VAULT = 10
VAULT_ACCOUNT = "666666666666"
BREAK_GLASS = (
    "arn:aws:iam::666666666666:role/s3tables-break-glass",
    "arn:aws:iam::111111111111:role/s3tables-break-glass",
)


def _source_account(i: int, per_account: int = SOURCES_PER_ACCOUNT) -> str:
    return f"{100000000001 + i // per_account:012d}"


def _vault_account(v: int, replica_accounts: int) -> str:
    return VAULT_ACCOUNT if v % replica_accounts == 0 else f"{600000000000 + v % replica_accounts:012d}"


def _source(i: int, vault: str, *, regional: str | None, per_account: int = SOURCES_PER_ACCOUNT) -> dict[str, Any]:
    acct = _source_account(i, per_account)
    return site(
        acct,
        "eu-west-1",
        f"estate-s{i:02d}-euw1",
        encryption=SSE_S3,
        retention=(168, 5),
        id=f"s{i:02d}-euw1",
        replicate_to=[vault, *([regional] if regional else [])],
        replication={"mode": "bucket"},
        namespaces=[
            {
                "name": f"{fan_in_namespace_prefix(acct)}ns{i:02d}",
                "tables": [{"name": "orders", "columns": [{"name": "id", "type": "long"}]}],
            }
        ],
    )


def _replica(account: str, region: str, bucket: str) -> dict[str, Any]:
    return site(
        account, region, bucket, encryption=KMS_CREATED, retention=(4320, 10), storage_class="INTELLIGENT_TIERING"
    )


def estate_config(
    n_sources: int,
    replica_accounts: int = 1,
    *,
    sources_per_vault: int = SOURCES_PER_VAULT,
    sources_per_account: int = SOURCES_PER_ACCOUNT,
) -> dict[str, Any]:
    """A valid estate of `n_sources` source buckets (see the module docstring; `sources_per_vault` and
    `sources_per_account` change the ten of each)."""
    if n_sources < 1 or replica_accounts < 1:
        raise ValueError("an estate has at least one source and one replica account")
    per = sources_per_vault
    vaults = [f"estate-vault{v:02d}-euc1" for v in range((n_sources + per - 1) // per)]
    regional = "estate-s00-replica-euc1"
    sources = [
        _source(i, vaults[i // per], regional=regional if i == 0 else None, per_account=sources_per_account)
        for i in range(n_sources)
    ]
    replicas = [_replica(_vault_account(v, replica_accounts), "eu-central-1", b) for v, b in enumerate(vaults)]
    replicas.append(_replica("111111111111", "eu-central-1", regional))
    source_accounts = sorted({s["account_id"] for s in sources})
    vault_accounts = sorted({r["account_id"] for r in replicas} - {"111111111111"})
    return {
        "kit": {"name": "estate"},
        "sources": sources,
        "replicas": replicas,
        "protection": {
            "break_glass_principals": list(BREAK_GLASS),
            "guardrail_attach_roles": ["data-engineer"],
            "organization": {
                "management_account_id": "444444444444",
                "deploy_role_arn": deploy_role("444444444444"),
                "targets": ["ou-ab12-workloads", "ou-ab12-vault0001"],
                "ou_accounts": {
                    "ou-ab12-workloads": sorted({*source_accounts, "111111111111"}),
                    "ou-ab12-vault0001": vault_accounts,
                },
            },
        },
        "recovery": {"replica": vaults[0], "bucket": "estate-recovery-euc1", "namespace": "recovered"},
        "state": {"backend": "local"},
    }


def scp_row(cfg: KitConfig, label: str) -> dict[str, Any]:
    """SCPs per target and the largest compact SCP of one estate."""
    t0 = time.perf_counter()
    ds = build(cfg)
    scps = [d for d in ds if d.kind == "scp"]
    sizes = {d.name: len(compact_json(d.document)) for d in scps}
    bucket_policies = [len(compact_json(d.document)) for d in ds if d.kind == "bucket-policy"]
    org = cfg.protection.organization
    assert org is not None
    return {
        "estate": label,
        "sources": len(cfg.sources),
        "protected_buckets": len(cfg.replicas),
        "replica_accounts": len({r.account_id for r in cfg.replicas}),
        "targets": len(org.targets),
        "scps_per_target": len(scps),  # every kit SCP is attached to every target
        "largest_scp_chars": max(sizes.values()),
        "sizes": sizes,
        "largest_bucket_policy_chars": max(bucket_policies),  # a fan-in vault's grows with its sources
        "build_s": time.perf_counter() - t0,
    }


def measure(sizes: tuple[int, ...] = SIZES) -> list[dict[str, Any]]:
    rows = [
        scp_row(parse_config(estate_config(n), f"<estate of {n}>"), f"{n} source bucket{'s' if n != 1 else ''}")
        for n in sizes
    ]
    spread = parse_config(estate_config(sizes[-1], replica_accounts=5), "<estate, vaults in 5 accounts>")
    rows.append(scp_row(spread, f"{sizes[-1]} source buckets, vaults in 5 accounts"))
    return rows


def markdown(rows: list[dict[str, Any]] | None) -> str:
    rows = rows if rows is not None else measure()
    out = [
        "",
        "## Estate: the organization layer at any size (`bench/estate_scp.py`)",
        "",
        "SCPs attached to each organization target and the largest of them as deployed (compact JSON; limit "
        f"{SCP_LIMIT:,} characters) for generated estates: ten source buckets per account, ten sources per vault "
        "bucket (fan-in) in the vault account, plus one regional replica. The SCPs match protected buckets by tag "
        "and exempt the replication roles by name pattern, so neither the buckets nor the sources appear in them "
        "(docs/decisions/0026-estate.md).",
        "",
        "| Estate | Protected buckets | Replica accounts | SCPs per target | Largest SCP (chars) | Each SCP (chars) "
        "| Largest bucket policy (chars) | Within limits |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ok = (
            r["scps_per_target"] <= MAX_KIT_SCPS
            and r["largest_scp_chars"] <= SCP_LIMIT
            and r["largest_bucket_policy_chars"] <= BUCKET_POLICY_LIMIT
        )
        each = ", ".join(f"{name} {size:,}" for name, size in r["sizes"].items())
        out.append(
            f"| {r['estate']} | {r['protected_buckets']} | {r['replica_accounts']} | {r['scps_per_target']} | "
            f"{r['largest_scp_chars']:,} | {each} | {r['largest_bucket_policy_chars']:,} | {'yes' if ok else 'NO'} |"
        )
    out += ["", _per_account_note(rows[-2], rows[-1]), ""]
    return "\n".join(out)


def _per_account_note(base: dict[str, Any], spread: dict[str, Any]) -> str:
    """What one more replica account costs each SCP, from the last two rows (same estate, vaults spread out)."""
    extra = spread["replica_accounts"] - base["replica_accounts"]
    costs = {name: (spread["sizes"][name] - size) / extra for name, size in base["sizes"].items()}
    room = min(int((SCP_LIMIT - spread["sizes"][n]) // c) for n, c in costs.items() if c > 0)
    per = ", ".join(f"{name} +{cost:.0f}" for name, cost in costs.items())
    return (
        "The last row spreads the same vaults over more accounts: each replica account adds its deploy role to the "
        f"exemptions and one ARN pattern to the disassociation deny ({per} characters per account), so about {room} "
        "more replica accounts fit. What an estate's SCPs still list are principals and accounts the configuration "
        "names (break-glass, replica deploy roles, replica accounts, bring-your-own replica keys), never buckets or "
        "sources. A fan-in bucket's own policy grows with the accounts that feed it, not the sources (their roles "
        "are granted by name pattern in the feeding accounts, about 60 characters per account; limit "
        f"{BUCKET_POLICY_LIMIT:,}, KIT-IAM9; at most 100 such accounts, refused at validation): ten sources per vault "
        "here."
    )


def console(rows: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"    {r['estate']:<45} {r['scps_per_target']} SCPs per target, largest {r['largest_scp_chars']:>5} chars "
        f"({r['protected_buckets']} protected buckets, {r['build_s'] * 1000:.0f} ms)"
        for r in rows
    )


def main() -> int:
    rows = measure()
    print(console(rows))
    return 0 if all(r["scps_per_target"] <= MAX_KIT_SCPS and r["largest_scp_chars"] <= SCP_LIMIT for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
