"""`python -m harness.e2e [--all] [CONFIG ...]`: see harness/e2e/run.py."""

import sys

from harness.e2e.run import main

sys.exit(main())
