"""At most one planned failover at a time per bucket it changes: the jobs' leases (`s3tables_kit.jobs.kernel.leases`).

A planned run changes two buckets: the source (its writers are frozen, its bucket policy rewritten and put back) and
the replica bucket it promotes (its tables detached, its bucket policy replaced). It takes one lease per bucket,
all or nothing, in key order, before the freeze (and `--unfreeze` before it lifts one), and checks that both are
still its own right before the promotion. A second run while the first holds them is refused (exit 2) with the
holder's run id, host, pid and start time, and changes nothing: it does not wait, because once the first run ends
the failover is done, and a second one would freeze the source again for nothing.

The leases live in the report directory (where the freeze's journal is) unless `--lease-dir` names a shared place
(a directory on a shared file system or `s3://bucket/prefix`, conditional writes): everyone who may run the failover
must use the same place. A lease a killed run left is taken over at once on the same host (its process is gone) and
elsewhere once its heartbeat is older than its time to live; the rerun then continues from the journal.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence

from s3tables_kit.jobs.failover.model import FailoverError
from s3tables_kit.jobs.kernel.leases import (
    DEFAULT_TTL_S,
    LEASE_SUFFIX,
    Holder,
    Lease,
    LeaseError,
    LeaseHeld,
    LeaseLost,
    Leases,
    is_live,
    store_for,
)
from s3tables_kit.jobs.kernel.sdk import BucketRef

__all__ = ["DEFAULT_TTL_S", "LeaseRefused", "Leases", "acquire", "held", "lease_key", "live_holder", "lost"]


class LeaseRefused(FailoverError):
    """Another planned failover holds a lease of a bucket this run would change."""


def lease_key(lease_dir: str, bucket_arn: str) -> str:
    b = BucketRef(bucket_arn)
    return f"{lease_dir.rstrip('/')}/planned-failover/{b.account}-{b.region}-{b.name}{LEASE_SUFFIX}"


def _leases(lease_dir: str, bucket_arns: Sequence[str], run_id: str, started: str, ttl_s: float) -> Leases:
    out = []
    for arn in dict.fromkeys(bucket_arns):
        key = lease_key(lease_dir, arn)
        out.append(Lease(store_for(key), key, arn, run_id, started, ttl_s))
    return Leases(out)


def refusal(bucket_arn: str, holder: Holder) -> str:
    return (
        f"a planned failover already runs on {BucketRef(bucket_arn).name}: {holder.describe()} holds its lease "
        f"(heartbeat {max(0.0, time.time() - holder.heartbeat_at):.0f}s ago, taken over after {holder.ttl_s:.0f}s "
        "without one, at once on its host once its process is gone). Nothing was changed by this run: let that run "
        "end (its report says how); if it was killed, rerun this command to continue it"
    )


def acquire(
    lease_dir: str,
    bucket_arns: Sequence[str],
    run_id: str,
    started: str,
    say: Callable[[str], None],
    ttl_s: float = DEFAULT_TTL_S,
) -> Leases:
    """The leases of every bucket in `bucket_arns`, heartbeating; raises `LeaseRefused` when a live run holds one."""
    leases = _leases(lease_dir, bucket_arns, run_id, started, ttl_s)
    try:
        leases.acquire_all(False, say)
    except LeaseHeld as exc:
        raise LeaseRefused(refusal(exc.holder.target or bucket_arns[0], exc.holder)) from None
    except LeaseError as exc:  # the lease store is unwritable or contended
        raise LeaseRefused(f"the planned failover's lease could not be taken: {exc}") from None
    return leases


def live_holder(lease_dir: str, bucket_arns: Sequence[str]) -> tuple[str, Holder] | None:
    """(bucket, holder) of a live run holding one of the buckets' leases, for the plan; None when none does."""
    import socket

    for arn in bucket_arns:
        key = lease_key(lease_dir, arn)
        try:
            cur = store_for(key).read(key)
        except LeaseError:
            continue
        holder = Holder.parse(cur[0]) if cur else None
        if holder is not None and is_live(holder, time.time(), socket.gethostname()):
            return arn, holder
    return None


@contextlib.contextmanager
def held(
    lease_dir: str, bucket_arns: Sequence[str], run_id: str, started: str, show: bool, ttl_s: float = DEFAULT_TTL_S
) -> Iterator[Leases]:
    """The buckets' leases for the `with` block (released at its end; a kill leaves them to be taken over)."""
    from s3tables_kit.jobs.failover.aws import say

    leases = acquire(lease_dir, bucket_arns, run_id, started, lambda m: say(m, show), ttl_s)
    try:
        yield leases
    finally:
        leases.release_all()


def lost(leases: Leases) -> str | None:
    """Why the run no longer holds one of its leases (right before the promotion), or None."""
    for lease in leases.by_target.values():
        try:
            lease.ensure_held()
        except LeaseLost as exc:
            return str(exc)
    return None
