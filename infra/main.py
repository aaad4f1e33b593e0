"""Entry point for `cdktf synth` / `cdktf deploy` (cdktf.json runs `python -m s3tables_kit.infra.main`).

Loads and validates the configuration named by KIT_CONFIG before anything is built, so an invalid configuration
writes nothing. Without KIT_CONFIG it refuses (exit 2): a forgotten `KIT_CONFIG=` must never synthesise, deploy or
read the outputs of an example's topology; an example is named like any configuration
(KIT_CONFIG=examples/seed.toml)."""

from __future__ import annotations

import sys

from s3tables_kit.infra.env import read_env_config


def main() -> int:
    loaded = read_env_config()
    if loaded is None:
        return 2
    env, cfg = loaded
    from s3tables_kit.policies.lint import build_within_quotas
    from s3tables_kit.topology.issues import KitRefusal

    try:
        build_within_quotas(
            cfg
        )  # the documents first: an adopter's statement refused before the provider bindings load (~20 s)
    except KitRefusal as err:
        print(f"{env.config_path}: {err}", file=sys.stderr)
        return 2
    from s3tables_kit.infra.app import (  # the provider bindings (~20 s): after the config is valid
        EstateFailoverError,
        build_app,
    )

    try:
        app = build_app(cfg, outdir=env.outdir, allow_destroy=env.allow_destroy)
    # A topology the kit does not build, or an adopted statement that defeats a protection: refused before anything
    # is written.
    except (EstateFailoverError, KitRefusal) as err:
        print(f"{env.config_path}: {err}", file=sys.stderr)
        return 2
    try:
        app.synth()
    except Exception as err:  # a KIT nag rule refused a document: it comes back through jsii as a RuntimeError
        from s3tables_kit.infra.nag import nag_refusals

        lines = nag_refusals(err)
        if not lines:
            raise
        for line in lines:
            print(f"{env.config_path}: {line}", file=sys.stderr)
        return 2
    print(f"synthesised {env.config_path} -> {env.outdir or 'cdktf.out'}/stacks/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
