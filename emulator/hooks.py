"""The test control endpoint (`/_kit_test/...`): reset, faults, latency, stats, replication status, holds and
simulation, bulk seeding, accounts and organizations. `control.Control` is its client."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Iterable
from typing import Any

from emulator import live, resource_policy, served, streaming
from emulator.lookup import _backend, _s3_backend, get_bucket, get_table_by_arn, reset_state
from emulator.replication import effective_destinations, replication_role
from emulator.state import _BUCKET_ARN_RE, DETACHED_FAILURE, STATE, Fault, _iso, _parse_ts, not_found

# ----------------------------------------------------------------------------------------------------
# Test control endpoint (/_kit_test/...)
# ----------------------------------------------------------------------------------------------------


def write_metadata(table: Any, doc: dict[str, Any], version: int) -> str:
    """Write an Iceberg metadata JSON into the table's warehouse (its moto S3 bucket) and return its
    location."""
    bucket_name = table.warehouse_location.removeprefix("s3://")
    key = f"metadata/{version:05d}-{uuid.uuid4()}.metadata.json"
    _s3_backend(table.account_id, table.partition).put_object(
        bucket_name=bucket_name, key_name=key, value=json.dumps(doc).encode()
    )
    return f"{table.warehouse_location}/{key}"


def metadata_doc(table: Any, commit_ms: Iterable[int], summary: dict[str, str] | None = None) -> dict[str, Any]:
    """A minimal Iceberg v2 metadata document with one snapshot per commit time: every field the spec requires
    (pyiceberg's table model accepts it), its manifest lists named but not written. `summary`: more snapshot summary
    fields (``total-files-size``, ``total-records``, ...) on every snapshot, as a writer's commit records them."""
    commits = sorted(commit_ms)
    snaps = [
        {
            "snapshot-id": i + 1,
            "sequence-number": i + 1,
            "timestamp-ms": ms,
            "manifest-list": f"{table.warehouse_location}/metadata/snap-{i + 1}.avro",
            "summary": {"operation": "append", **(summary or {})},
        }
        for i, ms in enumerate(commits)
    ]
    return {
        "format-version": 2,
        "table-uuid": getattr(table, "table_id", str(uuid.uuid4())),
        "location": table.warehouse_location,
        "last-sequence-number": len(commits),
        "last-updated-ms": commits[-1] if commits else 0,
        "last-column-id": 1,
        "last-partition-id": 999,
        "current-snapshot-id": len(commits) if commits else -1,
        "snapshots": snaps,
        "snapshot-log": [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in snaps],
        "metadata-log": [],
        # a one-column schema, unpartitioned: enough for readers that parse the table (the recovery planner)
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
        ],
        "current-schema-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "default-spec-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "properties": {},
    }


def _control(path: str, body: dict[str, Any]) -> dict[str, Any]:
    if path == "health":  # the pid tells a starting Emulator that the server answering is its own child
        return {"ok": True, "pid": os.getpid()}
    if path == "reset":
        from moto.moto_api._internal.models import moto_api_backend

        moto_api_backend.reset()
        reset_state()
        return {"ok": True}
    if path.startswith("live/"):  # make live-verify's authorization, replication service and switches
        return live.control(path.removeprefix("live/"), body)
    if path == "enforce-policies":
        return resource_policy.control(body)
    if path == "served":  # the record of what was served, per deploy phase (`emulator.served`)
        return served.control(body)
    if path == "putrows":
        return streaming.control(body)
    if path == "faults":
        for f in body.get("faults", []):
            STATE.faults.append(Fault(**f))
        return {"ok": True}
    if path == "latency":
        if body.get("operation"):
            STATE.latency[body["operation"]] = float(body["seconds"])
            if body.get("count"):  # only the next `count` calls (a slow first answer, then normal ones)
                STATE.latency_left[body["operation"]] = int(body["count"])
            if body.get("after"):  # the work is done at once, the answer is slow (what a client's timeout sees)
                STATE.latency_after.add(body["operation"])
        if body.get("service"):
            STATE.service_latency[body["service"]] = float(body["seconds"])
        return {"ok": True}
    if path == "stats":
        return {
            "calls": dict(STATE.calls),
            "s3_calls": dict(STATE.s3_calls),
            "s3_refused": list(STATE.s3_refused),
            "plain_reads": STATE.plain_reads,
            "max_in_flight": STATE.max_in_flight,
            "faults": [f.view() for f in STATE.faults],
        }
    if path == "replication-status":
        for item in body.get("items", [body]):
            key = (item["sourceTableArn"], item["destinationTableBucketArn"])
            st = {k: v for k, v in item.items() if k not in ("sourceTableArn", "destinationTableBucketArn")}
            st["replicationStatus"] = st["replicationStatus"].lower()
            if st.get("merge"):
                merged = dict(STATE.repl_status.get(key, {}))
                merged.update({k: v for k, v in st.items() if k != "merge"})
                st = merged
            STATE.repl_status[key] = st
        return {"ok": True}
    if path == "managed-by":  # a table another AWS service writes (zero-ETL, catalog export): its managedByService
        STATE.managed_by[str(body["tableArn"])] = str(body["service"])
        return {"ok": True}
    if path == "replication-hold":
        return _hold(body)
    if path == "replicate":
        return {"replicated": _replicate(body)}
    if path == "seed":
        return {"tables": _seed(body)}
    if path == "accounts":
        return {"accounts": _seed_accounts(body["accounts"])}
    if path == "organization":
        return _seed_organization(body)
    raise not_found(f"unknown control path {path}")


E2E_USER = "kit-e2e"


def _seed_accounts(accounts: list[str]) -> dict[str, dict[str, str]]:
    """One IAM user with an access key in each account (idempotent). moto serves a request as the account that holds
    its access key, so a client with the key of account A creates and reads A's resources: the configuration's own
    account ids, not moto's default account."""
    from moto.iam.models import iam_backends

    out = {}
    for account in accounts:
        iam = iam_backends[account]["aws"]
        if E2E_USER not in iam.users:
            iam.create_user(region_name="us-east-1", user_name=E2E_USER)
        keys = iam.list_access_keys(E2E_USER) or [iam.create_access_key(E2E_USER)]
        out[account] = {"accessKeyId": keys[0].access_key_id, "secretAccessKey": keys[0].secret_access_key}
    return out


def _seed_organization(body: dict[str, Any]) -> dict[str, Any]:
    """An organization whose management account is `managementAccountId`, with the organizational units of the
    configuration under their own ids (`ous`: {ou id: [member account ids]}) and `accounts` (direct members).
    Idempotent. moto creates OUs and accounts only with random ids, so they are placed in its backend here."""
    from moto.organizations.models import FakeAccount, FakeOrganizationalUnit, organizations_backends

    management = body["managementAccountId"]
    org_backend = organizations_backends[management]["aws"]
    if org_backend.org is None:
        org_backend.create_organization(region="us-east-1", FeatureSet="ALL")
    org = org_backend.org
    assert org is not None
    known_accounts = {a.id for a in org_backend.accounts}

    def member(account: str, parent: str) -> None:
        if account in known_accounts or account == management:
            return
        acct = FakeAccount(org, AccountName=f"kit-{account}", Email=f"{account}@example.invalid")
        acct.id = account
        acct.parent_id = parent
        org_backend.accounts.append(acct)
        organizations_backends.master_accounts[account] = (management, "aws")
        known_accounts.add(account)

    for ou_id, accounts in sorted(body.get("ous", {}).items()):
        if not any(o.id == ou_id for o in org_backend.ou):
            ou = FakeOrganizationalUnit(org, Name=ou_id, ParentId=org.root_id)
            ou.id = ou_id
            org_backend.ou.append(ou)
        for account in accounts:
            member(account, ou_id)
    for account in body.get("accounts", []):
        member(account, org.root_id)
    return {"organizationId": org.id, "rootId": org.root_id}


def _hold(body: dict[str, Any]) -> dict[str, Any]:
    """Keep one source table's replication to one destination at PENDING (a slow backfill) or FAILED (with
    `failureMessage`) whatever the replication simulation does, until `release`; the status is reported at once."""
    key = (str(body["sourceTableArn"]), str(body["destinationTableBucketArn"]))
    if body.get("release"):
        STATE.repl_hold.pop(key, None)
        return {"ok": True}
    held = {"replicationStatus": str(body.get("replicationStatus") or "pending").lower()}
    if body.get("failureMessage"):
        held["failureMessage"] = str(body["failureMessage"])
    STATE.repl_hold[key] = held
    previous = {k: v for k, v in STATE.repl_status.get(key, {}).items() if k != "failureMessage"}
    STATE.repl_status[key] = {**previous, **held}
    return {"ok": True}


def _replicate(body: dict[str, Any]) -> list[dict[str, str]]:
    """Simulate the replication service: for each source table (one ARN or every table in a bucket) and each
    destination of its effective configuration, create or update the replica (same namespace and name,
    metadata
    copied into the replica's warehouse) and mark the destination COMPLETED at `timestamp` (default now)."""
    if body.get("sourceTableArn"):
        tables = [get_table_by_arn(body["sourceTableArn"])]
    else:
        bucket = get_bucket(body["sourceBucketArn"])
        tables = [t for ns in bucket.namespaces.values() for t in ns.tables.values()]
    when = _parse_ts(body["timestamp"]) if body.get("timestamp") else dt.datetime.now(dt.UTC)
    only = body.get("destinations")
    done = []
    for t in tables:
        for d in effective_destinations(t) or []:
            if only and d not in only:
                continue
            held = STATE.repl_hold.get((t.arn, d))
            if held is not None:  # a held backfill: nothing copied, the held status stays
                previous = {k: v for k, v in STATE.repl_status.get((t.arn, d), {}).items() if k != "failureMessage"}
                STATE.repl_status[(t.arn, d)] = {**previous, **held}
                continue
            refused = source_read_refused(t)
            if refused:  # the replication role may not read the source (a Deny in its bucket or table policy)
                previous = STATE.repl_status.get((t.arn, d), {})
                failure = f"AccessDenied: {refused}"
                STATE.repl_status[(t.arn, d)] = {**previous, "replicationStatus": "failed", "failureMessage": failure}
                done.append({"source": t.arn, "failed": failure})
                continue
            dbucket = get_bucket(d)
            m = _BUCKET_ARN_RE.match(d)
            assert m
            backend = _backend(m.group(3), m.group(2))
            if t.namespace not in dbucket.namespaces:
                backend.create_namespace(table_bucket_arn=d, namespace=t.namespace)
            ns = dbucket.namespaces[t.namespace]
            replica = ns.tables.get(t.name)
            if replica is not None and replica.arn in STATE.detached:
                # Disassociated: never updated again; the source reports the destination FAILED from now on.
                previous = STATE.repl_status.get((t.arn, d), {})
                STATE.repl_status[(t.arn, d)] = {
                    **previous,
                    "replicationStatus": "failed",
                    "destinationTableArn": replica.arn,
                    "failureMessage": DETACHED_FAILURE,
                }
                continue
            if replica is None:
                replica = backend.create_table(table_bucket_arn=d, namespace=t.namespace, name=t.name, format="ICEBERG")
            STATE.replica_source[replica.arn] = t.arn
            doc: dict[str, Any] = {}
            if t.metadata_location:
                src_bucket = t.warehouse_location.removeprefix("s3://")
                key = t.metadata_location.removeprefix(t.warehouse_location + "/")
                obj = _s3_backend(t.account_id, t.partition).get_object(src_bucket, key)
                doc = json.loads(obj.value)
                doc["location"] = replica.warehouse_location  # paths rewritten for the destination
            else:
                doc = metadata_doc(replica, [])
            replica.metadata_location = write_metadata(replica, doc, len(doc.get("metadata-log", [])) + 1)
            replica.version_token = replica._generate_version_token()
            replica.was_modified(by=replica.account_id)
            STATE.repl_status[(t.arn, d)] = {
                "replicationStatus": "completed",
                "destinationTableArn": replica.arn,
                "lastSuccessfulReplicatedUpdate": {
                    "metadataLocation": replica.metadata_location,
                    "timestamp": _iso(when),
                },
            }
            done.append({"source": t.arn, "replica": replica.arn})
    return done


# What the replication service reads of a source table as the replication role.
SOURCE_READS = ("s3tables:GetTableMetadataLocation", "s3tables:GetTableData")


def source_read_refused(table: Any) -> str | None:
    """Why the replication role may not read `table` (the explicit Denies of its bucket's and its own policy, AWS's
    message), None when it may: a Deny table policy naming the role freezes that table's replication."""
    role = replication_role(table)
    texts = [x for x in (STATE.bucket_policies.get(table.table_bucket_arn), STATE.table_policies.get(table.arn)) if x]
    if not role or not texts:
        return None
    for action in SOURCE_READS:
        why = resource_policy.denied_to(role, action, table.arn, texts)
        if why:
            return why
    return None


def _seed(body: dict[str, Any]) -> list[str]:
    """Bulk-create tables (each with a metadata document committed at `commitMs`, its snapshot summary carrying the
    fields of `summary`) in one bucket; a table that exists already gets that commit (what a writer's first commit to a
    table Terraform created does)."""
    bucket = get_bucket(body["bucketArn"])
    m = _BUCKET_ARN_RE.match(bucket.arn)
    assert m
    backend = _backend(m.group(3), m.group(2))
    arns = []
    for ns_name, names in body["namespaces"].items():
        if ns_name not in bucket.namespaces:
            backend.create_namespace(table_bucket_arn=bucket.arn, namespace=ns_name)
        for name in names:
            t = bucket.namespaces[ns_name].tables.get(name) or backend.create_table(
                table_bucket_arn=bucket.arn, namespace=ns_name, name=name, format="ICEBERG"
            )  # an existing table (e.g. one Terraform created) gets the commit as its next metadata
            if body.get("commitMs"):
                doc = metadata_doc(
                    t, [int(body["commitMs"])], {str(k): str(v) for k, v in (body.get("summary") or {}).items()}
                )
                t.metadata_location = write_metadata(t, doc, 1)
                t.version_token = t._generate_version_token()
            arns.append(t.arn)
    return arns
