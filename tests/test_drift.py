"""Drift of what cannot be prevented (`s3tables_kit.jobs.ops.drift`): a source's replication configurations at both
levels and each replica's bucket policy, as `audit` and the replication monitor see them.

The comparisons are pure and tested first on documents; then each kind of drift is made on the emulator over HTTP
(a table-level destination beside the bucket-level configuration, a deleted configuration, another role, a bucket-level
configuration in tables mode, a replica bucket policy that is not the reviewed one): `audit` exits 1 naming it, and
the monitor publishes its metric, read back from moto's CloudWatch. The declared replication the monitor's package
carries is the one `audit` compares with, for every example topology.
"""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.ops import audit as au
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops.audit_scope import default_bucket_policy_builder, scopes_of
from s3tables_kit.jobs.ops.drift import (
    DeclaredReplication,
    LiveReplication,
    Unreadable,
    policy_drift,
    replication_drift,
)
from s3tables_kit.jobs.ops.monitor_drift import Declared, declared_for, declared_from_outputs
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.contract import (
    CONFIG_DRIFT,
    LAYER_SAMPLE,
    LAYERS_MISSING,
    POLICY_DRIFT,
    RETENTION_BELOW,
    SOURCE_POLICY_DRIFT,
)
from s3tables_kit.topology.deploy_outputs import outputs_doc as outputs_of
from s3tables_kit.topology.outputs import declared_replication, parse_outputs
from tests.ops_fixtures import SRC_REGION, OpsEnv, World, deploy, put_retention

ROOT = Path(__file__).resolve().parents[1]
SRC = "arn:aws:s3tables:us-east-1:111122223333:bucket/src"
DST = "arn:aws:s3tables:us-west-2:111122223333:bucket/dst"
OUTSIDE = "arn:aws:s3tables:us-east-1:999999999999:bucket/elsewhere"
ROLE = "arn:aws:iam::111122223333:role/kit-replication"
T1, T2 = f"{SRC}/table/t1", f"{SRC}/table/t2"


def _conf(role: str = ROLE, *dests: str) -> dict[str, Any]:
    return {"role": role, "rules": [{"destinations": [{"destinationTableBucketARN": d} for d in dests or (DST,)]}]}


def _kinds(findings: Any) -> list[tuple[str, str]]:
    return sorted((f.kind, f.resource) for f in findings)


BUCKET_MODE = DeclaredReplication(SRC, "bucket", ROLE, (DST,))
TABLES_MODE = DeclaredReplication(SRC, "tables", ROLE, (DST,), ("ns.t1",))


# ---------------------------------------------------------------------------------------------------- pure ----


def test_bucket_mode_sees_every_table_level_configuration() -> None:
    clean = LiveReplication(_conf(), {"ns.t1": (T1, None), "ns.t2": (T2, None)})
    assert replication_drift(BUCKET_MODE, clean) == []
    # the same role and destinations at table level change nothing (and may be what the service echoes)
    same = LiveReplication(_conf(), {"ns.t1": (T1, _conf()), "ns.t2": (T2, None)})
    assert replication_drift(BUCKET_MODE, same) == []
    extra = LiveReplication(_conf(), {"ns.t1": (T1, _conf(ROLE, DST, OUTSIDE)), "ns.t2": (T2, None)})
    (finding,) = replication_drift(BUCKET_MODE, extra)
    assert (finding.kind, finding.resource) == ("replication-extra-configuration", f"ns.t1 ({T1})")
    assert OUTSIDE in finding.detail and "beside the bucket-level one" in finding.detail
    other_role = LiveReplication(_conf("arn:aws:iam::111122223333:role/mine"), {"ns.t1": (T1, None)})
    assert _kinds(replication_drift(BUCKET_MODE, other_role)) == [("replication-role", SRC)]
    gone = LiveReplication(None, {"ns.t1": (T1, None)})
    assert _kinds(replication_drift(BUCKET_MODE, gone)) == [("replication-missing", SRC)]
    moved = LiveReplication(_conf(ROLE, OUTSIDE), {})
    assert _kinds(replication_drift(BUCKET_MODE, moved)) == [
        ("replication-destination-missing", SRC),
        ("replication-destination-unexpected", SRC),
    ]


def test_tables_mode_sees_a_bucket_level_configuration_and_unlisted_tables() -> None:
    clean = LiveReplication(None, {"ns.t1": (T1, _conf()), "ns.t2": (T2, None)})
    assert replication_drift(TABLES_MODE, clean) == []
    drifted = LiveReplication(_conf(), {"ns.t1": (T1, None), "ns.t2": (T2, _conf())})
    assert _kinds(replication_drift(TABLES_MODE, drifted)) == [
        ("replication-extra-configuration", SRC),  # a bucket-level configuration replicates every table
        ("replication-extra-configuration", f"ns.t2 ({T2})"),  # even the kit's own role and destination
        ("replication-missing", f"ns.t1 ({T1})"),
    ]
    assert _kinds(replication_drift(TABLES_MODE, LiveReplication(None, {}))) == [
        ("source-table-missing", f"{SRC} ns.t1")
    ]


def test_what_cannot_be_read_is_drift_never_a_pass() -> None:
    denied = Unreadable("AccessDenied: not allowed")
    live = LiveReplication(denied, {"ns.t1": (T1, denied)})
    assert _kinds(replication_drift(BUCKET_MODE, live)) == [("unverifiable", SRC), ("unverifiable", f"ns.t1 ({T1})")]
    unlisted = LiveReplication(None, {}, listing=denied)
    assert _kinds(replication_drift(TABLES_MODE, unlisted)) == [("unverifiable", SRC)]
    assert _kinds(policy_drift(DST, denied, {"Statement": []})) == [("unverifiable", DST)]


def test_policy_drift_is_an_exact_comparison_with_the_reviewed_document() -> None:
    deny = {"Sid": "Deny", "Effect": "Deny", "Principal": "*", "Action": ["s3tables:DeleteTable"], "Resource": DST}
    reviewed = {"Version": "2012-10-17", "Statement": [deny]}
    # canonical form: one-element lists, key order and the JSON text do not matter
    same = json.dumps({"Version": "2012-10-17", "Statement": {**deny, "Action": "s3tables:DeleteTable"}})
    assert policy_drift(DST, same, reviewed) == []
    grant = {"Effect": "Allow", "Principal": {"AWS": "999999999999"}, "Action": "s3tables:*", "Resource": DST}
    opened = {"Statement": [deny, grant, {**grant, "Sid": "Helper"}]}
    assert [f.kind for f in policy_drift(DST, opened, reviewed)] == ["bucket-policy-statement-unexpected"] * 2
    loosened = {"Statement": [{**deny, "Effect": "Allow"}]}
    assert [f.kind for f in policy_drift(DST, loosened, reviewed)] == ["bucket-policy-statement-changed"]
    assert [f.kind for f in policy_drift(DST, {"Statement": []}, reviewed)] == ["bucket-policy-statement-missing"]
    assert [f.kind for f in policy_drift(DST, None, reviewed)] == ["bucket-policy-missing"]


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate"])
def test_the_monitor_declares_what_audit_compares(example: str) -> None:
    """The package's declared replication (`s3tables_kit.topology.outputs.declared_replication` of each source's view),
    the one the outputs state, and the one `audit` compares with are the same, source by source (the failover
    topology's: test_failover_synth.py)."""
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    scopes = scopes_of(cfg, default_bucket_policy_builder())
    packaged = [declared_replication(cfg, s) for s in cfg.sources]
    outputs = parse_outputs(outputs_of(cfg))
    from_outputs = {s.table_bucket_arn: declared_from_outputs(s).replication for s in outputs.sources}
    assert from_outputs == {s.source.bucket_arn: s.declared for s in scopes}
    assert [DeclaredReplication.from_json(d) for d in packaged] == [s.declared for s in scopes]


# ---------------------------------------------------------------------------------------------------- live ----

T0 = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)


class Watch:
    """One world's audit and monitor, run at a new minute each time so each run's datapoints are read alone."""

    def __init__(self, world: World, tmp_path: Path) -> None:
        self.world, self.tmp_path, self.minute = world, tmp_path, 0
        (self.declared,) = declared_for(world.outputs, str(world.write_config(tmp_path))).values()

    def audit(self) -> tuple[int, list[tuple[str, str]]]:
        report = au.audit(self.world.clients, self.world.cfg, self.world.outputs, show_progress=False)
        return report.exit_code, sorted((d.kind, d.resource) for d in report.drifts)

    def monitor(self, declared: Declared | None = None) -> tuple[float | None, float | None, dict[str, Any]]:
        """(ReplicationConfigurationDrift, ReplicaBucketPolicyDrift of the replica) as CloudWatch holds them."""
        self.minute += 2
        now = T0 + timedelta(minutes=self.minute)
        settings = self.world.monitor_settings()
        result = mon.run_monitor(
            self.world.clients, settings, region=SRC_REGION, now=now, declared=declared or self.declared
        )
        self.last = now
        kit = {"Kit": "seed"}
        config = self._read(CONFIG_DRIFT, now, kit)
        policy = self._read(POLICY_DRIFT, now, kit | {"Destination": self.world.replica_arn})
        return config, policy, result.to_json()["drift"]

    def read(self, metric: str, destination: bool = True) -> float | None:
        """`metric` of the last monitor run, per replica (Kit, Destination) or for the source (Kit)."""
        dims = {"Kit": "seed"} | ({"Destination": self.world.replica_arn} if destination else {})
        return self._read(metric, self.last, dims)

    def _read(self, metric: str, at: dt.datetime, dims: dict[str, str]) -> float | None:
        return max(self.world.metric_maxima(metric, at, at + timedelta(minutes=1), **dims), default=None)


def _bucket_conf(world: World) -> dict[str, Any]:
    return dict(world.src().get_table_bucket_replication(tableBucketARN=world.source_arn))


def test_a_table_level_destination_beside_the_bucket_configuration(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env, harden_now=True)
    watch = Watch(world, tmp_path)
    assert watch.audit() == (0, [])
    assert watch.monitor()[:2] == (0, 0)
    orders = world.tables["analytics.orders"]
    theirs = {**_bucket_conf(world)["configuration"]}
    theirs["rules"] = [{"destinations": [*theirs["rules"][0]["destinations"], {"destinationTableBucketARN": OUTSIDE}]}]
    world.src().put_table_replication(tableArn=orders, configuration=theirs)
    assert watch.audit() == (1, [("replication-extra-configuration", f"analytics.orders ({orders})")])
    config, policy, drift = watch.monitor()
    assert (config, policy) == (1, 0)
    (finding,) = drift["replication_configuration"]
    assert finding["kind"] == "replication-extra-configuration" and OUTSIDE in finding["detail"]
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1


def test_a_deleted_configuration_and_another_role(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env, harden_now=True)
    watch = Watch(world, tmp_path)
    src, current = world.src(), _bucket_conf(world)
    mine = {**current["configuration"], "role": "arn:aws:iam::123456789012:role/not-the-kits"}
    src.put_table_bucket_replication(
        tableBucketARN=world.source_arn, configuration=mine, versionToken=current["versionToken"]
    )
    assert watch.audit() == (1, [("replication-role", world.source_arn)])
    assert watch.monitor()[:2] == (1, 0)
    token = _bucket_conf(world)["versionToken"]
    src.delete_table_bucket_replication(tableBucketARN=world.source_arn, versionToken=token)
    assert watch.audit() == (1, [("replication-missing", world.source_arn)])
    config, _, drift = watch.monitor()
    assert config == 1 and [f["kind"] for f in drift["replication_configuration"]] == ["replication-missing"]


def test_tables_mode_a_deleted_table_configuration_and_a_bucket_level_one(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env, mode="tables", harden_now=True)
    watch = Watch(world, tmp_path)
    assert watch.audit() == (0, []) and watch.monitor()[:2] == (0, 0)
    src, orders = world.src(), world.tables["analytics.orders"]
    conf = src.get_table_replication(tableArn=orders)
    src.delete_table_replication(tableArn=orders, versionToken=conf["versionToken"])
    src.put_table_bucket_replication(tableBucketARN=world.source_arn, configuration=conf["configuration"])
    assert watch.audit() == (
        1,
        [
            ("replication-extra-configuration", world.source_arn),
            ("replication-missing", f"analytics.orders ({orders})"),
        ],
    )
    assert watch.monitor()[0] == 2


def test_a_replica_bucket_policy_that_is_not_the_reviewed_one(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env, harden_now=True)
    watch = Watch(world, tmp_path)
    dst = world.dst()
    policy = json.loads(dst.get_table_bucket_policy(tableBucketARN=world.replica_arn)["resourcePolicy"])
    grant = {
        "Sid": "LetThemIn",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::999999999999:root"},
        "Action": "s3tables:*",
        "Resource": [world.replica_arn, f"{world.replica_arn}/table/*"],
    }
    policy["Statement"].append(grant)
    dst.put_table_bucket_policy(tableBucketARN=world.replica_arn, resourcePolicy=json.dumps(policy))
    assert watch.audit() == (1, [("bucket-policy-statement-unexpected", world.replica_arn)])
    config, policy_metric, drift = watch.monitor()
    assert (config, policy_metric) == (0, 1)
    assert drift["replica_bucket_policies"][world.replica_arn][0]["detail"] == (
        "statement 'LetThemIn' is not in the configuration"
    )
    dst.delete_table_bucket_policy(tableBucketARN=world.replica_arn)
    assert watch.audit() == (1, [("bucket-policy-missing", world.replica_arn)])
    assert watch.monitor()[1] == 1


# ---------------------------------------------------------------------------------- every layer checked ----


def test_a_deleted_replica_table_policy(ops_env: OpsEnv, tmp_path: Path) -> None:
    """One of a replica's two layers gone: `audit` exits 1 naming the table, the monitor publishes
    `ReplicaLayersMissing` for its destination (the alarm's metric)."""
    world = deploy(ops_env, harden_now=True)
    watch = Watch(world, tmp_path)
    assert watch.audit() == (0, [])
    watch.monitor()
    assert (watch.read(LAYERS_MISSING), watch.read(RETENTION_BELOW), watch.read(SOURCE_POLICY_DRIFT, False)) == (
        0,
        0,
        0,
    )
    events = world.dst().get_table(tableBucketARN=world.replica_arn, namespace="analytics", name="events")["tableARN"]
    world.dst().delete_table_policy(tableBucketARN=world.replica_arn, namespace="analytics", name="events")
    assert watch.audit() == (1, [("table-policy-missing", f"analytics.events ({events})")])
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1
    _, _, drift = watch.monitor()
    assert watch.read(LAYERS_MISSING) == 1 and watch.read(RETENTION_BELOW) == 0
    layers = drift["replica_layers"]["destinations"][world.replica_arn]
    assert layers["sampled"] == 3 and [f["resource"] for f in layers["table_policy_missing"]] == [
        f"analytics.events in {world.replica_arn.rsplit('/', 1)[1]}"
    ]


def test_a_replica_retention_below_the_configured_value(ops_env: OpsEnv, tmp_path: Path) -> None:
    """The source's window (720 h) on a replica configured for 2,160 h: not below the source's, below its own."""
    world = deploy(ops_env, harden_now=True)
    watch = Watch(world, tmp_path)
    put_retention(world.dst(), world.replica_arn, "customers", 720)
    code, drifts = watch.audit()
    assert (code, [(k, r.split()[0]) for k, r in drifts]) == (
        1,
        [("retention-below-configured", "analytics.customers")],
    )
    _, _, drift = watch.monitor()
    assert watch.read(RETENTION_BELOW) == 1 and watch.read(LAYERS_MISSING) == 0
    (finding,) = drift["replica_layers"]["destinations"][world.replica_arn]["retention_below_configured"]
    assert finding["detail"] == "maxSnapshotAgeHours 720 < configured 2160"


def test_a_changed_source_bucket_policy(ops_env: OpsEnv, tmp_path: Path) -> None:
    """A grant added to the source bucket policy (the source's layer against changing its replication): `audit`
    exits 1, the monitor publishes `SourceBucketPolicyDrift`; the same statements in another order are no drift."""
    world = deploy(ops_env, harden_now=True)
    watch = Watch(world, tmp_path)
    src = world.src()
    policy = json.loads(src.get_table_bucket_policy(tableBucketARN=world.source_arn)["resourcePolicy"])
    policy["Statement"].reverse()
    src.put_table_bucket_policy(tableBucketARN=world.source_arn, resourcePolicy=json.dumps(policy))
    assert watch.audit() == (0, [])
    grant = {
        "Sid": "LetThemReplicate",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::999999999999:root"},
        "Action": ["s3tables:PutTableBucketReplication", "s3tables:PutTableBucketPolicy"],
        "Resource": world.source_arn,
    }
    policy["Statement"].append(grant)
    src.put_table_bucket_policy(tableBucketARN=world.source_arn, resourcePolicy=json.dumps(policy))
    assert watch.audit() == (1, [("bucket-policy-statement-unexpected", world.source_arn)])
    assert au.main(world.tool_args(tmp_path, "--quiet")) == 1
    config, replica_policy, drift = watch.monitor()
    assert (config, replica_policy, watch.read(SOURCE_POLICY_DRIFT, destination=False)) == (0, 0, 1)
    assert drift["source_bucket_policy"][0]["detail"] == "statement 'LetThemReplicate' is not in the configuration"


def test_the_layer_check_is_bounded_per_run_and_covers_every_replica(ops_env: OpsEnv, tmp_path: Path) -> None:
    """At most `LAYER_SAMPLE` replica tables per destination are read per run (two requests each), those not yet
    seen with both layers first, so a replica that lost its table policy is found within ceil(tables / LAYER_SAMPLE)
    runs."""
    names = tuple(f"t{i:03d}" for i in range(LAYER_SAMPLE + 10))
    world = deploy(ops_env, tables=names, harden_now=True)
    watch = Watch(world, tmp_path)
    # the last table in name order: outside the first run's sample (every table unseen: the first 50 by name)
    world.dst().delete_table_policy(tableBucketARN=world.replica_arn, namespace="analytics", name=names[-1])
    found, sampled = [], []
    for _ in range(2):
        before = dict(ops_env.control.stats()["calls"])
        _, _, drift = watch.monitor()
        after = dict(ops_env.control.stats()["calls"])
        assert after.get("GetTablePolicy", 0) - before.get("GetTablePolicy", 0) == LAYER_SAMPLE
        layers = drift["replica_layers"]
        assert layers["cycle_runs"] == 2
        sampled.append(layers["destinations"][world.replica_arn]["sampled"])
        found.append(watch.read(LAYERS_MISSING))
    assert sampled == [LAYER_SAMPLE, LAYER_SAMPLE] and 1 in found


def test_sample_tables_unseen_first_then_a_moving_window() -> None:
    from s3tables_kit.jobs.ops.monitor_drift import sample_tables

    names = [f"ns.t{i}" for i in range(7)]
    assert sample_tables(names[:3], run=5, size=3) == names[:3]  # a small bucket: every table, every run
    windows = [set(sample_tables(names, run=r, size=3, seen=names)) for r in range(3)]
    assert set().union(*windows) == set(names)  # ceil(7 / 3) runs cover every table
    assert all(len(w) == 3 for w in windows)
    assert sample_tables(names, run=0, size=3, seen=names[:-1])[0] == "ns.t6"  # the one not seen yet comes first


@pytest.mark.parametrize("example", ["seed", "multi-account", "estate"])
def test_audit_compares_each_source_bucket_policy_with_what_its_stack_deploys(example: str) -> None:
    """The reviewed source bucket policy `audit` and the monitor compare with is the document each source stack
    deploys (`source-bucket-policy`, `--<stack id>` in an estate), by the same document set."""
    from s3tables_kit.policies import docset

    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    docs = docset.build(cfg)
    scopes = scopes_of(cfg, default_bucket_policy_builder())
    deployed = {s.bucket_arn: docs.for_source(cfg, s).document("source-bucket-policy") for s in cfg.sources}
    assert {scope.source.bucket_arn: scope.source_bucket_policy for scope in scopes} == deployed
