"""The SUMMARY.md section on failover (`s3tables_kit.policies.render`): per replica that could be promoted, who may do
what on its promoted tables, read from the promoted bucket policy that `s3tables_kit.policies.failover` builds."""

from __future__ import annotations

from collections.abc import Sequence

from s3tables_kit.policies.actions import PROMOTED_DEPLOY_ACTIONS
from s3tables_kit.policies.failover import promoted_bucket_policy, promoted_scp_targets, scp_promoted_name
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.failover import failover_topology


def _short(arns: Sequence[str]) -> str:
    """`<account>:role/<name>` for IAM ARNs (two accounts may hold a role of the same name), names otherwise."""
    out = [f"`{a.split(':')[4]}:{a.rsplit(':', 1)[-1]}`" if a.startswith("arn:") else f"`{a}`" for a in arns]
    return ", ".join(out) or "nobody"


def deploy_role_section() -> list[str]:
    """What the promoted account's deploy role may still do on the promoted bucket, with the reason per action."""
    lines = [
        "The promoted account's deploy role keeps only what `cdktf deploy` of the failover topology does on the",
        "promoted bucket; it may not rewrite the promoted bucket's or tables' policies (denied at the first step:",
        "`s3tables-kit failover` applies them as break-glass, the deploy then finds them unchanged):",
        "",
        "| Deploy role action on the promoted bucket | Why `cdktf deploy` needs it |",
        "|---|---|",
    ]
    lines += [f"| `{action}` | {why} |" for action, why in PROMOTED_DEPLOY_ACTIONS.items()]
    return lines


def summary_section(cfg: KitConfig) -> str:
    """The SUMMARY.md section on failover: per replica that could be promoted, who may do what on its promoted
    tables (read from the promoted bucket policy itself), and what the failover topology changes and keeps."""
    lines = [
        "",
        "## Failover: a promoted replica",
        "",
        "Reviewed before any incident. When `s3tables-kit failover` promotes the tables of a replica bucket",
        "(`DisassociateTableReplication`), these documents replace its replica protection: the tool applies the",
        "bucket policy and one table policy per promoted table, and `cdktf deploy` of the failover topology",
        "(`[failover] promoted_bucket`, with break-glass credentials) deploys the same bucket policy and the rest.",
        "Writers write; deletion, retention, encryption, replication, policy and setting changes are break-glass",
        "only in every layer (bucket and table policies, guardrail, SCP): after a failover the promoted bucket holds",
        "the only writable copy of the data, so one deploy with a wrong plan must not shorten its retention or cut",
        "its replication. The failed source's replication role is exempt from nothing there.",
        "Files: `failover--<bucket>--*.json`.",
        "",
        *deploy_role_section(),
    ]
    for r in cfg.replicas:
        topo = failover_topology(cfg, r.bucket)
        policy = promoted_bucket_policy(cfg, topo)
        lines += [
            "",
            f"### Promoting `{r.bucket}` ({r.region}, account {r.account_id})",
            "",
            f"- Writers: {_short(topo.writer_roles)} (`failover.writer_roles` of account {r.account_id}).",
            f"- Replicates to: {_short([d.bucket for d in topo.destinations])}"
            + (" (the configured `replicate_to`)" if topo.new_buckets or cfg.kind.promoted
               else " (the remaining replicas, unless `failover.replicate_to` says otherwise)")
            + f", with the role `{topo.replication_role_name}`; the failed source's role can no longer write them.",
            f"- Stays a replica of the failed source: {_short([x.bucket for x in topo.retained])}.",
            "- Recovery and its rehearsal read: "
            + (f"`{topo.recovery_replica.bucket}` (`failover--{r.bucket}--recovery-role-permissions`)"
               if topo.recovery_replica else "none yet: `failover.replicate_to` must name a bucket of the "
               "recovery account (the configuration is refused otherwise)")
            + f"; the recovery bucket `{cfg.recovery.bucket}` stays where it is.",
            "- Replaced, never re-created: this bucket policy, the table policies of promoted tables, the guardrail,",
            f"  the SCPs (plus `{scp_promoted_name(cfg)}`, on {_short(promoted_scp_targets(topo))} alone: every other"
            " account may only read this bucket), the replica key policies.",
            "",
            "| Actions on the promoted bucket and tables | Denied to everyone except |",
            "|---|---|",
        ]  # fmt: skip
        for stmt in policy["Statement"]:
            if stmt["Effect"] != "Deny" or "Action" not in stmt:  # an allow-list: in ALLOWLISTS.md
                continue
            acts = stmt["Action"] if isinstance(stmt["Action"], list) else [stmt["Action"]]
            cond = stmt.get("Condition", {})
            exempt = cond.get("ArnNotLike", {}).get("aws:PrincipalArn", [])
            exempt = [exempt] if isinstance(exempt, str) else list(exempt)
            who = _short(exempt)
            if "StringNotEqualsIfExists" in cond:
                who += ", S3 Tables maintenance"
            short = ", ".join(a.removeprefix("s3tables:") for a in acts)
            lines.append(f"| `{stmt['Sid']}`: {short} | {who} |")
    return "\n".join(lines) + "\n"
