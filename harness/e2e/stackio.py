"""What both `make e2e`'s run (harness/e2e/run.py) and its later deploys (harness/e2e/second.py) need: the emulator's
clients, the synth of a configuration, and a stack's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from emulator.process import Emulator
from harness.e2e.standins import Credentials
from s3tables_kit.infra.validate import Json
from s3tables_kit.topology.config import KitConfig


def client(emu: Emulator, key: Credentials, service: str, region: str) -> Any:
    """A boto3 client of the emulator, as the account that holds `key` (the kit's SDK: `PutRows` and `GetChannel`
    modelled)."""
    from s3tables_kit.jobs.kernel.sdk import boto3_session

    session = boto3_session(
        aws_access_key_id=key.access_key_id, aws_secret_access_key=key.secret_access_key, region_name=region
    )
    return session.client(service, endpoint_url=emu.url)


def synth_config(cfg: KitConfig, outdir: Path, *, allow_destroy: bool = False) -> dict[str, Json]:
    """{stack: synthesized document} of `cfg`, synthesized into `outdir`."""
    from s3tables_kit.infra.app import build_app

    shutil.rmtree(outdir, ignore_errors=True)
    outdir.parent.mkdir(parents=True, exist_ok=True)
    build_app(cfg, outdir=str(outdir), allow_destroy=allow_destroy).synth()
    return {d.name: json.loads((d / "cdk.tf.json").read_text()) for d in sorted((outdir / "stacks").iterdir())}


def write_stack(stack_dir: Path, doc: Json) -> None:
    stack_dir.mkdir(parents=True, exist_ok=True)
    (stack_dir / "main.tf.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def protected_addresses(doc: Json) -> set[str]:
    """Resources of a (localized) stack that carry `prevent_destroy = true`."""
    out = set()
    for rtype, instances in doc.get("resource", {}).items():
        for name, body in instances.items():
            if (body.get("lifecycle") or {}).get("prevent_destroy") is True:
                out.add(f"{rtype}.{name}")
    return out
