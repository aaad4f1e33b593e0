"""The failover tool and `cdktf deploy` of the failover topology put the same bytes: the promoted bucket's
policy in the synthesized replica stack of `examples/failover/seed.toml` equals what `s3tables_kit.jobs.failover`
applies."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from s3tables_kit.jobs.failover.aws import documents_from_config
from s3tables_kit.topology.config import load_config

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("example", ["seed", "multi-account"])
def test_tool_applies_the_synthesized_bucket_policy_byte_for_byte(example: str, tmp_path: Path) -> None:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from s3tables_kit.infra.golden import synth_example

    path = ROOT / "examples" / "failover" / f"{example}.toml"
    cfg = load_config(path)
    assert cfg.failover is not None and cfg.failover.promoted_bucket
    promoted = cfg.failover.promoted_bucket
    stacks = synth_example(path, tmp_path)
    stack = stacks[next(r.stack_id for r in cfg.replicas if r.bucket == promoted)]
    (policy,) = stack["resource"]["aws_s3tables_table_bucket_policy"].values()
    tool = documents_from_config(cfg, promoted)
    assert policy["resource_policy"] == tool.bucket_policy
    statements = json.loads(tool.bucket_policy)["Statement"]
    assert any(s["Sid"].startswith("DenyPromoted") for s in statements)  # the promoted documents, not the replica's
