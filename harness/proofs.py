"""`s3tables-kit proofs` (`make proofs`): the IAM proofs of every protection (the matrix of principals and actions,
the mutations that show each guard is needed, the multi-step attacks) run by pytest against the npm IAM simulator,
with the report of the cases that rest on one layer. From a checkout: the proofs are tests, not shipped."""

from __future__ import annotations

import subprocess
import sys

from s3tables_kit.topology.paths import ROOT

PROOFS = ("tests/test_policy_proofs.py", "tests/test_policy_attacks.py")


def main(argv: list[str] | None = None) -> int:
    """pytest's exit code: 0 every proof holds, 1 one failed, 2 or more when pytest could not run them."""
    extra = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in extra):
        print(f"usage: s3tables-kit proofs [pytest arguments]\n\nruns {', '.join(PROOFS)} (-q -s) from {ROOT}")
        return 0
    cmd = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *PROOFS, *extra]
    return subprocess.run(cmd, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
