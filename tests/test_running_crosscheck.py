"""The monitor and the freshness check vouch for each other across accounts (`jobs/ops/running.py`, decision 0039):
over real HTTP against the stand-in, a replica account's check reads the source account's monitor by ARN through the
monitor's resource policy and compares it with the record in its own package; the monitor reads the check likewise
with the record in its environment (`contract.ENV_PEERS`). Each runs as a role session of its own account. A changed
monitor fails the check's run (its AWS/Lambda `Errors`: an alarm the source account's administrator cannot write or
silence), a changed check fails the monitor's, and a grant withdrawn is a finding, never a pass."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from s3tables_kit.jobs.kernel.clients import Clients
from s3tables_kit.jobs.ops import running
from s3tables_kit.topology import contract
from s3tables_kit.topology.deployed import DeployedOut, deployed_value
from s3tables_kit.topology.deployed_compare import configuration_digest
from tests.ops_fixtures import ACCOUNT, SRC_REGION, OpsEnv
from tests.test_running_deployed import TRUST, _zip  # a function's trust and a package of one handler

REPLICA_ACCOUNT, REPLICA_REGION = "210987654321", "us-west-2"
MONITOR, CHECK = "seed-replication-monitor", "seed-freshness-replication-monitor"


class Account:
    """One account of the stand-in through its own access key: its kit function, and a role session to run as."""

    def __init__(self, endpoint: str, key: dict[str, str], account: str, region: str) -> None:
        self.endpoint, self.key, self.account, self.region = endpoint, key, account, region
        self.iam = self.client("iam")
        self.role = self.iam.create_role(RoleName="kit-fn", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
        self.lam = self.client("lambda")
        self._session: Clients | None = None

    def client(self, service: str) -> Any:
        return boto3.client(
            service, self.region, endpoint_url=self.endpoint, aws_access_key_id=self.key["accessKeyId"],
            aws_secret_access_key=self.key["secretAccessKey"],
        )  # fmt: skip

    def function(self, name: str, env: dict[str, str]) -> dict[str, Any]:
        return dict(self.lam.create_function(
            FunctionName=name, Runtime="python3.12", Role=self.role, Handler="handler.handler",
            Code={"ZipFile": _zip(f"# {name}\n")}, Environment={"Variables": env},
        ))  # fmt: skip

    def run_as(self, monkeypatch: pytest.MonkeyPatch, other_region: str) -> Clients:
        """Clients as the function's role session (as Lambda gives one to the function), made once."""
        if self._session is None:
            creds = self.client("sts").assume_role(RoleArn=self.role, RoleSessionName="fn")["Credentials"]
            with monkeypatch.context() as env:
                env.setenv("AWS_ACCESS_KEY_ID", creds["AccessKeyId"])
                env.setenv("AWS_SECRET_ACCESS_KEY", creds["SecretAccessKey"])
                env.setenv("AWS_SESSION_TOKEN", creds["SessionToken"])
                self._session = Clients(endpoint_url=self.endpoint, max_attempts=1)
                for service, region in (("lambda", other_region), ("scheduler", self.region)):
                    self._session.client(service, region)  # the clients the checks use, with this session's keys
        return self._session


def _configuration(fn: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    return {"handler": fn["Handler"], "role": fn["Role"], "environment": env, "layers": []}


def test_the_monitor_and_the_check_catch_each_others_change_across_accounts(
    ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = ops_env.control.seed_accounts([ACCOUNT, REPLICA_ACCOUNT])
    source = Account(ops_env.endpoint, keys[ACCOUNT], ACCOUNT, SRC_REGION)
    replica = Account(ops_env.endpoint, keys[REPLICA_ACCOUNT], REPLICA_ACCOUNT, REPLICA_REGION)
    check_env = {contract.ENV_MODE: contract.MODE_FRESHNESS}
    check = replica.function(CHECK, check_env)
    digest = configuration_digest(_configuration(check, check_env))
    peers = {check["FunctionArn"]: {"code": check["CodeSha256"], "configuration": digest}}
    monitor_env = {contract.ENV_KIT: "seed", contract.ENV_PEERS: json.dumps(peers)}
    monitor = source.function(MONITOR, monitor_env)
    # the check's package: the monitor by ARN, its configuration without the monitor's record of the check
    mine = {k: v for k, v in monitor_env.items() if k != contract.ENV_PEERS}
    record = deployed_value({monitor["FunctionArn"]: monitor["CodeSha256"]}, {},
                            configurations={monitor["FunctionArn"]: _configuration(monitor, mine)})  # fmt: skip
    DeployedOut.model_validate(record)
    grant = {"Action": "lambda:GetFunctionConfiguration", "StatementId": "OtherAccountReadsIt"}
    published: list[dict[str, Any]] = []

    def check_run() -> list[str]:
        clients = replica.run_as(monkeypatch, SRC_REGION)
        return running.check_running(clients, REPLICA_REGION, record, kit="seed", publish=published.extend)

    def monitor_run() -> list[str]:
        clients = source.run_as(monkeypatch, REPLICA_REGION)
        return running.check_running(
            clients, SRC_REGION, None, kit="seed", publish=published.extend, recorded_peers=peers
        )

    # without the other side's grant, neither may read: a finding, never a pass
    with pytest.raises(running.DeployedChanged, match=r"not read: .*AccessDenied"):
        check_run()
    with pytest.raises(running.DeployedChanged, match=r"not read: .*AccessDenied"):
        monitor_run()
    source.lam.add_permission(FunctionName=MONITOR, Principal=REPLICA_ACCOUNT, **grant)
    replica.lam.add_permission(FunctionName=CHECK, Principal=ACCOUNT, **grant)
    assert check_run() == [] and monitor_run() == []  # undisturbed: both pass

    # the monitor's record of the check is the check's side: rewriting it alone changes nothing the check compares
    source.lam.update_function_configuration(
        FunctionName=MONITOR, Environment={"Variables": monitor_env | {contract.ENV_PEERS: "{}"}}
    )
    assert check_run() == []
    # the source account's administrator silences the monitor: the check's run fails (its AWS/Lambda Errors)
    source.lam.update_function_configuration(
        FunctionName=MONITOR, Environment={"Variables": monitor_env | {contract.ENV_KIT: "elsewhere"}}
    )
    source.lam.update_function_code(FunctionName=MONITOR, ZipFile=_zip("def handler(e, c):\n    return {}\n"))
    with pytest.raises(running.DeployedChanged):
        check_run()
    lines = [x.split(" (")[0] for x in capsys.readouterr().out.splitlines() if x.startswith(running.FINDING)]
    new_sha = source.lam.get_function(FunctionName=MONITOR)["Configuration"]["CodeSha256"]
    assert lines[-2:] == [
        f"{running.FINDING}: function {monitor['FunctionArn']}: code SHA-256 {new_sha!r}",
        f"{running.FINDING}: function {monitor['FunctionArn']}: environment {mine | {contract.ENV_KIT: 'elsewhere'}!r}",
    ]
    assert published[-1] == published[-1] | {"MetricName": contract.DEPLOYED_CHANGED, "Value": 2.0}

    # the replica account's administrator changes the check: the monitor's run fails
    assert monitor_run() == []
    replica.lam.update_function_configuration(FunctionName=CHECK, Environment={"Variables": {}})
    with pytest.raises(running.DeployedChanged, match=f"function {check['FunctionArn']}: configuration digest"):
        monitor_run()
    # and withdrawing the grant that lets the other side read is a finding too
    source.lam.remove_permission(FunctionName=MONITOR, StatementId=grant["StatementId"])
    with pytest.raises(running.DeployedChanged, match=f"function {monitor['FunctionArn']}: not read"):
        check_run()
