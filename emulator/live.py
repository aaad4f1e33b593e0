"""What `make live-verify` needs of the stand-in beyond the service: authorization by the deployed documents, a
replication service with a simulated delay, and fault switches that give each probe its other outcome.

Authorization (off until `live/authz` turns it on; `reset` turns it off). moto evaluates no policy, so a request
signed with credentials from `sts:AssumeRole` is checked here against what is deployed on the emulator: the role's
identity policies (inline and attached, moto's IAM), the table bucket policy and table policy (the extension's
state), and the SCPs on the path from the organization's root to the resource's account (moto's Organizations; the
management account is exempt). Minimal and explicit about it:
* explicit Deny in any layer wins; the error names the layer the way AWS's message does ("with an explicit deny in
  a service control policy" / "resource-based policy" / "identity-based policy");
* otherwise an Allow of the identity policies, or of a resource policy naming the role or its account, is needed;
* SCPs are read for their Deny statements only (the allow-list form of an SCP is not evaluated);
* statements and conditions are evaluated by `emulator.authz`, the stand-in's one evaluator (its operators, and an
  error naming any other operator: never a silent allow);
* context: `aws:PrincipalArn` (the role), `aws:PrincipalAccount`, `aws:SecureTransport`, `s3tables:namespace`,
  `s3tables:tableName`, `aws:ResourceTag/<k>` and `s3tables:TableBucketTag/<k>` (the extension's tags).
Requests signed with an account's own access key (Terraform, the tools, the tests) are not evaluated, as before.

Fault switches (`live/switch`, {"name", "on"}), each producing the other outcome of one probe of infra/live/probes.py:
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from emulator import authz

SWITCHES = {
    "createtable-dependents": "the replication service's CreateTable of a replica also needs its dependent actions "
    "(s3tables:PutTableEncryption, s3tables:PutTableStorageClass, s3tables:TagResource), evaluated for the "
    "replication role against the destination bucket's policy: a Deny of them fails replication",
    "replica-write-error": "a write to a replica answers AccessDeniedException (HTTP 403) instead of "
    "ForbiddenException",
    "managed-by-service": "replicas report managedByService = s3tables.amazonaws.com",
    "tagged-bucket-blocks-replication": "replication into a destination bucket that carries AWS resource tags fails",
    "disassociate-error": "DisassociateTableReplication of a table that is not a replica answers ConflictException",
    "replication-setup-needs-destination": "PutTableBucketReplication and PutTableReplication also need "
    "s3tables:CreateTable, s3tables:CreateNamespace and s3tables:PutTableMaintenanceConfiguration on each destination "
    "for the caller (an assumed role), evaluated against every layer: a Deny or no Allow refuses the setup",
    "putrows-commit-denied": "the service's deferred commit of rows PutRows accepted is evaluated against the table "
    "bucket's and table's policies (as an unknown principal): a Deny added after acceptance keeps them buffered",
}
__doc__ = (__doc__ or "") + "".join(f"* `{k}`: {v}.\n" for k, v in SWITCHES.items())

SERVICE_CONTROL = "service control policy"
RESOURCE_BASED = "resource-based policy"
IDENTITY_BASED = "identity-based policy"
DEPENDENT_ACTIONS = ("s3tables:PutTableEncryption", "s3tables:PutTableStorageClass", "s3tables:TagResource")
SETUP_ACTIONS = ("s3tables:CreateNamespace", "s3tables:CreateTable", "s3tables:PutTableMaintenanceConfiguration")
SETUP_OPS = ("PutTableBucketReplication", "PutTableReplication")
OTHER_MANAGED_BY = "s3tables.amazonaws.com"


@dataclass
class LiveState:
    authz: bool = False
    switches: set[str] = field(default_factory=set)
    replication_delay_s: float = 0.0  # simulated: the replicated update is stamped commit + delay, nobody waits
    decisions: list[dict[str, str]] = field(default_factory=list)  # every evaluated request, for a test to read


LIVE = LiveState()
_APP: Any = None  # emulator.app, handed over by bind() (an import of it here would make a circle)


def bind(app_module: Any) -> None:
    """Called once by emulator.app at import: the extension's state and helpers this module reads (a namespace)."""
    global _APP
    _APP = app_module


def _app() -> Any:
    assert _APP is not None, "emulator.live is used through emulator.app"
    return _APP


def reset() -> None:
    global LIVE
    LIVE = LiveState()


# ---------------------------------------------------------------- control ----


def control(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """`/_kit_test/live/<path>` (called with the extension's lock held)."""
    if path == "authz":
        LIVE.authz = bool(body.get("on", True))
        return {"ok": True, "authz": LIVE.authz}
    if path == "switch":
        name = str(body["name"])
        if name not in SWITCHES:
            raise _app().bad_request(f"unknown switch {name!r}; known: {sorted(SWITCHES)}")
        (LIVE.switches.add if body.get("on", True) else LIVE.switches.discard)(name)
        return {"ok": True, "switches": sorted(LIVE.switches)}
    if path == "replication-delay":
        LIVE.replication_delay_s = float(body["seconds"])
        return {"ok": True}
    if path == "replicate":
        return {"replicated": replicate(str(body["sourceTableArn"]))}
    if path == "state":
        return {
            "authz": LIVE.authz,
            "switches": sorted(LIVE.switches),
            "replicationDelaySeconds": LIVE.replication_delay_s,
            "decisions": list(LIVE.decisions),
        }
    raise _app().not_found(f"unknown control path live/{path}")


# ---------------------------------------------------------------- the replication service ----


def replicate(source_table_arn: str) -> list[dict[str, str]]:
    """One pass of the simulated replication service over one source table: each destination is updated and stamped
    `now + delay`, unless a switch makes the service fail for it (then FAILED with the service's message)."""
    A = _app()

    table = A.get_table_by_arn(source_table_arn)
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=LIVE.replication_delay_s)
    done: list[dict[str, str]] = []
    for dest in A.effective_destinations(table) or []:
        failure = _replication_blocked(table, dest)
        if failure:
            previous = A.STATE.repl_status.get((table.arn, dest), {})
            A.STATE.repl_status[(table.arn, dest)] = {
                **previous,
                "replicationStatus": "failed",
                "failureMessage": failure,
            }
            done.append({"source": table.arn, "failed": failure})
            continue
        done += A._replicate({"sourceTableArn": table.arn, "timestamp": when.isoformat(), "destinations": [dest]})
    return done


def _replication_blocked(table: Any, dest_bucket_arn: str) -> str | None:
    A = _app()

    if "tagged-bucket-blocks-replication" in LIVE.switches and A.STATE.tags.get(dest_bucket_arn):
        return "Replication is not supported for destination table buckets with tags."
    if "createtable-dependents" not in LIVE.switches:
        return None
    role = A.replication_role(table)
    docs = [p for p in (A.STATE.bucket_policies.get(dest_bucket_arn),) if p]
    for action in DEPENDENT_ACTIONS:
        ctx = {"aws:PrincipalArn": role, "aws:PrincipalAccount": role.split(":")[4] if role.count(":") >= 5 else ""}
        resource = f"{dest_bucket_arn}/table/*"
        for doc in docs:
            hit = authz.explicit_deny(json.loads(doc), action, resource, ctx, principal=role, resource_policy=True)
            if hit:
                return (
                    f"Access denied: the replication role {role} is not authorized to perform {action} on "
                    f"{dest_bucket_arn} with an explicit deny in a resource-based policy ({hit})"
                )
    return None


# ---------------------------------------------------------------- hooks called by emulator/app.py ----


def rewrite_error(op: str | None, err: Any) -> Any:
    """An ApiError as the switches would have AWS answer it."""
    A = _app()
    NOT_A_REPLICA, REPLICA_READ_ONLY, ApiError = A.NOT_A_REPLICA, A.REPLICA_READ_ONLY, A.ApiError

    on = LIVE.switches
    if op == "UpdateTableMetadataLocation" and "replica-write-error" in on and err.message == REPLICA_READ_ONLY:
        return ApiError("AccessDeniedException", REPLICA_READ_ONLY, 403)
    if op == "DisassociateTableReplication" and "disassociate-error" in on and err.message == NOT_A_REPLICA:
        return ApiError("ConflictException", NOT_A_REPLICA, 409)
    return err


def rewrite_answer(op: str | None, status: int, answer: dict[str, Any] | None) -> tuple[int, dict[str, Any] | None]:
    if "managed-by-service" in LIVE.switches and answer:
        if op == "GetTable" and "managedByService" in answer:
            answer = {**answer, "managedByService": OTHER_MANAGED_BY}
        if op == "ListTables":
            rows = [
                {**t, "managedByService": OTHER_MANAGED_BY} if "managedByService" in t else t
                for t in answer.get("tables", [])
            ]
            answer = {**answer, "tables": rows}
    return status, answer


def authorize(environ: dict[str, Any], op: str, params: dict[str, str], query: dict[str, str]) -> Any:
    """None when the request may proceed, else the ApiError AWS would answer (called with the lock held)."""
    if not LIVE.authz:
        return None
    who = authz.caller(environ)
    if who is None or who.session_arn is None:  # an account's own access key: not evaluated
        return None
    ApiError = _app().ApiError

    role_arn, session_arn = who.arn, who.session_arn
    resource, ctx = _resource_and_context(params, query)
    ctx.update({"aws:PrincipalArn": role_arn, "aws:PrincipalAccount": who.account})
    action = f"s3tables:{op}"
    try:
        decision, layer, _sid = decide(role_arn, action, resource, ctx)
    except ValueError as exc:
        return ApiError("InternalServerErrorException", f"emulator authorization: {exc}", 500)
    LIVE.decisions.append({"principal": role_arn, "action": action, "resource": resource, "decision": decision})
    if decision == "allowed":
        return None
    head = f"User: {session_arn} is not authorized to perform: {action} on resource: {resource}"
    if decision == "explicit":
        return ApiError("AccessDeniedException", f"{head} with an explicit deny in a {layer}", 403)
    return ApiError("AccessDeniedException", f"{head} because no {IDENTITY_BASED} allows the {action} action", 403)


def authorize_setup(environ: dict[str, Any], op: str, body: bytes) -> Any:
    """With `replication-setup-needs-destination` on: None when the caller of a replication setup may also create
    namespaces and tables and put maintenance on each destination, else the ApiError naming the first refused one."""
    if not LIVE.authz or op not in SETUP_OPS or "replication-setup-needs-destination" not in LIVE.switches:
        return None
    who = authz.caller(environ)
    if who is None or who.session_arn is None:
        return None
    try:
        rules = json.loads(body or b"{}").get("configuration", {}).get("rules", [])
    except ValueError:
        return None
    ctx = {"aws:PrincipalArn": who.arn, "aws:PrincipalAccount": who.account, "aws:SecureTransport": "true"}
    for dest in (d.get("destinationTableBucketARN", "") for r in rules for d in r.get("destinations", [])):
        for action in SETUP_ACTIONS:
            resource = dest if action == "s3tables:CreateNamespace" else f"{dest}/table/*"
            decision, layer, _sid = decide(who.arn, action, resource, ctx)
            if decision != "allowed":
                why = f"with an explicit deny in a {layer}" if decision == "explicit" else "(no policy allows it)"
                return _app().ApiError(
                    "AccessDeniedException",
                    f"User: {who.session_arn} is not authorized to perform: {action} on resource: {resource} {why}",
                    403,
                )
    return None


# ---------------------------------------------------------------- who, what ----


def _resource_and_context(params: dict[str, str], query: dict[str, str]) -> tuple[str, dict[str, Any]]:
    A = _app()

    p = {k: unquote(v) for k, v in params.items()}
    ctx: dict[str, Any] = {"aws:SecureTransport": "true"}
    table: Any = None
    arn = query.get("tableArn") or p.get("resourceArn") or p.get("tableArn")
    try:
        if arn and "/table/" in arn:
            table = A.get_table_by_arn(arn)
        elif p.get("tableBucketARN") and p.get("namespace") and p.get("name"):
            table = A.get_table_by_name(p["tableBucketARN"], p["namespace"], p["name"])
    except A.ApiError:
        table = None
    if table is not None:
        resource, bucket = table.arn, table.table_bucket_arn
        ctx["s3tables:namespace"], ctx["s3tables:tableName"] = table.namespace, table.name
    else:
        resource = arn or p.get("tableBucketARN") or query.get("tableBucketARN") or "*"
        bucket = resource.split("/table/")[0]
        if p.get("namespace"):
            ctx["s3tables:namespace"] = p["namespace"]
    for k, v in A.STATE.tags.get(resource, {}).items():
        ctx[f"aws:ResourceTag/{k}"] = v
    for k, v in A.STATE.tags.get(bucket, {}).items():
        ctx[f"s3tables:TableBucketTag/{k}"] = v
        ctx.setdefault(f"aws:ResourceTag/{k}", v)
    return resource, ctx


def _layers(role_arn: str, resource: str) -> dict[str, list[dict[str, Any]]]:
    A = _app()

    resource_docs = []
    bucket = resource.split("/table/")[0]
    for doc in (A.STATE.bucket_policies.get(bucket), A.STATE.table_policies.get(resource)):
        if doc:
            resource_docs.append(json.loads(doc))
    resource_account = resource.split(":")[4] if resource.count(":") >= 5 else ""
    return {
        SERVICE_CONTROL: _scps(resource_account, role_arn.split(":")[4]),
        RESOURCE_BASED: resource_docs,
        IDENTITY_BASED: _identity_policies(role_arn),
    }


def _identity_policies(role_arn: str) -> list[dict[str, Any]]:
    from moto.iam.models import iam_backends

    iam = iam_backends[role_arn.split(":")[4]]["aws"]
    try:
        role = iam.get_role_by_arn(role_arn)
    except Exception:  # moto's own NotFound: a role that does not exist has no policies
        return []
    docs = [json.loads(unquote(d)) if isinstance(d, str) else d for d in role.policies.values()]
    for managed in role.managed_policies.values():
        version = next((v for v in managed.versions if v.is_default), None)
        if version is not None:
            text = version.document
            docs.append(json.loads(unquote(text)) if isinstance(text, str) else text)
    return docs


def _scps(*accounts: str) -> list[dict[str, Any]]:
    """The SCPs on the path root -> OUs -> account of the principal's account (AWS applies the principal's
    organization's SCPs); none for an organization's management account or an account in no organization."""
    from moto.organizations.models import organizations_backends

    account = accounts[-1]
    for management in list(organizations_backends.keys()):
        org_backend = organizations_backends[management]["aws"]
        if org_backend.org is None or management == account:
            continue
        member = next((a for a in org_backend.accounts if a.id == account), None)
        if member is None:
            continue
        docs: list[dict[str, Any]] = []
        objects: list[Any] = [member]
        parent = getattr(member, "parent_id", None)
        while parent:
            ou = next((o for o in org_backend.ou if o.id == parent), None)
            if ou is None or ou in objects:
                break
            objects.append(ou)
            parent = getattr(ou, "parent_id", None)
        for obj in objects:
            for pol in getattr(obj, "attached_policies", []):
                if pol.type == "SERVICE_CONTROL_POLICY" and pol.content:
                    docs.append(json.loads(pol.content))
        return docs
    return []


# ---------------------------------------------------------------- evaluation ----


def decide(role_arn: str, action: str, resource: str, ctx: dict[str, Any]) -> tuple[str, str, str]:
    """("explicit", layer, sid) | ("implicit", "", "") | ("allowed", layer, "")."""
    layers = _layers(role_arn, resource)
    for layer in (SERVICE_CONTROL, RESOURCE_BASED, IDENTITY_BASED):
        for doc in layers[layer]:
            on_resource = layer == RESOURCE_BASED
            hit = authz.explicit_deny(doc, action, resource, ctx, principal=role_arn, resource_policy=on_resource)
            if hit:
                return "explicit", layer, hit
    for doc in layers[IDENTITY_BASED]:
        if authz.allows(doc, action, resource, ctx, principal=role_arn, resource_policy=False):
            return "allowed", IDENTITY_BASED, ""
    for doc in layers[RESOURCE_BASED]:
        if authz.allows(doc, action, resource, ctx, principal=role_arn, resource_policy=True):
            return "allowed", RESOURCE_BASED, ""
    return "implicit", "", ""
