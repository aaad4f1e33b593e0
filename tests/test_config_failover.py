"""The `[failover]` section: the examples load, the derived topology is right, and every invalid input
is refused with the field and the rule."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.topology.config import ConfigError, load_config, parse_config
from s3tables_kit.topology.failover import failover_topology

ROOT = Path(__file__).resolve().parents[1]
FO_MULTI = tomllib.loads((ROOT / "examples/failover/multi-account.toml").read_text())
FO_SEED = tomllib.loads((ROOT / "examples/failover/seed.toml").read_text())


def test_failover_examples_derive_the_promoted_topology() -> None:
    cfg = load_config(ROOT / "examples/failover/multi-account.toml")
    topo = failover_topology(cfg)
    assert topo.promoted.bucket == "lakehouse-replica-euc1"
    assert [d.bucket for d in topo.destinations] == ["lakehouse-replica-use1", "lakehouse-failover-apse2"]
    assert [d.bucket for d in topo.new_buckets] == ["lakehouse-failover-apse2"]
    assert [r.bucket for r in topo.retained] == ["lakehouse-replica-apse2"]
    assert topo.writer_roles == ("arn:aws:iam::222222222222:role/lakehouse-writer",)
    assert topo.replication_role_arn == "arn:aws:iam::222222222222:role/lakehouse-fo-s3tables-replication"
    assert topo.replication_roles_for(topo.retained[0]) == (
        "arn:aws:iam::111111111111:role/lakehouse-s3tables-replication",
    )
    assert topo.replication_roles_for(topo.destinations[0]) == (topo.replication_role_arn,)
    assert topo.replication_roles_for(topo.promoted) == ()  # nothing replicates into the promoted bucket
    seed = failover_topology(load_config(ROOT / "examples/failover/seed.toml"))
    assert seed.promoted.bucket == "demo-dest-tablebucket" and not seed.retained
    # same account as the failed source: the failover role never takes the source's role name
    assert seed.replication_role_name == "seed-fo-s3tables-replication"


def test_an_unconfigured_promotion_replicates_to_the_remaining_replicas() -> None:
    cfg = load_config(ROOT / "examples/multi-account.toml")
    assert cfg.failover is not None and cfg.failover.promoted_bucket is None
    topo = failover_topology(cfg, "lakehouse-replica-apse2")
    assert [d.bucket for d in topo.destinations] == ["lakehouse-replica-euc1", "lakehouse-replica-use1"]
    assert topo.writer_roles == ("arn:aws:iam::333333333333:role/lakehouse-writer",)
    with pytest.raises(ValueError, match="not the bucket of any entry in replicas"):
        failover_topology(cfg, "lakehouse-prod")


NEW = {
    "account_id": "222222222222",
    "region": "us-west-2",
    "bucket": "lakehouse-failover-usw2",
    "encryption": {"type": "sse-s3"},
    "snapshot_retention": {"max_snapshot_age_hours": 2160, "min_snapshots_to_keep": 10},
}

# (id, changes to [failover] of examples/failover/multi-account.toml, field, words of the rule)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("promoted not a replica", {"promoted_bucket": "lakehouse-prod"}, "failover.promoted_bucket",
     "not the bucket of any entry in replicas"),
    ("no destination", {"replicate_to": [], "new_buckets": []}, "failover.replicate_to", "needs 1 to 5"),
    ("six destinations", {"replicate_to": ["lakehouse-replica-use1", "lakehouse-replica-apse2",
                                            "lakehouse-failover-apse2", "a-1", "a-2", "a-3"]},
     "failover.replicate_to", "needs 1 to 5"),
    ("duplicate destination", {"replicate_to": ["lakehouse-replica-use1", "lakehouse-replica-use1",
                                                 "lakehouse-failover-apse2"]}, "failover.replicate_to", "listed twice"),
    ("promoted replicates to itself", {"replicate_to": ["lakehouse-replica-euc1", "lakehouse-failover-apse2"]},
     "failover.replicate_to[0]", "cannot replicate to itself"),
    ("unknown destination", {"replicate_to": ["nowhere-bucket", "lakehouse-failover-apse2"]},
     "failover.replicate_to[0]", "neither a bucket of replicas nor of failover.new_buckets"),
    ("new bucket not listed", {"replicate_to": ["lakehouse-replica-use1"]}, "failover.new_buckets[0].bucket",
     "must be listed in failover.replicate_to"),
    ("new bucket bad name", {"new_buckets": [{**NEW, "bucket": "Bad_Name"}]}, "failover.new_buckets[0].bucket",
     "lower case"),
    ("new bucket takes a replica's name", {"new_buckets": [{**NEW, "bucket": "lakehouse-replica-apse2"}],
                                            "replicate_to": ["lakehouse-replica-apse2"]},
     "failover.new_buckets[0].bucket", "already a bucket of the configuration"),
    ("destination in the promoted site", {"new_buckets": [{**NEW, "region": "eu-central-1"}],
                                          "replicate_to": ["lakehouse-failover-usw2"]},
     "failover.replicate_to[0]", "promoted bucket's own account and Region"),
    ("new bucket outside the SCP", {"new_buckets": [{**NEW, "account_id": "666666666666"}],
                                    "replicate_to": ["lakehouse-failover-usw2"]},
     "protection.organization.targets", "not covered by the SCP"),
    ("shorter retention than the promoted", {"new_buckets": [{**NEW, "snapshot_retention": {
        "max_snapshot_age_hours": 24, "min_snapshots_to_keep": 10}}], "replicate_to": ["lakehouse-failover-usw2"]},
     "failover.replicate_to[0]", "shorter than the promoted bucket's"),
    ("no writer in the promoted account", {"writer_roles": ["arn:aws:iam::333333333333:role/lakehouse-writer"]},
     "failover.writer_roles", "nobody but break-glass could write"),
    ("writer is break-glass", {"writer_roles": ["arn:aws:iam::222222222222:role/s3tables-break-glass"]},
     "failover.writer_roles[0]", "break-glass principal"),
    ("writer is the deploy role", {"writer_roles": ["arn:aws:iam::222222222222:role/terraform-deploy"]},
     "failover.writer_roles[0]", "deploy role"),
    ("writer is the recovery role", {"writer_roles": ["arn:aws:iam::222222222222:role/lakehouse-s3tables-recovery"]},
     "failover.writer_roles[0]", "recovery role never writes"),
    ("writer outside every replica account", {"writer_roles": ["arn:aws:iam::222222222222:role/lakehouse-writer",
                                                               "arn:aws:iam::777777777777:role/w"]},
     "failover.writer_roles[1]", "not in the account of any replica"),
    ("writer not a role", {"writer_roles": ["arn:aws:iam::222222222222:user/alice"]}, "failover.writer_roles",
     "must be an IAM role ARN"),
    ("replicate_to without promotion", {"promoted_bucket": ...}, "failover.replicate_to",
     "only valid with failover.promoted_bucket"),
    ("too many protected buckets", {"new_buckets": [{**NEW, "bucket": f"lakehouse-failover-{i}"} for i in range(4)],
                                    "replicate_to": [f"lakehouse-failover-{i}" for i in range(4)]},
     "failover.replicate_to", "at most 5"),
    ("table bucket quota of a site", {"new_buckets": [{**NEW, "bucket": f"lakehouse-failover-{i}"} for i in range(11)],
                                      "replicate_to": [f"lakehouse-failover-{i}" for i in range(11)]},
     "failover.new_buckets", "11 table buckets in 222222222222/us-west-2 exceed the quota of 10"),
    ("unknown key", {"promote": "x"}, "failover.promote", "unknown key"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "field", "rule"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_failover_is_refused_with_field_and_rule(changes: dict[str, Any], field: str, rule: str) -> None:
    doc = copy.deepcopy(FO_MULTI)
    for key, value in changes.items():
        if value is ...:
            del doc["failover"][key]
        else:
            doc["failover"][key] = value
    with pytest.raises(ConfigError) as info:
        parse_config(doc, "failover.toml")
    found = [str(i) for i in info.value.issues]
    assert any(i.startswith(f"{field}:") and rule in i for i in found), found


def test_valid_variants_load() -> None:
    doc = copy.deepcopy(FO_SEED)
    parse_config(doc)
    doc["failover"]["replicate_to"] = ["demo-failover-use2-tablebucket"]
    parse_config(doc)


def _with(doc: dict[str, Any], *, recovery_replica: str | None = None, **failover: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    if recovery_replica is not None:
        out["recovery"]["replica"] = recovery_replica
    out["failover"].update(failover)
    return out


def test_recovery_follows_the_new_source() -> None:
    """The replica recovery and its rehearsal read after a failover: a destination of the promoted bucket in the
    recovery account, preferably in its Region; a recovery replica that is already a destination stays."""
    # The promoted bucket was the recovery replica: the first destination of the recovery account (another Region).
    topo = failover_topology(parse_config(copy.deepcopy(FO_MULTI)))
    assert topo.recovery_replica is not None and topo.recovery_replica.bucket == "lakehouse-replica-use1"
    seed = failover_topology(parse_config(copy.deepcopy(FO_SEED)))
    assert seed.recovery_replica is not None and seed.recovery_replica.bucket == "demo-failover-use2-tablebucket"
    # Order of replicate_to decides between two candidates of the recovery account.
    order = ["lakehouse-failover-usw2", "lakehouse-replica-use1", "lakehouse-failover-apse2"]
    two = _with(FO_MULTI, new_buckets=[NEW, *FO_MULTI["failover"]["new_buckets"]], replicate_to=order)
    reads = failover_topology(parse_config(two)).recovery_replica
    assert reads is not None and reads.bucket == "lakehouse-failover-usw2"
    # A retained recovery replica (the failed source no longer feeds it) moves to the destination of its own account
    # and Region rather than the first destination listed.
    retained = _with(FO_MULTI, recovery_replica="lakehouse-replica-apse2")
    topo = failover_topology(parse_config(retained))
    assert [r.bucket for r in topo.retained] == ["lakehouse-replica-apse2"]
    assert topo.recovery_replica is not None and topo.recovery_replica.bucket == "lakehouse-failover-apse2"
    # A recovery replica that is a destination stays.
    dest = _with(FO_MULTI, recovery_replica="lakehouse-replica-use1")
    reads = failover_topology(parse_config(dest)).recovery_replica
    assert reads is not None and reads.bucket == "lakehouse-replica-use1"


RECOVERY_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("the promoted recovery replica has no successor in its account",
     {"replicate_to": ["lakehouse-failover-apse2"]}, "failover.replicate_to",
     "recovery.replica 'lakehouse-replica-euc1' is the promoted bucket (now the writable source): recovery and its "
     "rehearsal must read a replica of the new source, a bucket of failover.replicate_to in the recovery account "
     "222222222222"),
    ("a retained recovery replica has no successor in its account",
     {"recovery_replica": "lakehouse-replica-apse2", "replicate_to": ["lakehouse-replica-use1"], "new_buckets": []},
     "failover.replicate_to",
     "recovery.replica 'lakehouse-replica-apse2' is no longer replicated to (a replica of the failed source only)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "field", "rule"), [c[1:] for c in RECOVERY_CASES], ids=[c[0] for c in RECOVERY_CASES]
)
def test_a_failover_without_a_replica_to_recover_from_is_refused(
    changes: dict[str, Any], field: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_with(FO_MULTI, **changes), "failover.toml")
    found = [str(i) for i in info.value.issues]
    assert any(i.startswith(f"{field}:") and rule in i for i in found), found


def test_the_rehearsal_offset_must_fit_the_retention_of_the_replica_it_reads_after_failover() -> None:
    doc = _with(FO_MULTI, recovery_replica="lakehouse-replica-apse2")  # 4,320 h; its successor keeps 2,160 h
    doc["assurance"]["rehearsal"]["offset_hours"] = 3000
    with pytest.raises(ConfigError) as info:
        parse_config(doc, "failover.toml")
    assert [str(i) for i in info.value.issues] == [
        "assurance.rehearsal.offset_hours: 3000 h reaches back as far as the retention of lakehouse-failover-apse2 "
        "(2160 h), the replica the rehearsal reads after the failover"
    ]
    doc["assurance"]["rehearsal"]["offset_hours"] = 2000
    parse_config(doc, "failover.toml")
