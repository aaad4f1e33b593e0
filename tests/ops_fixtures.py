"""Fixtures for the ops tests: a moto server + the kit's extension over real HTTP, and a deployed
world.

`moto_endpoint` (session) starts the emulator (`emulator.process.Emulator`) on 127.0.0.1:4566 (another free port if
4566 is
taken; `KIT_MOTO_PORT` overrides) and stops it at the end. `ops_env` resets every backend and the
extension's state
before each test. `World.deploy` creates, through the same public APIs Terraform would call, what `cdktf
deploy`
leaves behind for a small topology and returns the matching config and outputs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from emulator.control import Control
from emulator.process import Emulator
from harness.sandbox import put_source_bucket_policies
from harness.world import (
    create_organization_unit,
    deploy_replicas,
    deploy_sources,
    seed_organization_policies,
)
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.topology.config import KitConfig, parse_config
from s3tables_kit.topology.deploy_outputs import outputs_doc as topology_outputs_doc
from s3tables_kit.topology.outputs import KitOutputs, parse_outputs

if TYPE_CHECKING:
    from s3tables_kit.jobs.ops.monitor import MonitorSettings

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT = "123456789012"  # moto's default account for the localstack-client default credentials
# Named in the configuration only (SCPs do not apply to the management account, so it holds no kit bucket); the
# tests' clients take no role, so moto serves the organization from ACCOUNT.
MANAGEMENT_ACCOUNT = "999988887777"
SRC_REGION, DST_REGION = "us-east-1", "us-west-2"
SRC_BUCKET, DST_BUCKET = "demo-source-tablebucket", "demo-dest-tablebucket"
BREAK_GLASS = f"arn:aws:iam::{ACCOUNT}:role/s3tables-break-glass"
DEPLOY_ROLE = f"arn:aws:iam::{ACCOUNT}:role/terraform-deploy"


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """The emulator for the whole session, on a free loopback port (KIT_MOTO_PORT names one, e.g. to attach a
    debugger); two sessions at once (test workers, an e2e run beside the tests) each get their own."""
    port = os.environ.get("KIT_MOTO_PORT")
    with Emulator(port=int(port) if port else None) as emu:
        yield emu.url


@dataclass
class OpsEnv:
    endpoint: str
    control: Control

    def clients(self, **kw: Any) -> Clients:
        return Clients(endpoint_url=self.endpoint, **kw)


@pytest.fixture
def ops_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> OpsEnv:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    control = Control(moto_endpoint)
    control.reset()
    return OpsEnv(moto_endpoint, control)


# ----------------------------------------------------------------------------------------------------
# A deployed world
# ----------------------------------------------------------------------------------------------------


def put_retention(
    s3tables: Any, bucket_arn: str, table: str, max_age_hours: int, min_snapshots: int | None = 1
) -> None:
    """Set the snapshot retention of `analytics.<table>` (icebergSnapshotManagement), as a deploy or a person would."""
    settings = {"maxSnapshotAgeHours": max_age_hours}
    if min_snapshots is not None:
        settings = {"minSnapshotsToKeep": min_snapshots, **settings}
    s3tables.put_table_maintenance_configuration(
        tableBucketARN=bucket_arn,
        namespace="analytics",
        name=table,
        type="icebergSnapshotManagement",
        value={"status": "enabled", "settings": {"icebergSnapshotManagement": settings}},
    )


def replica_site(bucket: str, region: str) -> dict[str, Any]:
    """A `[[replicas]]` entry in the fixtures' account (the same keys make a `[[failover.new_buckets]]` entry)."""
    return {
        "account_id": ACCOUNT,
        "region": region,
        "bucket": bucket,
        "storage_class": "INTELLIGENT_TIERING",
        "encryption": {"type": "sse-s3"},
        "snapshot_retention": {"max_snapshot_age_hours": 2160, "min_snapshots_to_keep": 1},
        "deploy_role_arn": DEPLOY_ROLE,
    }


def config_dict(mode: str = "bucket", tables: tuple[str, ...] = ("orders", "customers", "events")) -> dict[str, Any]:
    return {
        "kit": {"name": "seed"},
        "source": {
            "account_id": ACCOUNT,
            "region": SRC_REGION,
            "bucket": SRC_BUCKET,
            "encryption": {"type": "sse-s3"},
            "snapshot_retention": {"max_snapshot_age_hours": 720, "min_snapshots_to_keep": 1},
            "namespaces": [
                {
                    "name": "analytics",
                    "tables": [{"name": t, "columns": [{"name": "id", "type": "string"}]} for t in tables],
                }
            ],
        },
        "replicas": [replica_site(DST_BUCKET, DST_REGION)],
        "replication": {"mode": mode, **({"tables": ["analytics.orders"]} if mode == "tables" else {})},
        "protection": {
            "break_glass_principals": [BREAK_GLASS],
            "organization": {
                "management_account_id": MANAGEMENT_ACCOUNT,
                "targets": ["ou-placeholder-00000000"],
                "ou_accounts": {"ou-placeholder-00000000": [ACCOUNT]},
            },
        },
        "recovery": {"replica": DST_BUCKET, "bucket": "demo-recovery-tablebucket", "namespace": "recovered"},
    }


def ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


class _Deployed:
    """What a deployed world hands the ops tools: clients, its outputs file and its configuration file."""

    env: OpsEnv
    outputs_doc: dict[str, Any]
    cfg_doc: dict[str, Any]

    @property
    def clients(self) -> Clients:
        return self.env.clients()

    def write_outputs(self, tmp_path: Path) -> Path:
        p = tmp_path / "outputs.json"
        p.write_text(json.dumps(self.outputs_doc), encoding="utf-8")
        return p

    def write_config(self, tmp_path: Path) -> Path:
        """The configuration as TOML (`load_config` reads TOML only)."""
        p = tmp_path / "kit.toml"
        p.write_text(_toml(self.cfg_doc), encoding="utf-8")
        return p


@dataclass
class World(_Deployed):
    env: OpsEnv
    cfg: KitConfig
    outputs: KitOutputs
    source_arn: str
    replica_arn: str
    ou_id: str
    policy_id: str
    tables: dict[str, str] = field(default_factory=dict)  # "ns.name" -> source table ARN

    def src(self) -> Any:
        return self.clients.s3tables(SRC_REGION)

    def dst(self) -> Any:
        return self.clients.s3tables(DST_REGION)

    def org(self) -> Any:
        return self.clients.organizations()

    def monitor_settings(self, **kw: Any) -> MonitorSettings:
        """The settings of this world's replication monitor (its kit, its source and its replica), `kw` overriding."""
        from s3tables_kit.jobs.ops.monitor import MonitorSettings

        base: dict[str, Any] = {
            "kit": self.cfg.kit.name,
            "source_bucket_arns": (self.source_arn,),
            "destination_bucket_arns": (self.replica_arn,),
        }
        return MonitorSettings(**(base | kw))

    def metric_maxima(self, metric: str, start: dt.datetime, end: dt.datetime, **dims: str) -> list[float]:
        """The per-minute maxima of the monitor's `metric` with exactly `dims` between `start` and `end` (the alarms'
        statistic, infra/constructs/monitor.py), as CloudWatch returns them."""
        from s3tables_kit.jobs.ops.monitor import METRIC_NAMESPACE

        got = self.clients.client("cloudwatch", SRC_REGION).get_metric_statistics(
            Namespace=METRIC_NAMESPACE,
            MetricName=metric,
            Dimensions=[{"Name": k, "Value": v} for k, v in dims.items()],
            StartTime=start,
            EndTime=end,
            Period=60,
            Statistics=["Maximum"],
        )["Datapoints"]
        return [p["Maximum"] for p in got]

    def tool_args(self, tmp_path: Path, *extra: str) -> list[str]:
        """Command line of an ops tool on this world: its config and outputs files, the emulator's endpoint."""
        config, outputs = self.write_config(tmp_path), self.write_outputs(tmp_path)
        return ["--config", str(config), "--outputs", str(outputs), "--endpoint-url", self.env.endpoint, *extra]

    outputs_doc: dict[str, Any] = field(default_factory=dict)
    cfg_doc: dict[str, Any] = field(default_factory=dict)

    # ---- source commits (over HTTP, as an Iceberg writer would) ----
    def hold_back(self, qualified: str, now: dt.datetime) -> dt.datetime:
        """Replicate the source as of `now` - 3 h, then commit `qualified` at `now` - 2 h and leave that commit
        pending at the replica: the table that holds the replication point back. Returns the lacking commit's time."""
        self.env.control.replicate(source_bucket_arn=self.source_arn, at=now - dt.timedelta(hours=3))
        lacking = now - dt.timedelta(hours=2)
        self.commit(qualified, lacking)
        self.env.control.set_status(self.tables[qualified], self.replica_arn, "pending")
        return lacking

    def commit(self, qualified: str, at: dt.datetime) -> str:
        ns, name = qualified.split(".")
        s3t = self.src()
        loc = s3t.get_table_metadata_location(tableBucketARN=self.source_arn, namespace=ns, name=name)
        previous: dict[str, Any] = {}
        log: list[dict[str, Any]] = []
        s3 = self.clients.s3(SRC_REGION)
        if loc.get("metadataLocation"):
            bucket, key = loc["metadataLocation"].removeprefix("s3://").split("/", 1)
            previous = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            log = [
                *previous.get("metadata-log", []),
                {"timestamp-ms": previous["last-updated-ms"], "metadata-file": loc["metadataLocation"]},
            ]
        snaps = [*previous.get("snapshots", []), {"snapshot-id": len(log) + 1, "timestamp-ms": ms(at)}]
        doc = {
            "format-version": 2,
            "table-uuid": str(uuid.uuid4()),
            "location": loc["warehouseLocation"],
            "last-updated-ms": ms(at),
            "snapshots": snaps,
            "metadata-log": log,
            "current-snapshot-id": len(log) + 1,
        }
        bucket = loc["warehouseLocation"].removeprefix("s3://")
        key = f"metadata/{len(log) + 1:05d}-{uuid.uuid4()}.metadata.json"
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc).encode())
        new_loc = f"{loc['warehouseLocation']}/{key}"
        s3t.update_table_metadata_location(
            tableBucketARN=self.source_arn,
            namespace=ns,
            name=name,
            versionToken=loc["versionToken"],
            metadataLocation=new_loc,
        )
        return new_loc

    def replica_table(self, qualified: str) -> dict[str, Any]:
        ns, name = qualified.split(".")
        return dict(self.dst().get_table(tableBucketARN=self.replica_arn, namespace=ns, name=name))


def _toml(doc: dict[str, Any], prefix: str = "") -> str:
    """Just enough TOML for config_dict()."""

    def val(v: Any) -> str:
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        raise TypeError(v)

    return "\n".join(f"{k} = {val(v)}" for k, v in doc.items() if k != "__tables__") + "\n"


def deploy(
    env: OpsEnv,
    mode: str = "bucket",
    tables: tuple[str, ...] = ("orders", "customers", "events"),
    replicate: bool = True,
    harden_now: bool = False,
) -> World:
    """What `cdktf deploy` + the service leave behind (`harness.world`): buckets, tables with source retention,
    encryption, storage class, the replica and source bucket policies, the replication configuration, the SCPs
    attached to an OU, and the outputs of that deploy (`s3tables_kit.topology.deploy_outputs.outputs_doc`); then
    (optionally)
    the service's initial replication."""
    clients = env.clients()
    ou_id = create_organization_unit(clients.organizations())
    doc = config_dict(mode, tables)
    doc["protection"]["organization"]["targets"] = [ou_id]
    doc["protection"]["organization"]["ou_accounts"] = {ou_id: [ACCOUNT]}
    cfg = parse_config(doc)
    deploy_replicas(clients.s3tables, cfg)
    world_tables = deploy_sources(clients.s3tables, cfg)[cfg.sources[0].bucket_arn]
    put_source_bucket_policies(clients.s3tables, cfg)
    organization = seed_organization_policies(clients.organizations(), cfg, [ou_id])
    outputs_doc = topology_outputs_doc(cfg, organization)
    world = World(
        env,
        cfg,
        parse_outputs(outputs_doc),
        cfg.sources[0].bucket_arn,
        cfg.replicas[0].bucket_arn,
        ou_id,
        organization["policy_id"],
        world_tables,
        outputs_doc=outputs_doc,
        cfg_doc=doc,
    )
    if replicate:
        env.control.replicate(source_bucket_arn=cfg.sources[0].bucket_arn)
    if harden_now:
        from s3tables_kit.jobs.ops.harden import harden

        report = harden(clients, world.outputs, show_progress=False)
        assert report.exit_code == 0, report.to_json()
    return world


# ----------------------------------------------------------------------------------------------------
# A deployed estate (`[[sources]]`): three sources, a fan-in vault, a regional replica
# ----------------------------------------------------------------------------------------------------

VAULT_REGION = "us-east-2"
VAULT, SALES_REPLICA = "estate-vault", "estate-sales-replica"


def _estate_source(sid: str, region: str, namespaces: dict[str, list[str]], **extra: Any) -> dict[str, Any]:
    return {
        "id": sid,
        "account_id": ACCOUNT,
        "region": region,
        "bucket": f"estate-{sid}",
        "encryption": {"type": "sse-s3"},
        "snapshot_retention": {"max_snapshot_age_hours": 720, "min_snapshots_to_keep": 1},
        "namespaces": [
            {"name": ns, "tables": [{"name": t, "columns": [{"name": "id", "type": "string"}]} for t in tables]}
            for ns, tables in namespaces.items()
        ],
        **extra,
    }


def estate_config_dict(ou_id: str = "ou-placeholder-00000000") -> dict[str, Any]:
    """sales (us-east-1, bucket mode) -> vault + its regional replica; marketing (us-east-1, tables mode: only
    marketing.campaigns; it also holds a local `sales.orders`, a name the sales bucket has too) -> vault; ops
    (us-west-2, bucket mode) -> vault. The vault (us-east-2) receives from all three (fan-in)."""
    return {
        "kit": {"name": "estate"},
        "sources": [
            _estate_source(
                "sales",
                SRC_REGION,
                {"sales": ["orders", "refunds"]},
                replicate_to=[VAULT, SALES_REPLICA],
                replication={"mode": "bucket"},
            ),
            _estate_source(
                "marketing",
                SRC_REGION,
                {"marketing": ["campaigns"], "sales": ["orders"]},
                replicate_to=[VAULT],
                replication={"mode": "tables", "tables": ["marketing.campaigns"]},
            ),
            _estate_source(
                "ops", DST_REGION, {"ops": ["incidents"]}, replicate_to=[VAULT], replication={"mode": "bucket"}
            ),
        ],
        "replicas": [replica_site(VAULT, VAULT_REGION), replica_site(SALES_REPLICA, DST_REGION)],
        "protection": {
            "break_glass_principals": [BREAK_GLASS],
            "organization": {
                "management_account_id": MANAGEMENT_ACCOUNT,
                "targets": [ou_id],
                "ou_accounts": {ou_id: [ACCOUNT]},
            },
        },
        "recovery": {"replica": VAULT, "bucket": "estate-recovery", "namespace": "recovered"},
    }


@dataclass
class Estate(_Deployed):
    env: OpsEnv
    cfg: KitConfig
    outputs: KitOutputs
    outputs_doc: dict[str, Any]
    cfg_doc: dict[str, Any]

    def s3tables(self, region: str) -> Any:
        return self.clients.s3tables(region)

    def tool_args(self, tmp_path: Path, *extra: str) -> list[str]:
        """Command line of an ops tool on the estate: its outputs file and the emulator's endpoint."""
        return ["--outputs", str(self.write_outputs(tmp_path)), "--endpoint-url", self.env.endpoint, *extra]


def deploy_estate(env: OpsEnv, *, commit_ms: int | None = None, replicate: bool = True) -> Estate:
    """What `cdktf deploy` of every stack of the estate leaves behind (buckets, tables with their retention, bucket
    settings, the replica bucket policies of the whole estate, each source's bucket policy and replication
    configuration with its own role, the SCPs on an OU), the outputs of every stack
    (`s3tables_kit.topology.deploy_outputs.outputs_doc`), then a commit to every source table (`commit_ms`) and the
    service's
    replication of each source."""
    clients = env.clients()
    ou_id = create_organization_unit(clients.organizations())
    doc = estate_config_dict(ou_id)
    cfg = parse_config(doc)
    deploy_replicas(clients.s3tables, cfg)
    deploy_sources(clients.s3tables, cfg)
    put_source_bucket_policies(clients.s3tables, cfg)
    if commit_ms is not None:
        for src in cfg.sources:
            env.control.seed(
                src.bucket_arn, {ns.name: [t.name for t in ns.tables] for ns in src.namespaces}, commit_ms=commit_ms
            )
    organization = seed_organization_policies(clients.organizations(), cfg, [ou_id])
    out_doc = topology_outputs_doc(cfg, organization)
    if replicate:
        for src in cfg.sources:
            env.control.replicate(source_bucket_arn=src.bucket_arn)
    return Estate(env, cfg, parse_outputs(out_doc), out_doc, doc)
