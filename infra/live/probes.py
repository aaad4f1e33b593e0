"""One probe per item of docs/aws-facts.md's unverified list (ids U1..U39, as in that list): what the kit expects,
what the run observed, the evidence (request id, error code), and a verdict. Items that cannot be probed safely or
cheaply by a one-table run say why.

A contradicted fact with `endangers` set (replication or protection would break) fails the run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

CONFIRMED, CONTRADICTED, NOT_PROBED = "confirmed", "contradicted", "not probed"
DETACHED_PREFIX = "The destination table has been det"
CREATE_TABLE_FLAG = '[protection] replication_role_createtable_dependents = "allow" (docs/aws-facts.md)'
SETUP_FLAG = '[protection] replication_setup = "break-glass" (docs/aws-facts.md)'
SETUP_ACTIONS = ("CreateTable", "CreateNamespace", "PutTableMaintenanceConfiguration")


@dataclass
class Fact:
    id: str
    title: str
    expected: str
    observed: str = ""
    evidence: str = ""
    verdict: str = NOT_PROBED
    change: str = ""  # what the kit should change when contradicted
    endangers: str = ""  # "replication" | "protection" | "" (a contradiction then fails the run)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def evidence_of(resp_or_exc: Any) -> str:
    if isinstance(resp_or_exc, ClientError):
        meta = resp_or_exc.response.get("ResponseMetadata", {})
        code = resp_or_exc.response.get("Error", {}).get("Code", "")
        return f"error {code} (HTTP {meta.get('HTTPStatusCode')}), request id {meta.get('RequestId', '-')}"
    meta = (resp_or_exc or {}).get("ResponseMetadata", {})
    return f"HTTP {meta.get('HTTPStatusCode')}, request id {meta.get('RequestId', '-')}"


def code_of(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


NOT_PROBED_WHY = {
    "U3": "creating a writable table in the replica bucket needs a break-glass write into the replica bucket; left "
    "out so that the run's replica bucket only ever holds what the service created",
    "U4": "needs a rename of a replicated source table and waiting for the service's reaction; not in a one-table run",
    "U7": "a race (a commit in flight at the moment of disassociation): not reproducible on purpose",
    "U12": "would need a deliberate request flood; a sandbox run must not throttle the account",
    "U13": "needs a Glue Hive/Parquet source and the migration service; outside the run's topology",
    "U14": "needs a failover topology (a promoted bucket replicating into the remaining replicas); a run of its own",
    "U15": "needs EMR Serverless (cost and minutes); the run's recovery is local",
    "U16": "observed only as the monitor's first invocation on AWS (the run does not deploy the monitor yet)",
    "U17": "the maintenance service's own KMS calls cannot be made or observed by the run (its replica key is used "
    "by replication; maintenance runs on the service's schedule, after the run)",
    "U19": "needs a staged create that never commits and days of unreferenced-file removal",
    "U21": "an estate's tag-based SCP is not part of the one-table topology",
    "U23": "timing of IAM's tag propagation is not reproducible on purpose",
    "U24": "needs the awscc provider (the run applies with the aws provider)",
    "U28": "needs a replica that sources of two accounts feed (an estate's fan-in vault); the run has one source",
    "U31": "not reached (infra/live/allowlist_facts.py probes it on AWS; the stand-in evaluates no KMS key policy)",
    "U32": "not reached (infra/live/allowlist_facts.py)",
    "U33": "not reached (infra/live/allowlist_facts.py)",
    "U34": "not reached (infra/live/allowlist_facts.py)",
    "U37": "not reached (infra/live/detection_facts.py probes it on AWS; the stand-in's Scheduler fires nothing and "
    "publishes no metric)",
    "U38": "not reached (infra/live/detection_facts.py probes it on AWS; the stand-in runs no EMR Serverless job)",
    "U39": "not reached (infra/live/detection_facts.py)",
}

TITLES = {
    "U1": "AWS resource tags on a source table do not stop its replication",
    "U2": "replication into a KMS-encrypted, Intelligent-Tiering bucket whose policy denies PutTableEncryption/"
    "PutTableStorageClass/TagResource to the replication role works (CreateTable's dependent actions)",
    "U3": "ordinary tables may be created in a destination bucket",
    "U4": "replication of a renamed source table",
    "U5": "DisassociateTableReplication: 200 on a replica; the error code on a table that is not a replica",
    "U6": "after disassociation the source reports FAILED with 'The destination table has been det…'",
    "U7": "a commit in flight at disassociation",
    "U8": "the error a write to a replica gets",
    "U9": "managedByService on replicas (GetTable and ListTables)",
    "U10": "lastSuccessfulReplicatedUpdate.metadataLocation is the replica's own metadata file",
    "U11": "ListTables of a namespace that does not exist",
    "U12": "throttling depends on the caller's rate",
    "U13": "table migration actions' resource levels; who performs the migration's CreateTable",
    "U14": "failover into remaining replica buckets; partial failover; failback",
    "U15": "EMR Serverless without network configuration reading another Region",
    "U16": "Lambda's aws:SourceArn/SourceAccount; EventBridge Scheduler's SourceArn",
    "U17": "the KMS condition of the maintenance service",
    "U18": "pyarrow's single PutObject of a metadata file into table storage",
    "U19": "unreferenced-file removal of a never-committed table; the -N composite checksum suffix",
    "U20": "conditional writes (If-None-Match) on table storage, for recovery leases",
    "U21": "IAM evaluates s3tables:TableBucketTag for DisassociateTableReplication",
    "U22": "a tagged destination bucket receives replicas",
    "U23": "tag conditions see a bucket's tags at once",
    "U24": "awscc re-sends every tag on a tags change",
    "U25": "the Iceberg REST endpoint's loadTable, as a role with GetTableMetadataLocation and GetTableData only",
    "U26": "which snapshots a backfilled replica holds: the source's current state only, or its history too",
    "U27": "replication setup (PutTableBucketReplication) by a role with the setup actions and iam:PassRole but "
    "denied CreateTable/CreateNamespace/PutTableMaintenanceConfiguration on the destination",
    "U28": 'a table bucket policy\'s ${aws:PrincipalAccount} in s3tables:namespace, and Principal "*" grants by '
    "role pattern and account, as the fan-in confinement writes them",
    "U29": "a replica's modifiedAt (GetTable) is not older than its last replicated update",
    "U30": "a Deny added after PutRows accepted rows (the planned failover's freeze) and the service's deferred "
    "commit of those rows",
    "U31": "a KMS key policy's Deny with NotAction binds every principal of the account",
    "U32": 'an S3 bucket policy\'s Deny with Principal "*" and NotAction',
    "U33": "a bucket policy refusing PutObject without If-None-Match (s3:if-none-match) on an Object Lock bucket",
    "U34": "s3:object-lock-remaining-retention-days caps a retain-until date (PutObject, PutObjectRetention)",
    "U35": "a replicating bucket's configuration replaced in place: its existing replicas go on receiving commits",
    "U36": "UpdateTableMetadataLocation accepts a metadata file with a snapshot dated a day ahead and a snapshot log "
    "going back a day",
    "U37": "AWS/Scheduler counts each attempt and each dropped start of a universal-target schedule under its own "
    "ScheduleGroup",
    "U38": "AWS/EMRServerless publishes FailedJobs/CancelledJobs of a 7.10+ application under ApplicationId and "
    "ApplicationName",
    "U39": "a Lambda function's GetFunctionConfiguration from another account, granted by the function's resource "
    "policy (AddPermission with the account as principal)",
}


def blank_facts() -> dict[str, Fact]:
    out = {}
    for fid, title in TITLES.items():
        out[fid] = Fact(fid, title, expected="-", observed=NOT_PROBED_WHY.get(fid, ""))
    return out


def judge(
    fact: Fact, expected: str, ok: bool, observed: str, evidence: str, *, change: str, endangers: str = ""
) -> Fact:
    fact.expected, fact.observed, fact.evidence = expected, observed, evidence
    fact.verdict = CONFIRMED if ok else CONTRADICTED
    fact.change = "" if ok else change
    fact.endangers = endangers
    return fact


@dataclass
class Observed:
    """What the run's steps saw, handed to the probes (no probe repeats a step's calls)."""

    statuses: dict[str, dict[str, Any]]  # source table ARN -> the last GetTableReplicationStatus destination entry
    writer_ok: bool
    writer_tail: str
    detach: Any  # the break-glass DisassociateTableReplication response (or ClientError)
    detached_status: dict[str, Any]  # the throwaway source's destination entry after the detach and a commit
    first_throwaway: dict[str, Any]  # the tagged throwaway table's destination entry after its first replication


def judge_replication(facts: dict[str, Fact], obs: Observed, world: dict[str, Any], plan_ns: str) -> bool:
    """U1, U2, U18, U22 from what the commits saw; True when the main table replicated."""
    main_status = obs.statuses.get(world["tables"][plan_ns], {})
    state = str(main_status.get("replicationStatus", "")).lower()
    completed = state == "completed" and "destinationTableArn" in main_status
    why = str(main_status.get("failureMessage", ""))
    seen = f"replicationStatus {main_status.get('replicationStatus')} {why}".strip()
    for fid, expected, blames, change in (
        ("U2", "the replica is created and COMPLETED in the KMS-encrypted, Intelligent-Tiering replica bucket although "
         "its policy denies the CreateTable dependent actions to the replication role", ("denied", "not authorized"),
         f"exempt the replication role from the CreateTable dependent-action denies: set {CREATE_TABLE_FLAG}"),
        ("U22", "replicas arrive in a destination bucket tagged with the run id", ("tag",),
         "do not tag replica buckets (an estate tags every protected bucket: protect estates by name instead)"),
    ):  # fmt: skip
        if completed or any(b in why.lower() for b in blames):
            judge(
                facts[fid],
                expected,
                completed,
                seen,
                "GetTableReplicationStatus",
                change=change,
                endangers="replication",
            )
        else:
            facts[fid].expected, facts[fid].observed = expected, f"undecided: replication failed otherwise: {seen}"
    thr = obs.first_throwaway
    judge(
        facts["U1"], "a source table with AWS resource tags is replicated",
        str(thr.get("replicationStatus", "")).lower() == "completed",
        f"first replication of the tagged table: {thr.get('replicationStatus')} {thr.get('failureMessage', '')}",
        "GetTableReplicationStatus",
        change="keep `[tags] on_replicated_source_tables` off and say so in the configuration reference",
    )  # fmt: skip
    judge(
        facts["U18"], "the writer's commit (pyarrow PutObject of metadata and data) succeeds", obs.writer_ok,
        obs.writer_tail or "committed", "python -m s3tables_kit.jobs.failover.writer",
        change="write metadata files with a multipart upload", endangers="replication",
    )  # fmt: skip
    return completed


def run_probes(
    facts: dict[str, Fact],
    obs: Observed,
    s3tables_src: Any,
    s3tables_dst_breakglass: Any,
    s3_src: Any,
    world: dict[str, Any],
    replicas: dict[str, str],
    plan_ns: str,
) -> None:
    """The probes that need the replica (call after `judge_replication` said it exists)."""
    main_src = world["tables"][plan_ns]
    _probe_detach(facts, obs, s3tables_src, world)
    _probe_replica(facts, s3tables_dst_breakglass, replicas[main_src], obs.statuses.get(main_src, {}))
    _probe_missing_namespace(facts["U11"], s3tables_src, world["source"])
    _probe_conditional_write(facts["U20"], s3tables_src, s3_src, world["source"], plan_ns)
    probe_untrusted_times(facts["U36"], s3tables_src, s3_src, world["tables"]["throwaway"])


def note_replica_settings(fact: Fact, dst: Any, replica_arn: str) -> None:
    """U2's replica as created: its encryption and storage class (the destination bucket's, which the service is
    expected to apply without the dependent actions)."""
    bucket_arn, _, _ = replica_arn.partition("/table/")
    table = dst.get_table(tableArn=replica_arn)
    where = {"tableBucketARN": bucket_arn, "namespace": table["namespace"][0], "name": table["name"]}
    enc = dst.get_table_encryption(**where).get("encryptionConfiguration", {})
    storage = dst.get_table_storage_class(**where).get("storageClassConfiguration", {})
    fact.observed += (
        f"; the replica: {enc.get('sseAlgorithm')} {enc.get('kmsKeyArn', '')}".rstrip()
        + f", {storage.get('storageClass')}"
    )


def probe_replication_setup(fact: Fact, setup: Any, src: Any, source_bucket_arn: str, cross_account: bool) -> None:
    """U27: the source's deploy role (the setup actions and `iam:PassRole` of the replication role; CreateTable,
    CreateNamespace and PutTableMaintenanceConfiguration denied on the destination by its own policy and by the
    replica bucket's) puts the source's current replication configuration back, unchanged. `setup`: an s3tables
    client as that role; `src`: the source account's."""
    where = "in another account" if cross_account else "in the same account"
    expected = f"the setup succeeds without the destination permissions (destination {where})"
    current = src.get_table_bucket_replication(tableBucketARN=source_bucket_arn)
    try:
        got = setup.put_table_bucket_replication(
            tableBucketARN=source_bucket_arn,
            configuration=current["configuration"],
            versionToken=current["versionToken"],
        )
        observed, ev, ok = "PutTableBucketReplication accepted", evidence_of(got), True
    except ClientError as exc:
        message = str(exc.response.get("Error", {}).get("Message", ""))
        observed, ev, ok = f"{code_of(exc)}: {message}", evidence_of(exc), False
        if not any(f"s3tables:{a}" in message for a in SETUP_ACTIONS):
            fact.expected, fact.observed, fact.evidence = expected, f"undecided: refused otherwise: {observed}", ev
            return
    judge(
        fact, expected, ok, observed, ev,
        change=f"replication setup needs the destination permissions the kit denies to deploy roles: set {SETUP_FLAG}"
        " and apply replication configurations (a cross-account source's first apply, a failover's re-protection) "
        "as break-glass",
        endangers="replication",
    )  # fmt: skip


def _probe_detach(facts: dict[str, Fact], obs: Observed, src: Any, world: dict[str, Any]) -> None:
    detach = obs.detach
    ok = not isinstance(detach, ClientError)
    try:
        src.disassociate_table_replication(tableArn=world["tables"]["throwaway"])  # not a replica: a source table
        code, ev = "(no error)", "HTTP 200"
    except ClientError as exc:
        code, ev = code_of(exc), evidence_of(exc)
    judge(
        facts["U5"], "HTTP 200 on a replica; BadRequestException on a table that is not a replica",
        ok and code == "BadRequestException", f"replica: {evidence_of(detach)}; not a replica: {code}", ev,
        change=f"record {code} as DisassociateTableReplication's answer for a non-replica in jobs/failover "
        "(the tool re-reads GetTable, so nothing breaks)",
    )  # fmt: skip
    st = obs.detached_status
    msg = str(st.get("failureMessage", ""))
    judge(
        facts["U6"], "FAILED, message beginning 'The destination table has been det'",
        str(st.get("replicationStatus", "")).lower() == "failed" and msg.startswith(DETACHED_PREFIX),
        f"{st.get('replicationStatus')}: {msg!r}; lastSuccessfulReplicatedUpdate kept: "
        f"{'lastSuccessfulReplicatedUpdate' in st}", "GetTableReplicationStatus",
        change="match the observed message in jobs/ops/status (detached replicas)",
    )  # fmt: skip


def _probe_modified_at(fact: Fact, table: dict[str, Any], status: dict[str, Any]) -> None:
    """U29: the replication service's commit moves the replica's `modifiedAt` (what the freshness check compares)."""
    modified, replicated = table.get("modifiedAt"), status.get("lastSuccessfulReplicatedUpdate", {}).get("timestamp")
    ok = modified is not None and replicated is not None and modified >= replicated - timedelta(seconds=60)
    judge(
        fact, "modifiedAt >= lastSuccessfulReplicatedUpdate.timestamp (within a minute)", ok,
        f"modifiedAt {modified}; last replicated update {replicated}", evidence_of(table),
        change="compare the replicas' snapshot commit times in jobs/ops/freshness.py instead of modifiedAt",
    )  # fmt: skip


def _probe_replica(facts: dict[str, Fact], dst: Any, replica_arn: str, status: dict[str, Any]) -> None:
    table = dst.get_table(tableArn=replica_arn)
    bucket_arn = replica_arn.split("/table/")[0]
    listed = [
        t for t in dst.list_tables(tableBucketARN=bucket_arn, namespace=table["namespace"][0])["tables"]
        if t["tableARN"] == replica_arn
    ]  # fmt: skip
    value, listed_value = table.get("managedByService"), listed[0].get("managedByService") if listed else None
    judge(
        facts["U9"], "managedByService = replication.s3tables.amazonaws.com in GetTable and ListTables",
        value == listed_value == "replication.s3tables.amazonaws.com",
        f"GetTable {value!r}; ListTables {listed_value!r}", evidence_of(table),
        change="compare managedByService with the observed value where the kit tells replicas apart",
    )  # fmt: skip
    _probe_modified_at(facts["U29"], table, status)
    loc = dst.get_table_metadata_location(
        tableBucketARN=bucket_arn, namespace=table["namespace"][0], name=table["name"]
    )
    reported = status.get("lastSuccessfulReplicatedUpdate", {}).get("metadataLocation")
    judge(
        facts["U10"], "the replica's own current metadata file", reported == loc.get("metadataLocation"),
        f"status {reported}; replica {loc.get('metadataLocation')}", evidence_of(loc),
        change="keep the GetTable per replica in `status` (the optimisation stays off)",
    )  # fmt: skip
    try:
        dst.update_table_metadata_location(
            tableBucketARN=bucket_arn, namespace=table["namespace"][0], name=table["name"],
            versionToken=loc["versionToken"], metadataLocation=f"{table['warehouseLocation']}/metadata/x.metadata.json",
        )  # fmt: skip
        code, ev = "(accepted!)", "HTTP 200"
    except ClientError as exc:
        code, ev = code_of(exc), evidence_of(exc)
    judge(
        facts["U8"], "ForbiddenException (the service's read-only answer, as break-glass)",
        code == "ForbiddenException", code, ev,
        change=f"treat {code} as a replica's read-only answer in the recovery and failover tools",
        endangers="protection" if code == "(accepted!)" else "",
    )  # fmt: skip


def probe_rest_load(fact: Fact, endpoint: str, region: str, creds: dict[str, str], replica: dict[str, Any]) -> None:
    """U25: `status`'s first-run read of a window (jobs/kernel/iceberg_rest.py), made here with botocore's signer alone
    so that the probe does not take the kit's client on trust: loadTable of the replica (`replica`: its GetTable),
    signed as the run's reader role, which holds s3tables:GetTableMetadataLocation and s3tables:GetTableData only.
    `endpoint`: the S3 Tables endpoint of the replica's Region (an s3tables client's, so the partition's)."""
    import json
    from urllib.parse import quote

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from botocore.exceptions import BotoCoreError
    from botocore.httpsession import URLLib3Session

    bucket_arn = str(replica["tableARN"]).split("/table/")[0]
    path = "/iceberg/v1/{}/namespaces/{}/tables/{}".format(
        *(quote(x, safe="") for x in (bucket_arn, replica["namespace"][0], replica["name"]))
    )
    request = AWSRequest(method="GET", url=endpoint.rstrip("/") + path, headers={"Accept": "application/json"})
    signer = Credentials(creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
    SigV4Auth(signer, "s3tables", region).add_auth(request)
    expected = "HTTP 200 with the replica's current metadata-location and its metadata"
    try:
        response = URLLib3Session().send(request.prepare())
    except BotoCoreError as exc:  # the endpoint unreachable: the fact is undecided, the run goes on
        fact.expected, fact.observed = expected, f"undecided: the request failed: {type(exc).__name__}: {exc}"
        return
    try:
        doc = json.loads(response.content)
    except ValueError:
        doc = None
    answer = doc if isinstance(doc, dict) else {}
    location = answer.get("metadata-location")
    judge(
        fact, expected,
        response.status_code == 200 and location == replica.get("metadataLocation")
        and isinstance(answer.get("metadata"), dict),
        f"HTTP {response.status_code}: {location or bytes(response.content[:300]).decode('utf-8', 'replace')}",
        f"GET {path}, request id {response.headers.get('x-amzn-RequestId', '-')}",
        change="nothing for correctness (`status` reads the windows with GetTableMetadataLocation and GetObject "
        "after the first refused answer of a run); to keep its single first-run read, grant the roles `make status` "
        "runs under what the error names, or record the endpoint's real prefix in jobs/kernel/iceberg_rest.py",
    )  # fmt: skip


def _probe_missing_namespace(fact: Fact, src: Any, bucket_arn: str) -> None:
    missing = f"kitlv_missing_{uuid.uuid4().hex[:6]}"
    try:
        got = src.list_tables(tableBucketARN=bucket_arn, namespace=missing)
        observed, ev = f"{len(got.get('tables', []))} tables, no error", evidence_of(got)
    except ClientError as exc:
        observed, ev = code_of(exc), evidence_of(exc)
    judge(
        fact, "an empty list or NotFoundException (the planner lists namespaces first, so either is fine)",
        observed.endswith("no error") or observed == "NotFoundException", observed, ev,
        change="handle the observed answer where a namespace is listed",
    )  # fmt: skip


def _probe_conditional_write(fact: Fact, src: Any, s3: Any, bucket_arn: str, ns: str) -> None:
    table = next(t for t in src.list_tables(tableBucketARN=bucket_arn, namespace=ns)["tables"])
    got = src.get_table(tableBucketARN=bucket_arn, namespace=ns, name=table["name"])
    warehouse = got["warehouseLocation"].removeprefix("s3://")
    bucket, _, prefix = warehouse.partition("/")
    key = f"{prefix}/kit-live-verify/lease-{uuid.uuid4().hex[:8]}.json".lstrip("/")
    put: Callable[[], Any] = lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"{}", IfNoneMatch="*")  # noqa: E731
    first = put()
    try:
        second = put()
        observed, ev = "second write accepted", evidence_of(second)
    except ClientError as exc:
        observed, ev = f"second write refused: {code_of(exc)}", evidence_of(exc)
    judge(
        fact, "the first If-None-Match write succeeds, the second is refused (PreconditionFailed)",
        observed == "second write refused: PreconditionFailed", f"first {evidence_of(first)}; {observed}", ev,
        change="recovery leases: fall back to a lease table or DynamoDB conditional writes",
    )  # fmt: skip


DAY_MS = 86_400_000


def untrusted_times(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` (a table's current metadata) with its current snapshot dated a day ahead and, after it, a snapshot-log
    entry dated a day before the log's first: the times `s3tables_kit.jobs.kernel.snapshot_times` reports (pure)."""
    out = json.loads(json.dumps(doc))
    current = out["current-snapshot-id"]
    ahead = max(int(s["timestamp-ms"]) for s in out["snapshots"]) + DAY_MS
    for s in out["snapshots"]:
        if s["snapshot-id"] == current:
            s["timestamp-ms"] = ahead
    log = out.setdefault("snapshot-log", [])
    first = min([int(e["timestamp-ms"]) for e in log] or [ahead - DAY_MS])
    log += [{"snapshot-id": current, "timestamp-ms": ahead}, {"snapshot-id": current, "timestamp-ms": first - DAY_MS}]
    out["last-updated-ms"] = ahead
    return out


def probe_untrusted_times(fact: Fact, src: Any, s3: Any, table_arn: str) -> None:
    """U36: commit, to the run's throwaway source table, a copy of its metadata whose times a reader must not trust
    (`untrusted_times`), then put its previous metadata location back. The kit relies on neither answer: `status`,
    `audit`, the rehearsal and `--as-of` judge the times they read."""
    table = src.get_table(tableArn=table_arn)
    where = {"tableBucketARN": table_arn.split("/table/")[0], "namespace": table["namespace"][0], "name": table["name"]}
    loc = src.get_table_metadata_location(**where)
    previous = loc.get("metadataLocation")
    expected = "accepted: S3 Tables does not check a metadata file's snapshot times (the kit judges them itself)"
    if not previous:
        fact.expected, fact.observed = expected, "undecided: the throwaway table has no metadata to copy"
        return
    bucket, _, key = previous.removeprefix("s3://").partition("/")
    doc = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    forged = f"{key.rsplit('/', 1)[0]}/99999-kit-live-verify-{uuid.uuid4().hex[:8]}.metadata.json"
    s3.put_object(Bucket=bucket, Key=forged, Body=json.dumps(untrusted_times(doc)).encode())
    try:
        got = src.update_table_metadata_location(
            **where, versionToken=loc["versionToken"], metadataLocation=f"s3://{bucket}/{forged}"
        )
        observed, ev, accepted = "accepted", evidence_of(got), True
    except ClientError as exc:
        observed, ev, accepted = f"refused: {code_of(exc)}", evidence_of(exc), False
    if accepted:  # the table's own metadata back, as the run found it
        token = src.get_table_metadata_location(**where)["versionToken"]
        src.update_table_metadata_location(**where, versionToken=token, metadataLocation=previous)
    judge(
        fact, expected, accepted, observed, ev,
        change="nothing endangers protection: record in docs/aws-facts.md that S3 Tables refuses such a metadata "
        "file, with the error code observed (the kit's findings stay, a second layer)",
    )  # fmt: skip
