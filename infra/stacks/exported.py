"""The one structured output each stack exports: the outputs contract's value (built by `topology/outputs.py`),
under the contract's name and description, so a stack states neither twice."""

from __future__ import annotations

from collections.abc import Mapping

from cdktf import TerraformOutput
from constructs import Construct

from s3tables_kit.topology.outputs import OUTPUT_DESCRIPTIONS


def export_output(
    scope: Construct, name: str, value: Mapping[str, object], *, description: str | None = None
) -> TerraformOutput:
    """`name`'s value, described as the contract describes it (`description` for a variant of the contract)."""
    return TerraformOutput(scope, name, description=description or OUTPUT_DESCRIPTIONS[name], value=value)
