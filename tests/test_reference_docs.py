"""docs/reference/ is generated from the models: every field of the configuration and of the outputs contract
declares a one-sentence description and its default in its `Field(...)`, and the committed pages are what
`make docs-reference` renders from them now."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, create_model

from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.model import KitConfig, Recovery
from s3tables_kit.topology.outputs import KitOutputs, OutputsError, ReplicaOut, SourceOut, declared
from s3tables_kit.topology.reference import (
    CONFIGURATION_PAGE,
    OUTPUTS_PAGE,
    REGENERATE,
    ReferenceSection,
    UndocumentedFieldError,
    config_sections,
    configuration_page,
    description_problems,
    main,
    output_sections,
    outputs_page,
    stale,
    walk_models,
)

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted([*(REPO / "examples").glob("*.toml"), *(REPO / "examples" / "failover").glob("*.toml")])


def _index(sections: list[ReferenceSection]) -> dict[str, ReferenceSection]:
    """Each section by its path (`source.namespaces`, `kit_source.failover`), a `same_as` one resolved."""
    by_title = {s.title: s for s in sections}
    return {
        ("" if s.title == "Top level" else s.title.strip("[]")): by_title[s.same_as] if s.same_as is not None else s
        for s in sections
    }


def _row(sections: list[ReferenceSection], path: str, key: str) -> Any:
    return next(r for r in _index(sections)[path].rows if r.key == key)


def test_committed_pages_are_what_the_models_generate() -> None:
    assert stale(REPO) == [], f"docs/reference/ is stale: run `{REGENERATE}` and commit the result"


def test_generated_pages_say_so_in_their_first_line() -> None:
    for rel in (CONFIGURATION_PAGE, OUTPUTS_PAGE):
        first = (REPO / rel).read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("<!-- Generated ") and REGENERATE in first, rel


def test_every_field_of_the_configuration_and_the_outputs_has_a_one_sentence_description() -> None:
    models = [*walk_models(KitConfig), *walk_models(KitOutputs)]
    assert len(models) >= 25, [m.__name__ for m in models]
    assert description_problems(models) == []


def test_a_field_without_a_description_is_refused() -> None:
    undocumented = create_model(
        "Undocumented",
        documented=(int, Field(default=1, description="A documented field.")),
        bare=(str, ...),
        two=(str, Field(description="One sentence. Then another.")),
        open_ended=(str, Field(description="No full stop")),
    )
    assert description_problems([undocumented]) == [
        "Undocumented.bare: no description",
        "Undocumented.two: the description is more than one sentence",
        "Undocumented.open_ended: the description does not end with a full stop",
    ]
    root = create_model("Root", section=(undocumented, Field(description="A section.")))
    with pytest.raises(UndocumentedFieldError, match=r"Undocumented\.bare has no description"):
        config_sections(root)


def test_the_table_shows_the_real_default_of_a_field() -> None:
    default = Recovery.model_fields["emr_release"].default
    row = _row(config_sections(), "recovery", "emr_release")
    assert (row.default, row.required) == (f'`"{default}"`', False)
    assert f'| `emr_release` | string | `"{default}"` | no |' in configuration_page()
    # The same field with another default renders that default: the table reads the model, nothing else.
    moved = create_model(
        "MovedRecovery",
        __base__=Recovery,
        emr_release=(str, Field(default="emr-9.0.0", description="The release.")),
    )
    root = create_model("Root", recovery=(moved, Field(description="The recovery section.")))
    assert _row(config_sections(root), "recovery", "emr_release").default == '`"emr-9.0.0"`'


def test_required_keys_bounds_aliases_and_nested_sections() -> None:
    sections = config_sections()
    top = {r.key: r for r in _index(sections)[""].rows}
    assert "source" in top and "source_section" not in top  # the TOML key, not the Python name
    assert {k for k, r in top.items() if r.required} == {"kit", "replicas", "protection", "recovery"}
    assert _row(sections, "assurance.monitor", "interval_minutes").type == "integer, 1 to 720"
    assert _row(sections, "replicas", "snapshot_retention").type.startswith("table: [`[replicas.snapshot_retention]`]")
    assert _index(sections)["failover.new_buckets"].title == "[[replicas]]"  # the same keys, rendered once


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_key_an_example_writes_is_in_the_reference(example: Path) -> None:
    index = _index(config_sections())
    missing: list[str] = []

    def visit(path: str, table: dict[str, Any]) -> None:
        keys = {r.key for r in index[path].rows}
        for key, value in table.items():
            where = f"{path}.{key}" if path else key
            if key not in keys:
                missing.append(where)
            elif where in index:
                for entry in value if isinstance(value, list) else [value]:
                    visit(where, entry)

    visit("", tomllib.loads(example.read_text(encoding="utf-8")))
    assert missing == []


def test_every_output_field_is_in_the_reference() -> None:
    index = _index(output_sections())
    assert set(index) >= {"kit_source", "kit_replica", "kit_recovery", "kit_organization", "kit_source.failover"}
    assert [r.key for r in index["kit_replica"].rows] == list(ReplicaOut.model_fields)
    assert "| `source_id` | string or null; optional |" in outputs_page()


def test_every_key_a_builder_writes_is_declared_and_an_undeclared_one_is_refused() -> None:
    """One declaration: what the stacks export (`outputs_doc`, the builders the stacks call) is the model's, every
    key of it in the reference; a builder's key the model does not declare is refused, not dropped."""
    cfg = load_config(REPO / "examples" / "seed.toml")
    doc = outputs_doc(cfg)
    page = outputs_page()
    for stack in doc.values():
        for output, value in stack.items():
            assert all(f"| `{key}` |" in page for key in value), output
    source = doc["source"]["kit_source"]
    assert source["partition_by"] == {"analytics.orders": ["month(order_date)"]}
    with pytest.raises(OutputsError, match=r"SourceOut: .* at \['partition_spec'\]"):
        declared(SourceOut, {**source, "partition_spec": {}})


def test_write_then_check_on_a_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", "--root", str(tmp_path)]) == 1
    assert "2 page(s) stale" in capsys.readouterr().out
    assert main(["--write", "--root", str(tmp_path)]) == 0
    assert main(["--check", "--root", str(tmp_path)]) == 0
    page = tmp_path / OUTPUTS_PAGE
    page.write_text(page.read_text(encoding="utf-8").replace("Id of the replica-protection SCP.", "Stale."))
    assert main(["--check", "--root", str(tmp_path)]) == 1
    assert "+| `policy_id` | string | Id of the replica-protection SCP. |" in capsys.readouterr().out
