"""Named fault points of the recovery job, for the kill and race tests. Inert unless asked for.

`KIT_RECOVER_FAULT=kill:<point>` (read here and nowhere else) makes the process SIGKILL itself (its whole process
group when it leads one: driver and JVM) the first time it reaches `<point>`. In-process tests may set `hook` to run
a real concurrent actor at a point (e.g. another recovery committing the same target).

Points: `before-commit` (files copied and checked, the catalog commit next), `after-commit` (the table is committed,
the verified-at lineage property is not).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

ENV = "KIT_RECOVER_FAULT"
POINTS = ("before-commit", "after-commit")

hook: Callable[[str, str], None] | None = None  # (point, target table) -> None


def at(point: str, target: str) -> None:
    if hook is not None:
        hook(point, target)
    spec = os.environ.get(ENV, "")
    if spec == f"kill:{point}":
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
