"""Replicated source tables carry no AWS resource tags unless `[tags] on_replicated_source_tables = true`.

The replication limits say "Tables with tags or branches are not supported" and do not say whether AWS resource
tags count; until that is shown harmless, the kit creates replicated source tables through an aws provider alias
without `default_tags` (tags on buckets and every other resource stay). Checked on the synthesized Terraform JSON.
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import ConfigError, load_config, parse_config

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parents[1]
Stacks = dict[str, dict[str, Any]]


def _namespaces(source: dict[str, Any]) -> dict[str, str]:
    """Terraform reference of each namespace resource -> namespace name (tables refer to their namespace)."""
    return {
        f"${{aws_s3tables_namespace.{key}.namespace}}": ns["namespace"]
        for key, ns in source["resource"]["aws_s3tables_namespace"].items()
    }


def _by_name(source: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ns = _namespaces(source)
    return {f"{ns[t['namespace']]}.{t['name']}": t for t in source["resource"]["aws_s3tables_table"].values()}


def _providers(source: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {p.get("alias"): p for p in source["provider"]["aws"]}


@pytest.mark.parametrize("example", ["seed", "multi-account"])
def test_replicated_source_tables_are_created_without_tags(synthesized: dict[str, Stacks], example: str) -> None:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    source = synthesized[example]["source"]
    replicated = {f"{n}.{t}" for n, t in cfg.replicated_tables_of(cfg.sources[0])}
    tables = _by_name(source)
    assert replicated and replicated <= set(tables)
    for name, table in tables.items():
        if name in replicated:
            assert table.get("provider") == "aws.untagged", name
        else:
            assert "provider" not in table, name  # not replicated: the default provider, tags as before
        assert "tags" not in table, name
    providers = _providers(source)
    default, untagged = providers[None], providers["untagged"]
    assert default["default_tags"] == [{"tags": cfg.resource_tags}]
    assert "default_tags" not in untagged
    # the same account guard, Region and deploy role as the default provider: only the tags differ
    assert {k: v for k, v in untagged.items() if k != "alias"} == {
        k: v for k, v in default.items() if k != "default_tags"
    }
    # tags on the table bucket stay (awscc: the bucket carries them itself)
    bucket = next(iter(source["resource"]["awscc_s3tables_table_bucket"].values()))
    assert {t["key"]: t["value"] for t in bucket["tags"]} == cfg.resource_tags


def _synth_source(raw: dict[str, Any], outdir: Path) -> tuple[Any, dict[str, Any]]:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from s3tables_kit.infra.app import build_app

    cfg = parse_config(raw)
    build_app(cfg, outdir=str(outdir)).synth()
    return cfg, json.loads((outdir / "stacks" / "source" / "cdk.tf.json").read_text())


def _seed_with_an_unreplicated_table() -> dict[str, Any]:
    """The seed plus a second source table that `[replication] tables` does not name."""
    raw = tomllib.loads((ROOT / "examples" / "seed.toml").read_text(encoding="utf-8"))
    ns = raw["source"]["namespaces"][0]
    extra = copy.deepcopy(ns["tables"][0])
    extra["name"] = "scratch"
    ns["tables"].append(extra)
    return raw


def test_a_source_table_that_is_not_replicated_keeps_the_tags(tmp_path: Path) -> None:
    cfg, source = _synth_source(_seed_with_an_unreplicated_table(), tmp_path)
    tables = _by_name(source)
    assert set(tables) == {"analytics.orders", "analytics.scratch"}
    assert tables["analytics.orders"]["provider"] == "aws.untagged"
    assert "provider" not in tables["analytics.scratch"]
    assert _providers(source)[None]["default_tags"] == [{"tags": cfg.resource_tags}]


def test_opt_in_puts_the_tags_back_on_replicated_source_tables(tmp_path: Path) -> None:
    raw = _seed_with_an_unreplicated_table()
    raw.setdefault("tags", {})["on_replicated_source_tables"] = True
    cfg, source = _synth_source(raw, tmp_path)
    assert cfg.tags_on_source_tables and "on_replicated_source_tables" not in cfg.resource_tags
    assert all("provider" not in t for t in source["resource"]["aws_s3tables_table"].values())
    assert set(_providers(source)) == {None}  # no untagged provider at all
    assert _providers(source)[None]["default_tags"] == [{"tags": cfg.resource_tags}]


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_opt_in_must_be_a_boolean(value: Any) -> None:
    raw = tomllib.loads((ROOT / "examples" / "seed.toml").read_text(encoding="utf-8"))
    raw.setdefault("tags", {})["on_replicated_source_tables"] = value
    with pytest.raises(ConfigError, match=r"tags\.on_replicated_source_tables must be true or false"):
        parse_config(raw)


def test_default_is_off_and_false_is_accepted() -> None:
    raw = tomllib.loads((ROOT / "examples" / "seed.toml").read_text(encoding="utf-8"))
    assert parse_config(raw).tags_on_source_tables is False
    raw.setdefault("tags", {})["on_replicated_source_tables"] = False
    cfg = parse_config(raw)
    assert cfg.tags_on_source_tables is False and "on_replicated_source_tables" not in cfg.tags
