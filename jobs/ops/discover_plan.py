"""What `s3tables_kit.jobs.ops.discover` makes of what it read (pure): per bucket, what the kit would add, what it
would change and
what it leaves alone, the bytes the first backfill copies to each destination, and the proposed `kit.toml` that
adopts the buckets as they are (`[source]` for one bucket, the estate's `[[sources]]` for several).

Replication is read as it is: a bucket that a found bucket-level configuration names as a destination, or whose tables
the replication service manages (`s3tables_kit.jobs.kernel.tables.replication_managed`), is a replica, proposed among
`[[replicas]]`
(adopted, with the kit's protections), never as a source; its source's configuration is taken over by the first deploy
(`existing_destinations`). Tables another service writes (another `managedByService`) are named and left alone."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from s3tables_kit.jobs.kernel.tables import replication_managed
from s3tables_kit.jobs.ops.discover_read import BucketFound, TableFound
from s3tables_kit.topology.model import UnreferencedFileRemoval
from s3tables_kit.topology.reference import toml_value
from s3tables_kit.topology.rules import PLACEHOLDER_ACCOUNT

# What S3 Tables applies to a table whose snapshot management nobody set (the AWS default).
SERVICE_SNAPSHOT_DEFAULT = (120, 1)
REPLICA_RETENTION_HOURS = 2160  # 90 days: a proposal the engineer reviews, as in examples/seed.toml
KIT_UNREFERENCED = UnreferencedFileRemoval()
PLACEHOLDER_MANAGEMENT = PLACEHOLDER_ACCOUNT  # no read of Organizations: the engineer names the management account
_ACCOUNT_RE = re.compile(r"^\d{12}$")


@dataclass(frozen=True)
class Destination:
    """One `--replicate-to <region>[:<account>]`: every source gets a replica bucket there (in the source's own
    account unless one is named)."""

    region: str
    account: str | None = None
    # `--vault <region>:<account>`: a vault other accounts feed, where each account gets a bucket of its own
    # (`feeding_account`), so this lake's namespaces need not be named after its account
    vault: bool = False

    @classmethod
    def parse(cls, text: str, *, vault: bool = False) -> Destination:
        region, _, account = text.strip().partition(":")
        flag = "--vault" if vault else "--replicate-to"
        if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", region) or (account and not _ACCOUNT_RE.match(account)):
            raise ValueError(f"{flag} {text!r} must look like us-west-2{'' if vault else ' or us-west-2'}:123456789012")
        if vault and not account:
            raise ValueError(f"--vault {text!r} names the vault's account too: us-west-2:123456789012")
        return cls(region, account or None, vault)


def vault_bucket_name(feeding_account: str, region: str) -> str:
    """The proposed bucket of one feeding account in a shared vault (unique in the vault's account and Region)."""
    return f"vault-{feeding_account}-{region}"


def replica_name(source_bucket: str, region: str) -> str:
    """The proposed replica bucket of a source in a Region: `<source>-<region>`, within the 63 characters of a name."""
    suffix = f"-{region}"
    return source_bucket[: 63 - len(suffix)].rstrip("-") + suffix


def source_id(bucket: str, taken: set[str]) -> str:
    """An estate source id (1-16 lowercase letters, digits, hyphens; a letter first) derived from a bucket name."""
    base = re.sub(r"[^a-z0-9-]", "-", bucket.lower()).lstrip("-0123456789") or "src"
    base = base[:16].rstrip("-") or "src"
    sid, n = base, 1
    while sid in taken:
        n += 1
        sid = f"{base[: 15 - len(str(n))].rstrip('-')}-{n}"
    taken.add(sid)
    return sid


# ----------------------------------------------------------------------------------------------------
# Reading the settings found
# ----------------------------------------------------------------------------------------------------


def _settings(conf: dict[str, Any], kind: str) -> tuple[str, dict[str, Any]]:
    entry = conf.get(kind) or {}
    return str(entry.get("status") or "enabled"), dict((entry.get("settings") or {}).get(kind) or {})


def snapshot_retention(t: TableFound) -> tuple[int, int] | None:
    """(max snapshot age hours, min snapshots to keep) of a table's snapshot management; None when disabled."""
    return retention_of(t.maintenance)


def retention_of(maintenance: dict[str, Any]) -> tuple[int, int] | None:
    """`snapshot_retention` of a table's maintenance configuration as read (or as a plan's table settings hold it)."""
    status, s = _settings(maintenance, "icebergSnapshotManagement")
    if status != "enabled":
        return None
    return int(s.get("maxSnapshotAgeHours") or SERVICE_SNAPSHOT_DEFAULT[0]), int(
        s.get("minSnapshotsToKeep") or SERVICE_SNAPSHOT_DEFAULT[1]
    )


def bucket_retention(b: BucketFound) -> tuple[int, int]:
    """The snapshot retention most of the bucket's tables have (the proposal's source default)."""
    counts = Counter(r for t in b.tables if (r := snapshot_retention(t)) is not None)
    return counts.most_common(1)[0][0] if counts else SERVICE_SNAPSHOT_DEFAULT


def replica_retention(plans: Sequence[dict[str, Any]]) -> dict[str, int]:
    """A proposed replica's retention: 90 days and one snapshot at least, and never less than any table it receives
    keeps (validation and `audit` refuse a replica that keeps less than its source)."""
    found = [(REPLICA_RETENTION_HOURS, 1)]
    for p in plans:
        found.append(
            (p["snapshot_retention"]["max_snapshot_age_hours"], p["snapshot_retention"]["min_snapshots_to_keep"])
        )
        found += [r for t in p["table_settings"] if (r := retention_of(t["maintenance"] or {})) is not None]
    return {"max_snapshot_age_hours": max(h for h, _ in found), "min_snapshots_to_keep": max(k for _, k in found)}


def unreferenced(b: BucketFound) -> tuple[str, int, int]:
    status, s = _settings(b.maintenance, "icebergUnreferencedFileRemoval")
    return (
        status,
        int(s.get("unreferencedDays") or KIT_UNREFERENCED.unreferenced_days),
        int(s.get("nonCurrentDays") or KIT_UNREFERENCED.noncurrent_days),
    )


def statements(policy: dict[str, Any] | None) -> list[dict[str, Any]]:
    found = (policy or {}).get("Statement") or []
    return [found] if isinstance(found, dict) else list(found)


def replication_destinations(conf: dict[str, Any] | None) -> list[str]:
    rules = ((conf or {}).get("configuration") or {}).get("rules") or []
    return [str(d.get("destinationTableBucketARN")) for r in rules for d in r.get("destinations") or []]


# ----------------------------------------------------------------------------------------------------
# The plan of one bucket
# ----------------------------------------------------------------------------------------------------


def bucket_bytes(b: BucketFound) -> tuple[int, int]:
    """(sum of the tables' current total-files-size, tables whose summary does not tell it)."""
    return sum(t.bytes or 0 for t in b.tables), sum(1 for t in b.tables if t.bytes is None)


def replicas_for(b: BucketFound, destinations: Sequence[Destination]) -> list[dict[str, Any]]:
    """The new replicas `--replicate-to` proposes for a source (created by the kit)."""
    partition = b.arn.split(":", 2)[1]
    out = []
    for d in destinations:
        name = vault_bucket_name(b.account, d.region) if d.vault else replica_name(b.name, d.region)
        acct = d.account or b.account
        out.append(
            {
                "bucket": name,
                "region": d.region,
                "account_id": acct,
                "arn": f"arn:{partition}:s3tables:{d.region}:{acct}:bucket/{name}",
                "adopt": False,
                **({"feeding_account": b.account} if d.vault else {}),
            }
        )
    return out


def replica_sources(buckets: Sequence[BucketFound]) -> dict[str, str | None]:
    """The found buckets that are replicas, each with its source's ARN: one a found configuration (bucket or table
    level) names as a destination is a replica of that source; one whose tables the replication service manages,
    with no found configuration naming it, is a replica of a source not discovered (None)."""
    out: dict[str, str | None] = {}
    for b in buckets:
        for conf in [b.replication, *(t.replication for t in b.tables)]:
            for dest in replication_destinations(conf):
                out.setdefault(dest, b.arn)
    for b in buckets:
        if b.arn not in out and any(replication_managed(v) for v in b.managed_by.values()):
            out[b.arn] = None
    return out


def existing_replica(arn: str, found: BucketFound | None) -> dict[str, Any]:
    """A destination of an existing bucket-level configuration, kept as an adopted replica (its settings as found;
    guessed when discovery did not read it)."""
    _, _, rest = arn.partition(":s3tables:")
    region, account, name = rest.split(":")[0], rest.split(":")[1], rest.rsplit("/", 1)[-1]
    return {
        "bucket": name,
        "region": region,
        "account_id": account,
        "arn": arn,
        "adopt": True,
        "found": found is not None,
        "found_encryption": found.encryption if found else {},
        "found_storage_class": found.storage_class if found else None,
        "found_policy_sids": [str(s.get("Sid") or "(no Sid)") for s in statements(found.policy)] if found else [],
    }


def other_services(b: BucketFound) -> dict[str, str]:
    """`namespace.table` -> the service that writes it, for tables another AWS service manages (not replicas)."""
    names = {arn: f"{ns}.{name}" for ns, name, arn in b.listed}
    return {names.get(arn, arn): v for arn, v in sorted(b.managed_by.items()) if not replication_managed(v)}


def streamed(b: BucketFound) -> dict[str, str]:
    """`namespace.table` -> its channel as GetChannel reported it, for tables a `PutRows` channel feeds."""
    return {t.qualified: t.channel for t in sorted(b.tables, key=lambda t: t.qualified) if t.channel}


def bucket_plan(
    b: BucketFound, destinations: Sequence[Destination], found: Mapping[str, BucketFound] | None = None
) -> dict[str, Any]:
    """What the kit would add, change and leave alone in one source bucket, and its backfill (pure). `found`: every
    bucket discovered, by ARN (the settings of its existing destinations)."""
    add: list[str] = []
    change: list[str] = []
    leave: list[str] = []
    warnings: list[str] = []
    existing = replication_destinations(b.replication)
    kept = [existing_replica(arn, (found or {}).get(arn)) for arn in existing]
    here = (b.region, b.account)
    dropped = [r["arn"] for r in kept if (r["region"], r["account_id"]) == here]
    kept = [r for r in kept if r["arn"] not in dropped]
    warnings += [
        f"REVIEW {arn} (this bucket's own Region and account) protects against nothing the kit covers: the first "
        'deploy drops it from the replication (adopt_changes = ["replication"]); its replicas stay, no longer updated'
        for arn in dropped
    ]
    sites = {(r["region"], r["account_id"]) for r in kept} | {here}
    for d in destinations:
        if (d.region, d.account or b.account) == here:
            warnings.append(
                f"--replicate-to {d.region} is this bucket's own Region and account: no replica proposed there (it "
                "gives no Regional protection; the kit refuses such a destination)"
            )
    new = [r for r in replicas_for(b, destinations) if (r["region"], r["account_id"]) not in sites]
    replicas = kept + new
    if new:
        names = ", ".join(
            f"{r['bucket']} ({r['region']}, {r['account_id']}"
            + ("; this account's own bucket of the shared vault" if r.get("feeding_account") else "")
            + ")"
            for r in new
        )
        add.append(f"bucket-level replication to {names}: covers every table, those written outside Terraform too")
    elif not kept:
        add.append("bucket-level replication to the replicas you choose (--replicate-to), with their protections")
    if replicas:
        add.append(
            "replica protections on each replica: its bucket policy's Denies, the protection SCP, the replica "
            "tables' retention and policies (harden)"
        )
    warnings += [
        f"--replicate-to {r['region']} is this bucket's own Region: {r['bucket']} (another account) gives no "
        "Regional protection"
        for r in new
        if r["region"] == b.region
    ]
    add.append("the kit's Deny statements in the bucket policy, beside the statements it holds today")
    add.append("the kit's protection tag on the bucket, its replication role, monitor and alarms")
    if b.replication is not None:
        change.append(
            f"the bucket-level replication configuration (to {', '.join(existing) or 'no destination'}) is taken "
            "over by the first deploy: imported and updated in place (replication never stops), each destination "
            "kept as an adopted replica (existing_destinations)"
        )
    status, unref, noncurrent = unreferenced(b)
    if (status, unref, noncurrent) != ("enabled", KIT_UNREFERENCED.unreferenced_days, KIT_UNREFERENCED.noncurrent_days):
        change.append(
            f"unreferenced file removal is {status} ({unref} days unreferenced, {noncurrent} days noncurrent), "
            f"the kit's default is enabled ({KIT_UNREFERENCED.unreferenced_days}, {KIT_UNREFERENCED.noncurrent_days}): "
            "the proposal keeps what is set; a configuration without it would change it"
        )
    retention = bucket_retention(b)
    for s in statements(b.policy):
        leave.append(f"bucket policy statement {s.get('Sid') or '(no Sid)'}: {_brief_statement(s)}")
    for t in b.tables:
        r = snapshot_retention(t)
        if r != retention:
            what = "disabled" if r is None else f"{r[0]} h, keep {r[1]}"
            leave.append(f"table {t.qualified}: its own snapshot management ({what})")
        if t.policy is not None:
            sids = ", ".join(str(s.get("Sid") or "(no Sid)") for s in statements(t.policy))
            leave.append(f"table {t.qualified}: its table policy ({sids})")
        if t.replication is not None:
            to = ", ".join(replication_destinations(t.replication)) or "no destination"
            leave.append(
                f"table {t.qualified}: its table-level replication (to {to}), which overrides the bucket-level "
                "configuration for this table"
            )
            bypassed = sorted({r["arn"] for r in replicas} - set(replication_destinations(t.replication)))
            if bypassed:
                warnings.append(
                    f"REVIEW table {t.qualified}: its own replication bypasses {', '.join(bypassed)}: its replica "
                    "there is no copy (status --backfill: BYPASSED) until you delete it or add the destination"
                )
    for table, service in other_services(b).items():
        leave.append(f"table {table}: written by {service}, not a replica (harden and the tools leave it alone)")
    for table, channel in streamed(b).items():
        leave.append(
            f"table {table}: fed through a PutRows channel ({channel}): a planned failover drains it before its "
            "caught-up check; its producers re-point at failover (docs/failover.md)"
        )
    if b.tables:
        leave.append(f"{len(b.tables)} table(s) written outside Terraform: adopted by reference, never recreated")
    return {
        **_found(b),
        "snapshot_retention": {"max_snapshot_age_hours": retention[0], "min_snapshots_to_keep": retention[1]},
        "table_settings": [_table_json(t) for t in b.tables if _notable(t, retention)],
        "replicas": replicas,
        "role": "source",
        "replica_of": None,
        "existing_destinations": existing,
        "dropped_destinations": dropped,
        "other_services": other_services(b),
        "streamed": sorted(streamed(b)),
        "add": add,
        "change": change,
        "leave_alone": leave,
        "warnings": warnings,
    }


def _found(b: BucketFound) -> dict[str, Any]:
    """What discovery read of a bucket, the same in a source's plan and a replica's."""
    total, unknown = bucket_bytes(b)
    return {
        "bucket": b.name,
        "arn": b.arn,
        "region": b.region,
        "account": b.account,
        "encryption": b.encryption,
        "storage_class": b.storage_class,
        "maintenance": b.maintenance,
        "policy": b.policy,
        "replication": b.replication,
        "namespaces": b.namespaces,
        "tables": len(b.tables),
        "bytes": total,
        "records": sum(t.records or 0 for t in b.tables),
        "tables_without_size": unknown,
    }


def replica_plan(b: BucketFound, source: str | None) -> dict[str, Any]:
    """A found bucket that holds replicas (of `source`; None: a source not discovered): adopted as a replica with the
    kit's protections, never proposed as a source (pure)."""
    sids = ", ".join(str(s.get("Sid") or "(no Sid)") for s in statements(b.policy))
    of = source or "a source not discovered (discover its Region and account to adopt both)"
    return {
        **_found(b),
        "snapshot_retention": {},
        "table_settings": [],
        "replicas": [],
        "role": "replica",
        "replica_of": source,
        "existing_destinations": [],
        "dropped_destinations": [],
        "other_services": other_services(b),
        "streamed": sorted(streamed(b)),
        "add": [
            f"adopted as a replica of {of}: imported, never created; the kit's replica protections (its bucket "
            "policy's Denies, the protection SCP and guardrail, the replica tables' retention and policies by harden)"
        ],
        "change": [f"its bucket policy ({sids}) is replaced by the kit's replica policy"] if b.policy else [],
        "leave_alone": [f"{len(b.tables)} replica table(s) the replication service maintains"],
        "warnings": [] if source else [f"REVIEW replica of {of}: left out of the proposal"],
    }


def _notable(t: TableFound, retention: tuple[int, int]) -> bool:
    return t.policy is not None or t.replication is not None or snapshot_retention(t) != retention


def _table_json(t: TableFound) -> dict[str, Any]:
    return {
        "table": t.qualified,
        "arn": t.arn,
        "bytes": t.bytes,
        "records": t.records,
        "maintenance": t.maintenance,
        "policy": t.policy,
        "replication": t.replication,
    }


def _brief_statement(s: dict[str, Any]) -> str:
    principal = s.get("Principal")
    if isinstance(principal, dict):
        principal = principal.get("AWS") or principal.get("Service") or principal
    actions = s.get("Action") or s.get("NotAction")
    return f"{s.get('Effect')} {json.dumps(actions)} to {json.dumps(principal)}"


def backfill(plans: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bytes the first backfill copies to each proposed destination: the sum of its sources' tables' current
    total-files-size (pure)."""
    out: dict[str, dict[str, Any]] = {}
    for p in plans:
        for r in (r for r in p["replicas"] if not r["adopt"]):  # an existing destination holds its copies already
            d = out.setdefault(
                r["arn"], {"destination": r["arn"], "sources": [], "tables": 0, "bytes": 0, "tables_without_size": 0}
            )
            d["sources"].append(p["arn"])
            d["tables"] += p["tables"]
            d["bytes"] += p["bytes"]
            d["tables_without_size"] += p["tables_without_size"]
    return sorted(out.values(), key=lambda d: str(d["destination"]))


# ----------------------------------------------------------------------------------------------------
# The proposed kit.toml
# ----------------------------------------------------------------------------------------------------


def _lines(doc: dict[str, Any], comment: bool = False) -> list[str]:
    return [f"{'# ' if comment else ''}{k} = {toml_value(v)}" for k, v in doc.items()]


def propose_toml(kit_name: str, plans: Sequence[dict[str, Any]]) -> str:
    """The proposed kit.toml (pure): every bucket adopted with its settings as found. With replicas proposed it is a
    complete configuration; without, the replicas are a commented template and the file does not load until they
    are filled in."""
    held = [p for p in plans if p["role"] == "replica"]
    plans = [p for p in plans if p["role"] == "source"]
    if not plans:
        raise ValueError("every table bucket found holds replicas: discover their sources' Regions and accounts too")
    estate = len(plans) > 1
    proposed = any(p["replicas"] for p in plans)
    first = plans[0]
    out = [
        "# Proposed by `s3tables-kit discover`: adopts the table buckets below as they are (encryption, storage class,",
        "# maintenance as found). Review every line marked REVIEW before the first deploy.",
        "[kit]",
        f"name = {toml_value(kit_name)}",
        "",
    ]
    taken: set[str] = set()
    replicas: dict[str, dict[str, Any]] = {}
    for p in plans:
        status, unref, noncurrent = (
            p["maintenance"].get("icebergUnreferencedFileRemoval", {}).get("status", "enabled"),
            *_unref_days(p),
        )
        site: dict[str, Any] = {
            "account_id": p["account"],
            "region": p["region"],
            "bucket": p["bucket"],
            "adopt": True,
            # Without a policy found, the first deploy creates the kit's: stated, or the adoption gate refuses it.
            **({"bucket_policy": policy_file(p["bucket"])} if p["policy"] else {}),
            **({"adopt_changes": stated} if (stated := _stated(p)) else {}),
            "encryption": _encryption(p),
            "storage_class": p["storage_class"] or "STANDARD",
            "snapshot_retention": p["snapshot_retention"],
            "unreferenced_file_removal": {"unreferenced_days": unref, "noncurrent_days": noncurrent},
            **({"existing_destinations": p["existing_destinations"]} if p["existing_destinations"] else {}),
        }
        header = "[[sources]]" if estate else "[source]"
        out.append(f"# {p['tables']} table(s), {p['bytes']:,} bytes; unreferenced file removal {status} as found")
        out.append(header)
        if estate:
            out.append(f"id = {toml_value(source_id(p['bucket'], taken))}")
        if not p["policy"]:
            out.append("# REVIEW: no bucket policy found: the first deploy creates the kit's (adopt_changes)")
        out += [f"# {w}" for w in p["warnings"]]
        out += _lines(site)
        names = [r["bucket"] for r in p["replicas"]]
        if estate:
            if names:
                out.append(f"replicate_to = {toml_value(names)}")
                out.append('replication = { mode = "bucket" }')
            else:
                out.append('# replicate_to = ["<replica bucket>"]   # REVIEW: choose the destinations')
                out.append('# replication = { mode = "bucket" }')
        for ns in p["namespaces"]:
            out += [
                "",
                f"[[{header.strip('[]')}.namespaces]]",
                f"name = {toml_value(ns)}  # adopted: its tables stay as they are",
            ]
        out.append("")
        for r in p["replicas"]:
            found = r["adopt"] and r["found"]
            replicas.setdefault(
                r["bucket"] + "@" + r["account_id"],
                {
                    **r,
                    "encryption": r["found_encryption"] if found else p["encryption"],
                    "sc": r["found_storage_class"] if found else p["storage_class"],
                    "fed_by": [],
                },
            )["fed_by"].append(p)
    if not estate:
        out += ["[replication]", 'mode = "bucket"', ""] if proposed else ["# [replication]", '# mode = "bucket"', ""]
    for r in replicas.values():
        out += _replica_lines(r)
    adopted = {r["arn"] for r in replicas.values()}
    out += [
        f"# REVIEW: {h['bucket']} holds replicas of {h['replica_of'] or 'a source not discovered'}: not proposed"
        for h in held
        if h["arn"] not in adopted
    ]
    if not proposed:
        template = {
            "account_id": first["account"],
            "region": "<region>",
            "bucket": replica_name(first["bucket"], "region"),
            "encryption": {"type": "sse-s3"},
            "snapshot_retention": {"max_snapshot_age_hours": REPLICA_RETENTION_HOURS, "min_snapshots_to_keep": 1},
        }
        out += ["# REVIEW: one [[replicas]] per destination (or run discover with --replicate-to <region>[:<account>])"]
        out += ["# [[replicas]]", *_lines(template, comment=True), ""]
    replica_name_first = next(iter(replicas.values()))["bucket"] if replicas else "<replica bucket>"
    accounts = sorted({p["account"] for p in plans})
    everywhere = sorted({*accounts, *(r["account_id"] for r in replicas.values())})
    break_glass = [f"arn:aws:iam::{a}:role/s3tables-break-glass" for a in accounts]
    organization = {"management_account_id": PLACEHOLDER_MANAGEMENT, "targets": everywhere}
    recovery = {"replica": replica_name_first, "bucket": f"{kit_name}-recovery", "namespace": "recovered"}
    comment = not proposed
    out += [
        "[protection]",
        "# REVIEW: the roles allowed to bypass replica protection (your break-glass role)",
        f"break_glass_principals = {toml_value(break_glass)}",
        "",
        "# REVIEW: your organization's management account, and the OUs (or accounts) the protection SCP is attached to",
        "[protection.organization]",
        *_lines(organization),
        "",
        "# REVIEW: who the kit's alarms notify (synth refuses the empty list)",
        "[assurance]",
        "alarm_subscriptions = []",
        "",
        "# REVIEW: where recovery restores to",
        "# [recovery]" if comment else "[recovery]",
        *_lines(recovery, comment=comment),
        "",
    ]
    return "\n".join(out)


def _stated(p: dict[str, Any]) -> list[str]:
    """The adoption changes a source's proposal states: the kit's policy on a bucket without one, and a dropped
    destination of its existing replication."""
    return [k for k, on in (("bucket_policy", not p["policy"]), ("replication", p["dropped_destinations"])) if on]


def _replica_lines(r: dict[str, Any]) -> list[str]:
    """One `[[replicas]]` entry: a new replica (a key created where its source uses KMS), or an existing destination
    adopted with its settings as found and the kit's replica policy stated."""
    encryption = (
        {"type": "kms", "kms_key": "create"}
        if (r["encryption"] or {}).get("sseAlgorithm") == "aws:kms"
        else {"type": "sse-s3"}
    )
    comments = ["# REVIEW: retention of the replicas"]
    if r.get("feeding_account"):
        comments.append(
            f"# account {r['feeding_account']}'s own bucket of the vault other accounts feed: confined by the bucket, "
            "so the namespaces keep their names; add this entry and the sources to the vault's configuration"
        )
    if r["adopt"]:
        encryption = _encryption({"encryption": r["encryption"]}) if r["found"] else {"type": "sse-s3"}
        comments.append(
            f"# an existing destination of {', '.join(p['bucket'] for p in r['fed_by'])}: adopted (imported), "
            "with the kit's replica policy"
            + (f" replacing its own ({', '.join(r['found_policy_sids'])})" if r["found_policy_sids"] else "")
        )
        if not r["found"]:
            comments.append("# REVIEW: not discovered (another Region or account): its encryption and storage class")
    site: dict[str, Any] = {
        "account_id": r["account_id"],
        "region": r["region"],
        "bucket": r["bucket"],
        **({"feeding_account": r["feeding_account"]} if r.get("feeding_account") else {}),
        **({"adopt": True, "adopt_changes": ["bucket_policy"]} if r["adopt"] else {}),
        "storage_class": r["sc"] or "STANDARD",
        "encryption": encryption,
        "snapshot_retention": replica_retention(r["fed_by"]),
    }
    return [*comments, "[[replicas]]", *_lines(site), ""]


def policy_file(bucket: str) -> str:
    """The file, beside the proposed kit.toml, holding a bucket's policy as found (its `bucket_policy`)."""
    return f"bucket-policy-{bucket}.json"


def policy_files(plans: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The bucket policies found, one file each, as the proposal's `bucket_policy` keys name them."""
    return {
        policy_file(p["bucket"]): json.dumps(p["policy"], indent=2) + "\n"
        for p in plans
        if p["policy"] and p["role"] == "source"
    }


def _unref_days(p: dict[str, Any]) -> tuple[int, int]:
    s = (p["maintenance"].get("icebergUnreferencedFileRemoval") or {}).get("settings") or {}
    s = s.get("icebergUnreferencedFileRemoval") or {}
    return (
        int(s.get("unreferencedDays") or KIT_UNREFERENCED.unreferenced_days),
        int(s.get("nonCurrentDays") or KIT_UNREFERENCED.noncurrent_days),
    )


def _encryption(p: dict[str, Any]) -> dict[str, str]:
    enc = p["encryption"] or {}
    if enc.get("sseAlgorithm") == "aws:kms" and enc.get("kmsKeyArn"):
        return {"type": "kms", "kms_key": str(enc["kmsKeyArn"])}
    return {"type": "sse-s3"}


# ----------------------------------------------------------------------------------------------------
# The readable report
# ----------------------------------------------------------------------------------------------------


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def render_report(doc: dict[str, Any]) -> str:
    """The readable report of a discovery (pure)."""
    out = [
        f"Discovery of {len(doc['buckets'])} table bucket(s) in {', '.join(doc['regions'])} "
        f"({doc['tables']} tables, {human_bytes(doc['bytes'])}), {doc['generated_at']}",
        "",
    ]
    for p in doc["buckets"]:
        enc = p["encryption"].get("sseAlgorithm", "?") + (
            f" ({p['encryption']['kmsKeyArn']})" if p["encryption"].get("kmsKeyArn") else ""
        )
        role = f" (replica of {p['replica_of'] or 'a source not discovered'})" if p["role"] == "replica" else ""
        kept = [d for d in p["existing_destinations"] if d not in p["dropped_destinations"]]
        existing = [f"   existing destinations: {', '.join(kept) or '-'} (kept as replicas)"] if kept else []
        existing += [f"   existing destinations dropped: {', '.join(p['dropped_destinations'])}"] * bool(
            p["dropped_destinations"]
        )
        out += [
            f"## {p['arn']}{role}",
            f"   {len(p['namespaces'])} namespace(s), {p['tables']} table(s), {p['bytes']:,} bytes "
            f"({human_bytes(p['bytes'])}), {p['records']:,} records"
            + (
                f"; {p['tables_without_size']} table(s) with no size in their summary"
                if p["tables_without_size"]
                else ""
            ),
            f"   encryption {enc}, storage class {p['storage_class']}",
            f"   namespaces: {', '.join(p['namespaces']) or '-'}",
            *existing,
            *(f"   ! {w}" for w in p["warnings"]),
            "   the kit would add:",
            *(f"     + {x}" for x in p["add"]),
            "   the kit would change:",
            *([f"     ~ {x}" for x in p["change"]] or ["     (nothing)"]),
            "   the kit leaves alone:",
            *([f"     = {x}" for x in p["leave_alone"]] or ["     (nothing)"]),
            "",
        ]
    out.append("First backfill, per destination:")
    if doc["backfill"]:
        for d in doc["backfill"]:
            out.append(
                f"   {d['destination']}: {d['bytes']:,} bytes ({human_bytes(d['bytes'])}) in {d['tables']} table(s)"
                + (f", {d['tables_without_size']} of unknown size" if d["tables_without_size"] else "")
            )
    else:
        for p in doc["buckets"]:
            out.append(f"   each destination of {p['bucket']}: {p['bytes']:,} bytes ({human_bytes(p['bytes'])})")
    return "\n".join(out) + "\n"
