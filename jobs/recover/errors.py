"""What a failure was, in one line, with the deepest Java cause kept (a Spark failure's top
exception rarely says what went wrong).

A `Py4JJavaError` prints as `An error occurred while calling o528.commitTransaction.`; the reason
(`CommitFailedException: Version 1 already exists: ...`) sits in the Java throwable's cause chain. Spark's own
converted exceptions (`AnalysisException`, ...) keep the throwable as `_origin`. This module walks the Python chain
(`__cause__` / `__context__`) and then the Java chain (`getCause()`) to the deepest throwable, and returns its class,
message and first frames. Nothing here imports Spark; the Java objects are used through py4j only when present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FRAMES = 8  # stack frames of the root cause kept in the report


@dataclass(frozen=True)
class JavaCause:
    cls: str
    message: str
    frames: tuple[str, ...] = ()

    def one_line(self) -> str:
        msg = " ".join(self.message.split())
        return f"{self.cls}: {msg}" if msg else self.cls

    def as_dict(self) -> dict[str, Any]:
        return {"class": self.cls, "message": self.message, "frames": list(self.frames)}


def _java_throwable(exc: BaseException) -> Any:
    """The Java throwable behind a Python exception, if any (Py4JJavaError or a converted Spark exception)."""
    for attr in ("java_exception", "_origin"):
        t = getattr(exc, attr, None)
        if t is not None and hasattr(t, "getClass"):
            return t
    return None


def _python_chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 20:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def java_root_cause(exc: BaseException) -> JavaCause | None:
    """The deepest Java cause of `exc` (or of an exception it was raised from), else None."""
    throwable = None
    for e in _python_chain(exc):
        throwable = _java_throwable(e)
        if throwable is not None:
            break
    if throwable is None:
        return None
    try:
        root = throwable
        for _ in range(50):  # a cause chain can be cyclic in theory; Java's own printing stops at a repeat too
            nxt = root.getCause()
            if nxt is None or nxt.equals(root):
                break
            root = nxt
        cls = str(root.getClass().getName())
        msg = root.getMessage()
        frames = tuple(str(f.toString()) for f in list(root.getStackTrace())[:FRAMES])
        return JavaCause(cls, "" if msg is None else str(msg), frames)
    except Exception:  # the JVM is gone (killed, shut down): keep what Python printed
        return None


def first_line(exc: BaseException, limit: int = 500) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else ""


def describe(exc: BaseException, limit: int = 500) -> tuple[str, JavaCause | None]:
    """`Type: first line[; cause: JavaClass: message]` (one line) and the Java cause (None for a Python error)."""
    cause = java_root_cause(exc)
    head = f"{type(exc).__name__}: {first_line(exc, limit)}".rstrip(": ")
    if cause is None:
        return head, None
    root = cause.one_line()
    if root[:200] in head:  # the kit's own message already carries it
        return head, cause
    return f"{head}; cause: {root[:limit]}", cause
