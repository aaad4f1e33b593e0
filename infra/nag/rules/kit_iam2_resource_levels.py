"""KIT-IAM2 ResourceLevels: Every action has a resource of its level (S3 Tables table actions on .../table/<id>,
bucket actions on the bucket ARN); otherwise the statement never applies to it.

Check: `policies.lint.check_resource_levels` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_resource_levels

RULE = NagRule(
    id="KIT-IAM2",
    name="ResourceLevels",
    explanation=(
        "Every action has a resource of its level (S3 Tables table actions on .../table/<id>, bucket "
        "actions on the bucket ARN); otherwise the statement never applies to it."
    ),
    check=check_resource_levels,
)
