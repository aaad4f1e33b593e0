"""An estate (`[[sources]]`): many source buckets, each with its own destinations and replication, fan-in
into one vault; every invalid estate is refused naming the field and the rule, and `[source]` is an estate of one."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import PROTECTED, ConfigError, Kind, Replication, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]
ESTATE = tomllib.loads((ROOT / "examples/estate.toml").read_text())
SEED = tomllib.loads((ROOT / "examples/seed.toml").read_text())


def _estate(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(ESTATE)
    data.update(changes)
    return data


def _issues(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    return [str(i) for i in err.value.issues]


def _table(name: str) -> dict[str, Any]:
    return {"name": name, "columns": [{"name": "id", "type": "long"}]}


def test_the_estate_example_describes_three_sources_a_fan_in_vault_and_a_regional_replica() -> None:
    cfg = load_config(ROOT / "examples/estate.toml")
    assert cfg.scheme.key == "sources"
    assert [s.stack_id for s in cfg.sources] == ["source-sales-euw1", "source-marketing-euw1", "source-ops-use1"]
    assert {(s.account_id, s.region) for s in cfg.sources} == {
        ("111111111111", "eu-west-1"),
        ("555555555555", "us-east-1"),
    }
    vault, regional = cfg.replicas
    assert [s.id for s in cfg.sources_into(vault)] == ["sales-euw1", "marketing-euw1", "ops-use1"]
    assert [s.id for s in cfg.sources_into(regional)] == ["sales-euw1"]
    assert cfg.tables_into(vault) == [
        ("acct111111111111_sales", "orders"),
        ("acct111111111111_marketing", "campaigns"),
        ("acct555555555555_ops", "incidents"),
    ]
    assert cfg.replication_role_arns_into(regional) == (
        "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication",
    )
    # Each source has its own role (two sources share an account and Region: names must differ).
    assert len(set(cfg.replication_role_arns)) == 3


def test_each_source_has_its_own_destinations_and_names() -> None:
    cfg = load_config(ROOT / "examples/estate.toml")
    marketing = cfg.sources[1]
    assert [r.bucket for r in cfg.destinations_of(marketing)] == ["estate-vault-euc1"]
    assert cfg.replication_of(marketing).mode == "tables" and cfg.replicated_tables_of(marketing) == [
        ("acct111111111111_marketing", "campaigns")
    ]
    assert cfg.name_prefix_of(marketing) == "estate-marketing-euw1"
    assert cfg.replication_role_name_of(marketing) == "estate-marketing-euw1-s3tables-replication"
    assert cfg.kit.name == "estate" and cfg.resource_tags["kit"] == "estate"  # tags stay the estate's


def test_a_removed_source_whose_replica_recovery_still_names_is_one_line_naming_the_field() -> None:
    """The adopter's bad edit: the sales source and its regional replica removed, `[recovery] replica` left naming
    that replica. The cross-field checks ask about every source, never "the" source: a ConfigError, no traceback."""
    data = _estate(recovery={**ESTATE["recovery"], "replica": "estate-sales-replica-euc1"})
    data["sources"] = [s for s in data["sources"] if s["id"] != "sales-euw1"]
    data["replicas"] = [r for r in data["replicas"] if r["bucket"] != "estate-sales-replica-euc1"]
    issues = _issues(data)
    assert any(i.startswith("recovery.replica:") and "estate-sales-replica-euc1" in i for i in issues), issues


def test_source_is_an_estate_of_one_and_unchanged() -> None:
    seed = load_config(ROOT / "examples/seed.toml")
    (src,) = seed.sources
    assert seed.scheme.key == "source" and seed.kind == PROTECTED and not seed.kind.promoted
    assert src.replication == Replication.model_validate(SEED["replication"]) and src.replicate_to == tuple(
        r.bucket for r in seed.replicas
    )
    assert src.stack_id == "source" and seed.name_prefix_of(src) == "seed"
    assert seed.replication_role_name_of(src) == "seed-s3tables-replication"
    assert seed.destinations_of(src) == seed.replicas


def test_the_promoted_topology_is_a_kind_chosen_at_load_and_never_written() -> None:
    promoted = load_config(ROOT / "examples/failover/seed.toml")
    assert promoted.failover is not None and promoted.kind == Kind(promoted.failover.promoted_bucket)
    assert promoted.kind.promoted and promoted.kind.promoted_bucket == "demo-dest-tablebucket"
    assert any(i.startswith("kind:") and "unknown key" in i for i in _issues({**SEED, "kind": "promoted"}))


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda d: d.update(source=SEED["source"]), "sources", "not both"),
        (lambda d: d.update(replication={"mode": "bucket"}), "replication", "only valid with [source]"),
        (lambda d: d["sources"][0].pop("id"), "sources[0].id", "required"),
        (lambda d: d["sources"][1].update(id="sales-euw1"), "sources[1].id", "duplicate source id"),
        (lambda d: d.update(kit={"name": "estate-platform-eu"}), "sources[0].id", "at most 24 characters"),
        (lambda d: d["sources"][0].update(id="Sales"), "sources[0].id", "lowercase"),
        (lambda d: d["sources"][2].pop("replication"), "sources[2].replication", "required"),
        (lambda d: d["sources"][2].update(replicate_to=[]), "sources[2].replicate_to", "needs 1 to 5"),
        (
            lambda d: d["sources"][2].update(replicate_to=["nope"]),
            "sources[2].replicate_to[0]",
            "not the bucket of any entry in replicas",
        ),
        (
            lambda d: d["sources"][0].update(replicate_to=["estate-vault-euc1"]),
            "replicas[1].bucket",
            "no source replicates to",
        ),
        (
            lambda d: d["sources"][1]["replication"].update(tables=["sales.orders"]),
            "sources[1].replication.tables[0]",
            "not a table declared under sources[1].namespaces",
        ),
        (
            lambda d: d["sources"][2].update(account_id="444444444444", deploy_role_arn=None),
            "sources[2].account_id",
            "management account",
        ),
    ],
    ids=[
        "both-forms",
        "replication-beside-sources",
        "id-missing",
        "id-duplicate",
        "id-too-long-with-kit-name",
        "id-shape",
        "replication-missing",
        "replicate-to-empty",
        "replicate-to-unknown",
        "replica-not-fed",
        "replication-table-not-of-this-source",
        "source-in-management-account",
    ],
)
def test_invalid_estates_name_the_field_and_the_rule(change: Any, field: str, words: str) -> None:
    data = _estate()
    change(data)
    if data["sources"][2].get("deploy_role_arn", "x") is None:
        del data["sources"][2]["deploy_role_arn"]
    issues = _issues(data)
    assert any(i.startswith(f"{field}:") and words in i for i in issues), issues


def test_estate_keys_are_refused_under_source() -> None:
    data = copy.deepcopy(SEED)
    data["source"]["replicate_to"] = ["demo-dest-tablebucket"]
    issues = _issues(data)
    assert any(i.startswith("source.replicate_to:") and "only valid in [[sources]]" in i for i in issues), issues


def test_source_keeps_the_five_destination_limit_and_an_estate_applies_it_per_source() -> None:
    data = copy.deepcopy(SEED)
    base = data["replicas"][0]
    data["replicas"] = [{**base, "bucket": f"demo-dest-{i}", "region": "us-west-2"} for i in range(6)]
    data["recovery"]["replica"] = "demo-dest-0"
    assert any(i.startswith("replicas:") and "at most 5" in i for i in _issues(data))
    estate = _estate()
    vault = estate["replicas"][0]
    extra = [{**vault, "bucket": f"estate-extra-{i}", "region": "eu-north-1"} for i in range(5)]
    estate["replicas"] += extra
    estate["sources"][0]["replicate_to"] += [r["bucket"] for r in extra]  # 7 for one source
    assert any(i.startswith("sources[0].replicate_to:") and "needs 1 to 5" in i for i in _issues(estate))


def test_fan_in_of_two_same_named_tables_into_one_bucket_is_refused() -> None:
    # marketing shares sales' account, so its namespaces carry the same prefix (another account's never collide)
    data = _estate()
    data["sources"][1]["namespaces"] = [{"name": "acct111111111111_sales", "tables": [_table("orders")]}]
    data["sources"][1]["replication"] = {"mode": "bucket"}
    issues = _issues(data)
    assert any(
        i.startswith("sources[1].namespaces[0].tables[0].name:")
        and "acct111111111111_sales.orders is also replicated into 'estate-vault-euc1'" in i
        for i in issues
    ), issues
    # The same names into different buckets are fine: marketing replicates only to a bucket of its own.
    data["replicas"].append({**data["replicas"][0], "bucket": "estate-mkt-vault-euc1"})
    data["sources"][1]["replicate_to"] = ["estate-mkt-vault-euc1"]
    assert parse_config(data).tables_into(parse_config(data).replicas[2]) == [("acct111111111111_sales", "orders")]


def test_a_table_not_replicated_by_a_tables_mode_source_does_not_collide() -> None:
    data = _estate()
    # marketing declares a second table named like sales' but replicates only campaigns (tables mode).
    data["sources"][1]["namespaces"].append({"name": "sales", "tables": [_table("orders")]})
    assert parse_config(data).scheme.key == "sources"


def test_more_tables_into_one_bucket_than_a_bucket_holds_is_refused() -> None:
    data = _estate()
    many = lambda prefix: [{"name": prefix, "tables": [_table(f"t{i}") for i in range(5001)]}]  # noqa: E731
    data["sources"][1]["namespaces"] = many("marketing")
    data["sources"][1]["replication"] = {"mode": "bucket"}
    data["sources"][2]["namespaces"] = many("ops")
    issues = _issues(data)
    assert any(
        i.startswith("replicas[0]:") and "tables replicated into 'estate-vault-euc1' exceed" in i for i in issues
    )
    assert not any(i.startswith("sources[") and "exceed" in i for i in issues), issues  # 5,001 per source is fine


def test_more_than_ten_table_buckets_in_one_account_and_region_is_refused() -> None:
    data = _estate()
    template = data["sources"][1]
    for i in range(9):  # 2 sources there already: 11 in 111111111111/eu-west-1
        data["sources"].append(
            {
                **template,
                "id": f"extra-{i}",
                "bucket": f"estate-extra-{i}",
                "namespaces": [],
                "replication": {"mode": "bucket"},
            }
        )
    issues = _issues(data)
    assert any("11 table buckets in 111111111111/eu-west-1 exceed the quota of 10" in i for i in issues), issues


def test_a_fan_in_vault_is_never_promoted() -> None:
    data = _estate()
    data["failover"] = {
        "writer_roles": ["arn:aws:iam::666666666666:role/vault-writer"],
        "promoted_bucket": "estate-vault-euc1",
        "replicate_to": ["estate-sales-replica-euc1"],
    }
    issues = _issues(data)
    assert any(i.startswith("failover.promoted_bucket:") and "receives from 3 sources" in i for i in issues), issues


def test_the_protection_tag_is_the_kits_own() -> None:
    data = _estate(tags={"kit-protection": "mine"})
    assert any(i.startswith("tags:") and "protection tag" in i for i in _issues(data))


def test_an_estate_leaves_room_for_the_protection_tag() -> None:
    tags = {f"t{i}": "v" for i in range(47)}
    assert parse_config(_estate(tags=tags)).scheme.key == "sources"  # 47 + kit, managed-by, kit-protection = 50
    tags["t47"] = "v"
    assert any(i.startswith("tags:") and "at most 47 tags in an estate" in i for i in _issues(_estate(tags=tags)))


def test_the_promotion_of_one_sources_replica_is_built_from_that_source_and_retains_the_vault() -> None:
    """The failover tool's plan of an estate (no `[failover] promoted_bucket`): the regional replica of sales is
    promoted from sales (its replication role is the failed source's); the fan-in vault is retained, never a
    destination, so its documents (every feeding source's grants) are not the promotion's to replace."""
    from s3tables_kit.topology.failover import failover_topology, promotion_source

    cfg = parse_config(ESTATE)
    topo = failover_topology(cfg, "estate-sales-replica-euc1")
    assert topo.failed_source.id == "sales-euw1"
    assert topo.failed_replication_role_arn == "arn:aws:iam::111111111111:role/estate-sales-euw1-s3tables-replication"
    assert topo.destinations == () and [r.bucket for r in topo.retained] == ["estate-vault-euc1"]
    assert topo.recovery_replica is None
    assert promotion_source(cfg, "estate-sales-replica-euc1").id == "sales-euw1"
    for bucket in ("estate-vault-euc1", "estate-missing"):
        with pytest.raises(ValueError, match=r"receives from 3 sources|not the bucket of any entry"):
            failover_topology(cfg, bucket)
