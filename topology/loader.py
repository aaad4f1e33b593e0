"""Loading the configuration: TOML -> model -> cross-field checks. Every problem found is reported at once in a
`ConfigError`, each naming the field (``replicas[0].bucket``) and the rule it breaks.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from topology.checks import Issue, cross_checks
from topology.model import KitConfig
from topology.rules import MAX_DESTINATIONS


class ConfigError(ValueError):
    """Invalid configuration. `issues` lists every problem found, each naming the field and the rule."""

    def __init__(self, source: str, issues: list[Issue]):
        self.source = source
        self.issues = issues
        lines = "\n".join(f"  - {i}" for i in issues)
        super().__init__(f"invalid configuration {source}: {len(issues)} problem(s)\n{lines}")


def _loc(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def _pydantic_issues(err: ValidationError) -> list[Issue]:
    issues = []
    for e in err.errors():
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not part of the configuration schema; check the spelling)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] in ("too_short", "too_long"):
            ctx = e.get("ctx", {})
            bound = (
                f"at least {ctx.get('min_length')}" if e["type"] == "too_short" else f"at most {ctx.get('max_length')}"
            )
            msg = f"needs {bound} item(s), got {ctx.get('actual_length')}"
            if tuple(e["loc"]) == ("replicas",):
                msg += f" (S3 Tables replicates to 1 to {MAX_DESTINATIONS} destination table buckets)"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        issues.append(Issue(_loc(tuple(e["loc"])), msg))
    return issues


def parse_config(data: dict[str, object], source: str = "<dict>") -> KitConfig:
    try:
        cfg = KitConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(source, _pydantic_issues(err)) from None
    issues = cross_checks(cfg)
    if issues:
        raise ConfigError(source, issues)
    return cfg


def load_config(path: str | Path) -> KitConfig:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(str(p), [Issue("(file)", "configuration file not found")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), [Issue("(file)", f"not valid TOML: {exc}")]) from None
    return parse_config(data, str(p))
