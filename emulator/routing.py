"""Matching an S3 Tables REST request to its operation (from the botocore model) and the handler registry."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import botocore.session

# ----------------------------------------------------------------------------------------------------
# Operation matching from the botocore model
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    op: str
    method: str
    regex: re.Pattern[str]
    literal_len: int


def _routes() -> list[Route]:
    # AWS_DATA_PATH (set by `emulator.process`) adds the API AWS serves ahead of the pinned botocore.
    model = botocore.session.get_session().get_service_model("s3tables")
    routes = []
    for op in model.operation_names:
        http = model.operation_model(op).http
        path = http["requestUri"].split("?")[0]
        pattern = re.sub(r"\{(\w+)\+?\}", lambda m: f"(?P<{m.group(1)}>[^/]+)", path)
        literal = len(re.sub(r"\{[^}]+\}", "", path))
        routes.append(Route(op, http["method"], re.compile(f"^{pattern}$"), literal))
    routes.sort(key=lambda r: -r.literal_len)
    return routes


ROUTES = _routes()
_unquote = functools.lru_cache(maxsize=8192)(unquote)  # a bucket's ARN is in most paths: decoded once
_BY_METHOD: dict[str, list[Route]] = {}
for _r in ROUTES:  # the same order within each method: the longest literal part first
    _BY_METHOD.setdefault(_r.method, []).append(_r)


def _literal(segment: str) -> str | None:
    return None if "{" in segment else segment


def _shape(path: str) -> tuple[int, str | None, str | None]:
    """(segments, first, last) of a model path; a parameter's segment is None (it matches any one segment)."""
    parts = path.split("/")
    return len(parts), _literal(parts[1]) if len(parts) > 1 else None, _literal(parts[-1])


_SHAPES = {r: _shape(re.sub(r"\(\?P<(\w+)>\[\^/\]\+\)", r"{\1}", r.regex.pattern.strip("^$"))) for r in ROUTES}


@functools.lru_cache(maxsize=4096)
def _candidates(method: str, segments: int, first: str, last: str) -> tuple[Route, ...]:
    """The routes of `method` that a path of this many segments, first and last can match, in matching order: a
    parameter matches one segment (``[^/]+``), so any other route cannot match (a tenth of the CPU of a request)."""
    return tuple(
        r
        for r in _BY_METHOD.get(method, ())
        if _SHAPES[r][0] == segments and _SHAPES[r][1] in (None, first) and _SHAPES[r][2] in (None, last)
    )


def match_route(method: str, raw_path: str) -> tuple[str, dict[str, str]] | None:
    parts = raw_path.split("/")
    for r in _candidates(method, len(parts), parts[1] if len(parts) > 1 else "", parts[-1]):
        m = r.regex.match(raw_path)
        if m:
            return r.op, {k: _unquote(v) for k, v in m.groupdict().items()}
    return None


# ----------------------------------------------------------------------------------------------------
# Handlers (operation -> function(params, query, body) -> (status, body dict | None))
# ----------------------------------------------------------------------------------------------------

RAW_QUERY = "__raw_query__"
RAW_BODY = "__raw_body__"  # the request body of an operation whose payload is not JSON (PutRows' rows)
RAW_BODY_OPS = frozenset({"PutRows"})  # the whole query string, beside the first value of each parameter
Handler = Callable[[dict[str, str], dict[str, str], dict[str, Any]], tuple[int, dict[str, Any] | None]]
HANDLERS: dict[str, Handler] = {}


def handles(op: str) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        HANDLERS[op] = fn
        return fn

    return deco


# ---- writes refused on replicas (checked before the request reaches moto) ----

Guard = Callable[[dict[str, str], dict[str, str]], None]
GUARDS: dict[str, Guard] = {}
