"""Where the kit's files are, said once: the package's own data, the directory that holds the package, and the
checkout the package is imported from, if it is one.

- `PACKAGE`: the `s3tables_kit/` directory as Python imports it. Its data sits below it: `jars/pom.xml`,
  `policies/rendered/`, `policies/simulator/`, the `jobs/` and `topology/` files the Lambda and EMR packages are
  built from. In a checkout its product folders are links to the top-level ones, so a path below it is the same file.
- `ROOT`: the directory holding `s3tables_kit/`: a checkout's root (examples, tests, docs, `.build/`, `.jars/`,
  `node_modules/` are below it there), `site-packages`, or a Lambda package's task root (where the files the
  function's package holds beside the code sit: the declared state, the hardener's plan).
- `checkout()`: `ROOT` when it is a checkout of the repository, else None (an installed wheel, a Lambda package).

Standard library only: the monitor's Lambda package ships this module (`infra/packaging.py`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

# Not resolved: in a checkout `s3tables_kit/jobs` is a link, and the package's paths stay below `s3tables_kit/`.
PACKAGE = Path(__file__).absolute().parent.parent
ROOT = PACKAGE.parent


@cache
def checkout() -> Path | None:
    """The checkout's root when the package is imported from one (its `pyproject.toml` and harness beside it)."""
    return ROOT if (ROOT / "pyproject.toml").is_file() and (ROOT / "harness").is_dir() else None
