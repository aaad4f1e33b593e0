"""The one place where the infra entry point reads environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class InfraEnv:
    config_path: str
    outdir: str | None  # None: cdktf decides (CDKTF_OUTDIR set by the cdktf CLI, else cdktf.out)
    allow_destroy: bool


def read_env() -> InfraEnv:
    return InfraEnv(
        config_path=os.environ.get("KIT_CONFIG", "examples/seed.toml"),
        outdir=os.environ.get("KIT_OUTDIR") or None,
        # Table buckets carry `prevent_destroy`; only an explicit KIT_ALLOW_DESTROY=1 synthesises them without it.
        allow_destroy=os.environ.get("KIT_ALLOW_DESTROY", "") == "1",
    )
