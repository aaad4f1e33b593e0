"""A scheduled job run checks the EMR Serverless application it runs in before it works
(`s3tables_kit.jobs.kernel.preflight`), over real HTTP against the stand-in's EMR Serverless: as deployed, the run
goes on; another image, or an application it cannot read, ends the rehearsal and the vault backup with exit 1
before any Spark session, which EMR Serverless counts as a FAILED job run (`AWS/EMRServerless` `FailedJobs`: their
liveness alarms, `<kit>-recovery-rehearsal-not-succeeding` and `<kit>-vault-backup-not-succeeding`)."""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

import pytest

from s3tables_kit.jobs import rehearse
from s3tables_kit.jobs.kernel import preflight, sdk
from s3tables_kit.jobs.vault import cli as backup
from tests.ops_fixtures import DST_REGION, OpsEnv

DEPLOYED = json.dumps({"release_label": "emr-7.12.0"})  # as the recovery stack records it (`ApplicationOut`)
IMAGE = "444455556666.dkr.ecr.us-west-2.amazonaws.com/spark:mine"
REPLICA = f"arn:aws:s3tables:{DST_REGION}:111122223333:bucket/demo-dest-tablebucket"


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs' own clients read the default chain, as on EMR (the stand-in takes any key)."""
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)


def _emr(ops_env: OpsEnv) -> Any:
    return sdk.client("emr-serverless", region=DST_REGION, endpoint_url=ops_env.endpoint)


def _application(emr: Any) -> str:
    return str(emr.create_application(name="seed-recovery", releaseLabel="emr-7.12.0", type="SPARK")["applicationId"])


def _changed(emr: Any, app: str) -> None:
    """An administrator of the recovery account gives the application an image of their own."""
    emr.stop_application(applicationId=app)
    emr.update_application(applicationId=app, imageConfiguration={"imageUri": IMAGE})


def test_the_check_passes_the_deployed_application_and_names_every_change(ops_env: OpsEnv) -> None:
    emr = _emr(ops_env)
    app = _application(emr)
    ns = argparse.Namespace(application_id=app, deployed_application=DEPLOYED)
    err = io.StringIO()
    assert not preflight.refused(ns, lambda: emr, err) and err.getvalue() == ""
    _changed(emr, app)
    assert preflight.refused(ns, lambda: emr, err)
    assert err.getvalue().startswith(f"{preflight.FINDING}: {app}: image '{IMAGE}' (deployed None)")
    gone = argparse.Namespace(application_id="00fnothere", deployed_application=DEPLOYED)
    err = io.StringIO()
    assert preflight.refused(gone, lambda: emr, err) and "application 00fnothere not read" in err.getvalue()
    by_hand = argparse.Namespace(application_id=None, deployed_application=None)  # nothing passed: nothing checked
    assert not preflight.refused(by_hand, lambda: pytest.fail("no client for a run by hand"), io.StringIO())


def _no_spark(conf: dict[str, str]) -> Any:
    raise AssertionError("a run in a changed application must not start Spark")


def test_the_rehearsal_and_the_backup_exit_1_before_spark_in_a_changed_application(
    ops_env: OpsEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    emr = _emr(ops_env)
    app = _application(emr)
    _changed(emr, app)
    check = ["--endpoint-url", ops_env.endpoint, "--application-id", app, "--deployed-application", DEPLOYED]
    rehearsal = ["--replica-warehouse", REPLICA, "--replica-region", DST_REGION, "--target-warehouse",
                 REPLICA.replace("demo-dest-tablebucket", "demo-recovery"), "--table", "sales.orders"]  # fmt: skip
    assert rehearse.main([*rehearsal, *check], spark_factory=_no_spark) == 1
    vault = ["--replica-warehouse", REPLICA, "--replica-region", DST_REGION, "--vault-bucket", "seed-vault",
             "--vault-region", DST_REGION, "--retention-days", "1", "--point-key", "arn:aws:kms:us-west-2:1:alias/p",
             "--table", "sales.orders"]  # fmt: skip
    assert backup.main([*vault, *check], spark_factory=_no_spark) == 1
    assert capsys.readouterr().err.count(f"{preflight.FINDING}: {app}: image") == 2
