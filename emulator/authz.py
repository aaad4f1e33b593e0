"""The stand-in's one policy evaluator: who signed a request, and whether a policy document's statements apply to it.

Both authorization paths of the stand-in use it: the explicit Denies of the buckets a test enforces
(`emulator.resource_policy`) and `make live-verify`'s full decision over the deployed layers (`emulator.live`).
Minimal and explicit about it (the IAM evaluator of the policy proofs, `policies/simulator`, is the reference):

* a statement applies when its Action/NotAction, Resource/NotResource, Principal (in a resource policy: `*`, the
  principal's ARN, its account or the account's root) and every condition hold;
* conditions: String*, Arn*, Numeric*, Bool and Null operators, `...IfExists`, `ForAnyValue:`/`ForAllValues:`
  prefixes; a missing key fails a positive operator and passes a negated one (as IAM does); any other operator raises
  ValueError naming it (the request then fails with HTTP 500, never a silent allow or deny);
* the principal of a request is the role of an assumed-role session (moto's STS) or the IAM user of its access key;
  a key moto does not know has none (the key is absent, as for a service principal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_CREDENTIAL_RE = re.compile(r"Credential=([A-Z0-9]+)/")
_NEGATED = (
    "StringNotEquals", "StringNotEqualsIgnoreCase", "StringNotLike", "ArnNotEquals", "ArnNotLike", "NumericNotEquals"
)  # fmt: skip
_NUMERIC = {
    "NumericEquals": lambda a, e: a == e,
    "NumericLessThan": lambda a, e: a < e,
    "NumericLessThanEquals": lambda a, e: a <= e,
    "NumericGreaterThan": lambda a, e: a > e,
    "NumericGreaterThanEquals": lambda a, e: a >= e,
}


# ---------------------------------------------------------------- who ----


@dataclass(frozen=True)
class RequestPrincipal:
    """The principal of a signed request: `arn` is what `aws:PrincipalArn` holds (the role of an assumed-role
    session, or an IAM user), `session_arn` the assumed-role session AWS names in a denial (None for a user)."""

    arn: str
    session_arn: str | None = None

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


def caller(environ: dict[str, Any]) -> RequestPrincipal | None:
    """The principal whose access key signed the request, None for a key moto does not know."""
    found = _CREDENTIAL_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if not found:
        return None
    key = found.group(1)
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends

    for _, partitions in sts_backends.items():
        for _, backend in partitions.items():
            role = backend.get_assumed_role_from_access_key(key)
            if role is not None:
                return RequestPrincipal(str(role.role_arn), str(role.arn))
    for _, iam_partitions in iam_backends.items():
        for _, iam in iam_partitions.items():
            user = iam.get_user_from_access_key_id(key)
            if user is not None:
                return RequestPrincipal(str(user.arn))
    return None


# ---------------------------------------------------------------- statements ----


def statements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    st = doc.get("Statement", [])
    return [st] if isinstance(st, dict) else list(st)


def explicit_deny(
    doc: dict[str, Any], action: str, resource: str, ctx: dict[str, Any], *, principal: str, resource_policy: bool
) -> str:
    """The Sid (or `#<index>`) of the first Deny statement of `doc` that applies, "" when none does."""
    for i, st in enumerate(statements(doc)):
        if st.get("Effect") == "Deny" and applies(
            st, action, resource, ctx, principal=principal, resource_policy=resource_policy
        ):
            return str(st.get("Sid", f"#{i}"))
    return ""


def allows(
    doc: dict[str, Any], action: str, resource: str, ctx: dict[str, Any], *, principal: str, resource_policy: bool
) -> bool:
    return any(
        st.get("Effect") == "Allow"
        and applies(st, action, resource, ctx, principal=principal, resource_policy=resource_policy)
        for st in statements(doc)
    )


def applies(
    st: dict[str, Any], action: str, resource: str, ctx: dict[str, Any], *, principal: str, resource_policy: bool
) -> bool:
    if "Action" in st and not any(_glob(a, action, ignore_case=True) for a in _list(st["Action"])):
        return False
    if "NotAction" in st and any(_glob(a, action, ignore_case=True) for a in _list(st["NotAction"])):
        return False
    if "Resource" in st and not any(_glob(r, resource) for r in _list(st["Resource"])):
        return False
    if "NotResource" in st and any(_glob(r, resource) for r in _list(st["NotResource"])):
        return False
    if resource_policy and not _principal_matches(st.get("Principal"), principal):
        return False
    return conditions(st.get("Condition", {}), ctx)


def _list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else [v]


def _glob(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, re.IGNORECASE if ignore_case else 0) is not None


def _principal_matches(given: Any, principal: str) -> bool:
    if given == "*":
        return True
    if not isinstance(given, dict):
        return False
    named = _list(given.get("AWS", []))
    if principal.count(":") < 5:  # no known principal: only a wildcard names it
        return "*" in named
    account = principal.split(":")[4]
    return any(p in ("*", principal, account, f"arn:aws:iam::{account}:root") for p in named)


# ---------------------------------------------------------------- conditions ----


def conditions(block: dict[str, Any], ctx: dict[str, Any]) -> bool:
    """Every condition of a statement's `Condition` block holds in `ctx` (keys compared case-insensitively)."""
    lowered = {k.lower(): v for k, v in ctx.items()}
    for raw_op, pairs in block.items():
        op = raw_op.split(":", 1)[1] if raw_op.startswith(("ForAnyValue:", "ForAllValues:")) else raw_op
        if_exists = op.endswith("IfExists") and op != "IfExists"
        op = op.removesuffix("IfExists")
        for key, expected in pairs.items():
            actual = lowered.get(key.lower())
            if op == "Null":
                if (actual is None) != (str(expected).lower() == "true"):
                    return False
                continue
            if actual is None:
                if not (if_exists or op in _NEGATED):
                    return False
                continue
            if not _operator(op, [str(a) for a in _list(actual)], [str(e) for e in _list(expected)]):
                return False
    return True


def _operator(op: str, actual: list[str], expected: list[str]) -> bool:
    def any_pair(match: Any) -> bool:
        return any(match(e, a) for a in actual for e in expected)

    if op == "StringEquals":
        return any_pair(lambda e, a: e == a)
    if op == "StringEqualsIgnoreCase":
        return any_pair(lambda e, a: e.lower() == a.lower())
    if op in ("StringLike", "ArnLike", "ArnEquals"):
        return any_pair(lambda e, a: _glob(e, a))
    if op == "StringNotEquals":
        return not any_pair(lambda e, a: e == a)
    if op == "StringNotEqualsIgnoreCase":
        return not any_pair(lambda e, a: e.lower() == a.lower())
    if op in ("StringNotLike", "ArnNotLike", "ArnNotEquals"):
        return not any_pair(lambda e, a: _glob(e, a))
    if op == "Bool":
        return any_pair(lambda e, a: e.lower() == a.lower())
    if op == "NumericNotEquals":
        return not any_pair(lambda e, a: _number(a) == _number(e))
    if op in _NUMERIC:
        return any_pair(lambda e, a: _NUMERIC[op](_number(a), _number(e)))
    raise ValueError(f"condition operator {op} is not evaluated by the stand-in")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")  # no comparison holds for a value that is no number (IAM's reading)
