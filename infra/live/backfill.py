"""U26: which snapshots a backfilled replica holds, and U35: what replacing a replicating bucket's configuration does
to its replicas (docs/aws-facts.md, "Unverified AWS behaviours").

A source table of its own bucket (`<run>-bfsrc`) gets several snapshots from the run's writer *before* any replication
configuration names it; then replication is turned on (bucket level, into `<run>-bfdst`, with a replication role of its
own, `<run>-bf-replication`), and once the table's status is COMPLETED the replica's snapshots are counted from its
own current metadata. One snapshot is reading (a), "the current state only"; as many as the source retained is reading
(b), "the history too". Either reading leaves the kit's handling standing (status and recovery read each replica's own
snapshots), so the fact is confirmed with the reading named; anything else is contradicted.

U35, on the same pair once the backfill completed: the configuration is replaced in place as the first deploy of an
adopted bucket takes it over (PutTableBucketReplication with its version token, the same destination), then the source
is committed to once more. The kit expects the existing replica to go on receiving the source's commits (the same
replica table, COMPLETED, no second table and no new backfill); anything else is contradicted.

Both buckets and the role carry the run's prefix and tag, so the run's cleanup removes them like the rest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from s3tables_kit.infra.live.plan import RunPlan
from s3tables_kit.infra.live.probes import NOT_PROBED, Fact, evidence_of, judge
from s3tables_kit.infra.live.world import LiveTarget

COMMITS = 3  # snapshots the source table has before replication reaches it
POLL_S, WAIT_S = 10.0, 900.0  # AWS: a first backfill, and a new role's propagation, can take minutes
Writer = Callable[[str], tuple[bool, str]]  # bucket ARN -> (every table committed, the error's last line)


def _replication_role(target: LiveTarget, plan: RunPlan, src_arn: str, dst_arn: str) -> str:
    """A replication role for the probe's pair only (the kit's own role is scoped to the run's main buckets)."""
    s = plan.settings
    iam = target.client("iam", "us-east-1", s.account_id)
    name = plan.name("bf-replication")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "replication.s3tables.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": s.account_id}},
            }
        ],
    }
    permissions = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadSource",
                "Effect": "Allow",
                "Action": [
                    "s3tables:GetTable",
                    "s3tables:GetTableMetadataLocation",
                    "s3tables:GetTableMaintenanceConfiguration",
                    "s3tables:GetTableData",
                    "s3tables:ListTables",
                ],
                "Resource": [src_arn, f"{src_arn}/table/*"],
            },
            {
                "Sid": "WriteReplica",
                "Effect": "Allow",
                "Action": [
                    "s3tables:CreateTable",
                    "s3tables:CreateNamespace",
                    "s3tables:PutTableData",
                    "s3tables:GetTableData",
                    "s3tables:UpdateTableMetadataLocation",
                    "s3tables:PutTableMaintenanceConfiguration",
                ],
                "Resource": [dst_arn, f"{dst_arn}/table/*"],
            },
        ],
    }
    arn = iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(trust),
        Tags=[{"Key": k, "Value": v} for k, v in plan.tags.items()],
    )["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="permissions", PolicyDocument=json.dumps(permissions))
    return str(arn)


def snapshot_count(target: LiveTarget, client: Any, account: str, bucket_arn: str, ns: str, name: str) -> int:
    """Snapshots the table's current Iceberg metadata retains (its metadata file, read with S3)."""
    loc = client.get_table_metadata_location(tableBucketARN=bucket_arn, namespace=ns, name=name)["metadataLocation"]
    bucket, _, key = str(loc).removeprefix("s3://").partition("/")
    body = target.client("s3", client.meta.region_name, account).get_object(Bucket=bucket, Key=key)["Body"].read()
    return len(json.loads(body).get("snapshots") or [])


def probe_backfill_history(
    fact: Fact,
    target: LiveTarget,
    plan: RunPlan,
    writer: Writer,
    replicate: Callable[[str], None] | None = None,
    replaced: Fact | None = None,
) -> None:
    """U26 and, with `replaced`, U35 (module docstring). `replicate`: the stand-in's replication service, given a turn
    on a source table ARN (None on AWS: the service runs by itself). Leaves a fact undecided (not probed, with why)
    when the backfill never completes or a request fails."""
    try:
        pair = _probe(fact, target, plan, writer, replicate)
        if pair is not None and replaced is not None:
            _probe_replaced(replaced, pair, writer, replicate)
    except ClientError as exc:
        for f in (fact, replaced):
            if f is not None and f.verdict == NOT_PROBED:
                f.observed = f"undecided: {evidence_of(exc)}: {exc}"


def _wait_completed(
    src: Any, table_arn: str, replicate: Callable[[str], None] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table's replication status and its destination entry once COMPLETED (or when the wait is over)."""
    deadline = time.monotonic() + (0 if replicate is not None else WAIT_S)
    while True:
        if replicate is not None:  # the stand-in's replication service takes its turn
            replicate(table_arn)
        got = src.get_table_replication_status(tableArn=table_arn)
        dest = dict((got.get("destinations") or [{}])[0])
        if str(dest.get("replicationStatus", "")).lower() == "completed" or time.monotonic() >= deadline:
            return got, dest
        time.sleep(POLL_S)


def _probe_replaced(
    fact: Fact, pair: tuple[Any, str, str, dict[str, Any]], writer: Writer, replicate: Callable[[str], None] | None
) -> None:
    """U35 (module docstring): the configuration replaced in place, then one more commit."""
    src, src_arn, table_arn, conf = pair
    before = src.get_table_replication_status(tableArn=table_arn)["destinations"][0]
    token = src.get_table_bucket_replication(tableBucketARN=src_arn)["versionToken"]
    put = src.put_table_bucket_replication(tableBucketARN=src_arn, versionToken=token, configuration=conf)
    ok, tail = writer(src_arn)
    if not ok:
        fact.observed = f"undecided: the writer failed after the configuration was replaced: {tail}"
        return
    _, after = _wait_completed(src, table_arn, replicate)
    moved = after.get("lastSuccessfulReplicatedUpdate", {}).get("timestamp") != before.get(
        "lastSuccessfulReplicatedUpdate", {}
    ).get("timestamp")
    same = after.get("destinationTableArn") == before.get("destinationTableArn")
    judge(
        fact,
        "after PutTableBucketReplication with its version token (same destination), the existing replica receives "
        "the next commit: the same replica table, COMPLETED",
        same and moved and str(after.get("replicationStatus", "")).lower() == "completed",
        f"replica {before.get('destinationTableArn')} -> {after.get('destinationTableArn')}; status "
        f"{after.get('replicationStatus')}; last replicated update moved: {moved}",
        evidence_of(put),
        change="say in docs/adoption.md what replacing the configuration does to existing replicas; the takeover "
        "may need a re-backfill (status --backfill) or keep the adopter's configuration until the replicas caught up",
        endangers="replication",
    )


def _probe(
    fact: Fact, target: LiveTarget, plan: RunPlan, writer: Writer, replicate: Callable[[str], None] | None
) -> tuple[Any, str, str, dict[str, Any]] | None:
    """U26; the pair (source client, source bucket, table, configuration) once the backfill completed."""
    s = plan.settings
    src = target.client("s3tables", s.source_region, s.account_id)
    dst = target.client("s3tables", s.replica_region, s.replica_account_id)
    enc = {"sseAlgorithm": "AES256"}
    src_arn = src.create_table_bucket(name=plan.name("bfsrc"), encryptionConfiguration=enc, tags=plan.tags)["arn"]
    dst_arn = dst.create_table_bucket(name=plan.name("bfdst"), encryptionConfiguration=enc, tags=plan.tags)["arn"]
    for bucket_arn, client in ((src_arn, src), (dst_arn, dst)):  # the stand-in's moto drops create-time tags
        client.tag_resource(resourceArn=bucket_arn, tags=plan.tags)
    ns, name = plan.namespace, plan.table
    src.create_namespace(tableBucketARN=src_arn, namespace=[ns])
    table_arn = src.create_table(tableBucketARN=src_arn, namespace=ns, name=name, format="ICEBERG")["tableARN"]
    for _ in range(COMMITS):
        ok, tail = writer(src_arn)
        if not ok:
            fact.observed = f"undecided: the writer failed before replication was turned on: {tail}"
            return None
    source_snapshots = snapshot_count(target, src, s.account_id, src_arn, ns, name)
    role = _replication_role(target, plan, src_arn, dst_arn)
    conf = {"role": role, "rules": [{"destinations": [{"destinationTableBucketARN": dst_arn}]}]}
    src.put_table_bucket_replication(tableBucketARN=src_arn, configuration=conf)
    fact.expected = (
        f"after the backfill, the replica holds 1 snapshot (reading a: the current state only) or all "
        f"{source_snapshots} of the source's (reading b: the history too)"
    )
    got, dest = _wait_completed(src, table_arn, replicate)
    state = str(dest.get("replicationStatus", "")).lower()
    if state != "completed":
        why = f"{dest.get('replicationStatus')} {dest.get('failureMessage', '')}".strip()
        fact.observed = f"undecided: the backfill did not complete: {why}"
        return None
    replica = snapshot_count(target, dst, s.replica_account_id, dst_arn, ns, name)
    reading = {1: "a (the current state only)", source_snapshots: "b (the history too)"}.get(replica)
    where = "; the stand-in: the emulator's replication copies the source's metadata whole" if target.local else ""
    judge(
        fact,
        fact.expected,
        source_snapshots > 1 and reading is not None,
        f"source {source_snapshots} snapshots before replication; replica {replica} after the backfill: "
        f"reading {reading or 'neither'}{where}",
        evidence_of(got),
        change="record the observed count in docs/aws-facts.md and docs/recovery.md ('A replica still backfilling')",
    )
    return src, src_arn, table_arn, conf
