"""The failover topology synthesized from examples/failover/*.toml, against the normal topology of the
same kit (examples/*.toml): no stack of the failed Region, nothing `prevent_destroy` guards replaced, and the
documents deployed are exactly the builders' (`policies/failover.py`), byte for byte where the failover tool applies
the same document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra.lifecycle import PROTECTED_TYPES
from s3tables_kit.policies import failover as failover_policies
from s3tables_kit.policies import parts, pipeline, vault
from s3tables_kit.policies.documents import compact_json, guardrail_attachments
from s3tables_kit.policies.model import doc
from s3tables_kit.topology.config import KitConfig, load_config
from s3tables_kit.topology.failover import failover_topology
from tests.synth_fixtures import attached_scps_per_target

ROOT = Path(__file__).resolve().parent.parent
PAIRS = {"seed": "demo-dest-tablebucket", "multi-account": "lakehouse-replica-euc1"}
DOCUMENT_ATTRIBUTES = {"resource_policy", "policy", "content"}  # what a failover may change in place


def _synth(config: Path, tmp: Path) -> dict[str, dict[str, Any]]:
    from s3tables_kit.infra.golden import synth_example

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
            assert site != ([cfg.sources[0].account_id], cfg.sources[0].region), (
                f"{stack_id} deploys to the failed Region"
            )
        assert cfg.sources[0].bucket_arn not in json.dumps(stack.get("resource", {})) or stack_id == "organization", (
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
    # The recovery stack keeps every resource at its address; only what it reads changes, in place: the recovery
    # role's permissions and the rehearsal schedule's job arguments (a replica of the new source).
    before, after = resources(normal["recovery"]), resources(fo["recovery"])
    assert set(after) == set(before)
    changed = {a: sorted(k for k in before[a] if before[a][k] != after[a].get(k)) for a in before}
    changed = {a: keys for a, keys in changed.items() if keys}
    assert {a.split(".", 1)[0]: keys for a, keys in changed.items()} == {
        "aws_iam_role_policy": ["policy"],
        "aws_scheduler_schedule": ["target"],
    }
    (schedule,) = [a for a in changed if a.startswith("aws_scheduler_schedule.")]
    old_target, new_target = before[schedule]["target"], after[schedule]["target"]
    assert {k for k in old_target if old_target[k] != new_target[k]} == {"input"}


@pytest.mark.parametrize("name", list(PAIRS))
def test_deployed_documents_are_the_builders(name: str, synths: dict[str, Any]) -> None:
    cfg = cfg_of(name)
    topo = failover_topology(cfg)
    fo = synths[f"failover/{name}"]
    promoted = fo[f"replica-{topo.promoted.bucket}"]
    docs = failover_policies.failover_documents(cfg, topo.promoted.bucket)
    # The promoted bucket policy: byte-identical to what the failover tool puts.
    assert only(promoted, "aws_s3tables_table_bucket_policy")["resource_policy"] == docs.bucket_policy_json()
    for d in topo.destinations:
        dest = fo[f"replica-{d.bucket}"]
        got = json.loads(only(dest, "aws_s3tables_table_bucket_policy")["resource_policy"])
        assert got == failover_policies.destination_bucket_policy(cfg, topo, d)
    for r in topo.retained:
        from s3tables_kit.policies.documents import replica_bucket_policy

        got = json.loads(only(fo[f"replica-{r.bucket}"], "aws_s3tables_table_bucket_policy")["resource_policy"])
        assert got == replica_bucket_policy(cfg, r)
    # the guardrail and, beside it, the pipeline's identity layer, attached to the same roles
    acct = topo.promoted.account_id
    policies = {b["name"]: json.loads(b["policy"]) for b in only_of(promoted, "aws_iam_policy")}
    wanted = {
        cfg.guardrail_policy_name: failover_policies.guardrail(cfg, topo, acct),
        cfg.pipeline_guardrail_policy_name: failover_policies.pipeline_guardrail(cfg, topo, acct),
    }
    in_parts = {  # each managed policy deployed in the parts its builder's document packs into
        parts.part_name(name, k): part for name, whole in wanted.items() for k, part in enumerate(parts.split(whole), 1)
    }
    assert policies == in_parts
    attached = sorted(b["role"] for b in only_of(promoted, "aws_iam_role_policy_attachment"))
    assert attached == sorted(len(in_parts) * guardrail_attachments(cfg, acct))
    roles = {b["name"]: b for b in resources(promoted).values() if "assume_role_policy" in b}
    role = roles[topo.replication_role_name]
    assert json.loads(role["assume_role_policy"]) == failover_policies.replication_role_trust(topo)
    scps = {b["name"]: b["content"] for b in resources(fo["organization"]).values() if "content" in b}
    assert scps == {
        cfg.scp_name: compact_json(failover_policies.service_control_policy(cfg, topo)),
        cfg.scp_guards_name: compact_json(failover_policies.service_control_policy_guards(cfg, topo)),
        failover_policies.scp_promoted_name(cfg): compact_json(
            failover_policies.service_control_policy_promoted(cfg, topo)
        ),
        # the vault's SCPs outlive a failover as the vault does, on their own accounts
        **{scp: compact_json(doc(*vault.scp_statements(cfg, name))) for name, scp, _ in vault.scps(cfg)},
        cfg.scp_pipeline_name: compact_json(failover_policies.service_control_policy_pipeline(cfg, topo)),
        cfg.rcp_name: compact_json(
            pipeline.resource_control_policy(cfg, failover_policies.kit_replication_roles(topo))
        ),
        # the vault's SCPs outlive a failover as the vault does, on their own accounts
        **{scp: compact_json(doc(*vault.scp_statements(cfg, name))) for name, scp, _ in vault.scps(cfg)},
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
    (fn,) = [
        f for f in only_of(promoted, "aws_lambda_function") if "KIT_MONITOR_MODE" not in f["environment"]["variables"]
    ]
    env = fn["environment"]["variables"]
    assert env["KIT_SOURCE_BUCKET_ARNS"] == topo.promoted.bucket_arn
    assert env["KIT_DESTINATION_BUCKET_ARNS"].split(",") == [d.bucket_arn for d in topo.destinations]
    assert env["KIT_NAME"] == f"{cfg.kit.name}-fo"
    names = {b.get("name") for b in resources(promoted).values()}
    assert f"{cfg.kit.name}-fo-replication-monitor" in names  # never the failed source's role name
    # its package declares the failover topology's replication and destination documents, as `audit` compares them
    from s3tables_kit.infra import packaging
    from s3tables_kit.infra.constructs.monitor import declared_document
    from s3tables_kit.infra.stacks.failover import failover_monitor_config
    from s3tables_kit.jobs.ops.audit_scope import default_bucket_policy_builder, scopes_of
    from s3tables_kit.jobs.ops.monitor_drift import Declared

    (scope,) = scopes_of(cfg, default_bucket_policy_builder())
    dests = {d.bucket_arn for d in topo.destinations}
    reviewed = {r.bucket_arn: doc for r, doc in scope.bucket_policies if r.bucket_arn in dests}
    mon_cfg = failover_monitor_config(cfg, topo)
    declared = declared_document(mon_cfg, mon_cfg.sources[0], reviewed)
    packaged = Declared.from_json(declared)
    assert (packaged.replication, packaged.replica_bucket_policies) == (scope.declared, reviewed)
    assert packaged.source_bucket_policy is None  # the promoted bucket's policy: `audit` compares it
    assert set(packaged.replica_retention) == dests
    assert fn["source_code_hash"] == packaging.sha256_base64(packaging.monitor_zip(packaging.declared_bytes(declared)))


def test_the_promoted_key_keeps_its_replica_protection() -> None:
    cfg = cfg_of("multi-account")
    topo = failover_topology(cfg)
    (site,) = [s for s in failover_policies.key_sites(cfg, topo) if s.bucket == topo.promoted.bucket]
    sids = {s["Sid"] for s in failover_policies.key_policy(cfg, topo, site)["Statement"]}
    assert {"DenyKeyDeletionExceptBreakGlass", "DenyKeyPolicyChangeExceptBreakGlass"} <= sids
    assert {"AllowFailoverReplicationRoleReadSource", "AllowFailoverWritersUseKey"} <= sids


@pytest.mark.parametrize("name", list(PAIRS))
def test_the_reviewers_plan_shows_no_replacement(name: str, synths: dict[str, Any]) -> None:
    from s3tables_kit.infra.failover_plan import compare

    plans, not_planned = compare(synths[name], synths[f"failover/{name}"])
    assert not_planned == ["source"]
    assert not any(p.replaced or p.dropped for p in plans)
    promoted = next(p for p in plans if p.stack == f"replica-{PAIRS[name]}")
    assert any(a.startswith("aws_s3tables_table_bucket_policy.") for a in promoted.updated)
    assert any(a.startswith("aws_s3tables_table_bucket_replication.") for a in promoted.added)


def test_the_plan_refuses_a_replaced_protected_resource(synths: dict[str, Any]) -> None:
    """The comparison can fail: a renamed promoted bucket (a replacement) and a lost bucket are both REPLACED."""
    import copy as _copy

    from s3tables_kit.infra.failover_plan import compare

    fo = _copy.deepcopy(synths["failover/seed"])
    buckets = fo["replica-demo-dest-tablebucket"]["resource"]["awscc_s3tables_table_bucket"]
    (body,) = buckets.values()
    body["table_bucket_name"] = "demo-dest-tablebucket-2"
    del fo["recovery"]["resource"]["awscc_s3tables_table_bucket"]
    plans, _ = compare(synths["seed"], fo)
    replaced = {p.stack: p.replaced for p in plans if p.replaced}
    assert set(replaced) == {"replica-demo-dest-tablebucket", "recovery"}


def _args(stack: dict[str, Any], job: str = "rehearsal") -> list[str]:
    (schedule,) = [s for s in only_of(stack, "aws_scheduler_schedule") if job in s["name"]]
    args: list[str] = json.loads(schedule["target"]["input"])["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    return args


def before_backup(stack: dict[str, Any]) -> str:
    args = _args(stack, "vault-backup")
    return args[args.index("--replica-warehouse") + 1]


@pytest.mark.parametrize("name", list(PAIRS))
def test_recovery_and_its_rehearsal_follow_the_new_source(name: str, synths: dict[str, Any]) -> None:
    """In the failover topology the rehearsal and the recovery role read a replica OF THE NEW SOURCE (a destination
    of the promoted bucket, in the recovery account), not the promoted bucket, which is now the writable source."""
    cfg = cfg_of(name)
    topo = failover_topology(cfg)
    reads = topo.recovery_replica
    assert reads is not None and reads in topo.destinations
    assert cfg.recovery.replica == topo.promoted.bucket != reads.bucket  # both examples recover from the promoted one
    assert reads.account_id == cfg.recovery_replica.account_id
    normal, fo = synths[name]["recovery"], synths[f"failover/{name}"]["recovery"]
    # The rehearsal: reads the new replica (its Region), writes the recovery bucket (which has not moved).
    before, args = _args(normal), _args(fo)
    assert before[before.index("--replica-warehouse") + 1] == topo.promoted.bucket_arn
    assert args[args.index("--replica-warehouse") + 1] == reads.bucket_arn
    assert args[args.index("--replica-region") + 1] == reads.region != topo.promoted.region
    assert args[args.index("--target-warehouse") + 1] == cfg.recovery_bucket_arn
    assert args[args.index("--target-region") + 1] == args[args.index("--metrics-region") + 1] == topo.promoted.region
    assert topo.promoted.bucket_arn not in args
    if cfg.vault is not None and cfg.vault.tables:
        # The scheduled backup keeps reading the promoted bucket: it holds the very files the earlier points copied
        # (a replica of the new source holds copies under other paths, which the next backup would copy again).
        backup = _args(fo, "vault-backup")
        assert backup[backup.index("--replica-warehouse") + 1] == topo.promoted.bucket_arn == before_backup(normal)
    # The recovery role: the builder's document, deployed as is; reads only the new replica.
    policies = {b["name"]: json.loads(b["policy"]) for b in only_of(fo, "aws_iam_role_policy")}
    perms = policies["s3tables-recovery"]
    assert perms == failover_policies.recovery_role_permissions(cfg, topo)
    stmts = {st["Sid"]: st for st in perms["Statement"]}
    assert stmts["ReadReplicaCatalog"]["Resource"] == reads.bucket_arn
    assert stmts["ReadReplicaTables"]["Resource"] == f"{reads.bucket_arn}/table/*"
    allowed = json.dumps([st for st in perms["Statement"] if st["Effect"] == "Allow"])
    assert topo.promoted.bucket_arn not in allowed
    kept = stmts["DenyAllWritesToReplicas"]["NotResource"]  # writes nothing but the recovery bucket
    assert kept == [cfg.recovery_bucket_arn, f"{cfg.recovery_bucket_arn}/table/*"]
    for b in (topo.promoted, *topo.destinations, *topo.retained):  # never writes any bucket, promoted or new
        assert not any(b.bucket_arn.startswith(k.removesuffix("/table/*")) for k in kept)
    if reads.encryption.type == "kms":
        (kms,) = [st for st in perms["Statement"] if st["Sid"] == "DecryptReplicaTableData"]
        assert kms["Resource"] == f"arn:aws:kms:{reads.region}:{reads.account_id}:key/*"
    # The stack's output names the new replica's bucket (the jobs' `--outputs` recover from it).
    output = fo["output"]["kit_recovery"]["value"]["replica_table_bucket_arn"]
    assert f"replica-{reads.bucket}" in output and f"replica-{topo.promoted.bucket}" not in output


def test_replica_key_policies_follow_the_recovery_replica(synths: dict[str, Any]) -> None:
    """Only the key of the replica recovery reads lets the recovery role decrypt: the new replica's key gains the
    grant, the promoted key (now the source's) loses it; both are the builder's documents as deployed."""
    cfg = cfg_of("multi-account")
    topo = failover_topology(cfg)
    assert topo.recovery_replica is not None
    fo = synths["failover/multi-account"]
    grants = {}
    for r in (topo.promoted, *topo.destinations):
        keys = only_of(fo[f"replica-{r.bucket}"], "aws_kms_key")
        (key,) = [k for k in keys if k["description"] == f"S3 Tables bucket {r.bucket}"]
        policy = json.loads(key["policy"])
        site = next(s for s in failover_policies.key_sites(cfg, topo) if s.bucket == r.bucket)
        assert policy == failover_policies.key_policy(cfg, topo, site)
        grants[r.bucket] = [
            st["Principal"]["AWS"] for st in policy["Statement"] if st["Sid"] == "AllowRecoveryRoleReadReplica"
        ]
    assert grants == {
        topo.promoted.bucket: [],
        topo.recovery_replica.bucket: [cfg.recovery_role_arn],
        **{d.bucket: [] for d in topo.destinations if d != topo.recovery_replica},
    }


@pytest.mark.parametrize("name", [f"failover/{n}" for n in PAIRS])  # the normal ones: tests/test_lifecycle.py
def test_no_target_holds_more_than_three_kit_scps(name: str, synths: dict[str, Any]) -> None:
    """Organizations takes five SCPs per target: the kit keeps to three, leaving room for FullAWSAccess and one of
    the organization's own; the failover topology's promoted bucket SCP goes to its account alone. Validation's
    count (`s3tables_kit.topology.scp_targets`) is what Terraform attaches."""
    from s3tables_kit.topology.scp_targets import MAX_KIT_SCPS, kit_scps_per_target

    got = attached_scps_per_target(synths[name])
    assert got and max(got.values()) <= MAX_KIT_SCPS, got
    assert got == dict(kit_scps_per_target(load_config(ROOT / "examples" / f"{name}.toml")))


def test_a_promotion_that_would_put_a_fourth_kit_scp_on_a_target_is_refused() -> None:
    """The multi-account example's 333333333333 is a target of its own (holding the three): promoting its replica
    would attach the promoted bucket's SCP there as a fourth, so the configuration is refused, naming the fix."""
    import tomllib

    from s3tables_kit.topology.loader import ConfigError, parse_config

    text = (ROOT / "examples" / "failover" / "multi-account.toml").read_text()
    text = text.replace('promoted_bucket = "lakehouse-replica-euc1"', 'promoted_bucket = "lakehouse-replica-apse2"')
    text = text.replace('replicate_to = ["lakehouse-replica-use1", "lakehouse-failover-apse2"]',
                        'replicate_to = ["lakehouse-replica-euc1"]')  # fmt: skip
    with pytest.raises(ConfigError) as err:
        parse_config(tomllib.loads(text), base_dir=ROOT / "examples" / "failover")
    assert "account 333333333333 would hold 4 of the kit's SCPs" in str(err.value), err.value
