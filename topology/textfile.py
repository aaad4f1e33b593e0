"""Reading the kit's own input files (the configuration, the outputs of a deploy) with one answer per way they can
be unusable: missing, unreadable, or not in their format. Each reader names the error its callers expect."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def read_parsed(
    path: Path,
    parse: Callable[[str], T],
    refuse: Callable[[str], Exception],
    *,
    missing: str,
    invalid: str,
    parse_errors: tuple[type[Exception], ...],
) -> T:
    """`parse` of the UTF-8 text at `path`; `refuse(reason)` raised (without the traceback) when the file is
    `missing`, cannot be read, or is `invalid` (a `parse_errors` error, or not UTF-8)."""
    invalid_errors: tuple[type[Exception], ...] = (*parse_errors, UnicodeDecodeError)
    try:
        return parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise refuse(missing) from None
    except invalid_errors as exc:
        raise refuse(f"{invalid}: {exc}") from None
    except OSError as exc:  # a directory, no permission, ...
        raise refuse(f"cannot read the file: {exc.strerror or exc}") from None
