"""Protected scopes as allow-lists: a scope (its resources, and the condition that names it where its ARN is known
only after apply) and, for each principal class, the actions that class may take there. Every other action is
denied to the class with `NotAction`, so an action AWS adds tomorrow is denied until a row classifies it; a class
absent from the list (everyone else) gets `others` only.

A scope is a record and so is each class: a new principal class adds a row (`ClassGrant`), a new scope a
`ScopeAllowList`, never a branch in a builder. `statements` renders one Deny per class, for a resource policy
(`Principal: "*"`) or an SCP (no principal); `allowed` answers "may this class take that action" from the same rows,
which the catalogue-wide proofs compare with the simulator's decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase

from s3tables_kit.policies import statements as S

# Reads, by the catalogue's own naming: every Get*, List* and Describe* action of s3, kms and emr-serverless is of
# access level Read or List (held by tests/test_policy_vault_catalogue.py), so a pattern grants no write AWS adds.
S3_READS = ("s3:Get*", "s3:List*")
KMS_READS = ("kms:Describe*", "kms:Get*", "kms:List*")
EMR_READS = ("emr-serverless:Get*", "emr-serverless:List*")


@dataclass(frozen=True)
class ClassGrant:
    """A principal class of a scope: its name (for reviewers), the principal ARNs (patterns) it holds, and every
    action it may take in the scope (reads included)."""

    name: str
    principals: tuple[str, ...]
    actions: tuple[str, ...]


@dataclass(frozen=True)
class ScopeAllowList:
    """One protected scope. `sid`: the stem of its statements' Sids; `resources`: what it covers; `when`: the
    condition naming it besides its ARNs (a tag); `others`: what every principal outside `classes` may do."""

    sid: str
    about: str
    resources: tuple[str, ...]
    others: tuple[str, ...]
    classes: tuple[ClassGrant, ...] = ()
    when: dict[str, dict[str, str]] = field(default_factory=dict)

    def collapsed(self) -> ScopeAllowList:
        """One Deny for everyone, of every action no class holds: the coarser layer where the finer one (a key
        policy nobody can change) splits by class, and an SCP has no room for both."""
        held = {a for c in self.classes for a in c.actions} | set(self.others)
        return replace(self, others=tuple(sorted(held)), classes=())

    def named(self) -> list[str]:
        return sorted({p for c in self.classes for p in c.principals})

    def allowed(self, action: str, principal: str) -> bool:
        """Whether the allow-list lets `principal` take `action` (what the rendered Denies leave open to it)."""
        holders = [c for c in self.classes if any(fnmatchcase(principal, p) for p in c.principals)]
        lists = [c.actions for c in holders] or [self.others]
        # a principal of several classes is bound by each class's Deny: only what every one of them allows
        return all(any(_match(action, a) for a in acts) for acts in lists)


def _match(action: str, pattern: str) -> bool:
    return fnmatchcase(action.lower(), pattern.lower())


def _deny(
    sid: str, scope: ScopeAllowList, actions: Iterable[str], arn_op: str, arns: list[str], kind: str
) -> S.Statement:
    condition: dict[str, dict[str, object]] = {op: dict(kv) for op, kv in scope.when.items()}
    if arns:
        condition[arn_op] = {"aws:PrincipalArn": arns}
    out: S.Statement = {"Sid": sid, "Effect": "Deny"}
    if kind == "resource-policy":
        out["Principal"] = "*"
    body = S.statement(sid, "Deny", sorted(set(actions)), scope.resources, condition=condition)
    out["NotAction"] = body["Action"]
    out["Resource"] = body["Resource"]
    if "Condition" in body:
        out["Condition"] = body["Condition"]
    return out


def statements(scope: ScopeAllowList, *, kind: str) -> list[S.Statement | None]:
    """The scope's Denies for `kind` "resource-policy" or "scp": one for the principals outside every class (they
    may take `others` only), one per class (it may take its own list only)."""
    if not scope.others or any(not c.actions for c in scope.classes):
        raise ValueError(f"{scope.sid}: an empty allow-list renders no NotAction (deny the actions by name)")
    out: list[S.Statement | None] = [
        _deny(f"Deny{scope.sid}ExceptReads", scope, scope.others, "ArnNotLike", scope.named(), kind)
    ]
    for c in scope.classes:
        out.append(_deny(f"Deny{scope.sid}Except{c.name}", scope, c.actions, "ArnLike", sorted(c.principals), kind))
    return out


def summary_lines(scopes: Iterable[ScopeAllowList]) -> list[str]:
    """The allow-lists as reviewers read them beside SUMMARY.md: each class, what it may do, every other action
    denied."""
    lines = ["| Scope | Class | May (every other action of the scope denied) |", "|---|---|---|"]
    for s in scopes:
        lines.append(f"| {s.about} | everyone else | {', '.join(f'`{a}`' for a in s.others)} |")
        for c in s.classes:
            who = ", ".join(f"`{p}`" for p in c.principals)
            lines.append(f"| {s.about} | {c.name}: {who} | {', '.join(f'`{a}`' for a in c.actions)} |")
    return lines
