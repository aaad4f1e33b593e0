"""`make provider`: build the hashicorp/aws provider generation the kit pins (6.x) from its Go module, limited to
the AWS services the kit's stacks use, into a Terraform filesystem mirror outside the repository.

1. The module is fetched through the Go module proxy (`go mod download`); `go` checks it and every dependency against
   the Go checksum database, as it does by default.
2. The service set is DERIVED: every example (and its failover topology) is synthesized, the `hashicorp/aws`
   resource and data-source types of every stack are collected, and each type is looked up in the provider's own
   generated service packages (`internal/service/<pkg>/service_package_gen.go`). A type no package declares is an
   error. `COMPANIONS` adds the packages a used package needs at run time.
3. `go build -trimpath -ldflags "-s -w"` of a copy of the module (once per version, in the cache) with
   `internal/provider/sdkv2/service_packages_gen.go` replaced (`go build -overlay`) by one that registers only
   those packages.
4. The binary is laid out as a filesystem mirror,
   `<cache>/<version>-<services hash>/registry.terraform.io/hashicorp/aws/<provider version>/<os_arch>/`, and
   `<cache>/current` points at the newest build: `make validate` and `make e2e` prefer it when it is present.

A second run finds the synthesized types (keyed by a hash of the kit's sources and examples) and the binary in the
cache and returns at once. Exit codes: 0 built or cached, 2 set-up error (no Go, fetch or build failed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from s3tables_kit.infra.provider_cache import CACHE_ENV, cache_root
from s3tables_kit.topology.paths import ROOT

MODULE = "github.com/hashicorp/terraform-provider-aws"
# `main` of 2026-06-02 (version/VERSION 6.47.1); the v6.x tags are not Go-module versions, so a pseudo-version.
PSEUDO_VERSION = "v1.60.1-0.20260602190131-5f2286d6d836"
ADDRESS = "registry.terraform.io/hashicorp/aws"
SERVICES_FILE = "internal/provider/sdkv2/service_packages_gen.go"
# Packages every build needs whatever the stacks declare: the provider's own data sources (`meta`) and STS, which the
# provider calls to learn the account of its credentials.
ALWAYS = frozenset({"meta", "sts"})
# Packages a used package calls at run time without declaring a type of theirs: the s3 resources read and write a
# general purpose bucket's tags through S3 Control (a build without it validates, then crashes on apply).
COMPANIONS: Mapping[str, frozenset[str]] = {"s3": frozenset({"s3control"})}
SOURCE_GLOBS = ("infra/**/*.py", "topology/**/*.py", "policies/**/*.py", "examples/**/*.toml", "jobs/**/*.py")

Json = dict[str, Any]


def os_arch() -> str:
    machine = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower(), "amd64")
    return f"{platform.system().lower()}_{machine}"


# ---------------------------------------------------------------- the types the stacks use ----


def stack_types(docs: Iterable[Json]) -> set[str]:
    """The hashicorp/aws resource and data-source types of synthesized stacks (`aws_*`; awscc and Terraform's
    built-in types are not this provider's)."""
    out: set[str] = set()
    for doc in docs:
        for block in ("resource", "data"):
            out.update(t for t in doc.get(block, {}) if t.startswith("aws_"))
    return out


def sources_digest(root: Path = ROOT) -> str:
    h = hashlib.sha256()
    for pattern in SOURCE_GLOBS:
        for p in sorted(root.glob(pattern)):
            if "__pycache__" in p.parts:
                continue
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def synthesized_types(cache: Path) -> tuple[set[str], bool]:
    """The types of every example's synth, cached by a hash of the kit's sources (True: from the cache)."""
    record = cache / "types" / f"{sources_digest()}.json"
    if record.is_file():
        return set(json.loads(record.read_text())), True
    from s3tables_kit.infra.validate import default_configs, synth_examples

    with tempfile.TemporaryDirectory(prefix="kit-provider-synth-") as tmp:
        stacks = synth_examples(default_configs(), Path(tmp))
    types = stack_types(doc for docs in stacks.values() for doc in docs.values())
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(sorted(types), indent=1) + "\n")
    return types, False


# ---------------------------------------------------------------- types -> service packages ----


def service_index(src: Path) -> dict[str, str]:
    """Type name -> service package, from the provider's generated service packages."""
    index: dict[str, str] = {}
    for gen in sorted((src / "internal" / "service").glob("*/service_package_gen.go")):
        for name in re.findall(r'TypeName:\s*"([a-z0-9_]+)"', gen.read_text()):
            index.setdefault(name, gen.parent.name)
    return index


def services_for(types: Iterable[str], index: Mapping[str, str]) -> tuple[set[str], list[str]]:
    """The packages that declare the types, plus ALWAYS and COMPANIONS; and the types no package declares."""
    used = {index[t] for t in types if t in index}
    unknown = sorted(t for t in types if t not in index)
    for pkg in list(used):
        used |= COMPANIONS.get(pkg, frozenset())
    return used | ALWAYS, unknown


def limited_service_list(text: str, keep: set[str]) -> str:
    """`service_packages_gen.go` registering only `keep`: the other packages' import and `ServicePackage(ctx)` lines
    are dropped."""
    out = []
    for line in text.splitlines(keepends=True):
        imp = re.fullmatch(rf'\s*"{re.escape(MODULE)}/internal/service/([a-z0-9]+)"\s*', line)
        entry = re.fullmatch(r"\s*([a-z0-9]+)\.ServicePackage\(ctx\),\s*", line)
        found = imp or entry
        pkg = found.group(1) if found else None
        if pkg is None or pkg in keep:
            out.append(line)
    return "".join(out)


def services_hash(services: Iterable[str]) -> str:
    return hashlib.sha256(",".join(sorted(services)).encode()).hexdigest()[:12]


# ---------------------------------------------------------------- go ----


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-buildvcs=false")
    env.setdefault("GOTOOLCHAIN", "local")  # the installed Go, never a toolchain fetched behind the user's back
    return env


def download_module(go: str, env: dict[str, str]) -> Path:
    """Fetch the module through the proxy (checked against the checksum database) and return its directory."""
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{MODULE}@{PSEUDO_VERSION}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    info = json.loads(proc.stdout or "{}") if proc.stdout.strip().startswith("{") else {}
    if proc.returncode != 0 or not info.get("Dir"):
        raise RuntimeError(f"go mod download {MODULE}@{PSEUDO_VERSION} failed: {info.get('Error') or proc.stderr}")
    return Path(info["Dir"])


def source_copy(module_dir: Path, cache: Path) -> Path:
    """A writable copy of the module (Go refuses to build the module cache with an overlay), without tests and
    docs; made once per version and reused for every service set."""
    target = cache / "src" / PSEUDO_VERSION
    if (target / ".complete").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    skip = shutil.ignore_patterns("*_test.go", "testdata", "website", "docs", "examples", ".github", ".ci")
    shutil.copytree(module_dir, target, ignore=skip)
    for p in [target, *target.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    (target / ".complete").write_text(f"{MODULE}@{PSEUDO_VERSION}\n")
    return target


def build(go: str, env: dict[str, str], src: Path, services: set[str], target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="kit-provider-overlay-") as tmp:
        limited = Path(tmp) / "service_packages_gen.go"
        limited.write_text(limited_service_list((src / SERVICES_FILE).read_text(), services))
        overlay = Path(tmp) / "overlay.json"
        overlay.write_text(json.dumps({"Replace": {str(src / SERVICES_FILE): str(limited)}}))
        partial = target.with_name(target.name + ".partial")
        cmd = [go, "build", "-trimpath", "-ldflags", "-s -w", "-overlay", str(overlay), "-o", str(partial), "."]
        proc = subprocess.run(cmd, cwd=src, env=env, check=False)
        if proc.returncode != 0:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"go build failed (exit {proc.returncode})")
        partial.replace(target)


# ---------------------------------------------------------------- main ----


def _say(text: str) -> None:
    print(f"provider: {text}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=None, help=f"cache directory (default ${CACHE_ENV} or ~/.cache)")
    parser.add_argument("--print-services", action="store_true", help="derive and print the service set; no build")
    args = parser.parse_args(argv)
    cache: Path = args.cache or cache_root()
    started = time.monotonic()

    go = shutil.which("go")
    if go is None:
        _say("no `go` on PATH: the provider cannot be built here (make validate/e2e use the image's provider)")
        return 2
    env = go_env()
    try:
        src = download_module(go, env)
    except RuntimeError as err:
        _say(str(err))
        return 2
    version = (src / "version" / "VERSION").read_text().strip()
    types, cached = synthesized_types(cache)
    index = service_index(src)
    services, unknown = services_for(types, index)
    if unknown:
        _say(f"{len(unknown)} type(s) of the stacks are in no service package of {MODULE}: {', '.join(unknown)}")
        return 2
    _say(
        f"hashicorp/aws {version} ({MODULE}@{PSEUDO_VERSION}) LIMITED to the {len(services)} service package(s) "
        f"the kit's stacks use ({len(types)} resource/data-source types{', cached synth' if cached else ''}): "
        f"{', '.join(sorted(services))}"
    )
    if args.print_services:
        return 0

    mirror = cache / f"{version}-{services_hash(services)}"
    binary_dir = mirror / ADDRESS / version / os_arch()
    binary = binary_dir / f"terraform-provider-aws_v{version}_x5"
    if binary.is_file():
        _say(f"cached: {binary} ({time.monotonic() - started:.1f} s)")
    else:
        binary_dir.mkdir(parents=True, exist_ok=True)
        _say(f"building (go build -trimpath -ldflags '-s -w'; minutes on a cold Go build cache) into {binary_dir}")
        try:
            build(go, env, source_copy(src, cache), services, binary)
        except RuntimeError as err:
            _say(str(err))
            return 2
        (mirror / "build.json").write_text(
            json.dumps(
                {"module": f"{MODULE}@{PSEUDO_VERSION}", "version": version, "services": sorted(services)}, indent=1
            )
            + "\n"
        )
        _say(f"built {binary} ({binary.stat().st_size // 2**20} MB) in {time.monotonic() - started:.0f} s")
    link = cache / "current"
    tmp_link = cache / "current.tmp"
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(mirror.name)
    tmp_link.replace(link)
    _say(f"mirror {mirror} (make validate / make e2e prefer it; KIT_TF_PLUGIN_MIRROR overrides)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
