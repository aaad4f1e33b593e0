"""Render every policy document of every example configuration for review.

    python -m s3tables_kit.policies.render            # = make policies: write policies/rendered/<example>/*.json +
    SUMMARY.md python -m s3tables_kit.policies.render --check    # = make policies-check: fail with a unified diff when
    the files are stale

One directory per `examples/<stem>.toml`; one `<document name>.json` per document of
`s3tables_kit.policies.docset.build(cfg)`, the set the stacks deploy (2-space indent, statement keys in builder order,
trailing newline) and a `SUMMARY.md` that says, per principal, what it may and may not do on which resource, the
break-glass path, the risk each deny closes and where each document is attached. Reviewers read these files in pull
requests; CI fails when they are stale.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from s3tables_kit.policies import actions as iam_actions
from s3tables_kit.policies import allowlists as AL
from s3tables_kit.policies import documents as policy_documents
from s3tables_kit.policies import lint as policy_lint
from s3tables_kit.policies import summary_failover, summary_layers, summary_vault, vault
from s3tables_kit.policies.lint import OverQuota
from s3tables_kit.policies.parts import PART_BUDGET, part_of
from s3tables_kit.policies.parts import size as part_size
from s3tables_kit.policies.summary_allowlists import ALLOWLISTS, allowlists_markdown
from s3tables_kit.policies.summary_schemes import summary_of
from s3tables_kit.topology import paths
from s3tables_kit.topology.config import KitConfig, load_config

EXAMPLES_DIR = paths.ROOT / "examples"
RENDERED_DIR = paths.PACKAGE / "policies" / "rendered"
SUMMARY = "SUMMARY.md"

KIND_TITLES = {
    "trust": "IAM role trust policy",
    "identity": "IAM identity policy",
    "bucket-policy": "S3 Tables table bucket policy",
    "table-policy": "S3 Tables table policy",
    "scp": "Organizations service control policy",
    "rcp": "Organizations resource control policy",
    "kms-key-policy": "KMS key policy",
    "s3-bucket-policy": "S3 bucket policy",
}


def render_json(document: policy_documents.Document) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def example_configs(examples_dir: Path = EXAMPLES_DIR) -> list[Path]:
    return sorted(examples_dir.glob("*.toml"))


# ---------------------------------------------------------------- summary helpers ----


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _code(values: Iterable[str]) -> str:
    return ", ".join(f"`{v}`" for v in values) or "(none)"


def _short_actions(actions: Iterable[str]) -> str:
    return ", ".join(
        f"`{a.removeprefix(iam_actions.S3T)}`" if a.startswith(iam_actions.S3T) else f"`{a}`" for a in actions
    )


def _exemptions(stmt: dict[str, Any]) -> tuple[list[str], bool]:
    """(principal ARNs exempt from a Deny, whether the maintenance service principal is exempt), read from the
    deployed statement's Condition, not from the rule table: the summary describes what is deployed."""
    cond = stmt.get("Condition", {})
    arns = _as_list(cond.get("ArnNotLike", {}).get("aws:PrincipalArn"))
    service = _as_list(cond.get("StringNotEqualsIfExists", {}).get("aws:PrincipalServiceName"))
    return arns, iam_actions.MAINTENANCE_SERVICE in service


def _any_matches(arns: Iterable[str], exempt: Iterable[str]) -> bool:
    """Does an exemption (an ARN, or an ARN pattern such as an estate's `arn:aws:iam::*:role/<kit>-*-...`) match
    one of `arns`? `ArnNotLike` wildcards: `*` and `?`."""
    return any(fnmatch.fnmatchcase(arn, pattern) for arn in arns for pattern in exempt)


def _deny_rows(docs: Sequence[policy_documents.PolicyDoc]) -> list[tuple[policy_documents.PolicyDoc, dict[str, Any]]]:
    return [(d, s) for d in docs for s in d.document["Statement"] if s["Effect"] == "Deny"]


LAYERS = (
    ("bucket-policy", "bucket policy"),
    ("table-policy", "table policy"),
    ("guardrail", "IAM guardrail"),
    ("scp", "SCP"),
)
ALL_LAYERS = (*LAYERS, ("key-policy", "key policy"))


# `s3tables_kit.policies.statements.kms_deny_key_policy_change`
REPLICA_KEY_GUARD = "DenyKeyPolicyChangeExceptBreakGlass"


def _layer(d: policy_documents.PolicyDoc) -> str | None:
    if d.kind in ("bucket-policy", "table-policy", "scp"):
        return d.kind
    if d.kind == "identity" and part_of(d.name, "replica-guardrail"):
        return "guardrail"
    if d.kind == "kms-key-policy" and any(s.get("Sid") == REPLICA_KEY_GUARD for s in d.document["Statement"]):
        return "key-policy"  # replica keys (a source or alarm topic key guards the pipeline, not a replica)
    return None


# What changing (or removing) each layer takes: the action whose Deny in `where` decides who may.
_LAYER_CHANGE = {
    "bucket-policy": ("s3tables:PutTableBucketPolicy", "bucket-policy"),
    "table-policy": ("s3tables:PutTablePolicy", "table-policy"),
    "guardrail": ("iam:CreatePolicyVersion", "scp"),
    "key-policy": ("kms:PutKeyPolicy", "key-policy"),
}


def _denies_of(docs: Sequence[policy_documents.PolicyDoc], layer: str, action: str) -> list[dict[str, Any]]:
    return [
        s
        for d in docs
        if _layer(d) == layer
        for s in d.document["Statement"]
        if s["Effect"] == "Deny" and action in _as_list(s.get("Action"))
    ]


def _exempt_union(stmts: Sequence[dict[str, Any]]) -> set[str]:
    """Principals exempt from at least one of the statements (so the layer does not hold them everywhere)."""
    out: set[str] = set()
    for s in stmts:
        out |= set(_exemptions(s)[0])
    return out


def _change_exempt(docs: Sequence[policy_documents.PolicyDoc], layer: str) -> set[str] | None:
    """Principals exempt from the deny on changing `layer` (None: no deny covers that change)."""
    action, where = _LAYER_CHANGE[layer]
    stmts = _denies_of(docs, where, action)
    return _exempt_union(stmts) if stmts else None


def layer_changers(cfg: KitConfig, docs: Sequence[policy_documents.PolicyDoc]) -> dict[str, str]:
    """Who besides break-glass can change or remove each layer, read from the deployed denies."""
    bg = set(cfg.protection.break_glass_principals)
    out: dict[str, str] = {}
    for layer in _LAYER_CHANGE:
        exempt = _change_exempt(docs, layer)
        who = sorted(exempt - bg) if exempt is not None else ["anyone with the IAM permission (no deny)"]
        out[layer] = _code(who) if who else "nobody"
    org = cfg.protection.organization
    out["scp"] = (
        f"the management account `{org.management_account_id}`"
        + (f" (`{org.deploy_role_arn}`)" if org.deploy_role_arn else "")
        if org
        else "(no SCP)"
    )
    return out


def protected_actions(docs: Sequence[policy_documents.PolicyDoc]) -> list[str]:
    acts = [iam_actions.S3T + a for a in iam_actions.PROTECTED_ACTIONS]
    if any(_layer(d) == "key-policy" for d in docs):
        acts += list(iam_actions.KMS_KEY_DESTRUCTION)
    return acts


def layer_table(cfg: KitConfig, docs: Sequence[policy_documents.PolicyDoc]) -> list[str]:
    """Per protected action: the layers that deny it (to whom), and whether any one non-break-glass actor that can
    change layers still meets two it cannot change."""
    changers = layer_changers(cfg, docs)
    titles = dict(ALL_LAYERS)
    out = [
        "## Layers per protected action",
        "",
        "For every protected action on a replica: the layers whose Deny covers it, who is exempt there besides",
        "break-glass (the legitimate paths), and how many layers still stand against the strongest actor that is not",
        "exempt from the action, after that actor has replaced every layer it may change (a deploy role, or anyone",
        "else without the guardrail attached). Counted per replica over the documents that apply to it (its bucket,",
        "table and key policy, its account's guardrail, the SCPs), the fewest over the replicas.",
        "`tests/test_policy_attacks.py` proves the same with the IAM simulator, in sequences of requests. The",
        "organization's management account is trusted: it can change the SCPs.",
        "",
        "Who besides break-glass can change each layer:",
        "",
        *[f"- {titles[layer]}: {changers[layer]}" for layer, _ in ALL_LAYERS],
        "",
        "| Action | Denied by (exempt besides break-glass) | Layers left against any one actor |",
        "|---|---|---|",
    ]
    for action in protected_actions(docs):
        shown, lowest = summary_layers.layers_left(
            cfg, docs, action, layer_of=_layer, layers=[layer for layer, _ in ALL_LAYERS], change=_LAYER_CHANGE
        )
        if lowest is None:
            continue  # nothing of any replica is named by it (a key action where no replica has a kit key)
        cells = [
            titles[layer]
            + (f" ({', '.join(sorted(x.split('::', 1)[-1] for x in shown[layer]))})" if shown[layer] else "")
            for layer, _ in ALL_LAYERS
            if layer in shown
        ]
        cells_text = "; ".join(cells) or "(none)"
        out.append(f"| `{action}` | {cells_text} | {lowest}{'' if lowest >= 2 else ' (below two!)'} |")
    return [*out, ""]


def _protection_cells(
    rule: iam_actions.ProtectionRule,
    arns: Sequence[str],
    docs: Sequence[policy_documents.PolicyDoc],
    service: str | None,
) -> list[str]:
    """One cell per layer: `denied` when a deployed Deny of that layer covers one of the rule's actions and does not
    exempt the principal, `exempt` when every such Deny exempts it, `—` when the layer carries none of the actions
    (or does not apply to a service principal)."""
    wanted = {iam_actions.S3T + a for a in rule.actions}
    cells = []
    for layer, _title in LAYERS:
        if service is not None and layer in ("guardrail", "scp"):
            cells.append("n/a")
            continue
        verdicts: set[str] = set()
        for d in docs:
            if _layer(d) != layer:
                continue
            for s in d.document["Statement"]:
                if s["Effect"] != "Deny" or not wanted & set(_as_list(s.get("Action"))):
                    continue
                exempt_arns, maintenance_exempt = _exemptions(s)
                exempt = _any_matches(arns, exempt_arns) or (
                    service == iam_actions.MAINTENANCE_SERVICE and maintenance_exempt
                )
                verdicts.add("exempt" if exempt else "denied")
        cells.append("denied" if "denied" in verdicts else ("exempt" if verdicts else "—"))
    return cells


def _granted_by_condition(stmt: Mapping[str, Any], arns: Sequence[str]) -> bool:
    """A grant to Principal "*" that names its principals by ARN pattern and account (a fan-in replica's grants)."""
    cond = stmt.get("Condition", {})
    patterns = _as_list(cond.get("ArnLike", {}).get("aws:PrincipalArn"))
    accounts = _as_list(cond.get("StringEquals", {}).get("aws:PrincipalAccount"))
    if stmt.get("Principal") != "*" or not patterns or not accounts:
        return False
    return any(a.split(":")[4] in accounts and any(fnmatch.fnmatchcase(a, p) for p in patterns) for a in arns)


def _statement_actions(s: dict[str, Any]) -> str:
    """A statement's actions as reviewers read them; an allow-list's Deny (`NotAction`) as "all but" its list."""
    if "Action" in s:
        return _short_actions(_as_list(s["Action"]))
    return f"every action but {_short_actions(_as_list(s['NotAction']))}"


def _principal_section(
    title: str,
    arns: Sequence[str],
    docs: Sequence[policy_documents.PolicyDoc],
    *,
    intro: str,
    identity_docs: Sequence[str] = (),
    service: str | None = None,
) -> list[str]:
    """May: Allow statements of the principal's own identity documents and resource-policy / key-policy grants
    naming it. May not: a table of every protection rule per layer, read from the deployed Deny statements."""
    out = [f"### {title}", "", intro, ""]
    if arns:
        out += [f"Principal: {_code(arns)}", ""]
    may: list[str] = []
    own_denies: list[str] = []
    for d in docs:
        for s in d.document["Statement"]:
            if "Resource" not in s and "NotResource" not in s:
                continue  # trust statements: described in the intro
            principal = s.get("Principal")
            named = _as_list(principal.get("AWS")) if isinstance(principal, dict) else []
            services = _as_list(principal.get("Service")) if isinstance(principal, dict) else []
            own = d.name in identity_docs and d.kind == "identity" and _layer(d) is None
            granted = bool(set(named) & set(arns)) or (service is not None and service in services)
            granted = granted or _granted_by_condition(s, arns)
            acts = _statement_actions(s)
            res = (
                _code(_as_list(s["Resource"]))
                if "Resource" in s
                else f"every resource but {_code(_as_list(s['NotResource']))}"
            )
            line = f"- {acts} on {res} (`{d.name}` / `{s['Sid']}`)"
            if s["Effect"] == "Allow" and (own or granted):
                may.append(line)
            elif s["Effect"] == "Deny" and own:
                own_denies.append(line)
    out += ["**May** (Allow statements that name it or are attached to it):", ""]
    nothing = (
        "- nothing in the kit's documents: AWS authorises the service itself, within the denies below"
        if service
        else "- nothing in the kit's documents: its own IAM policies decide, within the denies below"
    )
    out += (may or [nothing]) + [""]
    if own_denies:
        out += ["**May not, by its own policy:**", "", *own_denies, ""]
    out += [
        "**May not on the replicas** (each protection rule per layer, read from the deployed Deny statements):",
        "",
        "| Rule | Actions | " + " | ".join(t for _, t in LAYERS) + " |",
        "|---|---|" + "---|" * len(LAYERS),
    ]
    for rule in iam_actions.PROTECTION_RULES:
        cells = _protection_cells(rule, arns, docs, service)
        out.append(f"| `{rule.sid}` | {_short_actions(rule.actions)} | " + " | ".join(cells) + " |")
    key_denies = sorted(
        {
            s["Sid"]
            for d in docs
            if _layer(d) == "key-policy"
            for s in d.document["Statement"]
            if s["Effect"] == "Deny" and not _any_matches(arns, _exemptions(s)[0])
        }
    )
    has_key_denies = any(_layer(d) == "key-policy" for d in docs)
    if has_key_denies:
        out += [
            "",
            f"Replica KMS keys: {'denied by ' + _code(key_denies) if key_denies else 'exempt from the key denies'}.",
        ]
    out.append("")
    return out


def summary_markdown(stem: str, cfg: KitConfig, docs: Sequence[policy_documents.PolicyDoc]) -> str:
    names = [d.name for d in docs]
    deploy_roles = sorted({r.deploy_role_arn for r in cfg.replicas if r.deploy_role_arn})
    bg = list(cfg.protection.break_glass_principals)
    replicas = ", ".join(f"`{r.bucket}` ({r.account_id}, {r.region})" for r in cfg.replicas)
    guardrails = [n for n in names if part_of(n, "replica-guardrail")]
    lines = [
        f"# Policy summary: `{stem}` (kit `{cfg.kit.name}`)",
        "",
        f"Generated by `make policies` from `examples/{stem}.toml`; do not edit by hand (`make policies-check` fails",
        "when this file or any document next to it is stale). Every `*.json` here is deployed byte for byte after",
        "normalisation.",
        "",
        *summary_of(cfg).source_lines(cfg),
        f"- Replicas (protected): {replicas}",
        f"- Recovery target (writable): `{cfg.recovery.bucket}` next to `{cfg.recovery.replica}`",
        "",
        "## Security intent",
        "",
        "Nobody but the break-glass principals can delete a replica, shorten its retention or remove its protection.",
        "The replication role still creates and writes replicas; the S3 Tables maintenance service still writes;",
        "the recovery role reads replicas and writes only the recovery bucket; a Terraform deploy role may change",
        "policies and bucket settings but never delete, and it carries the guardrail it cannot remove. Every protected",
        'action is denied by at least two layers, and no single non-break-glass actor can remove two (see "Layers per',
        'protected action").',
        "",
        "## Who may do what",
        "",
    ]
    lines += _replication_role_sections(cfg, docs)
    lines += _principal_section(
        "S3 Tables maintenance service",
        [],
        docs,
        intro=f"Service principal `{iam_actions.MAINTENANCE_SERVICE}` (snapshot expiry, unreferenced-file removal). "
        "AWS authorises it internally; the kit's resource-policy denies still bind it, except for replica data writes.",
        service=iam_actions.MAINTENANCE_SERVICE,
    )
    lines += _principal_section(
        "Recovery role",
        [cfg.recovery_role_arn],
        docs,
        intro="Assumed only by EMR Serverless job runs in the recovery account (`recovery-role-trust`). Reads the "
        "replica, writes only the recovery bucket.",
        identity_docs=["recovery-role-permissions", "recovery-role-rehearsal-metrics"],
    )
    if deploy_roles:
        lines += _principal_section(
            "Terraform deploy roles (replica accounts)",
            deploy_roles,
            docs,
            intro="Change policies and bucket settings after review; never delete, never change retention.",
        )
    for title, arns, intro, identity in summary_of(cfg).assurance_principals(cfg):  # `[assurance]`
        lines += _principal_section(title, arns, docs, intro=intro, identity_docs=identity)
    lines += _principal_section(
        "Break-glass principals",
        bg,
        docs,
        intro="Exempt from every protective Deny (see the break-glass path below).",
    )
    lines += _principal_section(
        "Everyone else in the replica accounts (administrators, data engineers, workloads)",
        [],
        docs,
        intro="Whatever their IAM permissions (even `AdministratorAccess`), every protective Deny applies. Reads "
        "follow their IAM policies. Principals in other accounts (including the source account, apart from the "
        "replication role) get no grant in any replica bucket policy, so they cannot reach the replicas at all.",
        identity_docs=guardrails,
    )
    lines += [
        "## Break-glass path",
        "",
        "Only these principals pass the protective denies (bucket policy, table policy, IAM guardrail, SCPs and the",
        "replica KMS key's denies). Those of another account than a replica are granted explicitly by its bucket",
        "and key policies (a cross-account request needs an Allow on both sides):",
        "",
        *[f"- `{a}`" for a in bg],
        "",
        "1. Open an incident and get the change approved; assume the break-glass role (guard its trust policy with",
        "   MFA and a small group; every use shows in CloudTrail as `AssumeRole` on that role).",
        "2. As that role, make the one change the incident needs (delete, shorten retention, replace a policy).",
        "3. Re-apply protection: `make harden` (table policies, replica retention) and `cdktf deploy` (bucket",
        "   policy, guardrail, SCP), then `make audit` to compare live protection with the configuration.",
        "",
        "## Protective denies and the risk each closes",
        "",
        "| Sid | Actions | Risk it closes | Exempt besides break-glass |",
        "|---|---|---|---|",
    ]
    for rule in iam_actions.PROTECTION_RULES:
        exempt = []
        if rule.exempt_replication_role:
            exempt.append("replication role")
        if rule.exempt_maintenance_service:
            exempt.append("maintenance service (resource policies)")
        if rule.exempt_deploy_roles and rule.locked_after_first_deploy:
            exempt.append(
                "deploy roles for the first deploy only (SCP, guardrail; the bucket and table policies deny them)"
            )
        elif rule.exempt_deploy_roles:
            exempt.append("deploy roles")
        lines.append(
            f"| `{rule.sid}` | {_short_actions(rule.actions)} | {rule.risk} | {', '.join(exempt) or 'nobody'} |"
        )
    lines += [
        "",
        "In the SCP (and, by the deploy-role exemption alone, in the guardrail) the rules with the same exemptions "
        "are merged to stay within the size limits: "
        + "; ".join(f"`{r.sid}`" for r in policy_documents.scp_rules())
        + "; guardrail: "
        + "; ".join(f"`{r.sid}`" for r in policy_documents.guardrail_rules())
        + ". The table-only "
        + ", ".join(f"`{r.sid}`" for r in policy_documents.scp_rules() if r.tables_only)
        + " is in the second SCP (`scp-protect-replica-guards`, attached to the same targets), the others in the "
        "first: one SCP holds 5,120 characters.",
        "",
    ]
    other_denies = [
        (d, s) for d, s in _deny_rows(docs) if s["Sid"] not in {r.sid for r in iam_actions.PROTECTION_RULES}
    ]
    merged = {r.sid for r in (*policy_documents.scp_rules(), *policy_documents.guardrail_rules())}
    other_denies = [(d, s) for d, s in other_denies if s["Sid"] not in merged]
    if other_denies:
        lines += ["Other denies:", ""]
        by_sid: dict[str, list[str]] = {}
        for d, s in other_denies:
            by_sid.setdefault(s["Sid"], []).append(f"`{d.name}`")
        vault_risks = summary_vault.risks(cfg)
        for sid, where in by_sid.items():
            lines.append(f"- `{sid}` ({', '.join(where)}): {vault_risks.get(sid) or _other_risk(sid)}")
        lines.append("")
    lines += summary_of(cfg).organization(cfg)
    lines += layer_table(cfg, docs)
    lines += summary_vault.summary_lines(cfg)
    lines += [
        "## Documents and where they are attached",
        "",
        "| Document | Kind | Account | Attached to |",
        "|---|---|---|---|",
    ]
    for d in docs:
        title = KIND_TITLES.get(d.kind, d.kind)
        lines.append(f"| [`{d.name}.json`]({d.name}.json) | {title} | {d.account_id} | {d.attached_to} |")
    scps = [d for d in docs if d.kind == "scp"]
    lines += summary_of(cfg).scp_sizes(scps) if scps else []
    managed = [d for d in docs if d.kind == "identity" and "guardrail" in d.name]
    inline = [d for d in docs if d.kind == "identity" and d not in managed]
    tables = [d for d in docs if d.kind in ("bucket-policy", "table-policy")]
    for group, what in (  # every document the quota rules check (`s3tables_kit.policies.lint.QUOTA_RULES`)
        (managed, f"Managed policy sizes (white space not counted, of 6,144 characters each; a policy over "
                  f"{PART_BUDGET:,} is deployed in parts, `<name>-part<k>`, each attached to the same roles)"),
        (inline, "Role policy sizes (white space not counted, held to 6,144 characters each like a managed policy)"),
        (tables, "Table bucket and table policy sizes (compact JSON, of 20,480 characters each)"),
    ):  # fmt: skip
        if group:
            lines += ["", f"{what}: {', '.join(f'`{d.name}` {part_size(d.document)}' for d in group)}."]
    return "\n".join(lines) + "\n"


def _replication_role_sections(cfg: KitConfig, docs: Sequence[policy_documents.PolicyDoc]) -> list[str]:
    """One section per source's replication role (its documents `<purpose>--<stack id>` in an estate)."""
    out: list[str] = []
    for src in cfg.sources:
        name = policy_documents.scheme_of(cfg).source_document_name
        dests = ", ".join(f"`{r.bucket}`" for r in cfg.destinations_of(src))
        intro = (
            f"Assumed only by `{iam_actions.REPLICATION_SERVICE}` for the source account `{src.account_id}` "
            f"(`{name('replication-role-trust', src.stack_id)}`). Reads the source, creates and writes replicas."
        )
        summary = summary_of(cfg)
        out += _principal_section(
            "Replication role" + summary.source_title.format(id=src.id),
            [cfg.replication_role_arn_of(src)],
            docs,
            intro=intro + summary.role_scope.format(bucket=src.bucket, dests=dests),
            identity_docs=[name("replication-role-permissions", src.stack_id)],
        )
    return out


def _other_risk(sid: str) -> str:
    return {
        "DenyAllWritesToReplicas": "a recovery job (or a bug in it) must never write, delete or reconfigure a replica; "
        "it writes only the recovery bucket.",
        "DenyKeyDeletionExceptBreakGlass": "disabling or scheduling deletion of a replica's key makes every replica "
        "file unreadable.",
        "DenyKeyPolicyChangeExceptBreakGlass": "rewriting the replica key policy would remove the key deletion deny "
        "(the first step of destroying the replica through its key); the deploy role is not exempt either.",
        "DenyReplicaKeyDestruction": "identity/SCP layer over the replica keys the kit created (matched by their "
        f"`{iam_actions.REPLICA_KEY_TAG}` tag): disabling, scheduling deletion or rewriting the key policy.",
        "DenyReplicaKeyUntag": f"removing the `{iam_actions.REPLICA_KEY_TAG}` tag would take a key out of the denies "
        "above.",
        "DenyProtectionTagRemovalExceptBreakGlass": "the key policy's own layer against removing the "
        f"`{iam_actions.REPLICA_KEY_TAG}` tag (SCP and guardrail match replica keys by it).",
        "DenyReplicaOwnKeyDestruction": "the same for bring-your-own replica keys, named by ARN.",
        "DenyPrivilegedRoleTampering": "rewriting the trust of (or deleting and re-creating) a break-glass, deploy or "
        "replication role would let an administrator become it: every exemption is keyed on the role's ARN.",
        "DenyAssumeReplicationRole": "the replication role is for the replication service only; no principal of the "
        "organisation assumes it, whatever its trust policy says.",
        "DenyGuardrailChange": "a new version of the guardrail, or its deletion, removes the identity layer.",
        "DenyGuardrailDetach": "detaching the guardrail (e.g. the deploy role from itself) removes the identity layer.",
        "DenyInsecureTransport": "recovery scripts, logs and reports are read and written over TLS only.",
        "DenyReplicaDisassociationByAccount": "the ARN-pattern layer for disassociation in the replica accounts, "
        "whatever a bucket's tags (whether the tag condition applies to it is unverified).",
        "DenyProtectionTagChange": "without its protection tag a bucket falls out of every tag-matched SCP deny.",
        "DenyFanInRolesOutsideTheirAccountsNamespaces": "in a replica several sources feed, a source's replication "
        "role writes only the namespaces named after its own account (acct<account id>_): it cannot overwrite "
        "another account's copies.",
        "DenyReplicationRoleCreation": "a new role named like a replication role would be exempt from the SCP's "
        "replication-path denies; only the sources' deploy roles create them.",
        **{r.sid: r.risk for r in iam_actions.PIPELINE_RULES},
        **vault.BACKUP_ROLE_GUARD_RISKS,
        **{f"Deny{s.scope}{c}": f"{s.risk} See ALLOWLISTS.md." for s in AL.KIT_SCOPES for c in ("", "Deploy")},
        "DenySourceOwnKeyDestruction": "the same for a bring-your-own source key, named by ARN.",
        "DenyKeyDestructionExceptBreakGlass": "the source key's (or the alarm topic key's) own layer: "
        "disabling it stops replication (or every alarm delivery); break-glass only.",
        "DenyKitMetricsFromOthers": "a heartbeat and zero lag published by anyone but the monitor (or a success by "
        "anyone but the rehearsal) would hide a frozen replica.",
        "DenyPassReplicationRoleElsewhere": "passed to another service, a replication role acts with its write access "
        "to the replicas for whoever runs that service.",
        "DenyReplicationRoleCreationInReplicaAccounts": "in a replica account (a vault), no deploy role by name "
        "mints a role of the replication or monitor name pattern: only the deploy roles of its sources, by ARN.",
        "DenyReplicationRoleCreationHere": "the guardrail's layer of the same: minting a pattern role in this account.",
    }.get(sid, "see the statement")


# ---------------------------------------------------------------- render / check ----


def render_example(config_path: Path) -> dict[str, str]:
    """{relative file name: content} for one example configuration (`OverQuota` when a document is over its quota)."""
    cfg = load_config(config_path)
    try:
        ds = policy_lint.build_within_quotas(cfg)  # the same set `s3tables_kit.infra.app.build_app` hands to the stacks
    except OverQuota as err:
        raise OverQuota(f"{config_path}: {err}") from None
    files = {f"{d.name}.json": render_json(d.document) for d in ds.all()}  # deployed + failover candidates
    files[SUMMARY] = summary_markdown(config_path.stem, cfg, ds.docs)
    files[ALLOWLISTS] = allowlists_markdown(config_path.stem, cfg, ds.docs)
    if ds.candidates:  # failover candidates: what promoting each replica would deploy, reviewed in advance
        from s3tables_kit.policies import freeze

        files[SUMMARY] += summary_failover.summary_section(cfg)
        files[SUMMARY] += freeze.summary_section(cfg)
    return files


def render_all(examples_dir: Path = EXAMPLES_DIR) -> dict[str, str]:
    """{"<stem>/<file>": content} for every example."""
    out: dict[str, str] = {}
    for path in example_configs(examples_dir):
        for name, text in render_example(path).items():
            out[f"{path.stem}/{name}"] = text
    return out


def write_tree(files: dict[str, str], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = out_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def read_tree(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.is_file()
    }


def diff_trees(expected: dict[str, str], actual: dict[str, str], label: str = "policies/rendered") -> list[str]:
    """Readable problems: a unified diff per changed file (committed -> freshly rendered), missing and extra files."""
    problems: list[str] = []
    for rel in sorted(set(expected) | set(actual)):
        if rel not in actual:
            problems.append(f"missing: {label}/{rel} (run `make policies` and commit it)\n")
        elif rel not in expected:
            problems.append(f"extra: {label}/{rel} (no example renders it any more; delete it)\n")
        elif expected[rel] != actual[rel]:
            problems.append(
                "".join(
                    difflib.unified_diff(
                        actual[rel].splitlines(keepends=True),
                        expected[rel].splitlines(keepends=True),
                        fromfile=f"a/{label}/{rel} (committed)",
                        tofile=f"b/{label}/{rel} (rendered now)",
                    )
                )
            )
    return problems


def check(rendered_dir: Path = RENDERED_DIR, examples_dir: Path = EXAMPLES_DIR) -> list[str]:
    """Re-render into a temporary directory and compare with `rendered_dir`."""
    with tempfile.TemporaryDirectory(prefix="policies-render-") as tmp:
        write_tree(render_all(examples_dir), Path(tmp))
        fresh = read_tree(Path(tmp))
    return diff_trees(fresh, read_tree(rendered_dir))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="s3tables-kit policies", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail (exit 1) with a diff when the rendered files are stale"
    )
    parser.add_argument("--out", type=Path, default=RENDERED_DIR, help="output directory (default: policies/rendered)")
    parser.add_argument("--examples", type=Path, default=EXAMPLES_DIR, help="directory of example configurations")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.out, args.examples)
        if problems:
            sys.stdout.write("".join(p if p.endswith("\n") else p + "\n" for p in problems))
            print(
                f"\npolicies-check: {len(problems)} rendered file(s) stale. Run `make policies` and commit the result."
            )
            return 1
        print(f"policies-check: {args.out} is up to date ({len(read_tree(args.out))} files).")
        return 0
    files = render_all(args.examples)
    stale = set(read_tree(args.out)) - set(files)
    for rel in sorted(stale):
        (args.out / rel).unlink()
    for d in sorted((p for p in args.out.rglob("*") if p.is_dir()), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    write_tree(files, args.out)
    print(f"rendered {len(files)} files under {args.out} ({len(example_configs(args.examples))} examples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
