"""The pinned JVM jars a local Spark session runs with (Iceberg for Spark, its AWS bundle, the S3 Tables catalog), and
where an installed kit finds them.

`jars/pom.xml` names them (`make setup` copies them into a checkout's `.jars/` with Maven); `jars/pinned-jars.sha256`
pins each one's SHA-256 and its path in a Maven repository. Both ship in the wheel. The jars are looked for in the
first of:

1. `$KIT_JARS_DIR`: a directory the operator fills (an air-gapped host); read, never written;
2. a checkout's `.jars/`, when the kit runs from a checkout (`make setup`);
3. the user cache (`$KIT_JARS_CACHE`, else `$XDG_CACHE_HOME/s3tables-kit/jars`, else `~/.cache/s3tables-kit/jars`),
   filled on first use from Maven Central (or the repository of `$KIT_MAVEN_REPOSITORY`, an internal mirror).

A fetched file is kept only when its SHA-256 is the pinned one: a mirror or a network in between can make the fetch
fail, never change what the JVM loads. `s3tables-kit fetch-jars` fills the cache ahead of time (before an incident,
or on a host with network access, then `--into DIR` and `$KIT_JARS_DIR` elsewhere). Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from s3tables_kit.jobs.kernel.idents import JobError
from s3tables_kit.topology import paths

PINS_FILE = paths.PACKAGE / "jars" / "pinned-jars.sha256"
CHECKOUT_JARS = paths.ROOT / ".jars"  # a checkout's, after `make setup`; absent in an installed kit
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
DIR_ENV, CACHE_ENV, REPOSITORY_ENV = "KIT_JARS_DIR", "KIT_JARS_CACHE", "KIT_MAVEN_REPOSITORY"
FETCH_COMMAND = "s3tables-kit fetch-jars"
_CHUNK = 1 << 20
_TIMEOUT = 60.0


class JarsUnavailable(JobError):
    """A pinned jar is missing and could not be fetched; the message is one line naming what fetches it."""


@dataclass(frozen=True)
class Pin:
    sha256: str
    path: str  # in a Maven repository: group/as/dirs/artifact/version/artifact-version.jar

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def read_pins(text: str) -> tuple[Pin, ...]:
    """The lines `<sha256>  <path>` of a pins file (comments and blank lines skipped), sorted by jar name."""
    pins = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            digest, path = line.split(maxsplit=1)
            pins.append(Pin(digest.lower(), path.strip()))
    return tuple(sorted(pins, key=lambda p: p.name))


def pinned() -> tuple[Pin, ...]:
    return read_pins(PINS_FILE.read_text())


@dataclass(frozen=True)
class Places:
    """Where the jars are looked for and fetched from: the environment, read here and nowhere else."""

    explicit: Path | None  # $KIT_JARS_DIR
    checkout: Path  # a checkout's .jars/ (used when it exists)
    cache: Path
    repository: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Places:
        env = os.environ if env is None else env
        base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cls(
            explicit=Path(env[DIR_ENV]).expanduser() if env.get(DIR_ENV) else None,
            checkout=CHECKOUT_JARS,
            cache=Path(env[CACHE_ENV]).expanduser() if env.get(CACHE_ENV) else base / "s3tables-kit" / "jars",
            repository=env.get(REPOSITORY_ENV) or MAVEN_CENTRAL,
        )


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def fetch(pins: Sequence[Pin], into: Path, repository: str, *, say: Callable[[str], None] = _stderr) -> list[Path]:
    """Every pin as a file of `into`, downloading the absent ones from `repository`; a file is renamed into place only
    after its SHA-256 matched its pin, so `into` never holds unchecked bytes. Raises `JarsUnavailable`."""
    into.mkdir(parents=True, exist_ok=True)
    base = repository.rstrip("/")
    out = []
    for pin in pins:
        dest = into / pin.name
        if not (dest.is_file() and _sha256(dest) == pin.sha256):  # absent, or bytes that are not the pinned ones
            url = f"{base}/{pin.path}"
            say(f"fetching {pin.name} from {url}")
            _download(url, pin, dest)
        out.append(dest)
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _download(url: str, pin: Pin, dest: Path) -> None:
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        if urllib.parse.urlsplit(url).scheme not in ("https", "http", "file"):
            raise ValueError(f"unsupported repository URL {url!r}")
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as response, part.open("wb") as f:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                f.write(chunk)
    except (OSError, ValueError) as err:  # urllib.error.URLError and HTTPError are OSErrors
        part.unlink(missing_ok=True)
        if isinstance(err, urllib.error.HTTPError):
            err.close()  # it holds the response's socket
            reason: object = f"HTTP {err.code} {err.reason}"
        else:
            reason = err.reason if isinstance(err, urllib.error.URLError) else err
        raise JarsUnavailable(
            f"could not fetch {pin.name} from {url} ({reason}): run `{FETCH_COMMAND}` where the repository is "
            f"reachable (--repository URL or ${REPOSITORY_ENV} for a mirror), or set ${DIR_ENV} to a directory "
            "holding the pinned jars"
        ) from None
    if digest.hexdigest() != pin.sha256:
        part.unlink()
        raise JarsUnavailable(
            f"refused {url}: its SHA-256 {digest.hexdigest()} is not the pinned {pin.sha256} (nothing kept); check "
            f"the repository, then run `{FETCH_COMMAND}` again"
        )
    part.replace(dest)


def _complete(directory: Path, pins: Sequence[Pin], remedy: str) -> list[Path]:
    missing = [p.name for p in pins if not (directory / p.name).is_file()]
    if missing:
        raise JarsUnavailable(f"{directory} lacks the pinned jar(s) {', '.join(missing)}: {remedy}")
    return [directory / p.name for p in pins]


def resolve(
    places: Places, pins: Sequence[Pin], *, fetch_missing: bool = True, say: Callable[[str], None] = _stderr
) -> list[Path]:
    """The pinned jars' files, from the first place that applies (module docstring); the user cache is filled on
    first use unless `fetch_missing` is false. Raises `JarsUnavailable`, one line naming the command that helps."""
    if places.explicit is not None:
        return _complete(places.explicit, pins, f"run `{FETCH_COMMAND} --into {places.explicit}`, or unset ${DIR_ENV}")
    if places.checkout.is_dir():
        return _complete(places.checkout, pins, "run `make setup` in the checkout")
    if fetch_missing and any(not (places.cache / p.name).is_file() for p in pins):
        say(f"s3tables-kit: first use: fetching the pinned Iceberg jars into {places.cache} (SHA-256 checked)")
        fetch(pins, places.cache, places.repository, say=say)
    return _complete(places.cache, pins, f"run `{FETCH_COMMAND}`")


def kit_jars(jars_dir: Path | None = None) -> list[Path]:
    """The jars a local Spark session loads: those of `jars_dir` when given (never fetched into), else `resolve`d."""
    places = Places.from_env()
    if jars_dir is not None:
        places = Places(jars_dir, places.checkout, places.cache, places.repository)
    return resolve(places, pinned())


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=FETCH_COMMAND,
        description="Download the pinned Iceberg jars a local Spark session runs with (recover, rehearse, backup) "
        "into the user cache, each checked against the SHA-256 the kit pins. Idempotent: present jars are kept.",
    )
    p.add_argument("--repository", metavar="URL", help=f"a Maven repository (default ${REPOSITORY_ENV}, else Central)")
    p.add_argument("--into", metavar="DIR", type=Path, help="another directory (then point $KIT_JARS_DIR at it)")
    return p


def main(argv: list[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    places = Places.from_env()
    into = ns.into or places.cache
    try:
        jars = fetch(pinned(), into, ns.repository or places.repository)
    except JarsUnavailable as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{len(jars)} pinned jars in {into}, SHA-256 checked")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
