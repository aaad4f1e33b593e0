"""An allow-list placed in one layer of one configuration: the row of `s3tables_kit.policies.allowlists` (what anyone
and each principal class may do on the scope), the principals each class holds here, the scope's resources and the
condition that names it where its ARN is known only after apply (a tag, an alias).

`placed` builds one from (class, principals, actions, why) rows. A principal of several rows (break-glass that
deploys) becomes one class of their union, named after them all: bound by the Denies of two classes it could take
only what both allow. `Placed.allowed` answers "may this principal take that action here" from the same rows, which
the catalogue-wide proofs compare with the simulator's decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from s3tables_kit.policies import allowlists
from s3tables_kit.policies import statements as iam_statements

Row = tuple[str, Sequence[str], Sequence[str], str]  # (class, principals, actions besides everyone's, why)


@dataclass(frozen=True)
class Placed:
    rows: allowlists.AllowList
    principals: Mapping[str, Sequence[str]]
    resources: tuple[str, ...]
    condition: dict[str, dict[str, Any]] = field(default_factory=dict)

    def statements(self, *, resource_policy: bool) -> list[iam_statements.Statement | None]:
        """The scope's Denies in this layer (`resource_policy`: Principal "*")."""
        return list(
            self.rows.statements(
                self.resources, self.principals, condition=self.condition or None, resource_policy=resource_policy
            )
        )

    def allowed(self, action: str, principal: str) -> bool:
        """Whether the allow-list lets `principal` take `action` (what the rendered Denies leave open to it)."""
        held = [c for c, arns in self.principals.items() if any(fnmatchcase(principal, a) for a in arns)]
        return all(self.rows.permits(c, action) for c in held or [allowlists.EVERYONE])

    def collapsed(self) -> Placed:
        """One Deny for everyone, of every action no class holds: the coarser layer where the finer one (a key
        policy nobody can change) splits by class, and an SCP has no room for both."""
        held = {a for c in self.rows.classes for a in c.actions} | set(self.rows.everyone)
        return replace(self, rows=replace(self.rows, everyone=tuple(sorted(held)), classes=()), principals={})


def placed(
    rows: allowlists.AllowList,
    members: Iterable[Row],
    resources: Sequence[str],
    condition: dict[str, dict[str, Any]] | None,
) -> Placed:
    """`rows` (its scope, title, services, everyone's list; exempting nobody) with the classes of `members`."""
    held: dict[str, tuple[list[str], set[str], list[str]]] = {}
    for name, principals, actions, why in members:
        for p in principals:
            names, acts, whys = held.setdefault(p, ([], set(), []))
            names.append(name)
            acts.update(actions)
            whys.append(why)
    classes: dict[str, allowlists.Allowance] = {}
    holders: dict[str, list[str]] = {}
    for p, (names, acts, whys) in held.items():
        name = "-".join(names)
        classes[name] = allowlists.Allowance(name, tuple(sorted(acts)), " ".join(whys))
        holders.setdefault(name, []).append(p)
    return Placed(
        replace(rows, classes=tuple(classes.values()), exempt=()),
        {c: sorted(ps) for c, ps in holders.items()},
        tuple(resources),
        dict(condition or {}),
    )


def summary_lines(scopes: Iterable[Placed]) -> list[str]:
    """The allow-lists as reviewers read them in SUMMARY.md: each class, its principals, what it may do; every
    other action of the scope denied."""
    lines = ["| Scope | Class | May (every other action of the scope denied) |", "|---|---|---|"]
    for s in scopes:
        lines.append(f"| {s.rows.title} | everyone else | {', '.join(f'`{a}`' for a in s.rows.everyone)} |")
        for c in s.rows.classes:
            who = ", ".join(f"`{p}`" for p in s.principals[c.principal_class])
            may = ", ".join(f"`{a}`" for a in s.rows.allowed(c.principal_class))
            lines.append(f"| {s.rows.title} | {c.principal_class}: {who} | {may} |")
    return lines


def risks(scopes: Iterable[Placed]) -> dict[str, str]:
    """Each Deny's risk by Sid (`Deny<scope>`, `Deny<scope><Class>`), for SUMMARY.md."""
    out: dict[str, str] = {}
    for s in scopes:
        out[f"Deny{s.rows.scope}"] = f"{s.rows.risk} Everyone else may only read."
        for c in s.rows.classes:
            title = "".join(w.title() for w in c.principal_class.split("-"))
            out[f"Deny{s.rows.scope}{title}"] = f"{s.rows.risk} {c.why}"
    return out
