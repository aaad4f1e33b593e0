"""After a failover the scheduled job runs stay guarded: the failover topology's SCPs carry `DenyScheduledJobChange`
(`s3tables_kit.policies.pipeline.scheduled_jobs`), proven with the real IAM evaluator on the SCPs it deploys.

Whoever rewrites the vault backup's or the recovery rehearsal's schedule, passes their roles to a schedule of its
own, or overwrites what they run (the scripts bucket's `scheduled/`) runs code as the backup or the recovery role.
The failover topology replaces the pipeline SCP with its own (both sources' pipelines), which carries it as the
normal topology's does, with the pipeline SCP's exemptions. Worlds: the seed (backup
and rehearsal schedules, break-glass alone exempt) and the multi-account example (the rehearsal; the recovery
stack's deploy role exempt), each after promoting its configured replica; every failover SCP at one OU, an
on-call engineer with `*` on `*` as the non-exempt principal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.policies import failover as FO
from s3tables_kit.policies.docset import build
from s3tables_kit.policies.lint import SCP_MAX_CHARS
from s3tables_kit.policies.simulate import ScpLevel, SimRequest, principal_context
from s3tables_kit.topology.config import load_config
from tests import policy_fixtures
from tests.test_policy_lint import EXAMPLES, ROOT

SID = "DenyScheduledJobChange"
KIT_SID = "DenyKitResources"  # the kit's resources' allow-list (s3tables_kit.policies.allowlists.KIT_RESOURCES)
# The deploy roles' reviewed set creates and updates a schedule; deleting one is a break-glass deploy.
DEPLOY_NEVER = frozenset({"scheduler:DeleteSchedule", "scheduler:DeleteScheduleGroup"})
SCHEDULER = "scheduler.amazonaws.com"

# world: (promoted bucket, recovery account, scheduler ARN prefix, scripts bucket ARN, schedules (each in the group
# of its name), schedule roles,
# {principal: allowed})
WORLDS: dict[str, tuple[str, str, str, str, tuple[str, ...], tuple[str, ...], dict[str, bool]]] = {
    "seed": (
        "demo-dest-tablebucket",
        "111122223333",
        "arn:aws:scheduler:us-west-2:111122223333:",
        "arn:aws:s3:::seed-recovery-111122223333-us-west-2",
        ("seed-vault-backup", "seed-recovery-rehearsal"),
        ("seed-vault-backup-schedule", "seed-recovery-rehearsal-schedule"),
        {"oncall-engineer": False, "s3tables-break-glass": True},
    ),
    "multi-account": (
        "lakehouse-replica-euc1",
        "222222222222",
        "arn:aws:scheduler:eu-central-1:222222222222:",
        "arn:aws:s3:::lakehouse-recovery-222222222222-eu-central-1",
        ("lakehouse-recovery-rehearsal",),
        ("lakehouse-recovery-rehearsal-schedule",),
        {"oncall-engineer": False, "s3tables-break-glass": True, "terraform-deploy": True},
    ),
}


def failover_scps(example: str, bucket: str) -> dict[str, dict[str, Any]]:
    cfg = load_config(ROOT / "examples" / f"{example}.toml")
    return {d.name: d.document for d in FO.failover_policy_docs(cfg, bucket) if d.kind == "scp"}


def tries(world: str) -> list[tuple[str, str, dict[str, str]]]:
    """(action, resource, extra context) of every change to what a scheduled run runs or as whom."""
    _bucket, acct, schedules, scripts, names, roles, _who = WORLDS[world]
    out = [(f"scheduler:{v}Schedule", f"{schedules}schedule/{n}/{n}", {}) for n in names for v in ("Update", "Delete")]
    out += [("scheduler:DeleteScheduleGroup", f"{schedules}schedule-group/{n}", {}) for n in names]
    out += [(f"s3:{verb}Object", f"{scripts}/scheduled/backup_entry.py", {}) for verb in ("Put", "Delete")]
    pass_ctx = {"iam:PassedToService": SCHEDULER}
    out += [("iam:PassRole", f"arn:aws:iam::{acct}:role/{r}", pass_ctx) for r in roles]
    return out


def requests(world: str, variant: str, scps: list[str]) -> list[SimRequest]:
    acct = WORLDS[world][1]
    levels = (
        ScpLevel("r-root", (policy_fixtures.FULL_AWS_ACCESS,)),
        ScpLevel("ou-ab12-replicas1", (policy_fixtures.FULL_AWS_ACCESS, *(f"{variant}|{n}" for n in scps))),
        ScpLevel(acct, (policy_fixtures.FULL_AWS_ACCESS,)),
    )
    out = []
    for who in WORLDS[world][6]:
        arn = f"arn:aws:iam::{acct}:role/{who}"
        for action, resource, ctx in tries(world):
            out.append(
                SimRequest(
                    id=f"{variant}|{who}:{action}:{resource}",
                    principal=arn,
                    action=action,
                    resource=resource,
                    resource_account=acct,
                    context={**principal_context(arn), **ctx},
                    identity_policies=(policy_fixtures.FULL_AWS_ACCESS,),
                    scps=levels,
                )
            )
    return out


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    """Per world, the failover SCPs as built and with the statement dropped from the SCP that carries it."""
    variants: dict[str, dict[str, Any]] = {}
    reqs: list[SimRequest] = []
    for world, (bucket, *_rest) in WORLDS.items():
        scps = failover_scps(world, bucket)
        holder = [n for n, d in scps.items() if any(s.get("Sid") == SID for s in d["Statement"])]
        assert holder == [f"failover--{bucket}--scp-protect-pipeline"], holder
        dropped = json.loads(json.dumps(scps))
        policy_fixtures.drop_statement(dropped[holder[0]], SID)
        for doc in dropped.values():  # the kit's resources' allow-list closes the schedules and their roles too
            doc["Statement"] = [s for s in doc["Statement"] if s.get("Sid") != KIT_SID]
        for label, docs in ((world, scps), (f"{world}-without", dropped)):
            variants[label] = docs
            reqs += requests(world, label, sorted(docs))
    return policy_fixtures.evaluate_variants(variants, reqs, processes=1)


@pytest.mark.node
@pytest.mark.parametrize("world", WORLDS)
def test_after_a_failover_only_break_glass_and_the_deploy_roles_change_a_scheduled_run(
    results: dict[str, dict[str, Any]], world: str
) -> None:
    got = results[world]
    for who, allowed in WORLDS[world][6].items():
        for action, resource, _ctx in tries(world):
            res = got[f"{who}:{action}:{resource}"]
            if who == "terraform-deploy" and action in DEPLOY_NEVER:
                assert not res.allowed and any(d.endswith(f"#{KIT_SID}Deploy") for d in res.denied_by), res
                continue
            assert res.allowed is allowed, (who, action, resource, res.decision)
            if not allowed:
                assert any(d.endswith(f"scp-protect-pipeline#{SID}") for d in res.denied_by), res.denied_by


@pytest.mark.node
@pytest.mark.parametrize("world", WORLDS)
def test_without_the_statement_the_failover_scps_let_the_on_call_engineer_change_them(
    results: dict[str, dict[str, Any]], world: str
) -> None:
    got = results[f"{world}-without"]
    for action, resource, _ctx in tries(world):
        assert got[f"oncall-engineer:{action}:{resource}"].allowed, (action, resource)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_failover_scp_fits_and_carries_the_pipeline_scps_scheduled_guard(example: Path) -> None:
    docs = build(load_config(example)).all()
    main = next(d.document for d in docs if d.name == "scp-protect-pipeline")
    guard = [s for s in main["Statement"] if s.get("Sid") == SID]
    pipelines = {d.name: d.document for d in docs if d.name.endswith("--scp-protect-pipeline")}
    for d in docs:
        if d.kind == "scp" and d.name.startswith("failover--"):
            assert len(json.dumps(d.document, separators=(",", ":"))) <= SCP_MAX_CHARS, d.name
    for name, doc in pipelines.items():
        assert [s for s in doc["Statement"] if s.get("Sid") == SID] == guard, name
