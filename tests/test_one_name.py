"""Every module of the product has one name, `s3tables_kit.<package>...` (docs/decisions/0036-one-name-per-module.md):
a checkout's top-level folders refuse their bare names, what a reader is told to run or import names the package, and
a kit module is imported under a name that says what it is.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from s3tables_kit.topology import paths
from tests.test_docs import comment_and_docstring_lines, tracked_files

ROOT = paths.checkout()
assert ROOT is not None, "the tests run from a checkout"
PRODUCT = ("infra", "jobs", "policies", "topology")

# A product module by its bare name (a product folder, a dot, a module): not preceded by a word, a dot (the package's
# own name), a path or a bracket; file names (`jobs.zip`, `policies.yml`) are not modules.
BARE = re.compile(
    r"(?<![\w./\-\[\]])(?:infra|jobs|policies|topology)\.(?!(?:py|zip|yml|yaml|json|toml|md|txt|sh|mjs|tf)\b)[a-z_]\w*"
)
DOCS = ("README.md", "BENCHMARKS.md", "Makefile", "cdktf.json", "pyproject.toml")
DOC_FOLDERS = ("docs/", "examples/", "scripts/", ".ci/", ".github/")
CODE_FOLDERS = tuple(f"{p}/" for p in ("s3tables_kit", *PRODUCT, "harness", "bench", "emulator", "tests"))


@pytest.mark.parametrize("package", PRODUCT)
def test_a_bare_product_import_fails_naming_the_package(package: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", f"import {package}"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: import s3tables_kit.{package}, not {package}:"), run.stderr


def bare_names_in_text(text: str) -> list[str]:
    return [m.group(0) for m in BARE.finditer(text)]


def bare_names_in_python(source: str) -> list[tuple[int, str]]:
    """Bare product module names in the comments and docstrings of `source` (its imports are checked by
    tests/test_layers.py: the product imports itself by the package's name)."""
    if not BARE.search(source):
        return []
    return [(n, name) for n, text in comment_and_docstring_lines(source) for name in bare_names_in_text(text)]


def test_the_checker_finds_bare_names_and_passes_the_package_names() -> None:
    text = "run `python -m infra.main`, policies.docset.build(cfg); s3tables_kit.jobs.ops.status, jobs.zip, jobs/ops"
    assert bare_names_in_text(text) == ["infra.main", "policies.docset"]
    source = '"""Runs jobs.ops.status."""\n# see topology.config\nx = "jobs.ops"\npolicies.update({})\n'
    assert bare_names_in_python(source) == [(1, "jobs.ops"), (2, "topology.config")]


def test_docs_and_commands_name_modules_by_the_package_name() -> None:
    docs = [rel for rel in tracked_files() if rel in DOCS or rel.startswith(DOC_FOLDERS)]
    assert "cdktf.json" in docs and "docs/architecture.md" in docs
    found = [f"{rel}: {name}" for rel in docs for name in bare_names_in_text((ROOT / rel).read_text(encoding="utf-8"))]
    assert found == []


def test_docstrings_and_comments_name_modules_by_the_package_name() -> None:
    """Every Python file of the kit and its harness (the tests' rule tables of tests/test_layers.py name modules below
    the package, as its rules are written, in code only)."""
    code = [rel for rel in tracked_files() if rel.endswith(".py") and rel.startswith(CODE_FOLDERS)]
    found = [
        f"{rel}:{line}: {name}"
        for rel in code
        for line, name in bare_names_in_python((ROOT / rel).read_text(encoding="utf-8"))
    ]
    assert found == []


# A kit module imported under one letter (`... import actions as A`): `F` and `R` each came to mean two modules.
ONE_LETTER = re.compile(r"^\s*(?:from ([\w.]+) import \w+|import ([\w.]+)) as [A-Za-z]\b", flags=re.M)
KIT_ROOTS = ("s3tables_kit", "harness", "bench", "emulator", "tests")


def one_letter_aliases(source: str) -> list[str]:
    return [
        m.group(0).strip() for m in ONE_LETTER.finditer(source) if (m.group(1) or m.group(2)).split(".")[0] in KIT_ROOTS
    ]


def test_a_kit_module_is_imported_under_a_name_that_says_what_it_is() -> None:
    code = [rel for rel in tracked_files() if rel.endswith(".py") and rel.startswith(CODE_FOLDERS)]
    found = [f"{rel}: {a}" for rel in code for a in one_letter_aliases((ROOT / rel).read_text(encoding="utf-8"))]
    assert found == []
    source = "from s3tables_kit.policies import actions as A\nimport pyspark.sql.functions as F\nx = 'import a as b'\n"
    assert one_letter_aliases(source) == ["from s3tables_kit.policies import actions as A"]
