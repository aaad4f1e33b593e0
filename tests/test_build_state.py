"""Derived build state is keyed on its inputs: Terraform's working directories under `.build/` are emptied when the
Terraform binary or the provider mirror changes (a rebuilt provider, another version), and kept while they do not, so
`make validate` after `make provider` never meets a lock file naming a provider version the mirror no longer holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

from s3tables_kit.infra.build_state import INPUTS_FILE, keyed_dir, terraform_inputs
from s3tables_kit.infra.validate import mirror_providers

AWS = "registry.terraform.io/hashicorp/aws"
STALE_LOCK = 'provider "registry.terraform.io/hashicorp/aws" {\n  version = "5.100.0"\n}\n'


def provider(mirror: Path, version: str, content: bytes = b"\x7fELF provider") -> Path:
    binary = mirror / AWS / version / "linux_amd64" / f"terraform-provider-aws_v{version}"
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_bytes(content)
    return binary


def inputs(terraform: Path, mirror: Path) -> dict[str, str]:
    return terraform_inputs(terraform, mirror, mirror_providers(mirror))


def stack_with_lock(stacks: Path) -> Path:
    lock = stacks / "seed" / "replica-eu" / ".terraform.lock.hcl"
    lock.parent.mkdir(parents=True)
    lock.write_text(STALE_LOCK)
    return lock


def test_a_changed_provider_mirror_empties_the_working_directories(tmp_path: Path) -> None:
    terraform = tmp_path / "bin" / "terraform"
    terraform.parent.mkdir()
    terraform.write_bytes(b"terraform 1.12")
    mirror = tmp_path / "mirror"
    provider(mirror, "5.100.0")
    stacks = keyed_dir(tmp_path / "validate" / "stacks", inputs(terraform, mirror))
    lock = stack_with_lock(stacks)

    assert keyed_dir(stacks, inputs(terraform, mirror)) == stacks and lock.is_file()  # same inputs: state kept

    provider(mirror, "6.47.1")  # `make provider` adds the new generation
    keyed_dir(stacks, inputs(terraform, mirror))
    assert not lock.exists() and sorted(p.name for p in stacks.iterdir()) == [INPUTS_FILE]
    record = json.loads((stacks / INPUTS_FILE).read_text())
    assert record["inputs"][AWS].startswith("6.47.1,5.100.0|")


def test_every_input_is_part_of_the_key(tmp_path: Path) -> None:
    terraform = tmp_path / "terraform"
    terraform.write_bytes(b"terraform 1.12")
    mirror = tmp_path / "mirror"
    binary = provider(mirror, "6.47.1")
    base = inputs(terraform, mirror)
    assert inputs(terraform, mirror) == base  # no run-to-run noise

    binary.write_bytes(b"\x7fELF provider, rebuilt with another service list")  # same version, other bytes
    assert inputs(terraform, mirror) != base
    base = inputs(terraform, mirror)
    os.utime(terraform, (1, 1))  # another Terraform binary at the same path
    assert inputs(terraform, mirror) != base
    other = tmp_path / "other-build"
    provider(other, "6.47.1", binary.read_bytes())
    os.utime(other / AWS / "6.47.1" / "linux_amd64" / binary.name, (binary.stat().st_mtime,) * 2)
    assert inputs(terraform, other)["mirror"] != inputs(terraform, mirror)["mirror"]  # `current` relinked


def test_state_from_before_the_keying_is_not_trusted(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    lock = stack_with_lock(stacks)  # written by an earlier `make validate`, with no record of its inputs
    keyed_dir(stacks, {"terraform": "t", "mirror": "m"})
    assert not lock.exists()
    (stacks / INPUTS_FILE).write_text("{torn")
    stack_with_lock(stacks)
    keyed_dir(stacks, {"terraform": "t", "mirror": "m"})
    assert not (stacks / "seed").exists()
