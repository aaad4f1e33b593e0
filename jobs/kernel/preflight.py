"""Before a scheduled job run works (the recovery rehearsal, the vault backup): the EMR Serverless application it runs
in is the one the recovery stack deployed. Its schedule passes the application's id and the deploy's record of it
(`--application-id`, `--deployed-application`: `s3tables_kit.topology.deployed.ApplicationOut` as JSON, the same record
`make audit` compares); another release, a custom image, a runtime or a network configuration, or an application
that cannot be read, ends the run with exit 1 before anything is read or written. EMR Serverless then counts a FAILED
job run, which the job's liveness alarm reads (`AWS/EMRServerless`, written by AWS only): a changed application is
an alarm in the recovery account, where no monitor of the kit reaches."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from s3tables_kit.jobs.kernel.sdk import describe_error
from s3tables_kit.topology.deployed import ApplicationOut, application_differences

FINDING = "application-not-as-deployed"  # the run's refusal, as its log line and the detection drill name it


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what runs is what was deployed (the scheduled runs pass both)")
    g.add_argument("--application-id", help="the EMR Serverless application this run runs in")
    g.add_argument("--deployed-application", metavar="JSON", help="the deploy's record of it (ApplicationOut)")


def application_findings(emr: Any, application_id: str, deployed: ApplicationOut) -> list[str]:
    """How the application differs from the deployed one; an application that cannot be read is a finding too."""
    try:
        app = emr.get_application(applicationId=application_id)["application"]
    except (ClientError, BotoCoreError) as exc:
        return [f"application {application_id} not read: {describe_error(exc)}"]
    return application_differences(app, deployed)


def refused(ns: argparse.Namespace, emr: Callable[[], Any], err: TextIO) -> bool:
    """True (after one line per finding on `err`) when the run must not go on; nothing to check without both
    arguments (a run by hand)."""
    if not (ns.application_id and ns.deployed_application):
        return False
    found = application_findings(emr(), ns.application_id, ApplicationOut.model_validate_json(ns.deployed_application))
    for f in found:
        print(f"{FINDING}: {ns.application_id}: {f} (CloudTrail UpdateApplication; make audit)", file=err)
    return bool(found)
