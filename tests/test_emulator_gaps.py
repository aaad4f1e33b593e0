"""The calls the real Terraform provider makes against the emulator in `make e2e`, each answered as AWS answers it
(the gaps the first terraform apply found): accounts by access key, an organization with the configuration's OU
ids, GetTableEncryption / GetTableStorageClass of a table, S3 Tables tagging, EMR Serverless `type = "spark"`."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.ops_fixtures import OpsEnv

SOURCE, REPLICA, MANAGEMENT = "111122223333", "444455556666", "999988887777"


def _client(env: OpsEnv, keys: dict[str, dict[str, str]], account: str, service: str, region: str = "us-east-1") -> Any:
    k = keys[account]
    session = boto3.session.Session(
        aws_access_key_id=k["accessKeyId"], aws_secret_access_key=k["secretAccessKey"], region_name=region
    )
    return session.client(service, endpoint_url=env.endpoint)


@pytest.fixture
def keys(ops_env: OpsEnv) -> dict[str, dict[str, str]]:
    return ops_env.control.seed_accounts([SOURCE, REPLICA, MANAGEMENT])


def test_each_access_key_is_served_as_its_own_account(ops_env: OpsEnv, keys: dict[str, dict[str, str]]) -> None:
    for account in (SOURCE, REPLICA):
        assert _client(ops_env, keys, account, "sts").get_caller_identity()["Account"] == account
        arn = _client(ops_env, keys, account, "s3tables").create_table_bucket(name=f"bucket-{account}")["arn"]
        assert arn == f"arn:aws:s3tables:us-east-1:{account}:bucket/bucket-{account}"
    assert ops_env.control.seed_accounts([SOURCE]) == {SOURCE: keys[SOURCE]}  # idempotent: the same key


def test_organization_has_the_configurations_ou_and_takes_an_scp_there(
    ops_env: OpsEnv, keys: dict[str, dict[str, str]]
) -> None:
    ops_env.control.seed_organization(MANAGEMENT, {"ou-ab12-replicas1": [SOURCE, REPLICA]})
    org = _client(ops_env, keys, MANAGEMENT, "organizations")
    root = org.list_roots()["Roots"][0]["Id"]
    ous = org.list_organizational_units_for_parent(ParentId=root)["OrganizationalUnits"]
    assert [o["Id"] for o in ous] == ["ou-ab12-replicas1"]
    members = {a["Id"] for a in org.list_accounts_for_parent(ParentId="ou-ab12-replicas1")["Accounts"]}
    assert members == {SOURCE, REPLICA}
    # what the organization stack's aws_organizations_policy + _attachment do
    pid = org.create_policy(
        Name="protect", Description="d", Type="SERVICE_CONTROL_POLICY",
        Content='{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3tables:DeleteTable","Resource":"*"}]}',
    )["Policy"]["PolicySummary"]["Id"]  # fmt: skip
    org.attach_policy(PolicyId=pid, TargetId="ou-ab12-replicas1")
    targets = org.list_targets_for_policy(PolicyId=pid)["Targets"]
    assert [t["TargetId"] for t in targets] == ["ou-ab12-replicas1"]
    with pytest.raises(ClientError, match="OrganizationalUnitNotFound"):
        org.attach_policy(PolicyId=pid, TargetId="ou-ab12-nothere1")


def test_table_encryption_and_storage_class_read_back_as_the_buckets(
    ops_env: OpsEnv, keys: dict[str, dict[str, str]]
) -> None:
    st = _client(ops_env, keys, SOURCE, "s3tables")
    arn = st.create_table_bucket(name="enc-bucket")["arn"]
    st.put_table_bucket_storage_class(
        tableBucketARN=arn, storageClassConfiguration={"storageClass": "INTELLIGENT_TIERING"}
    )
    st.create_namespace(tableBucketARN=arn, namespace=["analytics"])
    st.create_table(tableBucketARN=arn, namespace="analytics", name="orders", format="ICEBERG")
    enc = st.get_table_encryption(tableBucketARN=arn, namespace="analytics", name="orders")
    assert enc["encryptionConfiguration"] == {"sseAlgorithm": "AES256"}
    sc = st.get_table_storage_class(tableBucketARN=arn, namespace="analytics", name="orders")
    assert sc["storageClassConfiguration"] == {"storageClass": "INTELLIGENT_TIERING"}
    with pytest.raises(ClientError, match="NotFound"):
        st.get_table_encryption(tableBucketARN=arn, namespace="analytics", name="missing")


def test_tags_on_a_table_bucket(ops_env: OpsEnv, keys: dict[str, dict[str, str]]) -> None:
    st = _client(ops_env, keys, SOURCE, "s3tables")
    arn = st.create_table_bucket(name="tagged-bucket")["arn"]
    st.tag_resource(resourceArn=arn, tags={"kit": "seed", "managed-by": "kit", "team": "data"})
    st.untag_resource(resourceArn=arn, tagKeys=["managed-by", "team"])
    assert st.list_tags_for_resource(resourceArn=arn)["tags"] == {"kit": "seed"}
    with pytest.raises(ClientError, match="NotFound"):
        st.tag_resource(resourceArn=arn.replace("tagged-bucket", "other-bucket"), tags={"a": "b"})


def test_emr_serverless_takes_the_application_type_in_any_case(
    ops_env: OpsEnv, keys: dict[str, dict[str, str]]
) -> None:
    emr = _client(ops_env, keys, REPLICA, "emr-serverless", "us-west-2")
    app_id = emr.create_application(name="recovery", releaseLabel="emr-7.12.0", type="spark")["applicationId"]
    app = emr.get_application(applicationId=app_id)["application"]
    assert app["type"] == "Spark"
    assert app["state"] == "CREATED"  # as on AWS: the provider waits for CREATED
    assert app["architecture"] == "X86_64"  # AWS's default, read back by the provider


def test_lambda_keeps_and_reports_its_logging_config(ops_env: OpsEnv, keys: dict[str, dict[str, str]]) -> None:
    import io
    import zipfile

    iam = _client(ops_env, keys, SOURCE, "iam")
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    lam = _client(ops_env, keys, SOURCE, "lambda")
    lam.create_function(
        FunctionName="monitor", Runtime="python3.12", Role=role, Handler="handler.handler",
        Code={"ZipFile": buf.getvalue()}, LoggingConfig={"LogFormat": "Text", "LogGroup": "seed-replication-monitor"},
    )  # fmt: skip
    conf = lam.get_function(FunctionName="monitor")["Configuration"]
    assert conf["LoggingConfig"] == {"LogFormat": "Text", "LogGroup": "seed-replication-monitor"}
    lam.update_function_configuration(FunctionName="monitor", LoggingConfig={"LogFormat": "JSON"})
    assert lam.get_function(FunctionName="monitor")["Configuration"]["LoggingConfig"]["LogFormat"] == "JSON"


def test_seed_commits_to_a_table_that_exists_already(ops_env: OpsEnv, keys: dict[str, dict[str, str]]) -> None:
    """`make e2e` gives the tables Terraform created (no snapshot) a first commit before replicating them."""
    st = _client(ops_env, keys, SOURCE, "s3tables")
    arn = st.create_table_bucket(name="seeded-bucket")["arn"]
    st.create_namespace(tableBucketARN=arn, namespace=["analytics"])
    table_arn = st.create_table(tableBucketARN=arn, namespace="analytics", name="orders", format="ICEBERG")["tableARN"]
    assert ops_env.control.seed(arn, {"analytics": ["orders"]}, commit_ms=1_700_000_000_000) == [table_arn]
    loc = st.get_table_metadata_location(tableBucketARN=arn, namespace="analytics", name="orders")
    assert loc["metadataLocation"].endswith(".metadata.json")
    assert len(st.list_tables(tableBucketARN=arn)["tables"]) == 1  # the same table, not a second one


def test_create_table_bucket_keeps_its_encryption_and_storage_class(
    ops_env: OpsEnv, keys: dict[str, dict[str, str]]
) -> None:
    st = _client(ops_env, keys, REPLICA, "s3tables", "ap-southeast-2")
    key = f"arn:aws:kms:ap-southeast-2:{REPLICA}:key/91ad18b2-91ba-4c4c-9907-ba1e3d0c95f9"
    arn = st.create_table_bucket(
        name="kms-bucket",
        encryptionConfiguration={"sseAlgorithm": "aws:kms", "kmsKeyArn": key},
        storageClassConfiguration={"storageClass": "INTELLIGENT_TIERING"},
    )["arn"]
    enc = st.get_table_bucket_encryption(tableBucketARN=arn)["encryptionConfiguration"]
    assert enc == {"sseAlgorithm": "aws:kms", "kmsKeyArn": key}
    sc = st.get_table_bucket_storage_class(tableBucketARN=arn)["storageClassConfiguration"]
    assert sc == {"storageClass": "INTELLIGENT_TIERING"}


def test_create_table_bucket_keeps_its_tags(ops_env: OpsEnv, keys: dict[str, dict[str, str]]) -> None:
    """hashicorp/aws 6.x creates a tagged table bucket with `tags` in CreateTableBucket and reads them back."""
    st = _client(ops_env, keys, REPLICA, "s3tables", "ap-southeast-2")
    arn = st.create_table_bucket(name="tagged-bucket", tags={"kit": "estate", "kit-protection": "estate"})["arn"]
    assert st.list_tags_for_resource(resourceArn=arn)["tags"] == {"kit": "estate", "kit-protection": "estate"}
