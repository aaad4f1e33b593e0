"""Every ops tool takes the estate (`[[sources]]`): status, harden, audit and monitor run over every source and every
replica bucket of an estate of three sources with a fan-in vault, name each bucket, and name a table by
`bucket/namespace.name` where two buckets hold that name; the failover tool refuses the vault; recovery plans tables
of several sources in the vault at one cut. Real HTTP against the emulator (`emulator/`); the outputs are those of a
deploy of the estate (`s3tables_kit.topology.deploy_outputs.outputs_doc`). The `[source]` outputs of every tool are the
existing tests' (unchanged)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from s3tables_kit.jobs.ops import audit as au
from s3tables_kit.jobs.ops import harden as hd
from s3tables_kit.jobs.ops import monitor as mon
from s3tables_kit.jobs.ops import status as st
from s3tables_kit.jobs.ops.cli import canonical_policy
from s3tables_kit.policies import documents
from s3tables_kit.topology.config import parse_config
from s3tables_kit.topology.deploy_outputs import outputs_doc
from s3tables_kit.topology.outputs import EstateOutputsError, OutputsError, parse_outputs
from tests.ops_fixtures import SALES_REPLICA, VAULT, Estate, OpsEnv, deploy_estate

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
COMMIT_MS = int((NOW - timedelta(hours=1)).timestamp() * 1000)


@pytest.fixture
def estate(ops_env: OpsEnv) -> Estate:
    return deploy_estate(ops_env, commit_ms=COMMIT_MS)


def _bucket(estate: Estate, name: str) -> Any:
    return next(r for r in estate.cfg.replicas if r.bucket == name)


def _ok(tool: Callable[[list[str]], int], args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """An ops tool's CLI run that exits 0; what it printed."""
    code = tool(args)
    text = capsys.readouterr().out
    assert code == 0, text
    return text


# ---- the outputs contract ----------------------------------------------------------------------------------------


def test_the_outputs_of_an_estate_hold_every_source(estate: Estate) -> None:
    out = estate.outputs
    assert [s.source_id for s in out.sources] == ["marketing", "ops", "sales"]  # stack-name order
    vault, regional = out.replica_by_name(VAULT), out.replica_by_name(SALES_REPLICA)
    assert [s.source_id for s in out.sources_into(vault)] == ["marketing", "ops", "sales"]
    assert vault.feeding_source_arns == [s.bucket_arn for s in estate.cfg.sources]
    # the roles harden exempts on the vault are the configuration's (every feeding source's)
    assert sorted(out.replication_roles_for(vault)) == sorted(
        estate.cfg.replication_role_arns_into(_bucket(estate, VAULT))
    )
    assert out.replication_roles_for(regional) == [estate.cfg.replication_role_arn_of(estate.cfg.sources[0])]
    assert out.source_of(regional).source_id == "sales"
    with pytest.raises(EstateOutputsError, match="fan-in vault is restored from"):
        out.source_of(vault)
    assert sorted(out.replicated_tables_into(vault)) == [
        "marketing.campaigns",
        "ops.incidents",
        "sales.orders",
        "sales.refunds",
    ]


def test_one_source_reads_as_before_and_two_stacks_of_one_bucket_are_refused() -> None:
    from tests.ops_fixtures import config_dict

    cfg = parse_config(config_dict())
    out = parse_outputs(outputs_doc(cfg))
    assert (
        not out.several_sources
        and out.sources[0].table_bucket_arn == cfg.sources[0].bucket_arn
        and out.sources[0].source_id is None
    )
    doc = outputs_doc(cfg)
    doc["source-again"] = doc["source"]
    with pytest.raises(OutputsError, match=r"names the source bucket .* in more than one stack"):
        parse_outputs(doc)
    # the single-source form of the model (`source=`) still validates
    single = type(out).model_validate({"source": out.sources[0].model_dump(), **out.model_dump(exclude={"sources"})})
    assert single.sources == out.sources


# ---- status ------------------------------------------------------------------------------------------------------


def test_status_reports_every_source_and_names_ambiguous_tables(
    estate: Estate, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _ok(st.main, estate.tool_args(tmp_path, "--quiet"), capsys)
    # sales.orders is in the sales bucket (replicated) and in the marketing bucket (a local table): both named by
    # bucket; every other table by its name alone
    assert "estate-sales/sales.orders" in text and "estate-marketing/sales.orders" in text
    assert "estate-sales/sales.refunds" not in text and "sales.refunds" in text
    assert "source estate-sales: 2 tables: 4 completed" in text
    assert "source estate-marketing: 2 tables: 1 completed, 1 unconfigured" in text
    assert "source estate-ops: 1 tables: 1 completed" in text
    assert "5 tables, 7 destination rows: 6 completed, 1 unconfigured" in text

    assert st.main(estate.tool_args(tmp_path, "--quiet", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    by_source = {s["source_bucket_arn"].rsplit("/", 1)[1]: s for s in doc["sources"]}
    assert set(by_source) == {"estate-sales", "estate-marketing", "estate-ops"}
    vault_rows = [r for r in doc["destinations"] if (r["destination_bucket_arn"] or "").endswith(f"/{VAULT}")]
    assert sorted(r["table"] for r in vault_rows) == [
        "marketing.campaigns",
        "ops.incidents",
        "sales.orders",
        "sales.refunds",
    ]


# ---- harden ------------------------------------------------------------------------------------------------------


def test_harden_exempts_every_feeding_source_on_the_vault_and_reports_every_bucket(
    estate: Estate, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _ok(hd.main, estate.tool_args(tmp_path, "--quiet"), capsys)
    assert "6 tables in destination buckets: 6 hardened" in text
    assert f"{VAULT}: 4 tables: 4 hardened" in text and f"{SALES_REPLICA}: 2 tables: 2 hardened" in text
    for name, qualified in ((VAULT, "ops.incidents"), (VAULT, "sales.orders"), (SALES_REPLICA, "sales.orders")):
        replica = _bucket(estate, name)
        ns, table = qualified.split(".")
        s3t = estate.s3tables(replica.region)
        arn = s3t.get_table(tableBucketARN=replica.bucket_arn, namespace=ns, name=table)["tableARN"]
        live = json.loads(
            s3t.get_table_policy(tableBucketARN=replica.bucket_arn, namespace=ns, name=table)["resourcePolicy"]
        )
        # what the reviewed documents say for this bucket: the vault exempts the three replication roles by their
        # name pattern (fan-in), the sales replica sales' role by ARN
        assert canonical_policy(live) == canonical_policy(documents.replica_table_policy_for(estate.cfg, replica, arn))
        roles = {r for r in estate.cfg.replication_role_arns if r in json.dumps(live)}
        assert len(roles) == (0 if name == VAULT else 1)
        assert ("arn:aws:iam::*:role/estate-*-s3tables-replication" in json.dumps(live)) == (name == VAULT)
    assert hd.main(estate.tool_args(tmp_path, "--quiet")) == 0  # a second run changes nothing
    assert "6 tables in destination buckets: 0 hardened, 0 would-change, 6 unchanged" in capsys.readouterr().out


# ---- audit -------------------------------------------------------------------------------------------------------


def test_audit_checks_the_whole_estate(estate: Estate, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert hd.harden(estate.clients, estate.outputs, show_progress=False).exit_code == 0
    args = ["--config", str(estate.write_config(tmp_path)), *estate.tool_args(tmp_path, "--quiet")]
    text = _ok(au.main, args, capsys)
    assert text.startswith("no drift (")
    # eight replication configurations (each source's bucket level, and the table level of each of the five source
    # tables, replicated or not: a table-level destination can be added to any), five bucket policies (each source's,
    # and the vault's once, not once per source), five buckets' encryption, every source and replica table
    assert "8 replication configurations" in text and "5 bucket policies" in text and "5 bucket encryption" in text
    assert "4 source tables" in text and "6 replica tables" in text
    for line in (
        "source estate-sales: no drift",
        "source estate-marketing: no drift",
        "source estate-ops: no drift",
        f"replica {VAULT}: no drift",
        f"replica {SALES_REPLICA}: no drift",
    ):
        assert line in text

    # the vault's bucket policy as a configuration of one source would write it (only that source's role exempt):
    # drift on the vault, named there, and nowhere else
    vault, first = _bucket(estate, VAULT), estate.cfg.sources[0]
    one = estate.cfg.model_copy(update={"sources": (first,), "replicas": estate.cfg.destinations_of(first)})
    estate.s3tables(vault.region).put_table_bucket_policy(
        tableBucketARN=vault.bucket_arn, resourcePolicy=json.dumps(documents.replica_bucket_policy(one, vault))
    )
    report = au.audit(estate.clients, estate.cfg, estate.outputs, show_progress=False)
    # (changed: the exemptions name one role, not the feeding roles' pattern; the sources share one account, so the
    # vault has no confinement statement to miss)
    assert report.exit_code == 1
    assert report.kinds() == {"bucket-policy-statement-changed"}
    assert {d.resource for d in report.drifts} == {vault.bucket_arn}
    text = au.render(report)
    assert f"replica {VAULT}: " in text and f"replica {VAULT}: no drift" not in text
    assert f"replica {SALES_REPLICA}: no drift" in text and "source estate-ops: no drift" in text


def test_audit_reports_the_tables_of_one_source_missing_from_the_vault(estate: Estate) -> None:
    """Replication of the ops source stopped before its table reached the vault: `replica-missing`, and the vault
    coverage of the other sources unaffected."""
    env = estate.env
    env.control.reset()
    fresh = deploy_estate(env, commit_ms=COMMIT_MS, replicate=False)
    for src in fresh.cfg.sources:
        if src.id != "ops":
            env.control.replicate(source_bucket_arn=src.bucket_arn)
    assert hd.harden(fresh.clients, fresh.outputs, show_progress=False).exit_code == 0
    report = au.audit(fresh.clients, fresh.cfg, fresh.outputs, show_progress=False)
    assert [(d.kind, d.resource) for d in report.drifts] == [
        ("replica-missing", f"ops.incidents -> {_bucket(fresh, VAULT).bucket_arn}")
    ]


# ---- monitor -----------------------------------------------------------------------------------------------------


def test_one_monitor_per_source_each_with_its_own_kit_dimension(
    estate: Estate, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert mon.main(estate.tool_args(tmp_path, "--dry-run")) == 0
    doc = json.loads(capsys.readouterr().out)["sources"]
    assert {name: d["kit"] for name, d in doc.items()} == {
        "estate-marketing": "estate-marketing",
        "estate-ops": "estate-ops",
        "estate-sales": "estate-sales",
    }
    assert {name: d["tables"] for name, d in doc.items()} == {"estate-marketing": 2, "estate-ops": 1, "estate-sales": 2}
    assert all(d["heartbeat"] and d["status_read_errors"] == 0 for d in doc.values())
    # the vault's series of each source are its own: the Kit dimensions differ, the per-destination series count
    # only that source's tables
    sales = next(s for s in estate.outputs.sources if s.source_id == "sales")
    settings = mon.settings_for(estate.outputs, sales, max_lag=None, cap=50, conc=4)
    assert set(settings.destination_bucket_arns) == set(sales.destinations)
    result = mon.run_monitor(estate.clients, settings, region=sales.region, now=NOW, dry_run=True)
    tables = {
        next(x["Value"] for x in d["Dimensions"] if x["Name"] == "Destination"): d["Value"]
        for d in result.data
        if d["MetricName"] == "TablesMonitored"
    }
    assert tables == {dest: 2.0 for dest in sales.destinations}


# ---- failover and recovery ---------------------------------------------------------------------------------------


def test_failover_refuses_the_fan_in_vault(estate: Estate, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from s3tables_kit.jobs.failover.cli import main as failover

    code = failover([*estate.tool_args(tmp_path, "--quiet"), "--replica-bucket", VAULT, "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{VAULT} receives from 3 sources" in err and "restored from (s3tables-kit recover)" in err


def test_failover_plans_a_replica_of_one_source_against_that_source(estate: Estate) -> None:
    """The regional replica has one source (sales): the plan reads that source's tables (reachable, each an expected
    replica); the other sources' same-named table (marketing's local sales.orders) plays no part."""
    from s3tables_kit.jobs.failover import aws

    req = aws.Request(replica_bucket=SALES_REPLICA, show_progress=False)
    plan = aws.build_plan(estate.clients, req, estate.outputs, None, now=NOW)
    assert sorted(str(t.facts.ident) for t in plan.tables) == ["sales.orders", "sales.refunds"]
    sales = estate.cfg.sources[0].bucket_arn
    for t in plan.tables:
        assert t.facts.expected_replica and t.facts.source.error is None
        assert t.facts.source_table_arn is not None and t.facts.source_table_arn.startswith(f"{sales}/table/")
        # the other replica of that source is the vault: it holds the table too
        assert {d.bucket_arn for d in t.facts.source.destinations} == {
            _bucket(estate, VAULT).bucket_arn,
            _bucket(estate, SALES_REPLICA).bucket_arn,
        }


def test_recovery_plans_tables_of_every_source_in_the_vault_at_one_cut(
    estate: Estate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")  # the recovery's catalogs take the environment's credentials
    from s3tables_kit.jobs.recover.cli import parser, request_from_args
    from s3tables_kit.jobs.recover.job import plan_one
    from s3tables_kit.jobs.recover.lakeplan import build_plan_at_scale
    from s3tables_kit.jobs.recover.metadata import metadata_source

    vault = _bucket(estate, VAULT)
    as_of = (NOW - timedelta(minutes=30)).isoformat().replace("+00:00", "Z")
    argv = ["--outputs", str(estate.write_outputs(tmp_path)), "--endpoint-url", estate.env.endpoint, "--dry-run"]
    argv += ["--namespace", "sales", "--namespace", "marketing", "--namespace", "ops", "--as-of", as_of]
    req = request_from_args(parser().parse_args(argv))
    assert req.replica.warehouse == vault.bucket_arn  # recovery reads the vault named by the outputs
    plan = build_plan_at_scale(
        req, metadata_source(req.replica), metadata_source(req.target), plan_one, 8, io.StringIO()
    )
    assert plan.errors == []
    assert sorted(str(t.replica) for t in plan.tables) == [
        "marketing.campaigns",
        "ops.incidents",
        "sales.orders",
        "sales.refunds",
    ]
    # one cut: every table at its snapshot current at --as-of (the one commit before it)
    assert {t.snapshot.committed_at for t in plan.tables} == {"2026-11-24T11:00:00.000Z"}
    # a cut before that commit holds no table of any source: each is a plan error, none is planned
    argv[-1] = (NOW - timedelta(hours=2)).isoformat().replace("+00:00", "Z")
    early = request_from_args(parser().parse_args(argv))
    plan = build_plan_at_scale(
        early, metadata_source(early.replica), metadata_source(early.target), plan_one, 8, io.StringIO()
    )
    assert plan.tables == [] and len(plan.errors) == 4, plan.errors


def test_failover_dry_run_with_the_estate_configuration_plans_one_source_and_leaves_the_vault(
    estate: Estate, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`failover --config <estate> --dry-run` (the e2e estate chain's step): the documents are built from the view of
    the one source feeding the regional replica; the vault (fan-in) is neither promoted nor a destination, and its
    policy, with every feeding source's grants, is untouched."""
    from s3tables_kit.jobs.failover.cli import main as failover

    vault = _bucket(estate, VAULT)
    s3t = estate.s3tables(vault.region)
    before = s3t.get_table_bucket_policy(tableBucketARN=vault.bucket_arn)["resourcePolicy"]
    args = [*estate.tool_args(tmp_path, "--quiet", "--json"), "--config", str(estate.write_config(tmp_path))]
    args.append(f"--role-arn={vault.account_id}={estate.cfg.protection.break_glass_principals[0]}")
    code = failover([*args, "--replica-bucket", SALES_REPLICA, "--dry-run"])
    out = capsys.readouterr()
    plan = json.loads(out.out)
    assert code == 0 and plan["refusals"] == [] and plan["caller_is_break_glass"], out.err
    assert plan["replica_bucket_arn"].endswith(f"bucket/{SALES_REPLICA}")
    # the documents it would put name the sales replica alone: no other bucket, no replication role of any source
    docs = json.dumps([plan["bucket_policy"]["after"], *(t["after"] for t in plan["table_policies"])])
    assert SALES_REPLICA in docs and VAULT not in docs and "s3tables-replication" not in docs
    assert s3t.get_table_bucket_policy(tableBucketARN=vault.bucket_arn)["resourcePolicy"] == before
    code = failover([*args, "--replica-bucket", VAULT, "--dry-run"])
    assert code == 2 and "receives from 3 sources" in capsys.readouterr().err
