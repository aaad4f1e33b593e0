import sys

from s3tables_kit.jobs.recover.cli import main

sys.exit(main())
