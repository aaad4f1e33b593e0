"""docs/adoption.md's runbook, what can be checked of it without Terraform (harness/e2e/runbook.py reads it; `make
e2e-adopt ARGS="--world one"` runs its lines on the stand-in): its steps in the walk's order, each `s3tables-kit` line
parsed by its command's own parser, one configuration named throughout, and the stacks' names and order as the
recorded synth of a multi-bucket configuration (tests/golden/estate/) deploys them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.e2e import runbook
from harness.e2e.run import stack_order

GOLDEN = Path(__file__).resolve().parent / "golden" / "estate"
REFERENCE = "cross-stack-reference-input-"  # cdktf's remote state of a stack another stack reads


def estate_deploy_order() -> list[str]:
    """The recorded estate synth's stacks in the order the e2e deploys them: a stack after every stack whose
    outputs it reads (its `terraform_remote_state` of that stack)."""
    stacks = {}
    for path in sorted(GOLDEN.glob("*.json")):
        remote = json.loads(path.read_text()).get("data", {}).get("terraform_remote_state", {})
        stacks[path.stem] = {"dependencies": sorted(k[len(REFERENCE) :] for k in remote if k.startswith(REFERENCE))}
    return stack_order({"stacks": stacks})


def test_the_runbook_gives_the_walks_steps_in_order_on_one_configuration() -> None:
    lines = runbook.read()

    assert runbook.order_problems(lines) == []
    assert runbook.config_problems(lines) == []
    assert [line.step for line in runbook.loop_body(lines)] == list(runbook.STEPS[4:9])
    show = runbook.line_of(lines, "terraform show")
    gate = runbook.parse(runbook.line_of(lines, "s3tables-kit adopt-gate").words)
    assert gate.plan_json == [Path(str(show.stdout))]  # the gate reads the plan `show` wrote


def test_a_page_that_reorders_or_renames_a_step_breaks_the_walk() -> None:
    text = runbook.DOC.read_text()
    gate = next(line for line in text.splitlines() if line.lstrip().startswith("s3tables-kit adopt-gate"))
    apply = next(
        line for line in text.splitlines() if line.lstrip().startswith("terraform -chdir=cdktf.out/stacks/$stack apply")
    )

    swapped = text.replace(gate, "@@").replace(apply, gate).replace("@@", apply)
    assert runbook.order_problems(runbook.read(swapped)) != []
    with pytest.raises(ValueError, match="not a step the runbook's walk knows"):
        runbook.read(text.replace("s3tables-kit adopt-gate", "python -m s3tables_kit.infra.adoptgate"))
    elsewhere = text.replace("--config discover-out/kit.toml  #", "--config kit.toml  #")
    assert runbook.config_problems(runbook.read(elsewhere)) != []


def test_each_kit_line_parses_against_the_cli() -> None:
    lines = [line for line in runbook.read() if line.words[0] == "s3tables-kit"]
    parsed = {line.words[1]: runbook.parse(line.words) for line in lines}

    assert sorted(parsed) == ["adopt-gate", "discover", "outputs", "policies", "status"]
    assert parsed["policies"].examples == Path("discover-out") and parsed["status"].backfill
    with pytest.raises(ValueError, match="refused by its parser"):
        runbook.parse(("s3tables-kit", "adopt-gate", "--plan-file", "plan.json"))
    with pytest.raises(ValueError, match="not an s3tables-kit command"):
        runbook.parse(("s3tables-kit", "adoptgate", "--plan-json", "plan.json"))


def test_the_stacks_names_and_order_are_those_a_multi_bucket_synth_deploys() -> None:
    order = estate_deploy_order()
    patterns = runbook.stack_patterns(runbook.read())

    assert [s for s in order if s.startswith("source-")] and len([s for s in order if s.startswith("replica-")]) > 1
    assert runbook.stack_problems(patterns, order) == []
    late = [s for s in order if s.startswith("replica-")][-1]
    assert runbook.stack_problems(patterns, [*[s for s in order if s != late], late]) != []
    assert runbook.stack_problems(("source-<id>", "replica-<bucket>", "recovery", "organization"), order) != []
