import sys

from jobs.failover.cli import main

sys.exit(main())
