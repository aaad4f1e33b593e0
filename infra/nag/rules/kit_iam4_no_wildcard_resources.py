"""KIT-IAM4 NoWildcardResources: No Allow on Resource '*' (or NotResource) except in KMS key policies, where '*'
means the key itself.

Check: `policies.lint.check_no_wildcard_resources` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_no_wildcard_resources

RULE = NagRule(
    id="KIT-IAM4",
    name="NoWildcardResources",
    explanation=(
        "No Allow on Resource '*' (or NotResource) except in KMS key policies, where '*' means the key itself."
    ),
    check=check_no_wildcard_resources,
)
