"""The one place where the infra entry point reads environment variables."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from s3tables_kit.topology.config import ConfigError, KitConfig, config_warnings, load_config, placeholder_issues


@dataclass(frozen=True)
class InfraEnv:
    config_path: str
    outdir: str | None  # None: cdktf decides (CDKTF_OUTDIR set by the cdktf CLI, else cdktf.out)
    allow_destroy: bool


NO_CONFIG = (
    "KIT_CONFIG is not set: name the configuration to synthesise or deploy, e.g. "
    "`KIT_CONFIG=kit.toml npx cdktf deploy '*'` (an example is named the same way: KIT_CONFIG=examples/seed.toml); "
    "nothing was built"
)


def read_env() -> InfraEnv | None:
    """The environment of the entry point; None when KIT_CONFIG is unset (no configuration is ever assumed: a
    forgotten `KIT_CONFIG=` must not deploy, or read the outputs of, an example's topology)."""
    config_path = os.environ.get("KIT_CONFIG", "").strip()
    if not config_path:
        return None
    return InfraEnv(
        config_path=config_path,
        outdir=os.environ.get("KIT_OUTDIR") or None,
        # Table buckets carry `prevent_destroy`; only an explicit KIT_ALLOW_DESTROY=1 synthesises them without it.
        allow_destroy=os.environ.get("KIT_ALLOW_DESTROY", "") == "1",
    )


def read_env_config() -> tuple[InfraEnv, KitConfig] | None:
    """The environment and the configuration it names, validated; None (the error printed on stderr) when the
    configuration is invalid, so the entry point can exit 2 before anything is built."""
    env = read_env()
    if env is None:
        print(NO_CONFIG, file=sys.stderr)
        return None
    try:
        cfg = load_config(env.config_path)
        unfinished = placeholder_issues(cfg)
        if unfinished:  # a proposal's lines still to complete: never synthesised or deployed
            raise ConfigError(env.config_path, unfinished)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return None
    for warning in config_warnings(cfg):
        print(f"warning: {env.config_path}: {warning}", file=sys.stderr)
    return env, cfg
