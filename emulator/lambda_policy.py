"""A Lambda function read from another account, as AWS serves it: `GetFunctionConfiguration` and `GetFunction` by
the function's ARN, answered from the owner account's functions only when the function's resource policy (the
statements `AddPermission` wrote) allows the caller that action; `AccessDeniedException` otherwise. moto looks a
function up by name in the caller's own account whatever account the ARN names, so without this a cross-account
read would find nothing (or a same-named function of the caller's).

Scope, kept small and stated: only those two reads, only by ARN, only across accounts (a same-account request goes
to moto as before, and so does every request where the stand-in serves one account for every key,
`MOTO_ACCOUNT_ID`); the caller's identity policy is not evaluated (the IAM simulator proves that layer); a principal
given as an account id is that account's root, as AWS stores it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import unquote

from emulator import authz

_READ = re.compile(r"/2015-03-31/functions/(arn:[^/]+)(/configuration)?/?")


def _default_account() -> str:
    """The account moto serves a key it does not know as (`MOTO_ACCOUNT_ID`, else its default)."""
    from moto.core import DEFAULT_ACCOUNT_ID

    return os.environ.get("MOTO_ACCOUNT_ID") or DEFAULT_ACCOUNT_ID


def _normalised(st: dict[str, Any]) -> dict[str, Any]:
    principal = st.get("Principal")
    if isinstance(principal, str) and principal.isdigit():
        principal = {"AWS": f"arn:aws:iam::{principal}:root"}
    elif isinstance(principal, str) and principal.startswith("arn:"):
        principal = {"AWS": principal}
    given = st.get("Resource", "*")
    resources = [str(r).removesuffix(":$LATEST") for r in (given if isinstance(given, list) else [given])]
    return st | {"Principal": principal, "Resource": resources}


def cross_account_read(environ: dict[str, Any], method: str, raw_path: str) -> tuple[int, dict[str, Any]] | None:
    """(status, answer) of a cross-account read of a function by its ARN; None for any other request."""
    found = _READ.fullmatch(unquote(raw_path))
    if method != "GET" or found is None:
        return None
    arn = found.group(1)
    _, _, _, region, owner, _, name = (arn.split(":") + [""] * 7)[:7]
    who = authz.caller(environ)
    if os.environ.get("MOTO_ACCOUNT_ID") or owner == (who.account if who is not None else _default_account()):
        return None  # one account served for every key (the sandbox), or the caller's own function
        return None
    from moto.awslambda.models import lambda_backends

    backend = lambda_backends[owner][region]
    action = "lambda:GetFunctionConfiguration" if found.group(2) else "lambda:GetFunction"
    try:
        fn = backend.get_function(name)
        policy = json.loads(json.loads(backend.get_policy(name))["Policy"])
    except Exception:  # no such function, or no resource policy: the caller may not read it
        policy = {"Statement": []}
        fn = None
    doc = {"Statement": [_normalised(s) for s in authz.statements(policy)]}
    base = arn.split(":$")[0]
    if fn is None or who is None or not authz.allows(doc, action, base, {}, principal=who.arn, resource_policy=True):
        message = f"User: {who.arn if who else 'anonymous'} is not authorized to perform: {action} on resource: {arn}"
        return 403, {"__type": "AccessDeniedException", "Message": message}
    return 200, fn.get_configuration() if found.group(2) else fn.get_code()
