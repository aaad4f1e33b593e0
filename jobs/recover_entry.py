"""spark-submit entry of the recovery job (`make recover ARGS=...`, EMR Serverless `entryPoint`).

spark-submit runs this file as a script: make the repository (or the uploaded `jobs` zip on --py-files) importable,
then run the same CLI as `python -m jobs.recover`, on the session spark-submit configured.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(_here)
if os.path.isdir(os.path.join(_root, "jobs")) and _root not in sys.path:
    sys.path.insert(0, _root)

from jobs.recover.cli import main, submitted_spark_factory  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], spark_factory=submitted_spark_factory))
