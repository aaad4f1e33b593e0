"""The on-call path's rough edges, each pinned by a test that failed before its fix (pure functions, the real command
lines and entry points; no AWS, no Spark session, no JVM)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from s3tables_kit.jobs.kernel.idents import Ident
from s3tables_kit.topology.config import load_config, parse_config
from s3tables_kit.topology.deploy_outputs import outputs_doc

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.fixture
def outputs_file(tmp_path: Path) -> Path:
    """The seed's outputs.json as a deploy writes it (s3tables_kit.topology.deploy_outputs.outputs_doc)."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs_doc(load_config(ROOT / "examples/seed.toml"))))
    return path


# ---------------------------------------------------------------- 2. the runbook's EMR command ----


def _documented(pattern: str, page: Path) -> list[str]:
    """The ARGS of every `make <target> ARGS="..."` line of a page matching `pattern`."""
    found = re.findall(pattern + r' ARGS="([^"]*)"', page.read_text(encoding="utf-8"))
    assert found, f"{page.name} documents no {pattern!r} command"
    return found


def test_recover_emr_runs_exactly_as_the_runbook_writes_it(outputs_file: Path) -> None:
    """Guards: `make recover-emr ARGS="--outputs outputs.json --namespace analytics --as-of ..."` (docs/recovery.md)
    failed with `unrecognized arguments: --namespace` (it needed an undocumented `--`)."""
    from s3tables_kit.jobs.emr_submit import build_start_job_run, parse_args
    from s3tables_kit.jobs.recover.cli import parser as recover_parser
    from s3tables_kit.topology.outputs import load_outputs

    for args in _documented(r"make recover-emr", DOCS / "recovery.md"):
        argv = [str(outputs_file) if a == "outputs.json" else a for a in shlex.split(args)]
        ns, job_args = parse_args(argv)
        assert ns.outputs == str(outputs_file)
        want = ["--from-vault", "--table"] if "--from-vault" in job_args else ["--namespace", "analytics"]
        assert job_args[:2] == want and "--as-of" in job_args
        request = build_start_job_run(load_outputs(ns.outputs), job_args, ["a.jar"])
        remote = request["jobDriver"]["sparkSubmit"]["entryPointArguments"]
        recover_parser().parse_args(remote)  # the job on EMR accepts what it is given (argparse exits otherwise)
    # The `--` form still works, and a job argument named like one of the tool's own is the job's after `--`.
    ns, job_args = parse_args(["--outputs", "o.json", "--", "--name", "x", "--table", "a.b"])
    assert ns.name is None and job_args == ["--name", "x", "--table", "a.b"]


def test_recover_emr_from_the_vault_reads_the_outputs_vault_never_the_replica(tmp_path: Path) -> None:
    """`make recover-emr ARGS="--outputs outputs.json --from-vault --table ..."`: the job on EMR (the recovery role)
    gets the vault of the outputs and no replica catalog (which `--from-vault` refuses), and builds its request."""
    from s3tables_kit.jobs.emr_submit import build_start_job_run
    from s3tables_kit.jobs.emr_submit import main as emr_main
    from s3tables_kit.jobs.recover.cli import _refuse_other_selections, target_request, vault_store
    from s3tables_kit.jobs.recover.cli import parser as recover_parser
    from s3tables_kit.topology.outputs import parse_outputs

    cfg = load_config(ROOT / "examples/seed.toml")
    assert cfg.vault is not None
    vault = f"s3://{cfg.vault.bucket_name(cfg.kit.name)}"
    doc = outputs_doc(cfg)  # the seed deploys a vault: its stack's `kit_vault` output is there
    outputs = parse_outputs(doc)
    job = ["--from-vault", "--table", "analytics.orders", "--as-of", "2026-11-20T09:00:00Z"]
    remote = build_start_job_run(outputs, job, ["a.jar"])["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert "--replica-warehouse" not in remote
    assert remote[remote.index("--vault") + 1] == vault and remote[remote.index("--vault-region") + 1] == "us-west-2"
    ns = recover_parser().parse_args(remote)
    assert _refuse_other_selections(ns) == Ident("analytics", "orders")
    assert (vault_store(ns).root, vault_store(ns).region) == (vault, "us-west-2")
    req = target_request(ns)
    assert (
        req.target.warehouse == outputs.recovery.table_bucket_arn and req.target_namespace == outputs.recovery.namespace
    )
    # a deployment without a vault: refused before anything is uploaded, with the reason
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({k: v for k, v in doc.items() if k != "vault"}))
    assert emr_main(["--outputs", str(bare), "--print-request", *job]) == 2


# ---------------------------------------------------------------- 3. one exit-code contract ----


def _ops_main(module: str) -> Callable[[list[str]], int]:
    import importlib

    return importlib.import_module(module).main  # type: ignore[no-any-return]


def _rehearse_upload(outputs: str) -> int:
    from s3tables_kit.jobs.rehearse import upload_artifacts

    return upload_artifacts(outputs)


TOOLS = {
    "status": lambda outputs: _ops_main("s3tables_kit.jobs.ops.status")(["--outputs", outputs, "--quiet"]),
    "harden": lambda outputs: _ops_main("s3tables_kit.jobs.ops.harden")(["--outputs", outputs, "--dry-run", "--quiet"]),
    "audit": lambda outputs: _ops_main("s3tables_kit.jobs.ops.audit")(
        ["--config", str(ROOT / "examples/seed.toml"), "--outputs", outputs, "--quiet"]
    ),
    "monitor": lambda outputs: _ops_main("s3tables_kit.jobs.ops.monitor")(["--outputs", outputs, "--dry-run"]),
    "recover": lambda outputs: _ops_main("s3tables_kit.jobs.recover.cli")(
        ["--outputs", outputs, "--namespace", "analytics"]
    ),
    "failover": lambda outputs: _ops_main("s3tables_kit.jobs.failover.cli")(
        ["--outputs", outputs, "--replica-bucket", "b"]
    ),
    "recover-emr": lambda outputs: _ops_main("s3tables_kit.jobs.emr_submit")(["--outputs", outputs, "--print-request"]),
    "rehearse-upload": lambda outputs: _rehearse_upload(outputs),
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("problem", ["missing", "directory", "not-json", "not-outputs"])
def test_every_tool_answers_a_broken_outputs_file_with_one_line_and_exit_2(
    tool: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards: status, harden and audit crashed with a traceback and exit 1 (the code for unhealthy replication)
    when outputs.json was missing or unreadable; every tool now says why in one line and exits 2."""
    path = tmp_path / "outputs.json"
    if problem == "directory":
        path.mkdir()
    elif problem == "not-json":
        path.write_text("{ nope")
    elif problem == "not-outputs":
        path.write_text("[1, 2]")
    code = TOOLS[tool](str(path))
    err = capsys.readouterr().err.strip()
    assert code == 2, (tool, problem, err)
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert str(path) in err


def test_audit_answers_a_broken_configuration_with_exit_2(
    outputs_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards: audit raised a ConfigError traceback (exit 1) for a missing --config."""
    from s3tables_kit.jobs.ops.audit import main

    assert main(["--config", str(tmp_path / "kit.toml"), "--outputs", str(outputs_file), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "configuration file not found" in err and "Traceback" not in err


# ---------------------------------------------------------------- 10. on-call output and accuracy ----


def test_recover_preflight_refuses_bad_arguments_without_a_jvm(outputs_file: Path, tmp_path: Path) -> None:
    """Guards: `make recover` started spark-submit (a JVM) before it rejected bad arguments. It now runs
    `s3tables-kit recover`, which validates before it builds a Spark session; spark-submit and EMR run
    `jobs/recover_entry.py`, whose `--preflight` parses and validates without Spark."""
    recipe = re.search(r"^recover:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    assert "$(KIT) recover $(ARGS)" in recipe.group(1)
    no_jvm = dict(os.environ, SPARK_HOME=str(tmp_path / "no-spark"), JAVA_HOME=str(tmp_path / "no-java"))
    kit = [sys.executable, "-m", "s3tables_kit.cli", "recover", "--outputs", str(outputs_file)]
    refused = subprocess.run(
        [*kit, "--namespace", "analytics", "--as-of", "yesterday"],
        cwd=ROOT, env=no_jvm, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and "error:" in refused.stderr

    def preflight(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, str(ROOT / "jobs/recover_entry.py"), "--preflight", *args]
        env = dict(os.environ, SPARK_HOME=str(tmp_path / "no-spark"), JAVA_HOME=str(tmp_path / "no-java"))
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)

    bad = preflight("--outputs", str(outputs_file), "--namespace", "analytics", "--as-of", "yesterday")
    assert bad.returncode == 2 and "error:" in bad.stderr
    missing = preflight("--outputs", str(tmp_path / "nope.json"), "--namespace", "analytics")
    assert missing.returncode == 2 and "outputs file not found" in missing.stderr
    assert preflight("--bogus").returncode == 2
    ok = preflight("--outputs", str(outputs_file), "--namespace", "analytics", "--dry-run")
    assert ok.returncode == 0, ok.stderr[-2000:]  # with no Spark and no Java to start: no JVM was needed
    assert not (tmp_path / "reports").exists()
    vault = ["--from-vault", "--vault", str(tmp_path / "vault"), "--target-warehouse", str(tmp_path / "target")]
    assert preflight(*vault, "--table", "analytics.orders").returncode == 0  # no replica: the vault is the source
    many = preflight(*vault, "--namespace", "analytics")
    assert many.returncode == 2 and "exactly one --table" in many.stderr


def test_a_recovery_dry_run_writes_no_report_unless_asked(outputs_file: Path) -> None:
    """Guards: a dry run wrote reports/ although the README says "Plans write nothing"."""
    from s3tables_kit.jobs.recover.cli import parser, request_from_args

    base = ["--outputs", str(outputs_file), "--namespace", "analytics"]
    assert request_from_args(parser().parse_args([*base, "--dry-run"])).report_dir is None
    asked = request_from_args(parser().parse_args([*base, "--dry-run", "--report", "plans/"]))
    assert asked.report_dir == Path("plans/")
    assert request_from_args(parser().parse_args(base)).report_dir == Path("reports")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Plans write nothing (a recovery dry run writes its plan report only when given `--report DIR`)" in readme


def test_failover_plan_prints_policies_readably_and_rpo_reasons_in_full() -> None:
    """Guards: the plan printed the old policy as one line of 3,000+ characters and cut the RPO reason off at the
    table's column width."""
    from s3tables_kit.jobs.failover.model import (
        Caller,
        FailoverPlan,
        FailoverStep,
        FailoverTablePlan,
        PolicyChange,
        Rpo,
        SourceFacts,
        TableFacts,
    )
    from s3tables_kit.jobs.kernel.idents import Ident
    from s3tables_kit.jobs.kernel.selectors import Selector

    arn = "arn:aws:s3tables:us-west-2:111122223333:bucket/demo-dest-tablebucket"
    statement = {"Sid": "DenyReplicaDeletion", "Effect": "Deny", "Principal": "*", "Action": ["s3tables:DeleteTable"]}
    before = json.dumps({"Version": "2012-10-17", "Statement": [statement] * 20}, separators=(",", ":"))
    reason = "source: " + "the source Region did not answer GetTableMetadataLocation after 5 attempts " * 3
    facts = TableFacts(Ident("analytics", "orders"), f"{arn}/table/x", True, None, None, SourceFacts(error=reason))
    rpo = Rpo(None, None, "2026-11-24T03:10:00+00:00", reason)
    table = FailoverTablePlan(facts, FailoverStep.PROMOTE, rpo, None, False, (), "outputs (source unreachable)", None)
    plan = FailoverPlan(
        arn, Selector(), Caller("arn:aws:iam::111122223333:role/break", "111122223333"), True, (), [table],
        bucket_policy=PolicyChange(arn, "bucket-policy", before, before.replace("Deny", "Allow")),
    )  # fmt: skip
    text = plan.render()
    assert max(len(line) for line in text.splitlines()) < 300, "no line carries a whole policy document"
    assert '"Sid": "DenyReplicaDeletion",' in text  # pretty-printed JSON, one key a line
    flat = " ".join(" ".join(text.split()).split("\n"))
    assert reason.strip() in flat, "the RPO reason is printed in full"


def test_regions_come_from_botocore_so_newer_regions_are_accepted() -> None:
    """Guards: the hand-written Region list refused Regions newer than it (e.g. ap-southeast-6)."""
    import botocore

    from s3tables_kit.topology.config import known_regions

    data = json.loads((Path(botocore.__file__).parent / "data/partitions.json").read_text())
    aws = next(p for p in data["partitions"] if p["id"] == "aws")
    assert {r for r in aws["regions"] if not r.endswith("-global")} <= known_regions()
    assert {"ap-southeast-6", "us-gov-west-1", "cn-north-1"} <= known_regions()
    assert "aws-global" not in known_regions() and "us-west-9" not in known_regions()
    doc = tomllib.loads((ROOT / "examples/seed.toml").read_text(encoding="utf-8"))
    doc["replicas"][0]["region"] = "ap-southeast-6"
    assert parse_config(doc).replicas[0].region == "ap-southeast-6"


# ---------------------------------------------------------------- 5. Node, 7. make help ----


def test_readme_and_setup_name_the_node_versions_jsii_supports() -> None:
    """Guards: the README said Node >= 18 while the pinned jsii supports only 22 and 24, and nothing said so."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Node.js 22 or 24" in readme and "Node.js ≥ 18" not in readme
    setup = (ROOT / "scripts/setup.sh").read_text(encoding="utf-8")
    assert 'SUPPORTED_NODE="22 24"' in setup and re.search(r"^\s+node_check$", setup, re.M)
    probe = setup[setup.index("SUPPORTED_NODE=") : setup.index("npm_pkgs() {")]
    for version, says in (("20.20.2", True), ("22.11.0", False), ("24.1.0", False)):
        fake_node = f'node() {{ case "$1" in -p) echo {version.split(".")[0]};; *) echo v{version};; esac; }}\n'
        out = subprocess.run(
            ["bash", "-c", fake_node + probe + "\nnode_check"], capture_output=True, text=True, check=True
        )
        assert ("is not one the pinned jsii supports (22 or 24)" in out.stderr) is says, (version, out.stderr)


def test_make_help_lists_every_documented_target() -> None:
    """Guards: `make help` skipped `e2e` and `e2e-all` (its pattern had no digits)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    documented = re.findall(r"^([^\s:#.][^\s:]*):[^\n]*## ", makefile, re.M)
    assert {"e2e", "e2e-all", "outputs", "recover-emr"} <= set(documented)
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    listed = re.findall(r"^[ \t]+(?:\x1b\[[0-9;]*m)?(\S+?)(?:\x1b\[0m)?\s", out, re.M)
    assert sorted(listed) == sorted(documented)
