"""An adopted source bucket's policy: the statements it holds today (`kit.toml`'s `bucket_policy` file) kept beside
the kit's, once each passes the rules below (docs/decisions/0033-adopting-an-existing-lake.md).

The kit's statements guard who changes the source's replication and its policy (decision 0028); an adopter's
statement must not defeat them, nor deny the kit's own principals what they need. Each rule has a stable id (the
`KIT-ADOPT*` family, beside `s3tables_kit.policies.lint`'s `KIT-IAM*`), and a refusal names the statement's Sid and the
rule. `merge` is what `s3tables_kit.policies.source_guard.source_bucket_policy` deploys; it refuses with
`AdoptedStatementRefused`, so the synth of a stack (and `s3tables_kit.policies.render`) stops before anything is
written.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import statements as iam_statements
from s3tables_kit.policies.model import VERSION, Document
from s3tables_kit.topology.config import KitConfig, Source
from s3tables_kit.topology.issues import KitRefusal

# What the kit's source statements guard: a grant of them in the adopter's statements is a second, unreviewed path.
GUARDED = (*iam_statements.SOURCE_REPLICATION_CHANGE, "PutTableBucketPolicy", "DeleteTableBucketPolicy")
# Every action a protection rule of the kit denies somewhere: none may be allowed to any principal.
PROTECTED = tuple(sorted({a for r in iam_actions.PROTECTION_RULES for a in r.actions} | set(GUARDED)))
# What the replication role reads in the source bucket: a Deny of it stops replication.
REPLICATION_READS = (*iam_actions.REPLICATION_SOURCE_TABLE_READ, *iam_actions.REPLICATION_SOURCE_BUCKET_LIST)
# A source table's policy and tags: a Deny table policy naming the replication role freezes that table's replication,
# and replication does not support tagged tables; no adopted statement grants them to anyone.
TABLE_POLICY_AND_TAGS = ("PutTablePolicy", "DeleteTablePolicy", "TagResource")
# Wildcards are matched against every action the kit names, which holds every action the rules look for.
KNOWN = sorted(iam_actions.BUCKET_LEVEL | iam_actions.TABLE_LEVEL | iam_actions.TABLE_OR_BUCKET_LEVEL)


class AdoptedStatementRefused(KitRefusal):
    """An adopter's statement that defeats a protection (each problem names the Sid and the rule)."""


@dataclass(frozen=True)
class KitPrincipals:
    """The principals the kit's statements exempt or rely on, by what they need from the source bucket."""

    replication_role: str
    guardians: tuple[str, ...]  # break-glass and the source's deploy role: who changes the guarded actions
    accounts: frozenset[str] = frozenset()  # the configured accounts: a grant names no principal outside them


@dataclass(frozen=True)
class AdoptedRule:
    id: str  # KIT-ADOPT1 ...: stable, like s3tables_kit.policies.lint's ids
    name: str
    explanation: str
    # (the statement, the kit's Sids, the kit's principals) -> the problem, or None
    check: Callable[[dict[str, Any], frozenset[str], KitPrincipals], str | None]

    @property
    def title(self) -> str:
        return f"{self.id} {self.name}"


def _actions(stmt: dict[str, Any]) -> set[str]:
    """The s3tables action names a statement covers (`NotAction`: all the others, so every protected one but those)."""
    if "NotAction" in stmt:
        excluded = {a for p in as_list(stmt["NotAction"]) for a in _expand(p)}
        return {a for a in _expand("s3tables:*") if a not in excluded}
    return {a for p in as_list(stmt.get("Action")) for a in _expand(p)}


def _expand(pattern: str) -> set[str]:
    """The kit-named s3tables actions an action pattern matches (IAM matches action names case-insensitively)."""
    if pattern == "*":
        pattern = "s3tables:*"
    if not pattern.lower().startswith("s3tables:"):
        return set()
    name = pattern.split(":", 1)[1].lower()
    return {a for a in KNOWN if fnmatch.fnmatchcase(a.lower(), name)}


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _principals(stmt: dict[str, Any]) -> tuple[set[str], bool]:
    """(the AWS principals named, whether the statement applies to any principal: `*`, or `NotPrincipal`)."""
    if "NotPrincipal" in stmt:
        return set(), True
    principal = stmt.get("Principal")
    if principal == "*":
        return set(), True
    named = {str(p) for p in as_list(principal.get("AWS"))} if isinstance(principal, dict) else set()
    return named, "*" in named


def _applies_to(stmt: dict[str, Any], arn: str) -> bool:
    """A Deny reaches `arn` whatever the request: it names it (or its account, or any principal) with no condition,
    or with one that only matches its ARN; a Deny with any other condition (TLS only, a source VPC) is the
    adopter's to reason about (the proofs cover the kit's principals)."""
    named, anyone = _principals(stmt)
    account = arn.split(":")[4]
    reaches = anyone or arn in named or account in named or f"arn:aws:iam::{account}:root" in named
    if not reaches:
        return False
    cond = stmt.get("Condition") or {}
    if not cond:
        return True
    if set(cond) <= {"ArnLike", "ArnEquals"} and all(set(v) == {"aws:PrincipalArn"} for v in cond.values()):
        patterns = [str(p) for v in cond.values() for p in as_list(v["aws:PrincipalArn"])]
        return any(fnmatch.fnmatchcase(arn, p) for p in patterns)  # a Deny aimed at it by name
    return False


def _sid(stmt: dict[str, Any], kit_sids: frozenset[str], _k: KitPrincipals) -> str | None:
    sid = stmt.get("Sid")
    if not isinstance(sid, str) or not sid:
        return "has no Sid: every adopted statement needs one, so that a refusal and a review can name it"
    if sid in kit_sids:
        return f"its Sid is one of the kit's statements ({sid}): rename it in the adopted policy file"
    return None


def _open_allow(stmt: dict[str, Any], _s: frozenset[str], _k: KitPrincipals) -> str | None:
    if stmt.get("Effect") != "Allow" or not _principals(stmt)[1]:
        return None
    hit = sorted(_actions(stmt) & set(PROTECTED))
    if hit:
        return f"allows any principal protected actions ({', '.join(hit[:4])}{', ...' if len(hit) > 4 else ''})"
    return None


def _grant_of(
    actions: Sequence[str], why: str
) -> Callable[[dict[str, Any], frozenset[str], KitPrincipals], str | None]:
    """A rule refusing any Allow of `actions`, to anyone: `grants <the actions>: <why>`."""

    def check(stmt: dict[str, Any], _s: frozenset[str], _k: KitPrincipals) -> str | None:
        hit = sorted(_actions(stmt) & set(actions)) if stmt.get("Effect") == "Allow" else []
        return f"grants {', '.join(hit)}: {why}" if hit else None

    return check


_guarded_grant = _grant_of(
    GUARDED,
    "the source's replication and its policy change only through the kit's deploy role and break-glass "
    "(docs/decisions/0028-lock-after-first-deploy.md)",
)


def _denies_the_kit(stmt: dict[str, Any], _s: frozenset[str], kit: KitPrincipals) -> str | None:
    if stmt.get("Effect") != "Deny":
        return None
    actions = _actions(stmt)
    if actions & set(REPLICATION_READS) and _applies_to(stmt, kit.replication_role):
        return f"denies the replication role {kit.replication_role} what it reads to replicate"
    for guardian in kit.guardians:
        if actions & set(GUARDED) and _applies_to(stmt, guardian):
            return f"denies {guardian} the replication and policy changes only it may make"
    return None


def _org_condition(stmt: dict[str, Any]) -> bool:
    """The statement holds only for principals of an organization (`aws:PrincipalOrgID`)."""
    return any("aws:principalorgid" in {k.lower() for k in kv} for kv in (stmt.get("Condition") or {}).values())


def _foreign_grant(stmt: dict[str, Any], _s: frozenset[str], kit: KitPrincipals) -> str | None:
    if stmt.get("Effect") != "Allow":
        return None
    named, anyone = _principals(stmt)
    if anyone:
        if _org_condition(stmt):
            return None
        return "grants any principal (`*`) without an aws:PrincipalOrgID condition"
    foreign = sorted(p for p in named if _account_of(p) not in kit.accounts)
    if foreign:
        return f"grants principals outside the configured accounts ({', '.join(foreign[:3])})"
    return None


def _account_of(principal: str) -> str:
    """The account of an AWS principal (an ARN, or a bare 12-digit account id); "" for anything else."""
    if principal.isdigit():
        return principal
    parts = principal.split(":")
    return parts[4] if len(parts) > 4 else ""


_table_policy_or_tag_grant = _grant_of(
    TABLE_POLICY_AND_TAGS,
    "a table policy can freeze a table's replication, and replication does not support tagged tables",
)


ADOPTED_RULES: tuple[AdoptedRule, ...] = (
    AdoptedRule(
        "KIT-ADOPT1",
        "AdoptedStatementSid",
        "Every adopted statement has a Sid of its own, never one of the kit's: the merged policy names each once.",
        _sid,
    ),
    AdoptedRule(
        "KIT-ADOPT2",
        "NoOpenProtectedAllow",
        "No Allow of a protected action (deletion, retention, encryption, policy, replication) to any principal.",
        _open_allow,
    ),
    AdoptedRule(
        "KIT-ADOPT3",
        "NoGuardedActionGrant",
        "No grant of the replication or bucket policy changes: the kit's guard says who makes them.",
        _guarded_grant,
    ),
    AdoptedRule(
        "KIT-ADOPT4",
        "NoDenyOfTheKit",
        "No unconditional Deny of what the replication role reads, or of the guarded changes to break-glass and the "
        "deploy role.",
        _denies_the_kit,
    ),
    AdoptedRule(
        "KIT-ADOPT5",
        "NoGrantOutsideTheOrganization",
        "No grant to a principal outside the configured accounts, nor to `*` without an aws:PrincipalOrgID condition.",
        _foreign_grant,
    ),
    AdoptedRule(
        "KIT-ADOPT6",
        "NoTablePolicyOrTagGrant",
        "No grant of PutTablePolicy, DeleteTablePolicy or TagResource, to anyone.",
        _table_policy_or_tag_grant,
    ),
)


def warnings(statements: Sequence[dict[str, Any]], principals: KitPrincipals) -> list[str]:
    """`<Sid>: [KIT-ADOPT7 ...]` for each conditional Deny of what the replication role reads that may reach it (the
    condition decides, at request time: the adopter reasons about it; the kit's proofs cover its own statements)."""
    out = []
    for stmt in statements:
        if stmt.get("Effect") != "Deny" or not stmt.get("Condition"):
            continue
        named, anyone = _principals(stmt)
        role = principals.replication_role
        reaches = anyone or role in named or _account_of(role) in {_account_of(p) for p in named}
        if reaches and _actions(stmt) & set(REPLICATION_READS) and not _applies_to(stmt, role):
            out.append(
                f"{stmt.get('Sid')}: [KIT-ADOPT7 ConditionalDenyOfReplication] a conditional Deny of what the "
                f"replication role {role} reads: check that its condition never holds for it"
            )
    return out


def refusals(statements: Sequence[dict[str, Any]], kit: Document, principals: KitPrincipals) -> list[str]:
    """One line per adopted statement and rule it breaks: `<Sid>: [<rule id> <name>] <why>`."""
    kit_sids = frozenset(str(s["Sid"]) for s in kit["Statement"])
    out = []
    seen: set[str] = set()
    for i, stmt in enumerate(statements):
        sid = str(stmt.get("Sid") or f"(statement {i + 1}, no Sid)")
        if sid in seen:
            out.append(f"{sid}: [KIT-ADOPT1 AdoptedStatementSid] two adopted statements share this Sid")
        seen.add(sid)
        for rule in ADOPTED_RULES:
            problem = rule.check(stmt, kit_sids, principals)
            if problem:
                out.append(f"{sid}: [{rule.title}] {problem}")
    return out


def kit_principals(cfg: KitConfig, src: Source) -> KitPrincipals:
    guardians = (*cfg.protection.break_glass_principals, *([src.deploy_role_arn] if src.deploy_role_arn else []))
    accounts = {
        *(s.account_id for s in cfg.sources),
        *(r.account_id for r in cfg.replicas),
        *(p.split(":")[4] for p in cfg.protection.break_glass_principals),
    }
    return KitPrincipals(cfg.replication_role_arn_of(src), tuple(guardians), frozenset(accounts))


def merge(cfg: KitConfig, src: Source, kit: Document) -> Document:
    """The bucket policy of the source `src`: its adopted statements (as they are, first) and the kit's; `kit` alone
    when it adopts none. Refuses (`AdoptedStatementRefused`) when an adopted statement breaks a rule."""
    adopted: list[dict[str, Any]] = src.adopted_statement_documents()
    if not adopted:
        return kit
    problems = refusals(adopted, kit, kit_principals(cfg, src))
    if problems:
        where = src.bucket_policy
        lines = "\n".join(f"  - {p}" for p in problems)
        raise AdoptedStatementRefused(f"the adopted bucket policy {where} of {src.bucket} is refused:\n{lines}")
    return {"Version": VERSION, "Statement": [*adopted, *kit["Statement"]]}
