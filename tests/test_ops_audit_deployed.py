"""`make audit`: what runs is what was deployed (`s3tables_kit.jobs.ops.audit_deployed`), over real HTTP against the
stand-in's Lambda, EventBridge Scheduler and EMR Serverless (moto): the deploy's record (`deployed` in the stack
outputs) against the live function's code hash, the schedules' targets and inputs and the application's network
configuration; then an attacker changes each, and audit names each change."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from typing import Any

from s3tables_kit.infra import packaging
from s3tables_kit.jobs.ops import audit as au
from s3tables_kit.jobs.ops.audit_deployed import check_deployed
from s3tables_kit.jobs.ops.audit_scope import AuditReport
from s3tables_kit.topology.deployed import deployed_value
from s3tables_kit.topology.outputs import parse_outputs
from tests.ops_fixtures import SRC_REGION, OpsEnv, deploy

UNIVERSAL = "arn:aws:scheduler:::aws-sdk:emrserverless:startJobRun"
TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                                                 "Action": "sts:AssumeRole"}]}  # fmt: skip


def _zip(body: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("handler.py", body)
    return out.getvalue()


def test_audit_names_changed_code_schedule_and_application(ops_env: OpsEnv) -> None:
    world = deploy(ops_env)
    c, rec = world.clients, world.outputs.recovery
    role = c.client("iam", SRC_REGION).create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps(TRUST))
    role_arn = role["Role"]["Arn"]
    lam, src_sched = c.client("lambda", SRC_REGION), c.client("scheduler", SRC_REGION)
    package = _zip("def handler(event, context):\n    return {}\n")
    fn = lam.create_function(
        FunctionName="seed-replication-monitor", Runtime="python3.12", Role=role_arn, Handler="handler.handler",
        Code={"ZipFile": package},
    )  # fmt: skip
    assert fn["CodeSha256"] == packaging.sha256_base64(package)  # what the deploy records (Terraform's hash)
    every = {"ScheduleExpression": "rate(5 minutes)", "FlexibleTimeWindow": {"Mode": "OFF"}}
    src_sched.create_schedule(Name="seed-replication-monitor", Target={"Arn": fn["FunctionArn"], "RoleArn": role_arn},
                              **every)  # fmt: skip
    emr, rec_sched = c.client("emr-serverless", rec.region), c.client("scheduler", rec.region)
    app = emr.create_application(name="seed-recovery", releaseLabel="emr-7.12.0", type="SPARK")["applicationId"]
    request = json.dumps({"applicationId": app, "executionRoleArn": rec.role_arn, "name": "kit-rehearsal"})
    rec_sched.create_schedule_group(Name="seed-recovery-rehearsal")  # a job's schedule sits in its own group
    rehearsal = {"Name": "seed-recovery-rehearsal", "GroupName": "seed-recovery-rehearsal", **every}
    rec_sched.create_schedule(Target={"Arn": UNIVERSAL, "RoleArn": role_arn, "Input": request}, **rehearsal)

    doc: dict[str, Any] = copy.deepcopy(world.outputs_doc)
    doc["source"]["kit_source"]["deployed"] = deployed_value(
        {"seed-replication-monitor": fn["CodeSha256"]}, {"seed-replication-monitor": (fn["FunctionArn"], None)}
    )
    doc["recovery"]["kit_recovery"] |= {
        "emr_application_id": app,
        "deployed": deployed_value(
            {},
            {"seed-recovery-rehearsal": (UNIVERSAL, request)},
            {"release_label": "emr-7.12.0"},
            groups={"seed-recovery-rehearsal": "seed-recovery-rehearsal"},
        ),
    }
    outputs = parse_outputs(doc)
    clean = AuditReport()
    check_deployed(c, outputs, clean)
    assert clean.drifts == [] and clean.checked == {"functions": 1, "schedules": 2, "applications": 1}

    # the attacker: new code for the monitor, another entry point for the rehearsal, the application on their network
    lam.update_function_code(FunctionName="seed-replication-monitor", ZipFile=_zip("def handler(e, c):\n    pass\n"))
    forged = json.dumps({**json.loads(request), "jobDriver": {"sparkSubmit": {"entryPoint": "s3://elsewhere/x.py"}}})
    rec_sched.update_schedule(Target={"Arn": UNIVERSAL, "RoleArn": role_arn, "Input": forged}, **rehearsal)
    emr.stop_application(applicationId=app)
    emr.update_application(
        applicationId=app,
        networkConfiguration={"subnetIds": ["subnet-0a"], "securityGroupIds": ["sg-0a"]},
        imageConfiguration={"imageUri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/spark:mine"},
        runtimeConfiguration=[{"classification": "spark-defaults", "properties": {"spark.jars": "s3://x/e.jar"}}],
    )
    report = au.audit(c, world.cfg, outputs, show_progress=False)  # the whole audit: the check is part of it
    deployed = sorted((d.kind, d.detail.split(" (")[0]) for d in report.drifts if d.kind.startswith("deployed-"))
    assert [k for k, _ in deployed] == [
        "deployed-application-changed", "deployed-function-code-changed", "deployed-schedule-changed"
    ]  # fmt: skip
    assert deployed[2][1] == "input differs from the deployed one"
    changed = next(d.detail for d in report.drifts if d.kind == "deployed-application-changed")
    assert all(w in changed for w in ("image '111122223333.dkr", "runtime configuration", "network configuration"))

    src_sched.delete_schedule(Name="seed-replication-monitor")  # unreadable is a finding, never a pass
    gone = AuditReport()
    check_deployed(c, outputs, gone)
    assert ("deployed-unverifiable", "seed-replication-monitor") in {(d.kind, d.resource) for d in gone.drifts}
