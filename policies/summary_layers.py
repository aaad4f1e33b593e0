"""SUMMARY.md's "Layers per protected action", counted per replica over the documents that apply to it: its
bucket policy, its table policy, its account's guardrail, its key policy and the SCPs; within a layer, only the
statements whose resources name that replica, and an actor passes a layer only if every such Deny exempts it.

Counting over every document of a kind at once mixed in exemptions that hold elsewhere (a source bucket policy's
deploy-role exemption, another replica's), which printed false "below two" rows and hid real ones.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from typing import Any

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies.parts import part_of
from s3tables_kit.topology.config import KitConfig, Replica


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def exempt_arns(stmt: dict[str, Any]) -> list[str]:
    return _as_list(stmt.get("Condition", {}).get("ArnNotLike", {}).get("aws:PrincipalArn"))


def passes(actor: str, exempt: Iterable[str]) -> bool:
    """Is `actor` exempt (an ARN, or an ARN pattern of an estate: `ArnNotLike` wildcards)?"""
    return any(fnmatch.fnmatchcase(actor, pattern) for pattern in exempt)


def replica_documents(docs: Sequence[policy_documents.PolicyDoc], replica: Replica) -> list[policy_documents.PolicyDoc]:
    names = {
        f"replica-bucket-policy--{replica.bucket}",
        f"replica-table-policy--{replica.bucket}",
        f"kms-key-policy--{replica.bucket}",
    }
    return [
        d
        for d in docs
        if d.name in names or d.kind == "scp" or part_of(d.name, "replica-guardrail", replica.account_id)  # every part
    ]


# The pipeline's key guards name the source keys (and alarm topic keys), never a replica's.
SOURCE_KEY_SIDS = frozenset(
    {r.sid for r in iam_actions.PIPELINE_RULES if r.target == "keys"} | {"DenySourceOwnKeyDestruction"}
)


def _names_replica(stmt: dict[str, Any], action: str, replica: Replica) -> bool:
    """Does the statement's Resource cover `action` on this replica (its bucket, or a table of it)? A replica key is
    named by tag, alias or key ARN: every key statement of the replica's documents counts, but the source keys'."""
    if not action.startswith("s3tables:"):
        return replica.encryption.type == "kms" and stmt.get("Sid") not in SOURCE_KEY_SIDS
    samples = [replica.bucket_arn, f"{replica.bucket_arn}/table/{policy_documents.TABLE_ID_PLACEHOLDER}"]
    return any(fnmatch.fnmatchcase(arn, r) for arn in samples for r in _as_list(stmt.get("Resource")))


def covering(
    docs: Sequence[policy_documents.PolicyDoc], layer_of: Any, layer: str, action: str, replica: Replica
) -> list[dict[str, Any]]:
    """The Deny statements of `layer` (among the replica's documents) that cover `action` on the replica."""
    return [
        s
        for d in docs
        if layer_of(d) == layer
        for s in d.document["Statement"]
        if s["Effect"] == "Deny" and action in _as_list(s.get("Action")) and _names_replica(s, action, replica)
    ]


def layers_left(
    cfg: KitConfig,
    docs: Sequence[policy_documents.PolicyDoc],
    action: str,
    *,
    layer_of: Any,
    layers: Sequence[str],
    change: dict[str, tuple[str, str]],
) -> tuple[dict[str, set[str]], int | None]:
    """({layer: who passes it besides break-glass (over every replica)}, the fewest layers left against any one
    actor of any replica, None when the action names nothing of any replica). `change`: per layer, (the action that
    changes it, the layer whose Deny decides who may)."""
    bg = set(cfg.protection.break_glass_principals)
    shown: dict[str, set[str]] = {}
    lowest: int | None = None
    for replica in cfg.replicas:
        rdocs = replica_documents(docs, replica)
        per_layer: dict[str, list[list[str]]] = {}
        for layer in layers:
            stmts = covering(rdocs, layer_of, layer, action, replica)
            if stmts:
                per_layer[layer] = [exempt_arns(s) for s in stmts]
                common = set.intersection(*(set(e) for e in per_layer[layer])) - bg
                shown.setdefault(layer, set()).update(common)
        if not per_layer:
            continue  # nothing of this replica is named by the action (a replica key where the replica has none)
        changers = {
            layer: [exempt_arns(s) for s in covering(rdocs, layer_of, where, act, replica)]
            for layer, (act, where) in change.items()
        }
        actors = sorted({replica.deploy_role_arn} - bg) if replica.deploy_role_arn else []
        for actor in [*actors, "anyone else"]:
            through = {layer for layer, ex in per_layer.items() if ex and all(passes(actor, e) for e in ex)}
            if per_layer and through == set(per_layer):
                continue  # a legitimate path: every layer exempts it
            standing = [
                layer
                for layer in per_layer
                if layer not in through
                and not (changers.get(layer) and all(passes(actor, e) for e in changers[layer]))
                # the guardrail binds only the roles that carry it: deploy roles always, anyone else maybe not
                and not (layer == "guardrail" and actor == "anyone else")
            ]
            lowest = len(standing) if lowest is None else min(lowest, len(standing))
    return shown, lowest
