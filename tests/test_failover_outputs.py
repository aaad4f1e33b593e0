"""The outputs contract of the failover topology: `outputs.json` of `cdktf deploy` of
examples/failover/*.toml parses as `KitOutputs`, with the promoted bucket as the source, so the ops tools run
unchanged; and `harden` builds, from those outputs alone, exactly the reviewed failover documents."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.ops.harden import default_table_policy_builder, desired_table_policy
from s3tables_kit.policies import failover as failover_policies
from s3tables_kit.policies.documents import example_table_arn, replica_table_policy_for
from s3tables_kit.policies.render import render_json
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.failover import failover_topology
from s3tables_kit.topology.outputs import KitOutputs, parse_outputs

pytestmark = pytest.mark.synth
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("seed", "multi-account")
TOKEN = re.compile(r"^\$\{.*\}$")


def cfg_of(name: str) -> KitConfig:
    return load_config(ROOT / "examples" / "failover" / f"{name}.toml")


@pytest.fixture(scope="module")
def synths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    from s3tables_kit.infra.golden import synth_example

    out = {}
    for name in EXAMPLES:
        out[name] = synth_example(ROOT / "examples" / "failover" / f"{name}.toml", tmp_path_factory.mktemp(name))
    out["normal/multi-account"] = synth_example(ROOT / "examples" / "multi-account.toml", tmp_path_factory.mktemp("n"))
    return out


def recovery_reads(cfg: KitConfig) -> Any:
    """The replica the recovery stack reads: a replica of the new source where the failover topology names one
    (`FailoverTopology.recovery_replica`), `recovery.replica` otherwise."""
    return getattr(failover_topology(cfg), "recovery_replica", None) or cfg.recovery_replica


def outputs_json(cfg: KitConfig, stacks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What `cdktf output '*'` writes after apply: each stack's `kit_*` outputs, Terraform references resolved.
    A bucket ARN resolves to the ARN its configured name gives (what S3 Tables returns); any other reference
    (a KMS key ARN) to a placeholder."""
    topo = failover_topology(cfg)
    arn_of_stack = {r.stack_id: r.bucket_arn for r in (*cfg.replicas, *topo.new_buckets)}
    arn_of_stack["recovery"] = cfg.recovery_bucket_arn

    def resolve(node: Any, stack: str, key: str = "") -> Any:
        if isinstance(node, dict):
            return {k: resolve(v, stack, k) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v, stack, key) for v in node]
        if isinstance(node, str) and TOKEN.match(node):
            if key == "table_bucket_arn":
                return arn_of_stack[stack]
            if key == "replica_table_bucket_arn":
                return recovery_reads(cfg).bucket_arn
            return f"resolved:{key}"
        return node

    return {
        name: {k: resolve(v["value"], name) for k, v in st.get("output", {}).items() if k.startswith("kit_")}
        for name, st in stacks.items()
    }


@pytest.fixture(scope="module")
def parsed(synths: dict[str, Any]) -> dict[str, KitOutputs]:
    return {name: parse_outputs(outputs_json(cfg_of(name), synths[name]), name) for name in EXAMPLES}


@pytest.mark.parametrize("name", EXAMPLES)
def test_outputs_parse_with_the_promoted_bucket_as_source(name: str, synths: dict[str, Any], parsed: Any) -> None:
    cfg = cfg_of(name)
    topo = failover_topology(cfg)
    out: KitOutputs = parsed[name]
    # kit_source comes from the promoted bucket's stack only (there is no source stack)
    assert [s for s, st in synths[name].items() if "kit_source" in st.get("output", {})] == [topo.promoted.stack_id]
    src = out.sources[0]
    assert (src.table_bucket_arn, src.table_bucket_name) == (topo.promoted.bucket_arn, topo.promoted.bucket)
    assert (src.account_id, src.region) == (topo.promoted.account_id, topo.promoted.region)
    assert src.replication_mode == "bucket"
    assert src.replication_role_arn == topo.replication_role_arn
    assert src.replication_role_arn.endswith(f":role/{cfg.kit.name}-fo-s3tables-replication")
    assert src.kit == f"{cfg.kit.name}-fo"  # the failover monitor publishes under Kit=<kit>-fo
    assert src.replicated_tables == [f"{n}.{t}" for n, t in cfg.replicated_tables_of(cfg.sources[0])]
    assert src.snapshot_retention.max_snapshot_age_hours == topo.promoted.snapshot_retention.max_snapshot_age_hours
    assert src.destinations == [d.bucket_arn for d in topo.destinations]
    assert src.failover is not None
    assert src.failover.failed_source_table_bucket_arn == cfg.sources[0].bucket_arn
    assert src.failover.failed_replication_role_arn == cfg.replication_role_arn_of(cfg.sources[0])
    assert src.failover.retained == [r.bucket_arn for r in topo.retained]
    # every bucket still exports kit_replica; the destinations are the source's replicas
    assert {r.table_bucket_arn for r in out.replicas} == {r.bucket_arn for r in (*cfg.replicas, *topo.new_buckets)}
    assert sorted(r.table_bucket_arn for r in out.destination_replicas) == sorted(src.destinations)
    assert out.recovery_replica.table_bucket_arn == recovery_reads(cfg).bucket_arn  # found among the replicas
    for r in out.replicas:
        want = (
            topo.replication_role_arn
            if r.table_bucket_arn in src.destinations
            else cfg.replication_role_arn_of(cfg.sources[0])
        )
        assert out.replication_role_for(r) == want
        assert out.is_failover_destination(r) == (r.table_bucket_arn in src.destinations)


def test_outputs_are_added_never_renamed(synths: dict[str, Any]) -> None:
    """Output names are state contract: every kit output of a stack the failover keeps is still there (cdktf's own
    `cross-stack-output-*` follow the references between stacks, which differ by design)."""
    normal, fo = synths["normal/multi-account"], synths["multi-account"]

    def kit_outputs(st: dict[str, Any]) -> set[str]:
        return {k for k in st.get("output", {}) if k.startswith("kit_")}

    for stack_id, st in normal.items():
        if stack_id == "source":
            continue
        assert kit_outputs(st) <= kit_outputs(fo[stack_id]), stack_id


def test_normal_outputs_have_no_failover_section(synths: dict[str, Any]) -> None:
    cfg = load_config(ROOT / "examples" / "multi-account.toml")
    doc = {
        name: {k: v["value"] for k, v in st.get("output", {}).items() if k.startswith("kit_")}
        for name, st in synths["normal/multi-account"].items()
    }
    assert "failover" not in doc["source"]["kit_source"]
    assert cfg.failover is None or cfg.failover.promoted_bucket is None


@pytest.mark.parametrize("name", EXAMPLES)
def test_harden_builds_the_failover_documents_from_the_outputs(name: str, parsed: Any) -> None:
    """Destinations: `destination_table_policy` of the failover documents; retained replicas (and the promoted
    bucket's tables not promoted): the replica document of the failed source, i.e. what they carry already."""
    cfg = cfg_of(name)
    topo = failover_topology(cfg)
    out: KitOutputs = parsed[name]
    by_arn = {r.bucket_arn: r for r in (*cfg.replicas, *topo.new_buckets)}
    seen = set()
    for rep_out in out.replicas:
        rep = by_arn[rep_out.table_bucket_arn]
        arn = example_table_arn(rep)
        got = desired_table_policy(out, rep_out, arn, default_table_policy_builder())
        if rep in topo.destinations:
            seen.add("destination")
            assert got == failover_policies.destination_table_policy(cfg, topo, rep, arn)
            assert topo.replication_role_arn in str(got) and cfg.replication_role_arn_of(cfg.sources[0]) not in str(got)
        else:
            seen.add("promoted" if rep == topo.promoted else "retained")
            assert got == replica_table_policy_for(cfg, rep, arn)
            assert topo.replication_role_arn not in str(got)
    assert seen >= {"destination", "promoted"}


def test_harden_document_is_byte_identical_to_the_rendered_one(parsed: Any) -> None:
    """A destination that is also a replica in the normal example: what harden puts on its tables (for the example
    table ARN) is, rendered, the reviewed file under policies/rendered/ byte for byte."""
    cfg = cfg_of("multi-account")
    topo = failover_topology(cfg)
    out: KitOutputs = parsed["multi-account"]
    dest = topo.existing_destinations[0]
    rendered = (
        ROOT / "policies/rendered/multi-account"
        / f"failover--{topo.promoted.bucket}--replica-table-policy--{dest.bucket}.json"
    )  # fmt: skip
    got = desired_table_policy(
        out, out.replica_by_arn(dest.bucket_arn), example_table_arn(dest), default_table_policy_builder()
    )
    assert render_json(got) == rendered.read_text(encoding="utf-8")
