"""`make live-verify` against the local stand-in (issue: live verification): the run end to end with the emulator as
AWS (its authorization of assumed-role requests by the deployed documents, its simulated replication delay), each
fault switch turning the matching fact to contradicted, the CreateTable switch failing the run, a crash after apply
cleaned up by `live-verify-cleanup`, leftovers reported first, and the refusal to touch what the run did not create.

The runs here deploy through the public APIs what the stacks leave behind (infra/live/world.py); the Terraform path
of the same topology is `make e2e-all`'s. Each run commits real Iceberg data with the writer subprocess (a few
seconds per commit), so the runs use one or two commits.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.live_standin import STANDIN_DELAY_S, main, prepare_standin
from s3tables_kit.infra.live.cleanup import cleanup, leftovers
from s3tables_kit.infra.live.plan import RUN_TAG, Refused, RunPlan, confirm, load_settings
from s3tables_kit.infra.live.probes import CONFIRMED, CONTRADICTED
from s3tables_kit.infra.live.report import Report
from s3tables_kit.infra.live.run import SETTINGS, execute
from s3tables_kit.infra.live.world import ALLOW_ALL, LiveTarget
from tests.failover_world import emulator_env
from tests.ops_fixtures import OpsEnv, ops_env  # noqa: F401 - the fixture

PROBED = {
    *("U1", "U2", "U5", "U6", "U8", "U9", "U10", "U11", "U18", "U20", "U22", "U25", "U26", "U27", "U29", "U30"),
    "U35",
    "U36",
    *("U32", "U33", "U34"),  # the stand-in evaluates S3 bucket policies with the caller's identity
}


@pytest.fixture
def live(ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LiveTarget, OpsEnv]]:  # noqa: F811
    emulator_env(monkeypatch)  # the in-process writer's Iceberg data files (`run`)
    target = LiveTarget(endpoint=ops_env.endpoint)
    prepare_standin(target, ops_env.control, load_settings(SETTINGS))
    yield target, ops_env
    ops_env.control.reset()  # authorization and switches off for whoever uses the emulator next


def plan_of(commits: int, run_id: str) -> RunPlan:
    return RunPlan(dataclasses.replace(load_settings(SETTINGS), commits=commits), run_id)


def run(target: LiveTarget, env: OpsEnv, plan: RunPlan, **kw: Any) -> Report:
    """The run, with the writer `make live-verify` runs as a subprocess called in-process (one Python start less per
    commit); `test_the_command_crashes_after_apply_and_cleans_up` runs the command itself."""
    from s3tables_kit.jobs.failover.writer import commit_to_every_table

    def write(bucket_arn: str) -> tuple[bool, str]:
        s3tables = target.client("s3tables", plan.settings.source_region, plan.settings.account_id)
        commit_to_every_table(s3tables, bucket_arn, target.endpoint)
        return True, ""

    return execute(target, plan, control=env.control, writer=write, **kw)


def verdicts(report: Report) -> dict[str, str]:
    return {f.id: f.verdict for f in report.facts}


def test_run_end_to_end_on_the_stand_in(live: tuple[LiveTarget, OpsEnv]) -> None:
    target, env = live
    report = run(target, env, plan_of(2, "0000e2e0"))
    assert report.error == "" and report.exit_code == 0, report.markdown()
    got = verdicts(report)
    assert {k for k, v in got.items() if v == CONFIRMED} == PROBED
    assert len(got) == 39 and all(v == "not probed" for k, v in got.items() if k not in PROBED)
    assert all(f.observed for f in report.facts if f.verdict == "not probed")  # each says why
    # U26: the source table had 3 snapshots before replication; the stand-in's backfill copies its history (reading b)
    u26 = next(f for f in report.facts if f.id == "U26")
    assert u26.observed.startswith("source 3 snapshots before replication; replica 3 after the backfill: reading b")
    assert "the stand-in" in u26.observed
    # U30: the stand-in's service commits a PutRows row through the freeze by default (reading a)
    u30 = next(f for f in report.facts if f.id == "U30")
    assert u30.observed.startswith("reading a (the Deny does not stop the commit)"), u30.observed
    # latency: commit (the metadata's last-updated-ms) -> lastSuccessfulReplicatedUpdate, at least the simulated delay
    assert len(report.latencies_s) == 2 and min(report.latencies_s) >= STANDIN_DELAY_S
    # every protected action denied to the deploy and admin roles (the replica is locked after its first deploy: the
    # deploy role replaces no policy either), each naming the denying layer from the error; break-glass allowed
    denied = [a for a in report.attacks if a.expected == "denied"]
    assert len(denied) == 10 and all(a.ok and a.layer.endswith("policy") for a in denied)
    assert {a.action for a in report.attacks if a.principal == "break-glass" and a.ok} == {
        "PutTableMaintenanceConfiguration", "PutTablePolicy", "UntagResource"
    }  # fmt: skip
    assert report.left_after_cleanup == [] and leftovers(target, plan_of(1, "0000e2e0"), any_run=True) == []
    md = report.markdown()
    assert md.index("## Facts") < md.index("## Replication latency") < md.index("## Attacks on the replica")
    # U2 ran against what multi-account and estate replicas use: the run's own KMS key and Intelligent-Tiering
    facts = {f.id: f for f in report.facts}
    assert "; the replica: aws:kms arn:aws:kms:us-west-2:" in facts["U2"].observed
    assert facts["U2"].observed.endswith(", INTELLIGENT_TIERING")
    assert "same account" in facts["U27"].expected and facts["U27"].observed == "PutTableBucketReplication accepted"
    # U32-U34 on the stand-in's S3 (bucket policies evaluated with the caller's identity); U31 says why not
    assert facts["U32"].observed == "PutObject allowed; PutObjectTagging AccessDenied"
    assert facts["U33"].observed == (
        "without the header AccessDenied; with it allowed, again PreconditionFailed; multipart allowed"
    )
    assert facts["U34"].observed == "3 days AccessDenied; 1 day allowed"
    assert facts["U31"].verdict == "not probed" and "evaluates no KMS key policy" in facts["U31"].observed
    # U37, U38 (the job liveness alarms' AWS series) run on AWS only, and say why here
    assert facts["U37"].verdict == facts["U38"].verdict == "not probed"
    assert "publishes no AWS/Scheduler datum" in facts["U37"].observed
    assert "publishes no AWS/EMRServerless datum" in facts["U38"].observed
    assert facts["U39"].verdict == "not probed" and "second account" in facts["U39"].observed
    # a stand-in run says what it is: no AWS cost or AWS duration, and the next step on AWS
    assert report.estimated_usd == 0 and "no AWS cost" in md and "make live-verify AWS=1" in md
    assert "estimated" not in md and "up to" not in md


def test_each_switch_contradicts_its_fact_without_failing_the_run(live: tuple[LiveTarget, OpsEnv]) -> None:
    target, env = live
    for name in ("replica-write-error", "managed-by-service", "disassociate-error", "putrows-commit-denied"):
        env.control.call("live/switch", {"name": name, "on": True})
    report = run(target, env, plan_of(2, "0000ab01"))
    got = verdicts(report)
    assert {k for k, v in got.items() if v == CONTRADICTED} == {"U5", "U8", "U9"}, report.markdown()
    facts = {f.id: f for f in report.facts}
    assert facts["U8"].observed == "AccessDeniedException" and "AccessDeniedException" in facts["U8"].change
    assert "ConflictException" in facts["U5"].observed and facts["U9"].change
    # U30's other reading: the freeze holds the row (the channel failing) until it is lifted; still confirmed
    assert facts["U30"].verdict == CONFIRMED and facts["U30"].observed.startswith("reading b"), facts["U30"].observed
    assert "channel failing (AccessDenied" in facts["U30"].observed
    assert report.exit_code == 0 and report.endangering() == []  # none of them endangers protection or replication


def test_a_refused_rest_endpoint_contradicts_u25_without_failing_the_run(live: tuple[LiveTarget, OpsEnv]) -> None:
    """U25 (status's first-run read) is a speed fact: `status` falls back to the S3 Tables API by itself."""
    target, env = live
    env.control.inject_faults("LoadTable", -1, "AccessDeniedException", 403, "not authorized")
    report = run(target, env, plan_of(1, "0000ab25"))
    facts = {f.id: f for f in report.facts}
    assert facts["U25"].verdict == CONTRADICTED and facts["U25"].observed.startswith("HTTP 403")
    assert "GetTableMetadataLocation and GetObject" in facts["U25"].change  # what status does instead
    assert report.exit_code == 0 and report.endangering() == [], report.markdown()


def test_createtable_switch_fails_the_run_and_says_so_first_after_earlier_leftovers(
    live: tuple[LiveTarget, OpsEnv],
) -> None:
    target, env = live
    crashed = plan_of(1, "0000c001")
    first = run(target, env, crashed, crash_after_apply=True)
    assert "crashed after apply" in first.error and first.exit_code == 1
    assert any(crashed.source_bucket in x for x in leftovers(target, crashed))

    env.control.call("live/switch", {"name": "createtable-dependents", "on": True})
    report = run(target, env, plan_of(1, "0000c002"))
    assert any(crashed.source_bucket in x for x in report.earlier_leftovers)
    assert report.exit_code == 1
    facts = {f.id: f for f in report.facts}
    assert facts["U2"].verdict == CONTRADICTED and "replication_role_createtable_dependents" in facts["U2"].change
    md = report.markdown()
    assert md.index("FAILED: the kit's protection or replication is at risk") < md.index("Leftovers of an earlier run")
    assert md.index("fact U2 contradicted") < md.index("## Facts")
    assert report.left_after_cleanup == []

    # live-verify-cleanup RUN=<id> finishes the crashed run, and is idempotent
    assert cleanup(target, crashed) == [] and cleanup(target, crashed) == []
    assert leftovers(target, crashed, any_run=True) == []


def test_tagged_bucket_switch_contradicts_replication_into_tagged_buckets(live: tuple[LiveTarget, OpsEnv]) -> None:
    target, env = live
    env.control.call("live/switch", {"name": "tagged-bucket-blocks-replication", "on": True})
    report = run(target, env, plan_of(1, "0000d001"))
    facts = {f.id: f for f in report.facts}
    assert facts["U22"].verdict == CONTRADICTED and facts["U22"].endangers == "replication"
    assert facts["U2"].verdict == "not probed" and facts["U2"].observed.startswith("undecided")
    assert report.exit_code == 1 and report.left_after_cleanup == []


def test_a_cross_account_run_where_setup_needs_the_destination_fails_on_u27(
    live: tuple[LiveTarget, OpsEnv], tmp_path: Path
) -> None:
    """The second account of the run settings: the replica bucket, its key and its roles live there; with the
    stand-in's setup switch on, the source's deploy role (denied CreateTable, CreateNamespace and
    PutTableMaintenanceConfiguration on the destination) cannot put the replication configuration back."""
    target, env = live
    settings = tmp_path / "cross.toml"
    settings.write_text(SETTINGS.read_text().replace("# second_account_id", "second_account_id"))
    plan = RunPlan(dataclasses.replace(load_settings(settings), commits=1), "0000ca01")
    assert plan.settings.cross_account and plan.replica_bucket_arn.split(":")[4] == "444455556666"
    assert plan.settings.second_account_role_arn == "arn:aws:iam::444455556666:role/OrganizationAccountAccessRole"
    prepare_standin(target, env.control, plan.settings)
    env.control.call("live/switch", {"name": "replication-setup-needs-destination", "on": True})
    report = run(target, env, plan)
    facts = {f.id: f for f in report.facts}
    assert facts["U2"].verdict == CONFIRMED, report.markdown()  # cross-account replication itself works
    # the replica account reads a source account's function only once its resource policy grants it (U39)
    assert facts["U39"].verdict == CONFIRMED, facts["U39"]
    u27 = facts["U27"]
    assert u27.verdict == CONTRADICTED and "another account" in u27.expected and u27.endangers == "replication"
    assert "s3tables:CreateNamespace" in u27.observed and 'replication_setup = "break-glass"' in u27.change
    md = report.markdown()
    assert report.exit_code == 1 and md.index("fact U27 contradicted") < md.index("## Facts")
    assert report.left_after_cleanup == [] and leftovers(target, plan, any_run=True) == []
    kms = target.client("kms", plan.settings.replica_region, "444455556666")
    assert [a for a in kms.list_aliases()["Aliases"] if a["AliasName"].startswith("alias/kitlv-")] == []


def test_the_run_acts_in_the_second_account_through_its_access_role(live: tuple[LiveTarget, OpsEnv]) -> None:
    """What `--aws` does with a second account: every client there is made with the credentials of an AssumeRole of
    `second_account_role`, signed with the run's own (here: the source account's key only)."""
    target, env = live
    second, role = "444455556666", "arn:aws:iam::444455556666:role/OrganizationAccountAccessRole"
    keys = env.control.seed_accounts(["111122223333", second])
    iam = LiveTarget(endpoint=target.endpoint, keys=keys).client("iam", "us-east-1", second)
    iam.create_role(RoleName="OrganizationAccountAccessRole", AssumeRolePolicyDocument=json.dumps({"Statement": []}))
    iam.put_role_policy(  # Organizations gives the role AdministratorAccess
        RoleName="OrganizationAccountAccessRole", PolicyName="admin", PolicyDocument=json.dumps(ALLOW_ALL)
    )
    aws_like = LiveTarget(endpoint=target.endpoint, keys={"111122223333": keys["111122223333"]})
    aws_like.account_roles = {second: role}
    who = aws_like.client("sts", "us-west-2", second).get_caller_identity()
    assert who["Account"] == second and ":assumed-role/OrganizationAccountAccessRole/" in who["Arn"]
    arn = aws_like.client("s3tables", "us-west-2", second).create_table_bucket(name="kitlv-probe")["arn"]
    assert arn.split(":")[4] == second


def test_the_settings_refuse_a_second_account_that_is_not_one(tmp_path: Path) -> None:
    for line, why in (
        ('second_account_id = "111122223333"', "must differ"),
        ('second_account_id = "4444"', "12 digits"),
    ):
        path = tmp_path / "s.toml"
        path.write_text(SETTINGS.read_text().replace('# second_account_id = "444455556666"', line))
        with pytest.raises(Refused, match=why):
            load_settings(path)
    assert load_settings(SETTINGS).second_account_role_arn is None  # same account: nothing to assume


def test_refuses_to_touch_what_the_run_did_not_create(live: tuple[LiveTarget, OpsEnv]) -> None:
    target, _ = live
    plan = plan_of(1, "0000f001")
    with pytest.raises(Refused, match="does not start with"):
        plan.require_owned("demo-dest-tablebucket", {RUN_TAG: plan.run_id})
    with pytest.raises(Refused, match="does not carry the tag"):
        plan.require_owned(plan.replica_bucket, {RUN_TAG: "someother"})
    plan.require_owned(f"arn:aws:iam::111122223333:role/{plan.name('deploy')}", {RUN_TAG: plan.run_id})

    s = plan.settings
    c = target.client("s3tables", s.replica_region, s.account_id)
    foreign = c.create_table_bucket(name="someone-elses-bucket")["arn"]
    squatter = c.create_table_bucket(name=plan.replica_bucket)["arn"]  # the run's name, not the run's tag
    with pytest.raises(Refused, match="does not carry the tag"):
        cleanup(target, plan)
    names = {b["arn"] for b in c.list_table_buckets()["tableBuckets"]}
    assert {foreign, squatter} <= names  # nothing deleted


def test_nothing_is_created_without_confirmation(capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_of(3, "0000aa01")
    assert confirm(plan, yes=False, ask=lambda _prompt: "no") is False
    assert confirm(plan, yes=False, ask=lambda _prompt: plan.run_id) is True
    out = capsys.readouterr().out
    for needle in (plan.source_bucket, plan.replica_bucket, "us-west-2", "estimated cost", "estimated time"):
        assert needle in out
    local = plan.describe(local=True)
    assert "cost: none" in local and "estimated" not in local and "make live-verify AWS=1" in local


def test_the_command_crashes_after_apply_and_cleans_up(live: tuple[LiveTarget, OpsEnv], tmp_path: Path) -> None:
    """`python -m harness.live_standin` (what `make live-verify` runs without AWS=1) interrupted after apply, then
    `make live-verify-cleanup RUN=<id>` (twice: idempotent) leaves the emulator empty of the run's resources."""
    target, env = live
    common = ["--endpoint", env.endpoint, "--out", str(tmp_path)]
    assert main([*common, "--yes", "--run", "0000c0de", "--crash-after-apply"]) == 1
    report = json.loads((tmp_path / "live-verify-0000c0de.json").read_text())
    assert report["error"].startswith("crashed after apply") and report["left_after_cleanup"] == []
    plan = plan_of(1, "0000c0de")
    left = leftovers(target, plan)
    assert any(plan.source_bucket in x for x in left) and any(plan.name("break-glass") in x for x in left)
    assert any(x.startswith("scp:") for x in left)
    assert main(["cleanup", *common, "--run", "0000c0de"]) == 0
    assert main(["cleanup", *common, "--run", "0000c0de"]) == 0
    assert leftovers(target, plan, any_run=True) == []
    s = plan.settings
    for region in (s.source_region, s.replica_region):
        assert target.client("s3tables", region, s.account_id).list_table_buckets()["tableBuckets"] == []
    iam = target.client("iam", "us-east-1", s.account_id)
    assert [r for r in iam.list_roles()["Roles"] if r["RoleName"].startswith("kitlv-")] == []
    assert [p for p in iam.list_policies(Scope="Local")["Policies"] if p["PolicyName"].startswith("kitlv-")] == []


def test_the_job_metric_facts_are_judged_on_what_aws_would_answer() -> None:
    """U37/U38's verdicts (`infra/live/detection_facts.py`): a start that is attempted but never counted as dropped
    endangers protection (a period would pass), and so does a FailedJobs series under another dimension set."""
    from s3tables_kit.infra.live.detection_facts import judge_job_dimensions, judge_schedule_counts
    from s3tables_kit.infra.live.probes import blank_facts

    facts = blank_facts()
    assert judge_schedule_counts(facts["U37"], 1, 1, "-").verdict == CONFIRMED
    unseen = judge_schedule_counts(facts["U37"], 1, 0, "-")
    assert unseen.verdict == CONTRADICTED and unseen.endangers == "protection"
    assert judge_schedule_counts(facts["U37"], 0, 0, "-").endangers == ""  # a false alarm, never a silenced one
    kit = {"ApplicationId": "a1", "ApplicationName": "k-recovery"}
    assert judge_job_dimensions(facts["U38"], kit, [kit, {"ApplicationId": "a1"}], 1, "-").verdict == CONFIRMED
    other = judge_job_dimensions(facts["U38"], kit, [kit | {"JobName": "r"}], 0, "-")
    assert other.verdict == CONTRADICTED and '"JobName": "r"' in other.observed
