"""The kit's AWS stand-in in its own process: one class that starts it on a free loopback port, waits until it
answers, resets it and stops it.

Every user of the emulator goes through `Emulator`: the test fixtures, the benchmarks, `make failover-drill` and
`make e2e`. The server is `python -m emulator.server` (moto's WSGI application behind the kit's S3 Tables
extension, `emulator/app.py`); the control client is `emulator.control.Control`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO

from emulator.control import Control

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
# The service models of the API AWS serves ahead of the pinned botocore (the checkout's one reviewed extension,
# read as data by path: the stand-in imports nothing of the kit).
SERVICE_MODELS = REPO / "topology" / "botocore_models"
# Regions beyond moto's built-in list are served too (the examples use any Region a user may name).
BASE_ENV = {"MOTO_ALLOW_NONEXISTENT_REGION": "true"}


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class _PortTaken(Exception):
    """Another process holds the port the emulator was to bind."""


class Emulator:
    """moto + the kit's S3 Tables extension, served over real HTTP from a child process.

    `port=None` picks a free port. `log` receives the server's output (a temporary file when not given; its tail is
    part of the error when the server does not come up). `env` adds variables to the server's environment, e.g.
    `MOTO_ACCOUNT_ID` to serve every request as one account. Use it as a context manager, or call `start()` and
    `stop()`.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        log: Path | None = None,
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = 60.0,
    ) -> None:
        self._picked_port = port is None
        self._use_port(port if port is not None else free_port())
        self._log_path = log
        self._env = dict(env or {})
        self._start_timeout_s = start_timeout_s
        self._log: IO[bytes] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def start(self) -> Emulator:
        """Start the server and wait until it answers. A port picked free (`port=None`) can be taken by another
        process between the pick and the bind (two test workers, an e2e run beside the tests): the child then exits,
        or another server answers there; either way the start is retried on a new free port (a few times)."""
        if self.proc is not None:
            return self
        for attempt in range(self._PORT_ATTEMPTS):
            try:
                return self._start_once()
            except _PortTaken:
                if not self._picked_port or attempt == self._PORT_ATTEMPTS - 1:
                    raise RuntimeError(f"the emulator could not bind {self.url}: the port is taken") from None
                self._use_port(free_port())
        raise AssertionError("unreachable")

    _PORT_ATTEMPTS = 5

    def _use_port(self, port: int) -> None:
        self.port = port
        self.url = f"http://{HOST}:{self.port}"
        self.control = Control(self.url)

    def _start_once(self) -> Emulator:
        data_path = os.pathsep.join(p for p in (str(SERVICE_MODELS), os.environ.get("AWS_DATA_PATH", "")) if p)
        env = {**os.environ, **BASE_ENV, "AWS_DATA_PATH": data_path, "PYTHONPATH": str(REPO), **self._env}
        env.pop("AWS_ENDPOINT_URL", None)  # the server itself must not talk to another endpoint
        if self._log_path is None:
            self._log = tempfile.NamedTemporaryFile(prefix="kit-emulator-", suffix=".log", delete=False)  # noqa: SIM115
            self._log_path = Path(self._log.name)
        else:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self._log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "emulator.server", "--host", HOST, "--port", str(self.port)],
            cwd=REPO,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + self._start_timeout_s
        while True:
            try:
                if self.control.server_pid() == self.proc.pid:
                    return self
                if self.control.health():  # a server answers there, and it is not ours: the port was taken
                    self.stop()
                    raise _PortTaken
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                if "address already in use" in tail.lower():
                    raise _PortTaken
                raise RuntimeError(f"the emulator did not start on {self.url}:\n{tail}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 3000) -> str:
        if self._log_path is None or not self._log_path.is_file():
            return ""
        return self._log_path.read_text(errors="replace")[-chars:]

    def reset(self) -> None:
        """Forget every resource of every account and the extension's state (faults, latency, statuses)."""
        self.control.reset()

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user + system), from /proc."""
        if self.proc is None:
            return 0.0
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
