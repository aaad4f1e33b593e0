"""Named fault points of the planned failover, for the kill tests. Inert unless asked for.

`KIT_FAILOVER_FAULT=kill:<point>` (read here and nowhere else) makes the process SIGKILL itself the first time it
reaches `<point>`. In-process tests may set `hook` to run a real concurrent actor at a point (the replication
service catching up, a writer trying to commit) or to stop the run there (an exception that is not an `Exception`,
which no step of the tool catches: what a kill leaves behind).

Points: `after-freeze` (the freeze is in place), `caught-up` (every table caught up, nothing promoted yet), the
promotion's steps as their calls succeed on the promoted bucket (`after-disassociate`, `after-table-policy`,
`after-bucket-policy`, `after-lineage-commit`: fired by botocore's `after-call` events of the promoted bucket's
client, so `jobs.failover.aws.promote` itself carries no test hook), `before-lift` (verified, the freeze next).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

ENV = "KIT_FAILOVER_FAULT"
CALL_POINTS = {
    "DisassociateTableReplication": "after-disassociate",
    "PutTablePolicy": "after-table-policy",
    "PutTableBucketPolicy": "after-bucket-policy",
    "UpdateTableMetadataLocation": "after-lineage-commit",
}
POINTS = ("after-freeze", "caught-up", *CALL_POINTS.values(), "before-lift")

hook: Callable[[str, str], None] | None = None  # (point, what) -> None


def armed() -> bool:
    return hook is not None or os.environ.get(ENV, "").startswith("kill:")


def at(point: str, what: str) -> None:
    if hook is not None:
        hook(point, what)
    if os.environ.get(ENV, "") == f"kill:{point}":
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


def watch(client: Any, what: str) -> None:
    """Fire the promotion's points after each successful state-changing call of `client` (the promoted bucket's
    s3tables client), when a point is armed. Registered once per client."""
    if not armed():
        return

    def after_call(http_response: Any = None, model: Any = None, **_: Any) -> None:
        if http_response is not None and http_response.status_code < 300 and model is not None:
            at(CALL_POINTS[model.name], what)

    for op in CALL_POINTS:
        client.meta.events.register(f"after-call.s3tables.{op}", after_call, unique_id=f"kit-failover-point-{op}")
