"""Adopted lakes into a shared vault, outside the policies (tests/test_policy_vault_accounts.py proves those):
discovery proposes an adopted lake's own bucket of the vault (`--vault`), the outputs contract names the buckets
the recovery role reads, and `recover --replica` reads one of them and nothing else. Pure Python, no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from s3tables_kit.jobs.emr_submit import remote_args
from s3tables_kit.jobs.kernel.idents import ArgError
from s3tables_kit.jobs.ops import discover
from s3tables_kit.jobs.ops.discover_plan import Destination, bucket_plan, propose_toml
from s3tables_kit.jobs.ops.discover_read import BucketFound
from s3tables_kit.jobs.recover.cli import parser, request_from_args
from s3tables_kit.topology.config import load_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.outputs import parse_outputs
from tests.vault_accounts_world import VAULT_ACCOUNT, VAULT_REGION, account_bucket, adopted_account, shared_vault

A, B = adopted_account(0), adopted_account(1)


def test_discovery_proposes_the_lakes_own_bucket_of_the_vault(tmp_path: Path) -> None:
    """Two buckets of an adopted lake, namespaces as they are: one bucket of the vault for the account, which both
    feed, marked `feeding_account`; the proposal loads (no namespace convention asked of it)."""
    plans = []
    for name, ns in (("lake-sales", "sales"), ("lake-web", "events")):
        found = BucketFound(f"arn:aws:s3tables:eu-west-1:{A}:bucket/{name}", name, "eu-west-1", A, namespaces=[ns])
        plans.append(bucket_plan(found, [Destination.parse(f"{VAULT_REGION}:{VAULT_ACCOUNT}", vault=True)]))
    assert any(
        f"({VAULT_REGION}, {VAULT_ACCOUNT}; this account's own bucket of the shared vault)" in a
        for a in plans[0]["add"]
    )
    text = propose_toml("lake", plans)
    assert f"# account {A}'s own bucket of the vault other accounts feed: confined by the bucket" in text
    (tmp_path / "kit.toml").write_text(text)
    cfg = load_config(tmp_path / "kit.toml")
    (vault,) = cfg.replicas
    assert (vault.bucket, vault.account_id, vault.region, vault.feeding_account) == (
        account_bucket(A),
        VAULT_ACCOUNT,
        VAULT_REGION,
        A,
    )
    assert [s.namespaces[0].name for s in cfg.sources_into(vault)] == ["sales", "events"]


def test_a_vault_without_its_account_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = discover.main(["--region", "eu-west-1", "--vault", VAULT_REGION, "--out", str(tmp_path), "--quiet"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"discover: --vault '{VAULT_REGION}' names the vault's account too: us-west-2:123456789012"
    )


@pytest.fixture(scope="module")
def outputs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("outputs") / "outputs.json"
    path.write_text(json.dumps(outputs_doc(shared_vault(2))))
    return path


def test_the_outputs_name_every_bucket_recovery_reads(outputs_file: Path) -> None:
    outputs = parse_outputs(json.loads(outputs_file.read_text()))
    cfg = shared_vault(2)
    assert outputs.recovery.vault_account_table_bucket_arns == [r.bucket_arn for r in cfg.replicas if r.feeding_account]
    assert outputs.recovery_replica_named(None).table_bucket_name == "estate-vault-euc1"
    assert outputs.recovery_replica_named(account_bucket(A)).account_id == VAULT_ACCOUNT
    with pytest.raises(KeyError, match="recovery reads no replica bucket 'estate-sales-replica-euc1'"):
        outputs.recovery_replica_named("estate-sales-replica-euc1")  # a replica, but not the vault's


def test_recover_reads_the_bucket_named_and_refuses_one_it_does_not_read(outputs_file: Path) -> None:
    base = ["--outputs", str(outputs_file), "--table", "sales.orders"]
    request = request_from_args(parser().parse_args([*base, "--replica", account_bucket(A)]))
    assert request.replica.warehouse == shared_vault(2).replicas[-2].bucket_arn
    assert request_from_args(parser().parse_args(base)).replica.warehouse.endswith("bucket/estate-vault-euc1")
    with pytest.raises(ArgError, match="--replica estate-sales-replica-euc1: recovery reads no replica bucket"):
        request_from_args(parser().parse_args([*base, "--replica", "estate-sales-replica-euc1"]))
    local = ["--replica-warehouse", "/tmp/r", "--target-warehouse", "/tmp/t", "--table", "a.b"]
    with pytest.raises(ArgError, match="--replica names a bucket of --outputs"):
        request_from_args(parser().parse_args([*local, "--replica", account_bucket(A)]))


def test_recover_emr_hands_the_job_the_bucket_named(outputs_file: Path) -> None:
    """On EMR the job gets the bucket's warehouse, never `--replica` (the remote side has no outputs file)."""
    outputs = parse_outputs(json.loads(outputs_file.read_text()))
    args = remote_args(outputs, ["--table", "sales.orders", "--replica", account_bucket(A)])
    assert "--replica" not in args
    assert args[args.index("--replica-warehouse") + 1].endswith(f"bucket/{account_bucket(A)}")
    assert args[-2:] == ["--table", "sales.orders"]
    with pytest.raises(ValueError, match="--replica nope: recovery reads no replica bucket 'nope'"):
        remote_args(outputs, ["--table", "sales.orders", "--replica=nope"])


def test_the_backups_of_every_bucket_of_the_vault_are_backed_up_and_restored_by_bucket(tmp_path: Path) -> None:
    """With a backup vault: `backup --outputs` reads every account bucket besides the recovery replica; `recover
    --from-vault --replica <bucket>` reads that bucket's backups (the recovery replica's own have no layout segment),
    and on EMR the job is handed the bucket's name, not a warehouse."""
    from s3tables_kit.jobs.recover.cli import vault_bucket
    from s3tables_kit.jobs.vault import cli as backup_cli

    cfg = shared_vault(2, backups=True)
    assert cfg.vault is not None
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs_doc(cfg)))
    arns = [r.bucket_arn for r in cfg.replicas if r.feeding_account]
    req = backup_cli.request_from_args(backup_cli.parser().parse_args(["--outputs", str(path), "--namespace", "sales"]))
    assert [(b.bucket, b.catalog.warehouse) for b in req.account_buckets] == [
        (account_bucket(A), arns[0]),
        (account_bucket(B), arns[1]),
    ]
    assert len({req.replica.name, *(b.catalog.name for b in req.account_buckets)}) == 3  # a catalog each

    def chosen(*extra: str) -> str:
        return vault_bucket(parser().parse_args(["--outputs", str(path), "--from-vault", "--table", "sales.orders",
                                                 *extra]))  # fmt: skip

    assert (chosen(), chosen("--replica", "estate-vault-euc1")) == ("", "")
    assert chosen("--replica", account_bucket(A)) == account_bucket(A)
    with pytest.raises(ArgError, match="recovery reads no replica bucket 'estate-sales-replica-euc1'"):
        chosen("--replica", "estate-sales-replica-euc1")
    outputs = parse_outputs(json.loads(path.read_text()))
    remote = remote_args(outputs, ["--from-vault", "--table", "sales.orders", "--replica", account_bucket(A)])
    assert "--replica-warehouse" not in remote and remote[remote.index("--replica") + 1] == account_bucket(A)
    assert "--replica" not in remote_args(outputs, ["--from-vault", "--table", "sales.orders"])
