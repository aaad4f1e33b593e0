"""The actions the stand-in served, per principal: what a Terraform apply (or any run) called, for a check against a
reviewed set (`harness/drills/deploy_actions.py`).

On when the server's environment names a file (`KIT_EMULATOR_SERVED`): each request adds `<service>:<operation>`
under its principal (the role of an assumed-role session or the IAM user of its key, else `key:<access key>`;
` (terraform)` appended for the provider's requests, told by their User-Agent), and
the file is rewritten (JSON, principal -> sorted actions) whenever a pair is new (a few hundred in an apply). The
operation is the IAM action's name: S3's is `emulator.bucket_policy.action_of`'s, a REST service's the botocore
operation whose HTTP method and path template match, a JSON or query protocol's its `X-Amz-Target` or `Action`.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from emulator import authz

ENV = "KIT_EMULATOR_SERVED"
_PATH = os.environ.get(ENV, "")
_SERVED: dict[str, set[str]] = {}
_LOCK = threading.Lock()
_ROUTES: dict[str, list[tuple[str, re.Pattern[str], str]]] = {}
_KEY_RE = re.compile(r"Credential=([A-Za-z0-9]+)/")


def enabled() -> bool:
    return bool(_PATH)


def _routes(service: str) -> list[tuple[str, re.Pattern[str], str]]:
    """(method, path pattern, operation) of a REST service's botocore model, the most specific paths first."""
    if service not in _ROUTES:
        import botocore.session

        out = []
        try:
            model = botocore.session.get_session().get_service_model(service)
            models = [model.operation_model(name) for name in model.operation_names]
        except Exception:  # no model of that name: its operations are recorded by path
            models = []
        for op_model in models:
            name, http = op_model.name, op_model.http
            uri = str(http.get("requestUri", "/")).split("?")[0]
            rx = re.escape(uri)
            rx = re.sub(r"\\\{[^}]+?\\\+\\\}", ".+", rx)
            rx = re.sub(r"\\\{[^}]+?\\\}", "[^/]+", rx)
            out.append((str(http.get("method", "")), re.compile(rx + "/?"), name))
        _ROUTES[service] = sorted(out, key=lambda r: -len(r[1].pattern))
    return _ROUTES[service]


def operation(environ: dict[str, Any], service: str, op: str | None, path: str, body: bytes) -> str:
    if op:
        return op
    if environ.get("HTTP_X_AMZ_TARGET"):
        return str(environ["HTTP_X_AMZ_TARGET"]).rsplit(".", 1)[-1]
    form = parse_qs(body.decode("utf-8", "replace")) if b"Action=" in body else {}
    query = parse_qs(environ.get("QUERY_STRING", ""))
    found = (form.get("Action") or query.get("Action") or [""])[0]
    if found:
        return found
    method = environ.get("REQUEST_METHOD", "")
    for m, rx, name in _routes(service):
        if m == method and rx.fullmatch(path):
            return name
    return f"{method} {path}"


def record(environ: dict[str, Any], service: str | None, op: str | None, path: str, body: bytes) -> None:
    """Add one request (called for every signed request when enabled)."""
    if not _PATH or not service:
        return
    who = authz.caller(environ)
    if who is not None:
        principal = who.arn
    else:
        key = _KEY_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
        principal = f"key:{key.group(1) if key else '-'}"
    if "terraform" in environ.get("HTTP_USER_AGENT", "").lower():  # the provider's calls, told from the tools'
        principal += " (terraform)"
    action = op if op and op.startswith(f"{service}:") else f"{service}:{operation(environ, service, op, path, body)}"
    with _LOCK:
        seen = _SERVED.setdefault(principal, set())
        if action not in seen:
            seen.add(action)
            _write()


def _write() -> None:
    doc = {p: sorted(a) for p, a in sorted(_SERVED.items())}
    tmp = Path(_PATH + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(_PATH)
