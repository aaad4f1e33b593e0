"""`make validate`: synthesize every example and run `terraform init` + `terraform validate` on every stack against
the real provider binaries of this machine (a local filesystem mirror; no network).

The stacks pin the providers of the bindings (hashicorp/aws 6.25.0, awscc >= 1.67.0). Where the mirror holds an
older (or no) binary, this module computes from `terraform providers schema -json` exactly which resource types,
arguments and provider blocks the local binary cannot check, PRINTS that list, and validates a copy of each stack
with only those removed (references to a removed resource point at a `terraform_data` stand-in, whose attributes
are unknown at validate time, so every other argument is still type-checked). Nothing is dropped silently.

The stack's backend block is checked against Terraform's own backend schema through a `terraform_remote_state`
data source with the same backend type and configuration (`init -backend=false` would not look at it).

Without Terraform or a provider mirror it says so and skips (exit 0); under CI=true it fails instead (exit 1):
the CI machine image ships both, so a missing tool there is a broken image, not a reason to pass.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.infra.build_state import input_key, keyed_dir, terraform_inputs
from s3tables_kit.infra.provider_cache import current_mirror
from s3tables_kit.infra.tfvalidate import root_only, validate_dir, validate_together
from s3tables_kit.topology import paths

EXAMPLES = paths.ROOT / "examples"
BUILD = paths.ROOT / ".build" / "validate"
DEFAULT_HOST = "registry.terraform.io"
DEFAULT_NAMESPACE = "hashicorp"
BUILTIN_PREFIX = "terraform_"  # terraform_remote_state, terraform_data: Terraform's built-in provider
META_ARGUMENTS = frozenset(
    {"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "connection", "//"}
)
MIRROR_ENV = "KIT_TF_PLUGIN_MIRROR"
TERRAFORM_ENV = "KIT_TERRAFORM"
MIRROR_CANDIDATES = (
    "/opt/tf-plugins",
    "/usr/local/share/terraform/plugins",
    "/usr/share/terraform/plugins",
    "~/.terraform.d/plugins",
    "~/.local/share/terraform/plugins",
)
STUB_TYPE = "terraform_data"
TERRAFORM_GOGC = "400"  # unless the caller's environment sets GOGC

Json = dict[str, Any]


# ---------------------------------------------------------------- versions ----


Version = tuple[int, ...]


def parse_version(text: str) -> Version:
    core = text.strip().lstrip("v").split("-", 1)[0].split("+", 1)[0]
    return tuple(int(p) for p in core.split("."))


def _pad(v: Version, n: int = 3) -> Version:
    return v + (0,) * (n - len(v))


def satisfies(version: Version, constraint: str | None) -> bool:
    """Terraform version-constraint syntax: `6.25.0`, `= 1.2`, `>= 1.67.0, < 2.0.0`, `~> 6.25`, `!= 1.0.0`."""
    if not constraint or not constraint.strip():
        return True
    for part in constraint.split(","):
        m = re.fullmatch(r"\s*(>=|<=|!=|~>|=|>|<)?\s*v?([0-9][0-9.]*)\s*", part)
        if not m:
            raise ValueError(f"cannot parse version constraint {constraint!r}")
        op, want = m.group(1) or "=", parse_version(m.group(2))
        have, want_p = _pad(version), _pad(want)
        if op == "~>":
            upper = (*want[:-2], want[-2] + 1) if len(want) > 1 else (want[0] + 1,)
            ok = have >= want_p and have < _pad(upper)
        else:
            ok = {
                "=": have == want_p,
                "!=": have != want_p,
                ">": have > want_p,
                ">=": have >= want_p,
                "<": have < want_p,
                "<=": have <= want_p,
            }[op]
        if not ok:
            return False
    return True


def provider_address(source: str) -> str:
    """`aws` / `hashicorp/aws` / `registry.terraform.io/hashicorp/aws` -> `registry.terraform.io/hashicorp/aws`."""
    parts = source.lower().split("/")
    if len(parts) == 1:
        return f"{DEFAULT_HOST}/{DEFAULT_NAMESPACE}/{parts[0]}"
    if len(parts) == 2:
        return f"{DEFAULT_HOST}/{parts[0]}/{parts[1]}"
    return "/".join(parts)


# ---------------------------------------------------------------- discovery ----


@dataclass(frozen=True)
class Toolchain:
    terraform: Path
    terraform_version: str
    mirror: Path
    providers: dict[str, list[str]]  # provider address -> versions available in the mirror (newest first)


def find_terraform() -> Path | None:
    explicit = os.environ.get(TERRAFORM_ENV)
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    found = shutil.which("terraform")
    return Path(found) if found else None


def _walk_dirs(root: Path, max_depth: int) -> Iterator[Path]:
    """Directories under root up to max_depth levels (like `find root -maxdepth N -type d`), skipping pseudo-fs."""
    stack = [(root, 0)]
    while stack:
        d, depth = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if not e.is_dir(follow_symlinks=False) or e.path in ("/proc", "/sys", "/dev", "/run"):
                continue
            yield Path(e.path)
            if depth + 1 < max_depth:
                stack.append((Path(e.path), depth + 1))


def find_mirror() -> Path | None:
    """A Terraform provider filesystem mirror: $KIT_TF_PLUGIN_MIRROR, the one `make provider` built (the provider
    generation the stacks pin), a usual location, or any directory that holds a `registry.terraform.io` folder within
    four levels of / (`find / -maxdepth 4 -type d -name registry.terraform.io`).
    """
    explicit = os.environ.get(MIRROR_ENV)
    if explicit:
        return Path(explicit) if (Path(explicit) / DEFAULT_HOST).is_dir() else None
    built = current_mirror()
    if built is not None:
        return built
    for cand in MIRROR_CANDIDATES:
        p = Path(cand).expanduser()
        if (p / DEFAULT_HOST).is_dir():
            return p
    for d in _walk_dirs(Path("/"), 4):
        if d.name == DEFAULT_HOST and d.parent != paths.ROOT and paths.ROOT not in d.parents:
            return d.parent
    return None


def mirror_origin(mirror: Path) -> str:
    """Where a mirror comes from, for the logs: `make provider`'s build, $KIT_TF_PLUGIN_MIRROR, or this machine's."""
    if os.environ.get(MIRROR_ENV):
        return f"${MIRROR_ENV}"
    built = current_mirror()
    if built is not None and mirror.resolve() == built:
        return "built by `make provider`"
    return "this machine's provider mirror (`make provider` builds the pinned generation)"


def mirror_providers(mirror: Path) -> dict[str, list[str]]:
    """Provider versions in a filesystem mirror (unpacked layout HOST/NS/TYPE/VERSION/OS_ARCH and packed zips)."""
    out: dict[str, set[str]] = {}
    for host in sorted(p for p in mirror.iterdir() if p.is_dir()):
        for ns in sorted(p for p in host.iterdir() if p.is_dir()):
            for typ in sorted(p for p in ns.iterdir() if p.is_dir()):
                addr = f"{host.name}/{ns.name}/{typ.name}"
                for v in typ.iterdir():
                    if v.is_dir() and re.fullmatch(r"\d+\.\d+\.\d+.*", v.name) and any(v.iterdir()):
                        out.setdefault(addr, set()).add(v.name)
                    m = re.fullmatch(rf"terraform-provider-{re.escape(typ.name)}_(\d+\.\d+\.\d+[^_]*)_.*\.zip", v.name)
                    if m:
                        out.setdefault(addr, set()).add(m.group(1))
    return {a: sorted(vs, key=parse_version, reverse=True) for a, vs in sorted(out.items())}


def terraform_version(terraform: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [str(terraform), "version", "-json"], capture_output=True, text=True, env=env, check=True, timeout=120
    )
    return str(json.loads(proc.stdout)["terraform_version"])


def cli_config(mirror: Path) -> str:
    """Install providers from the mirror only: with no `direct {}` block, Terraform never goes to the network."""
    return (
        "# written by `make validate` (infra/validate.py): providers come from the local filesystem mirror only\n"
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n'
        "}\n"
    )


def tf_env(cli_config_file: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env.update(TF_CLI_CONFIG_FILE=str(cli_config_file), CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1", TF_INPUT="0")
    # Terraform and its provider plugins (Go, which inherit this): the aws provider builds its whole schema at every
    # start, and a larger heap target spends about a fifth less CPU collecting it (~400 MB per provider process).
    env.setdefault("GOGC", TERRAFORM_GOGC)
    return env


# ---------------------------------------------------------------- provider schemas ----


def provider_schemas(
    terraform: Path, env: dict[str, str], mirror: Path, providers: dict[str, str], workdir: Path
) -> Json:
    """`terraform providers schema -json` of the given local providers ({address: version}), cached in workdir by
    the Terraform binary and the providers' files in the mirror (`build_state.terraform_inputs`)."""
    key = input_key(terraform_inputs(terraform, mirror, {a: [v] for a, v in providers.items()}))
    cached = workdir / f"schema-{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    scratch = workdir / f"schema-root-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    required = {
        addr.split("/")[-1]: {"source": addr, "version": version} for addr, version in sorted(providers.items())
    }
    (scratch / "main.tf.json").write_text(json.dumps({"terraform": {"required_providers": required}}, indent=2))
    run_checked([str(terraform), "init", "-backend=false", "-input=false", "-no-color"], scratch, env)
    proc = run_checked([str(terraform), "providers", "schema", "-json"], scratch, env)
    shutil.rmtree(scratch, ignore_errors=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(proc.stdout)
    tmp.replace(cached)  # atomic: a concurrent reader sees no half-written schema
    return json.loads(proc.stdout)


def run_checked(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout}{proc.stderr}")
    return proc


# ---------------------------------------------------------------- what the local provider cannot check ----


@dataclass(frozen=True)
class Gap:
    """One thing of a stack that the local provider binaries cannot check (and that the validated copy omits)."""

    provider: str  # provider address
    what: str  # "provider configuration" | "resource type" | "data source type" | "argument"
    item: str  # resource type, or `type.path.to.argument`
    reason: str


@dataclass
class Prepared:
    document: Json
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProviderStatus:
    name: str  # local name in required_providers
    address: str
    constraint: str | None
    local_version: str | None  # None: no binary in the mirror

    @property
    def satisfied(self) -> bool:
        return self.local_version is not None and satisfies(parse_version(self.local_version), self.constraint)


def provider_statuses(doc: Json, local: dict[str, list[str]]) -> dict[str, ProviderStatus]:
    out = {}
    for name, req in doc.get("terraform", {}).get("required_providers", {}).items():
        addr = provider_address(req.get("source", name))
        versions = local.get(addr, [])
        constraint = req.get("version")
        fallback = versions[0] if versions else None
        chosen = next((v for v in versions if satisfies(parse_version(v), constraint)), fallback)
        out[name] = ProviderStatus(name, addr, constraint, chosen)
    return out


def checked_with(doc: Json, local: dict[str, list[str]]) -> str:
    """The provider binaries a stack is checked (or applied) with: `aws 6.47.1; awscc: none in the mirror`."""
    parts = []
    for st in sorted(provider_statuses(doc, local).values(), key=lambda s: s.address):
        name = st.address.rsplit("/", 1)[-1]
        parts.append(f"{name} {st.local_version}" if st.local_version else f"{name}: none in the mirror")
    return "; ".join(parts)


def _provider_of(rtype: str, body: Json) -> str:
    explicit = body.get("provider")
    if isinstance(explicit, str) and explicit:
        return explicit.split(".", 1)[0]
    return rtype.split("_", 1)[0]


def _elements(value: Any) -> list[Json]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def prune_block(body: Json, block: Json, path: str, *, top_level: bool) -> list[str]:
    """Remove from `body` every argument or nested block the schema `block` does not know; return their paths."""
    removed = []
    attributes = block.get("attributes", {})
    block_types = block.get("block_types", {})
    for key in list(body):
        if top_level and key in META_ARGUMENTS:
            continue
        if key in attributes:
            nested = attributes[key].get("nested_type")
            if nested:
                for el in _elements(body[key]):
                    removed += prune_block(el, nested, f"{path}.{key}", top_level=False)
            continue
        if key in block_types:
            for el in _elements(body[key]):
                removed += prune_block(el, block_types[key]["block"], f"{path}.{key}", top_level=False)
            continue
        del body[key]
        removed.append(f"{path}.{key}")
    return removed


def _stub_name(rtype: str, name: str) -> str:
    return f"kit_unchecked__{rtype.replace('.', '_')}__{name}"


def _rewrite_refs(node: Any, removed: set[tuple[str, str]]) -> Any:
    """Point references to removed resources at their terraform_data stand-ins (attributes via `.output`)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "depends_on" and isinstance(v, list):
                out[k] = [
                    f"{STUB_TYPE}.{_stub_name(*d.split('.', 1))}"
                    if isinstance(d, str) and tuple(d.split(".", 1)) in removed
                    else d
                    for d in v
                ]
            else:
                out[k] = _rewrite_refs(v, removed)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, removed) for v in node]
    if isinstance(node, str) and "${" in node:
        for rtype, name in removed:
            ref = re.escape(f"{rtype}.{name}")
            node = re.sub(rf"(?<![\w.-]){ref}\.", f"{STUB_TYPE}.{_stub_name(rtype, name)}.output.", node)
            node = re.sub(rf"(?<![\w.-]){ref}(?![\w.-])", f"{STUB_TYPE}.{_stub_name(rtype, name)}.output", node)
        return node
    return node


def prepare_stack(doc: Json, schemas: Json, local: dict[str, list[str]], *, check_backend: bool = True) -> Prepared:
    """The copy of a synthesized stack that the local binaries can validate, and what it leaves out.

    `check_backend`: add a `terraform_remote_state` with the stack's backend configuration, so that `terraform
    validate` checks it against the backend schema (`make e2e` initialises the real backend instead)."""
    out = Prepared(copy.deepcopy(doc))
    d = out.document
    statuses = provider_statuses(d, local)
    all_schemas = schemas.get("provider_schemas", {})
    required = d.get("terraform", {}).get("required_providers", {})

    for name, st in sorted(statuses.items()):
        if st.local_version is None:
            required.pop(name, None)
            if name in d.get("provider", {}):
                del d["provider"][name]
                reason = f"no {st.address} binary in the mirror"
                out.gaps.append(Gap(st.address, "provider configuration", f"provider {name}", reason))
        elif not st.satisfied:
            required[name].pop("version", None)
            out.notes.append(
                f"{st.address}: the stack requires {st.constraint!r}; the mirror has {st.local_version}: checked with "
                f"{st.local_version} (constraint relaxed in the validation copy), minus what it does not know"
            )
    if "provider" in d and not d["provider"]:
        del d["provider"]

    removed: set[tuple[str, str]] = set()
    removed_by: dict[tuple[str, str], tuple[str, str]] = {}  # removed resource -> (provider address, reason)
    for section, kind, schema_key in (
        ("resource", "resource type", "resource_schemas"),
        ("data", "data source type", "data_source_schemas"),
    ):
        for rtype in sorted(d.get(section, {})):
            if rtype.startswith(BUILTIN_PREFIX):
                continue
            instances = d[section][rtype]
            for iname in sorted(instances):
                body = instances[iname]
                pname = _provider_of(rtype, body)
                status = statuses.get(pname)
                if status is None:
                    raise ValueError(f"{section}.{rtype}.{iname}: provider {pname!r} is not in required_providers")
                st = status
                if st.satisfied:
                    continue  # the pinned provider is here: Terraform checks everything
                pschema = all_schemas.get(st.address, {}).get(schema_key, {})
                if st.local_version is None or rtype not in pschema:
                    reason = (
                        f"no {st.address} binary in the mirror"
                        if st.local_version is None
                        else f"{st.address} {st.local_version} has no {rtype}"
                    )
                    out.gaps.append(Gap(st.address, kind, rtype, reason))
                    if st.local_version is None:
                        for arg in sorted(k for k in body if k not in META_ARGUMENTS):
                            out.gaps.append(Gap(st.address, "argument", f"{rtype}.{arg}", reason))
                    del instances[iname]
                    if section == "resource":
                        removed.add((rtype, iname))
                        removed_by[(rtype, iname)] = (st.address, reason)
                    else:
                        removed.add((f"data.{rtype}", iname))
                    continue
                gone = prune_block(body, pschema[rtype]["block"], rtype, top_level=True)
                for g in gone:
                    out.gaps.append(
                        Gap(st.address, "argument", g, f"{st.address} {st.local_version} has no {g.split('.')[-1]}")
                    )
                ignore = body.get("lifecycle", {}).get("ignore_changes")
                if isinstance(ignore, list):
                    top = {g.split(".")[1] for g in gone}
                    body["lifecycle"]["ignore_changes"] = [
                        i for i in ignore if not (isinstance(i, str) and i.split(".")[0].split("[")[0] in top)
                    ]
            if not instances:
                del d[section][rtype]
        if section in d and not d[section]:
            del d[section]

    # The import block of a removed resource (an adopted bucket) goes with it: Terraform would need its provider.
    imports = d.get("import", [])
    for block in imports:
        target = tuple(str(block.get("to", "")).split(".", 1))
        if target in removed_by:
            address, reason = removed_by[target]
            out.gaps.append(Gap(address, "import block", f"import to {target[0]}", reason))
    if imports:
        d["import"] = [b for b in imports if tuple(str(b.get("to", "")).split(".", 1)) not in removed_by]
        if not d["import"]:
            del d["import"]
    if removed:
        d = out.document = _rewrite_refs(d, removed)
        stubs = d.setdefault("resource", {}).setdefault(STUB_TYPE, {})
        for rtype, name in sorted(removed):
            stubs[_stub_name(rtype, name)] = {"input": {}}

    # The backend block, checked against Terraform's backend schema (init -backend=false does not read it).
    for btype, bconf in d.get("terraform", {}).get("backend", {}).items() if check_backend else ():
        d.setdefault("data", {}).setdefault("terraform_remote_state", {})[f"kit_validate_backend_{btype}"] = {
            "backend": btype,
            "config": bconf,
        }
    return out


# ---------------------------------------------------------------- running terraform ----


@dataclass
class StackResult:
    example: str
    stack: str
    ok: bool
    diagnostics: list[str]
    providers: str = ""  # the provider binaries the stack was checked with, e.g. "aws 6.47.1; awscc: none"


def write_stack(stack_dir: Path, doc: Json) -> None:
    stack_dir.mkdir(parents=True, exist_ok=True)
    for stale in list(stack_dir.glob("*.tf.json")) + list(stack_dir.glob("*.tf")):
        stale.unlink()
    (stack_dir / "main.tf.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def synth_examples(configs: Iterable[Path], outdir: Path) -> dict[str, dict[str, Json]]:
    from s3tables_kit.infra.golden import synth_example

    out = {}
    for cfg in configs:
        name = example_name(cfg)
        target = outdir / name
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        out[name] = synth_example(cfg, target)
    return out


def example_name(cfg: Path) -> str:
    """`seed` for examples/seed.toml, `failover-seed` for examples/failover/seed.toml (the failover topology of the
    same example: names must not collide in one validation run)."""
    return cfg.stem if cfg.resolve().parent == EXAMPLES else f"{cfg.resolve().parent.name}-{cfg.stem}"


def default_configs() -> list[Path]:
    """Every example and the failover topology of each (`examples/failover/*.toml`)."""
    return sorted(EXAMPLES.glob("*.toml")) + sorted((EXAMPLES / "failover").glob("*.toml"))


def _where(stacks: list[str]) -> str:
    by_example: dict[str, list[str]] = {}
    for w in stacks:
        example, stack = w.split("/", 1)
        by_example.setdefault(example, []).append(stack)
    return "; ".join(f"{e}: {', '.join(sorted(s))}" for e, s in sorted(by_example.items()))


def gap_report(gaps: dict[Gap, list[str]], headers: dict[str, str]) -> list[str]:
    """The printed list of what was not checked, grouped by provider, each item with the stacks it occurs in."""
    lines: list[str] = []
    by_provider: dict[str, dict[Gap, list[str]]] = {}
    for g, where in gaps.items():
        by_provider.setdefault(g.provider, {})[g] = where
    for addr in sorted(by_provider):
        lines.append(f"  {headers.get(addr, addr)}:")
        items = by_provider[addr]
        for g in sorted(items, key=lambda g: (g.item, g.what)):
            lines.append(f"    - {g.what:<22} {g.item:<55} [{_where(items[g])}]")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "configs", nargs="*", type=Path, help="configurations (default: examples/*.toml and examples/failover/*.toml)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="stacks validated in parallel (default 2)")
    parser.add_argument("--workdir", type=Path, default=BUILD, help=f"scratch directory (default {BUILD})")
    args = parser.parse_args(argv)
    configs = args.configs or default_configs()
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")

    terraform, mirror = find_terraform(), find_mirror()
    if terraform is None or mirror is None:
        missing = []
        if terraform is None:
            missing.append(f"no `terraform` on PATH (or ${TERRAFORM_ENV})")
        if mirror is None:
            missing.append(
                f"no provider filesystem mirror (${MIRROR_ENV}, {', '.join(MIRROR_CANDIDATES)}, "
                "or a registry.terraform.io folder within 4 levels of /)"
            )
        print(f"validate: {' and '.join(missing)}.", file=sys.stderr)
        if in_ci:
            print("validate: FAILED: CI=true and the CI machine image ships both; not skipping.", file=sys.stderr)
            return 1
        print("validate: SKIPPED: nothing was validated against a real provider binary.", file=sys.stderr)
        return 0

    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    cli_file = workdir / "terraform.rc"
    cli_file.write_text(cli_config(mirror))
    env = tf_env(cli_file)
    local = mirror_providers(mirror)
    tf_version = terraform_version(terraform, env)
    print(
        f"validate: terraform {tf_version} ({terraform}); provider mirror {mirror} ({mirror_origin(mirror)}):",
        file=sys.stderr,
    )
    for addr, versions in local.items():
        print(f"  {addr} {', '.join(versions)}", file=sys.stderr)

    # Terraform's working directories (lock files, .terraform/) are rebuilt when the binary or the mirror changes.
    stacks_dir = keyed_dir(workdir / "stacks", terraform_inputs(terraform, mirror, local))
    stacks = synth_examples(configs, workdir / "synth")
    needed: dict[str, str] = {}
    for docs in stacks.values():
        for doc in docs.values():
            for st in provider_statuses(doc, local).values():
                if st.local_version and not st.satisfied:
                    needed[st.address] = st.local_version
    schemas = provider_schemas(terraform, env, mirror, needed, workdir) if needed else {}

    gaps: dict[Gap, list[str]] = {}
    notes: set[str] = set()
    headers: dict[str, str] = {}
    jobs: list[tuple[str, str, Path, str]] = []
    for example, docs in stacks.items():
        for name, doc in docs.items():
            prepared = prepare_stack(doc, schemas, local)
            for st in provider_statuses(doc, local).values():
                headers[st.address] = (
                    f"{st.address}: no binary in the mirror (stacks require {st.constraint})"
                    if st.local_version is None
                    else f"{st.address} {st.local_version} in the mirror (stacks require {st.constraint})"
                )
            for g in prepared.gaps:
                where = gaps.setdefault(g, [])
                if f"{example}/{name}" not in where:
                    where.append(f"{example}/{name}")
            notes.update(prepared.notes)
            stack_dir = stacks_dir / example / name
            write_stack(stack_dir, prepared.document)
            jobs.append((example, name, stack_dir, checked_with(doc, local)))

    for note in sorted(notes):
        print(f"validate: {note}", file=sys.stderr)
    if gaps:
        print("validate: NOT CHECKED by terraform (left out of the validated copy; listed, never dropped silently):")
        for line in gap_report(gaps, headers):
            print(line)
        if any(g.what == "resource type" and "awscc" in g.provider for g in gaps):
            print(
                "  (awscc resources are checked against their CloudFormation resource schemas by "
                "tests/test_awscc_cfn_schema.py)"
            )

    # The stacks as modules of one root (one provider start for all); a stack with root-only blocks on its own.
    alone = {f"{ex}/{name}" for ex, docs in stacks.items() for name, doc in docs.items() if root_only(doc)}
    together = {f"{ex}/{name}": d for ex, name, d, _ in jobs if f"{ex}/{name}" not in alone}
    verdicts = validate_together(terraform, env, stacks_dir, together) if together else {}

    def run(job: tuple[str, str, Path, str]) -> StackResult:
        example, name, stack_dir, providers = job
        key = f"{example}/{name}"
        ok, diags = verdicts[key] if key in verdicts else validate_dir(terraform, env, stack_dir)
        return StackResult(example, name, ok, diags, providers)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run, jobs))
    failed = 0
    for r in results:
        print(f"validate: {r.example}/{r.stack}: {'ok' if r.ok else 'FAILED'} (checked with {r.providers})")
        for line in r.diagnostics:
            print(f"    {line}")
        failed += not r.ok
    total = len(results)
    print(
        f"validate: {total - failed}/{total} stacks of {len(stacks)} example(s) valid against the local provider "
        f"binaries ({stacks_dir})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
