"""What a runtime package of the kit holds, derived from its entry points' imports (read as source, never imported).

The Lambda packages (`infra/packaging.py`: the monitor, the replica freshness check, the scheduled hardener) and the
EMR jobs zip (`jobs/emr_submit.py`) ship the kit's modules their entries can import, found by walking the source:

- an import at module level (run when the module loads) is followed, with the `__init__.py` of every package on the
  way; one under `if TYPE_CHECKING:` is not (it never runs);
- an import inside a function (run when that function runs) is followed too, unless the package's runtime lacks a
  third-party distribution the imported module needs at load: that path cannot run there (the monitor's command line
  reading `kit.toml` with pydantic, which the Lambda runtime does not have), so it is left out by rule;
- an import inside a tool's command line (a function `main`) is followed only for a package whose entries run
  command lines (the EMR jobs call `recover`'s); a Lambda package's entry is its handler, which never does;
- the standard library and other distributions are never shipped: the runtime provides them.

The walk names modules by their `s3tables_kit.` import names; a relative import is refused (the kit uses none).
Standard library only: the infra and the jobs layers both package with it.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from s3tables_kit.topology import paths

PACKAGE = "s3tables_kit"
REPO = paths.PACKAGE  # the kit's modules as paths below the package (links to the top-level folders in a checkout)
# The third-party distributions the AWS Lambda Python runtime bundles (the SDK), by import name.
LAMBDA_RUNTIME = frozenset({"boto3", "botocore"})


def module_file(name: str, root: Path = REPO) -> str | None:
    """The file of a kit module by its import name (`s3tables_kit.jobs.ops.status` -> `jobs/ops/status.py`); None for
    a name that is no module of the kit (a function imported from one, the standard library, another distribution)."""
    head, _, rest = name.partition(".")
    if head != PACKAGE or not rest:
        return None
    rel = rest.replace(".", "/")
    return next((f for f in (f"{rel}.py", f"{rel}/__init__.py") if (root / f).is_file()), None)


@dataclass(frozen=True)
class Imports:
    eager: frozenset[str]  # at module level, outside `if TYPE_CHECKING:`: run when the module loads
    lazy: frozenset[str]  # inside a function: run when it runs
    command_line: frozenset[str]  # inside a tool's command line (`main`): run only where the tool runs


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@functools.cache
def imports_of(rel: str, root: Path = REPO) -> Imports:
    """The names a kit module imports (`from m import n` gives `m` and `m.n`: `n` may be a submodule)."""
    eager: set[str] = set()
    lazy: set[str] = set()
    command_line: set[str] = set()

    def visit(node: ast.AST, in_function: bool, in_main: bool = False) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            children: Iterable[ast.AST] = node.orelse
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and node.level:
                raise ValueError(f"{rel}:{node.lineno}: a relative import; the kit imports by `{PACKAGE}.` names")
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            (command_line if in_main else lazy if in_function else eager).update(names)
            return
        else:
            children = ast.iter_child_nodes(node)
            in_function = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            in_main = in_main or (isinstance(node, ast.FunctionDef) and node.name == "main")
        for child in children:
            visit(child, in_function, in_main)

    visit(ast.parse((root / rel).read_text(), rel), False)
    return Imports(frozenset(eager), frozenset(lazy), frozenset(command_line))


def _packages(rel: str, root: Path) -> list[str]:
    parts = rel.split("/")[:-1]
    return [f for i in range(1, len(parts) + 1) if (root / (f := "/".join(parts[:i]) + "/__init__.py")).is_file()]


def _kit_files(names: Iterable[str], root: Path) -> list[str]:
    return [f for f in (module_file(n, root) for n in names) if f is not None]


@functools.cache
def loads_with(rel: str, root: Path = REPO) -> frozenset[str]:
    """The third-party distributions (top-level import names) that loading `rel` needs: its module-level imports
    and those of every kit module they load."""
    seen: set[str] = set()
    todo, needed = [rel], set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        eager = imports_of(f, root).eager
        needed |= {n.split(".")[0] for n in eager} - set(sys.stdlib_module_names) - {PACKAGE, ""}
        todo += [*_packages(f, root), *_kit_files(eager, root)]
    return frozenset(needed)


def shipped_modules(
    entries: Iterable[str], runtime: frozenset[str] | None, root: Path = REPO, *, command_lines: bool = True
) -> tuple[str, ...]:
    """Every kit module (a path under the kit, as `jobs/ops/monitor.py`) the entries can import in a runtime that
    has the third-party distributions `runtime` (None: whatever the job brings along), sorted; `command_lines`:
    whether the entries run tools' command lines (`main`)."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        imports = imports_of(rel, root)
        later = imports.lazy | imports.command_line if command_lines else imports.lazy
        lazy = [f for f in _kit_files(later, root) if runtime is None or loads_with(f, root) <= runtime]
        todo += [*_packages(rel, root), *_kit_files(imports.eager, root), *lazy]
    return tuple(sorted(seen))
