"""The pinned jars of an installed kit: fetched over real HTTP from a small Maven-layout repository on 127.0.0.1 into a
cache, each checked against its pinned SHA-256 (a corrupted file refused, nothing kept), found in the documented order,
and a missing one reported in one line naming the command that fetches it (exit 2, no traceback). No network."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit import cli
from s3tables_kit.jobs import jars as kit_jars
from s3tables_kit.topology.contract import pinned_jar_names

ARTIFACTS = {
    "org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/9.9.9/iceberg-spark-runtime-3.5_2.12-9.9.9.jar": b"PK runtime",
    "com/example/tiny/1.0/tiny-1.0.jar": b"PK tiny" * 1000,
}


@dataclass
class Repo:
    root: Path
    url: str
    requests: list[str]
    pins: tuple[kit_jars.Pin, ...]


class _Handler(SimpleHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads `seen`
        pass


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    """A Maven-layout repository served by Python's HTTP server on 127.0.0.1; pins from the bytes it serves."""
    root = tmp_path / "repo"
    for path, content in ARTIFACTS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    seen: list[str] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    pins = kit_jars.read_pins("".join(f"{hashlib.sha256(c).hexdigest()}  {p}\n" for p, c in ARTIFACTS.items()))
    try:
        yield Repo(root, f"http://127.0.0.1:{server.server_address[1]}/", seen, pins)
    finally:
        server.shutdown()
        server.server_close()


def places(tmp_path: Path, repo: Repo, explicit: Path | None = None) -> kit_jars.Places:
    return kit_jars.Places(explicit, tmp_path / "no-checkout" / ".jars", tmp_path / "cache", repo.url)


def test_the_pins_are_the_jars_of_the_pom() -> None:
    pins = kit_jars.pinned()
    assert [p.name for p in pins] == pinned_jar_names()
    assert all(len(p.sha256) == 64 and p.path.endswith(f"/{p.name}") for p in pins)


def test_first_use_fetches_over_http_into_the_cache_and_checks_each_file(tmp_path: Path, repo: Repo) -> None:
    said: list[str] = []
    jars = kit_jars.resolve(places(tmp_path, repo), repo.pins, say=said.append)
    assert [j.read_bytes() for j in jars] == [ARTIFACTS[p.path] for p in repo.pins]
    assert sorted(repo.requests) == sorted(f"/{p}" for p in ARTIFACTS)
    assert "first use" in said[0]
    assert kit_jars.resolve(places(tmp_path, repo), repo.pins, say=said.append) == jars
    assert len(repo.requests) == len(ARTIFACTS)  # the second use reads the cache


def test_a_corrupted_file_is_refused_and_nothing_is_kept(tmp_path: Path, repo: Repo) -> None:
    tiny = next(p for p in repo.pins if p.name == "tiny-1.0.jar")
    (repo.root / tiny.path).write_bytes(b"PK tiny, tampered by a mirror")
    with pytest.raises(
        kit_jars.JarsUnavailable, match=r"refused .*tiny-1\.0\.jar: its SHA-256 [0-9a-f]{64} is not the pinned"
    ):
        kit_jars.fetch(repo.pins, tmp_path / "cache", repo.url, say=lambda _: None)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["iceberg-spark-runtime-3.5_2.12-9.9.9.jar"]


def test_a_cached_file_that_changed_is_fetched_again(tmp_path: Path, repo: Repo) -> None:
    cache = tmp_path / "cache"
    kit_jars.fetch(repo.pins, cache, repo.url, say=lambda _: None)
    (cache / "tiny-1.0.jar").write_bytes(b"bit rot")
    kit_jars.fetch(repo.pins, cache, repo.url, say=lambda _: None)
    assert (cache / "tiny-1.0.jar").read_bytes() == ARTIFACTS["com/example/tiny/1.0/tiny-1.0.jar"]


def test_an_unreachable_repository_is_one_line_naming_the_fetch_command(tmp_path: Path, repo: Repo) -> None:
    gone = kit_jars.Places(None, tmp_path / "none", tmp_path / "cache", repo.url + "missing/")
    with pytest.raises(kit_jars.JarsUnavailable) as err:
        kit_jars.resolve(gone, repo.pins, say=lambda _: None)
    message = str(err.value)
    assert "\n" not in message and "HTTP" not in type(err.value).__name__
    assert "HTTP 404" in message and f"`{kit_jars.FETCH_COMMAND}`" in message and "$KIT_MAVEN_REPOSITORY" in message
    assert not any((tmp_path / "cache").iterdir())  # no partial download left behind


def test_the_operators_directory_and_a_checkout_come_first_and_are_never_fetched_into(
    tmp_path: Path, repo: Repo
) -> None:
    own = tmp_path / "own"
    own.mkdir()
    with pytest.raises(kit_jars.JarsUnavailable, match=rf"{own} lacks the pinned jar\(s\) .*fetch-jars --into {own}`"):
        kit_jars.resolve(places(tmp_path, repo, explicit=own), repo.pins)
    checkout = tmp_path / "checkout" / ".jars"
    kit_jars.fetch(repo.pins, checkout, repo.url, say=lambda _: None)
    found = kit_jars.resolve(kit_jars.Places(None, checkout, tmp_path / "cache", repo.url), repo.pins)
    assert [j.parent for j in found] == [checkout, checkout]
    assert not (tmp_path / "cache").exists()


def test_the_environment_names_the_places(tmp_path: Path) -> None:
    p = kit_jars.Places.from_env(
        {"XDG_CACHE_HOME": str(tmp_path), kit_jars.REPOSITORY_ENV: "https://mirror.example/maven2"}
    )
    assert (p.explicit, p.cache, p.repository) == (None, tmp_path / "s3tables-kit" / "jars", p.repository)
    assert p.repository == "https://mirror.example/maven2"
    assert kit_jars.Places.from_env({kit_jars.DIR_ENV: str(tmp_path)}).explicit == tmp_path
    assert kit_jars.Places.from_env({}).repository == kit_jars.MAVEN_CENTRAL


def test_fetch_jars_command_fills_a_directory(
    tmp_path: Path, repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(kit_jars, "pinned", lambda: repo.pins)
    assert cli.main(["fetch-jars", "--repository", repo.url, "--into", str(tmp_path / "d")]) == 0
    assert "2 pinned jars in" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == sorted(p.name for p in repo.pins)
    assert cli.main(["fetch-jars", "--repository", repo.url + "nothing/", "--into", str(tmp_path / "e")]) == 2
    progress, error = capsys.readouterr().err.splitlines()
    assert progress.startswith("fetching ") and error.startswith("error: could not fetch ")


def test_a_spark_command_without_its_jars_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyspark")
    # an empty directory: the session is refused before a JVM starts
    monkeypatch.setenv(kit_jars.DIR_ENV, str(tmp_path))
    (tmp_path / "warehouses" / "replica" / "analytics" / "orders").mkdir(parents=True)  # the drill's replica
    assert cli.main(["rehearse", "--local", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("rehearsal: ") and "iceberg-spark-runtime" in err and kit_jars.FETCH_COMMAND in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("s3tables-kit 0.1.0")
