"""The brownfield world of `make e2e-adopt` (and `make sandbox ARGS=--brownfield`): a lake the kit never saw, made on
the stand-in the way its owners made it, outside Terraform.

In the account 111122223333, Region us-east-1:
- `sales-lake` (SSE-S3): `orders.daily` (partitioned by `region`), `orders.returns` and `clickstream.events`, three
  pyiceberg commits each; the bucket policy of examples/adopt/ (its `AthenaReaders` grant to the analytics role);
  a table-level maintenance setting on `clickstream.events` alone;
- `marketing-lake` (SSE-S3): `campaigns.spend` with a table-level replication configuration of its own into a
  partner account's bucket (replicated once, as the service had), and `campaigns.budgets`, three commits each.

Then `complete`: discovery's proposal with the sections it leaves to the engineer ([protection], [recovery],
[assurance]), the replicas being the ones `--replicate-to` proposed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3tables_kit.topology.paths import ROOT

ACCOUNT, REGION, REPLICA_REGION = "111122223333", "us-east-1", "us-west-2"
PARTNER, PARTNER_REGION, PARTNER_BUCKET = "444455556666", "us-east-2", "partner-share"
ANALYTICS_ROLE = f"arn:aws:iam::{ACCOUNT}:role/analytics-athena"
POLICY_FILE = ROOT / "examples" / "adopt" / "bucket-policy-sales-lake.json"
SALES, MARKETING = "sales-lake", "marketing-lake"
# (bucket, namespace, table, partitioned by region); the bucket policy is on the first bucket only.
TABLES = (
    (SALES, "orders", "daily", True),
    (SALES, "orders", "returns", False),
    (SALES, "clickstream", "events", False),
    (MARKETING, "campaigns", "spend", False),
    (MARKETING, "campaigns", "budgets", False),
)
COMMITS = (("eu", range(0, 3)), ("us", range(3, 5)), ("eu", range(5, 6)))  # three snapshots per table
MAINTAINED = (SALES, "clickstream", "events")  # its owners keep 3 snapshots for 48 hours on this table alone
TABLE_MAINTENANCE = {"status": "enabled", "settings": {"icebergSnapshotManagement": {
    "minSnapshotsToKeep": 3, "maxSnapshotAgeHours": 48}}}  # fmt: skip
SHARED = (MARKETING, "campaigns", "spend")  # replicated by a table-level configuration into the partner's bucket
SHARE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/marketing-share-replication"
RECOVERED = "orders.daily"  # the pre-existing table recovered from its replica
KIT_NAME = "lake"
# The engineer's review of discovery's proposal (docs/provisioning.md): each line discovery writes for review, as
# the engineer completes it. The replicas are the ones `--replicate-to` proposed.
_REPLICA = f'bucket = "{SALES}-{REPLICA_REGION}"\nstorage_class = "STANDARD"\nencryption = {{ type = "sse-s3" }}\n'
REVIEWED = (
    ('management_account_id = "000000000000"', 'management_account_id = "999988887777"'),
    (f'replica = "{MARKETING}-{REPLICA_REGION}"', f'replica = "{SALES}-{REPLICA_REGION}"'),
    (f'bucket = "{KIT_NAME}-recovery"', f'bucket = "{SALES}-recovery"'),
    (
        "alarm_subscriptions = []",
        'alarm_subscriptions = [{ protocol = "email", endpoint = "data-oncall@example.com" }]',
    ),
)

ClientOf = Callable[[str, str, str], Any]  # (account, service, Region) -> a boto3 client of the stand-in


def arn(bucket: str, account: str = ACCOUNT, region: str = REGION) -> str:
    return f"arn:aws:s3tables:{region}:{account}:bucket/{bucket}"


@dataclass
class Brownfield:
    """What was built: the snapshot ids of every table (oldest first) and the partner's bucket."""

    snapshots: dict[str, list[int]] = field(default_factory=dict)  # "bucket/namespace.table" -> snapshot ids
    partner_bucket_arn: str = ""


def _schema(partitioned: bool) -> tuple[Any, Any]:
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC

    from s3tables_kit.jobs.failover.writer import writer_schema

    schema, spec = writer_schema()
    return schema, (spec if partitioned else UNPARTITIONED_PARTITION_SPEC)


def _rows(ids: range, region: str) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array(list(ids), pa.int64()), "region": pa.array([region] * len(ids), pa.string())})


def build(client_of: ClientOf, endpoint: str) -> Brownfield:
    """The lake as its owners left it (see the module docstring). The caller's environment must carry the emulator's
    checksum setting for pyiceberg's writes (harness/e2e/run.EMULATOR_WRITER_ENV)."""
    from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props
    from s3tables_kit.jobs.kernel.idents import Ident

    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}
        ],
    }
    iam = client_of(ACCOUNT, "iam", "us-east-1")  # the analytics role: no identity policy, the bucket grants it
    iam.create_role(RoleName=ANALYTICS_ROLE.rsplit("/", 1)[1], AssumeRolePolicyDocument=json.dumps(trust))
    s3t = client_of(ACCOUNT, "s3tables", REGION)
    out = Brownfield()
    for bucket in (SALES, MARKETING):
        s3t.create_table_bucket(name=bucket, encryptionConfiguration={"sseAlgorithm": "AES256"})
    s3t.put_table_bucket_policy(tableBucketARN=arn(SALES), resourcePolicy=POLICY_FILE.read_text())
    committers = {b: S3TablesCommitter(s3t, arn(b), io_props(s3t, arn(b), endpoint)) for b in (SALES, MARKETING)}
    for bucket, ns, name, partitioned in TABLES:
        ident, committer = Ident(ns, name), committers[bucket]
        committer.create(ident, *_schema(partitioned))
        for region, ids in COMMITS:
            committer.load(ident).append(_rows(ids, region))
        history = committer.load(ident).metadata.snapshots
        out.snapshots[f"{bucket}/{ident}"] = [s.snapshot_id for s in history]
    bucket, ns, name = MAINTAINED
    s3t.put_table_maintenance_configuration(
        tableBucketARN=arn(bucket), namespace=ns, name=name, type="icebergSnapshotManagement", value=TABLE_MAINTENANCE
    )
    partner = client_of(PARTNER, "s3tables", PARTNER_REGION)
    out.partner_bucket_arn = str(partner.create_table_bucket(name=PARTNER_BUCKET)["arn"])
    bucket, ns, name = SHARED
    shared = s3t.get_table(tableBucketARN=arn(bucket), namespace=ns, name=name)["tableARN"]
    s3t.put_table_replication(tableArn=shared, configuration={
        "role": SHARE_ROLE, "rules": [{"destinations": [{"destinationTableBucketARN": out.partner_bucket_arn}]}],
    })  # fmt: skip
    return out


def discover_args(out: Path, endpoint: str, operator: str) -> list[str]:
    """`s3tables-kit discover` of the account's Region as its operator, a replica of every bucket proposed."""
    return ["-m", "s3tables_kit.jobs.ops.discover", "--region", REGION, "--account", ACCOUNT,
            f"--role-arn={ACCOUNT}={operator}", "--replicate-to", REPLICA_REGION, "--kit-name", KIT_NAME,
            "--endpoint-url", endpoint, "--out", str(out), "--quiet"]  # fmt: skip


def complete(out: Path) -> Path:
    """Discovery's proposal in `out` completed as the engineer completes it (`REVIEWED`, the alarms' address among);
    the completed kit.toml. ValueError when the proposal is not what discovery of this world writes: both buckets
    adopted with a replica each, and every line to review present once."""
    path = out / "kit.toml"
    text = path.read_text()
    if text.count("adopt = true") != 2 or text.count("replicate_to = ") != 2 or "alarm_subscriptions = []" not in text:
        raise ValueError(f"{path} is not discovery's proposal for both buckets with their replicas")
    return write_reviewed(path, text, REVIEWED)


def write_reviewed(path: Path, text: str, reviewed: Sequence[tuple[str, str]]) -> Path:
    """`text` with each line to review replaced as the engineer completes it, written to `path`; ValueError when a
    line is not there exactly once (the proposal is not the one this world's discovery writes)."""
    for line, done in reviewed:
        if text.count(line) != 1:
            raise ValueError(f"{path}: the line to review `{line}` is not there once")
        text = text.replace(line, done)
    path.write_text(text)
    return path


def found_in(report: dict[str, Any]) -> list[str]:
    """Problems with discovery's JSON report of this world: every table counted with its records, the bucket policy
    and the table-level settings seen. Empty when it found the lake as built."""
    problems: list[str] = []
    buckets = {b["bucket"]: b for b in report.get("buckets", [])}
    if sorted(buckets) != sorted((SALES, MARKETING)):
        return [f"buckets found {sorted(buckets)}, built {[SALES, MARKETING]}"]
    for bucket in (SALES, MARKETING):
        want = sum(1 for b, *_ in TABLES if b == bucket)
        if buckets[bucket].get("tables") != want:
            problems.append(f"{bucket}: {buckets[bucket].get('tables')} table(s) found, {want} built")
    if not buckets[SALES].get("policy"):
        problems.append(f"{SALES}: its bucket policy was not found")
    settings = {(b, t["table"]): t for b in buckets for t in buckets[b].get("table_settings") or []}
    bucket, ns, name = MAINTAINED
    found = settings.get((bucket, f"{ns}.{name}"), {}).get("maintenance", {}).get("icebergSnapshotManagement")
    if found != TABLE_MAINTENANCE:
        problems.append(f"{bucket}/{ns}.{name}: maintenance {found} reported, {TABLE_MAINTENANCE} set")
    bucket, ns, name = SHARED
    if PARTNER_BUCKET not in json.dumps(settings.get((bucket, f"{ns}.{name}"), {}).get("replication")):
        problems.append(f"{bucket}/{ns}.{name}: its table-level replication to {PARTNER_BUCKET} not reported")
    return problems
