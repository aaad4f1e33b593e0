"""Optional credentialed stage: IAM Access Analyzer custom policy checks of every document (`make policy-check`).

    python -m s3tables_kit.policies.access_analyzer [--baseline-ref origin/main] [--region us-east-1] [--examples
    examples]

With AWS credentials (anything a boto3 session resolves), for every document of every example configuration:

- ValidatePolicy                 grammar and best-practice findings; ERROR and SECURITY_WARNING fail the stage
- CheckAccessNotGranted          identity and resource policies grant none of the destructive actions on replicas
                                 (the protection rules that exempt nobody but break-glass and deploy roles)
- CheckNoNewAccess               the document grants nothing beyond the committed rendered baseline
                                 (`git show <baseline-ref>:policies/rendered/<example>/<name>.json`); new documents
                                 have no baseline and are reported as such

Without credentials it prints that it is skipped and exits 0. The requests are built by a pure function
(`build_requests`) so they are tested offline; the calls themselves go through boto3's `accessanalyzer` client.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies.documents import PolicyDoc, compact_json
from s3tables_kit.topology import paths

EXAMPLES_DIR = paths.ROOT / "examples"
RENDERED = "policies/rendered"
MAX_ACCESS_ACTIONS = 100  # CheckAccessNotGranted accepts at most 100 actions per access entry

# Documents that can grant (SCPs only deny; Access Analyzer checks them with ValidatePolicy only).
POLICY_TYPE = {
    "trust": "RESOURCE_POLICY",
    "identity": "IDENTITY_POLICY",
    "bucket-policy": "RESOURCE_POLICY",
    "table-policy": "RESOURCE_POLICY",
    "kms-key-policy": "RESOURCE_POLICY",
    "scp": "SERVICE_CONTROL_POLICY",
    "rcp": "RESOURCE_CONTROL_POLICY",
    "s3-bucket-policy": "RESOURCE_POLICY",
}
VALIDATE_RESOURCE_TYPE = {"trust": "AWS::IAM::AssumeRolePolicyDocument", "s3-bucket-policy": "AWS::S3::Bucket"}
FAILING_FINDINGS = frozenset({"ERROR", "SECURITY_WARNING"})


def destructive_actions() -> list[str]:
    """Actions no kit policy may grant on a replica: every protected action the replication role is not exempt
    from (deletion, protection, replication and settings changes)."""
    return sorted(
        {iam_actions.S3T + a for r in iam_actions.PROTECTION_RULES if not r.exempt_replication_role for a in r.actions}
    )


@dataclass(frozen=True)
class AnalyzerRequest:
    api: str  # validate_policy | check_access_not_granted | check_no_new_access
    example: str
    document: str
    params: dict[str, Any] = field(hash=False)

    @property
    def label(self) -> str:
        return f"{self.api} {self.example}/{self.document}"


def build_requests(
    example: str,
    docs: Iterable[PolicyDoc],
    replica_arns: Sequence[str],
    baseline: Callable[[str], str | None],
) -> tuple[list[AnalyzerRequest], list[str]]:
    """(requests, notes) for one example. `baseline(name)` returns the committed rendered JSON or None."""
    requests: list[AnalyzerRequest] = []
    notes: list[str] = []
    protected_resources = sorted({*replica_arns, *(f"{a}/table/*" for a in replica_arns)})
    destructive = destructive_actions()
    for d in docs:
        text = compact_json(d.document)
        params: dict[str, Any] = {"policyDocument": text, "policyType": POLICY_TYPE[d.kind]}
        if d.kind in VALIDATE_RESOURCE_TYPE:
            params["validatePolicyResourceType"] = VALIDATE_RESOURCE_TYPE[d.kind]
        requests.append(AnalyzerRequest("validate_policy", example, d.name, params))
        if d.kind in ("identity", "bucket-policy", "table-policy"):
            access = [
                {"actions": destructive[i : i + MAX_ACCESS_ACTIONS], "resources": protected_resources}
                for i in range(0, len(destructive), MAX_ACCESS_ACTIONS)
            ]
            requests.append(
                AnalyzerRequest(
                    "check_access_not_granted",
                    example,
                    d.name,
                    {"policyDocument": text, "access": access, "policyType": POLICY_TYPE[d.kind]},
                )
            )
        if d.kind not in ("scp", "rcp"):
            existing = baseline(d.name)
            if existing is None:
                notes.append(f"{example}/{d.name}: no committed baseline (new document): CheckNoNewAccess skipped")
            else:
                requests.append(
                    AnalyzerRequest(
                        "check_no_new_access",
                        example,
                        d.name,
                        {
                            "newPolicyDocument": text,
                            "existingPolicyDocument": compact_json(json.loads(existing)),
                            "policyType": POLICY_TYPE[d.kind],
                        },
                    )
                )
    return requests, notes


def git_baseline(ref: str, example: str) -> Callable[[str], str | None]:
    def read(name: str) -> str | None:
        proc = subprocess.run(
            ["git", "show", f"{ref}:{RENDERED}/{example}/{name}.json"],
            cwd=paths.ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.stdout if proc.returncode == 0 else None

    return read


def all_requests(examples_dir: Path, baseline_ref: str) -> tuple[list[AnalyzerRequest], list[str]]:
    from s3tables_kit.policies.docset import build
    from s3tables_kit.topology.config import load_config

    requests: list[AnalyzerRequest] = []
    notes: list[str] = []
    for path in sorted(examples_dir.glob("*.toml")):
        cfg = load_config(path)
        r, n = build_requests(
            path.stem, list(build(cfg)), [r.bucket_arn for r in cfg.replicas], git_baseline(baseline_ref, path.stem)
        )
        requests += r
        notes += n
    return requests, notes


def has_credentials(session: Any) -> bool:
    try:
        return session.get_credentials() is not None
    except Exception:  # a broken profile is "no usable credentials" for an optional stage
        return False


def run(client: Any, requests: Iterable[AnalyzerRequest]) -> list[str]:
    """Execute the requests; return the failures (empty: everything passed)."""
    failures: list[str] = []
    for req in requests:
        if req.api == "validate_policy":
            findings: list[dict[str, Any]] = []
            kwargs = dict(req.params)
            while True:
                page = client.validate_policy(**kwargs)
                findings += page.get("findings", [])
                if not page.get("nextToken"):
                    break
                kwargs["nextToken"] = page["nextToken"]
            for f in findings:
                line = f"{req.label}: {f.get('findingType')} {f.get('issueCode')}: {f.get('findingDetails')}"
                print(line)
                if f.get("findingType") in FAILING_FINDINGS:
                    failures.append(line)
        else:
            result = getattr(client, req.api)(**req.params)
            verdict = result.get("result")
            print(f"{req.label}: {verdict}")
            if verdict != "PASS":
                failures.append(f"{req.label}: {verdict}: {result.get('message', '')} {result.get('reasons', '')}")
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    prog = "python -m s3tables_kit.policies.access_analyzer"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default="HEAD", help="git ref of the committed rendered baseline")
    parser.add_argument(
        "--region", default=None, help="Access Analyzer Region (default: the session's, else us-east-1)"
    )
    parser.add_argument("--examples", type=Path, default=EXAMPLES_DIR)
    args = parser.parse_args(argv)

    import boto3

    session = boto3.Session()
    if not has_credentials(session):
        print("policy-check: skipped (no AWS credentials; IAM Access Analyzer checks need them)")
        return 0
    requests, notes = all_requests(args.examples, args.baseline_ref)
    for note in notes:
        print(note)
    client = session.client("accessanalyzer", region_name=args.region or session.region_name or "us-east-1")
    failures = run(client, requests)
    if failures:
        print(f"\npolicy-check: {len(failures)} failure(s):")
        for f in failures:
            print(f"  {f}")
        return 1
    print(f"policy-check: {len(requests)} Access Analyzer checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
