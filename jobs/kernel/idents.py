"""Tables as every job names them (`Ident`: `namespace.name`), and the errors whose message is the whole story.

A `JobError`'s message is meant for the on-call engineer: the tools print it without a traceback and exit 2 (bad
input, `ArgError`) or report the table it concerns. Each job derives its own failures from it (recovery's
`RecoveryError`, failover's `FailoverError`), so a tool catches one base for everything it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass


class JobError(Exception):
    """Base class: the message is meant for the on-call engineer, no traceback needed."""


class ArgError(JobError):
    """Bad input on the command line (a table name, a timestamp, a combination of options)."""


@dataclass(frozen=True)
class Ident:
    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> Ident:
        parts = text.strip().split(".")
        if len(parts) != 2 or not all(parts):
            raise ArgError(f"table {text!r}: expected <namespace>.<name>")
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.namespace}.{self.name}"
