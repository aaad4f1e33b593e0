"""The prebuilt AWS provider bindings, imported lazily: their package `__init__` imports all of its ~2,200 resource
modules (about 25 s of CPU in every process that synthesizes; the kit uses about 30 of them). Loaded here with those
eager submodule imports left out, every `cdktf_cdktf_provider_aws.<resource>` import still works, as a normal
submodule import on first use. The synthesized stacks are byte-identical either way (the goldens prove it).

Disappears once the bindings load their submodules lazily upstream; harmless until then: when the package's
`__init__` no longer has the `from . import <module>` lines (or is already imported), this changes nothing.
"""

from __future__ import annotations

import importlib.util
import re
import sys

PACKAGE = "cdktf_cdktf_provider_aws"
_EAGER_SUBMODULE = re.compile(r"^from \. import \w+$", re.MULTILINE)


def load_provider_lazily() -> None:
    """Import the provider package without its eager submodule imports (idempotent; a no-op without the
    `[infra]` extra installed)."""
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None or spec.loader is None:
        return
    with open(spec.origin, encoding="utf-8") as f:
        source = _EAGER_SUBMODULE.sub("pass", f.read())
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        exec(compile(source, spec.origin, "exec"), module.__dict__)  # the installed package's own code
    except BaseException:
        del sys.modules[PACKAGE]
        raise
