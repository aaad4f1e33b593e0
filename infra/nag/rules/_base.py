"""The shape every KIT nag rule has (cdk-nag's: an id, a name, an explanation, a check)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Document = dict[str, Any]


@dataclass(frozen=True)
class NagRule:
    id: str  # KIT-IAM1 ... (stable: suppressions refer to it)
    name: str
    explanation: str
    check: Callable[[Document, str], list[str]]  # (parsed policy document, document kind) -> problems

    @property
    def title(self) -> str:
        return f"{self.id} {self.name}"
