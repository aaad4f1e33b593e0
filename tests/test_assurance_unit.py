"""`[assurance]` without AWS, Spark or the provider bindings: the [assurance] config section, the monitor's Lambda
package, and the pure parts of the recovery rehearsal."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.infra import packaging
from s3tables_kit.jobs import rehearse
from s3tables_kit.topology import contract
from s3tables_kit.topology.assurance import monitor_schedule_expression
from s3tables_kit.topology.config import ConfigError, parse_config
from tests.ops_fixtures import config_dict

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- config ----


def _cfg(assurance: dict[str, Any] | None = None) -> Any:
    doc = copy.deepcopy(config_dict())
    if assurance is not None:
        doc["assurance"] = assurance
    return parse_config(doc)


def _issues(assurance: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        _cfg(assurance)
    return [str(i) for i in err.value.issues]


def test_defaults_without_the_section() -> None:
    a = _cfg().assurance
    assert a.monitor.enabled and a.rehearsal.enabled and a.alarm_subscriptions == ()
    assert monitor_schedule_expression(a.monitor) == "rate(5 minutes)"
    assert a.rehearsal.schedule_expression == "rate(24 hours)"


@pytest.mark.parametrize(
    ("assurance", "field", "words"),
    [
        ({"monitor": {"interval_minutes": 0}}, "assurance.monitor.interval_minutes", "greater than or equal to 1"),
        ({"monitor": {"interval_minutes": 721}}, "assurance.monitor.interval_minutes", "less than or equal to 720"),
        ({"monitor": {"max_table_metrics": 5000}}, "assurance.monitor.max_table_metrics", "1000"),
        ({"monitor": {"intervall_minutes": 5}}, "assurance.monitor.intervall_minutes", "unknown key"),
        ({"rehearsal": {"interval_hours": 168}}, "assurance.rehearsal.interval_hours", "84"),
        ({"rehearsal": {"namespace": "Rehearsal"}}, "assurance.rehearsal.namespace", "lower case"),
        ({"rehearsal": {"namespace": "recovered"}}, "assurance.rehearsal.namespace", "must differ"),
        ({"rehearsal": {"tables": ["analytics.nope"]}}, "assurance.rehearsal.tables[0]", "not a replicated table"),
        ({"rehearsal": {"offset_hours": 2160}}, "assurance.rehearsal.offset_hours", "retention"),
        (
            {"alarm_subscriptions": [{"protocol": "email", "endpoint": "not-an-address"}]},
            "assurance.alarm_subscriptions[0].endpoint",
            "e-mail address",
        ),
        (
            {"alarm_subscriptions": [{"protocol": "https", "endpoint": "http://x.example"}]},
            "assurance.alarm_subscriptions[0].endpoint",
            "https://",
        ),
        (
            {"alarm_subscriptions": [{"protocol": "sms", "endpoint": "+15550100"}]},
            "assurance.alarm_subscriptions[0].protocol",
            "email",
        ),
    ],
)
def test_invalid_assurance_names_field_and_rule(assurance: dict[str, Any], field: str, words: str) -> None:
    issues = _issues(assurance)
    assert any(i.startswith(f"{field}:") and words in i for i in issues), issues


def test_valid_subscriptions() -> None:
    a = _cfg(
        {
            "alarm_subscriptions": [
                {"protocol": "email", "endpoint": "oncall@example.com"},
                {"protocol": "sqs", "endpoint": "arn:aws:sqs:us-east-1:123456789012:alarms"},
            ]
        }
    ).assurance
    assert [s.protocol for s in a.alarm_subscriptions] == ["email", "sqs"]


# ---------------------------------------------------------------- the Lambda package ----


def test_package_is_deterministic_and_holds_exactly_the_status_code() -> None:
    first, second = packaging.monitor_zip(), packaging.monitor_zip()
    assert first == second
    names = zipfile.ZipFile(io.BytesIO(first)).namelist()
    code = [n for n in names if not n.startswith(packaging.DATA_DIR + "/")]
    assert code == sorted(
        [f"{packaging.PACKAGE}/__init__.py", *(f"{packaging.PACKAGE}/{m}" for m in packaging.monitor_modules())]
    )
    assert any(n.startswith("botocore_data/s3tables/") and "service-2" in n for n in names)
    for info in zipfile.ZipFile(io.BytesIO(first)).infolist():
        assert info.date_time == (1980, 1, 1, 0, 0, 0)
    # the shipped modules are the repository's own (no second copy)
    z = zipfile.ZipFile(io.BytesIO(first))
    assert z.read("s3tables_kit/jobs/ops/status.py") == (ROOT / "jobs/ops/status.py").read_bytes()


def test_package_imports_alone_and_its_model_loads(tmp_path: Path) -> None:
    """Unzipped as Lambda does: the handler imports without pydantic, infra/, policies/ or Spark, botocore
    finds the bundled S3 Tables model (the pinned botocore's) through AWS_DATA_PATH, whose operations include
    DisassociateTableReplication."""
    zipfile.ZipFile(io.BytesIO(packaging.monitor_zip())).extractall(tmp_path)
    probe = (
        "import sys, os; sys.path.insert(0, os.getcwd()); import s3tables_kit.jobs.ops.monitor as m; "
        "bad = [x for x in ('pydantic', 's3tables_kit.infra', 's3tables_kit.policies', 'pyspark') "
        "if x in sys.modules]; "
        "assert not bad, bad; assert callable(m.handler); "
        "import s3tables_kit.jobs.ops.freshness as f; assert callable(f.handler); "
        "import botocore.session as s; "
        "model = s.get_session().get_service_model('s3tables'); "
        "assert 'GetTableReplicationStatus' in model.operation_names; "
        "from s3tables_kit.jobs.kernel.clients import Clients; "
        "c = Clients().s3tables('us-east-1'); "
        "assert 'DisassociateTableReplication' in c.meta.service_model.operation_names; "
        # every kit module comes from the package (the venv's editable install must not fill a gap)
        "outside = sorted(n for n, x in sys.modules.items() if n.split('.')[0] == 's3tables_kit' "
        "and not (getattr(x, '__file__', None) or os.getcwd()).startswith(os.getcwd())); "
        "assert not outside, outside; "
        "print(s.get_session().get_component('data_loader').search_paths[0])"
    )
    env = {"AWS_DATA_PATH": str(tmp_path / packaging.DATA_DIR), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(tmp_path / packaging.DATA_DIR)


# ---------------------------------------------------------------- the rehearsal (pure parts) ----


def test_rotating_sample_covers_every_table() -> None:
    names = [f"ns.t{i}" for i in range(7)]
    seen: set[str] = set()
    for day in range(4):
        picked = rehearse.choose_tables(names, 2, day)
        assert len(picked) == 2 and len(set(picked)) == 2
        seen |= set(picked)
    assert seen == set(names)
    assert rehearse.choose_tables(names, 2, 10) == rehearse.choose_tables(
        list(reversed(names)), 2, 10
    )  # order-independent
    assert rehearse.choose_tables(names[:1], 3, 5) == names[:1]


def test_pinned_jar_names_are_what_setup_installs() -> None:
    installed = sorted(p.name for p in (ROOT / ".jars").glob("*.jar"))
    assert contract.pinned_jar_names() == installed


def test_start_job_run_input_is_the_api_request() -> None:
    req = packaging.start_job_run_input(
        application_id="00abc",
        execution_role_arn="arn:aws:iam::111122223333:role/kit-s3tables-recovery",
        scripts_uri="s3://b/scripts/",
        logs_uri="s3://b/logs",
        job_args=["--kit", "kit"],
        jar_names=["a.jar", "b.jar"],
    )
    assert req["clientToken"] == "<aws.scheduler.execution-id>"
    assert req["jobDriver"]["sparkSubmit"]["entryPoint"] == "s3://b/scripts/rehearse_entry.py"
    assert (
        "--jars s3://b/scripts/jars/a.jar,s3://b/scripts/jars/b.jar"
        in req["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"]
    )
    assert (
        req["configurationOverrides"]["monitoringConfiguration"]["s3MonitoringConfiguration"]["logUri"]
        == "s3://b/logs/"
    )
    # member names of the EMR Serverless StartJobRun API (botocore's model): the universal target passes them as is
    import botocore.session

    shape = botocore.session.get_session().get_service_model("emr-serverless").operation_model("StartJobRun")
    assert set(req) <= set(shape.input_shape.members)
    assert set(shape.input_shape.required_members) <= set(req)


def test_rehearsal_metrics() -> None:
    import datetime as dt

    at = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    data = rehearse.metric_data("kit", succeeded=True, seconds=12.34567, tables=2, at=at)
    assert {d["MetricName"]: d["Value"] for d in data} == {
        rehearse.SUCCEEDED: 1.0,
        rehearse.RTO: 12.346,
        rehearse.TABLES: 2.0,
        rehearse.STALE: 0.0,
    }
    stale = rehearse.metric_data("kit", succeeded=False, seconds=1.0, tables=2, at=at, stale=1)
    assert {d["MetricName"]: d["Value"] for d in stale}[rehearse.STALE] == 1.0
    assert all(d["Dimensions"] == [{"Name": "Kit", "Value": "kit"}] for d in data)
    assert json.dumps([{k: v for k, v in d.items() if k != "Timestamp"} for d in data])


def test_a_recovered_point_older_than_the_lag_budget_is_stale() -> None:
    import datetime as dt

    as_of = dt.datetime(2026, 11, 23, 12, tzinfo=dt.UTC)
    points = {
        "a.fresh": (as_of - dt.timedelta(minutes=20)).isoformat(),
        "a.frozen": (as_of - dt.timedelta(hours=3)).isoformat(),
        "a.none": None,  # nothing recovered: its verdict says why
    }
    assert rehearse.stale_points(points, as_of, dt.timedelta(minutes=30)) == {"a.frozen": 10800.0}
    assert rehearse.stale_points(points, as_of, dt.timedelta(hours=4)) == {}
    assert rehearse.stale_points(points, as_of, None) == {}  # no budget, no finding
    res = rehearse.RehearsalResult("k", "r", as_of.isoformat(), as_of.isoformat(), "rehearsal", ["a.frozen"])
    res.stale, res.max_lag_seconds = {"a.frozen": 10800.0}, 1800.0
    assert res.outcome == "STALE" and "STALE (budget 30m00s)" in rehearse.render(res)
    res.error = "boom"
    assert res.outcome == "FAILED"  # a failure is reported as one, whatever its points


# ---------------------------------------------------------------- lint: condition-scoped Resource "*" ----


def test_lint_allows_resource_star_only_for_resourceless_actions_with_a_condition() -> None:
    from s3tables_kit.policies.lint import check_no_wildcard_resources

    def doc(action: str, condition: dict[str, Any] | None) -> dict[str, Any]:
        stmt: dict[str, Any] = {"Sid": "X", "Effect": "Allow", "Action": action, "Resource": "*"}
        if condition:
            stmt["Condition"] = condition
        return {"Version": "2012-10-17", "Statement": [stmt]}

    ns = {"StringEquals": {"cloudwatch:namespace": "S3TablesReplicaKit"}}
    assert check_no_wildcard_resources(doc("cloudwatch:PutMetricData", ns), "identity") == []
    assert check_no_wildcard_resources(doc("cloudwatch:PutMetricData", None), "identity")  # unscoped: flagged
    assert check_no_wildcard_resources(doc("s3tables:GetTableData", ns), "identity")  # has resource types: flagged
    assert check_no_wildcard_resources(doc("cloudwatch:*", ns), "identity")  # wildcard action: flagged
