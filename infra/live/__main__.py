import sys

from infra.live.run import main

sys.exit(main())
