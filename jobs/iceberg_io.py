"""pyiceberg FileIO for S3 Tables storage with ONE pyarrow S3 filesystem for every bucket (failover committer, recovery
planner).

pyiceberg's `PyArrowFileIO` caches a filesystem per (scheme, bucket) and building one (an AWS SDK C++ S3 client) takes
several milliseconds of CPU; on S3 Tables every table has its own storage bucket, so a run over 10,000 tables built
10,000 of them: the largest client cost of the failover (BENCHMARKS.md, Profiles) and of the lake-scale plan
(round 4: 6 ms of 8 ms per table). Nothing happens on import.
"""

from __future__ import annotations

import functools
import importlib
import threading
from typing import Any


@functools.cache
def _shared_s3_file_io_class() -> type:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    class SharedS3FileIO(PyArrowFileIO):
        """pyiceberg's PyArrowFileIO with ONE pyarrow S3FileSystem for every S3 bucket.

        PyArrowFileIO caches a filesystem per (scheme, bucket) and building one (an AWS SDK C++ S3 client) is
        costly; on S3 Tables every table has its own storage bucket, so a run over 1,000 tables built 1,000 of
        them (the largest cost of the client in the profile, see BENCHMARKS.md, Profiles). The committer's
        properties (Region, endpoint, credentials) are the same for all tables of its table bucket and the bucket
        is part of every pyarrow path, so one filesystem serves them all. Bucket-region resolution is not used (the
        Region is always given, `io_props`)."""

        def __init__(self, properties: Any) -> None:
            super().__init__(properties)
            per_bucket = self.fs_by_scheme
            cache: dict[tuple[str, str | None], Any] = {}
            lock = threading.Lock()

            def fs_by_scheme(scheme: str, netloc: str | None) -> Any:
                key = (scheme, None) if scheme in ("s3", "s3a", "s3n") else (scheme, netloc)
                with lock:  # also: 32 threads missing the cache at once must not build 32 filesystems
                    if key not in cache:
                        cache[key] = _delayed_open(per_bucket(scheme, netloc), _retry_strategy(self.properties))
                    return cache[key]

            self.fs_by_scheme = fs_by_scheme

    return SharedS3FileIO


def _retry_strategy(properties: Any) -> Any:
    """The retry strategy the properties name (pyiceberg's ``s3.retry-strategy-impl``, a class path instantiated
    without arguments, as pyiceberg does), or None."""
    from s3tables_kit.jobs.kernel.sdk import PYICEBERG_RETRY_PROPERTY

    path = (properties or {}).get(PYICEBERG_RETRY_PROPERTY)
    if not path:
        return None
    module, _, name = str(path).rpartition(".")
    return getattr(importlib.import_module(module), name)()


def _delayed_open(fs: Any, retry_strategy: Any = None) -> Any:
    """The same pyarrow S3FileSystem with `allow_delayed_open`: a small file (a metadata.json) is then written with
    one PutObject instead of CreateMultipartUpload + UploadPart + CompleteMultipartUpload (pyiceberg does not expose
    the option). Errors such as a missing bucket surface at close instead of open, which the commit awaits anyway.
    The constructor arguments come from the filesystem's pickling state, which leaves out the retry strategy (pyarrow
    26): it is passed again, or the rebuilt filesystem would retry with pyarrow's default (round 4: 20% throttled
    metadata reads then failed the plan)."""
    from pyarrow.fs import S3FileSystem

    if not isinstance(fs, S3FileSystem):
        return fs
    kwargs = fs.__reduce__()[1][0]  # the filesystem's own constructor arguments (what pickling uses)
    extra = {"allow_delayed_open": True}
    if retry_strategy is not None:
        extra["retry_strategy"] = retry_strategy
    return S3FileSystem(**{**kwargs, **extra})


def shared_s3_file_io(props: dict[str, str]) -> Any:
    """A pyiceberg FileIO whose S3 filesystem is shared by all buckets (see `SharedS3FileIO`)."""
    from s3tables_kit.jobs.kernel.sdk import fileio_properties

    if "s3.region" not in props:
        raise ValueError("shared_s3_file_io needs s3.region (no per-bucket Region resolution)")
    return _shared_s3_file_io_class()(fileio_properties(props))  # the kit's S3 retry strategy unless props set one
