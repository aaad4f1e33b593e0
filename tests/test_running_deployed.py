"""What runs is what was deployed, at every run of the monitor and the freshness check (`jobs/ops/running.py`), over
real HTTP against the stand-in's Lambda and EventBridge Scheduler (moto): the deploy's record in the package's
`kit_declared.json` against the hardener's code and configuration and the account's schedules. Undisturbed, the run
passes and publishes `DeployedChanged` 0; a changed function (code or environment) or a retargeted schedule makes it
publish the count, print one finding per change and raise (the function's AWS/Lambda `Errors`: its `-failing` alarm)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra import packaging
from s3tables_kit.jobs.ops import running
from s3tables_kit.topology import contract
from s3tables_kit.topology.deployed import DeployedOut, deployed_value
from tests.ops_fixtures import SRC_REGION, OpsEnv

TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                                                 "Action": "sts:AssumeRole"}]}  # fmt: skip
HARDENER, MONITOR = "seed-replica-hardener", "seed-replication-monitor"


def _zip(body: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("handler.py", body)
    return out.getvalue()


def test_a_changed_function_or_schedule_fails_the_run_with_the_finding(
    ops_env: OpsEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = ops_env.clients()
    role = c.client("iam", SRC_REGION).create_role(RoleName="hardener", AssumeRolePolicyDocument=json.dumps(TRUST))
    role_arn = role["Role"]["Arn"]
    lam, scheduler = c.client("lambda", SRC_REGION), c.client("scheduler", SRC_REGION)
    env = {"AWS_DATA_PATH": "/var/task/botocore_data"}
    fn = lam.create_function(
        FunctionName=HARDENER, Runtime="python3.12", Role=role_arn, Handler="handler.handler",
        Code={"ZipFile": _zip("def handler(event, context):\n    return {}\n")}, Environment={"Variables": env},
    )  # fmt: skip
    every = {"ScheduleExpression": "rate(5 minutes)", "FlexibleTimeWindow": {"Mode": "OFF"}}
    for name, arn in ((HARDENER, fn["FunctionArn"]), (MONITOR, fn["FunctionArn"].replace(HARDENER, MONITOR))):
        scheduler.create_schedule(Name=name, Target={"Arn": arn, "RoleArn": role_arn}, **every)
    record = deployed_value(
        {HARDENER: fn["CodeSha256"]},
        {HARDENER: (fn["FunctionArn"], None), MONITOR: (fn["FunctionArn"].replace(HARDENER, MONITOR), None)},
    ) | {"configurations": {HARDENER: {"handler": "handler.handler", "role": role_arn, "environment": env}}}
    DeployedOut.model_validate(record)  # the record is the outputs' model
    declared = tmp_path / contract.DECLARED_FILE
    declared.write_bytes(packaging.declared_bytes({contract.DECLARED_DEPLOYED: record}))
    published: list[dict[str, Any]] = []

    def run() -> list[str]:
        return running.check_running(c, SRC_REGION, running.recorded(declared), kit="seed", publish=published.extend)

    assert run() == [] and [d["Value"] for d in published] == [0.0]  # undisturbed: the run passes
    assert (
        running.check_running(c, SRC_REGION, running.recorded(tmp_path / "none.json"), kit="s", publish=pytest.fail)
        == []
    )

    # the attacker: new code and a changed environment for the hardener, the monitor's schedule pointed elsewhere
    lam.update_function_code(FunctionName=HARDENER, ZipFile=_zip("def handler(event, context):\n    pass\n"))
    lam.update_function_configuration(FunctionName=HARDENER, Environment={"Variables": env | {"X": "1"}})
    scheduler.update_schedule(Name=MONITOR, Target={"Arn": fn["FunctionArn"], "RoleArn": role_arn}, **every)
    with pytest.raises(running.DeployedChanged):
        run()
    assert published[-1]["MetricName"] == contract.DEPLOYED_CHANGED and published[-1]["Value"] == 3.0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith(running.FINDING)]
    new_sha = lam.get_function(FunctionName=HARDENER)["Configuration"]["CodeSha256"]
    assert [x.split(" (")[0] for x in lines] == [
        f"{running.FINDING}: function {HARDENER}: code SHA-256 {new_sha!r}",
        f"{running.FINDING}: function {HARDENER}: environment {env | {'X': '1'}!r}",
        f"{running.FINDING}: schedule {MONITOR}: target {fn['FunctionArn']!r}",
    ]

    scheduler.delete_schedule(Name=HARDENER)  # what cannot be read is a finding, never a pass
    with pytest.raises(running.DeployedChanged, match=f"schedule {HARDENER}: not read"):
        run()
