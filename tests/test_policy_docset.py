"""policies/docset.py: every document of a topology built once, looked up by purpose and site, placeholders bound.

The stacks deploy from this set (tests/test_infra_synth.py::test_stacks_deploy_exactly_the_reviewed_documents
compares the synthesized JSON with the per-document builders) and `s3tables_kit.policies.render` writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3tables_kit.policies import docset, documents, render
from s3tables_kit.policies.model import PolicyDoc
from s3tables_kit.topology.config import load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_the_set_is_what_render_writes(example: Path) -> None:
    cfg = load_config(example)
    ds = docset.build(cfg)
    rendered = sorted(p.stem for p in (render.RENDERED_DIR / example.stem).glob("*.json"))
    assert sorted(ds.names()) == rendered
    for d in ds.all():
        committed = (render.RENDERED_DIR / example.stem / f"{d.name}.json").read_text()
        assert render.render_json(ds.document(*_split(d.name))) == committed


def _split(name: str) -> tuple[str, str | None]:
    purpose, _, site = name.partition(docset.SITE_SEPARATOR)
    return purpose, site or None


def test_lookup_by_purpose_and_site() -> None:
    cfg = load_config(ROOT / "examples" / "multi-account.toml")
    ds = docset.build(cfg)
    for r in cfg.replicas:
        assert ds.document("replica-bucket-policy", r.bucket) == documents.replica_bucket_policy(cfg, r)
        assert ds.entry("replica-bucket-policy", r.bucket).account_id == r.account_id
    acct = cfg.replicas[0].account_id
    assert ds.document("replica-guardrail", acct) == documents.replica_guardrail(cfg, acct)
    assert ds.document("replication-role-permissions") == documents.replication_role_permissions(cfg, cfg.sources[0])
    with pytest.raises(KeyError, match=r"no policy document 'replica-bucket-policy--nope'.*replication-role-trust"):
        ds.document("replica-bucket-policy", "nope")
    # a key policy exists only where the kit creates the key
    created = {s.bucket for s in documents.key_sites(cfg)}
    for bucket in [cfg.sources[0].bucket, *(r.bucket for r in cfg.replicas), cfg.recovery.bucket]:
        assert (ds.optional("kms-key-policy", bucket) is not None) == (bucket in created), bucket


def test_lookups_return_copies() -> None:
    ds = docset.build(load_config(ROOT / "examples" / "seed.toml"))
    d = ds.document("replication-role-trust")
    d["Statement"].clear()
    assert ds.document("replication-role-trust")["Statement"]
    with pytest.raises(AttributeError):
        ds.docs = ()  # type: ignore[misc]


def test_placeholder_binding_gives_the_builder_document_with_the_deployed_value() -> None:
    cfg = load_config(ROOT / "examples" / "seed.toml")
    ds = docset.build(cfg)
    arn = "${aws_emrserverless_application.spark_application_1234.arn}"
    bound = ds.document("recovery-role-trust", emr_application_arn=arn)
    assert bound == documents.recovery_role_trust(cfg, arn)
    assert ds.document("recovery-role-trust") == documents.recovery_role_trust(cfg)  # the rendered form
    with pytest.raises(KeyError, match="unknown placeholder binding 'application_id'"):
        ds.document("recovery-role-trust", application_id="x")
    with pytest.raises(ValueError, match="does not carry the placeholder"):
        ds.document("recovery-role-permissions", emr_application_arn=arn)


def test_names_are_unique() -> None:
    d = PolicyDoc("x--a", "identity", "111122223333", "somewhere", {"Version": "2012-10-17", "Statement": []})
    with pytest.raises(ValueError, match=r"share a name: \['x--a'\]"):
        docset.DocumentSet((d, d))


FAILOVER_EXAMPLES = sorted((ROOT / "examples" / "failover").glob("*.toml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_the_normal_topology_deploys_its_own_documents(example: Path) -> None:
    """Before a failover nothing resolves elsewhere: the candidates are reviewed, not deployed."""
    assert docset.build(load_config(example)).deploys == ()


@pytest.mark.parametrize("example", FAILOVER_EXAMPLES, ids=lambda p: p.stem)
def test_the_failover_topology_deploys_the_reviewed_promotion(example: Path) -> None:
    """One document set: the stacks of the failover topology read the one document set by the normal names, and the set
    resolves each to the configured promotion's reviewed `failover--<promoted>--*` document, built by the same
    builders (`s3tables_kit.policies.failover`)."""
    from s3tables_kit.policies import failover as failover_policies
    from s3tables_kit.topology.failover import failover_topology

    cfg = load_config(example)
    topo = failover_topology(cfg)
    ds = docset.build(cfg)
    stem = f"failover--{topo.promoted.bucket}--"
    assert ds.deploys and all(name.startswith(stem) and name in ds.names() for _, name in ds.deploys)
    assert ds.document("replica-bucket-policy", topo.promoted.bucket) == failover_policies.promoted_bucket_policy(
        cfg, topo
    )
    for d in topo.destinations:  # new buckets too: the normal topology has no document for them
        assert ds.document("replica-bucket-policy", d.bucket) == failover_policies.destination_bucket_policy(
            cfg, topo, d
        )
    for r in topo.retained:  # a retained replica keeps its own
        assert ds.document("replica-bucket-policy", r.bucket) == documents.replica_bucket_policy(cfg, r)
    for acct in failover_policies.accounts(topo):
        whole = failover_policies.guardrail(cfg, topo, acct)  # deployed in parts under the quota, every statement
        assert [s for p in ds.parts("replica-guardrail", acct) for s in p["Statement"]] == whole["Statement"]
    for site in failover_policies.key_sites(cfg, topo):
        assert ds.document("kms-key-policy", site.bucket) == failover_policies.key_policy(cfg, topo, site)
    assert ds.document("replication-role-trust") == failover_policies.replication_role_trust(topo)
    assert ds.document("replication-role-permissions") == failover_policies.replication_role_permissions(cfg, topo)
    assert ds.document("recovery-role-permissions") == failover_policies.recovery_role_permissions(cfg, topo)
    assert ds.document("scp-protect-replicas") == failover_policies.service_control_policy(cfg, topo)
    assert ds.document("scp-protect-replica-guards") == failover_policies.service_control_policy_guards(cfg, topo)
    assert ds.document("scp-protect-promoted") == failover_policies.service_control_policy_promoted(cfg, topo)
    # what only the normal topology deploys stays as it is (the recovery bucket's key, the recovery trust)
    assert ds.document("recovery-role-trust") == documents.recovery_role_trust(cfg)
