"""`jobs/failover/writer.py` (the writer's commit `make e2e` makes to every source table) against the S3 Tables
emulator over real HTTP: a table created without metadata (as Terraform creates it) gets its first commit, a table
with metadata gets the next one; the rows are real Iceberg data (counted from the manifests)."""

from __future__ import annotations

import os

import pytest

from s3tables_kit.jobs.failover import writer
from s3tables_kit.jobs.failover.iceberg import S3TablesCommitter, io_props, partition_counts
from s3tables_kit.jobs.kernel.idents import Ident
from tests.ops_fixtures import OpsEnv

REGION = "us-east-1"


def test_every_table_gets_a_real_commit_created_first_where_it_has_no_metadata(
    ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")  # moto 5.2.5 and pyarrow's uploads
    s3t = ops_env.clients().s3tables(REGION)
    arn = s3t.create_table_bucket(name="writer-test-bucket")["arn"]
    for ns, name in (("sales", "orders"), ("sales", "refunds"), ("marketing", "campaigns")):
        if ns not in [n["namespace"][0] for n in s3t.list_namespaces(tableBucketARN=arn)["namespaces"]]:
            s3t.create_namespace(tableBucketARN=arn, namespace=[ns])
        s3t.create_table(tableBucketARN=arn, namespace=ns, name=name, format="ICEBERG")  # no metadata: Terraform's

    first = writer.commit_to_every_table(s3t, arn, ops_env.endpoint)
    second = writer.commit_to_every_table(s3t, arn, ops_env.endpoint)

    assert first == second == ["marketing.campaigns", "sales.orders", "sales.refunds"]
    committer = S3TablesCommitter(s3t, arn, io_props(s3t, arn, ops_env.endpoint))
    for qualified in first:
        table = committer.load(Ident.parse(qualified))
        assert len(table.metadata.snapshots) == 2  # one per commit, the first on the table's first metadata
        counts = partition_counts(table, table.metadata.current_snapshot_id)
        assert counts == {"[('region', 'eu')]": 4, "[('region', 'us')]": 2}  # two commits of 2 + 1 rows


def test_the_command_line_commits_as_the_environment_s_account_and_fails_on_an_unknown_bucket(
    ops_env: OpsEnv, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED")
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, os.environ.get(k, v))
    s3t = ops_env.clients().s3tables(REGION)
    arn = s3t.create_table_bucket(name="writer-cli-bucket")["arn"]
    s3t.create_namespace(tableBucketARN=arn, namespace=["ns"])
    s3t.create_table(tableBucketARN=arn, namespace="ns", name="t", format="ICEBERG")

    assert writer.main(["--bucket-arn", arn, "--endpoint-url", ops_env.endpoint]) == 0
    assert "committed: ns.t" in capsys.readouterr().out
    missing = arn.rsplit("/", 1)[0] + "/no-such-bucket"
    assert writer.main(["--bucket-arn", missing, "--endpoint-url", ops_env.endpoint]) == 1
    assert "error: " in capsys.readouterr().err
