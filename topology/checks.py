"""The configuration's cross-field rules: what no single field can decide (tables and partitions against quotas,
Regions and accounts of the sites, encryption keys, state backend, protection layers, `[assurance]` and
`[failover]`). `cross_checks(cfg)` runs them all on a model that validated; each problem is an `Issue` naming the
field and the rule.
"""

from __future__ import annotations

from collections import Counter

from s3tables_kit.topology.adoption import POLICY_KEY
from s3tables_kit.topology.backup import vault_checks
from s3tables_kit.topology.checks_failover import failover_checks
from s3tables_kit.topology.issues import Issue, bucket_quota_issues
from s3tables_kit.topology.model import (
    Encryption,
    KitConfig,
    Source,
    parse_partition,
)
from s3tables_kit.topology.rules import (
    KIT_TAG_KEYS,
    MAX_DESTINATIONS,
    MAX_FAN_IN_SOURCE_ACCOUNTS,
    MAX_NAME_PREFIX,
    MAX_TABLES_PER_BUCKET,
    MAX_TAGS,
    PLACEHOLDER_ACCOUNT,
    TEMPORAL_TRANSFORM_TYPES,
    fan_in_namespace_prefix,
)
from s3tables_kit.topology.scp_targets import scp_target_checks
from s3tables_kit.topology.vault_accounts import vault_account_checks


def _estate_form_checks(cfg: KitConfig) -> list[Issue]:
    """Each of `[[sources]]` names itself and its destinations and has its own replication (`[source]`'s are the
    loader's: it replicates to every replica)."""
    out: list[Issue] = []
    names = {r.bucket for r in cfg.replicas}
    ids = Counter(s.id for s in cfg.sources)
    for i, src in enumerate(cfg.sources):
        where = f"sources[{i}]"
        if src.id is None:
            out.append(Issue(f"{where}.id", "required in [[sources]]: it names the source's stack and roles"))
        else:
            if ids[src.id] > 1:
                out.append(Issue(f"{where}.id", f"duplicate source id {src.id!r}"))
            prefix = f"{cfg.kit.name}-{src.id}"
            if len(prefix) > MAX_NAME_PREFIX:
                out.append(
                    Issue(
                        f"{where}.id",
                        f"{prefix!r} ({len(prefix)} characters) prefixes this source's IAM role names and must be at "
                        f"most {MAX_NAME_PREFIX} characters: shorten the id or the kit name",
                    )
                )
        if src.replication is None:
            out.append(Issue(f"{where}.replication", 'required in [[sources]] (mode = "bucket" or "tables")'))
        if not 1 <= len(src.replicate_to) <= MAX_DESTINATIONS:
            out.append(
                Issue(
                    f"{where}.replicate_to",
                    f"needs 1 to {MAX_DESTINATIONS} bucket names of [[replicas]] (S3 Tables replicates to 1 to "
                    f"{MAX_DESTINATIONS} destination table buckets), got {len(src.replicate_to)}",
                )
            )
        for k, name in enumerate(src.replicate_to):
            if name not in names:
                out.append(Issue(f"{where}.replicate_to[{k}]", f"{name!r} is not the bucket of any entry in replicas"))
        for name, n in Counter(src.replicate_to).items():
            if n > 1:
                out.append(Issue(f"{where}.replicate_to", f"{name!r} is listed twice"))
    return out


# The form rules of each scheme that read the model (those of the written form are the loader's).
_FORM_CHECKS = {"source": lambda cfg: [], "sources": _estate_form_checks}


def _form_checks(cfg: KitConfig) -> list[Issue]:
    """The declared form's rules, then every replica fed by a source and every source bucket once."""
    out: list[Issue] = _FORM_CHECKS[cfg.scheme.key](cfg)
    for i, rep in enumerate(cfg.replicas):
        if not cfg.sources_into(rep):
            out.append(
                Issue(f"replicas[{i}].bucket", f"no source replicates to {rep.bucket!r} (list it in replicate_to)")
            )
    for src in cfg.sources:
        if src.adopt_changes and not src.adopt:
            out.append(Issue(f"{cfg.path_of(src)}.adopt_changes", "only for an adopted bucket (adopt = true)"))
    for site_key, n in Counter(s.site_key for s in cfg.sources).items():
        if n > 1:
            out.append(Issue("sources", f"duplicate source bucket {site_key[2]!r} in {site_key[1]}/{site_key[0]}"))
    return out


def _table_checks(cfg: KitConfig, src: Source) -> list[Issue]:
    """Namespaces, tables, columns and partitions of one source; retention against each of its destinations."""
    out: list[Issue] = []
    base = cfg.path_of(src)
    seen_ns: set[str] = set()
    total_tables = 0
    for i, ns in enumerate(src.namespaces):
        if ns.name in seen_ns:
            out.append(Issue(f"{base}.namespaces[{i}].name", f"duplicate namespace {ns.name!r}"))
        seen_ns.add(ns.name)
        seen_t: set[str] = set()
        for j, t in enumerate(ns.tables):
            total_tables += 1
            where = f"{base}.namespaces[{i}].tables[{j}]"
            if t.name in seen_t:
                out.append(Issue(f"{where}.name", f"duplicate table {ns.name}.{t.name}"))
            seen_t.add(t.name)
            cols = Counter(c.name for c in t.columns)
            for c, n in cols.items():
                if n > 1:
                    out.append(Issue(f"{where}.columns", f"duplicate column {c!r}"))
            types = {c.name: c.type for c in t.columns}
            for k, p in enumerate(t.partition_by):
                try:
                    pf = parse_partition(p)
                except ValueError as exc:
                    out.append(Issue(f"{where}.partition_by[{k}]", str(exc)))
                    continue
                if pf.source not in types:
                    out.append(
                        Issue(
                            f"{where}.partition_by[{k}]",
                            f"partition source column {pf.source!r} is not a column of the table",
                        )
                    )
                    continue
                allowed = TEMPORAL_TRANSFORM_TYPES.get(pf.transform)
                if allowed and types[pf.source] not in allowed:
                    out.append(
                        Issue(
                            f"{where}.partition_by[{k}]",
                            f"transform {pf.transform} needs a date/timestamp column; "
                            f"{pf.source!r} is {types[pf.source]}",
                        )
                    )
            ret = src.retention_for(t)
            for r_i, rep in enumerate(cfg.replicas):
                if rep not in cfg.destinations_of(src):
                    continue
                if rep.snapshot_retention.max_snapshot_age_hours < ret.max_snapshot_age_hours:
                    out.append(
                        Issue(
                            f"replicas[{r_i}].snapshot_retention.max_snapshot_age_hours",
                            f"replica retention ({rep.snapshot_retention.max_snapshot_age_hours} h) is shorter "
                            f"than table {ns.name}.{t.name}'s source retention ({ret.max_snapshot_age_hours} h); "
                            "replicas must keep snapshots at least as long as the source",
                        )
                    )
    if total_tables > MAX_TABLES_PER_BUCKET:
        out.append(
            Issue(
                f"{base}.namespaces",
                f"{total_tables} tables exceed the quota of {MAX_TABLES_PER_BUCKET} tables per table bucket",
            )
        )
    return out


def _destination_checks(cfg: KitConfig, src: Source) -> list[Issue]:
    """Each destination of one source against that source (Region, account, snapshot counts, keys)."""
    out: list[Issue] = []
    for r_i, rep in enumerate(cfg.replicas):
        if rep not in cfg.destinations_of(src):
            continue
        where = f"replicas[{r_i}]"
        if rep.site_key == src.site_key or (rep.account_id == src.account_id and rep.region == src.region):
            if rep.bucket == src.bucket:
                out.append(Issue(f"{where}.bucket", "a destination must not be the source table bucket itself"))
            else:
                out.append(
                    Issue(
                        f"{where}.region",
                        "a destination in the source's own account and Region protects nothing against a Regional "
                        "outage or account compromise; use another Region or account",
                    )
                )
        if rep.snapshot_retention.min_snapshots_to_keep < src.snapshot_retention.min_snapshots_to_keep:
            out.append(
                Issue(
                    f"{where}.snapshot_retention.min_snapshots_to_keep",
                    "replica keeps fewer snapshots than the source; replicas must keep at least as many",
                )
            )
    return out


def _fan_in_checks(cfg: KitConfig) -> list[Issue]:
    """A replica receiving from several sources (fan-in) must not receive two same-named tables (AWS does not
    document what replication does then), nor more tables than a bucket holds. Only declared tables can be checked:
    a bucket-mode source replicates undeclared ones too (docs/decisions/0026)."""
    out: list[Issue] = []
    for r_i, rep in enumerate(cfg.replicas):
        owner: dict[str, str] = {}
        count = 0
        for src in cfg.sources_into(rep):
            listed = {f"{n}.{t}" for n, t in cfg.replicated_tables_of(src)}
            count += len(listed)
            base = cfg.path_of(src)
            for i, ns in enumerate(src.namespaces):
                for j, t in enumerate(ns.tables):
                    name = f"{ns.name}.{t.name}"
                    if name not in listed:
                        continue
                    if name in owner:
                        out.append(
                            Issue(
                                f"{base}.namespaces[{i}].tables[{j}].name",
                                f"{name} is also replicated into {rep.bucket!r} by {owner[name]}: two sources' "
                                "same-named tables in one bucket are refused (AWS does not document which wins); "
                                "rename one, or replicate them to different buckets",
                            )
                        )
                    else:
                        owner[name] = f"source {src.id or src.bucket!r}"
        if count > MAX_TABLES_PER_BUCKET:
            out.append(
                Issue(
                    f"replicas[{r_i}]",
                    f"{count} tables replicated into {rep.bucket!r} exceed the quota of {MAX_TABLES_PER_BUCKET} "
                    "tables per table bucket",
                )
            )
    return out


def _fan_in_namespace_checks(cfg: KitConfig) -> list[Issue]:
    """In a replica that sources of several accounts of an estate feed, one Deny confines each replication role to the
    namespaces of its own account's prefix (`s3tables_kit.policies.fan_in`): every namespace such a source replicates
    carries it (a bucket-mode source's undeclared namespaces cannot be checked: their replication is denied there), and
    the grants name the feeding accounts, whose number the bucket policy's size bounds."""
    out: list[Issue] = []
    for r_i, rep in enumerate(cfg.replicas):
        feeding = cfg.sources_into(rep)
        if cfg.scheme.key != "sources" or len({s.account_id for s in feeding}) < 2:
            continue  # the sources of one account share its deploy role: one trust domain, nothing to confine
        for src in feeding:
            prefix, mode = fan_in_namespace_prefix(src.account_id), cfg.replication_of(src)
            if mode.mode == "tables":
                named = [
                    (f"{cfg.replication_path_of(src)}.tables[{k}]", t.split(".", 1)[0])
                    for k, t in enumerate(mode.tables)
                ]
            else:
                named = [(f"{cfg.path_of(src)}.namespaces[{j}].name", ns.name) for j, ns in enumerate(src.namespaces)]
            out += [
                Issue(
                    where,
                    f"namespace {name!r} must start with {prefix!r}: {rep.bucket!r} receives from sources of several "
                    "accounts, and each source's replication role writes there only the namespaces named after its "
                    f"account ({fan_in_namespace_prefix('<account id>')}<name>); a namespace that cannot be renamed "
                    "(an adopted lake) replicates into a bucket of its account's own instead (feeding_account)",
                )
                for where, name in named
                if not name.startswith(prefix)
            ]
        accounts = {s.account_id for s in feeding} - {rep.account_id}
        if len(accounts) > MAX_FAN_IN_SOURCE_ACCOUNTS:
            out.append(
                Issue(
                    f"replicas[{r_i}]",
                    f"{rep.bucket!r} receives from sources of {len(accounts)} other accounts; its bucket policy names "
                    f"each one and holds at most 20,480 characters (the S3 Tables limit): at most "
                    f"{MAX_FAN_IN_SOURCE_ACCOUNTS} accounts per replica, split the sources over several replicas",
                )
            )
    return out


def _adoption_checks(cfg: KitConfig) -> list[Issue]:
    """The adoption keys (`s3tables_kit.topology.adoption`): a policy file and adopted namespaces only on an adopted
    bucket, and no key the kit would create for a bucket that already has one."""
    out: list[Issue] = []
    for src in cfg.sources:
        where = cfg.path_of(src)
        if src.bucket_policy is not None and not src.adopt:
            out.append(
                Issue(f"{where}.{POLICY_KEY}", "only an adopted bucket (adopt = true) has an existing policy to keep")
            )
        if src.adopt and src.encryption.creates_key:
            out.append(
                Issue(
                    f"{where}.encryption.kms_key",
                    '"create" would re-point an existing bucket at a new key: name the key the bucket uses (its ARN) '
                    'or use type = "sse-s3" as the bucket has',
                )
            )
        out += _existing_replication_checks(cfg, src, where)
        for n_i, ns in enumerate(src.namespaces):
            if ns.adopt and not src.adopt:
                out.append(
                    Issue(
                        f"{where}.namespaces[{n_i}].adopt",
                        "a namespace is adopted only in an adopted bucket (adopt = true on the source)",
                    )
                )
    for r_i, r in enumerate(cfg.replicas):
        if r.adopt_changes and not r.adopt:
            out.append(Issue(f"replicas[{r_i}].adopt_changes", "only for an adopted bucket (adopt = true)"))
        if r.adopt and r.encryption.creates_key:
            out.append(
                Issue(
                    f"replicas[{r_i}].encryption.kms_key",
                    '"create" would re-point an existing bucket at a new key: name the key it uses or "sse-s3"',
                )
            )
    return out


def _existing_replication_checks(cfg: KitConfig, src: Source, where: str) -> list[Issue]:
    """An existing replication taken over: only on an adopted bucket, and each destination it has stays one of the
    source's destinations unless the configuration states that it drops it."""
    out: list[Issue] = []
    key = f"{where}.existing_destinations"
    if src.existing_destinations and not src.adopt:
        out.append(Issue(key, "only an adopted bucket (adopt = true) has an existing replication to take over"))
    kept = {r.bucket_arn for r in cfg.destinations_of(src)}
    for i, arn in enumerate(src.existing_destinations):
        if arn not in kept and "replication" not in src.adopt_changes:
            out.append(
                Issue(
                    f"{key}[{i}]",
                    f"{arn} receives this bucket's replicas today and is not among its destinations: keep it (a "
                    '[[replicas]] entry with adopt = true) or state the drop (adopt_changes = ["replication"])',
                )
            )
    return out


def cross_checks(cfg: KitConfig) -> list[Issue]:
    out = _form_checks(cfg)
    if out:  # the rules below read every source's destinations and replication: the form first
        return out
    for src in cfg.sources:
        out += _table_checks(cfg, src)
        out += _destination_checks(cfg, src)
    out += _fan_in_checks(cfg)
    out += _fan_in_namespace_checks(cfg)
    out += vault_account_checks(cfg)
    out += _adoption_checks(cfg)
    extra = cfg.scheme.protection_tags  # the tags the scheme adds to a protected bucket (none for `[source]`)
    if len(cfg.tags) + len(KIT_TAG_KEYS) + len(extra) > MAX_TAGS:
        out.append(
            Issue(
                "tags",
                f"at most {MAX_TAGS - len(KIT_TAG_KEYS) - len(extra)} tags in an estate: its protected buckets also "
                f"carry {', '.join(extra)} (AWS allows {MAX_TAGS} per resource)",
            )
        )

    # Replicas: their own keys and deploy roles in their own account, never twice
    for r_i, rep in enumerate(cfg.replicas):
        where = f"replicas[{r_i}]"
        for fld, arn in (("deploy_role_arn", rep.deploy_role_arn), ("encryption.kms_key", rep.encryption.kms_key)):
            if arn and arn.startswith("arn:"):
                acct = arn.split(":")[4]
                if acct != rep.account_id:
                    out.append(
                        Issue(
                            f"{where}.account_id",
                            f"cross-account destination: {fld} is in account {acct}, so account_id must be {acct} "
                            f"(it is {rep.account_id}); set the destination's own account",
                        )
                    )
    for site_key, n in Counter(r.site_key for r in cfg.replicas).items():
        if n > 1:
            idx = [i for i, r in enumerate(cfg.replicas) if r.site_key == site_key]
            acct, region, bucket = site_key
            out.append(Issue(f"replicas[{idx[1]}].bucket", f"duplicate destination {bucket!r} in {region}/{acct}"))

    # Encryption on every bucket site
    sites: list[tuple[str, Encryption, str]] = [(cfg.path_of(s), s.encryption, s.region) for s in cfg.sources]
    sites += [(f"replicas[{i}]", r.encryption, r.region) for i, r in enumerate(cfg.replicas)]
    rec_rep = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    sites.append(("recovery", cfg.recovery.encryption, rec_rep.region if rec_rep else ""))
    for where, enc, region in sites:
        if enc.type == "kms" and not enc.kms_key:
            out.append(
                Issue(
                    f"{where}.encryption.kms_key",
                    'KMS encryption needs a key: set kms_key = "create" or the ARN of an existing key',
                )
            )
        if enc.type == "sse-s3" and enc.kms_key:
            out.append(Issue(f"{where}.encryption.kms_key", 'kms_key is only valid with type = "kms"'))
        if enc.kms_key and enc.kms_key.startswith("arn:") and region and enc.kms_key.split(":")[3] != region:
            out.append(Issue(f"{where}.encryption.kms_key", f"the KMS key must be in the bucket's Region ({region})"))

    # Replication mode
    for src in cfg.sources:
        out += _replication_checks(cfg, src)

    # Recovery
    if rec_rep is None:
        out.append(Issue("recovery.replica", f"{cfg.recovery.replica!r} is not the bucket of any entry in replicas"))
    else:
        taken = {s.site_key for s in cfg.sources} | {r.site_key for r in cfg.replicas}
        if (rec_rep.account_id, rec_rep.region, cfg.recovery.bucket) in taken:
            out.append(
                Issue(
                    "recovery.bucket", "the recovery target must be its own table bucket, not the source or a replica"
                )
            )

    # Quota: table buckets per account and Region
    buckets = [(r.account_id, r.region) for r in (*cfg.sources, *cfg.replicas)]
    out += bucket_quota_issues("replicas", buckets + ([(rec_rep.account_id, rec_rep.region)] if rec_rep else []))

    # State
    st = cfg.state
    if st.backend == "s3":
        for fld in ("bucket", "region"):
            if getattr(st, fld) is None:
                out.append(Issue(f"state.{fld}", 'required with backend = "s3"'))
        if st.kms_key_arn and st.region and st.kms_key_arn.split(":")[3] != st.region:
            out.append(Issue("state.kms_key_arn", f"the KMS key must be in the state bucket's Region ({st.region})"))
    else:
        for fld in ("bucket", "key_prefix", "region", "kms_key_arn"):
            if getattr(st, fld) is not None:
                out.append(Issue(f"state.{fld}", 'only valid with backend = "s3"'))

    # Protection
    out += _protection_checks(cfg)
    out += failover_checks(cfg)
    return out


def _replication_checks(cfg: KitConfig, src: Source) -> list[Issue]:
    rep = src.replication
    if rep is None:
        return []  # reported by _form_checks
    base = cfg.replication_path_of(src)
    out: list[Issue] = []
    declared = {f"{ns.name}.{t.name}" for ns, t in src.tables()}
    if rep.mode == "tables":
        if not rep.tables:
            out.append(Issue(f"{base}.tables", 'mode = "tables" needs at least one "namespace.table"'))
        for k, name in enumerate(rep.tables):
            if name not in declared:
                out.append(
                    Issue(
                        f"{base}.tables[{k}]", f"{name!r} is not a table declared under {cfg.path_of(src)}.namespaces"
                    )
                )
        for listed, n in Counter(rep.tables).items():
            if n > 1:
                out.append(Issue(f"{base}.tables", f"{listed!r} is listed twice"))
    elif rep.tables:
        out.append(Issue(f"{base}.tables", 'only valid with mode = "tables" (bucket mode covers every table)'))
    return out


def _protection_checks(cfg: KitConfig) -> list[Issue]:
    """Configurations under which a protection layer would not be effective are refused, not deployed."""
    out: list[Issue] = []
    prot = cfg.protection
    deploy_roles = {r.deploy_role_arn for r in (*cfg.sources, *cfg.replicas) if r.deploy_role_arn}
    if prot.organization and prot.organization.deploy_role_arn:
        deploy_roles.add(prot.organization.deploy_role_arn)
    for k, arn in enumerate(prot.break_glass_principals):
        where = f"protection.break_glass_principals[{k}]"
        if arn in cfg.replication_role_arns:
            out.append(Issue(where, "the replication role cannot be a break-glass principal"))
        elif any(r.bucket == cfg.recovery.replica for r in cfg.replicas) and arn == cfg.recovery_role_arn:
            out.append(
                Issue(where, "the recovery role cannot be a break-glass principal (it must never write replicas)")
            )
        elif arn in deploy_roles:
            out.append(
                Issue(
                    where,
                    "a deploy role cannot be a break-glass principal: every `cdktf deploy` could then delete replicas; "
                    "break-glass must be a separate, rarely used identity",
                )
            )
    replica_accounts = {r.account_id for r in cfg.replicas}
    carried = {r.role_arn(n) for r in cfg.replicas for n in prot.guardrail_attach_roles}
    for k, name in enumerate(prot.guardrail_attach_roles):
        arns = {a for a in carried if a.rsplit("/", 1)[1] == name}
        if arns & set(prot.break_glass_principals) or any(
            p.split(":")[4] in replica_accounts and p.rsplit("/", 1)[1] == name for p in prot.break_glass_principals
        ):
            out.append(
                Issue(
                    f"protection.guardrail_attach_roles[{k}]",
                    f"{name!r} is a break-glass role: the guardrail exempts nobody but deploy roles, so it would lock "
                    "break-glass out",
                )
            )
        if arns & set(cfg.replication_role_arns):
            out.append(
                Issue(f"protection.guardrail_attach_roles[{k}]", "the replication role must not carry the guardrail")
            )
    source_only = {s.account_id for s in cfg.sources} - replica_accounts
    for k, name in enumerate(prot.source_guardrail_attach_roles):
        if any(p.split(":")[4] in source_only and p.rsplit("/", 1)[1] == name for p in prot.break_glass_principals):
            out.append(
                Issue(
                    f"protection.source_guardrail_attach_roles[{k}]",
                    f"{name!r} is a break-glass role: the pipeline guardrail exempts nobody but deploy roles, so it "
                    "would lock break-glass out",
                )
            )
    org = prot.organization
    if org is None:
        out.append(
            Issue(
                "protection.organization",
                "required: the SCP is the layer that no role in a replica or source account can remove (it keeps the "
                "deploy role from detaching its guardrail and stops anyone from taking over the replication, deploy "
                "or break-glass roles); without it a deploy role could strip every other layer",
            )
        )
        return out
    for t in org.ou_accounts:
        if t not in org.targets:
            out.append(Issue(f"protection.organization.ou_accounts.{t}", f"{t!r} is not one of the SCP targets"))
    covered = org.covered_accounts
    sites = [(f"{cfg.path_of(s)}.account_id", s.account_id, "source") for s in cfg.sources]
    sites += [(f"replicas[{i}].account_id", r.account_id, f"replica {r.bucket}") for i, r in enumerate(cfg.replicas)]
    reported: set[str] = set()
    for where, acct, what in sites:
        if acct == org.management_account_id:
            out.append(
                Issue(
                    where,
                    f"the {what} is in the organization's management account {acct}, where SCPs do not apply; "
                    "put it in a member account",
                )
            )
        elif acct not in covered and acct not in reported:
            reported.add(acct)
            out.append(
                Issue(
                    "protection.organization.targets",
                    f"account {acct} ({what}) is not covered by the SCP: add it to targets, or list it under "
                    "protection.organization.ou_accounts for the root or OU target it sits in",
                )
            )
    out += assurance_checks(cfg)
    out += vault_checks(cfg)
    out += scp_target_checks(cfg)
    return out


def assurance_checks(cfg: KitConfig) -> list[Issue]:
    """Cross-field rules of `[assurance]` (topology/assurance.py), run by `parse_config` after the model validates."""
    out: list[Issue] = []
    a = cfg.assurance
    rec = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    # without the recovery replica (refused by its own check), every replicated table: the rehearsal's are still read
    tables = cfg.tables_into(rec) if rec else [t for s in cfg.sources for t in cfg.replicated_tables_of(s)]
    replicated = {f"{ns}.{t}" for ns, t in tables}
    for k, name in enumerate(a.rehearsal.tables):
        if name not in replicated:
            out.append(
                Issue(
                    f"assurance.rehearsal.tables[{k}]",
                    f"{name!r} is not a replicated table (replicated: {sorted(replicated)})",
                )
            )
    if a.rehearsal.namespace == cfg.recovery.namespace:
        out.append(
            Issue(
                "assurance.rehearsal.namespace",
                "must differ from recovery.namespace: the rehearsal drops every table it creates there",
            )
        )
    out += point_group_checks(cfg)
    out += harden_checks(cfg)
    rep = next((r for r in cfg.replicas if r.bucket == cfg.recovery.replica), None)
    if rep is not None and a.rehearsal.offset_hours >= rep.snapshot_retention.max_snapshot_age_hours:
        out.append(
            Issue(
                "assurance.rehearsal.offset_hours",
                f"{a.rehearsal.offset_hours} h reaches back as far as the recovery replica's retention "
                f"({rep.snapshot_retention.max_snapshot_age_hours} h): the rehearsal would fail once snapshots expire",
            )
        )
    return out


def hardener_role_arn(cfg: KitConfig, src: Source) -> str:
    """The scheduled hardener's role (`[assurance.harden]`), in the account of the source `src`."""
    return src.role_arn(f"{cfg.name_prefix_of(src)}-replica-hardener")


def hardener_principals(cfg: KitConfig) -> tuple[str, ...]:
    """The scheduled hardener's role with `[assurance.harden]` on (none without it): a principal class of its own in
    the replica layers, which exempt it from the replica table writes it makes only."""
    return tuple(hardener_role_arn(cfg, src) for src in cfg.sources) if cfg.assurance.harden.enabled else ()


def harden_checks(cfg: KitConfig) -> list[Issue]:
    """The scheduled hardener serves one source (an estate's sources are hardened by hand), and its role is no
    break-glass principal: the replica layers exempt it from its own writes only, with no key or vault grant."""
    if not cfg.assurance.harden.enabled:
        return []
    if len(cfg.sources) != 1:
        return [Issue("assurance.harden.enabled", "the scheduled hardener serves a [source] configuration only")]
    arn = hardener_role_arn(cfg, cfg.sources[0])
    if arn in cfg.protection.break_glass_principals:
        return [
            Issue(
                "protection.break_glass_principals",
                f"remove {arn}: the scheduled hardener has its own narrow exemption (a replica table's policy and "
                "retention), never break-glass (docs/assurance.md#scheduled-hardening)",
            )
        ]
    return []


def point_group_checks(cfg: KitConfig) -> list[Issue]:
    """Every pattern of `[assurance] replication_point_groups` names replicated tables: a declared, replicated table
    (`namespace.table`) or a namespace holding one (`namespace.*`). A source replicating its whole bucket also
    replicates tables it does not declare, so with one any well-formed pattern is accepted."""
    groups = cfg.assurance.replication_point_groups
    if not groups or any(cfg.replication_of(s).mode == "bucket" for s in cfg.sources):
        return []
    declared = {ns.name: {t.name for t in ns.tables} for s in cfg.sources for ns in s.namespaces}
    replicated = {(n, t) for s in cfg.sources for n, t in cfg.replicated_tables_of(s)}
    out: list[Issue] = []
    for i, group in enumerate(groups):
        for j, pattern in enumerate(group.tables):
            ns, table = pattern.split(".", 1)
            if ns not in declared:
                why = f"unknown namespace {ns!r} (declared: {sorted(declared)})"
            elif table == "*":
                why = "" if any(n == ns for n, _ in replicated) else f"no table of namespace {ns!r} is replicated"
            elif table not in declared[ns]:
                why = f"unknown table {pattern!r} (namespace {ns!r} declares {sorted(declared[ns])})"
            else:
                why = "" if (ns, table) in replicated else f"{pattern!r} is declared but not replicated"
            if why:
                where = f"assurance.replication_point_groups[{i}].tables[{j}]"
                out.append(Issue(where, f"group {group.name!r}: {why}"))
    return out


def placeholder_issues(cfg: KitConfig) -> list[Issue]:
    """The lines of a proposal (`s3tables-kit discover`) still to complete, each naming its field: synth and deploy
    refuse them (a review tool only warns). An `alarm_subscriptions = []` written out is the proposal's line."""
    out: list[Issue] = []
    org = cfg.protection.organization
    if org is not None and org.management_account_id == PLACEHOLDER_ACCOUNT:
        out.append(
            Issue(
                "protection.organization.management_account_id",
                f"still the proposal's placeholder {PLACEHOLDER_ACCOUNT}: name your organization's management account",
            )
        )
    if "alarm_subscriptions" in cfg.assurance.model_fields_set and not cfg.assurance.alarm_subscriptions:
        out.append(
            Issue(
                "assurance.alarm_subscriptions",
                'still the proposal\'s empty list: add who the alarms notify, e.g. [{ protocol = "email", endpoint = '
                '"oncall@example.com" }]',
            )
        )
    return out


def config_warnings(cfg: KitConfig) -> list[Issue]:
    """What is valid but most likely not meant: printed by `make synth`, `make summary` and `cdktf deploy`, never
    refused."""
    out: list[Issue] = []
    if not cfg.assurance.alarm_subscriptions:
        out.append(
            Issue(
                "assurance.alarm_subscriptions",
                "empty: the kit's alarms (replication failing, lagging or detached, a failed rehearsal) notify "
                'nobody; add one, e.g. alarm_subscriptions = [{ protocol = "email", endpoint = "oncall@example.com" }]',
            )
        )
    return out
