"""The kit's botocore service-model overlay: operations AWS documents that the pinned botocore lacks (README.md).

`models/<service>/<api-version>/service-2.sdk-extras.json` are botocore "extras" files: when a botocore `Loader`
loads `<service>`'s model it merges the first `service-2.sdk-extras` file on its search path into it
(`Loader._find_extras` + `ExtrasProcessor`, the mechanism behind `AWS_DATA_PATH`). `install` appends `models/` to
the search path of one session's loader, so only the kit's own sessions see the overlay (no process-wide
environment variable, no change to other libraries' sessions, nothing happens on import). Every session the kit
builds for AWS calls goes through `boto3_session` (ops tools, recovery planner) or `install` (the test emulator's
route table); the monitor Lambda's package carries this module and its `models/` too.

Run from a zip (`--py-files jobs.zip` on EMR), `models/` is not a directory botocore can read: the files are then
copied once per process into a temporary directory with the same layout.
"""

from __future__ import annotations

import importlib.resources
import tempfile
import threading
from pathlib import Path
from typing import Any

# What the overlay adds, per botocore service name (kept in step with models/; a test checks both ways).
OPERATIONS: dict[str, tuple[str, ...]] = {"s3tables": ("DisassociateTableReplication",)}
MODELS = "models"

_lock = threading.Lock()
_materialised: Path | None = None


def models_dir() -> Path:
    """The directory to put on a botocore loader's search path (a real directory, even when run from a zip)."""
    global _materialised
    here = Path(__file__).resolve().parent / MODELS
    if here.is_dir():
        return here
    with _lock:
        if _materialised is None:
            root = Path(tempfile.mkdtemp(prefix="kit-aws-overlay-"))
            _copy_tree(importlib.resources.files(__package__ or "jobs.aws_overlay") / MODELS, root)
            _materialised = root
        return _materialised


def _copy_tree(src: Any, dst: Path) -> None:
    for child in src.iterdir():
        if child.is_dir():
            (dst / child.name).mkdir(parents=True, exist_ok=True)
            _copy_tree(child, dst / child.name)
        elif child.name.endswith(".json"):
            (dst / child.name).write_bytes(child.read_bytes())


def install(botocore_session: Any) -> Any:
    """Put the overlay on `botocore_session`'s loader search path (before any client or model is made from it:
    the loader caches the models it has loaded). Idempotent; returns the session."""
    loader = botocore_session.get_component("data_loader")
    path = str(models_dir())
    if path not in loader.search_paths:
        loader.search_paths.append(path)
    return botocore_session


def boto3_session(**kwargs: Any) -> Any:
    """A `boto3.session.Session(**kwargs)` whose clients know the overlay's operations (and parse timestamps with
    `jobs.aws_timestamps`, which outlives this overlay: keep that call when the overlay goes)."""
    import boto3
    import botocore.session

    from jobs import aws_timestamps

    session = aws_timestamps.install(install(botocore.session.get_session()))
    return boto3.session.Session(botocore_session=session, **kwargs)
