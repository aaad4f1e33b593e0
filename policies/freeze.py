"""The writers' freeze of a planned failover: one reviewed Deny, merged into the bucket policy of the bucket that is
moved away from while its replicas catch up, then taken out again.

`s3tables-kit failover --planned` puts `frozen_policy(live, freeze_statement(...))` as the table bucket policy of
the source (the bucket's own policy, if it has one, with the freeze statement appended: a bucket has one policy, so
the freeze is merged, never put in its place), waits until every replica has the source's current snapshot,
promotes, and then puts back the text it read before, byte for byte (or deletes the policy when there was none).
A run killed in between finds the freeze again by its Sid (`is_frozen`); `thawed` takes it out when the original
text is not known any more.

Rendered for review next to the failover candidates (`planned-failover-freeze--<bucket>`): the freeze of the source
(its kit-deployed policy is none: the freeze alone) and, for the way home, of each replica once promoted (its
failover bucket policy with the freeze appended), exactly the documents the tool puts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import Document, PolicyDoc, doc
from s3tables_kit.topology.config import KitConfig

NAME_PREFIX = "planned-failover-freeze--"


def freeze_statement(break_glass: Sequence[str], bucket_arn: str) -> iam_statements.Statement:
    """The Deny of every data write on `bucket_arn` and its tables, for everyone but `break_glass`."""
    return iam_statements.deny_writes_during_planned_failover(
        iam_actions.FREEZE_SID, iam_actions.FREEZE_ACTIONS, bucket_arn, break_glass
    )


def is_frozen(document: Document | None) -> bool:
    return document is not None and any(s.get("Sid") == iam_actions.FREEZE_SID for s in document.get("Statement", []))


def frozen_policy(live: Document | None, statement: iam_statements.Statement) -> Document:
    """`live` (the bucket's policy, None: it has none) with the freeze appended (replacing an earlier freeze)."""
    if live is None:
        return doc(statement)
    others = [s for s in live.get("Statement", []) if s.get("Sid") != iam_actions.FREEZE_SID]
    return {**live, "Statement": [*others, statement]}


def thawed(document: Document) -> Document | None:
    """`document` without the freeze; None when nothing else is left (the bucket had no policy)."""
    others = [s for s in document.get("Statement", []) if s.get("Sid") != iam_actions.FREEZE_SID]
    return {**document, "Statement": others} if others else None


def render(document: Document) -> str:
    """The text the tool puts (the stacks' form of a bucket policy: `json.dumps(..., indent=2)`)."""
    return json.dumps(document, indent=2)


def freeze_policy_docs(cfg: KitConfig) -> list[PolicyDoc]:
    """The frozen bucket policies of `cfg`'s planned failovers: the source's, and each replica's once promoted (the
    failback). Only a topology with `[failover]` has them (a planned failover promotes like the emergency one)."""
    if cfg.failover is None or not cfg.scheme.builds_failover_topology:
        return []
    from s3tables_kit.policies.failover import failover_documents

    bg = tuple(cfg.protection.break_glass_principals)
    (src,) = cfg.sources  # the failover topology is built for a `[source]` only (`Scheme.builds_failover_topology`)
    out = [
        PolicyDoc(
            NAME_PREFIX + src.bucket,
            "bucket-policy",
            src.account_id,
            f"table bucket {src.bucket} (source) during a planned failover, put by `s3tables-kit failover --planned`",
            frozen_policy(None, freeze_statement(bg, src.bucket_arn)),
        )
    ]
    for r in cfg.replicas:
        promoted = failover_documents(cfg, r.bucket).bucket_policy
        out.append(
            PolicyDoc(
                NAME_PREFIX + r.bucket,
                "bucket-policy",
                r.account_id,
                f"table bucket {r.bucket} once promoted, during the planned failback from it",
                frozen_policy(promoted, freeze_statement(bg, r.bucket_arn)),
            )
        )
    return out


def summary_section(cfg: KitConfig) -> str:
    """The SUMMARY.md section on the freeze (empty without `[failover]`)."""
    docs = freeze_policy_docs(cfg)
    if not docs:
        return ""
    (src,) = cfg.sources  # `freeze_policy_docs` has documents for a `[source]` only
    stmt = freeze_statement(tuple(cfg.protection.break_glass_principals), src.bucket_arn)
    acts = ", ".join(a.removeprefix("s3tables:") for a in stmt["Action"])
    exempt = stmt["Condition"]["ArnNotLike"]["aws:PrincipalArn"]
    exempt = [exempt] if isinstance(exempt, str) else exempt
    lines = [
        "",
        "## Planned failover: the writers' freeze",
        "",
        "`s3tables-kit failover --planned` moves a lake with an RPO of zero: it merges this Deny into the table",
        "bucket policy of the bucket moved away from, waits until every replica has that bucket's current snapshot,",
        "promotes, proves the snapshot ids equal, and puts the bucket's policy back exactly as it read it (or deletes",
        "it when there was none). The freeze is also lifted on a timeout or any error before the promotion. Reads,",
        "the replication service's included, are untouched.",
        "",
        "| Sid | Actions denied | Denied to everyone except |",
        "|---|---|---|",
        f"| `{stmt['Sid']}` | {acts} | {', '.join(f'`{e}`' for e in exempt)} |",
        "",
        "| Frozen bucket policy | Bucket |",
        "|---|---|",
        *[f"| `{d.name}.json` | {d.attached_to} |" for d in docs],
    ]
    return "\n".join(lines) + "\n"
