"""Named kill points of the jobs, for the kill and race tests. Inert unless asked for.

`KIT_KILL_AT=<job>:<point>` (read by `_requested`, and nowhere else) makes the process SIGKILL itself (its whole
process group when it leads one: a driver and its JVM) the first time the job reaches `<point>`. In-process tests
may set a job's `hook` to run a real concurrent actor at a point (another recovery committing the same target, the
replication service catching up, a writer trying to commit) or to stop the run there (an exception that is not an
`Exception`, which no step of a tool catches: what a kill leaves behind).

The points, in the order a run reaches them:

* `recover`: `before-commit` (files copied and checked, the catalog commit next), `after-commit` (the table is
  committed, the verified-at lineage property is not);
* `backup`: `after-plan` (the vault listed, nothing written), `after-copy` (the snapshot's files are in the vault),
  `after-restorable` (the rewritten metadata is too), `after-retention` (every file locked as long as the point; the
  point manifest next), `after-point` (the point is committed);
* `planned-failover`: `after-freeze` (the freeze is in place), `caught-up` (every table caught up, nothing promoted
  yet), the promotion's steps as their calls succeed on the promoted bucket (`after-disassociate`,
  `after-table-policy`, `after-bucket-policy`, `after-lineage-commit`: fired by botocore's `after-call` events of the
  promoted bucket's client, so the promotion itself carries no test hook), `before-lift` (verified, the freeze next).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ENV = "KIT_KILL_AT"


@dataclass
class KillPoints:
    """The kill points of one job. `call_points` maps an S3 Tables operation to the point its success fires
    (`watch`); `hook(point, what)` runs at every point reached while set."""

    job: str
    points: tuple[str, ...]
    call_points: Mapping[str, str] = field(default_factory=dict)
    hook: Callable[[str, str], None] | None = None

    def __post_init__(self) -> None:
        unknown = set(self.call_points.values()) - set(self.points)
        if unknown:
            raise ValueError(f"{self.job}: call points {sorted(unknown)} are not among its points")

    def kill_env(self, point: str) -> dict[str, str]:
        """The environment that kills a process of this job at `point` (for a test's subprocess)."""
        if point not in self.points:
            raise ValueError(f"{self.job} has no kill point {point!r} (points: {', '.join(self.points)})")
        return {ENV: f"{self.job}:{point}"}

    def armed(self) -> bool:
        requested = _requested()
        return self.hook is not None or (requested is not None and requested[0] == self.job)

    def at(self, point: str, what: str) -> None:
        """The job reached `point` (working on `what`: a table, a bucket)."""
        if self.hook is not None:
            self.hook(point, what)
        if _requested() == (self.job, point):
            if os.getpgid(0) == os.getpid():
                os.killpg(os.getpid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)

    def watch(self, client: Any, what: str) -> None:
        """Fire `call_points` after each successful call of `client` (an s3tables client) to their operations, when
        a point of this job is armed. Registered once per client."""
        if not self.call_points or not self.armed():
            return

        def after_call(http_response: Any = None, model: Any = None, **_: Any) -> None:
            if http_response is not None and http_response.status_code < 300 and model is not None:
                self.at(self.call_points[model.name], what)

        for op in self.call_points:
            client.meta.events.register(f"after-call.s3tables.{op}", after_call, unique_id=f"kit-{self.job}-point-{op}")


def _requested() -> tuple[str, str] | None:
    """(job, point) of `KIT_KILL_AT`, None when unset."""
    job, sep, point = os.environ.get(ENV, "").partition(":")
    return (job, point) if sep and job and point else None


RECOVERY = KillPoints("recover", ("before-commit", "after-commit"))
BACKUP = KillPoints("backup", ("after-plan", "after-copy", "after-restorable", "after-retention", "after-point"))
_PROMOTION_CALLS = {
    "DisassociateTableReplication": "after-disassociate",
    "PutTablePolicy": "after-table-policy",
    "PutTableBucketPolicy": "after-bucket-policy",
    "UpdateTableMetadataLocation": "after-lineage-commit",
}
PLANNED_FAILOVER = KillPoints(
    "planned-failover", ("after-freeze", "caught-up", *_PROMOTION_CALLS.values(), "before-lift"), _PROMOTION_CALLS
)
