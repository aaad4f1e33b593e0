"""`make e2e`'s Terraform: the binary and its settings, the mirror's providers, and the results it reports."""

from __future__ import annotations

import resource
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from s3tables_kit.infra.validate import Json, mirror_providers, provider_schemas

# ---------------------------------------------------------------- results ----


@dataclass
class E2eStackResult:
    example: str
    stack: str
    resources: int = 0  # resource instances in the state after apply
    native: int = 0
    standins: list[str] = field(default_factory=list)  # "<address>: <how> (<detail>)"
    apply_s: float = 0.0
    planned: str = ""  # the applied plan: "+<create> ~<update> -<delete> ±<replace>"
    transition_check: str = "not run"  # "ok" | "FAILED: ..." (the applied plan destroys nothing protected)
    plan_after_apply: str = "not run"  # "empty" | "changes" | "error" | "not run"
    destroy_refused: list[str] = field(default_factory=list)  # addresses refused by prevent_destroy
    destroy_check: str = "not run"  # "ok" | "FAILED: ..." | "not run"
    error: str = ""
    provider: str = ""  # the provider binaries applied with, e.g. "aws 6.47.1; awscc: none in the mirror"

    @property
    def ok(self) -> bool:
        return (
            not self.error
            and self.transition_check == "ok"
            and self.plan_after_apply == "empty"
            and self.destroy_check == "ok"
        )


@dataclass
class ToolResult:
    example: str
    tool: str
    exit_code: int
    seconds: float
    tail: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


# ---------------------------------------------------------------- terraform ----

# CPU seconds and count of Terraform commands by kind in this process (the provider's starts dominate CI's e2e time).
CPU_BY_COMMAND: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def command_kind(args: list[str]) -> str:
    words = [a for a in args if a in ("init", "apply", "plan", "-destroy", "show", "output", "import", "state")]
    return " ".join(words[:2]) or args[0]


def cpu_summary() -> str:
    """One line: the Terraform CPU of this run by command kind, most first."""
    rows = sorted(CPU_BY_COMMAND.items(), key=lambda kv: -kv[1][1])
    total = sum(v[1] for _, v in rows)
    return f"terraform CPU {total:.0f} s: " + ", ".join(f"{k} {v[1]:.0f} s ({v[0]:.0f}x)" for k, v in rows)


@dataclass(frozen=True)
class Terraform:
    binary: Path
    env: dict[str, str]

    def run(
        self, args: list[str], cwd: Path, *, timeout: float = 1200, log: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`terraform <args>` in cwd; its output is also kept in cwd/<log or command>.log for whoever reads a
        failure."""
        cpu0 = _children_cpu()
        proc = subprocess.run(
            [str(self.binary), *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout,
            check=False,
        )  # fmt: skip
        row = CPU_BY_COMMAND[command_kind(args)]
        row[0] += 1
        row[1] += _children_cpu() - cpu0
        name = log or "-".join(a.lstrip("-") for a in args[:2] if a in ("init", "apply", "plan", "-destroy", "output"))
        (cwd / f"{name or args[0]}.log").write_text(f"$ terraform {' '.join(args)}\n{proc.stdout}{proc.stderr}")
        return proc

    def checked(self, args: list[str], cwd: Path, *, log: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = self.run(args, cwd, log=log)
        if proc.returncode != 0:
            raise RuntimeError(f"terraform {' '.join(args)} failed in {cwd}:\n{_tail(proc.stdout + proc.stderr)}")
        return proc


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def proxy_env(emulator_url: str) -> dict[str, str]:
    """The emulator as Terraform's HTTP proxy: the AWS SDK for Go v2 sends S3 Control calls to
    `<account>.<endpoint host>`, a name that resolves nowhere; through the proxy it reaches the emulator, which routes
    it by that host (emulator/hosts.py). Loopback addresses (every other endpoint) are never proxied; nothing reaches
    AWS through it (the emulator answers what it does not serve with an error)."""
    loopback = "127.0.0.1,localhost"
    return {"HTTP_PROXY": emulator_url, "http_proxy": emulator_url, "NO_PROXY": loopback, "no_proxy": loopback}


def cli_config(mirror: Path, cache: Path) -> str:
    """Providers from the local mirror only (no network), linked from one cache instead of copied per stack."""
    return (
        "# written by `make e2e` (harness/e2e/run.py): providers come from the local filesystem mirror only\n"
        f'plugin_cache_dir = "{cache}"\n'
        "plugin_cache_may_break_dependency_lock_file = true\n"
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path = "{mirror}"\n  }}\n'
        "}\n"
    )


# ---------------------------------------------------------------- main ----


@dataclass(frozen=True)
class E2eToolchain:
    """What every localized copy needs from the local Terraform: the mirror's providers and their schemas."""

    local: dict[str, list[str]]  # provider address -> versions in the mirror
    schemas: Json  # `terraform providers schema -json` of the local aws provider
    local_types: frozenset[str]  # the resource types the local aws provider has


def toolchain(tf: Terraform, mirror: Path, workdir: Path) -> E2eToolchain:
    local = mirror_providers(mirror)
    needed = {}
    for addr in ("registry.terraform.io/hashicorp/aws",):
        if local.get(addr):
            needed[addr] = local[addr][0]
    schemas = provider_schemas(tf.binary, tf.env, mirror, needed, workdir)
    aws = schemas.get("provider_schemas", {}).get("registry.terraform.io/hashicorp/aws", {})
    return E2eToolchain(local, schemas, frozenset(aws.get("resource_schemas", {})))


def table(stacks: list[E2eStackResult], tools: list[ToolResult]) -> list[str]:
    head = (
        f"{'stack':<52} {'resources':>9} {'native':>6} {'stand-ins':>9} {'apply s':>7}  {'applied plan':<18} "
        f"{'plan after apply':<16}"
    )
    lines = [f"{head} {'destroy':<8} provider"]
    for r in stacks:
        lines.append(
            f"{r.example + '/' + r.stack:<52} {r.resources:>9} {r.native:>6} {len(r.standins):>9} {r.apply_s:>7}  "
            f"{r.planned:<18} {r.plan_after_apply:<16} {r.destroy_check if not r.error else 'error':<8} {r.provider}"
        )
    for t in tools:
        lines.append(f"{t.example + '/' + t.tool:<52} exit {t.exit_code} ({t.seconds} s)")
    return lines
