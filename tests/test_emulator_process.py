"""The emulator's process wrapper: a start that finds its port taken by another server never talks to that server
(it would share another run's state, and its reset would wipe it), and moves to a free port."""

from __future__ import annotations

import pytest

from emulator import process
from emulator.process import Emulator


def test_a_port_taken_between_pick_and_bind_moves_to_another_and_never_shares_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with Emulator() as first:
        picks = iter([first.port])
        real = process.free_port
        monkeypatch.setattr(process, "free_port", lambda: next(picks, None) or real())
        second = Emulator()  # picks first's port: taken by a server that answers health
        assert second.port == first.port
        with second:
            assert second.port != first.port and second.proc is not None and first.proc is not None
            assert second.control.server_pid() == second.proc.pid
            assert first.control.server_pid() == first.proc.pid
            second.reset()  # its reset is its own: the first server still answers as itself
            assert first.control.health()


def test_a_fixed_port_that_is_taken_is_an_error_naming_it() -> None:
    with Emulator() as first, pytest.raises(RuntimeError, match=f"could not bind {first.url}"):
        Emulator(port=first.port, start_timeout_s=20).start()
