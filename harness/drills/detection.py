"""Detection drill (`make drill-detection`): each way an administrator of a source, replica or vault account could
blind or fool the kit's detection, run against the sandbox (`harness.sandbox`: the example deployed into the local
stand-in, real Iceberg tables), and which alarm or finding caught it after how many runs.

    python -m harness.drills.detection [--out detection-out]

The alarms are the synthesized stacks' own definitions (`harness.drills.alarms`), evaluated over the drill's runs,
one run of every scheduled function (the source monitor, the replica account's freshness check) standing for one
period; the functions run their deployed handler with their stack's environment, played by the harness as Lambda,
which alone records `AWS/Lambda` `Invocations` and `Errors`. Between runs the source tables take a commit and the
replication service runs. The freshness budget is one second (the stack's is the monitor's max lag) so that a frozen
table is stale within the drill.

  0. baseline: two runs with nothing attacked; every alarm must stay OK (a drill whose alarms always fire proves
     nothing);
  then each technique, with two runs after it, or one run of the tools whose findings catch it (`audit`, the
  rehearsal's `--as-of` plan, `recover --from-vault --list-points`, at the end of this module); a technique
  is caught when every signal expected to catch it fired, missed when none did (exit 1 for a miss, a partial catch
  or a noisy baseline).

The Deny table policy is put on the table as the attacker would put it, and the stand-in does the rest as AWS
would: its replication service reads the source as the replication role and fails on that table (FAILED, held),
and the scheduled functions run as their execution roles (a session of each), whose reads of that table the
stand-in refuses. The vault techniques write into the deployed vault through each door an attacker of the vault's
account has (`harness.drills.forgery`); its bucket policy is evaluated with each writer's identity.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from emulator.control import Control
from harness.deploy import FAKE_KEY, client
from harness.drills import forgery
from harness.drills.alarms import (
    AlarmRule,
    LambdaPlayer,
    Metrics,
    Stacks,
    Window,
    alarm_rules,
    environ,
    math_alarms,
    scheduled_functions,
)
from s3tables_kit.topology.config import KitConfig
from s3tables_kit.topology.outputs import OUTPUT_RECOVERY

Finding = tuple[str, str]  # (the kind a technique expects, what it says)
Check = Callable[[], set[Finding]]
BUDGET_S = 1.0  # the freshness check's budget in the drill (module docstring)
RUNS = 2  # the acceptance: caught within two runs of the monitor or the check


@dataclass
class World:
    """The deployed example in the running stand-in the drill attacks."""

    endpoint: str
    cfg: KitConfig
    outputs_doc: dict[str, Any]
    stacks: Stacks
    doors: forgery.Vault | None = None  # the vault techniques' writers (`vault_doors`)

    @property
    def control(self) -> Control:
        return Control(self.endpoint)

    _clients: dict[tuple[str, str], Any] = field(default_factory=dict)

    def client(self, service: str, region: str) -> Any:
        if (service, region) not in self._clients:
            self._clients[service, region] = client(self.endpoint, service, region)
        return self._clients[service, region]

    def env(self) -> dict[str, str]:
        """What a process needs to reach the stand-in."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": FAKE_KEY,
            "AWS_SECRET_ACCESS_KEY": FAKE_KEY,
            "AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
        }

    def source_tables(self) -> dict[str, tuple[str, str]]:
        """Every source table: "namespace.name" -> (source bucket ARN, table ARN)."""
        out = {}
        for src in self.cfg.sources:
            s3t = self.client("s3tables", src.region)
            for t in s3t.list_tables(tableBucketARN=src.bucket_arn)["tables"]:
                out[f"{t['namespace'][0]}.{t['name']}"] = (src.bucket_arn, t["tableARN"])
        return out


# A table's first metadata when the world's tables have none yet (a writer's schema of one column).
_EMPTY_TABLE = {
    "schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False,
                                                               "type": "long"}]}],
    "current-schema-id": 0, "last-column-id": 1, "partition-specs": [{"spec-id": 0, "fields": []}],
    "default-spec-id": 0, "last-partition-id": 999, "sort-orders": [{"order-id": 0, "fields": []}],
    "default-sort-order-id": 0, "last-sequence-number": 0, "properties": {},
}  # fmt: skip


def commit(world: World, bucket_arn: str, qualified: str, at_ms: int | None = None) -> str:
    """A writer's commit to a source table: a new metadata file whose new snapshot (the current one's files again)
    is dated `at_ms` (the writer chooses it; default now), through UpdateTableMetadataLocation; its location."""
    region = bucket_arn.split(":")[3]
    ns, name = qualified.split(".")
    s3t, s3 = world.client("s3tables", region), world.client("s3", region)
    loc = s3t.get_table_metadata_location(tableBucketARN=bucket_arn, namespace=ns, name=name)
    now_ms = int(time.time() * 1000)
    at = now_ms if at_ms is None else at_ms
    doc: dict[str, Any] = {"format-version": 2, "table-uuid": str(uuid.uuid4()), "snapshots": [], **_EMPTY_TABLE}
    doc["location"] = loc["warehouseLocation"]
    if loc.get("metadataLocation"):
        bucket, key = loc["metadataLocation"].removeprefix("s3://").split("/", 1)
        doc = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        previous = {"timestamp-ms": doc["last-updated-ms"], "metadata-file": loc["metadataLocation"]}
        doc["metadata-log"] = [*doc.get("metadata-log", []), previous]
    current: dict[str, Any] = next(
        (s for s in doc["snapshots"] if s["snapshot-id"] == doc.get("current-snapshot-id")), {}
    )
    snap = {**current, "snapshot-id": uuid.uuid4().int % (1 << 62), "timestamp-ms": at}
    if current:
        snap["parent-snapshot-id"] = current["snapshot-id"]
    doc["snapshots"] = [*doc["snapshots"], snap]
    doc["snapshot-log"] = [*doc.get("snapshot-log", []), {"snapshot-id": snap["snapshot-id"], "timestamp-ms": at}]
    doc |= {"current-snapshot-id": snap["snapshot-id"], "last-updated-ms": max(now_ms, doc.get("last-updated-ms", 0))}
    bucket = loc["warehouseLocation"].removeprefix("s3://").rstrip("/")
    key = f"metadata/{uuid.uuid4()}.metadata.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc).encode())
    new = f"s3://{bucket}/{key}"
    s3t.update_table_metadata_location(tableBucketARN=bucket_arn, namespace=ns, name=name,
                                       versionToken=loc["versionToken"], metadataLocation=new)  # fmt: skip
    return new


@dataclass
class Drill:
    """The world, its alarms, the Lambda player and the runs made so far."""

    world: World
    rules: Sequence[AlarmRule]
    player: LambdaPlayer
    metrics: Metrics
    say: Callable[[str], None] = print
    checks: dict[str, Check] = field(default_factory=dict)  # the one-shot tools the techniques' findings come from

    def traffic(self) -> None:
        """The writers commit to every source table and the replication service runs (held tables stay held)."""
        for qualified, (bucket, _) in sorted(self.world.source_tables().items()):
            commit(self.world, bucket, qualified)
        for src in self.world.cfg.sources:
            self.world.control.replicate(source_bucket_arn=src.bucket_arn)

    def interval(self) -> Window:
        """One period: traffic, the budget elapses, then every scheduled function runs once."""
        self.traffic()
        time.sleep(BUDGET_S + 0.2)
        start = datetime.now(UTC)
        outcomes = self.player.run()
        end = datetime.now(UTC)
        self.say("    run: " + "; ".join(f"{k} {v}" for k, v in outcomes.items()))
        time.sleep(0.05)  # the next period's data is strictly later
        return start, end

    def fired(self, windows: Sequence[Window]) -> dict[str, int]:
        """Alarm name -> the first run after which it is in ALARM (alarms that never fired are left out)."""
        out: dict[str, int] = {}
        values: dict[str, list[float | None]] = {r.name: [] for r in self.rules}
        for i, window in enumerate(windows, 1):
            for r in self.rules:
                values[r.name].append(self.metrics.value(r, window))
                if r.name not in out and r.fires(values[r.name]):
                    out[r.name] = i
        return out


@dataclass(frozen=True)
class Technique:
    key: str
    title: str
    attack: Callable[[Drill], None]
    expect: tuple[str, ...]  # the alarms (or the findings of `check`) that must catch it
    checks: tuple[str, ...] = ()  # tools of `Drill.checks` run once after the attack, instead of the functions' runs
    decoy: AlarmRule | None = None  # an alarm the forgery must hold OK (else the attack did not take)


@dataclass
class Outcome:
    technique: Technique
    caught: dict[str, int] = field(default_factory=dict)  # signal -> runs until it fired
    missing: list[str] = field(default_factory=list)  # expected signals that did not fire
    decoy_fired: bool = False

    @property
    def verdict(self) -> str:
        if self.decoy_fired:
            return "NOT RUN"  # the forgery did not take: the technique proved nothing
        if not self.caught:
            return "MISSED"
        return "PARTIAL" if self.missing else "CAUGHT"


def _frozen_table(drill: Drill) -> tuple[str, str, str]:
    """The table the attacker blinds: the first source table of several (name, bucket ARN, table ARN)."""
    tables = drill.world.source_tables()
    name = sorted(tables)[0]
    return name, *tables[name]


def deny_table_policy(drill: Drill) -> None:
    """(a) A Deny table policy on one source table naming the replication role and the monitor."""
    w = drill.world
    name, bucket, _ = _frozen_table(drill)
    src = next(s for s in w.cfg.sources if s.bucket_arn == bucket)
    account = src.account_id
    principals = [w.cfg.replication_role_arn_of(src), f"arn:aws:iam::{account}:role/{_monitor(drill)}"]
    policy = {"Version": "2012-10-17", "Statement": [{"Sid": "Blind", "Effect": "Deny", "Action": "s3tables:*",
              "Principal": {"AWS": principals}, "Resource": "*"}]}  # fmt: skip
    ns, tname = name.split(".")
    w.client("s3tables", src.region).put_table_policy(
        tableBucketARN=bucket, namespace=ns, name=tname, resourcePolicy=json.dumps(policy)
    )


def forge_heartbeat(drill: Drill) -> None:
    """(b) The monitor's heartbeat forged before every run, by an EMF log event in a log group of the attacker's and
    by PutMetricData (an `AWS/Lambda` datum cannot be forged: PutMetricData refuses a namespace beginning `AWS/`)."""
    from s3tables_kit.topology.contract import HEARTBEAT, METRIC_NAMESPACE

    w, kit = drill.world, drill.world.cfg.kit.name
    region = w.cfg.sources[0].region
    logs, cw = w.client("logs", region), w.client("cloudwatch", region)
    group = "/attacker/any-group"
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName="s")
    original = drill.traffic

    def traffic_and_forgery() -> None:
        original()
        now_ms = int(time.time() * 1000) + 1300  # lands in the coming run's period
        directive = {"Namespace": METRIC_NAMESPACE, "Dimensions": [["Kit"]], "Metrics": [{"Name": HEARTBEAT}]}
        emf = {"_aws": {"Timestamp": now_ms, "CloudWatchMetrics": [directive]}, "Kit": kit, HEARTBEAT: 1}
        event = {"timestamp": now_ms, "message": json.dumps(emf)}
        logs.put_log_events(logGroupName=group, logStreamName="s", logEvents=[event])
        at = datetime.fromtimestamp(now_ms / 1000, UTC)
        datum = {"MetricName": HEARTBEAT, "Value": 1, "Dimensions": [{"Name": "Kit", "Value": kit}], "Timestamp": at}
        cw.put_metric_data(Namespace=METRIC_NAMESPACE, MetricData=[datum])

    drill.traffic = traffic_and_forgery  # type: ignore[method-assign]


def silence_monitor(drill: Drill) -> None:
    """(b) The monitor's schedule disabled while its heartbeat is forged (forgery in place since b2)."""
    drill.player.disabled.add(_monitor(drill))


def _monitor(drill: Drill) -> str:
    return f"{drill.world.cfg.kit.name}-replication-monitor"


def heartbeat_alarm(kit: str, region: str) -> AlarmRule:
    """The monitor's liveness alarm as it read the kit's heartbeat before (Sum < 1 in two runs, missing data
    breaching): held OK by the forgery, which shows the forgery took."""
    from s3tables_kit.topology.contract import HEARTBEAT, METRIC_NAMESPACE

    return AlarmRule(f"{kit}-heartbeat (the former liveness alarm)", region, METRIC_NAMESPACE, HEARTBEAT,
                     (("Kit", kit),), 300, "Sum", 1, "LessThanThreshold", 2, 2, "breaching")  # fmt: skip


def techniques(kit: str, replica_buckets: Sequence[str], region: str) -> list[Technique]:
    """The techniques in the order the drill runs them (later ones keep earlier attacks in place)."""
    mon, fresh = f"{kit}-replication-monitor", f"{kit}-freshness"
    stale = tuple(f"{fresh}-replica-stale-{b}" for b in replica_buckets)
    return [
        Technique(
            "g",
            "the EMR Serverless application's configuration changed (another image)",
            change_application,
            ("deployed-application-changed", "application-not-as-deployed"),
            checks=("audit", "preflight"),
        ),
        Technique(
            "c",
            "a writer's commit dated two days ahead, replicated",
            future_dated_commit,
            ("snapshot-time-untrusted",),
            checks=("audit",),
        ),
        Technique(
            "d",
            "a backdated commit appended last, before an --as-of rehearsal",
            backdated_commit,
            ("snapshot-time-untrusted", "as-of-refused"),
            checks=("audit", "as-of"),
        ),
        Technique(
            "e",
            "a forged vault point dated a month ahead (no MAC of the point key), tried through every door",
            forged_point,
            ("vault-write-refused", "point-refused"),
            checks=("vault-writes", "points"),
        ),
        Technique(
            "f",
            "a malformed object under the table's points/, tried through every door",
            malformed_point,
            ("vault-write-refused", "point-refused"),
            checks=("vault-writes", "points"),
        ),
        Technique(
            "a",
            "Deny table policy on one source table of several (replication role and monitor)",
            deny_table_policy,
            (f"{mon}-failing", f"{kit}-replication-status-unreadable", *stale),
        ),
        Technique(
            "b",
            "heartbeat forged by EMF and PutMetricData while the monitor is blinded (the Deny kept)",
            forge_heartbeat,
            (f"{mon}-failing",),
        ),
        Technique(
            "b'",
            "the monitor stopped too (its schedule disabled), the heartbeat still forged",
            silence_monitor,
            (f"{mon}-not-reporting",),
            decoy=heartbeat_alarm(kit, region),
        ),
    ]


def change_application(drill: Drill) -> None:
    """(g) The recovery application's image replaced (an administrator of the recovery account)."""
    rec = drill.world.outputs_doc["recovery"][OUTPUT_RECOVERY]
    emr = drill.world.client("emr-serverless", rec["region"])
    emr.stop_application(applicationId=rec["emr_application_id"])
    emr.update_application(
        applicationId=rec["emr_application_id"],
        imageConfiguration={"imageUri": "444455556666.dkr.ecr.us-west-2.amazonaws.com/spark:mine"},
    )


@dataclass
class Runs:
    """What the drill ran: the baseline's periods and tools' findings, and per technique its periods (or the new
    findings of its tool)."""

    baseline: list[Window]
    findings_before: dict[str, set[Finding]]
    techniques: list[tuple[Technique, list[Window], set[Finding]]] = field(default_factory=list)


def run(drill: Drill, chosen: Sequence[Technique]) -> Runs:
    """The baseline, then each technique with its runs (or its audit)."""
    drill.say("== 0. baseline: two runs, nothing attacked")
    windows = [drill.interval() for _ in range(RUNS)]
    runs = Runs(windows, {c: drill.checks[c]() for c in sorted({c for t in chosen for c in t.checks})})
    seen = {c: set(f) for c, f in runs.findings_before.items()}
    for t in chosen:
        drill.say(f"== {t.key}. {t.title}")
        t.attack(drill)
        if t.checks:
            found: set[Finding] = set()
            for c in t.checks:
                new = drill.checks[c]() - seen[c]
                seen[c] |= new  # a later technique is judged by its own findings only
                found |= new
            runs.techniques.append((t, [], found))
        else:
            runs.techniques.append((t, [drill.interval() for _ in range(RUNS)], set()))
    return runs


def judge(drill: Drill, runs: Runs, rules: Sequence[AlarmRule]) -> tuple[list[str], list[Outcome]]:
    """The runs read through `rules`: (what the baseline raised, each technique's outcome)."""
    judged = replace(drill, rules=rules)
    noisy = sorted(judged.fired(runs.baseline))
    expected = {(c, k) for t, _, _ in runs.techniques for c in t.checks for k in t.expect}
    noisy += sorted({f"{k} ({c})" for c, got in runs.findings_before.items() for k, _ in got if (c, k) in expected})
    outcomes = []
    for t, windows, found in runs.techniques:
        out = Outcome(t, {k: 1 for k, _ in found} if t.checks else judged.fired(windows))
        if t.decoy is not None:
            out.decoy_fired = replace(drill, rules=[t.decoy]).fired(windows) != {}
        out.missing = [e for e in t.expect if e not in out.caught]
        outcomes.append(out)
    return noisy, outcomes


def report(noisy: Sequence[str], outcomes: Sequence[Outcome]) -> tuple[str, bool]:
    lines = ["", "technique | verdict | caught by (after runs)"]
    if noisy:
        lines.append(f"baseline | NOISY | {', '.join(noisy)} fired with nothing attacked")
    for o in outcomes:
        unit = f"{' and '.join(o.technique.checks)} run" if o.technique.checks else "run"
        by = ", ".join(f"{k} ({n} {unit}{'s' * (n > 1)})" for k, n in sorted(o.caught.items(), key=lambda x: x[1]))
        miss = f"; NOT fired: {', '.join(o.missing)}" if o.missing else ""
        if o.technique.decoy is not None:
            held = "ALARM (the forgery did not take)" if o.decoy_fired else "held OK by the forgery"
            miss += f"; {o.technique.decoy.name}: {held}"
        lines.append(f"{o.technique.key} {o.technique.title} | {o.verdict} | {by or '-'}{miss}")
    ok = not noisy and all(o.verdict == "CAUGHT" for o in outcomes)
    return "\n".join(lines), ok


def prepare(world: World, rules: Sequence[AlarmRule] | None = None, say: Callable[[str], None] = print) -> Drill:
    """The drill on `world`: its stacks' alarms (or `rules`), the recovery application deployed as its stack records
    it, and the Lambda player of its scheduled functions."""
    from s3tables_kit.jobs.ops import monitor
    from s3tables_kit.topology.contract import ENV_MAX_LAG, ENV_MODE, ENV_PEERS, MODE_FRESHNESS

    cw_rules = list(alarm_rules(world.stacks) if rules is None else rules)
    fns = scheduled_functions(world.stacks)
    played = {f.name for f in fns}
    periods = {r.period for r in cw_rules if dict(r.dimensions).get("FunctionName") in played}
    skipped = sorted([r.name for r in cw_rules if r.period not in periods] + math_alarms(world.stacks))
    if skipped:
        say(f"drill-detection: not evaluated (the period of a job the drill does not run): {', '.join(skipped)}")
    cw_rules = [r for r in cw_rules if r.period in periods]
    metrics = Metrics(lambda r: world.client("cloudwatch", r), lambda r: world.client("logs", r))
    overrides = {f.name: {ENV_MAX_LAG: str(BUDGET_S)} for f in fns if f.env.get(ENV_MODE) == MODE_FRESHNESS}
    # The functions run from the checkout, which holds no package record (`kit_declared.json`) and deploys no Lambda
    # function: the monitor's record of the checks would only find them missing. What runs is what was deployed is
    # proven on the stand-in by tests/test_running_deployed.py and tests/test_running_crosscheck.py.
    for f in fns:
        if ENV_PEERS in f.env:
            overrides.setdefault(f.name, {})[ENV_PEERS] = ""
    player = LambdaPlayer(fns, metrics, monitor.handler, world.env(), overrides, session=_role_session(world))
    _deploy_application(world)
    checks: dict[str, Check] = {
        "audit": lambda: _audit_findings(world),
        "as-of": lambda: as_of_findings(world),
        "preflight": lambda: preflight_findings(world),
        "points": lambda: point_findings(world),
        "vault-writes": lambda: vault_doors(world).findings(),
    }
    return Drill(world, cw_rules, player, metrics, say, checks=checks)


def _role_session(world: World) -> Callable[[str], dict[str, str]]:
    """A function's execution role as Lambda gives it: the environment of an `sts:AssumeRole` session of the role
    (one per role), so that the stand-in evaluates the resource policies with the function's identity."""
    made: dict[str, dict[str, str]] = {}

    def session(role_arn: str) -> dict[str, str]:
        if role_arn not in made:
            sts = world.client("sts", world.cfg.sources[0].region)
            c = sts.assume_role(RoleArn=role_arn, RoleSessionName="lambda")["Credentials"]
            made[role_arn] = {"AWS_ACCESS_KEY_ID": c["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
                              "AWS_SESSION_TOKEN": c["SessionToken"]}  # fmt: skip
        return made[role_arn]

    return session


def _deploy_application(world: World) -> None:
    """The recovery stack's EMR Serverless application created as synthesized, and the record the deploy keeps of
    it (`deployed` in its output), into the world's outputs."""
    stack = world.stacks["recovery"]
    app = next(iter(stack["resource"]["aws_emrserverless_application"].values()))
    rec = world.outputs_doc["recovery"][OUTPUT_RECOVERY]
    emr = world.client("emr-serverless", rec["region"])
    created = emr.create_application(name=app["name"], releaseLabel=app["release_label"], type=app["type"].upper())
    recorded = stack["output"][OUTPUT_RECOVERY]["value"]["deployed"]["application"]
    rec |= {"emr_application_id": created["applicationId"], "deployed": {"application": recorded}}


def _audit_findings(world: World) -> set[Finding]:
    """`audit`'s findings on the world (as `make audit` runs it): (kind, resource and detail)."""
    from s3tables_kit.jobs.kernel.clients import Clients
    from s3tables_kit.jobs.ops.audit import audit
    from s3tables_kit.topology.outputs import parse_outputs

    with environ(world.env()):
        got = audit(Clients(endpoint_url=world.endpoint), world.cfg, parse_outputs(world.outputs_doc),
                    show_progress=False)  # fmt: skip
    return {(d.kind, f"{d.resource}: {d.detail}") for d in got.drifts}


def drill(world: World, say: Callable[[str], None] = print) -> tuple[Drill, Runs]:
    """Every technique against `world` (its stacks' alarms judge the runs: `judge`)."""
    d = prepare(world, None, say)
    chosen = techniques(world.cfg.kit.name, [r.bucket for r in world.cfg.replicas], world.cfg.sources[0].region)
    return d, run(d, chosen)


def verdict(d: Drill, runs: Runs, rules: Sequence[AlarmRule] | None = None) -> int:
    """The drill's report through `rules` (default: the stacks' alarms); 0 when every technique was caught and the
    baseline was quiet."""
    text, ok = report(*judge(d, runs, d.rules if rules is None else rules))
    d.say(text)
    d.say(
        f"\ndrill-detection: {'every technique caught' if ok else 'FAILED (a technique missed, or a noisy baseline)'}"
    )
    return 0 if ok else 1


def load_stacks(synth: Path) -> dict[str, Any]:
    return {d.name: json.loads((d / "cdk.tf.json").read_text()) for d in sorted((synth / "stacks").iterdir())}


def main(argv: Sequence[str] | None = None) -> int:
    from harness.drills.seed import SEED, drill_doc, write_config
    from harness.sandbox import start
    from s3tables_kit.infra.golden import synth_example

    ap = argparse.ArgumentParser(prog="python -m harness.drills.detection", description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", default="detection-out", help="where the sandbox and the synthesized stacks go")
    ap.add_argument("--synth", help="a synth of the drill's configuration to reuse (DIR/stacks/*/cdk.tf.json)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    config = write_config(drill_doc(SEED), out / "kit.toml")
    if args.synth:
        stacks = load_stacks(Path(args.synth))
    else:
        print(f"drill-detection: synthesizing {config.name} (the alarms and functions as deployed)", flush=True)
        stacks = synth_example(config, out / "synth")
    sandbox = start(config, out / "sandbox", port=None, say=print)
    try:
        outputs = json.loads(sandbox.outputs.read_text())
        os.environ.update(sandbox.env())
        return verdict(*drill(World(sandbox.endpoint, sandbox.cfg, outputs, stacks)))
    finally:
        sandbox.stop()


if __name__ == "__main__":
    sys.exit(main())


# ---- the techniques on writer-chosen times and vault points: a commit dated in the future, a backdated commit before
# an `--as-of` rehearsal, a forged vault point and a malformed one, and the tools whose findings catch them ----

DAY_MS = 86_400_000
FUTURE_TABLE, BACKDATED_TABLE = "analytics.orders", "analytics.customers"


def _commit_dated(drill: Drill, qualified: str, offset_ms: int) -> None:
    bucket, _ = drill.world.source_tables()[qualified]
    commit(drill.world, bucket, qualified, int(time.time() * 1000) + offset_ms)
    for src in drill.world.cfg.sources:
        drill.world.control.replicate(source_bucket_arn=src.bucket_arn)


def future_dated_commit(drill: Drill) -> None:
    """(c) A writer's commit whose snapshot is dated two days ahead, replicated."""
    _commit_dated(drill, FUTURE_TABLE, 2 * DAY_MS)


def backdated_commit(drill: Drill) -> None:
    """(d) A writer's commit dated a day back appended last, replicated: by log order, "the state as of" every later
    instant."""
    _commit_dated(drill, BACKDATED_TABLE, -DAY_MS)


def preflight_findings(world: World) -> set[Finding]:
    """The rehearsal's check of its application, run with the arguments its synthesized schedule passes (the
    application id as Terraform resolves it): each line it refuses the run with is a finding (the job run would end
    FAILED, which its AWS/EMRServerless liveness alarm reads; the drill runs no job)."""
    from s3tables_kit.jobs.kernel import preflight
    from s3tables_kit.jobs.rehearse import parser

    rec = world.outputs_doc["recovery"][OUTPUT_RECOVERY]
    schedules = world.stacks["recovery"]["resource"]["aws_scheduler_schedule"].values()
    request = json.loads(next(s for s in schedules if s["name"].endswith("-recovery-rehearsal"))["target"]["input"])
    ns = parser().parse_args(request["jobDriver"]["sparkSubmit"]["entryPointArguments"])
    ns.application_id = rec["emr_application_id"]  # the synthesized argument is the application's id attribute
    emr = world.client("emr-serverless", rec["region"])
    err = io.StringIO()
    preflight.refused(ns, lambda: emr, err)
    return {(preflight.FINDING, line) for line in err.getvalue().splitlines()}


def as_of_findings(world: World, table: str = BACKDATED_TABLE) -> set[Finding]:
    """`recover --dry-run --as-of <now>` of `table` (the rehearsal's plan): a refusal is the finding."""
    from s3tables_kit.jobs.recover.cli import main as recover

    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    with tempfile.TemporaryDirectory() as tmp:
        outputs = Path(tmp) / "outputs.json"
        outputs.write_text(json.dumps(world.outputs_doc))
        args = ["--outputs", str(outputs), "--endpoint-url", world.endpoint, "--table", table,
                "--as-of", now, "--dry-run"]  # fmt: skip
        err = io.StringIO()
        with environ(world.env()), contextlib.redirect_stdout(err), contextlib.redirect_stderr(err):
            code = recover(args)
    said = err.getvalue().strip().splitlines()
    refused = [line for line in said if "refused" in line]
    return {("as-of-refused", refused[0])} if code != 0 and refused else set()


def _vault(world: World) -> tuple[str, str, str]:
    """(bucket, Region, point key ARN) of the deployed vault the techniques write to."""
    from s3tables_kit.topology.backup import VAULT_STACK_ID
    from s3tables_kit.topology.outputs import OUTPUT_VAULT

    v = world.outputs_doc[VAULT_STACK_ID][OUTPUT_VAULT]
    return v["bucket_name"], v["region"], v["point_key_arn"]


def vault_doors(world: World) -> forgery.Vault:
    """The drill's writers into the deployed vault (`harness.drills.forgery`), made once per world."""
    if world.doors is None:
        bucket, region, _ = _vault(world)
        world.doors = forgery.Vault(world.endpoint, world.cfg, bucket, region)
    return world.doors


def _point_prefix(world: World) -> str:
    from s3tables_kit.jobs.vault.layout import table_prefix

    ns, name = FUTURE_TABLE.split(".")
    rep = world.cfg.recovery_replica
    table = world.client("s3tables", rep.region).get_table(tableBucketARN=rep.bucket_arn, namespace=ns, name=name)
    return table_prefix(ns, name, table["tableARN"].rsplit("/", 1)[-1])


def forged_point(drill: Drill) -> None:
    """(e) A point object the backup role did not write, dated far ahead so that it would be "latest" for every
    restore: well formed, with a MAC the attacker made up (it holds no GenerateMac on the point key)."""
    from s3tables_kit.jobs.vault.layout import BackupFile, BackupPoint

    prefix, sid = _point_prefix(drill.world), 777
    ns, name = FUTURE_TABLE.split(".")
    ahead = int(time.time() * 1000) + 30 * DAY_MS
    meta, restorable = "metadata/forged.metadata.json", f"restorable/{sid}/run/metadata/forged.metadata.json"
    files = (BackupFile(meta, "metadata", 10, 1, "v"), BackupFile(restorable, "restorable", 10, 1, "v"))
    point = BackupPoint(ns, name, prefix.rstrip("/").rsplit("/", 1)[-1], sid, ahead, meta, restorable,
                        "s3://elsewhere", "attacker", datetime.now(UTC).isoformat(), files, mac="Zm9yZ2Vk")  # fmt: skip
    vault_doors(drill.world).forge(point.key, point.to_json().encode())


def malformed_point(drill: Drill) -> None:
    """(f) An object under the table's `points/` that is no point at all (once, it made every restore fail)."""
    key = f"{_point_prefix(drill.world)}points/666.json"
    vault_doors(drill.world).forge(key, b"{not a point")


def point_findings(world: World) -> set[Finding]:
    """`recover --from-vault --list-points` of the table (what a restore and the vault rehearsal read first): each
    refused point is a finding, and the listing must not fail."""
    from s3tables_kit.jobs.vault.mac import PointKey
    from s3tables_kit.jobs.vault.reader import VaultReader, list_points

    bucket, region, key = _vault(world)
    ns, name = FUTURE_TABLE.split(".")
    with environ(world.env()):
        reader = VaultReader(f"s3://{bucket}", region, world.endpoint, point_key=PointKey(key, region, world.endpoint))
        scan = list_points(reader, ns, name)
    return {("point-refused", r.line()) for r in scan.refused}
