"""spark-submit entry of the recovery job (`make recover ARGS=...`, EMR Serverless `entryPoint`).

spark-submit runs this file as a script: make the repository (or the uploaded `jobs` zip on --py-files) importable,
then run the same CLI as `s3tables-kit recover`, on the session spark-submit configured.

`python jobs/recover_entry.py --preflight ARGS...` parses and validates ARGS (reading --outputs) without Spark:
`make recover` runs it first, so bad arguments are refused (exit 2, one line) before spark-submit starts a JVM.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(_here)
if os.path.isdir(os.path.join(_root, "s3tables_kit")) and _root not in sys.path:  # a checkout
    sys.path.insert(0, _root)

PREFLIGHT = "--preflight"


def preflight(argv: list[str]) -> int:
    """0 when `argv` is a valid recovery request, else 2 with the reason on stderr; starts no JVM."""
    from s3tables_kit.jobs.kernel.idents import JobError
    from s3tables_kit.jobs.recover.cli import parser, preflight_from_vault, request_from_args

    ns = parser().parse_args(argv)  # argparse exits 2 on an unknown or malformed argument
    try:
        if ns.from_vault:
            preflight_from_vault(ns)
        else:
            request_from_args(ns)
    except JobError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == [PREFLIGHT]:
        sys.exit(preflight(sys.argv[2:]))
    from s3tables_kit.jobs.recover.cli import main, submitted_spark_factory

    sys.exit(main(sys.argv[1:], spark_factory=submitted_spark_factory))
