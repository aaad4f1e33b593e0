"""Every public top-level class name of the kit is defined once, checked on the source with `ast`: a reader (or a
search) that meets `Column` or `TablePlan` finds one definition, not two that mean different things.

Private names (`_Frozen`) are exempt: a module's own helper, never imported by name from elsewhere.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bench", "emulator", "infra", "jobs", "policies", "topology")


def class_definitions(sources: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """{class name: ["path:line", ...]} of the public top-level classes of (path, source) pairs."""
    out: dict[str, list[str]] = {}
    for path, source in sources:
        for node in ast.parse(source, filename=path).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                out.setdefault(node.name, []).append(f"{path}:{node.lineno}")
    return out


def duplicates(defined: Mapping[str, list[str]]) -> list[str]:
    return sorted(f"{name} is defined in {' and '.join(places)}" for name, places in defined.items() if len(places) > 1)


def kit_sources(root: Path = ROOT) -> list[tuple[str, str]]:
    return [
        (path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
        for pkg in PACKAGES
        for path in sorted((root / pkg).rglob("*.py"))
    ]


def test_every_public_class_name_of_the_kit_is_defined_once() -> None:
    sources = kit_sources()
    assert {path.split("/")[0] for path, _ in sources} == set(PACKAGES)
    assert duplicates(class_definitions(sources)) == []


def test_a_second_class_of_a_taken_name_is_reported_with_both_places() -> None:
    sources = kit_sources()
    clash = ("jobs/ops/extra.py", '"""x"""\n\n\nclass TableInfo:\n    pass\n\n\nclass _Private:\n    pass\n')
    [found] = duplicates(class_definitions([*sources, clash]))
    assert found.startswith("TableInfo is defined in jobs/kernel/snapshots.py:")
    assert found.endswith(" and jobs/ops/extra.py:4")
    # nested classes and private names are not top-level public names
    nested = ("a.py", "class Outer:\n    class TableInfo:\n        pass\n")
    assert duplicates(class_definitions([*sources, nested])) == []
