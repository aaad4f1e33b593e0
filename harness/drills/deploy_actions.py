"""What a Terraform apply called (the stand-in's record, `emulator.served`) against the deploy roles' reviewed set.

    KIT_EMULATOR_SERVED=served.json python -m harness.e2e        # the apply, its calls recorded per phase
    python -m harness.drills.deploy_actions served.json --kit seed

The reviewed set is what the kit's allow-lists let a deployer do besides reads (`policies/allowlists.py`
`KIT_DEPLOY`, and the vault's, the scheduled artifacts' and the application's deployer classes in
`policies/vault.py`). The record names each call's phase (`first deploy`, then what the e2e names its later deploys:
`second deploy`), principal and resource. A call of the provider is **protected** when its resource is one the kit's
allow-lists match by the kit's name (`<kit>-...`: a role, alarm, topic, log group, function, schedule, key alias, the
vault or scripts bucket). A write outside the reviewed set on a protected resource in a later deploy fails (exit 1):
the layers would refuse it to the deploy role, so that deploy would be a break-glass deploy nobody reviewed as one.
A key counts by its alias and the EMR application by its name (the record looks both up). The first deploy creates
what the set does not name (a bucket, a key, a role's first policy), and a write on a table bucket, which the replica
rules guard by the configuration's buckets rather than by the kit's name, is the lock's business
(`s3tables_kit.infra.lockcheck`): both are printed, neither fails.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from emulator.served import FIRST_DEPLOY
from s3tables_kit.policies import allowlists, vault

GUARDED = (*allowlists.KIT_SERVICES, "kms", "s3", "s3tables", "emr-serverless")
REVIEWED = (
    *allowlists.KIT_DEPLOY,
    *vault.FIRST_DEPLOY_BUCKET,
    *vault.FIRST_DEPLOY_KEY,
    *vault.DEPLOY_ARTIFACTS,
    *vault.DEPLOY_APPLICATION,
)
READS = tuple(f"{s}:{p}" for s in GUARDED for p in (*allowlists.READ_PREFIXES, "Head*"))
Record = Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]]  # phase -> principal -> action -> resources


@dataclass(frozen=True)
class Call:
    phase: str
    action: str
    resource: str


@dataclass(frozen=True)
class Verdict:
    inside: list[Call]  # writes the reviewed set holds
    failing: list[Call]  # later deploys' writes on a protected resource outside it
    reported: list[Call]  # outside it, but a first deploy's or on a resource not attributed to the kit


def _matches(action: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


# Where the kit's name tells the kit's resources (table buckets are the replica rules' and the lock's): a key by its
# alias (`alias/<kit>-...`), the EMR application by its name (`<kit>-recovery`), as the record names both.
BY_NAME = (*allowlists.KIT_SERVICES, "s3", "emr-serverless")


def protected(action: str, resource: str, kits: Sequence[str]) -> bool:
    """Whether the resource a call names is one the kit's allow-lists match by the kit's name: a segment of its ARN's
    resource part (`role/<kit>-x`, `alarm:<kit>-x`, `<kit>-topic:<subscription>`) or its name (an S3 call's bucket, a
    REST path's function or schedule, an alias) starts with `<kit>-`."""
    if action.split(":")[0] not in BY_NAME or not resource:
        return False
    part = resource.split(":", 5)[5] if resource.startswith("arn:") and resource.count(":") >= 5 else resource
    segments = re.split(r"[/:]", part) if resource.startswith("arn:") else [part.removeprefix("alias/").split("/")[0]]
    return any(seg.startswith(f"{k}-") for seg in segments for k in kits)


def check(record: Record, kits: Sequence[str]) -> Verdict:
    """Every write of the provider on a guarded service, sorted into the three lists of `Verdict`."""
    calls = sorted(
        {
            Call(phase, action, resource)
            for phase, by in record.items()
            for who, acts in by.items()
            if who.endswith("(terraform)")
            for action, resources in acts.items()
            if action.split(":")[0] in GUARDED and not _matches(action, READS)
            for resource in resources
        },
        key=lambda c: (c.phase, c.action, c.resource),
    )
    inside = [c for c in calls if _matches(c.action, REVIEWED)]
    rest = [c for c in calls if not _matches(c.action, REVIEWED)]
    failing = [c for c in rest if c.phase != FIRST_DEPLOY and protected(c.action, c.resource, kits)]
    return Verdict(inside, failing, [c for c in rest if c not in failing])


def lines(verdict: Verdict) -> list[str]:
    n = len(verdict.inside) + len(verdict.failing) + len(verdict.reported)
    out = [f"the provider's writes on guarded services: {n}; in the reviewed set: {len(verdict.inside)}"]
    out += [f"  OUTSIDE the reviewed set ({c.phase}, protected): {c.action} on {c.resource}" for c in verdict.failing]
    out += [f"  outside, not failing ({c.phase}): {c.action} on {c.resource or '-'}" for c in verdict.reported]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.drills.deploy_actions", description=__doc__)
    ap.add_argument("served", help="the stand-in's record (KIT_EMULATOR_SERVED)")
    ap.add_argument("--kit", action="append", required=True, help="the kit's name (repeat for several)")
    args = ap.parse_args(argv)
    verdict = check(json.loads(Path(args.served).read_text()), args.kit)
    print("\n".join(lines(verdict)))
    return 1 if verdict.failing else 0


if __name__ == "__main__":
    sys.exit(main())
