"""KIT-IAM7 TrustPolicy: A role trust policy trusts only the intended service principals (S3 Tables replication,
EMR Serverless), each with aws:SourceAccount and aws:SourceArn conditions against the confused deputy.

Check: `policies.lint.check_trust_policy` (the rendered documents, the tests and synth share it).
"""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from policies.lint import check_trust_policy

RULE = NagRule(
    id="KIT-IAM7",
    name="TrustPolicy",
    explanation=(
        "A role trust policy trusts only the intended service principals (S3 Tables replication, EMR "
        "Serverless), each with aws:SourceAccount and aws:SourceArn conditions against the confused "
        "deputy."
    ),
    check=check_trust_policy,
)
