"""The actions the stand-in served, per deploy phase, principal and resource: what a Terraform apply (or any run)
called, for a check against a reviewed set (`harness/drills/deploy_actions.py`).

On when the server's environment names a file (`KIT_EMULATOR_SERVED`), or from the control endpoint (`served`:
`{"path": ..., "phase": ...}`, the e2e's second deploy): each request adds `<service>:<operation>` and the resource it
names under the current phase (`first deploy` until told otherwise) and its principal (the role of an assumed-role
session or the IAM user of its key, else `key:<access key>`; ` (terraform)` appended for the provider's requests,
told by their User-Agent), and the file is rewritten (JSON, phase -> principal -> action -> sorted resources) whenever
a triple is new. The operation is the IAM action's name: S3's is `emulator.bucket_policy.action_of`'s, a REST
service's the botocore operation whose HTTP method and path template match, a JSON or query protocol's its
`X-Amz-Target` or `Action`. The resource is what identifies it in the request (`resource_of`): a REST path's
resource segments, else the first naming parameter (a role, alarm, topic, log group or alias name); a KMS key named
by its id or ARN is recorded by its first alias (`alias/<name>`: the kit's allow-lists match a key by its aliases)
and an EMR Serverless application by its name, each looked up in the stand-in's state; empty when the request names
nothing the check can match.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import cbor2

from emulator import authz, cbor_rpc

ENV = "KIT_EMULATOR_SERVED"
FIRST_DEPLOY = "first deploy"
_PATH = os.environ.get(ENV, "")
_PHASE = FIRST_DEPLOY
_SERVED: dict[str, dict[str, dict[str, set[str]]]] = {}  # phase -> principal -> action -> resources
# The parameters that name a guarded resource in a query or JSON request, the first found wins (IAM, SNS, CloudWatch,
# CloudWatch Logs, KMS aliases).
NAMING = (
    "RoleName", "AlarmName", "AlarmNames.member.1", "AlarmNames", "TopicArn", "SubscriptionArn", "logGroupName",
    "AliasName", "PolicyArn", "ResourceARN", "resourceArn", "ResourceArn", "KeyId", "TargetKeyId",
)  # fmt: skip
# A service signed under another name than its IAM actions' prefix (CloudWatch signs as `monitoring`).
IAM_PREFIX = {"monitoring": "cloudwatch"}
# REST paths: the segments after these name the resource (Lambda functions, Scheduler schedules and groups).
REST_NAMES = re.compile(r"/(?:functions|schedules|schedule-groups|applications)/([^/?]+)")
_LOCK = threading.Lock()
_ROUTES: dict[str, list[tuple[str, re.Pattern[str], str]]] = {}
_KEY_RE = re.compile(r"Credential=([A-Za-z0-9]+)/")
_REGION_RE = re.compile(r"Credential=[A-Za-z0-9]+/\d{8}/([a-z0-9-]+)/")


def enabled() -> bool:
    return bool(_PATH)


def control(body: dict[str, Any]) -> dict[str, Any]:
    """Start (or move) the record (`path`), switch the phase (`phase`); `path` "" stops it. The record so far."""
    global _PATH, _PHASE
    if "path" in body:
        _PATH = str(body["path"])
    if body.get("phase"):
        _PHASE = str(body["phase"])
    if _PATH:
        _write()
    return {"ok": True, "path": _PATH, "phase": _PHASE}


def resource_of(environ: dict[str, Any], service: str, path: str, body: bytes) -> str:
    """What the request names (see the module's docstring); "" when nothing the check can match."""
    if service in ("s3", "s3tables"):
        return path.lstrip("/")  # `bucket/key`; the S3 Tables route's ARNs, decoded
    found = REST_NAMES.search(path)
    if found:
        return _application_name(environ, found.group(1)) if service == "emr-serverless" else found.group(1)
    params: dict[str, Any] = {}
    if cbor_rpc.match(environ, path) is not None:
        with contextlib.suppress(ValueError, cbor2.CBORDecodeError):
            loaded = cbor2.loads(body) if body else {}
            params = loaded if isinstance(loaded, dict) else {}
    elif environ.get("HTTP_X_AMZ_TARGET"):
        with contextlib.suppress(ValueError):
            loaded = json.loads(body or b"{}")
            params = loaded if isinstance(loaded, dict) else {}
    else:
        form = parse_qs(body.decode("utf-8", "replace")) if b"Action=" in body else {}
        params = {k: v[0] for k, v in {**parse_qs(environ.get("QUERY_STRING", "")), **form}.items()}
    named = next((params[k] for k in NAMING if params.get(k)), "")
    named = str(named[0] if isinstance(named, list) else named)  # `AlarmNames` of a CBOR request: the first
    return _key_name(environ, named) if service == "kms" and "alias/" not in named else named


def _where(environ: dict[str, Any], arn: str) -> tuple[str, str] | None:
    """(account, Region) of a resource: its ARN's, else the account moto serves the signer's key in and the signing
    Region."""
    from moto.iam.models import get_account_id_from

    if arn.startswith("arn:"):
        parts = arn.split(":")
        return parts[4], parts[3]
    auth = environ.get("HTTP_AUTHORIZATION", "")
    key, region = _KEY_RE.search(auth), _REGION_RE.search(auth)
    return (get_account_id_from(key.group(1)), region.group(1)) if key and region else None


def _key_name(environ: dict[str, Any], key: str) -> str:
    """A key named by its id or ARN: its first alias, or what the request named when it has none (or is unknown)."""
    from moto.kms.models import kms_backends

    where = _where(environ, key)
    if where is None or not key:
        return key
    with contextlib.suppress(KeyError, ValueError):
        backend = kms_backends[where[0]][where[1]]
        return min(backend.keys[backend.any_id_to_key_id(key)].aliases, default=key)
    return key


def _application_name(environ: dict[str, Any], app_id: str) -> str:
    """An EMR Serverless application named by its id: its name, or the id when the stand-in holds none such."""
    from moto.emrserverless.models import emrserverless_backends

    where = _where(environ, app_id)
    if where is None:
        return app_id
    with contextlib.suppress(KeyError):
        return str(emrserverless_backends[where[0]][where[1]].applications[app_id].name)
    return app_id


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
    cbor = cbor_rpc.match(environ, path)  # CloudWatch as the provider speaks it (RPCv2 CBOR)
    if cbor is not None:
        return cbor[1]
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
    prefix = IAM_PREFIX.get(service, service)
    action = op if op and op.startswith(f"{prefix}:") else f"{prefix}:{operation(environ, service, op, path, body)}"
    resource = resource_of(environ, service, path, body)
    with _LOCK:
        seen = _SERVED.setdefault(_PHASE, {}).setdefault(principal, {}).setdefault(action, set())
        if resource not in seen:
            seen.add(resource)
            _write()


def _write() -> None:
    doc = {
        phase: {p: {a: sorted(r) for a, r in sorted(acts.items())} for p, acts in sorted(by.items())}
        for phase, by in _SERVED.items()
    }
    tmp = Path(_PATH + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(_PATH)
