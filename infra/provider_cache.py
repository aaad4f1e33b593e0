"""Where `make provider` keeps its builds (a Terraform filesystem mirror outside the repository), read by the
builder (harness/provider_build.py), `make validate` and `make e2e` alike."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "KIT_PROVIDER_CACHE"


def cache_root() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "s3tables-kit" / "provider"


def current_mirror(root: Path | None = None) -> Path | None:
    """The mirror of the newest `make provider` build, or None (never built on this machine)."""
    link = (root or cache_root()) / "current"
    return link.resolve() if (link / "registry.terraform.io").is_dir() else None


VERIFIED_MARK = "e2e-passed"  # written into a built mirror by a `make e2e` that passed with it


def verified_mirror(root: Path | None = None) -> Path | None:
    """The built mirror, if a `make e2e` has passed with it on this machine (what CI requires before using it)."""
    mirror = current_mirror(root)
    return mirror if mirror is not None and (mirror / VERIFIED_MARK).is_file() else None
