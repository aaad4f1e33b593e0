"""Loading the configuration: TOML -> model -> cross-field checks. Every problem found is reported at once in a
`ConfigError`, each naming the field (``replicas[0].bucket``) and the rule it breaks.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from s3tables_kit.topology.adoption import read_bucket_policies
from s3tables_kit.topology.checks import Issue, cross_checks
from s3tables_kit.topology.issues import KitRefusal
from s3tables_kit.topology.model import ESTATE, SINGLE_SOURCE, KitConfig
from s3tables_kit.topology.rules import MAX_DESTINATIONS
from s3tables_kit.topology.textfile import read_parsed

Loc = tuple[str | int, ...]


def _same(loc: Loc) -> Loc:
    return loc


class ConfigError(KitRefusal):
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


def _is_account_field(loc: tuple[str | int, ...]) -> bool:
    return any(isinstance(part, str) and "account" in part for part in loc)


def _string_hint(e: Any) -> str:
    """A number where a string belongs: say how to write it (TOML keeps 012345678901 only quoted)."""
    value = e.get("input")
    if isinstance(value, int) and not isinstance(value, bool) and _is_account_field(tuple(e["loc"])):
        return f'account ids are 12-digit strings: quote them in TOML: "{value:012d}"'
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'expected a string, got the number {value!r}: quote it in TOML: "{value}"'
    return str(e["msg"])


def _pydantic_issues(err: ValidationError, written: Callable[[Loc], Loc]) -> list[Issue]:
    errors = err.errors()
    failed_paths = {tuple(e["loc"]) for e in errors}
    issues = []
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "too_short" and any(len(p) > len(loc) and p[: len(loc)] == loc for p in failed_paths):
            continue  # the list has items, but one is invalid (reported at its own path): not too short
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
        elif e["type"] == "string_type":
            msg = _string_hint(e)
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        issues.append(Issue(_loc(written(tuple(e["loc"]))), msg))
    return issues


def _repaired(data: Any, err: ValidationError) -> Any | None:
    """`data` with each field error that has one obvious meaning repaired (a number where a string belongs ->
    the string, a name with upper case -> lower case), so that the cross-field rules can run in the same round;
    None when some error has no such repair."""
    fixed = copy.deepcopy(data)
    for e in err.errors():
        loc, value = tuple(e["loc"]), e.get("input")
        if e["type"] == "string_type" and isinstance(value, int) and not isinstance(value, bool):
            new: Any = f"{value:012d}" if _is_account_field(loc) else str(value)
        elif e["type"] == "value_error" and isinstance(value, str) and value != value.lower():
            new = value.lower()
        elif e["type"] == "too_short" and e.get("input"):
            continue  # reported with its items
        else:
            return None
        parent = fixed
        try:
            for part in loc[:-1]:
                parent = parent[part]
            parent[loc[-1]] = new
        except (KeyError, IndexError, TypeError):
            return None
    return fixed


def _single_source_loc(loc: Loc) -> Loc:
    """Where a field of the estate of one that `[source]` loads as is written in kit.toml."""
    if loc[:3] == ("sources", 0, "replication"):
        return loc[2:]
    if loc[:2] == ("sources", 0):
        return ("source", *loc[2:])
    return loc


def _sources_as_source(loc: Loc) -> Loc:
    return ("source", *loc[1:]) if loc[:1] == ("sources",) else loc


def _declared(data: dict[str, object]) -> tuple[dict[str, object], list[Issue], Callable[[Loc], Loc]]:
    """`data` as the model reads it, the problems of its form, and the map from a model field path to the one
    written in kit.toml. `[source]` + `[replication]` loads as the estate of its one source, replicating to every
    replica, under the single-source scheme; `[[sources]]` under the estate's."""
    for chosen in ("scheme", "kind"):  # chosen at load, never written
        if chosen in data:
            return (
                data,
                [Issue(chosen, "unknown key (not part of the configuration schema; check the spelling)")],
                _same,
            )
    if "source" in data and "sources" in data:
        return (
            data,
            [Issue("sources", "use either [source] with [replication] or [[sources]] (an estate), not both")],
            _same,
        )
    if "sources" in data:
        issues = []
        if "replication" in data:
            issues.append(Issue("replication", "only valid with [source]; each of [[sources]] has its own replication"))
        return {**data, "scheme": ESTATE}, issues, _same
    if "source" not in data:
        missing = Issue("source", "required field is missing (or [[sources]] for an estate of several buckets)")
        return data, [missing], _sources_as_source
    src = data["source"]
    rest = {k: v for k, v in data.items() if k not in ("source", "replication")}
    if not isinstance(src, dict):  # the model names what is wrong with it
        return {**rest, "sources": [src], "scheme": SINGLE_SOURCE}, [], _single_source_loc
    out: list[Issue] = []
    for fld in ("id", "replicate_to", "replication"):
        if src.get(fld):
            out.append(
                Issue(f"source.{fld}", "only valid in [[sources]] (an estate); [source] replicates to every replica")
            )
    if data.get("replication") is None:
        out.append(Issue("replication", "required field is missing"))
    replicas = data.get("replicas")
    replicas = replicas if isinstance(replicas, list) else []
    if len(replicas) > MAX_DESTINATIONS:
        out.append(
            Issue(
                "replicas",
                f"needs at most {MAX_DESTINATIONS} item(s), got {len(replicas)} (S3 Tables replicates to 1 to "
                f"{MAX_DESTINATIONS} destination table buckets)",
            )
        )
    names = [r["bucket"] for r in replicas if isinstance(r, dict) and isinstance(r.get("bucket"), str)]
    one = {**src, "replication": data.get("replication"), "replicate_to": names}
    return {**rest, "sources": [one], "scheme": SINGLE_SOURCE}, out, _single_source_loc


def parse_config(data: dict[str, object], source: str = "<dict>", base_dir: Path | None = None) -> KitConfig:
    """The validated configuration, or a ConfigError naming every problem at once: the field errors and, where each
    of those has one obvious repair, the cross-field problems of the configuration as it was meant. `base_dir`: where
    a source's `bucket_policy` file is read from (the directory of kit.toml; default the working directory)."""
    form_issues: list[Issue]
    data, file_issues = read_bucket_policies(data, base_dir or Path.cwd())
    model_data, form_issues, written = _declared(data)
    form_issues = file_issues + form_issues
    try:
        cfg = KitConfig.model_validate(model_data)
    except ValidationError as err:
        issues = _pydantic_issues(err, written)
        meant = _repaired(model_data, err)
        if meant is not None and not form_issues:
            try:
                named = {i.field for i in issues}
                issues += [i for i in cross_checks(KitConfig.model_validate(meant)) if i.field not in named]
            except ValidationError:
                pass  # the repairs were not enough: the field errors alone
        said = {i.field for i in form_issues}  # the form's own words for a field the model also misses
        raise ConfigError(source, [i for i in issues if i.field not in said] + form_issues) from None
    issues = form_issues or cross_checks(cfg)
    if issues:
        raise ConfigError(source, issues)
    return cfg


def load_config(path: str | Path) -> KitConfig:
    """The validated configuration of a TOML file (`kit.toml`), or a ConfigError naming every problem at once."""
    p = Path(path)
    data = read_parsed(
        p,
        tomllib.loads,
        lambda reason: ConfigError(str(p), [Issue("(file)", reason)]),
        missing="configuration file not found",
        invalid="not valid TOML",
        parse_errors=(tomllib.TOMLDecodeError,),
    )
    return parse_config(data, str(p), p.parent)
