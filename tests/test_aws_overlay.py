"""The kit's botocore model overlay (`jobs.aws_overlay`, issue 15): in effect for the kit's sessions, harmless to
every existing operation, still needed (fails once botocore ships the operations: remove the overlay then), and
usable from the EMR `jobs.zip` too."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import botocore.session

from jobs import aws_overlay
from jobs.ops.clients import Clients
from tests.ops_fixtures import OpsEnv

ROOT = Path(__file__).resolve().parent.parent
TABLE_ARN = (
    "arn:aws:s3tables:us-east-1:123456789012:bucket/demo-dest-tablebucket/table/0d9c1a7e-1111-2222-3333-444455556666"
)


def _raw(service: str, overlay: bool) -> dict[str, Any]:
    session = botocore.session.get_session()
    if overlay:
        aws_overlay.install(session)
    return dict(session.get_component("data_loader").load_service_model(service, "service-2"))


def test_overlay_files_and_declared_operations_agree() -> None:
    found: dict[str, set[str]] = {}
    for f in (aws_overlay.models_dir()).rglob("service-2.sdk-extras.json"):
        doc = json.loads(f.read_text())
        assert doc["version"] == 1.0 and set(doc) == {"version", "merge"}
        assert set(doc["merge"]) <= {"operations", "shapes"}
        found[f.parent.parent.name] = set(doc["merge"]["operations"])
    assert found == {s: set(ops) for s, ops in aws_overlay.OPERATIONS.items()}


def test_overlay_still_needed() -> None:
    """Fails the day the pinned botocore ships an overlaid operation itself: then delete its entry from
    jobs/aws_overlay (models/ and OPERATIONS) and the README row; upstream's model wins from then on."""
    for service, ops in aws_overlay.OPERATIONS.items():
        upstream = botocore.session.get_session().get_service_model(service).operation_names
        shipped = sorted(set(ops) & set(upstream))
        assert not shipped, (
            f"botocore {botocore.__version__} ships {shipped} for {service}: remove the overlay (jobs/aws_overlay)"
        )


def test_merge_adds_only_and_changes_no_existing_operation_or_shape() -> None:
    for service in aws_overlay.OPERATIONS:
        plain, merged = _raw(service, overlay=False), _raw(service, overlay=True)
        assert merged["metadata"] == plain["metadata"]
        for kind in ("operations", "shapes"):
            for name, value in plain[kind].items():
                assert merged[kind][name] == value, f"{service} {kind} {name} changed by the overlay"
        added = set(merged["operations"]) - set(plain["operations"])
        assert added == set(aws_overlay.OPERATIONS[service])
        # every shape the new operations reference exists in the merged model
        model = botocore.session.get_session()
        aws_overlay.install(model)
        service_model = model.get_service_model(service)
        for op in added:
            om = service_model.operation_model(op)
            assert om.input_shape is not None and om.error_shapes


def test_plain_sessions_are_untouched() -> None:
    """The overlay is per session: a session the kit did not build does not see it (no process-wide change)."""
    aws_overlay.boto3_session(region_name="us-east-1")
    plain = botocore.session.get_session().get_service_model("s3tables")
    assert "DisassociateTableReplication" not in plain.operation_names


def test_kit_clients_serialise_the_documented_request(ops_env: OpsEnv) -> None:
    """Through the ops tools' own client factory against the emulator: PUT /table-replication/disassociate with
    the table ARN as the `tableArn` query parameter and no body (AWS API reference)."""
    client = Clients(endpoint_url=ops_env.endpoint).s3tables("us-east-1")
    sent: list[Any] = []
    client.meta.events.register(
        "before-send.s3tables.DisassociateTableReplication", lambda request, **_: sent.append(request)
    )
    # no such table in the emulator (NotFoundException): the request itself is what this test is about
    with contextlib.suppress(client.exceptions.NotFoundException):
        client.disassociate_table_replication(tableArn=TABLE_ARN)
    [req] = sent
    assert req.method == "PUT"
    path, _, query = req.url.partition("?")
    assert path == f"{ops_env.endpoint}/table-replication/disassociate"
    assert query == "tableArn=" + TABLE_ARN.replace(":", "%3A").replace("/", "%2F")
    assert not req.body


def test_overlay_works_from_the_emr_jobs_zip(tmp_path: Path) -> None:
    """On EMR the package is imported from jobs.zip: the overlay is copied out of the zip to a real directory."""
    from jobs.emr_submit import jobs_zip

    z = tmp_path / "jobs.zip"
    z.write_bytes(jobs_zip())
    probe = (
        "import jobs.aws_overlay as o; assert '.zip' in o.__file__, o.__file__; "
        "c = o.boto3_session(region_name='us-east-1').client('s3tables'); "
        "print('DisassociateTableReplication' in c.meta.service_model.operation_names)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(z), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"
