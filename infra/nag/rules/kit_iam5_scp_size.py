"""KIT-IAM5 ScpSize: An SCP's compact JSON is at most 5,120 characters, or Organizations rejects it at apply
time.

Check: `policies.lint.check_scp_size` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_scp_size

RULE = NagRule(
    id="KIT-IAM5",
    name="ScpSize",
    explanation=("An SCP's compact JSON is at most 5,120 characters, or Organizations rejects it at apply time."),
    check=check_scp_size,
)
