"""KIT-IAM6 UniqueSids: Every statement has a descriptive alphanumeric Sid, unique in its document, so reviewers
and findings can name it.

Check: `policies.lint.check_unique_sids` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_unique_sids

RULE = NagRule(
    id="KIT-IAM6",
    name="UniqueSids",
    explanation=(
        "Every statement has a descriptive alphanumeric Sid, unique in its document, so reviewers and "
        "findings can name it."
    ),
    check=check_unique_sids,
)
