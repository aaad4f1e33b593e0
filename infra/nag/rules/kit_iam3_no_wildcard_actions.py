"""KIT-IAM3 NoWildcardActions: No Allow of '*' or '<service>:*' and no Allow with NotAction: grants must name
their actions.

Check: `policies.lint.check_no_wildcard_actions` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_no_wildcard_actions

RULE = NagRule(
    id="KIT-IAM3",
    name="NoWildcardActions",
    explanation=("No Allow of '*' or '<service>:*' and no Allow with NotAction: grants must name their actions."),
    check=check_no_wildcard_actions,
)
