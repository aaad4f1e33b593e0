"""The second brownfield world of `make e2e-adopt` (`--world one`): a one-account lake in two Regions that already
replicates, made on the stand-in the way its owners made it, outside Terraform.

In the account 111122223333:
- `orders-lake` (us-east-1, SSE-S3): `orders.daily` (partitioned by `region`), written by pyiceberg; a bucket-level
  replication configuration of its owners (role `orders-replication`) into `orders-lake-dr` (us-west-2), which the
  stand-in's replication service has run: the destination holds its replicas (`managedByService` the service's);
- `finance-lake` (us-east-1, SSE-KMS with a customer managed key of the account, a bucket policy granting the ledger
  auditors' role read access): `ledger.entries` written by pyiceberg, and `ledger.payments`, created by pyiceberg
  and fed only through `PutRows` (the stand-in's streaming service buffers the rows and commits them itself).

Discovery of both Regions with `--replicate-to us-west-2` must propose `orders-lake-dr` as an adopted replica of
`orders-lake` (never a source; the configuration taken over, `existing_destinations`), a new replica in us-west-2 for
the other bucket, and report the table `PutRows` feeds. `complete` then does the engineer's review.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.e2e.brownfield import write_reviewed

ACCOUNT, REGION, DR_REGION = "111122223333", "us-east-1", "us-west-2"
ORDERS, ORDERS_DR, FINANCE = "orders-lake", "orders-lake-dr", "finance-lake"
SOURCES = (FINANCE, ORDERS)
OWNERS_ROLE = f"arn:aws:iam::{ACCOUNT}:role/orders-replication"
AUDITORS_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ledger-auditors"
AUDITORS_SID = "LedgerAuditorsRead"  # the adopter's statement, rendered for review beside the kit's
# (bucket, namespace, table, partitioned by region, written by pyiceberg: else created empty and fed by PutRows)
TABLES = (
    (ORDERS, "orders", "daily", True, True),
    (FINANCE, "ledger", "entries", False, True),
    (FINANCE, "ledger", "payments", False, False),
)
STREAMED = (FINANCE, "ledger", "payments")
COMMITS = (("eu", range(0, 3)), ("us", range(3, 5)))
PUT_ROWS = (b'{"id": 100, "region": "eu"}\n{"id": 101, "region": "us"}\n', b'{"id": 102, "region": "eu"}\n')
KIT_NAME = "onelake"
# The engineer's review of the proposal: each line discovery writes for review, as completed.
REVIEWED = (
    ('management_account_id = "000000000000"', 'management_account_id = "999988887777"'),
    (f'bucket = "{KIT_NAME}-recovery"', f'bucket = "{ORDERS}-recovery"'),
    (
        "alarm_subscriptions = []",
        'alarm_subscriptions = [{ protocol = "email", endpoint = "data-oncall@example.com" }]',
    ),
)

ClientOf = Callable[[str, str, str], Any]  # (account, service, Region) -> a boto3 client of the stand-in


def arn(bucket: str, region: str = REGION) -> str:
    return f"arn:aws:s3tables:{region}:{ACCOUNT}:bucket/{bucket}"


DR_ARN = arn(ORDERS_DR, DR_REGION)
FINANCE_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{
        "Sid": AUDITORS_SID, "Effect": "Allow", "Principal": {"AWS": AUDITORS_ROLE},
        "Action": ["s3tables:GetTable", "s3tables:GetTableData", "s3tables:GetTableMetadataLocation",
                   "s3tables:ListTables"],
        "Resource": [arn(FINANCE), f"{arn(FINANCE)}/table/*"],
    }],
}  # fmt: skip


@dataclass
class OneAccountLake:
    """What was built: the snapshot ids of every table ("bucket/namespace.table", oldest first), the KMS key, the
    rows `PutRows` accepted and the replicas the service made in the existing destination."""

    snapshots: dict[str, list[int]] = field(default_factory=dict)
    kms_key_arn: str = ""
    streamed_rows: int = 0
    replicated: list[str] = field(default_factory=list)


def build(client_of: ClientOf, endpoint: str, replicate: Callable[[str], list[Any]],
          putrows: Callable[..., Any]) -> OneAccountLake:  # fmt: skip
    """The lake as its owners left it (the module docstring). `replicate(source bucket ARN)`: the stand-in's
    replication service run once; `putrows(**settings)`: the stand-in's PutRows service control. The caller's
    environment must carry the emulator's checksum setting for pyiceberg's writes."""
    from harness.e2e.brownfield import _rows, _schema
    from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props
    from s3tables_kit.jobs.kernel.idents import Ident

    out = OneAccountLake()
    kms = client_of(ACCOUNT, "kms", REGION)
    out.kms_key_arn = str(kms.create_key(Description="finance-lake tables")["KeyMetadata"]["Arn"])
    root = {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": root, "Action": "sts:AssumeRole"}]}
    iam = client_of(ACCOUNT, "iam", REGION)  # the auditors' role: no identity policy, the bucket grants it
    iam.create_role(RoleName=AUDITORS_ROLE.rsplit("/", 1)[1], AssumeRolePolicyDocument=json.dumps(trust))
    s3t, dr = client_of(ACCOUNT, "s3tables", REGION), client_of(ACCOUNT, "s3tables", DR_REGION)
    s3t.create_table_bucket(name=ORDERS, encryptionConfiguration={"sseAlgorithm": "AES256"})
    s3t.create_table_bucket(
        name=FINANCE, encryptionConfiguration={"sseAlgorithm": "aws:kms", "kmsKeyArn": out.kms_key_arn}
    )
    s3t.put_table_bucket_policy(tableBucketARN=arn(FINANCE), resourcePolicy=json.dumps(FINANCE_POLICY))
    dr.create_table_bucket(name=ORDERS_DR, encryptionConfiguration={"sseAlgorithm": "AES256"})
    for bucket, ns, name, partitioned, written in TABLES:
        ident = Ident(ns, name)
        committer = S3TablesCommitter(s3t, arn(bucket), io_props(s3t, arn(bucket), endpoint))
        committer.create(ident, *_schema(partitioned))
        for region, ids in COMMITS if written else ():
            committer.load(ident).append(_rows(ids, region))
    putrows(commitDelayS=0.2)
    bucket, ns, name = STREAMED
    table_arn = s3t.get_table(tableBucketARN=arn(bucket), namespace=ns, name=name)["tableARN"]
    for payload in PUT_ROWS:
        out.streamed_rows += int(
            s3t.put_rows(tableArn=table_arn, payloadFormat="JSON", payload=payload)["acceptedRows"]
        )
    putrows(flush=True)  # the service's commit, as it makes within a minute
    for bucket, ns, name, _, _ in TABLES:
        committer = S3TablesCommitter(s3t, arn(bucket), io_props(s3t, arn(bucket), endpoint))
        out.snapshots[f"{bucket}/{ns}.{name}"] = [
            s.snapshot_id for s in committer.load(Ident(ns, name)).metadata.snapshots
        ]
    s3t.put_table_bucket_replication(tableBucketARN=arn(ORDERS), configuration={
        "role": OWNERS_ROLE, "rules": [{"destinations": [{"destinationTableBucketARN": DR_ARN}]}],
    })  # fmt: skip
    out.replicated = [str(r) for r in replicate(arn(ORDERS))]
    return out


def discover_args(out: Path, endpoint: str, operator: str) -> list[str]:
    """`s3tables-kit discover` of both Regions as the account's operator, a replica in us-west-2 proposed."""
    return ["-m", "s3tables_kit.jobs.ops.discover", "--region", REGION, "--replicate-to", DR_REGION, "--out", str(out),
            *discover_extra(endpoint, operator)]  # fmt: skip


def discover_extra(endpoint: str, operator: str) -> list[str]:
    """What this world's discovery adds to docs/adoption.md's `discover` line (its Region, replica Region and
    directory): the second Region, the account and its operator's role, the kit's name, the stand-in's endpoint."""
    return ["--region", DR_REGION, "--account", ACCOUNT, f"--role-arn={ACCOUNT}={operator}", "--kit-name", KIT_NAME,
            "--endpoint-url", endpoint, "--quiet"]  # fmt: skip


def found_in(report: dict[str, Any]) -> list[str]:
    """Problems with discovery's JSON report of this world; empty when it found the lake as built: the existing
    destination a replica of its source (never a source) with the source's configuration taken over, every other
    bucket a source, the KMS key and the bucket policy seen, the table `PutRows` feeds reported."""
    buckets = {b["bucket"]: b for b in report.get("buckets", [])}
    if sorted(buckets) != sorted((*SOURCES, ORDERS_DR)):
        return [f"buckets found {sorted(buckets)}, built {sorted((*SOURCES, ORDERS_DR))}"]
    problems: list[str] = []
    dr = buckets[ORDERS_DR]
    if (dr.get("role"), dr.get("replica_of")) != ("replica", arn(ORDERS)):
        problems.append(
            f"{ORDERS_DR}: proposed as {dr.get('role')} of {dr.get('replica_of')}, not a replica of {ORDERS}"
        )
    for name in SOURCES:
        if buckets[name].get("role") != "source":
            problems.append(f"{name}: proposed as {buckets[name].get('role')}, not a source")
    orders = buckets[ORDERS]
    if orders.get("existing_destinations") != [DR_ARN] or orders.get("dropped_destinations"):
        problems.append(f"{ORDERS}: existing destinations {orders.get('existing_destinations')} "
                        f"(dropped {orders.get('dropped_destinations')}), built [{DR_ARN}] kept")  # fmt: skip
    if not buckets[FINANCE].get("policy"):
        problems.append(f"{FINANCE}: its bucket policy was not found")
    if (buckets[FINANCE].get("encryption") or {}).get("sseAlgorithm") != "aws:kms":
        problems.append(f"{FINANCE}: encryption {buckets[FINANCE].get('encryption')}, built SSE-KMS")
    bucket, ns, name = STREAMED
    if f"{ns}.{name}" not in (buckets[bucket].get("streamed") or []):
        problems.append(f"{bucket}/{ns}.{name}: fed by PutRows, not reported ({buckets[bucket].get('streamed')})")
    return problems


def complete(out: Path) -> Path:
    """Discovery's proposal in `out` completed as the engineer completes it (`REVIEWED`); the completed kit.toml.
    ValueError when it is not discovery's proposal of this world: two adopted sources, the existing destination
    kept as an adopted replica and taken over, every line to review present once."""
    path = out / "kit.toml"
    text = path.read_text()
    takes_over = text.count(f'existing_destinations = ["{DR_ARN}"]') == 1
    if text.count("adopt = true") != 3 or text.count("replicate_to = ") != 2 or not takes_over:
        raise ValueError(f"{path} is not discovery's proposal of the one-account lake")
    if "alarm_subscriptions = []" not in text:
        raise ValueError(f"{path} is not discovery's proposal of the one-account lake (completed already)")
    return write_reviewed(path, text, REVIEWED)


def without_destination(plan: dict[str, Any], destination: str) -> dict[str, Any]:
    """A variant of a saved plan (`terraform show -json`) whose replication configurations no longer name
    `destination`: what an edit dropping the existing replica from the configuration would plan. ValueError when the
    plan names it in no replication configuration."""
    variant = copy.deepcopy(plan)
    dropped = 0
    for rc in variant.get("resource_changes") or []:
        if not str(rc.get("type", "")).endswith("_replication"):
            continue
        for rule in (rc.get("change") or {}).get("after", {}).get("rule") or []:
            kept = [d for d in rule.get("destination") or [] if d.get("destination_table_bucket_arn") != destination]
            dropped += len(rule.get("destination") or []) - len(kept)
            rule["destination"] = kept
    if not dropped:
        raise ValueError(f"no replication configuration of the plan names {destination}")
    return variant
