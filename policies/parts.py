"""Managed policies of constant size: one document split into parts, each a managed policy of its own.

IAM holds a managed policy to 6,144 characters (white space not counted). A guardrail names every protected bucket
of its account by ARN, so it grows with them (nine replicas in one account: about 7,500 characters). Its statements
are packed, in order, into parts of at most `PART_BUDGET` characters each; a statement too large for one part alone
is cut along its `Resource` list first. The number of parts is derived from the document, never configured, and
every part is attached to the same roles, so a role carries every statement it carried before the split.

Part 1 keeps the document's name and its managed policy's (what was deployed before any split stays where it is:
construct ids are the Terraform state contract); part k > 1 is `<purpose>-part<k>--<site>`, deployed as the managed
policy `<name>-part<k>`. The guards name every part by the pattern `<name>*` (`part_pattern`), so a guard's size does
not depend on the number of parts either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from s3tables_kit.policies.model import Document, PolicyDoc

# 1,024 below the managed policy quota: room for the escapes Terraform's jsonencode adds (`<`, `>`, `&`) and for a
# rule's growth between two renders without a part landing over the quota.
PART_BUDGET = 5120
PART_MARK = "-part"
SITE_SEPARATOR = "--"  # a document's name: `<purpose>--<site>` (`s3tables_kit.policies.docset`)
_PART = re.compile(r"^(?P<purpose>.+?)-part(?P<k>[2-9]|[1-9][0-9]+)$")


def size(node: object) -> int:
    """Characters as IAM counts them against its quotas: the compact JSON (the kit's strings hold no white space)."""
    return len(json.dumps(node, separators=(",", ":")))


def part_name(name: str, k: int) -> str:
    """The name of part `k` of `name` (a managed policy's or a document purpose's): part 1 is `name` itself."""
    return name if k == 1 else f"{name}{PART_MARK}{k}"


def part_pattern(arn: str) -> str:
    """Every part of the managed policy `arn` (an ARN pattern for a guard's `Resource` or `iam:PolicyARN`)."""
    return f"{arn}*"


def purpose_of(purpose: str) -> tuple[str, int]:
    """(the purpose, the part number) of a document purpose: `replica-guardrail-part2` -> (`replica-guardrail`, 2)."""
    m = _PART.match(purpose)
    return (m["purpose"], int(m["k"])) if m else (purpose, 1)


def part_of(name: str, purpose: str, site: str | None = None) -> bool:
    """Is the document `name` (`<purpose>[-part<k>]--<site>`) a part of `purpose`'s (at `site`, if given)?"""
    head, sep, tail = name.partition(SITE_SEPARATOR)
    return bool(sep) and purpose_of(head)[0] == purpose and site in (None, tail)


def with_parts(name: str, names: Iterable[str]) -> tuple[str, ...]:
    """`name` (`[<prefix>]<purpose>--<site>`, part 1) and every further part of it among `names`, in order."""
    head, sep, site = name.rpartition(SITE_SEPARATOR)
    known = set(names)
    out = [name]
    while sep and (nxt := f"{part_name(head, len(out) + 1)}{sep}{site}") in known:
        out.append(nxt)
    return tuple(out)


def _cut(stmt: dict[str, object], budget: int) -> list[dict[str, object]]:
    """A statement too large for one part, cut along its `Resource` list into statements that each fit (Sids
    `<Sid>`, `<Sid>2`, ...: unique in whatever part they land)."""
    resources = stmt.get("Resource")
    if not isinstance(resources, list) or len(resources) < 2:
        raise ValueError(f"statement {stmt.get('Sid')} ({size(stmt)} characters) does not fit a part of {budget}")
    out: list[dict[str, object]] = []
    chunk: list[object] = []
    for r in resources:
        if chunk and size({**stmt, "Resource": [*chunk, r]}) > budget:
            out.append({**stmt, "Resource": chunk})
            chunk = []
        chunk.append(r)
    out.append({**stmt, "Resource": chunk})
    if any(size(s) > budget for s in out):
        raise ValueError(f"statement {stmt.get('Sid')}: one of its resources alone does not fit a part of {budget}")
    return [{**s, "Sid": f"{stmt['Sid']}{i + 1 if i else ''}"} for i, s in enumerate(out)]


def split(document: Document, budget: int = PART_BUDGET) -> list[Document]:
    """The document's statements packed in order into documents of at most `budget` characters (one part when it
    fits): the number of parts follows from the statements, each part's size is bounded whatever it guards."""
    envelope = size({**document, "Statement": []})
    room = budget - envelope
    parts: list[list[dict[str, object]]] = [[]]
    used = 0
    for stmt in document["Statement"]:
        for s in _cut(stmt, room) if size(stmt) > room else [stmt]:
            cost = size(s) + (1 if parts[-1] else 0)  # the comma between statements
            if parts[-1] and used + cost > room:
                parts.append([])
                used, cost = 0, size(s)
            parts[-1].append(s)
            used += cost
    return [{**document, "Statement": stmts} for stmts in parts]


def managed_policy_docs(
    purpose: str, site: str, account_id: str, policy_name: str, document: Document, *, stem: str = ""
) -> list[PolicyDoc]:
    """The parts of one managed policy as named documents (`<purpose>--<site>`, `<purpose>-part<k>--<site>`), each
    attached to `IAM managed policy <policy_name>[-part<k>]`. `stem`: a failover candidate's prefix (the part is
    rendered as `<stem><name>` and deployed as `<name>`)."""
    out = []
    for k, part in enumerate(split(document), 1):
        name = f"{part_name(purpose, k)}{SITE_SEPARATOR}{site}"
        attached = f"IAM managed policy {part_name(policy_name, k)}"
        out.append(PolicyDoc(stem + name, "identity", account_id, attached, part, deploys_as=name if stem else None))
    return out
