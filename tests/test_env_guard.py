"""The conftest's environment guard: a stand-in setting left in `os.environ` fails the test that left it, and the
variable is put back for the tests after it."""

from __future__ import annotations

import os

import pytest

from tests.conftest import GUARDED_ENV, env_left_alone

NAME = GUARDED_ENV[0]


def test_a_setting_left_behind_fails_and_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)
    with pytest.raises(pytest.fail.Exception, match=NAME), env_left_alone("the leaker"):
        os.environ[NAME] = "WHEN_REQUIRED"  # what an in-process start without a monkeypatch does
    assert NAME not in os.environ


def test_a_monkeypatched_setting_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAME, raising=False)
    with env_left_alone("the careful one"), pytest.MonkeyPatch.context() as mp:  # undone before the guard looks
        mp.setenv(NAME, "WHEN_REQUIRED")
    assert NAME not in os.environ
