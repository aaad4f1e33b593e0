import sys

from jobs.recover.cli import main

sys.exit(main())
