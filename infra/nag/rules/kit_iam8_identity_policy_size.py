"""KIT-IAM8 IdentityPolicySize: An identity policy is at most 6,144 characters (white space not counted), the IAM
managed-policy limit, or IAM rejects it at apply time (the guardrail grows with the replicas of its account).

Check: `policies.lint.check_identity_policy_size` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_identity_policy_size

RULE = NagRule(
    id="KIT-IAM8",
    name="IdentityPolicySize",
    explanation="An identity policy is at most 6,144 characters (white space not counted), or IAM rejects it.",
    check=check_identity_policy_size,
)
