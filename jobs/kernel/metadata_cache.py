"""What the ops tools keep of an Iceberg metadata file, cached on local disk by the file's location.

An Iceberg metadata file is immutable: a commit writes a new file under a new name (the table's metadata location
then points at it) and never rewrites an old one. What a tool derives from one file (`MetadataSummary`: its commit
times and the snapshots it retains) is therefore valid for as long as that location exists, and a second run of
`status` over an unchanged lake needs the metadata location of each table (one `GetTable`) but not the file itself
(one `GetObject` and a JSON parse fewer per table).

The cache (`MetadataCache`):

* one small JSON file per metadata location, named by the SHA-256 of the location, in 256 sub-directories of the
  cache directory (`resolve_cache_dir`: ``--cache-dir``, else ``$KIT_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/s3tables-kit/metadata`` or ``~/.cache/s3tables-kit/metadata``);
* written atomically (a temporary file in the same directory, then ``os.replace``): two runs at the same time, or
  the worker processes of one run, may write the same entry; a reader sees the old file, the new one or none, never
  a partial one, and both writers write the same content;
* an entry that cannot be read or parsed, names another location or another format version is a miss (the file is
  read again from S3 and the entry rewritten), never an error: a corrupt cache costs requests, not results;
* bounded: `prune` keeps the `max_entries` most recently written entries (the tools prune once per run);
* a cache directory that cannot be created or written disables the cache for the run, with no error;
* ``--no-cache`` bypasses it (nothing read, nothing written).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3tables_kit.jobs.kernel.snapshot_times import log_steps_back, newest_time

CACHE_ENV = "KIT_CACHE_DIR"
FORMAT = 3  # bump when `MetadataSummary` changes shape: older entries become misses
MAX_ENTRIES = 500_000  # ~ 300 bytes each on disk (plus the file system's block): a few 100 MB at most


def resolve_cache_dir(flag: str | None) -> Path:
    """The one place the cache's environment variables are read: ``--cache-dir`` wins, then ``$KIT_CACHE_DIR``, then
    the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``) under ``s3tables-kit/metadata``."""
    value = flag or os.environ.get(CACHE_ENV, "").strip()
    if value:
        return Path(value)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "s3tables-kit" / "metadata"


def _ms(values: Iterable[Any]) -> tuple[int, ...]:
    out = set()
    for v in values:
        try:
            ms = int(v)
        except (TypeError, ValueError):
            continue
        if ms > 0:
            out.add(ms)
    return tuple(sorted(out))


def _pairs(entries: Any) -> list[tuple[int, int]]:
    """(timestamp-ms, snapshot-id) of each well-formed snapshot-log entry or snapshot, in their order."""
    out = []
    for e in entries if isinstance(entries, list) else []:
        try:
            out.append((int(e["timestamp-ms"]), int(e["snapshot-id"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _ints(values: Any, n: int) -> tuple[int, ...]:
    if not isinstance(values, list) or len(values) != n or not all(isinstance(v, int) for v in values):
        raise ValueError(f"expected {n} integers")
    return tuple(values)


def current_snapshot_bytes(metadata: Mapping[str, Any]) -> int | None:
    """``total-files-size`` of an Iceberg metadata document's current snapshot, from its summary: 0 without a current
    snapshot, None when the summary does not say (pure)."""
    current = metadata.get("current-snapshot-id")
    if current in (None, -1):
        return 0
    snap = next((s for s in metadata.get("snapshots") or [] if s.get("snapshot-id") == current), None)
    try:
        return int(((snap or {}).get("summary") or {})["total-files-size"])
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class MetadataSummary:
    """What the ops tools need of one metadata file: every commit time it knows (``last-updated-ms``, the
    ``metadata-log`` entries, the snapshots) and the commit times of the snapshots it retains, in epoch
    milliseconds, ascending; and `current_bytes`, the ``total-files-size`` of the current snapshot's summary (0
    without a current snapshot, None when the summary lacks it): what the backfill view counts."""

    commit_ms: tuple[int, ...]
    snapshot_ms: tuple[int, ...]
    current_bytes: int | None = None
    # What `s3tables_kit.jobs.kernel.snapshot_times` judges: the snapshot log's steps back, and the newest (time,
    # snapshot id).
    log_steps_back: tuple[tuple[int, int, int, int], ...] = ()
    newest_snapshot: tuple[int, int] | None = None

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> MetadataSummary:
        snapshots = [s.get("timestamp-ms") for s in metadata.get("snapshots") or []]
        log = [e.get("timestamp-ms") for e in metadata.get("metadata-log") or []]
        snapshot_log = _pairs(metadata.get("snapshot-log"))
        return cls(
            commit_ms=_ms([metadata.get("last-updated-ms"), *log, *snapshots]),
            snapshot_ms=_ms(snapshots),
            current_bytes=current_snapshot_bytes(metadata),
            log_steps_back=log_steps_back(snapshot_log),
            newest_snapshot=newest_time([*snapshot_log, *_pairs(metadata.get("snapshots"))]),
        )

    @classmethod
    def parse(cls, raw: bytes) -> MetadataSummary:
        """From the bytes of a metadata file (ValueError when they are not a JSON object)."""
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("an Iceberg metadata file is a JSON object")
        return cls.of(doc)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit_ms": list(self.commit_ms),
            "snapshot_ms": list(self.snapshot_ms),
            "current_bytes": self.current_bytes,
            "log_steps_back": [list(s) for s in self.log_steps_back],
            "newest_snapshot": list(self.newest_snapshot) if self.newest_snapshot else None,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> MetadataSummary:
        commits, snapshots, size = doc["commit_ms"], doc["snapshot_ms"], doc.get("current_bytes")
        if not all(isinstance(x, int) for x in (*commits, *snapshots)):
            raise ValueError("commit and snapshot times are integers")
        if size is not None and not isinstance(size, int):
            raise ValueError("the current snapshot's size is an integer")
        steps = tuple(_ints(s, 4) for s in doc.get("log_steps_back") or [])
        newest = _ints(doc["newest_snapshot"], 2) if doc.get("newest_snapshot") is not None else None
        return cls(tuple(commits), tuple(snapshots), size, steps, newest)  # type: ignore[arg-type]


@dataclass
class MetadataCache:
    """Summaries of metadata files on local disk, keyed by the file's location (module docstring). Picklable: the
    tools' worker processes share the directory. `hits`/`misses`/`writes` count this process's lookups; `size` is
    the number of entries found when the cache was opened (after pruning)."""

    directory: Path
    enabled: bool = True
    size: int = 0
    hits: int = 0
    misses: int = 0
    writes: int = 0

    @classmethod
    def disabled(cls) -> MetadataCache:
        return cls(Path(os.devnull), enabled=False)

    @classmethod
    def open(cls, directory: Path, max_entries: int = MAX_ENTRIES) -> MetadataCache:
        """The cache in `directory` (created if missing), pruned to `max_entries`; disabled (no error) when the
        directory cannot be created or written."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
                pass
        except OSError:
            return cls(directory, enabled=False)
        cache = cls(directory)
        cache.prune(max_entries)
        return cache

    @property
    def empty(self) -> bool:
        """Nothing to reuse: disabled, or no entry found when opened (a first run on this machine) and none written
        by this process since."""
        return not self.enabled or (self.size == 0 and self.writes == 0)

    def path_of(self, location: str) -> Path:
        digest = hashlib.sha256(location.encode()).hexdigest()
        return self.directory / digest[:2] / f"{digest}.json"

    def get(self, location: str) -> MetadataSummary | None:
        """The summary of the metadata file at `location`, or None (not cached, unreadable, corrupt, another
        location or format)."""
        if not self.enabled:
            return None
        try:
            doc = json.loads(self.path_of(location).read_bytes())
            if doc.get("format") != FORMAT or doc.get("location") != location:
                raise ValueError("another location or format")
            summary = MetadataSummary.from_json(doc["summary"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.misses += 1
            return None
        self.hits += 1
        return summary

    def put(self, location: str, summary: MetadataSummary) -> None:
        """Store atomically (a temporary file, then `os.replace`); a failed write is ignored (the next run reads the
        file from S3 again)."""
        if not self.enabled:
            return
        path = self.path_of(location)
        body = json.dumps({"format": FORMAT, "location": location, "summary": summary.to_json()}).encode()
        tmp: str | None = None
        try:
            path.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(body)
            os.replace(tmp, path)
            tmp = None
            self.writes += 1
        except OSError:
            pass
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def entries(self) -> list[os.DirEntry[str]]:
        out: list[os.DirEntry[str]] = []
        with contextlib.suppress(OSError), os.scandir(self.directory) as shards:
            for shard in shards:
                if shard.is_dir(follow_symlinks=False) and len(shard.name) == 2:
                    with contextlib.suppress(OSError), os.scandir(shard.path) as files:
                        out.extend(f for f in files if f.name.endswith(".json"))
        return out

    def prune(self, max_entries: int = MAX_ENTRIES) -> int:
        """Remove the oldest-written entries beyond `max_entries`, and temporary files a killed writer left behind
        (older than an hour); returns how many entries were removed."""
        stale = time.time() - 3600
        for tmp in self.directory.glob("??/.tmp-*"):
            with contextlib.suppress(OSError):
                if tmp.stat().st_mtime < stale:
                    tmp.unlink()
        found = self.entries()
        self.size = min(len(found), max_entries)
        if len(found) <= max_entries:
            return 0

        def mtime(e: os.DirEntry[str]) -> float:
            try:
                return e.stat(follow_symlinks=False).st_mtime
            except OSError:
                return 0.0

        found.sort(key=mtime)
        removed = 0
        for e in found[: len(found) - max_entries]:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
                removed += 1
        return removed

    def counts(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes}
