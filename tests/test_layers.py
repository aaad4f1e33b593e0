"""The import rule of the kit's packages (docs/architecture.md), checked on the source with the standard library's
`ast`: imports only point down, and no two modules import each other, directly or around a circle.

    bench ──► infra ──► policies ──► topology
      └─────► jobs ───────┘  └──────────┘▲
                └────────────────────────┘
    infra, jobs (the local drills), bench ──► emulator (the local AWS stand-in; imports nothing of the kit)

Every import counts wherever it is written (module level, inside a function, under `if TYPE_CHECKING:`): a lazy or
type-only import still ties the two modules together for a reader, and would hide a circle. `infra` packages the
code of `jobs/` by file path (infra/packaging.py) and never imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What each package may import besides itself. Order: topology, emulator < policies < jobs, infra < bench.
MAY_IMPORT: Mapping[str, frozenset[str]] = {
    "topology": frozenset(),
    "emulator": frozenset(),  # the local AWS stand-in: moto + the S3 Tables extension, nothing of the kit
    "policies": frozenset({"topology"}),
    "jobs": frozenset({"emulator", "policies", "topology"}),  # the local drills start the emulator
    "infra": frozenset({"emulator", "policies", "topology"}),  # `make e2e` deploys onto the emulator
    "bench": frozenset({"emulator", "infra", "jobs", "policies", "topology"}),
}
KIT = frozenset(MAY_IMPORT)


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "jobs.ops.monitor"; a package is named by its directory ("jobs.ops")
    is_package: bool
    source: str


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int


def discover(root: Path = ROOT) -> dict[str, Module]:
    out: dict[str, Module] = {}
    for pkg in sorted(KIT):
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            name = ".".join(parts)
            out[name] = Module(name, rel.name == "__init__", path.read_text(encoding="utf-8"))
    return out


def _resolve(name: str, known: Iterable[str]) -> str:
    """The longest known module that `name` starts with (an imported attribute resolves to its module)."""
    known = set(known)
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return name


PREFIX = "s3tables_kit."  # the product's distribution package: `infra/` imports as `s3tables_kit.infra`


def _unprefixed(name: str) -> str:
    return name.removeprefix(PREFIX)


def edges(modules: Mapping[str, Module]) -> list[Edge]:
    known = set(modules)
    out: list[Edge] = []
    for mod in modules.values():
        package = mod.name if mod.is_package else mod.name.rpartition(".")[0]
        for node in ast.walk(ast.parse(mod.source, filename=mod.name)):
            targets: list[str] = []
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Import):
                targets = [_unprefixed(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join([*base_parts, *([node.module] if node.module else [])])
                else:
                    base = _unprefixed(node.module or "")
                # `from pkg import sub` imports the module pkg.sub when there is one, else a name of pkg
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for t in targets:
                if t.split(".")[0] in KIT:
                    resolved = _resolve(t, known)
                    if resolved != mod.name:
                        out.append(Edge(mod.name, resolved, line))
    return out


def layer_violations(modules: Mapping[str, Module]) -> list[str]:
    out = []
    for e in edges(modules):
        src, dst = e.importer.split(".")[0], e.imported.split(".")[0]
        if src != dst and dst not in MAY_IMPORT[src]:
            out.append(f"{e.importer}:{e.line} imports {e.imported}: {src} may import only {sorted(MAY_IMPORT[src])}")
    return sorted(out)


def import_cycles(modules: Mapping[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges(modules):
        graph.setdefault(e.importer, set()).add(e.imported)
        graph.setdefault(e.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


# ---------------------------------------------------------------- the kit's own code ----


def test_the_kit_has_every_layer() -> None:
    modules = discover()
    assert {m.split(".")[0] for m in modules} == KIT
    assert {"topology.config", "topology.assurance", "topology.outputs", "policies.docset"} <= set(modules)


def test_imports_only_point_down() -> None:
    assert layer_violations(discover()) == []


def test_no_import_circles() -> None:
    assert import_cycles(discover()) == []


# Inside jobs: the shared kernel sits below every job and imports none of them.
KERNEL = "jobs.kernel"
KERNEL_MAY_IMPORT = frozenset({"jobs.aws_timestamps"})


def kernel_violations(modules: Mapping[str, Module]) -> list[str]:
    """Imports of `jobs.kernel` modules that reach into jobs above the kernel (ops, failover, recover, ...)."""
    out = []
    for e in edges(modules):
        inside = e.importer == KERNEL or e.importer.startswith(KERNEL + ".")
        target = e.imported
        if not inside or not target.startswith("jobs") or target == KERNEL or target.startswith(KERNEL + "."):
            continue
        if target not in KERNEL_MAY_IMPORT and target != "jobs":
            allowed = sorted(KERNEL_MAY_IMPORT)
            out.append(f"{e.importer}:{e.line} imports {target}: the kernel may import only {allowed}")
    return sorted(out)


def test_the_jobs_kernel_imports_no_job() -> None:
    modules = discover()
    assert {"jobs.kernel.sdk", "jobs.kernel.clients", "jobs.kernel.concurrency", "jobs.kernel.tables"} <= set(modules)
    assert kernel_violations(modules) == []
    # and the rule bites: a kernel module importing an ops tool is reported
    mod = modules["jobs.kernel.tables"]
    bad = dict(modules)
    bad[mod.name] = Module(mod.name, False, mod.source + "\nfrom jobs.ops import status\n")
    [found] = kernel_violations(bad)
    assert found.startswith("jobs.kernel.tables:") and "imports jobs.ops.status" in found


def test_a_climbing_import_added_to_the_real_tree_fails() -> None:
    """One climbing import put back where the issue found it (the topology reaching into the provisioning layer,
    and a construct importing the job it packages) is reported with module, line and rule."""
    modules = discover()
    cfg = modules["topology.config"]
    modules["topology.config"] = Module(cfg.name, False, cfg.source + "\nfrom infra.packaging import HANDLER\n")
    mon = modules["infra.constructs.monitor"]
    modules["infra.constructs.monitor"] = Module(mon.name, False, mon.source + "\nfrom jobs.ops import monitor\n")
    found = layer_violations(modules)
    assert len(found) == 2, found
    assert found[0].startswith("infra.constructs.monitor:") and "imports jobs.ops.monitor" in found[0]
    assert (
        found[1].startswith("topology.config:") and "imports infra.packaging: topology may import only []" in (found[1])
    )


# ---------------------------------------------------------------- the checker on synthetic trees ----


def _tree(**sources: str) -> dict[str, Module]:
    out = {}
    for key, src in sources.items():
        name = key.replace("__", ".")
        is_pkg = name.endswith(".init")
        name = name.removesuffix(".init")
        out[name] = Module(name, is_pkg, src)
    return out


def test_checker_flags_a_climb_in_any_form() -> None:
    tree = _tree(
        topology__init="",
        topology__config="def f():\n    from policies import documents\n",  # lazy import: still a climb
        policies__init="",
        policies__documents="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jobs.ops\n",
        jobs__init="",
        jobs__ops__init="from .. import common\n",  # relative: jobs.common (same package: allowed)
        jobs__common="",
        infra__init="",
        infra__app="from jobs import ops\nfrom bench import run\n",
        bench__init="",
        bench__run="from infra.app import x\nimport topology.config\n",  # down: allowed
    )
    found = layer_violations(tree)
    assert [f.split(" imports ")[0] for f in found] == [
        "infra.app:1",
        "infra.app:2",
        "policies.documents:3",
        "topology.config:2",
    ], found
    assert "infra.app:2 imports bench.run: infra may import only ['emulator', 'policies', 'topology']" in found
    assert Edge("jobs.ops", "jobs.common", 1) in edges(tree)  # the relative import resolved


def test_checker_finds_circles_including_type_only_and_lazy_imports() -> None:
    tree = _tree(
        policies__init="",
        policies__documents="from policies import assurance\n",
        policies__assurance="def f():\n    from policies.documents import doc\n",
        policies__model="",
        topology__init="",
        topology__a="import topology.b\n",
        topology__b="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from topology.c import X\n",
        topology__c="from topology import a\n",
    )
    assert import_cycles(tree) == [
        ["policies.assurance", "policies.documents"],
        ["topology.a", "topology.b", "topology.c"],
    ]
    assert layer_violations(tree) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from infra import packaging\n", "infra.packaging"),  # a submodule
        ("from infra.packaging import HANDLER\n", "infra.packaging"),  # a name of a module
        ("from infra import main_thing\n", "infra"),  # a name of the package
        ("import infra.packaging as p\n", "infra.packaging"),
    ],
)
def test_import_resolution(source: str, expected: str) -> None:
    tree = _tree(infra__init="", infra__packaging="", bench__init="", bench__x=source)
    assert [e.imported for e in edges(tree) if e.importer == "bench.x"] == [expected]


# Inside jobs: failover, recovery and the ops tools share their vocabulary through the kernel, not through each other.
SIBLINGS = ("jobs.failover", "jobs.recover", "jobs.ops")
SIBLING_IMPORTS_ALLOWED = frozenset(
    {
        # `--as-of replication-point` reads the sources' replication status now, as `status` does
        ("jobs.failover.cli", "jobs.ops.point_live"),
        ("jobs.recover.cli", "jobs.ops.point_live"),
        # the local failover drill hardens and recovers the world it fails over, as an engineer would
        ("jobs.failover.drill", "jobs.ops.harden"),
        ("jobs.failover.drill", "jobs.recover.catalogs"),
    }
)


def _sibling(module: str) -> str | None:
    return next((s for s in SIBLINGS if module == s or module.startswith(s + ".")), None)


def sibling_violations(modules: Mapping[str, Module]) -> list[str]:
    """Imports between failover, recover and ops beyond the few that are a job's own use of another."""
    out = []
    for e in edges(modules):
        src, dst = _sibling(e.importer), _sibling(e.imported)
        if src and dst and src != dst and (e.importer, e.imported) not in SIBLING_IMPORTS_ALLOWED:
            out.append(f"{e.importer}:{e.line} imports {e.imported}: share it through jobs.kernel")
    return sorted(out)


def test_failover_recover_and_ops_share_through_the_kernel() -> None:
    modules = discover()
    assert sibling_violations(modules) == []
    mod = modules["jobs.failover.model"]
    bad = dict(modules)
    bad[mod.name] = Module(
        mod.name, False, mod.source + "\nfrom s3tables_kit.jobs.recover.planning import plan_table\n"
    )
    [found] = sibling_violations(bad)
    assert found.startswith("jobs.failover.model:") and found.endswith(
        "imports jobs.recover.planning: share it through jobs.kernel"
    )
