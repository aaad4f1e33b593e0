"""The KIT nag rules, one per file. Each is the synth-time twin of a rule in `policies/lint.py`."""

from __future__ import annotations

from infra.nag.rules._base import NagRule
from infra.nag.rules.kit_iam1_actions_exist import RULE as KIT_IAM1
from infra.nag.rules.kit_iam2_resource_levels import RULE as KIT_IAM2
from infra.nag.rules.kit_iam3_no_wildcard_actions import RULE as KIT_IAM3
from infra.nag.rules.kit_iam4_no_wildcard_resources import RULE as KIT_IAM4
from infra.nag.rules.kit_iam5_scp_size import RULE as KIT_IAM5
from infra.nag.rules.kit_iam6_unique_sids import RULE as KIT_IAM6
from infra.nag.rules.kit_iam7_trust_policy import RULE as KIT_IAM7
from infra.nag.rules.kit_iam8_identity_policy_size import RULE as KIT_IAM8

ALL_RULES: tuple[NagRule, ...] = (KIT_IAM1, KIT_IAM2, KIT_IAM3, KIT_IAM4, KIT_IAM5, KIT_IAM6, KIT_IAM7, KIT_IAM8)

__all__ = ["ALL_RULES", "NagRule"]
