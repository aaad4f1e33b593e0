"""spark-submit entry of the recovery rehearsal (EMR Serverless `entryPoint`, started by the rehearsal schedule).

Like `recover_entry.py`: make the repository (or the uploaded `jobs` zip on --py-files) importable, then run
`s3tables_kit.jobs.rehearse` on the session spark-submit configured.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(_here)
if os.path.isdir(os.path.join(_root, "s3tables_kit")) and _root not in sys.path:  # a checkout
    sys.path.insert(0, _root)

from s3tables_kit.jobs.recover.cli import submitted_spark_factory  # noqa: E402
from s3tables_kit.jobs.rehearse import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], spark_factory=submitted_spark_factory))
