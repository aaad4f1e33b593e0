"""Python side of the offline IAM evaluator (`policies/simulator/evaluate.mjs`, @cloud-copilot/iam-simulate).

The simulator is AGPL-3.0 and is never shipped or imported: it runs as a separate node process (from a checkout's
`make setup`) that reads one JSON batch on stdin and writes one JSON list on stdout. The policy proofs use it, and so
does the operator's `s3tables_kit.policies.explain` (which Allow or Deny decides a request). One process evaluates a
whole batch, so a proof matrix of hundreds of requests costs one node start (well under a few seconds).

    results = evaluate(policies={"admin": doc, ...}, requests=[SimRequest(...), ...])
    results["case-id"].decision   # "Allowed" | "ExplicitlyDenied" | "ImplicitlyDenied" | "Error"
    results["case-id"].denied_by  # the matching Denies; granted_by: the granting Allows of an allowed request

The caller states every context key the request carries (`aws:PrincipalArn`, `aws:PrincipalAccount`,
`aws:PrincipalServiceName`, `aws:SourceAccount`, `kms:ResourceAliases`, ...); `principal_context` builds the usual
ones for an IAM role or a service principal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from s3tables_kit.topology import paths

EVALUATOR = paths.PACKAGE / "policies" / "simulator" / "evaluate.mjs"
SIMULATOR_PACKAGE = paths.ROOT / "node_modules" / "@cloud-copilot" / "iam-simulate"

ALLOWED = "Allowed"
EXPLICIT_DENY = "ExplicitlyDenied"
IMPLICIT_DENY = "ImplicitlyDenied"
ERROR = "Error"


class SimulatorUnavailable(RuntimeError):
    """node or the npm package is missing (run `make setup`)."""


class SimulatorError(RuntimeError):
    """The evaluator failed as a whole (not one request)."""


@dataclass(frozen=True)
class ScpLevel:
    """SCPs attached at one level of the organisation (root first, the account last)."""

    org_identifier: str
    policies: tuple[str, ...]


@dataclass(frozen=True)
class SimRequest:
    """One request. Policies are referred to by name in the batch's `policies` map."""

    id: str
    principal: str  # IAM role/user ARN, or a service principal such as maintenance.s3tables.amazonaws.com
    action: str
    resource: str
    resource_account: str
    context: Mapping[str, str | list[str]] = field(default_factory=dict)
    identity_policies: tuple[str, ...] = ()
    scps: tuple[ScpLevel, ...] = ()
    resource_policies: tuple[str, ...] = ()  # merged into one resource policy (bucket + table policy)
    # Resource control policies of the resource's account, by level as `scps` (root first); they bind callers of
    # any account, outsiders and service principals included.
    rcps: tuple[ScpLevel, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "principal": self.principal,
            "action": self.action,
            "resource": self.resource,
            "resourceAccount": self.resource_account,
            "context": dict(self.context),
            "identityPolicies": list(self.identity_policies),
            "scps": [{"orgIdentifier": s.org_identifier, "policies": list(s.policies)} for s in self.scps],
            "resourcePolicies": list(self.resource_policies),
            "rcps": [{"orgIdentifier": s.org_identifier, "policies": list(s.policies)} for s in self.rcps],
        }


@dataclass(frozen=True)
class SimResult:
    id: str
    decision: str
    denied_by: tuple[str, ...] = ()  # "<policy type>:<policy>#<Sid>" of each explicit Deny that matched
    granted_by: tuple[str, ...] = ()  # "<policy type>:<policy>#<Sid>" of each Allow that grants an allowed request
    implicitly_denied_in: tuple[str, ...] = ()  # "<policy type>:<OU or account>" of each layer that granted nothing
    ignored_context_keys: tuple[str, ...] = ()  # context keys the simulator dropped (not valid for the action)
    errors: Any = None

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOWED


def is_service_principal(principal: str) -> bool:
    return principal.endswith(".amazonaws.com") and not principal.startswith("arn:")


def principal_context(principal: str, *, source_account: str | None = None) -> dict[str, str | list[str]]:
    """Context keys AWS adds to every request of this principal (the simulator does not derive them)."""
    if is_service_principal(principal):
        ctx: dict[str, str | list[str]] = {"aws:PrincipalServiceName": principal}
        if source_account:
            ctx["aws:SourceAccount"] = source_account
        return ctx
    account = principal.split(":")[4]
    return {"aws:PrincipalArn": principal, "aws:PrincipalAccount": account}


def node_command() -> list[str]:
    node = shutil.which("node")
    if node is None:
        raise SimulatorUnavailable("node is not on PATH (the policy proofs need Node >= 18; run `make setup`)")
    if not SIMULATOR_PACKAGE.is_dir():
        raise SimulatorUnavailable(f"{SIMULATOR_PACKAGE} is missing: run `make setup` (npm ci)")
    return [node, str(EVALUATOR)]


def evaluate(
    policies: Mapping[str, Any],
    requests: Iterable[SimRequest],
    *,
    processes: int = 1,
    timeout: float = 300.0,
    iam_data_overlay: bool | Mapping[str, Any] = True,
    distinct: bool = True,
) -> dict[str, SimResult]:
    """Evaluate every request; returns results by request id. One node process per batch; with `processes` > 1
    the batch is split into that many slices evaluated by concurrent node processes (for very large batches such
    as a matrix times many mutations). `iam_data_overlay=False` evaluates against upstream iam-data alone, without
    the reviewed `simulator/iam-data-overlay.json` (only to show what the overlay adds); a mapping replaces the
    file (only to test the guard that refuses an overlay of actions upstream already knows). Requests equal but for
    their ids and the names of equal documents are evaluated once (`_distinct`; `distinct=False` evaluates each, only
    to show that this changes no result)."""
    every = list(requests)
    ids = [r.id for r in every]
    if len(set(ids)) != len(ids):
        raise ValueError("request ids must be unique")
    reqs, copies = _distinct(every, policies) if distinct else (every, {})
    processes = max(1, min(processes, len(reqs) or 1))
    cmd = node_command()
    slices = [reqs[i::processes] for i in range(processes)]
    procs = [
        subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=paths.ROOT
        )
        for _ in slices
    ]
    out: dict[str, SimResult] = {}
    try:
        outputs = [
            proc.communicate(
                json.dumps(
                    {
                        "policies": dict(policies),
                        "requests": [r.to_json() for r in part],
                        "iamDataOverlay": iam_data_overlay
                        if isinstance(iam_data_overlay, bool)
                        else dict(iam_data_overlay),
                    }
                ),
                timeout=timeout,
            )
            for proc, part in zip(procs, slices, strict=True)
        ]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for proc, (stdout, stderr) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            raise SimulatorError(f"evaluator exited with {proc.returncode}: {stderr.strip()[-2000:]}")
        for item in json.loads(stdout):
            out[item["id"]] = SimResult(
                id=item["id"],
                decision=item["result"],
                denied_by=tuple(item.get("deniedBy", ())),
                granted_by=tuple(item.get("grantedBy", ())),
                implicitly_denied_in=tuple(item.get("implicitlyDeniedIn", ())),
                ignored_context_keys=tuple(item.get("ignoredContextKeys", ())),
                errors=item.get("errors"),
            )
    for member, (rep, names) in copies.items():
        out[member] = _renamed(out[rep], member, names)
    missing = set(ids) - set(out)
    if missing:
        raise SimulatorError(f"evaluator returned no result for {sorted(missing)[:5]}")
    return out


# ---- requests that differ only in the names of equal documents are evaluated once ----
# A proof's mutations copy every document under a variant's name and change one or two: without this, each variant
# re-evaluates the whole matrix although most of its requests meet only unchanged documents.


def _policy_names(req: SimRequest) -> list[str]:
    """Every document name of a request, in a fixed order (its shape: the same for requests that differ by names)."""
    return [
        *req.identity_policies,
        *(n for level in req.scps for n in level.policies),
        *req.resource_policies,
        *(n for level in req.rcps for n in level.policies),
    ]


def _distinct(
    reqs: list[SimRequest], policies: Mapping[str, Any]
) -> tuple[list[SimRequest], dict[str, tuple[str, dict[str, str]]]]:
    """(the requests to evaluate, {the id of a request not evaluated: (the id of its equal, {that one's document
    name: this one's})}). Two requests are equal when they differ at most in their ids and in the names of documents
    with equal content; one whose names cannot be mapped one to one onto its equal's is evaluated itself."""
    digests: dict[str, str] = {}

    def digest(name: str) -> str:
        if name not in digests and name not in policies:
            digests[name] = f"unknown:{name}"  # never merged: the evaluator's error names the missing document
        elif name not in digests:
            text = json.dumps(policies[name], sort_keys=True, separators=(",", ":"))
            digests[name] = hashlib.sha256(text.encode()).hexdigest()
        return digests[name]

    first: dict[str, SimRequest] = {}
    todo: list[SimRequest] = []
    copies: dict[str, tuple[str, dict[str, str]]] = {}
    for req in reqs:
        names = _policy_names(req)
        shape = req.to_json()
        shape["id"] = ""
        key = json.dumps([shape["principal"], shape["action"], shape["resource"], shape["resourceAccount"],
                          shape["context"], [digest(n) for n in names],
                          [len(req.identity_policies), len(req.resource_policies)],
                          [[lv.org_identifier, len(lv.policies)] for lv in req.scps],
                          [[lv.org_identifier, len(lv.policies)] for lv in req.rcps]],
                         sort_keys=True)  # fmt: skip
        rep = first.setdefault(key, req)
        mapping: dict[str, str] = {}
        one_to_one = rep is not req and all(
            mapping.setdefault(a, b) == b for a, b in zip(_policy_names(rep), names, strict=True)
        )
        if one_to_one and len(set(mapping.values())) == len(mapping):
            copies[req.id] = (rep.id, mapping)
            continue
        todo.append(req)
    return todo, copies


def _sid_safe(name: str) -> str:
    """The evaluator's prefix of a merged resource policy's statement ids (`sidSafe` in evaluate.mjs)."""
    return re.sub(r"[^A-Za-z0-9]", "", name)


def _renamed(res: SimResult, rid: str, names: Mapping[str, str]) -> SimResult:
    """An equal request's result, its document names (and merged statement ids) those of the request `rid`."""
    prefixes = {_sid_safe(a) + "X": _sid_safe(b) + "X" for a, b in names.items()}

    def one(reason: str) -> str:
        kind, _, rest = reason.partition(":")
        policy, hash_, sid = rest.rpartition("#") if "#" in rest else (rest, "", "")
        for old, new in prefixes.items():
            if sid.startswith(old):
                sid = new + sid[len(old) :]
                break
        return f"{kind}:{names.get(policy, policy)}{hash_}{sid}"

    return dataclasses.replace(
        res,
        id=rid,
        denied_by=tuple(sorted(one(r) for r in res.denied_by)),
        granted_by=tuple(one(r) for r in res.granted_by),
        implicitly_denied_in=tuple(sorted(one(r) for r in res.implicitly_denied_in)),
    )


def errors_of(results: Mapping[str, SimResult]) -> list[str]:
    return [f"{r.id}: {json.dumps(r.errors)[:500]}" for r in results.values() if r.decision == ERROR]


def summarize(results: Sequence[SimResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.decision] = counts.get(r.decision, 0) + 1
    return counts
