"""Synth-time policy rules for the kit's stacks (a CDKTF Aspect in cdk-nag's shape).

`apply_nag(app_or_stack)` registers them; `suppress(construct, rule_id, reason)` records a reasoned exception.
The rules themselves are defined once, in `policies/lint.py` (`RULES`): the same rule objects check the built and
rendered documents and, through this aspect, every construct that carries policy JSON.
"""

from __future__ import annotations

from s3tables_kit.infra.nag.aspect import (
    ALL_RULES,
    KitNagAspect,
    NagError,
    NagRule,
    Suppression,
    Violation,
    apply_nag,
    check_construct,
    nag_refusals,
    suppress,
    suppressions_of,
)

__all__ = [
    "ALL_RULES",
    "KitNagAspect",
    "NagError",
    "NagRule",
    "Suppression",
    "Violation",
    "apply_nag",
    "check_construct",
    "nag_refusals",
    "suppress",
    "suppressions_of",
]
