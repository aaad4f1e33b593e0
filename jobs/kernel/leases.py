"""At most one live run per thing it changes (a recovery's target table, a planned failover's buckets): leases with
a heartbeat and an expiry, so that a concurrent or killed run can neither corrupt what it changes nor hold it forever.

A lease is a small JSON document (run id, host, pid, start time, last heartbeat, time to live) at a key derived from
the target. It is taken atomically, create-if-absent:
  - local paths: the document is written to a temporary file and hard-linked to the key (`link(2)` fails with EEXIST
    when the key exists, and a reader never sees a half-written lease);
  - `s3://bucket/prefix`: PutObject with `If-None-Match: *` (a general purpose bucket; S3 Tables table buckets have
    no place for it before the table exists), heartbeats and takeovers with `If-Match: <ETag>`.
A lease is live while its heartbeat is younger than its time to live and, on the same host, while its process exists
(a `kill -9` frees it at once for the next run on that host). A stale lease is taken over with a compare-and-swap on
what was read (S3: If-Match; local: under an exclusive swap marker), so two runs that both find it stale cannot both
win. The holder heartbeats every ttl/4 and checks, right before its commit, that the lease is still its own.

Nothing here imports Spark: leases are taken at plan time, before a JVM starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from s3tables_kit.jobs.kernel.idents import JobError

DEFAULT_TTL_S = 60.0
LEASE_SUFFIX = ".kit-lease.json"


@dataclass(frozen=True)
class Holder:
    run_id: str
    host: str
    pid: int
    started_at: str  # ISO-8601 UTC
    target: str
    heartbeat_at: float  # epoch seconds
    ttl_s: float

    def describe(self) -> str:
        return f"run {self.run_id} (host {self.host}, pid {self.pid}, started {self.started_at})"

    def body(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True) + "\n").encode()

    @classmethod
    def parse(cls, raw: bytes) -> Holder | None:
        try:
            d = json.loads(raw)
            return cls(
                str(d["run_id"]), str(d["host"]), int(d["pid"]), str(d["started_at"]), str(d.get("target", "")),
                float(d["heartbeat_at"]), float(d["ttl_s"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_live(h: Holder, now: float, host: str) -> bool:
    """Heartbeat within its time to live, and (same host) its process still exists."""
    if now > h.heartbeat_at + h.ttl_s:
        return False
    return not (h.host == host and not _pid_alive(h.pid))


class LeaseError(JobError):
    """A lease could not be taken or kept: its store is unwritable or unreadable, or it is contended."""


class LeaseHeld(LeaseError):
    def __init__(self, target: str, holder: Holder) -> None:
        super().__init__(
            f"target {target} is being recovered by {holder.describe()}; its lease is live (heartbeat "
            f"{max(0.0, time.time() - holder.heartbeat_at):.0f}s ago, expires after {holder.ttl_s:.0f}s without one). "
            "Nothing was written: wait for it, or rerun with --wait"
        )
        self.holder = holder


class LeaseLost(LeaseError):
    pass


# --- stores ------------------------------------------------------------------------------------------------------


class LeaseStore(Protocol):
    def create(self, key: str, body: bytes) -> bool: ...

    def read(self, key: str) -> tuple[bytes, str] | None: ...  # (body, token for a compare-and-swap)

    def swap(self, key: str, body: bytes | None, token: str) -> bool: ...  # body None: delete

    def describe(self, key: str) -> str: ...


class LocalLeaseStore:
    """Leases as files (a local or shared POSIX file system)."""

    def __init__(self, marker_ttl_s: float = 30.0) -> None:
        self.marker_ttl_s = marker_ttl_s

    def describe(self, key: str) -> str:
        return key

    def create(self, key: str, body: bytes) -> bool:
        p = Path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LeaseError(f"cannot create the lease directory {p.parent}: {e.strerror or e}") from None
        tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_bytes(body)
        try:
            os.link(tmp, p)
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def read(self, key: str) -> tuple[bytes, str] | None:
        try:
            raw = Path(key).read_bytes()
        except FileNotFoundError:
            return None
        return raw, hashlib.sha256(raw).hexdigest()

    def swap(self, key: str, body: bytes | None, token: str) -> bool:
        p = Path(key)
        marker = p.with_name(p.name + ".swap")
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            with contextlib.suppress(FileNotFoundError):
                if time.time() - marker.stat().st_mtime > self.marker_ttl_s:  # a swapper died holding it
                    marker.unlink()
            return False
        os.close(fd)
        try:
            cur = self.read(key)
            if cur is None or cur[1] != token:
                return False
            if body is None:
                p.unlink()
            else:
                tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
                tmp.write_bytes(body)
                os.replace(tmp, p)
            return True
        finally:
            marker.unlink(missing_ok=True)


class S3LeaseStore:
    """Leases as objects in a general purpose bucket: `If-None-Match: *` to create, `If-Match` to swap."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        bucket, _, k = key[len("s3://") :].partition("/")
        return bucket, k

    def describe(self, key: str) -> str:
        return key

    def _failed_precondition(self, e: Exception) -> bool:
        code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
        return code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")

    def create(self, key: str, body: bytes) -> bool:
        b, k = self._split(key)
        try:
            self.client.put_object(Bucket=b, Key=k, Body=body, IfNoneMatch="*")
            return True
        except Exception as e:
            if self._failed_precondition(e):
                return False
            raise LeaseError(f"cannot write the lease {key}: {e}") from None

    def read(self, key: str) -> tuple[bytes, str] | None:
        b, k = self._split(key)
        try:
            r = self.client.get_object(Bucket=b, Key=k)
        except self.client.exceptions.NoSuchKey:
            return None
        except Exception as e:
            raise LeaseError(f"cannot read the lease {key}: {e}") from None
        return r["Body"].read(), str(r["ETag"])

    def swap(self, key: str, body: bytes | None, token: str) -> bool:
        b, k = self._split(key)
        try:
            if body is None:
                # conditional delete (general purpose buckets; needs s3:DeleteObject and s3:GetObject):
                # https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-deletes.html
                self.client.delete_object(Bucket=b, Key=k, IfMatch=token)
            else:
                self.client.put_object(Bucket=b, Key=k, Body=body, IfMatch=token)
            return True
        except Exception as e:
            if self._failed_precondition(e) or "NoSuchKey" in str(e):
                return False
            raise


def store_for(key: str, s3_client: Callable[[], Any] | None = None) -> LeaseStore:
    if key.startswith("s3://"):
        import boto3

        return S3LeaseStore(s3_client() if s3_client else boto3.client("s3"))
    return LocalLeaseStore()


# --- the lease ---------------------------------------------------------------------------------------------------


class Lease:
    def __init__(self, store: LeaseStore, key: str, target: str, run_id: str, started_at: str,
                 ttl_s: float = DEFAULT_TTL_S) -> None:  # fmt: skip
        self.store, self.key, self.target = store, key, target
        self.me = Holder(run_id, socket.gethostname(), os.getpid(), started_at, target, time.time(), ttl_s)
        self.token: str | None = None
        self.lost: str | None = None
        self.lock = threading.Lock()

    def _body(self) -> bytes:
        self.me = Holder(**{**asdict(self.me), "heartbeat_at": time.time()})
        return self.me.body()

    def try_acquire(self) -> Holder | None:
        """Take the lease: None on success, else the live holder. A stale lease is taken over (compare-and-swap)."""
        for _ in range(100):
            if self.store.create(self.key, self._body()):
                cur = self.store.read(self.key)
                self.token = cur[1] if cur else None
                return None
            cur = self.store.read(self.key)
            if cur is None:
                continue  # released meanwhile
            holder = Holder.parse(cur[0])
            if holder is not None and holder.run_id == self.me.run_id:
                self.token = cur[1]
                return None
            if holder is not None and is_live(holder, time.time(), self.me.host):
                return holder
            if self.store.swap(self.key, self._body(), cur[1]):  # stale or unreadable: take it over
                now = self.store.read(self.key)
                self.token = now[1] if now else None
                return None
            time.sleep(0.05)
        raise LeaseError(f"could not take the lease {self.store.describe(self.key)} (contended)")

    def heartbeat(self) -> bool:
        with self.lock:
            if self.lost or self.token is None:
                return False
            cur = self.store.read(self.key)
            if cur is None or cur[1] != self.token:
                holder = Holder.parse(cur[0]) if cur else None
                self.lost = (
                    f"the lease of target {self.target} was taken over by {holder.describe()}"
                    if holder
                    else f"the lease of target {self.target} disappeared"
                )
                return False
            if not self.store.swap(self.key, self._body(), self.token):
                return self.heartbeat_lost()
            now = self.store.read(self.key)
            self.token = now[1] if now else None
            return True

    def heartbeat_lost(self) -> bool:
        self.lost = f"the lease of target {self.target} changed during a heartbeat"
        return False

    def ensure_held(self) -> None:
        """Right before a commit: the lease must still be ours (raises LeaseLost otherwise)."""
        if not self.heartbeat():
            raise LeaseLost(self.lost or f"the lease of target {self.target} is no longer held")

    def release(self) -> None:
        with self.lock:
            if self.token is not None and not self.lost:
                with contextlib.suppress(Exception):
                    self.store.swap(self.key, None, self.token)
            self.token = None


class Leases:
    """The leases of one run (one per target table), with a heartbeat thread."""

    def __init__(self, leases: Iterable[Lease]) -> None:
        self.by_target = {lease.target: lease for lease in leases}
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def acquire_all(self, wait: bool, say: Callable[[str], None], poll_s: float = 2.0) -> None:
        """All or nothing, in target order (two runs with --wait cannot deadlock). Raises LeaseHeld unless `wait`."""
        taken: list[Lease] = []
        last_said = 0.0
        try:
            for target in sorted(self.by_target):
                lease = self.by_target[target]
                while True:
                    holder = lease.try_acquire()
                    if holder is None:
                        taken.append(lease)
                        break
                    if not wait:
                        raise LeaseHeld(target, holder)
                    if time.monotonic() - last_said > 30:
                        say(f"waiting for {holder.describe()} to finish target {target}")
                        last_said = time.monotonic()
                    time.sleep(poll_s)
        except BaseException:
            for lease in taken:
                lease.release()
            raise
        self.thread = threading.Thread(target=self._beat, daemon=True, name="kit-lease-heartbeat")
        self.thread.start()

    def _beat(self) -> None:
        period = min(lease.me.ttl_s for lease in self.by_target.values()) / 4 if self.by_target else 15.0
        while not self.stop.wait(period):
            for lease in self.by_target.values():
                lease.heartbeat()

    def get(self, target: str) -> Lease | None:
        return self.by_target.get(target)

    def release_all(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        for lease in self.by_target.values():
            lease.release()


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
