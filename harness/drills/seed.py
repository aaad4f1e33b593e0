"""The topology the failover drills deploy into the stand-in: the seed (examples/seed.toml) as a writer engine
fills it, with both drill tables (analytics.orders, analytics.customers) declared and replicated at bucket level.

The drill's configuration is written next to its outputs, and every tool of the drill reads both files.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.deploy import deploy, toml_text
from s3tables_kit.topology.paths import ROOT

SEED = ROOT / "examples" / "seed.toml"
SEED_FAILOVER = ROOT / "examples" / "failover" / "seed.toml"
CUSTOMERS = {
    "name": "customers",
    "columns": [{"name": "customer_id", "type": "string", "required": True}, {"name": "name", "type": "string"}],
}
# moto 5.2.5 stores an EMPTY object for pyarrow's streaming uploads with trailing checksums: against the emulator,
# checksums only when required (plain PutObject). Not needed on AWS.
EMULATOR_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
    "MOTO_ALLOW_NONEXISTENT_REGION": "true",
}


def drill_doc(path: Path) -> dict[str, Any]:
    """The configuration at `path` as the drill deploys it: analytics.customers declared too, bucket-level
    replication."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    analytics = next(ns for ns in doc["source"]["namespaces"] if ns["name"] == "analytics")
    if all(t["name"] != CUSTOMERS["name"] for t in analytics["tables"]):
        analytics["tables"].append(CUSTOMERS)
    doc["replication"] = {"mode": "bucket"}
    return doc


def write_config(doc: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml_text(doc), encoding="utf-8")
    return path


def deploy_seed(emu: Emulator, out: Path) -> tuple[Path, Path]:
    """The drill's seed topology deployed into `emu` (`harness.deploy`, no tables: the drill's writers create them);
    (the configuration file, the outputs file), both under `out`."""
    from s3tables_kit.topology.config import load_config

    config = write_config(drill_doc(SEED), out / "kit.toml")
    outputs = out / "outputs.json"
    outputs.write_text(json.dumps(deploy(load_config(config), emu, tables=False), indent=2), encoding="utf-8")
    return config, outputs
