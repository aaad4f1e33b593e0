import sys

from s3tables_kit.jobs.failover.cli import main

sys.exit(main())
