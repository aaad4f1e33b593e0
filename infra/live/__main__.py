import sys

from s3tables_kit.infra.live.run import main

sys.exit(main())
