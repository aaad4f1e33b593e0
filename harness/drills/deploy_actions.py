"""What a Terraform apply called (the stand-in's record, `emulator.served`) against the deploy roles' reviewed set.

    KIT_EMULATOR_SERVED=served.json python -m harness.e2e        # the apply, its calls recorded per principal
    python -m harness.drills.deploy_actions served.json

The reviewed set is what the kit's allow-lists let a deployer do besides reads (`policies/allowlists.py`
`KIT_DEPLOY`, and the vault's, the scheduled artifacts' and the application's deployer classes in
`policies/vault.py`). Every write of the provider on a service those allow-lists guard is printed with whether the
set holds it; exit 1 when one is outside. The record names actions, not resources: a write outside the set may
still have touched only what no scope guards (a bucket's creation, a table of the source), which the report says
is for a reviewer to tell.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Sequence
from pathlib import Path

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


def _matches(action: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


def outside(served: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(the provider's writes on guarded services the reviewed set holds, those it does not), sorted."""
    calls = {a for who, acts in served.items() if who.endswith("(terraform)") for a in acts}
    writes = sorted(a for a in calls if a.split(":")[0] in GUARDED and not _matches(a, READS))
    return [a for a in writes if _matches(a, REVIEWED)], [a for a in writes if not _matches(a, REVIEWED)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.drills.deploy_actions", description=__doc__)
    ap.add_argument("served", help="the stand-in's record (KIT_EMULATOR_SERVED)")
    args = ap.parse_args(argv)
    inside, out = outside(json.loads(Path(args.served).read_text()))
    print(f"the provider's writes on guarded services: {len(inside) + len(out)}; in the reviewed set: {len(inside)}")
    for a in out:
        print(f"  OUTSIDE the reviewed set: {a}")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
