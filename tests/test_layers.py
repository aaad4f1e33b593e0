"""The import rule of the kit's packages (docs/architecture.md), checked on the source with the standard library's
`ast`: imports only point down, and no two modules import each other, directly or around a circle.

    bench ──► harness ──► infra ──► policies ──► topology
                 │  └───► jobs ───────┘  └──────────┘▲
                 │          └────────────────────────┘
                 └──────► emulator (the local AWS stand-in; imports nothing of the kit)

The product (`infra`, `jobs`, `policies`, `topology`: the package `s3tables_kit`, read here as Python imports it,
through `s3tables_kit/<package>`) never imports the stand-in or the harness; the harness (checkout-only) deploys and
exercises the product on a laptop. A product module is named here below the package, as the rules are written: the
first part of that name is its layer.

Every import counts wherever it is written (module level, inside a function, under `if TYPE_CHECKING:`): a lazy or
type-only import still ties the two modules together for a reader, and would hide a circle. `infra` packages the
code of `jobs/` by file path (infra/packaging.py) and never imports it.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from s3tables_kit.topology import paths

ROOT = paths.checkout() or paths.ROOT

# What each package may import besides itself. Order: topology, emulator < policies < jobs, infra < harness < bench.
MAY_IMPORT: Mapping[str, frozenset[str]] = {
    "topology": frozenset(),
    "emulator": frozenset(),  # the local AWS stand-in: moto + the S3 Tables extension, nothing of the kit
    "policies": frozenset({"topology"}),
    "jobs": frozenset({"policies", "topology"}),
    "infra": frozenset({"policies", "topology"}),
    "harness": frozenset({"emulator", "infra", "jobs", "policies", "topology"}),  # deploys and drills on a laptop
    "bench": frozenset({"harness", "emulator", "infra", "jobs", "policies", "topology"}),
}
KIT = frozenset(MAY_IMPORT)
PRODUCT = frozenset({"infra", "jobs", "policies", "topology"})  # shipped in the wheel as `s3tables_kit.<package>`


@dataclass(frozen=True)
class Module:
    name: str  # dotted below `s3tables_kit` for the product; a package is named by its directory
    is_package: bool
    source: str


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int


@functools.cache
def parsed(source: str, filename: str) -> ast.Module:
    """The syntax tree of a module's source (each test walks the same tree: parse it once per run)."""
    return ast.parse(source, filename=filename)


def package_dir(pkg: str, root: Path = ROOT) -> Path:
    """Where Python imports `pkg` from: the product's packages below `s3tables_kit/`, the harness's at the root."""
    return paths.PACKAGE / pkg if pkg in PRODUCT else root / pkg


def discover(root: Path = ROOT) -> dict[str, Module]:
    out: dict[str, Module] = {}
    for pkg in sorted(KIT):
        base = package_dir(pkg, root)
        for path in sorted(base.rglob("*.py")):
            rel = Path(pkg, path.relative_to(base).with_suffix(""))
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            name = ".".join(parts)
            out[name] = Module(name, rel.name == "__init__", path.read_text(encoding="utf-8"))
    return out


def with_code(modules: Mapping[str, Module], name: str, code: str) -> dict[str, Module]:
    """The tree with `code` appended to module `name` (how a test shows a rule bites on the real tree)."""
    mod = modules[name]
    return {**modules, name: replace(mod, source=mod.source + code)}


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
        for node in ast.walk(parsed(mod.source, mod.name)):
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


def import_cycles(modules: Mapping[str, Module], group: Callable[[str], str] = lambda name: name) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted; with `group`, of the groups of
    modules it names (an import inside one group is no edge)."""
    graph: dict[str, set[str]] = {group(m): set() for m in modules}
    for e in edges(modules):
        src, dst = group(e.importer), group(e.imported)
        graph.setdefault(src, set())
        graph.setdefault(dst, set())
        if src != dst:
            graph[src].add(dst)
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
    for pkg in PRODUCT:  # the product is read where Python imports it from
        spec = importlib.util.find_spec(f"s3tables_kit.{pkg}")
        assert spec is not None and spec.submodule_search_locations == [str(package_dir(pkg))]
    modules = discover()
    assert {m.split(".")[0] for m in modules} == KIT
    assert {"topology.config", "topology.assurance", "topology.outputs", "policies.docset"} <= set(modules)


def test_imports_only_point_down() -> None:
    assert layer_violations(discover()) == []


def test_no_import_circles() -> None:
    assert import_cycles(discover()) == []


def jobs_part(name: str) -> str:
    """The part of jobs a module belongs to: its subpackage (`jobs/vault/`), or the module itself (`jobs/spark.py`)."""
    return ".".join(name.split(".")[:2])


def test_the_parts_of_jobs_import_each_other_in_one_direction() -> None:
    """No two parts of jobs import each other, even through different modules: what both need sits in the kernel."""
    jobs = {name: mod for name, mod in discover().items() if name.startswith("jobs.")}
    assert import_cycles(jobs, jobs_part) == []
    # and the rule bites: the backup reading the recovery's catalogs again closes a circle with recovery from a vault
    bad = with_code(jobs, "jobs.vault.cli", "\nfrom s3tables_kit.jobs.recover.request import RecoveryRequest\n")
    assert any({"jobs.recover", "jobs.vault"} <= set(c) for c in import_cycles(bad, jobs_part))


# Inside jobs: the shared kernel sits below every job and imports none of them.
KERNEL = "jobs.kernel"
KERNEL_MAY_IMPORT = frozenset({"jobs.aws_timestamps"})


def kernel_violations(modules: Mapping[str, Module]) -> list[str]:
    """Imports of the kernel's modules that reach into jobs above the kernel (ops, failover, recover, ...)."""
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
    bad = with_code(modules, "jobs.kernel.tables", "\nfrom jobs.ops import status\n")
    [found] = kernel_violations(bad)
    assert found.startswith("jobs.kernel.tables:") and "imports jobs.ops.status" in found


def test_a_climbing_import_added_to_the_real_tree_fails() -> None:
    """One climbing import put back where the issue found it (the topology reaching into the provisioning layer,
    and a construct importing the job it packages) is reported with module, line and rule."""
    modules = discover()
    modules = with_code(modules, "topology.config", "\nfrom infra.packaging import HANDLER\n")
    modules = with_code(modules, "infra.constructs.monitor", "\nfrom jobs.ops import monitor\n")
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
        jobs__ops__init="from .. import common\n",  # relative: the module common of jobs (same package: allowed)
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
    assert "infra.app:2 imports bench.run: infra may import only ['policies', 'topology']" in found
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
    bad = with_code(modules, "jobs.failover.model", "\nfrom s3tables_kit.jobs.recover.planning import plan_table\n")
    [found] = sibling_violations(bad)
    assert found.startswith("jobs.failover.model:") and found.endswith(
        "imports jobs.recover.planning: share it through jobs.kernel"
    )


# ---------------------------------------------------------------- the product apart from its harness ----


def product_bare_imports(modules: Mapping[str, Module]) -> list[str]:
    """Absolute imports of a product package by its bare folder name (`from infra...`): they resolve in a checkout
    only, and break in the installed wheel, where the product is `s3tables_kit.<package>`."""
    out = []
    for mod in modules.values():
        if mod.name.split(".")[0] not in PRODUCT:
            continue
        for node in ast.walk(parsed(mod.source, mod.name)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for n in names:
                if n.split(".")[0] in KIT:
                    out.append(f"{mod.name}:{node.lineno} imports {n}: write s3tables_kit.{n}")
    return sorted(out)


def test_the_product_never_imports_the_stand_in_or_the_harness() -> None:
    modules = discover()
    assert {"harness.deploy", "harness.sandbox", "harness.e2e.run", "harness.drills.failover"} <= set(modules)
    for pkg in PRODUCT:
        assert not MAY_IMPORT[pkg] & {"emulator", "harness", "bench"}, pkg
    product = [e for e in edges(modules) if e.importer.split(".")[0] in PRODUCT]
    assert [e for e in product if e.imported.split(".")[0] not in PRODUCT] == []
    # and the rule bites: the stand-in imported by a job is reported
    bad = with_code(modules, "jobs.rehearse", "\nfrom emulator.process import Emulator\n")
    [found] = layer_violations(bad)
    assert found.startswith("jobs.rehearse:") and "imports emulator.process: jobs may import only" in found


def test_the_product_imports_its_own_packages_by_the_distribution_name() -> None:
    modules = discover()
    assert product_bare_imports(modules) == []
    bad = with_code(modules, "infra.summary", "\nfrom topology.config import KitConfig\n")
    [found] = product_bare_imports(bad)
    assert found.startswith("infra.summary:") and "write s3tables_kit.topology.config" in found


# The outputs contract is built only by the builders of topology/outputs.py: the stacks call them with Terraform's
# values, the stand-in's deployer (harness/deploy.py) with the ones it created. A dict literal (or its keyword forms,
# `dict(...)` and `.update(...)`) holding two fields distinctive of one output value, or an output's name, anywhere
# else is a second copy of the contract.
OUTPUTS_MODULE = "topology.outputs"
OUTPUT_NAMES = frozenset({"kit_source", "kit_replica", "kit_recovery", "kit_organization"})
OUTPUT_FIELDS = (
    frozenset({"replication_role_arn", "replicated_tables", "replication_mode", "destinations"}),
    frozenset({"storage_class", "break_glass_principals", "guardrail_policy_arn", "source_table_bucket_arn"}),
    frozenset({"emr_application_id", "emr_release", "scripts_uri", "logs_uri", "replica_table_bucket_arn"}),
    frozenset({"policy_id", "guards_policy_id", "guards_policy_name"}),
)


def _builds_a_dict(call: ast.Call) -> bool:
    """`dict(...)` or `<mapping>.update(...)`: the keyword forms of writing (or patching) a dict."""
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "dict") or (isinstance(f, ast.Attribute) and f.attr == "update")


def outputs_built_outside_the_builders(modules: Mapping[str, Module]) -> list[str]:
    out = []
    for mod in modules.values():
        if mod.name == OUTPUTS_MODULE:
            continue
        for node in ast.walk(parsed(mod.source, mod.name)):
            keys: set[str] = set()
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            elif isinstance(node, ast.Call) and _builds_a_dict(node):
                keys = {k.arg for k in node.keywords if k.arg}
            elif isinstance(node, ast.Constant) and node.value in OUTPUT_NAMES:
                out.append(f"{mod.name}:{node.lineno} names the output {node.value!r}")
                continue
            for fields in OUTPUT_FIELDS:
                if len(keys & fields) >= 2:
                    out.append(f"{mod.name}:{node.lineno} builds an output value ({sorted(keys & fields)})")
    return sorted(out)


def test_outputs_are_built_only_by_the_topology_builders() -> None:
    modules = discover()
    assert outputs_built_outside_the_builders(modules) == []
    # and the rule bites: the hand-written copy the failover drill had is reported
    copy = '\ndef outputs(arn):\n    return {"s": {"kit_source": {"replication_role_arn": arn, "destinations": []}}}\n'
    bad = with_code(modules, "harness.drills.failover", copy)
    found = outputs_built_outside_the_builders(bad)
    assert [f.split(" ", 1)[1] for f in found] == [
        "builds an output value (['destinations', 'replication_role_arn'])",
        "names the output 'kit_source'",
    ], found
