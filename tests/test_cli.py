"""`s3tables-kit`, the installed command: every subcommand's --help, a missing extra in one line, and exit codes that
pass through unchanged, through the command and through `make`, on a real world in the emulator."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from s3tables_kit import cli
from tests.ops_fixtures import OpsEnv, deploy
from tests.test_sandbox import makefile_recipes

ROOT = Path(__file__).resolve().parents[1]
KIT = [sys.executable, "-m", "s3tables_kit.cli"]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_help_lists_every_command_by_group_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for c in cli.COMMANDS:
        assert f"  {c.name:<15} {c.summary}" in out
    assert out.index("On call") < out.index("Practise and prove")
    assert "1 unhealthy" in out and "2 refused" in out
    assert cli.main([]) == 2  # a bare command is a mistake, said with the same usage


def test_unknown_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["recovr"]) == 2
    assert "unknown command 'recovr'" in capsys.readouterr().err


@pytest.mark.parametrize("name", [c.name for c in cli.COMMANDS if not c.checkout])
def test_every_product_subcommand_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse ends --help with exit 0
        cli.main([name, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--" in out


def test_a_missing_extra_is_one_line_naming_it() -> None:
    recover = cli.BY_NAME["recover"]
    line = cli.missing_dependency(recover, ModuleNotFoundError(name="pyspark.sql"))
    assert line == (
        "s3tables-kit recover needs the [spark] extra: pip install 's3tables-replica-kit[spark]' (missing: pyspark)"
    )
    summary = cli.BY_NAME["summary"]
    assert "[infra] extra" in (cli.missing_dependency(summary, ModuleNotFoundError(name="cdktf")) or "")
    assert cli.missing_dependency(summary, ModuleNotFoundError(name="yaml")) is None  # a real bug is not hidden
    sandbox = cli.BY_NAME["sandbox"]
    assert "runs from a checkout" in (cli.missing_dependency(sandbox, ModuleNotFoundError(name="emulator")) or "")


def test_status_exit_codes_pass_through_the_command_and_make(ops_env: OpsEnv, tmp_path: Path) -> None:
    world = deploy(ops_env)
    outputs = str(world.write_outputs(tmp_path))
    args = ["--outputs", outputs, "--endpoint-url", ops_env.endpoint, "--quiet"]
    make = ["make", "-s", "--no-print-directory", "status"]

    healthy = _run([*KIT, "status", *args])
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert _run([*make, f"ARGS={' '.join(args)}"]).returncode == 0

    ops_env.control.set_status(world.tables["analytics.orders"], world.replica_arn, "failed", failure_message="KMS")
    unhealthy = _run([*KIT, "status", *args])
    assert unhealthy.returncode == 1 and "FAILED" in unhealthy.stdout
    via_make = _run([*make, f"ARGS={' '.join(args)}"])
    assert via_make.returncode == 1, via_make.stdout[-2000:] + via_make.stderr[-2000:]
    assert "FAILED" in via_make.stdout

    refused_args = ["--outputs", str(tmp_path / "missing.json")]
    refused = _run([*KIT, "status", *refused_args])
    assert refused.returncode == 2 and "outputs file not found" in refused.stderr
    assert _run([*make, f"ARGS={' '.join(refused_args)}"]).returncode == 2


# `make <on-call target>` runs in question mode (Makefile: `MAKEFLAGS += -q`) so that the tool's exit code comes back
# as make's own. In that mode make runs only the recipe lines marked `+`, and a target with any other line runs nothing
# at all and answers 1 ("unhealthy"), without a word.
def oncall_targets(makefile: str) -> list[str]:
    found = re.search(r"^ONCALL := (.+)$", makefile, flags=re.M)
    assert found, "the Makefile names its on-call targets in ONCALL"
    return found.group(1).split()


def unmarked_oncall_lines(makefile: str, recipes: dict[str, list[str]]) -> list[str]:
    """Recipe lines of an on-call target that question mode would skip: neither `+` nor `$(SETUP_FIRST)`."""
    return [
        f"{target}: {line}"
        for target in oncall_targets(makefile)
        for line in recipes[target]
        if not line.startswith(("+", "$(SETUP_FIRST)"))
    ]


def test_every_line_of_an_on_call_target_runs_in_question_mode(tmp_path: Path) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = makefile_recipes()
    oncall = oncall_targets(makefile)
    assert {t for t in recipes if re.search(rf"^{t}:.*## On call: ", makefile, flags=re.M)} <= set(oncall)
    assert unmarked_oncall_lines(makefile, recipes) == []
    # the trap is real: one unmarked line and the tool never runs, yet make answers 1
    for recipe, answer in (("\t+@echo ran; exit 0\n", ("ran\n", 0)), ("\t@echo setup\n\t+@echo ran\n", ("", 1))):
        (tmp_path / "Makefile").write_text(f"MAKEFLAGS += -q\nstatus:\n{recipe}")
        run = subprocess.run(["make", "-s", "status"], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert (run.stdout, run.returncode) == answer
    added = {**recipes, "status": [*recipes["status"], "@echo done"]}
    assert unmarked_oncall_lines(makefile, added) == ["status: @echo done"]
