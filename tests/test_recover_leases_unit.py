"""Per-target leases of the recovery job, without Spark: real files, real threads, the moto S3 server."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.kernel.leases import (
    Holder,
    Lease,
    LeaseHeld,
    LeaseLost,
    Leases,
    LocalLeaseStore,
    S3LeaseStore,
)
from s3tables_kit.jobs.recover.errors import describe
from s3tables_kit.jobs.recover.job import lease_key, local_table_lease_key
from tests.test_recover_unit import metadata, run_refused_before_a_jvm


def _lease(store: Any, key: str, run_id: str, ttl: float = 60.0) -> Lease:
    return Lease(store, key, "rec.orders", run_id, "2026-11-24T00:00:00+00:00", ttl)


def _race(store: Any, key: str, n: int) -> list[Holder | None]:
    barrier = threading.Barrier(n)
    out: list[Holder | None] = [None] * n

    def go(i: int) -> None:
        lease = _lease(store, key, f"run{i}")
        barrier.wait()
        out[i] = lease.try_acquire()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_one_of_many_simultaneous_runs_takes_the_lease(tmp_path: Path) -> None:
    for round_ in range(20):
        key = str(tmp_path / f"k{round_}.json")
        got = _race(LocalLeaseStore(), key, 6)
        winners = [i for i, h in enumerate(got) if h is None]
        assert len(winners) == 1, got
        holder = Holder.parse(Path(key).read_bytes())
        assert holder is not None and holder.run_id == f"run{winners[0]}"
        assert all(h is not None and h.run_id == holder.run_id for h in got if h is not None)


def test_a_stale_lease_is_taken_over_by_exactly_one_run(tmp_path: Path) -> None:
    store = LocalLeaseStore()
    for round_ in range(10):
        key = str(tmp_path / f"stale{round_}.json")
        dead = Holder("old", "elsewhere", 1, "2026-01-01T00:00:00+00:00", "rec.orders", time.time() - 120, 60.0)
        Path(key).write_bytes(dead.body())
        got = _race(store, key, 6)
        assert sum(1 for h in got if h is None) == 1, got
        assert all(h is None or h.run_id.startswith("run") for h in got)


def test_a_killed_holder_on_this_host_frees_the_lease_at_once(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(p.stdout)
    key = str(tmp_path / "k.json")
    fresh = Holder("killed", socket.gethostname(), dead_pid, "2026-01-01T00:00:00+00:00", "t", time.time(), 600.0)
    Path(key).write_bytes(fresh.body())
    assert _lease(LocalLeaseStore(), key, "next").try_acquire() is None
    # a live process (this one) keeps it
    mine = Holder("live", socket.gethostname(), os.getpid(), "2026-01-01T00:00:00+00:00", "t", time.time(), 600.0)
    Path(key).write_bytes(mine.body())
    held = _lease(LocalLeaseStore(), key, "other").try_acquire()
    assert held is not None and held.run_id == "live"


def test_heartbeat_notices_a_takeover_and_release_leaves_the_new_holder_alone(tmp_path: Path) -> None:
    key = str(tmp_path / "k.json")
    a = _lease(LocalLeaseStore(), key, "a", ttl=0.2)
    assert a.try_acquire() is None and a.heartbeat()
    time.sleep(0.3)  # a stalls past its time to live
    b = _lease(LocalLeaseStore(), key, "b")
    assert b.try_acquire() is None
    with pytest.raises(LeaseLost, match="taken over by run b"):
        a.ensure_held()
    a.release()
    h = Holder.parse(Path(key).read_bytes())
    assert h is not None and h.run_id == "b"
    b.release()
    assert not Path(key).exists()


def test_acquire_all_refuses_naming_the_holder_or_waits(tmp_path: Path) -> None:
    key = str(tmp_path / "k.json")
    first = Leases([_lease(LocalLeaseStore(), key, "first")])
    first.acquire_all(False, print)
    second = Leases([_lease(LocalLeaseStore(), key, "second")])
    with pytest.raises(LeaseHeld) as e:
        second.acquire_all(False, print)
    msg = str(e.value)
    assert "run first" in msg and socket.gethostname() in msg and f"pid {os.getpid()}" in msg and "started" in msg
    threading.Timer(0.3, first.release_all).start()
    t0 = time.monotonic()
    second.acquire_all(True, print, poll_s=0.05)  # --wait
    assert time.monotonic() - t0 >= 0.2
    assert Holder.parse(Path(key).read_bytes()).run_id == "second"  # type: ignore[union-attr]
    second.release_all()


def test_lease_keys() -> None:
    assert local_table_lease_key("file:/w/rec/orders") == "/w/rec/orders.kit-lease.json"
    k1 = lease_key("s3://b/leases", "arn:aws:s3tables:eu-west-1:1:bucket/a", "rec.orders")
    k2 = lease_key("s3://b/leases/", "arn:aws:s3tables:eu-west-1:1:bucket/b", "rec.orders")
    assert k1.startswith("s3://b/leases/") and k1.endswith("/rec.orders.kit-lease.json") and k1 != k2


def test_s3_leases_use_conditional_writes(moto_endpoint: str) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    s3.create_bucket(Bucket="kit-leases")
    store = S3LeaseStore(s3)
    key = "s3://kit-leases/leases/rec.orders.kit-lease.json"
    got = _race(store, key, 4)
    assert sum(1 for h in got if h is None) == 1
    body = s3.get_object(Bucket="kit-leases", Key="leases/rec.orders.kit-lease.json")["Body"].read()
    winner = Holder.parse(body)
    assert winner is not None
    # stale: taken over with If-Match on what was read; the old holder's heartbeat then fails
    old = _lease(store, key, winner.run_id, ttl=0.1)
    assert old.try_acquire() is None  # its own lease (same run id)
    time.sleep(0.2)
    s3.put_object(Bucket="kit-leases", Key="leases/rec.orders.kit-lease.json",
                  Body=Holder(**{**json.loads(body), "heartbeat_at": 0.0}).body())  # fmt: skip
    new = _lease(store, key, "new")
    assert new.try_acquire() is None
    assert not old.heartbeat() and old.lost and "run new" in old.lost


def test_plan_time_refusal_names_the_live_attempt_before_a_jvm_starts(tmp_path: Path) -> None:
    meta = tmp_path / "rep" / "analytics" / "orders" / "metadata"
    meta.mkdir(parents=True)
    (meta / "v1.metadata.json").write_text(json.dumps(metadata()))  # no version hint: found all the same
    held = Leases([_lease(LocalLeaseStore(), str(tmp_path / "tgt" / "rec" / "orders.kit-lease.json"), "theirs")])
    held.acquire_all(False, print)

    out, err = io.StringIO(), io.StringIO()
    res = run_refused_before_a_jvm(tmp_path, out, err)
    held.release_all()
    assert res.exit_code == 2 and res.results == []
    (line,) = [ln for ln in out.getvalue().splitlines() if ln.startswith("REFUSED:")]
    assert "target rec.orders is being recovered by run theirs" in line and f"pid {os.getpid()}" in line


def test_describe_keeps_python_errors_in_one_line() -> None:
    try:
        try:
            raise KeyError("x")
        except KeyError as inner:
            raise RuntimeError("outer\nsecond line") from inner
    except RuntimeError as e:
        assert describe(e) == ("RuntimeError: outer", None)
