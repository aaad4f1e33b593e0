"""The failover topology (issue 17) synthesized from examples/failover/*.toml, against the normal topology of the
same kit (examples/*.toml): no stack of the failed Region, nothing `prevent_destroy` guards replaced, and the
documents deployed are exactly the builders' (`policies/failover.py`), byte for byte where the failover tool applies
the same document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.lifecycle import PROTECTED_TYPES
from policies import failover as F
from policies.documents import compact_json
from topology.config import KitConfig, load_config
from topology.failover import failover_topology

ROOT = Path(__file__).resolve().parent.parent
PAIRS = {"seed": "demo-dest-tablebucket", "multi-account": "lakehouse-replica-euc1"}
DOCUMENT_ATTRIBUTES = {"resource_policy", "policy", "content"}  # what a failover may change in place


def _synth(config: Path, tmp: Path) -> dict[str, dict[str, Any]]:
    from infra.golden import synth_example

    return synth_example(config, tmp)


@pytest.fixture(scope="module")
def synths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    out = {}
    for name in PAIRS:
        out[name] = _synth(ROOT / "examples" / f"{name}.toml", tmp_path_factory.mktemp(f"normal-{name}"))
        out[f"failover/{name}"] = _synth(
            ROOT / "examples" / "failover" / f"{name}.toml", tmp_path_factory.mktemp(f"failover-{name}")
        )
    return out


def cfg_of(name: str) -> KitConfig:
    return load_config(ROOT / "examples" / "failover" / f"{name}.toml")


def resources(stack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{t}.{n}": body for t, rs in stack.get("resource", {}).items() for n, body in rs.items()}


def only(stack: dict[str, Any], rtype: str) -> dict[str, Any]:
    found = [body for t, rs in stack.get("resource", {}).items() if t == rtype for body in rs.values()]
    assert len(found) == 1, f"{rtype}: {len(found)}"
    return found[0]


@pytest.mark.parametrize("name", list(PAIRS))
def test_promoted_bucket_is_the_one_configured(name: str) -> None:
    assert cfg_of(name).failover is not None
    assert failover_topology(cfg_of(name)).promoted.bucket == PAIRS[name]


@pytest.mark.parametrize("name", list(PAIRS))
def test_no_stack_of_the_failed_region(name: str, synths: dict[str, Any]) -> None:
    cfg = cfg_of(name)
    fo = synths[f"failover/{name}"]
    assert "source" not in fo
    for stack_id, stack in fo.items():
        for provider in stack.get("provider", {}).get("aws", []):
            site = (provider.get("allowed_account_ids"), provider.get("region"))
            assert site != ([cfg.source.account_id], cfg.source.region), f"{stack_id} deploys to the failed Region"
        assert cfg.source.bucket_arn not in json.dumps(stack.get("resource", {})) or stack_id == "organization", (
            f"{stack_id} names the failed source bucket"
        )


@pytest.mark.parametrize("name", list(PAIRS))
def test_nothing_protected_is_replaced(name: str, synths: dict[str, Any]) -> None:
    """Every protected resource of every stack the failover topology keeps is still there, at the same Terraform
    address, with the same attributes except its policy document (updated in place), and still prevent_destroy."""
    normal, fo = synths[name], synths[f"failover/{name}"]
    kept = set(normal) & set(fo)
    assert kept >= {"recovery", f"replica-{PAIRS[name]}"}
    checked = 0
    for stack_id in sorted(kept):
        before, after = resources(normal[stack_id]), resources(fo[stack_id])
        for address, body in before.items():
            if address.split(".", 1)[0] not in PROTECTED_TYPES:
                continue
            assert address in after, f"{stack_id}: {address} would be destroyed"
            same = {k: v for k, v in body.items() if k not in DOCUMENT_ATTRIBUTES}
            now = {k: v for k, v in after[address].items() if k not in DOCUMENT_ATTRIBUTES}
            assert now == same, f"{stack_id}: {address} changes more than its document"
            assert after[address]["lifecycle"]["prevent_destroy"] is True
            checked += 1
    assert checked >= 5
    # The recovery stack does not change at all.
    assert fo["recovery"]["resource"] == normal["recovery"]["resource"]


@pytest.mark.parametrize("name", list(PAIRS))
def test_deployed_documents_are_the_builders(name: str, synths: dict[str, Any]) -> None:
    cfg = cfg_of(name)
    topo = failover_topology(cfg)
    fo = synths[f"failover/{name}"]
    promoted = fo[f"replica-{topo.promoted.bucket}"]
    docs = F.failover_documents(cfg, topo.promoted.bucket)
    # The promoted bucket policy: byte-identical to what the failover tool puts.
    assert only(promoted, "aws_s3tables_table_bucket_policy")["resource_policy"] == docs.bucket_policy_json()
    for d in topo.destinations:
        dest = fo[f"replica-{d.bucket}"]
        got = json.loads(only(dest, "aws_s3tables_table_bucket_policy")["resource_policy"])
        assert got == F.destination_bucket_policy(cfg, topo, d)
    for r in topo.retained:
        from policies.documents import replica_bucket_policy

        got = json.loads(only(fo[f"replica-{r.bucket}"], "aws_s3tables_table_bucket_policy")["resource_policy"])
        assert got == replica_bucket_policy(cfg, r)
    guardrail = json.loads(only(promoted, "aws_iam_policy")["policy"])
    assert guardrail == F.guardrail(cfg, topo, topo.promoted.account_id)
    roles = {b["name"]: b for b in resources(promoted).values() if "assume_role_policy" in b}
    role = roles[topo.replication_role_name]
    assert json.loads(role["assume_role_policy"]) == F.replication_role_trust(topo)
    scps = {b["name"]: b["content"] for b in resources(fo["organization"]).values() if "content" in b}
    assert scps == {
        cfg.scp_name: compact_json(F.service_control_policy(cfg, topo)),
        cfg.scp_guards_name: compact_json(F.service_control_policy_guards(cfg, topo)),
        F.scp_promoted_name(cfg): compact_json(F.service_control_policy_promoted(cfg, topo)),
    }
    for content in scps.values():
        assert len(content) <= 5120


def only_of(stack: dict[str, Any], rtype: str) -> list[dict[str, Any]]:
    return [body for t, rs in stack.get("resource", {}).items() if t == rtype for body in rs.values()]


@pytest.mark.parametrize("name", list(PAIRS))
def test_promoted_bucket_replicates_and_is_monitored(name: str, synths: dict[str, Any]) -> None:
    cfg = cfg_of(name)
    topo = failover_topology(cfg)
    promoted = synths[f"failover/{name}"][f"replica-{topo.promoted.bucket}"]
    (replication,) = only_of(promoted, "aws_s3tables_table_bucket_replication")
    assert len(replication["rule"][0]["destination"]) == len(topo.destinations) >= 1
    assert "failover-replication_role" in replication["role"]
    (fn,) = only_of(promoted, "aws_lambda_function")
    env = fn["environment"]["variables"]
    assert env["KIT_SOURCE_BUCKET_ARNS"] == topo.promoted.bucket_arn
    assert env["KIT_DESTINATION_BUCKET_ARNS"].split(",") == [d.bucket_arn for d in topo.destinations]
    assert env["KIT_NAME"] == f"{cfg.kit.name}-fo"
    names = {b.get("name") for b in resources(promoted).values()}
    assert f"{cfg.kit.name}-fo-replication-monitor" in names  # never the failed source's role name


def test_the_promoted_key_keeps_its_replica_protection() -> None:
    cfg = cfg_of("multi-account")
    topo = failover_topology(cfg)
    (site,) = [s for s in F.key_sites(cfg, topo) if s.bucket == topo.promoted.bucket]
    sids = {s["Sid"] for s in F.key_policy(cfg, topo, site)["Statement"]}
    assert {"DenyKeyDeletionExceptBreakGlass", "DenyKeyPolicyChangeExceptBreakGlass"} <= sids
    assert {"AllowFailoverReplicationRoleReadSource", "AllowFailoverWritersUseKey"} <= sids


@pytest.mark.parametrize("name", list(PAIRS))
def test_the_reviewers_plan_shows_no_replacement(name: str, synths: dict[str, Any]) -> None:
    from infra.failover_plan import compare

    plans, not_planned = compare(synths[name], synths[f"failover/{name}"])
    assert not_planned == ["source"]
    assert not any(p.replaced or p.dropped for p in plans)
    promoted = next(p for p in plans if p.stack == f"replica-{PAIRS[name]}")
    assert any(a.startswith("aws_s3tables_table_bucket_policy.") for a in promoted.updated)
    assert any(a.startswith("aws_s3tables_table_bucket_replication.") for a in promoted.added)


def test_the_plan_refuses_a_replaced_protected_resource(synths: dict[str, Any]) -> None:
    """The comparison can fail: a renamed promoted bucket (a replacement) and a lost bucket are both REPLACED."""
    import copy as _copy

    from infra.failover_plan import compare

    fo = _copy.deepcopy(synths["failover/seed"])
    buckets = fo["replica-demo-dest-tablebucket"]["resource"]["awscc_s3tables_table_bucket"]
    (body,) = buckets.values()
    body["table_bucket_name"] = "demo-dest-tablebucket-2"
    del fo["recovery"]["resource"]["awscc_s3tables_table_bucket"]
    plans, _ = compare(synths["seed"], fo)
    replaced = {p.stack: p.replaced for p in plans if p.replaced}
    assert set(replaced) == {"replica-demo-dest-tablebucket", "recovery"}
