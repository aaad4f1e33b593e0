"""Reference pages of the configuration and the outputs contract, generated from their models.

Every field of `kit.toml`'s model (`KitConfig` and the sections under it) and of the outputs contract (`KitOutputs`)
declares its description and default once, in its `Field(...)`; this module renders them as Markdown tables:
`docs/reference/configuration.md` (one table per TOML section: key, type, default, required, description) and
`docs/reference/outputs.md` (one table per output: field, type, description). `--write` writes both pages, `--check`
exits 1 when either is stale, and a field without a one-sentence description is refused (exit 2) rather than
rendered.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

from s3tables_kit.topology import paths
from s3tables_kit.topology.model import KitConfig, Replication, Source
from s3tables_kit.topology.outputs import (
    OUTPUT_ORGANIZATION,
    OUTPUT_RECOVERY,
    OUTPUT_REPLICA,
    OUTPUT_SOURCE,
    OUTPUT_VAULT,
    KitOutputs,
)

CONFIGURATION_PAGE = Path("docs/reference/configuration.md")
OUTPUTS_PAGE = Path("docs/reference/outputs.md")
REGENERATE = "make docs-reference"
# Each output of `cdktf output` and the `KitOutputs` field that holds it (as `parse_outputs` reads them).
OUTPUT_FIELDS = {
    OUTPUT_SOURCE: "sources",
    OUTPUT_REPLICA: "replicas",
    OUTPUT_RECOVERY: "recovery",
    OUTPUT_ORGANIZATION: "organization",
    OUTPUT_VAULT: "vault",
}
# A sentence ends here and another begins: a description must be one sentence.
_SENTENCE_BREAK = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s+[A-Z]")

Vocabulary = Literal["toml", "json"]


class UndocumentedFieldError(ValueError):
    """A field of the configuration or of the outputs has no one-sentence description."""


@dataclass(frozen=True)
class ReferenceRow:
    key: str
    type: str
    default: str
    required: bool
    description: str


@dataclass(frozen=True)
class ReferenceSection:
    """One table of a page: the fields of `model` at `title` (a TOML section or an output), or, when the same model
    was rendered under an earlier title, only a pointer to it (`same_as`)."""

    title: str
    model: type[BaseModel]
    intro: str
    rows: tuple[ReferenceRow, ...]
    same_as: str | None = None


# ---------------------------------------------------------------- reading the models ----


def _unwrap(annotation: object) -> tuple[object, bool]:
    """The annotation without `| None`, and whether None was allowed."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], len(args) != len(get_args(annotation))
    return annotation, False


def _model_of(annotation: object) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds (directly, optionally or as a sequence of it), and whether it holds a sequence."""
    inner, _ = _unwrap(annotation)
    if get_origin(inner) in (tuple, list):
        args = [a for a in get_args(inner) if a is not Ellipsis]
        if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            return args[0], True
        return None, True
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner, False
    return None, False


def field_key(name: str, info: FieldInfo) -> str:
    """The key a reader writes: the alias where the field has one."""
    return info.alias or name


def _single_source_section(model: type[BaseModel], description: str) -> tuple[Any, FieldInfo]:
    """A section of the single-source form as create_model takes it: optional, since an estate writes neither."""
    return model | None, FieldInfo.from_field(None, description=description)


@functools.cache
def written_form() -> type[BaseModel]:
    """`kit.toml` as written: the fields of `KitConfig`, with `[source]` and `[replication]` beside `[[sources]]`
    (the loader reads them as the estate of that one source) and without `scheme` (the loader sets it)."""
    fields: dict[str, Any] = {}  # create_model's (annotation, field) pairs
    for name, info in KitConfig.model_fields.items():
        if name == "scheme":
            continue
        if name == "sources":
            fields["source"] = _single_source_section(
                Source,
                "The one source table bucket, with `[replication]` beside it (or `[[sources]]`, never both).",
            )
            fields[name] = (info.annotation, Field(default=(), description=info.description))
        else:
            fields[name] = (info.annotation, info)
        if name == "replicas":
            fields["replication"] = _single_source_section(
                Replication, "The replication of `[source]` (required with it; each `[[sources]]` entry has its own)."
            )
    model: type[BaseModel] = create_model("KitConfig", __module__=KitConfig.__module__, **fields)
    return model


def walk_models(root: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """`root` and every model reachable from its fields, each once, depth first."""
    seen: set[type[BaseModel]] = set()

    def visit(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
        if model in seen:
            return
        seen.add(model)
        yield model
        for info in model.model_fields.values():
            child, _ = _model_of(info.annotation)
            if child is not None:
                yield from visit(child)

    return visit(root)


def description_problems(models: Sequence[type[BaseModel]]) -> list[str]:
    """`Model.field: why` for every field without a description, or whose description is not one sentence."""
    problems = []
    for model in models:
        for name, info in model.model_fields.items():
            text = (info.description or "").strip()
            where = f"{model.__name__}.{name}"
            if not text:
                problems.append(f"{where}: no description")
            elif not text.endswith("."):
                problems.append(f"{where}: the description does not end with a full stop")
            elif _SENTENCE_BREAK.search(text):
                problems.append(f"{where}: the description is more than one sentence")
    return problems


# ---------------------------------------------------------------- rendering values ----

_NAMES: dict[Vocabulary, dict[type, str]] = {
    "toml": {str: "string", int: "integer", bool: "boolean", float: "float"},
    "json": {str: "string", int: "integer", bool: "boolean", float: "number"},
}
_TABLE: dict[Vocabulary, str] = {"toml": "table", "json": "object"}


def _plural(name: str) -> str:
    """`strings`, `arrays of strings`: the plural of a type's name."""
    if name.startswith("array of "):
        return "arrays of " + name.removeprefix("array of ")
    return name if name.endswith("s") else f"{name}s"


def type_name(annotation: object, vocabulary: Vocabulary, link: Callable[[type[BaseModel]], str] | None = None) -> str:
    """The type of a field in the reader's words: `integer`, `array of strings`, `"sse-s3"` or `"kms"`, ..."""
    inner, optional = _unwrap(annotation)
    origin = get_origin(inner)
    if origin is Literal:
        name = " or ".join(f"`{json.dumps(v)}`" for v in get_args(inner))
    elif origin in (tuple, list):
        item = next(a for a in get_args(inner) if a is not Ellipsis)
        if isinstance(item, type) and issubclass(item, BaseModel):
            name = f"array of {_TABLE[vocabulary]}s" + (f": {link(item)}" if link is not None else "")
        else:
            name = f"array of {_plural(type_name(item, vocabulary, link))}"
    elif origin is dict:
        value = get_args(inner)[1]
        name = f"{_TABLE[vocabulary]} of {_plural(type_name(value, vocabulary, link))}"
    elif isinstance(inner, type) and issubclass(inner, BaseModel):
        name = _TABLE[vocabulary] + (f": {link(inner)}" if link is not None else "")
    elif isinstance(inner, type) and inner in _NAMES[vocabulary]:
        name = _NAMES[vocabulary][inner]
    else:
        raise UndocumentedFieldError(f"no reader's name for the type {inner!r}")
    return f"{name} or null" if optional and vocabulary == "json" else name


def constraint_text(info: FieldInfo) -> str:
    """The field's bounds (`1 to 720`, `at least 1 item`), from the same metadata that validates it."""
    low = high = None
    parts = []
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            low = m.ge
        elif isinstance(m, annotated_types.Le):
            high = m.le
        elif isinstance(m, annotated_types.MinLen):
            parts.append(f"at least {m.min_length} item{'s' if m.min_length != 1 else ''}")
        elif isinstance(m, annotated_types.MaxLen):
            parts.append(f"at most {m.max_length} items")
    if low is not None and high is not None:
        parts.insert(0, f"{low} to {high}")
    elif low is not None:
        parts.insert(0, f"at least {low}")
    elif high is not None:
        parts.insert(0, f"at most {high}")
    return ", ".join(parts)


def toml_value(value: object) -> str:
    """`value` as it would be written in TOML (inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}" if not value else "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, BaseModel):
        return toml_value(value.model_dump(exclude_defaults=True))
    raise UndocumentedFieldError(f"no TOML form of the default {value!r}")


def default_text(info: FieldInfo) -> str:
    """The field's default as a reader writes it: `"STANDARD"`, `[]`, unset; empty when the field is required."""
    if info.is_required():
        return ""
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, BaseModel) and not value.model_dump(exclude_defaults=True):
        return "its keys' defaults"
    return f"`{toml_value(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, code marks and punctuation but `_` and `-` dropped, spaces
    turned into hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


# ---------------------------------------------------------------- the sections ----


def _link_to(title: str) -> Callable[[type[BaseModel]], str]:
    """A link to the section `title` (where a field's model is rendered)."""
    return lambda _model: f"[`{title}`](#{anchor(title)})"


def _sections(
    model: type[BaseModel],
    title: str,
    intro: str,
    vocabulary: Vocabulary,
    child_title: Callable[[str, str, bool], str],
    rendered: dict[type[BaseModel], str],
) -> list[ReferenceSection]:
    """The section of `model` at `title`, then those of the models under it (each model rendered once)."""
    if model in rendered:
        return [ReferenceSection(title, model, intro, (), same_as=rendered[model])]
    rendered[model] = title
    rows, children = [], []
    for name, info in model.model_fields.items():
        if info.exclude:
            continue  # set by the loader, never written (a source's adopted statements)
        if not (info.description or "").strip():
            raise UndocumentedFieldError(f"{model.__name__}.{name} has no description")
        key = field_key(name, info)
        child, many = _model_of(info.annotation)
        sub = child_title(title, key, many) if child is not None else ""
        if child is not None:
            children.append((child, sub, info.description or ""))
        kind = type_name(info.annotation, vocabulary, link=_link_to(sub))
        bounds = constraint_text(info)
        rows.append(
            ReferenceRow(
                key=key,
                type=f"{kind}, {bounds}" if bounds else kind,
                default=default_text(info),
                required=info.is_required(),
                description=(info.description or "").strip(),
            )
        )
    out = [ReferenceSection(title, model, intro, tuple(rows))]
    for child, sub, text in children:
        out += _sections(child, sub, text, vocabulary, child_title, rendered)
    return out


def _toml_title(parent: str, key: str, many: bool) -> str:
    path = parent.strip("[]") + "." + key if parent.startswith("[") else key
    return f"[[{path}]]" if many else f"[{path}]"


def _json_title(parent: str, key: str, _many: bool) -> str:
    return f"{parent}.{key}"


def config_sections(root: type[BaseModel] | None = None) -> list[ReferenceSection]:
    """One section per TOML section of `kit.toml` (default: as written), the top level first, depth first."""
    return _sections(root or written_form(), "Top level", "The sections of `kit.toml`.", "toml", _toml_title, {})


def output_sections(root: type[BaseModel] = KitOutputs) -> list[ReferenceSection]:
    """One section per output of `cdktf output`, then one per object inside it."""
    rendered: dict[type[BaseModel], str] = {}
    out: list[ReferenceSection] = []
    for output, field in OUTPUT_FIELDS.items():
        info = root.model_fields[field]
        model, _ = _model_of(info.annotation)
        if model is None:
            raise UndocumentedFieldError(f"{root.__name__}.{field} holds no model")
        out += _sections(model, output, info.description or "", "json", _json_title, rendered)
    return out


# ---------------------------------------------------------------- the pages ----


def _sources(models: Sequence[type[BaseModel]]) -> str:
    modules = sorted({m.__module__.removeprefix("s3tables_kit.") for m in models})
    return ", ".join(f"`{m.replace('.', '/')}.py`" for m in modules)


def _header(models: Sequence[type[BaseModel]]) -> str:
    return (
        f"<!-- Generated from the models in {_sources(models)} by `{REGENERATE}` "
        "(`python -m s3tables_kit.topology.reference --write`): edit the models' Field descriptions, not this "
        "file. -->\n"
    )


def _section_markdown(section: ReferenceSection, columns: Sequence[str]) -> list[str]:
    lines = [f"## `{section.title}`" if section.title != "Top level" else "## Top level", ""]
    if section.intro:
        lines += [section.intro, ""]
    if section.same_as is not None:
        return [*lines, f"The keys of [`{section.same_as}`](#{anchor(section.same_as)}).", ""]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in section.rows:
        cells = {
            "key": f"`{row.key}`",
            "field": f"`{row.key}`",
            "type": row.type,
            "default": row.default,
            "required": "yes" if row.required else "no",
            "description": row.description,
        }
        lines.append("| " + " | ".join(_cell(cells[c]) for c in columns) + " |")
    return [*lines, ""]


def _check_anchors(sections: Sequence[ReferenceSection]) -> None:
    titles = [anchor(s.title) for s in sections]
    twice = sorted({t for t in titles if titles.count(t) > 1})
    if twice:
        raise UndocumentedFieldError(f"two sections share the anchor(s) {twice}")


def _documented(
    root: type[BaseModel], sections_of: Callable[[], list[ReferenceSection]]
) -> tuple[list[type[BaseModel]], list[ReferenceSection]]:
    """The models below `root` and their sections, refused when a field lacks its description or two sections share
    an anchor, since either would publish a page that misleads."""
    models = list(walk_models(root))
    problems = description_problems(models)
    if problems:
        raise UndocumentedFieldError("; ".join(problems))
    sections = sections_of()
    _check_anchors(sections)
    return models, sections


def configuration_page() -> str:
    models, sections = _documented(written_form(), config_sections)
    lines = [
        _header(models).rstrip("\n"),
        "# Configuration reference (`kit.toml`)",
        "",
        "Every key of `kit.toml`, read from the configuration's model. A section whose key holds an array is written "
        "`[[name]]` (one per entry) or as an inline array of tables; a table may be written inline "
        '(`encryption = { type = "sse-s3" }`). The rules that read several keys (replica retention at least the '
        "source's, SCP coverage, quotas) and an estate's `[[sources]]` are explained in "
        "[provisioning](../provisioning.md#configuration-kittoml).",
        "",
    ]
    for section in sections:
        lines += _section_markdown(section, ("key", "type", "default", "required", "description"))
    return "\n".join(lines).rstrip("\n") + "\n"


def outputs_page() -> str:
    models, sections = _documented(KitOutputs, output_sections)
    lines = [
        _header(models).rstrip("\n"),
        "# Outputs reference (`outputs.json`)",
        "",
        "`make outputs CONFIG=kit.toml` writes `outputs.json`: one JSON object per stack, each holding one of the "
        'outputs below (`{"replica-<bucket>": {"kit_replica": {...}}, ...}`), which `load_outputs` in '
        "`topology/outputs.py` reads wherever they are. A field marked optional may be absent (outputs of an "
        "older deploy); field names are a contract: added freely, never renamed or removed without a migration "
        "note. How the stacks export them: [provisioning](../provisioning.md#outputs-contract).",
        "",
    ]
    for section in sections:
        cols = ("field", "type", "description")
        lines += _section_markdown(_mark_optional(section), cols)
    return "\n".join(lines).rstrip("\n") + "\n"


def _mark_optional(section: ReferenceSection) -> ReferenceSection:
    rows = tuple(
        row if row.required else ReferenceRow(row.key, f"{row.type}; optional", row.default, False, row.description)
        for row in section.rows
    )
    return ReferenceSection(section.title, section.model, section.intro, rows, section.same_as)


def pages() -> dict[Path, str]:
    """Every generated page (path relative to the repository) and its text."""
    return {CONFIGURATION_PAGE: configuration_page(), OUTPUTS_PAGE: outputs_page()}


def stale(root: Path) -> list[str]:
    """A unified diff per page under `root` that differs from what the models generate (empty: up to date)."""
    diffs = []
    for rel, text in pages().items():
        path = root / rel
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        if old != text:
            diff = difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True), f"{rel} (on disk)", f"{rel} (models)"
            )
            diffs.append("".join(diff) or f"{rel}: missing\n")
    return diffs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m s3tables_kit.topology.reference", description=__doc__.splitlines()[0]
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write docs/reference/*.md from the models")
    mode.add_argument("--check", action="store_true", help="fail (exit 1) with a diff when a page is stale")
    parser.add_argument("--root", type=Path, default=paths.ROOT, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            diffs = stale(args.root)
            if diffs:
                sys.stdout.write("".join(diffs))
                print(f"\ndocs-reference: {len(diffs)} page(s) stale. Run `{REGENERATE}` and commit the result.")
                return 1
            print(f"docs-reference: {', '.join(str(p) for p in pages())} up to date.")
            return 0
        for rel, text in pages().items():
            (args.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (args.root / rel).write_text(text, encoding="utf-8")
            print(f"wrote {rel}")
        return 0
    except UndocumentedFieldError as err:
        print(f"docs-reference: refused: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
