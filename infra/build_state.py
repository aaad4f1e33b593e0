"""Build state under `.build/` keyed on what it derives from.

A directory of derived state (Terraform's working directories with their `.terraform.lock.hcl` and `.terraform/`, a
plugin cache) records the key of its inputs in `INPUTS_FILE`; opened with other inputs, it is emptied first. So a
changed input (a provider rebuilt by `make provider`, another mirror, another Terraform) rebuilds the state instead
of failing on what the old inputs left: a lock file naming a provider version the mirror no longer holds made every
stack of `make validate` fail with "the previously-selected version ... is no longer available".

Only caches use it: state that must outlive a change of tools (a live-verify run's ledger, which its cleanup reads)
is not derived and is never emptied here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

INPUTS_FILE = ".inputs.json"


def input_key(inputs: Mapping[str, str]) -> str:
    """A short digest of the inputs (names and values, order-free)."""
    return hashlib.sha256(json.dumps(dict(inputs), sort_keys=True).encode()).hexdigest()[:16]


def keyed_dir(path: Path, inputs: Mapping[str, str]) -> Path:
    """`path`, created, emptied first unless it was last built from the same inputs; records them (readable JSON)."""
    key = input_key(inputs)
    record = path / INPUTS_FILE
    if path.exists():
        try:
            same = json.loads(record.read_text()).get("key") == key
        except (OSError, ValueError):
            same = False  # no record (built before keying) or a torn one: not known to match
        if not same:
            shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    if not record.is_file():
        record.write_text(json.dumps({"key": key, "inputs": dict(inputs)}, indent=2, sort_keys=True) + "\n")
    return path


def file_stamp(path: Path) -> str:
    """A file as a build input, without reading it: resolved path, size and modification time."""
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{int(st.st_mtime)}"


def terraform_inputs(terraform: Path, mirror: Path, providers: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """What Terraform's working directories derive from: the binary, the provider mirror (its resolved path: `make
    provider` links `current` to each new build) and every file of the providers it serves, with their versions."""
    inputs = {"terraform": file_stamp(terraform), "mirror": str(mirror.resolve())}
    for address, versions in sorted(providers.items()):
        files = sorted(f for f in (mirror / address).rglob("*") if f.is_file())
        inputs[address] = ",".join(versions) + "|" + ";".join(file_stamp(f) for f in files)
    return inputs
