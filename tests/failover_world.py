"""A deployed kit world with real Iceberg tables for the failover tests, drill and benchmark (emulator, no Spark).

`tests.ops_fixtures.deploy` creates what `cdktf deploy` leaves (buckets, replication configuration, replica bucket
policy, SCP); here each source table gets real Iceberg metadata and data written by pyiceberg through the S3 Tables
control plane (`s3tables_kit.jobs.failover.iceberg.S3TablesCommitter`, what a writer engine does), then the replication
service is simulated (`/_kit_test/replicate`) and the source moves on by one more commit that is not replicated.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props
from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.kernel.idents import Ident
from tests.ops_fixtures import ACCOUNT, BREAK_GLASS, SRC_BUCKET, OpsEnv, World, deploy

# moto 5.2.5 stores an EMPTY object for pyarrow's (AWS SDK C++) streaming uploads with trailing checksums; against the
# emulator the writer computes checksums only when required (plain PutObject). Not needed on AWS.
CHECKSUM_ENV = {"AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED"}


def emulator_env(mp: pytest.MonkeyPatch) -> None:
    """The checksum setting for this test only: the monkeypatch undoes it, so later tests on the worker meet botocore's
    and pyarrow's defaults."""
    for k, v in CHECKSUM_ENV.items():
        mp.setenv(k, v)


def schema_and_spec() -> tuple[Any, Any]:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    return schema, spec


def batch(ids: range, region: str) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array(list(ids), pa.int64()), "region": pa.array([region] * len(ids), pa.string())})


@dataclass
class FailoverWorld:
    world: World
    snapshots: dict[str, list[int]] = field(default_factory=dict)  # source table -> snapshot ids, oldest first
    replicated_at: dt.datetime | None = None

    @property
    def env(self) -> OpsEnv:
        return self.world.env

    def clients(self, *, break_glass: bool = True) -> Clients:
        return self.env.clients(role_arns={ACCOUNT: BREAK_GLASS}) if break_glass else self.env.clients()

    def source_committer(self) -> S3TablesCommitter:
        s3t = self.world.src()
        return S3TablesCommitter(s3t, self.world.source_arn, io_props(s3t, self.world.source_arn, self.env.endpoint))

    def replica_committer(self) -> S3TablesCommitter:
        s3t = self.world.dst()
        return S3TablesCommitter(s3t, self.world.replica_arn, io_props(s3t, self.world.replica_arn, self.env.endpoint))

    def append(self, qualified: str, ids: range, region: str) -> int:
        t = self.source_committer().load(Ident.parse(qualified))
        t.append(batch(ids, region))
        sid = self.source_committer().load(Ident.parse(qualified)).metadata.current_snapshot_id
        assert sid is not None
        self.snapshots.setdefault(qualified, []).append(sid)
        return sid


def build(env: OpsEnv, mp: pytest.MonkeyPatch, tables: tuple[str, ...] = ("orders", "customers")) -> FailoverWorld:
    """Two commits per source table (eu: 3 rows, then us: 2 rows), replicated; then orders gets a third commit
    (eu: 1 row) that the replica lacks."""
    emulator_env(mp)
    w = deploy(env, tables=tables, replicate=False)
    fw = FailoverWorld(w)
    schema, spec = schema_and_spec()
    cm = fw.source_committer()
    for name in tables:
        q = f"analytics.{name}"
        cm.create(Ident.parse(q), schema, spec)
        fw.append(q, range(0, 3), "eu")
        fw.append(q, range(3, 5), "us")
    fw.replicated_at = dt.datetime.now(dt.UTC)
    env.control.replicate(source_bucket_arn=w.source_arn, at=fw.replicated_at)
    fw.append("analytics.orders", range(5, 6), "eu")
    return fw


def lose_source_region(env: OpsEnv) -> None:
    """The source Region stops answering: every S3 Tables call on it fails like an unreachable endpoint would."""
    for op in ("ListTables", "GetTable", "GetTableMetadataLocation", "GetTableReplicationStatus"):
        env.control.inject_faults(
            op, 10**6, code="ServiceUnavailableException", status=503, message="Region unavailable", match=SRC_BUCKET
        )
