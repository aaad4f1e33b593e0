"""`python -m infra.e2e [--all] [CONFIG ...]`: see infra/e2e/run.py."""

import sys

from s3tables_kit.infra.e2e.run import main

sys.exit(main())
