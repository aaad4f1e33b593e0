"""spark-submit entry of the vault backup (EMR Serverless `entryPoint`, started by the backup schedule): the same CLI
as `s3tables-kit backup`, on the session spark-submit configured. On EMR the `jobs` zip on --py-files is importable;
in a checkout the repository root is put first on the path."""

import os
import sys


def run(argv: list[str]) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.isdir(os.path.join(root, "s3tables_kit")) and root not in sys.path:
        sys.path.insert(0, root)
    from s3tables_kit.jobs.recover.cli import submitted_spark_factory
    from s3tables_kit.jobs.vault.cli import main

    return main(argv, spark_factory=submitted_spark_factory)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
