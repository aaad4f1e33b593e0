"""Synth-time policy rules for the kit's stacks (a CDKTF Aspect in cdk-nag's shape).

`apply_nag(app_or_stack)` registers them; `suppress(construct, rule_id, reason)` records a reasoned exception.
One rule per file under `infra/nag/rules/`; each is the synth-time twin of a rule in `policies/lint.py`.
"""

from __future__ import annotations

from infra.nag.aspect import (
    KitNagAspect,
    NagError,
    Suppression,
    Violation,
    apply_nag,
    check_construct,
    suppress,
    suppressions_of,
)
from infra.nag.rules import ALL_RULES, NagRule

__all__ = [
    "ALL_RULES",
    "KitNagAspect",
    "NagError",
    "NagRule",
    "Suppression",
    "Violation",
    "apply_nag",
    "check_construct",
    "suppress",
    "suppressions_of",
]
