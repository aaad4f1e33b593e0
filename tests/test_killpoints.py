"""The one kill-point mechanism of the jobs (`s3tables_kit.jobs.kernel.killpoints`): `KIT_KILL_AT=<job>:<point>` kills a
real process at that point of that job only, a hook sees every point reached, and a point that does not exist is refused
rather than silently never reached."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from s3tables_kit.jobs.kernel import killpoints
from s3tables_kit.jobs.kernel.killpoints import ENV, PLANNED_FAILOVER, RECOVERY, KillPoints

ROOT = Path(__file__).resolve().parents[1]
REACH = (
    "from s3tables_kit.jobs.kernel.killpoints import PLANNED_FAILOVER, RECOVERY\n"
    "RECOVERY.at('before-commit', 'rec.orders'); print('past before-commit', flush=True)\n"
    "PLANNED_FAILOVER.at('after-freeze', 'bucket'); print('past after-freeze', flush=True)\n"
    "RECOVERY.at('after-commit', 'rec.orders'); print('past after-commit', flush=True)\n"
)


def _reach(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != ENV}
    return subprocess.run(
        [sys.executable, "-c", REACH], env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_process_dies_at_the_asked_point_of_the_asked_job_only() -> None:
    killed = _reach(RECOVERY.kill_env("after-commit"))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert killed.stdout.splitlines() == ["past before-commit", "past after-freeze"]  # the other job's point is inert
    frozen = _reach(PLANNED_FAILOVER.kill_env("after-freeze"))
    assert frozen.returncode == -signal.SIGKILL and frozen.stdout.splitlines() == ["past before-commit"]
    inert = _reach({})
    assert inert.returncode == 0 and len(inert.stdout.splitlines()) == 3


def test_the_environment_names_the_job_and_the_point() -> None:
    assert RECOVERY.kill_env("before-commit") == {"KIT_KILL_AT": "recover:before-commit"}
    assert PLANNED_FAILOVER.kill_env("after-lineage-commit") == {"KIT_KILL_AT": "planned-failover:after-lineage-commit"}
    with pytest.raises(ValueError, match=r"recover has no kill point 'after-freeze' \(points: before-commit, after"):
        RECOVERY.kill_env("after-freeze")


def test_armed_and_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert not RECOVERY.armed() and not PLANNED_FAILOVER.armed()
    monkeypatch.setenv(ENV, "planned-failover:caught-up")
    assert PLANNED_FAILOVER.armed() and not RECOVERY.armed()
    monkeypatch.delenv(ENV)
    seen: list[tuple[str, str]] = []
    monkeypatch.setattr(RECOVERY, "hook", lambda point, what: seen.append((point, what)))
    assert RECOVERY.armed()
    RECOVERY.at("before-commit", "rec.orders")
    assert seen == [("before-commit", "rec.orders")]


def test_call_points_are_points_of_their_job() -> None:
    assert set(PLANNED_FAILOVER.call_points.values()) <= set(PLANNED_FAILOVER.points)
    with pytest.raises(ValueError, match="not among its points"):
        KillPoints("x", ("a",), {"PutTablePolicy": "b"})
    assert killpoints.ENV == "KIT_KILL_AT"
