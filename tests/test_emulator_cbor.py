"""CloudWatch over Smithy RPCv2 CBOR, as hashicorp/aws 6.x (AWS SDK for Go v2) speaks it, against the emulator:
every CloudWatch operation the stacks (alarms, dashboards) and the monitor use, each sent as a CBOR request (botocore's
own RPCv2 CBOR serializer, `POST /service/GraniteServiceVersion20100801/operation/<Op>` with
`smithy-protocol: rpc-v2-cbor`) and read back by botocore's CBOR parser; plus the wire details the Go SDK insists on
(the response header, tag-1 timestamps, CBOR integers, the query-compatible error code)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
import botocore.parsers
import botocore.serialize
import cbor2
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.ops_fixtures import OpsEnv

ACCOUNT = "123456789012"
ALARM = "kit-replication-lag"


def cbor_client(env: OpsEnv) -> Any:
    client = boto3.client(
        "cloudwatch",
        region_name="us-east-1",
        endpoint_url=env.endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client._serializer = botocore.serialize.create_serializer("smithy-rpc-v2-cbor", include_validation=True)
    client._response_parser = botocore.parsers.create_parser("smithy-rpc-v2-cbor")
    client.meta.service_model.__dict__["resolved_protocol"] = "smithy-rpc-v2-cbor"  # the endpoint's parser
    return client


def raw_call(env: OpsEnv, op: str, doc: dict[str, Any]) -> requests.Response:
    """One request exactly as the Go SDK sends it (signed, CBOR body)."""
    url = f"{env.endpoint}/service/GraniteServiceVersion20100801/operation/{op}"
    headers = {"smithy-protocol": "rpc-v2-cbor", "Content-Type": "application/cbor", "Accept": "application/cbor"}
    req = AWSRequest("POST", url, data=cbor2.dumps(doc), headers=headers)
    SigV4Auth(Credentials("testing", "testing"), "monitoring", "us-east-1").add_auth(req)
    return requests.post(url, data=req.body, headers=dict(req.headers), timeout=30)


def put_alarm(cw: Any, name: str = ALARM) -> str:
    cw.put_metric_alarm(
        AlarmName=name,
        Namespace="S3TablesReplicaKit",
        MetricName="ReplicationLagSeconds",
        Dimensions=[{"Name": "Table", "Value": "analytics.orders"}],
        Statistic="Maximum",
        Period=300,
        EvaluationPeriods=2,
        Threshold=1800.0,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="breaching",
        AlarmActions=[f"arn:aws:sns:us-east-1:{ACCOUNT}:kit-alarms"],
        Tags=[{"Key": "kit", "Value": "s3tables-replica-kit"}],
    )
    return f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:{name}"


def test_alarm_lifecycle_as_the_provider_drives_it(ops_env: OpsEnv) -> None:
    cw = cbor_client(ops_env)
    arn = put_alarm(cw)
    alarms = cw.describe_alarms(AlarmNames=[ALARM])["MetricAlarms"]
    assert [a["AlarmName"] for a in alarms] == [ALARM]
    assert alarms[0]["Threshold"] == 1800.0 and alarms[0]["EvaluationPeriods"] == 2
    assert isinstance(alarms[0]["AlarmConfigurationUpdatedTimestamp"], dt.datetime)
    assert cw.list_tags_for_resource(ResourceARN=arn)["Tags"] == [{"Key": "kit", "Value": "s3tables-replica-kit"}]
    cw.tag_resource(ResourceARN=arn, Tags=[{"Key": "owner", "Value": "data-platform"}])
    tags = {t["Key"]: t["Value"] for t in cw.list_tags_for_resource(ResourceARN=arn)["Tags"]}
    assert tags == {"kit": "s3tables-replica-kit", "owner": "data-platform"}
    cw.untag_resource(ResourceARN=arn, TagKeys=["owner"])
    assert [t["Key"] for t in cw.list_tags_for_resource(ResourceARN=arn)["Tags"]] == ["kit"]
    cw.delete_alarms(AlarmNames=[ALARM])
    assert cw.describe_alarms(AlarmNames=[ALARM])["MetricAlarms"] == []


def test_metric_data_round_trip(ops_env: OpsEnv) -> None:
    cw = cbor_client(ops_env)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    dims = [{"Name": "Table", "Value": "analytics.orders"}]
    cw.put_metric_data(
        Namespace="S3TablesReplicaKit",
        MetricData=[{"MetricName": "ReplicationLagSeconds", "Dimensions": dims, "Timestamp": now, "Value": 42.0}],
    )
    stats = cw.get_metric_statistics(
        Namespace="S3TablesReplicaKit",
        MetricName="ReplicationLagSeconds",
        Dimensions=dims,
        StartTime=now - dt.timedelta(minutes=5),
        EndTime=now + dt.timedelta(minutes=5),
        Period=60,
        Statistics=["Maximum"],
    )
    assert [p["Maximum"] for p in stats["Datapoints"]] == [42.0]
    data = cw.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "lag",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "S3TablesReplicaKit",
                        "MetricName": "ReplicationLagSeconds",
                        "Dimensions": dims,
                    },
                    "Period": 60,
                    "Stat": "Maximum",
                },
            }
        ],
        StartTime=now - dt.timedelta(minutes=5),
        EndTime=now + dt.timedelta(minutes=5),
    )
    (result,) = data["MetricDataResults"]
    assert result["Values"] == [42.0] and all(isinstance(t, dt.datetime) for t in result["Timestamps"])


def test_dashboard_lifecycle(ops_env: OpsEnv) -> None:
    cw = cbor_client(ops_env)
    body = json.dumps(
        {"widgets": [{"type": "text", "x": 0, "y": 0, "width": 6, "height": 3, "properties": {"markdown": "kit"}}]}
    )
    assert cw.put_dashboard(DashboardName="kit-replication", DashboardBody=body)["DashboardValidationMessages"] == []
    got = cw.get_dashboard(DashboardName="kit-replication")
    assert json.loads(got["DashboardBody"]) == json.loads(body) and got["DashboardName"] == "kit-replication"
    cw.delete_dashboards(DashboardNames=["kit-replication"])
    with pytest.raises(ClientError) as err:
        cw.get_dashboard(DashboardName="kit-replication")
    assert err.value.response["Error"]["Code"] == "ResourceNotFound"


def test_wire_format_the_go_sdk_reads(ops_env: OpsEnv) -> None:
    """What smithy-go checks: the protocol header on every answer (errors too), timestamps as tag 1, integers as CBOR
    integers, and the error code of an awsQueryCompatible service in `x-amzn-query-error`."""
    put_alarm(cbor_client(ops_env))
    resp = raw_call(ops_env, "DescribeAlarms", {"AlarmNames": [ALARM]})
    assert resp.status_code == 200 and resp.headers["smithy-protocol"] == "rpc-v2-cbor"
    (alarm,) = cbor2.loads(resp.content)["MetricAlarms"]
    assert isinstance(alarm["AlarmConfigurationUpdatedTimestamp"], dt.datetime)  # cbor2 decodes tag 1 so
    assert type(alarm["EvaluationPeriods"]) is int and type(alarm["Period"]) is int
    missing = raw_call(ops_env, "GetDashboard", {"DashboardName": "nope"})
    assert missing.status_code >= 400 and missing.headers["smithy-protocol"] == "rpc-v2-cbor"
    assert missing.headers["x-amzn-query-error"].startswith("ResourceNotFound;")
    assert cbor2.loads(missing.content)["__type"].endswith("ResourceNotFound")


def test_injected_fault_answers_in_cbor(ops_env: OpsEnv) -> None:
    ops_env.control.inject_faults("PutMetricAlarm", 1, code="Throttling", status=400)
    resp = raw_call(ops_env, "PutMetricAlarm", {"AlarmName": "x"})
    assert resp.status_code == 400 and resp.headers["smithy-protocol"] == "rpc-v2-cbor"
    assert cbor2.loads(resp.content)["__type"] == "Throttling"
