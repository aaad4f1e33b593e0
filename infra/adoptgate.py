"""Before the first apply of an adopting stack: does its saved plan destroy or overwrite anything that exists?

A source marked `adopt = true` in kit.toml is a bucket that holds a lake already: the stack imports it (Terraform
`import {}` blocks) instead of creating it. An import is only safe when the plan that carries it changes nothing the
lake relies on, and an apply that fails half-way leaves roles, alarms and keys behind. This gate reads the saved plan
(`terraform show -json <plan>`) and the configuration before anything is applied, and refuses (exit 2), naming each
resource and attribute:

- a destroy, or a replacement (delete and create in either order), of any resource: whatever a plan can destroy is
  in the state or being imported, and the first apply of an adopting stack destroys nothing; a replacement names the
  attribute paths that force it (`replace_paths`);
- an imported resource whose protected setting the same plan updates (the encryption, the maintenance
  configuration, the storage class, the bucket policy) when the configuration does not state that change; a stated
  change passes and is listed as one. kit.toml states a storage class or an unreferenced-file removal by writing it
  (left out, the bucket keeps its own), a table's maintenance by the table's own `snapshot_retention`; the encryption
  is always written and must say what the bucket has, so only `adopt_changes = ["encryption"]` states a change of it.
  An imported bucket policy may gain the kit's statements and rewrite those the configuration restates under the
  same Sid (a merge, listed); a statement it had that the new policy drops is refused;
- a setting resource created on an imported or adopted bucket (a bucket policy: the bucket may have one whether
  Terraform knows it or not), unless `adopt_changes = ["bucket_policy"]` states it (the bucket has none);
- a table bucket created with the name of a bucket the configuration adopts (it exists: the apply would stop
  half-way on `ConflictException`);
- an existing replication configuration taken over (`existing_destinations`) that loses a destination the
  configuration does not drop on purpose (`adopt_changes = ["replication"]`), or that is created instead of imported;
  and a replication configuration deleted (a replacement included: the bucket replicates nothing from the delete
  until the create);
- an update of a replication configuration whose prior state holds no version token: the pinned provider sends the
  token of the state, and its import reads none (`s3tables_kit.infra.takeover` records the live one first).

    terraform -chdir=cdktf.out/stacks/source plan -out=tfplan
    terraform -chdir=cdktf.out/stacks/source show -json tfplan > plan.json
    python -m s3tables_kit.infra.adoptgate --plan-json plan.json --config kit.toml
    terraform -chdir=cdktf.out/stacks/source apply tfplan        # exactly the plan the gate passed

or in one step, which applies the saved plan only when the gate passes (`--apply`); `--take-over` first gives each
replication configuration the stack imports its live version token in the state (`s3tables_kit.infra.takeover`):

    python -m s3tables_kit.infra.adoptgate --stack-dir cdktf.out/stacks/source --config kit.toml --take-over --apply

Exit 0: a summary of the imports, creates, stated changes and merged policies (`--json` prints it as JSON, `--report`
writes the JSON to a file); exit 2: refused, or the plan or configuration cannot be read. Like
`s3tables_kit.infra.lockcheck`, this is a gate for an honest pipeline, read before the apply; `prevent_destroy` and the
bucket policies are the protection layers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from s3tables_kit.infra.adoptplan import (
    BUCKET_TYPES,
    PlannedResource,
    bucket_arn_of,
    bucket_name_of,
    planned_resources,
    read_saved_plan,
)
from s3tables_kit.infra.takeover import KINDS, ReadLive, TakenOver, live_reader, take_over, terraform_runner
from s3tables_kit.topology.config import KitConfig, Source, load_config

Json = dict[str, Any]
Setting = Literal["bucket_policy", "encryption", "maintenance", "replication", "storage_class", "table_maintenance"]
GUIDE = 'docs/provisioning.md, "When the adoption gate refuses a plan"'
SAVED_PLAN = "adopt.tfplan"
# The protected settings each resource type carries inline: attribute -> setting (aws and awscc spellings).
INLINE_SETTINGS: dict[str, dict[str, Setting]] = {
    "awscc_s3tables_table_bucket": {
        "encryption_configuration": "encryption",
        "storage_class_configuration": "storage_class",
        "unreferenced_file_removal": "maintenance",
    },
    "aws_s3tables_table_bucket": {
        "encryption_configuration": "encryption",
        "storage_class_configuration": "storage_class",
        "maintenance_configuration": "maintenance",
    },
    "aws_s3tables_table": {
        "encryption_configuration": "encryption",
        "storage_class_configuration": "storage_class",
        "maintenance_configuration": "table_maintenance",
    },
    "aws_s3tables_table_bucket_policy": {"resource_policy": "bucket_policy"},
    "aws_s3tables_table_bucket_replication": {"rule": "replication"},
    "aws_s3tables_table_replication": {"rule": "replication"},
}
# Resources that are one setting of the bucket they name by `table_bucket_arn`.
ATTACHED_SETTINGS: dict[str, Setting] = {"aws_s3tables_table_bucket_policy": "bucket_policy"}
REPLICATION_TYPES = tuple(KINDS)  # bucket level first


# ---------------------------------------------------------------- the configuration's intent ----


def stated_settings(src: Source) -> frozenset[str]:
    """The settings of an adopted bucket that kit.toml changes on purpose: a storage class or unreferenced-file
    removal written in it (left out, the bucket keeps its own), and what `adopt_changes` names (the encryption, which
    is always written and must say what the bucket has; a bucket policy created on a bucket that has none)."""
    written = {"storage_class": "storage_class", "unreferenced_file_removal": "maintenance"}
    return frozenset(src.adopt_changes) | {setting for key, setting in written.items() if key in src.model_fields_set}


@dataclass(frozen=True)
class AdoptionIntent:
    """What the configuration says about existing buckets: which are adopted, which settings it changes on purpose
    (bucket ARN -> settings), and which declared tables state their own retention (bucket ARN, namespace, table)."""

    adopted_arns: frozenset[str] = frozenset()
    adopted_names: frozenset[str] = frozenset()
    stated: Mapping[str, frozenset[str]] = field(default_factory=dict)
    stated_tables: frozenset[tuple[str, str, str]] = frozenset()
    # source bucket ARN -> the destinations of its existing bucket-level replication (`existing_destinations`)
    replicating: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, cfg: KitConfig | None) -> AdoptionIntent:
        if cfg is None:
            return cls()
        adopted = [s for s in cfg.sources if s.adopt]
        replicas = [r for r in cfg.replicas if r.adopt]
        return cls(
            frozenset(s.bucket_arn for s in adopted) | {r.bucket_arn for r in replicas},
            frozenset(s.bucket for s in adopted) | {r.bucket for r in replicas},
            {s.bucket_arn: stated_settings(s) for s in adopted}
            | {r.bucket_arn: frozenset(r.adopt_changes) for r in replicas},
            frozenset((s.bucket_arn, ns.name, t.name) for s in adopted for ns, t in s.tables() if t.snapshot_retention),
            {s.bucket_arn: frozenset(s.existing_destinations) for s in adopted if s.existing_destinations},
        )

    def states(self, res: PlannedResource, setting: str) -> bool:
        arn = bucket_arn_of(res)
        if setting == "table_maintenance":
            body = res.after or res.before
            return (arn, str(body.get("namespace")), str(body.get("name"))) in self.stated_tables
        return self.states_on(arn, setting)

    def states_on(self, bucket_arn: str, setting: str) -> bool:
        return setting in self.stated.get(bucket_arn, frozenset())


# ---------------------------------------------------------------- the verdict ----

RefusalRule = Literal["destroy", "replace", "overwrite", "create over existing", "create of an adopted bucket"]
NoteKind = Literal["import", "create", "stated change", "policy merged", "replication kept", "update", "forget"]


@dataclass(frozen=True)
class GateRefusal:
    """One change that would destroy or overwrite what exists."""

    address: str
    rule: RefusalRule
    attributes: tuple[str, ...]  # the forcing paths of a replacement, the overwritten attribute
    why: str

    def __str__(self) -> str:
        return f"{self.address}: {self.why}"

    def to_json(self) -> Json:
        return {"address": self.address, "rule": self.rule, "attributes": list(self.attributes), "why": self.why}


@dataclass(frozen=True)
class GateNote:
    """One change the gate lets through, for the summary."""

    address: str
    kind: NoteKind
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:<14} {self.address}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class AdoptGateReport:
    plan: str  # the plan file's name, or the stack directory
    refused: tuple[GateRefusal, ...]
    notes: tuple[GateNote, ...]

    @property
    def passed(self) -> bool:
        return not self.refused

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 2

    def of_kind(self, kind: NoteKind) -> list[GateNote]:
        return [n for n in self.notes if n.kind == kind]

    def to_json(self) -> Json:
        def notes(kind: NoteKind) -> list[Json]:
            return [{"address": n.address, "detail": n.detail} for n in self.of_kind(kind)]

        return {
            "plan": self.plan,
            "passed": self.passed,
            "refused": [r.to_json() for r in self.refused],
            "imports": notes("import"),
            "creates": notes("create"),
            "stated_changes": notes("stated change"),
            "merged_policies": notes("policy merged"),
            "replications_taken_over": notes("replication kept"),
            "updates": notes("update"),
            "forgotten": notes("forget"),
        }

    def summary(self) -> str:
        labels: tuple[tuple[NoteKind, str], ...] = (
            ("import", "import(s)"), ("create", "create(s)"), ("stated change", "stated change(s)"),
            ("policy merged", "merged policy(ies)"), ("replication kept", "replication(s) taken over"),
            ("update", "other update(s)"),
        )  # fmt: skip
        counts = ", ".join(f"{len(self.of_kind(k))} {label}" for k, label in labels)
        if self.passed:
            head = f"adopt-gate: {self.plan}: nothing existing is destroyed or overwritten ({counts})"
        else:
            head = (
                f"adopt-gate: {self.plan}: refused: {len(self.refused)} change(s) would destroy or overwrite what "
                f"exists; nothing was applied; see {GUIDE}"
            )
        lines = [head, *(f"  REFUSED {r}" for r in self.refused)]
        return "\n".join([*lines, *(f"  {n}" for n in self.notes)])


# ---------------------------------------------------------------- the rules (pure) ----


def _unknown(after_unknown: Json, attr: str) -> bool:
    def any_true(v: object) -> bool:
        if isinstance(v, dict):
            return any(any_true(x) for x in v.values())
        if isinstance(v, list):
            return any(any_true(x) for x in v)
        return v is True

    return any_true(after_unknown.get(attr))


def changed_attributes(res: PlannedResource) -> list[tuple[str, Setting]]:
    """The protected settings an update of this resource changes (an unknown new value counts as changed; an absent
    value and a null are the same)."""
    return [
        (attr, setting)
        for attr, setting in INLINE_SETTINGS.get(res.rtype, {}).items()
        if _unknown(res.after_unknown, attr) or leaf_diff(attr, res.before, res.after)
    ]


def _canon(value: object) -> object:
    """A policy value compared by meaning: a string and a list of that one string are the same, order is not."""
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    items = value if isinstance(value, list) else [value]
    return sorted({json.dumps(_canon(v) if isinstance(v, dict) else v, sort_keys=True) for v in items})


def _statements(policy: object) -> list[Json]:
    doc = json.loads(policy) if isinstance(policy, str) else policy
    if not isinstance(doc, dict):
        return []
    stmts = doc.get("Statement") or []
    return [s for s in (stmts if isinstance(stmts, list) else [stmts]) if isinstance(s, dict)]


def _label(stmt: Json, i: int) -> str:
    return str(stmt.get("Sid") or f"statement {i}")


@dataclass(frozen=True)
class PolicyDiff:
    """A bucket policy's statements before and after, by Sid (or index): kept word for word, rewritten (a statement
    of the new policy has the same Sid: the configuration states it), dropped, and added."""

    kept: tuple[str, ...]
    rewritten: tuple[str, ...]
    dropped: tuple[str, ...]
    added: tuple[str, ...]


def policy_diff(before: object, after: object) -> PolicyDiff:
    old, new = _statements(before), _statements(after)
    old_c = [json.dumps(_canon(s), sort_keys=True) for s in old]
    new_c = [json.dumps(_canon(s), sort_keys=True) for s in new]
    new_sids = {s.get("Sid") for s in new if s.get("Sid")}
    old_sids = {s.get("Sid") for s in old if s.get("Sid")}
    kept = [_label(s, i) for i, (s, c) in enumerate(zip(old, old_c, strict=True)) if c in new_c]
    changed = [(s, i) for i, (s, c) in enumerate(zip(old, old_c, strict=True)) if c not in new_c]
    rewritten = [_label(s, i) for s, i in changed if s.get("Sid") and s.get("Sid") in new_sids]
    dropped = [_label(s, i) for s, i in changed if not (s.get("Sid") and s.get("Sid") in new_sids)]
    added = [_label(s, i) for i, (s, c) in enumerate(zip(new, new_c, strict=True))
             if c not in old_c and not (s.get("Sid") and s.get("Sid") in old_sids)]  # fmt: skip
    return PolicyDiff(tuple(kept), tuple(rewritten), tuple(dropped), tuple(added))


def _destroys(res: PlannedResource) -> GateRefusal:
    where = " (being imported)" if res.importing else " (in the state)"
    reason = f"; {res.reason}" if res.reason else ""
    gap = (
        ": the bucket replicates nothing from the delete until a configuration is put again; update it in place"
        if res.rtype in REPLICATION_TYPES
        else ""
    )
    if res.replaced:
        paths = ", ".join(res.replace_paths) or "no attribute named by the plan"
        why = f"would be replaced{where}: forced by {paths}{reason}{gap}"
        return GateRefusal(res.address, "replace", res.replace_paths, why)
    return GateRefusal(res.address, "destroy", (), f"would be destroyed{where}{reason}{gap}")


# What a refused overwrite tells the engineer to do, by setting.
OVERWRITE_HINTS: dict[str, str] = {
    "encryption": "kit.toml's encryption must say what the bucket has (a deliberate change: adopt_changes = "
    '["encryption"])',
    "storage_class": "kit.toml does not state storage_class (write it to change it; leave it out to keep the bucket's)",
    "maintenance": "kit.toml does not state unreferenced_file_removal (write it to change it; leave it out to keep the "
    "bucket's)",
    "table_maintenance": "the table states no snapshot_retention of its own in kit.toml",
}


def _tokenless(res: PlannedResource) -> GateRefusal | None:
    """Any update of a replication configuration (its role alone included) sends the version token of its prior
    state (the provider's `Update`): the plan's `before` must hold one."""
    if res.rtype not in REPLICATION_TYPES or "update" not in res.actions or res.before.get("version_token"):
        return None
    how = "imported" if res.importing is not None else "in the state"
    why = (
        f"{how} without its version token (the provider's Read keeps none: #46675): S3 Tables would refuse the "
        "update (`A version token is not specified`) after the rest of the stack applied; take it over first: "
        "`s3tables-kit adopt-gate --stack-dir <this stack> --config kit.toml --take-over --apply` imports it alone "
        "and records its live token in the state (docs/adoption.md)"
    )
    return GateRefusal(res.address, "overwrite", ("version_token",), why)


def _imported_update(res: PlannedResource, intent: AdoptionIntent) -> tuple[list[GateRefusal], list[GateNote]]:
    tokenless = _tokenless(res)
    refused: list[GateRefusal] = [tokenless] if tokenless else []
    notes: list[GateNote] = []
    for attr, setting in changed_attributes(res):
        if intent.states(res, setting):
            notes.append(GateNote(res.address, "stated change", f"{setting} ({attr}), stated in kit.toml"))
            continue
        if setting == "replication":
            refusal, note = _replication_update(res, attr)
            refused += [refusal] if refusal else []
            notes += [note] if note else []
            continue
        if setting == "bucket_policy":
            refusal, note = _policy_update(res, attr)
            refused += [refusal] if refusal else []
            notes += [note] if note else []
            continue
        if _unknown(res.after_unknown, attr):
            diff = f"{attr}: {_short(res.before.get(attr))} -> (known after apply)"
        else:
            diff = "; ".join(f"{p}: {old} -> {new}" for p, old, new in leaf_diff(attr, res.before, res.after))
        why = f"imported, and the plan overwrites its {setting} ({diff}); {OVERWRITE_HINTS[setting]}"
        refused.append(GateRefusal(res.address, "overwrite", (attr,), why))
    return refused, notes


def _policy_update(res: PlannedResource, attr: str) -> tuple[GateRefusal | None, GateNote | None]:
    """An imported bucket policy may gain statements, and rewrite the ones the configuration restates by Sid; a
    statement it had is never dropped."""
    if _unknown(res.after_unknown, attr):
        why = f"the new {attr} is not known at plan time: the existing statements cannot be shown kept"
        return GateRefusal(res.address, "overwrite", (attr,), why), None
    diff = policy_diff(res.before.get(attr), res.after.get(attr))
    if diff.dropped:
        why = (
            f"imported, and the plan overwrites its {attr}: existing statement(s) {', '.join(diff.dropped)} dropped "
            "(the new policy has no statement of that Sid); keep them in the adopted policy"
        )
        return GateRefusal(res.address, "overwrite", (attr,), why), None
    detail = f"{len(diff.kept)} existing statement(s) kept; added {', '.join(diff.added) or 'nothing'}"
    if diff.rewritten:
        detail += f"; rewritten as kit.toml states them: {', '.join(diff.rewritten)}"
    return None, GateNote(res.address, "policy merged", detail)


def _destinations(rule: object) -> set[str]:
    """The destination bucket ARNs of a replication resource's `rule` (aws provider: rule[].destination[])."""
    rules = rule if isinstance(rule, list) else []
    return {
        str(d.get("destination_table_bucket_arn"))
        for r in rules
        if isinstance(r, dict)
        for d in r.get("destination") or []
        if isinstance(d, dict)
    }


def _replication_update(res: PlannedResource, attr: str) -> tuple[GateRefusal | None, GateNote | None]:
    """An imported replication configuration, updated in place: it may gain destinations, never lose one unstated."""
    if _unknown(res.after_unknown, attr):
        why = f"the new {attr} is not known at plan time: the existing destinations cannot be shown kept"
        return GateRefusal(res.address, "overwrite", (attr,), why), None
    before, after = _destinations(res.before.get(attr)), _destinations(res.after.get(attr))
    dropped = sorted(before - after)
    if dropped:
        why = (
            f"imported, and the plan drops existing destination(s) {', '.join(dropped)} from the replication: keep "
            'each (a [[replicas]] entry with adopt = true) or state the drop (adopt_changes = ["replication"])'
        )
        return GateRefusal(res.address, "overwrite", (attr,), why), None
    detail = f"{len(before)} existing destination(s) kept; added {', '.join(sorted(after - before)) or 'nothing'}"
    if res.before.get("version_token"):
        detail += "; updated in place with the version token of the state"
    return None, GateNote(res.address, "replication kept", detail)


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 100 else text[:99] + "…"


def leaf_diff(attr: str, before: Json, after: Json) -> list[tuple[str, str, str]]:
    """(path, old, new) of each value that differs below `attr`, e.g. `encryption_configuration.sse_algorithm`."""

    def walk(path: str, old: object, new: object) -> list[tuple[str, str, str]]:
        if old == new:
            return []
        if isinstance(old, dict) and isinstance(new, dict):
            return [d for k in sorted(set(old) | set(new)) for d in walk(f"{path}.{k}", old.get(k), new.get(k))]
        return [(path, _short(old), _short(new))]

    return walk(attr, before.get(attr), after.get(attr))


def _attached_bucket(res: PlannedResource, buckets: Mapping[str, str]) -> str:
    """The bucket ARN a setting resource names, by value, or by its configuration's reference to a bucket resource
    of this plan (`buckets`: address -> ARN) when the value is not known at plan time."""
    arn = bucket_arn_of(res)
    if arn:
        return arn
    for ref in res.references:
        if ref in buckets:
            return buckets[ref]
    return ""


def gate(plan: Json, intent: AdoptionIntent, name: str = "plan") -> AdoptGateReport:
    """The gate's verdict on one saved plan."""
    planned = planned_resources(plan)
    bucket_by_address = {r.address: bucket_arn_of(r) for r in planned if r.rtype in BUCKET_TYPES}
    existing = {arn for r in planned if r.rtype in BUCKET_TYPES and r.importing for arn in [bucket_arn_of(r)] if arn}
    existing |= intent.adopted_arns
    refused: list[GateRefusal] = []
    notes: list[GateNote] = []
    for res in planned:
        if res.deletes:
            refused.append(_destroys(res))
        elif res.importing is not None:
            notes.append(GateNote(res.address, "import", res.importing))
            if "update" in res.actions:
                more_refused, more_notes = _imported_update(res, intent)
                refused += more_refused
                notes += more_notes
        elif res.actions == ("create",):
            refusal = _created_over(res, intent, existing, bucket_by_address)
            if refusal is not None:
                refused.append(refusal)
            elif res.rtype in ATTACHED_SETTINGS and _attached_bucket(res, bucket_by_address) in existing:
                why = f"{ATTACHED_SETTINGS[res.rtype]}, stated in kit.toml (adopt_changes)"
                notes.append(GateNote(res.address, "stated change", why))
            else:
                notes.append(GateNote(res.address, "create", ""))
        elif res.actions == ("forget",):
            notes.append(GateNote(res.address, "forget", "left in the account, removed from the state"))
        elif res.rtype in REPLICATION_TYPES and "update" in res.actions and bucket_arn_of(res) in intent.replicating:
            more_refused, more_notes = _imported_update(res, intent)  # taken over: imported by an earlier step
            refused += more_refused
            notes += more_notes
        elif "update" in res.actions:
            tokenless = _tokenless(res)
            if tokenless is not None:
                refused.append(tokenless)
            else:
                notes.append(GateNote(res.address, "update", ", ".join(a for a, _ in changed_attributes(res))))
    return AdoptGateReport(name, tuple(refused), tuple(notes))


def _created_over(
    res: PlannedResource, intent: AdoptionIntent, existing: set[str], buckets: Mapping[str, str]
) -> GateRefusal | None:
    """A create that would land on something the account already has."""
    if res.rtype in BUCKET_TYPES and bucket_name_of(res) in intent.adopted_names:
        why = (
            f"creates table bucket {bucket_name_of(res)!r}, which the configuration adopts (adopt = true): it exists, "
            "so the stack must import it, not create it"
        )
        return GateRefusal(res.address, "create of an adopted bucket", (), why)
    if res.rtype == REPLICATION_TYPES[0] and _attached_bucket(res, buckets) in intent.replicating:
        arn = _attached_bucket(res, buckets)
        why = (
            f"creates a replication configuration on {arn}, which replicates already (existing_destinations): the "
            "create would replace it or stop on its version token; the stack must import it and update it in place"
        )
        return GateRefusal(res.address, "create over existing", ("replication",), why)
    setting = ATTACHED_SETTINGS.get(res.rtype)
    if setting is None:
        return None
    arn = _attached_bucket(res, buckets)
    if arn not in existing or intent.states_on(arn, setting):
        return None
    why = (
        f"creates a {setting} on {arn}, which exists (imported or adopted) and may have one: the create would "
        f'replace it; import it, or, when the bucket has none, state it (adopt_changes = ["{setting}"])'
    )
    return GateRefusal(res.address, "create over existing", (setting,), why)


def applies_to(plan: Json, intent: AdoptionIntent, *, first_apply: bool = True) -> bool:
    """Whether a plan is to be gated: it imports something, or it is the first apply of a configuration that adopts a
    bucket (a later deploy may destroy what the kit made, as any deploy may)."""
    imports = any(r.importing is not None for r in planned_resources(plan))
    return imports or (first_apply and bool(intent.adopted_arns))


# ---------------------------------------------------------------- the deploy path: plan, gate, apply ----


@dataclass(frozen=True)
class GatedApply:
    report: AdoptGateReport
    plan: Json  # the saved plan, as `terraform show -json` wrote it
    applied: bool
    log: str  # Terraform's output of the steps that ran
    taken_over: tuple[TakenOver, ...] = ()  # the replication configurations given their live token first


def plan_gate_apply(
    terraform: Path,
    stack_dir: Path,
    intent: AdoptionIntent,
    *,
    apply: bool,
    env: Mapping[str, str] | None = None,
    take_over_with: ReadLive | None = None,
) -> GatedApply:
    """`terraform init`, (with `take_over_with`: each imported replication configuration given its live token,
    `s3tables_kit.infra.takeover`), `plan -out`, the gate on `show -json` of that saved plan, then (with `apply`, and
    only when the gate passed) `apply` of exactly that plan: a refused plan sends no request that changes the account
    (a take-over writes the state only)."""
    log: list[str] = []
    tf = terraform_runner(terraform, stack_dir, env, log)
    tf("init", "-input=false", "-no-color")
    taken = tuple(take_over(tf, stack_dir, take_over_with)) if take_over_with is not None else ()
    tf("plan", f"-out={SAVED_PLAN}", "-input=false", "-no-color")
    plan = json.loads(tf("show", "-json", SAVED_PLAN))
    report = gate(plan, intent, str(stack_dir))
    if not (apply and report.passed):
        return GatedApply(report, plan, False, "\n".join(log), taken)
    tf("apply", "-input=false", "-no-color", SAVED_PLAN)
    return GatedApply(report, plan, True, "\n".join(log), taken)


# ---------------------------------------------------------------- entry point ----


def _live_reader(endpoint_url: str | None) -> ReadLive:
    """The deployer's credentials (the default chain, as Terraform's); the endpoint flag wins, else botocore reads
    `$AWS_ENDPOINT_URL` itself (infra imports nothing of the jobs)."""
    import boto3

    session = boto3.session.Session()
    return live_reader(lambda region: session.client("s3tables", region_name=region, endpoint_url=endpoint_url))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="s3tables-kit adopt-gate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan-json", type=Path, action="append", help="`terraform show -json <plan>` output")
    source.add_argument("--stack-dir", type=Path, help="a synthesized stack: plan it to a file, then gate that plan")
    parser.add_argument("--config", type=Path, help="the kit.toml the plan was synthesized from (adopt, adopt_changes)")
    parser.add_argument("--apply", action="store_true", help="with --stack-dir: apply the saved plan if it passes")
    parser.add_argument("--take-over", action="store_true", help="with --stack-dir: first give each replication "
                        "configuration the stack imports its live version token in the state")  # fmt: skip
    parser.add_argument("--endpoint-url", help="with --take-over: the S3 Tables endpoint (default AWS's)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--report", type=Path, help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    if (args.apply or args.take_over) and args.stack_dir is None:
        print("adopt-gate: --apply and --take-over need --stack-dir (they act on that stack)", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config) if args.config else None
        if cfg is not None:  # the documents the plan was built from: an adopter's statement refused refuses it too
            from s3tables_kit.policies.lint import build_within_quotas

            build_within_quotas(cfg)
        intent = AdoptionIntent.of(cfg)
        if args.stack_dir is not None:
            from s3tables_kit.infra.validate import find_terraform

            terraform = find_terraform()
            if terraform is None:
                raise ValueError("no terraform binary (PATH or $KIT_TERRAFORM)")
            reader = _live_reader(args.endpoint_url) if args.take_over else None
            done = plan_gate_apply(terraform, args.stack_dir, intent, apply=args.apply, take_over_with=reader)
            print("".join(f"adopt-gate: take-over: {t}\n" for t in done.taken_over), end="")
            reports = [done.report]
        else:
            reports = [gate(read_saved_plan(p, cfg), intent, p.name) for p in args.plan_json]
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"adopt-gate: {exc}", file=sys.stderr)
        return 2
    doc: Json = {"passed": all(r.passed for r in reports), "plans": [r.to_json() for r in reports]}
    if args.report is not None:
        args.report.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
    for r in reports:
        if not args.json:
            print(r.summary(), file=sys.stdout if r.passed else sys.stderr)
    if args.stack_dir is not None and args.apply and doc["passed"]:
        print(f"adopt-gate: applied the saved plan {args.stack_dir / SAVED_PLAN}")
    return 0 if doc["passed"] else 2


if __name__ == "__main__":
    sys.exit(main())
